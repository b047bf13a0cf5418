"""Sideboards (spec ``shared/rules/sideboards.md``): 1-6 players build 8-card dressers simultaneously.

Layout: ``components`` (data file, card columns, pattern placements, row rules), ``scoring`` (exact
pattern packing, runs, bonuses, the result document), ``flow`` (state, setup, simultaneous steps,
moves and their validation order), and this module: the engine (views and hidden information,
determinize, validated transport); tests build positions with ``tests/games/fixtures/sideboards.py``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from typing import Any, Final

import orjson

from ..base import (
    Game,
    InvalidOptions,
    InvalidState,
    JSONDict,
    Move,
    OptionSpec,
    Outcome,
    RulesError,
    dump_document,
    is_int,
    load_document,
    require,
    resolve_options,
    rng_dump,
    rng_load,
    shuffle,
)
from .components import CARD_IDS, CARD_SET, COLOUR_GOALS, GAME_ID, HANDLE_GOALS, ORIENTATIONS, ROW_GOALS
from .flow import (
    LAST_STEP,
    PHASES,
    State,
    check_move,
    clone_state,
    deal_size,
    hand_size,
    legal_moves,
    play,
    setup,
    to_act,
    well_formed,
)
from .scoring import dresser_counts, result_doc

OPTION_SPECS: Final = (
    OptionSpec("goals", "any", "random",
               'the three goal cards: "random" (one from each deck) or [colour 1-7, handle 8-14, row 15-30], '
               "for example a suggested setup such as [2, 9, 19]"),
    OptionSpec("four_card_hand", "bool", False,
               "deal 4, choose from 3 at every step, pass 2; no exchange cards"),
)


def check_goals_option(value: Any) -> None:
    """The structured ``goals`` option (kind ``any``): clear messages for every way it can be wrong."""
    if value == "random" and isinstance(value, str):
        return
    if not isinstance(value, list) or len(value) != 3 or not all(is_int(v) for v in value):
        raise InvalidOptions('option \'goals\' must be "random" or a list of 3 goal numbers '
                             "[colour 1-7, handle 8-14, row 15-30]")
    for v, deck, what in zip(value, (COLOUR_GOALS, HANDLE_GOALS, ROW_GOALS), ("colour", "handle", "row"),
                             strict=True):
        if v not in deck:
            raise InvalidOptions(f"option 'goals': {v} is not a {what} goal (those are {deck.start}-{deck.stop - 1})")


def validated_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    resolved = resolve_options(Sideboards, options)
    check_goals_option(resolved["goals"])
    if isinstance(resolved["goals"], list):
        resolved["goals"] = list(resolved["goals"])
    return resolved


def _entry(e: dict[str, Any]) -> JSONDict:
    return {"step": e["step"], "from": e["from"], "to": e["to"], "cards": e["cards"][:]}


def holder_of(s: State, card: str) -> int:
    for seat, hand in enumerate(s.hands):
        if card in hand:
            return seat
    raise AssertionError(f"tracked card {card} is in no hand")


class Sideboards(Game[State]):
    id = GAME_ID
    title = "Sideboards"
    min_players = 1
    max_players = 6
    options = OPTION_SPECS
    simultaneous = True

    # -- setup and flow --------------------------------------------------------------------------

    def new_game(self, players: int, seed: int, options: Mapping[str, Any] | None = None) -> State:
        if not is_int(players) or not 1 <= players <= 6:
            raise InvalidOptions(f"Sideboards is for 1 to 6 players, not {players}")
        return setup(players, validated_options(options), random.Random(seed))

    def to_act(self, state: State) -> list[int]:
        return to_act(state)

    def legal_moves(self, state: State, seat: int) -> list[Move]:
        return legal_moves(state, seat)

    def apply_in_place(self, state: State, seat: int, move: Move) -> None:
        play(state, seat, move)

    def clone(self, state: State) -> State:
        return clone_state(state)

    def is_over(self, state: State) -> bool:
        return state.phase == "game_over"

    def seat_count(self, state: State) -> int:
        return state.players

    # -- hidden information ----------------------------------------------------------------------

    def view(self, state: State, seat: int | None) -> JSONDict:
        s = state
        doc: JSONDict = {
            "phase": s.phase, "step": s.step, "players": s.players,
            "options": {"goals": s.options["goals"] if s.options["goals"] == "random" else list(s.options["goals"]),
                        "four_card_hand": s.options["four_card_hand"]},
            "goals": {"colour": s.goals[0], "handle": s.goals[1], "row": s.goals[2]},
            "dressers": [[{"card": c, "orientation": o} for c, o in d] for d in s.dressers],
            "hand_counts": [len(h) for h in s.hands],
            "deck_count": len(s.deck),
            "discard": s.discard[:],
            "last_reshuffle": None if s.last_reshuffle is None else s.last_reshuffle[:],
            "exchange": s.exchange[:],
            "submitted": [sub is not None for sub in s.submitted],
            "provisional": [dict(zip(("colour_count", "handle_count", "row_drawers"), dresser_counts(d, s.goals),
                                     strict=True)) for d in s.dressers],
            "result": s.result,
        }
        if seat is not None:
            sub = s.submitted[seat]
            doc["hand"] = s.hands[seat][:]
            doc["my_submission"] = None if sub is None else orjson.loads(orjson.dumps(sub))
            doc["my_passes"] = [_entry(e) for e in s.pass_log if e["from"] == seat]
            doc["my_received"] = [_entry(e) for e in s.pass_log if e["to"] == seat]
            doc["known_in_hands"] = [{"card": c, "seat": holder_of(s, c)} for c in s.tracked[seat]]
        return doc

    def secrets(self, state: State, seat: int | None) -> set[str]:
        """Deck and other hands, minus what the seat legitimately saw: cards it passed or received (and
        still tracks) and the public list of reshuffled cards."""
        s = state
        hidden = set(s.deck)
        for i, hand in enumerate(s.hands):
            if i != seat:
                hidden.update(hand)
        if seat is not None:
            for e in s.pass_log:
                if seat in (e["from"], e["to"]):
                    hidden.difference_update(e["cards"])
        if s.last_reshuffle is not None:
            hidden.difference_update(s.last_reshuffle)
        return hidden

    def without_others_submissions(self, state: State, seat: int) -> State:
        """The other seats' pending choices withdrawn (their content is hidden, so a search re-chooses)."""
        s = clone_state(state)
        if s.phase != "game_over":
            s.submitted = [sub if i == seat else None for i, sub in enumerate(s.submitted)]
        return s

    def determinize(self, state: State, seat: int, rng: random.Random) -> State:
        """The spec's "determinize": keep the public part, own hand and submission and the tracked cards
        with their holders; clear others' submissions; re-deal the rest (deck ⊆ last reshuffle).

        Everything here is a function of the seat's view: the unseen cards are taken in id order, the
        other seats' pass records (invisible to the seat) are dropped, and so is their tracking.
        """
        s = self.without_others_submissions(state, seat)
        s.pass_log = [e for e in s.pass_log if seat in (e["from"], e["to"])]
        mine = s.tracked[seat]
        s.tracked = [mine if i == seat else [] for i in range(s.players)]
        known_at: dict[int, list[str]] = {}
        for card in mine:
            known_at.setdefault(holder_of(state, card), []).append(card)
        seen = set(mine) | set(s.hands[seat])
        unseen = sorted(c for i, hand in enumerate(s.hands) if i != seat for c in hand if c not in seen)
        unseen += sorted(s.deck)
        unseen.sort()
        if s.last_reshuffle is not None:
            pool = set(s.last_reshuffle)
            allowed = [c for c in unseen if c in pool]
            deck = rng.sample(allowed, len(s.deck))
            chosen = set(deck)
            rest = [c for c in unseen if c not in chosen]
            shuffle(rng, rest)
        else:
            shuffle(rng, unseen)
            deck, rest = unseen[:len(s.deck)], unseen[len(s.deck):]
        s.deck = deck
        for i in range(s.players):
            if i == seat:
                continue
            known = known_at.get(i, [])
            fill = len(s.hands[i]) - len(known)
            s.hands[i] = known + rest[:fill]
            del rest[:fill]
        assert not rest
        s.rng = random.Random(rng.getrandbits(64))
        return s

    # -- scoring ---------------------------------------------------------------------------------

    def result(self, state: State) -> JSONDict | None:
        return state.result

    def outcome(self, state: State) -> Outcome:
        doc = state.result if state.result is not None else result_doc(state.dressers, state.exchange, state.goals)
        return Outcome([float(e["total"]) for e in doc["scores"]], list(doc["winners"]))

    def score_seat(self, state: State, seat: int) -> tuple[int, int, int]:
        """(colour count, handle count, R) of one seat, computed from scratch (``meeple bench``'s scoring_us)."""
        return dresser_counts(state.dressers[seat], state.goals)

    # -- transport -------------------------------------------------------------------------------

    _FIELDS = ("players", "options", "goals", "phase", "step", "discard", "exchange", "submitted", "pass_log",
               "last_reshuffle", "tracked", "dressers", "hands", "deck", "rng", "result", "history_digest")

    def encode(self, state: State) -> bytes:
        s = state
        return dump_document(GAME_ID, 1, {
            "players": s.players, "options": s.options, "goals": list(s.goals), "phase": s.phase, "step": s.step,
            "discard": s.discard, "exchange": s.exchange, "submitted": s.submitted, "pass_log": s.pass_log,
            "last_reshuffle": s.last_reshuffle, "tracked": s.tracked,
            "dressers": [[{"card": c, "orientation": o} for c, o in d] for d in s.dressers],
            "hands": s.hands, "deck": s.deck, "rng": rng_dump(s.rng), "result": s.result,
            "history_digest": _history_digest(s.pass_log),
        })

    def decode(self, data: bytes) -> State:
        return self._decode(data, reachable=True)

    def decode_trusted(self, data: bytes) -> State:
        """Sealed bytes: the fields are still checked as they are read, the whole-state rules are skipped."""
        return self._decode(data, reachable=False)

    def _decode(self, data: bytes, reachable: bool) -> State:
        doc = load_document(data, GAME_ID, 1, self._FIELDS)
        try:
            s = _validated(doc, reachable)
            if reachable:
                _check_reachable(s)
            return s
        except InvalidState:
            raise
        except (RulesError, TypeError, KeyError, ValueError, AttributeError, IndexError) as exc:
            raise InvalidState(f"malformed state: {exc}") from None


def _history_digest(pass_log: Any) -> str:
    """Integrity check of the pass record: it cannot be re-validated without a replay (as in CLASH)."""
    return hashlib.sha256(orjson.dumps(pass_log)).hexdigest()[:32]


def _ids(value: Any, what: str) -> list[str]:
    require(type(value) is list and all(type(c) is str and c in CARD_SET for c in value),
            f"{what} must be a list of card ids")
    require(len(set(value)) == len(value), f"{what} lists a card twice")
    return list(value)


def _validated(doc: dict[str, Any], reachable: bool = True) -> State:
    """Every field checked: types, ranges, each card in exactly one place, sizes that fit the phase."""
    s = State.__new__(State)
    players = doc["players"]
    require(is_int(players) and 1 <= players <= 6, "players out of range")
    n = s.players = players
    options = doc["options"]
    require(type(options) is dict and set(options) == {"goals", "four_card_hand"}, "bad options")
    try:
        s.options = validated_options(options)
    except InvalidOptions as exc:
        raise InvalidState(f"bad options: {exc.message}") from None
    goals = doc["goals"]
    require(type(goals) is list and len(goals) == 3, "goals must be [colour, handle, row]")
    try:
        check_goals_option(goals)
    except InvalidOptions:
        raise InvalidState("goals out of range") from None
    require(s.options["goals"] == "random" or s.options["goals"] == goals, "goals differ from the goals option")
    s.goals = (goals[0], goals[1], goals[2])
    four = s.four
    require(doc["phase"] in PHASES, "unknown phase")
    s.phase = doc["phase"]
    step = doc["step"]
    require(is_int(step) and step == {"start": 0, "game_over": LAST_STEP}.get(s.phase, step) and 0 <= step <= 6
            and (s.phase != "place" or step >= 1), "step does not fit the phase")
    s.step = step
    s.deck = _ids(doc["deck"], "deck")
    s.discard = _ids(doc["discard"], "discard")
    require(type(doc["hands"]) is list and len(doc["hands"]) == n, "one hand per seat")
    s.hands = [_ids(h, "hand") for h in doc["hands"]]
    require(type(doc["dressers"]) is list and len(doc["dressers"]) == n, "one dresser per seat")
    s.dressers = []
    for dresser in doc["dressers"]:
        require(type(dresser) is list, "a dresser is a list")
        cols = []
        for col in dresser:
            require(type(col) is dict and set(col) == {"card", "orientation"} and col["card"] in CARD_SET and
                    type(col["orientation"]) is int and col["orientation"] in ORIENTATIONS, "bad dresser card")
            cols.append((col["card"], col["orientation"]))
        s.dressers.append(cols)
    everything = s.deck + s.discard + [c for h in s.hands for c in h] + [c for d in s.dressers for c, _ in d]
    require(len(everything) == len(CARD_IDS) and set(everything) == CARD_SET, "every card must be in one place")
    width = {"start": 0, "place": step + 1, "game_over": 8}[s.phase]
    require(all(len(d) == width for d in s.dressers), "dresser size does not fit the step")
    if s.phase == "start":
        require(all(len(h) == deal_size(four) for h in s.hands), "hand size does not fit the deal")
    elif s.phase == "place":
        require(all(1 <= len(h) <= hand_size(four) for h in s.hands), "hand size does not fit the step")
    else:
        require(not any(s.hands), "hands are empty after the game")
    exchange = doc["exchange"]
    require(type(exchange) is list and len(exchange) == n, "one exchange card per seat")
    allowed = ("none",) if four else ("unused",) if s.phase == "start" else ("unused", "used")
    require(all(e in allowed for e in exchange), "bad exchange status")
    s.exchange = list(exchange)
    submitted = doc["submitted"]
    require(type(submitted) is list and len(submitted) == n, "one submission slot per seat")
    s.submitted = [None] * n
    s.tracked = [[] for _ in range(n)]
    checked: list[Move | None] = []
    for seat, sub in enumerate(submitted):
        if sub is None:
            checked.append(None)
            continue
        require(s.phase != "game_over", "no submissions after the game")
        normal = well_formed(sub)
        require(normal == sub and normal["type"] != "exchange", "bad submission")
        check_move(s, seat, normal)
        checked.append(normal)
    require(s.phase == "game_over" or None in checked, "a step with every submission must have resolved")
    s.submitted = checked
    log = doc["pass_log"]
    require(type(log) is list and (n >= 2 or not log), "bad pass log")
    seen_steps: set[tuple[int, int]] = set()
    last = -1
    for e in log if reachable else ():  # sealed bytes: the record is as the service wrote it
        require(type(e) is dict and set(e) == {"step", "from", "to", "cards"}, "bad pass entry")
        require(is_int(e["step"]) and last <= e["step"] < min(step, LAST_STEP) and is_int(e["from"]) and
                0 <= e["from"] < n and e["to"] == (e["from"] + 1) % n and (e["step"], e["from"]) not in seen_steps,
                "bad pass entry")
        require(1 <= len(_ids(e["cards"], "passed cards")) <= (2 if four else 1), "bad passed cards")
        seen_steps.add((e["step"], e["from"]))
        last = e["step"]
    if reachable and n >= 2:
        # Every place step's hand-off passes each seat's leftover cards (H - 1 >= 1 of them) on, one entry per
        # seat; a determinization for one seat keeps that seat's own entries only (what it passed and received).
        # (The start's hand-off, step 0, is logged alike, but positions written in the spec's test notation
        # begin at place step 1 with an empty log, so the check starts at step 1.)
        handoffs = step if s.phase == "place" else LAST_STEP if s.phase == "game_over" else 0
        passers = [{e["from"] for e in log if e["step"] == t} for t in range(1, handoffs)]
        everyone = set(range(n))
        require(all(p == everyone for p in passers) or any(
            all(p == {seat, (seat - 1) % n} for p in passers) for seat in range(n)),
            "the pass log must hold one hand-off per seat for every step so far")
    require(not reachable or doc["history_digest"] == _history_digest(log), "the pass log was altered")
    s.pass_log = [_entry(e) for e in log]
    reshuffled = doc["last_reshuffle"]
    if reshuffled is None:
        s.last_reshuffle = None
    else:
        s.last_reshuffle = _ids(reshuffled, "last_reshuffle")
        require(s.last_reshuffle == sorted(s.last_reshuffle) and set(s.deck) <= set(s.last_reshuffle),
                "the deck must come from the last reshuffle")
    tracked = doc["tracked"]
    require(type(tracked) is list and len(tracked) == n, "one tracked list per seat")
    for seat, known in enumerate(tracked):
        cards = _ids(known, "tracked")
        passed = {c for e in s.pass_log if e["from"] == seat for c in e["cards"]}
        others = {c for i, h in enumerate(s.hands) if i != seat for c in h}
        require(set(cards) <= passed & others, "a tracked card must be one the seat passed, in another hand")
        s.tracked[seat] = cards
    s.rng = rng_load(doc["rng"])
    if s.phase == "game_over":
        require(doc["result"] == result_doc(s.dressers, s.exchange, s.goals), "result does not match the dressers")
        s.result = result_doc(s.dressers, s.exchange, s.goals)
    else:
        require(doc["result"] is None, "no result before the end")
        s.result = None
    return s


def _check_reachable(s: State) -> None:
    """What "Flow" and "Effects" imply about the whole state, beyond each field: the discard pile holds
    exactly the cards that exchanges, a solo game's hand-offs and the end put there (until a reshuffle,
    which only 6 seats with 4 or more exchanges can cause, D16), and every place step starts with H cards."""
    n, big = s.players, hand_size(s.four)
    used = s.exchange.count("used")
    if s.phase == "place":
        require(all(len(h) == big for h in s.hands), f"every seat holds {big} cards in a place step")
    if s.last_reshuffle is not None:
        require(n == 6 and not s.four and used >= 4, "the deck runs out only with 6 seats and 4 or more exchanges")
        return
    over = s.phase == "game_over"
    handoffs = s.step if s.phase == "place" else LAST_STEP if over else 0
    expected = 2 * used + (big - 1) * (handoffs if n == 1 else 0) + (n * (big - 1) if over else 0)
    require(len(s.discard) == expected, f"the discard pile must hold {expected} cards ({used} exchanges"
                                        f"{', solo hand-offs' if n == 1 else ''}{', the leftovers' if over else ''})")


GAME: Final = Sideboards()


__all__ = ["GAME", "Sideboards", "State"]
