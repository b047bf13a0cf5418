"""Fierce Women (Strašne žene): the spec ``shared/rules/fierce-women.md``, section by section.

Layout: ``components`` (data file, category masks, the column rule E2, rearrangements E6/E7), ``flow``
(state, setup, turns, the automa, effects, legal moves and each move's validation), ``scoring`` (end and
scoring), ``text`` (the game in words), and this module: the engine (views and hidden information, determinize,
validated transport); tests build positions with ``tests/games/fixtures/fierce_women.py``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from ..base import (
    Game,
    IllegalMove,
    InvalidOptions,
    InvalidState,
    JSONDict,
    Move,
    OptionSpec,
    Outcome,
    check_move_shape,
    dump_document,
    is_int,
    load_document,
    move_type,
    require,
    resolve_options,
    rng_dump,
    rng_load,
    shuffle,
)
from .components import (
    ACTION_IDS,
    ACTIONS,
    ALL_IDS,
    CAT_BIT,
    CATEGORIES,
    COLUMN_ACTIONS,
    GAME_ID,
    MASK,
    MOVE_TYPES,
    PHASE_MOVES,
    PHASES,
    SINGLE,
    WOMAN_IDS,
    WOMEN,
    arrangement_error,
    best_arrangement,
    cats_of,
    collecting_column,
    common,
    defined_categories,
    free_cards,
    locked,
    place_moves,
    placement_error,
    single,
    women_in,
)
from .flow import (
    AUTOMA_REMOVALS,
    EFFECTS,
    State,
    actor,
    advance_queue,
    automa_remove_cards,
    automa_remove_column,
    automa_turn,
    check_shape,
    clone_state,
    end_turn,
    has_removable,
    legal_moves_of,
    play_move,
    remove_cards,
    remove_column,
    setup,
    start_turn,
    take_from_hand,
    to_act,
)
from .scoring import score

#: What the one-module engine exported, still importable from ``services.rules.games.fierce_women`` (its test helper
#: ``position`` is in ``tests/games/fixtures/fierce_women.py``).
__all__ = [
    "ACTIONS",
    "ACTION_IDS",
    "ALL_IDS",
    "AUTOMA_REMOVALS",
    "CATEGORIES",
    "CAT_BIT",
    "COLUMN_ACTIONS",
    "EFFECTS",
    "GAME",
    "GAME_ID",
    "MASK",
    "MOVE_TYPES",
    "OVERRIDE_VALUE",
    "PHASES",
    "PHASE_MOVES",
    "SINGLE",
    "WOMAN_IDS",
    "WOMEN",
    "FierceWomen",
    "IllegalMove",
    "State",
    "actor",
    "advance_queue",
    "arrangement_error",
    "automa_remove_cards",
    "automa_remove_column",
    "automa_turn",
    "best_arrangement",
    "cats_of",
    "check_move_shape",
    "check_shape",
    "clone_state",
    "collecting_column",
    "common",
    "defined_categories",
    "end_turn",
    "free_cards",
    "has_removable",
    "legal_moves_of",
    "locked",
    "move_type",
    "place_moves",
    "placement_error",
    "play_move",
    "remove_cards",
    "remove_column",
    "score",
    "setup",
    "single",
    "start_turn",
    "take_from_hand",
    "to_act",
    "women_in",
]

# -- The game ----------------------------------------------------------------------------------------


class FierceWomen(Game[State]):
    id: ClassVar[str] = GAME_ID
    title: ClassVar[str] = "Fierce Women"
    min_players: ClassVar[int] = 2
    max_players: ClassVar[int] = 5
    options: ClassVar[tuple[OptionSpec, ...]] = (
        OptionSpec("action_cards", "bool", False, "include the 8 action cards A1-A8"),
    )
    #: rearrange: any valid grouping; remove_cards: the listed pair in either order (the spec lists it sorted).
    open_move_types: ClassVar[frozenset[str]] = frozenset({"rearrange", "remove_cards"})

    def new_game(self, players: int, seed: int, options: Mapping[str, Any] | None = None) -> State:
        if not is_int(players) or not 2 <= players <= 5:
            raise InvalidOptions(f"Fierce Women is for 2 to 5 players, not {players}")
        opts = resolve_options(self, options)
        deck = WOMAN_IDS + (ACTION_IDS if opts["action_cards"] else [])
        rng = random.Random(seed)
        shuffle(rng, deck)
        return setup(players, opts, deck, rng)

    def to_act(self, state: State) -> list[int]:
        return to_act(state)

    def is_over(self, state: State) -> bool:
        return state.phase == "game_over"

    def clone(self, state: State) -> State:
        return clone_state(state)

    def seat_count(self, state: State) -> int:
        return state.seats

    def sides(self, state: State) -> list[list[int]]:
        """The automa of the 2-player game is played by the engine and competes for no one."""
        return [[seat] for seat in range(state.seats) if seat != state.automa]

    # -- Moves --------------------------------------------------------------------------------------

    def legal_moves(self, state: State, seat: int) -> list[Move]:
        return legal_moves_of(state, seat)

    def apply_in_place(self, state: State, seat: int, move: Move) -> None:
        play_move(state, seat, move)

    # -- Hidden information ----------------------------------------------------------------------

    def view(self, state: State, seat: int | None) -> JSONDict:
        s = state
        over = s.phase == "game_over"
        hands = []
        for i, hand in enumerate(s.hands):
            entry: JSONDict = {"size": len(hand), "known": s.known[i][:]}
            if (over and i != s.automa) or (seat == i and seat is not None and i != s.automa):
                entry["cards"] = hand[:]
            hands.append(entry)
        now = score(s)  # the end's scoring of the tables as they are: all of it is public
        doc: JSONDict = {
            "game": GAME_ID, "viewer": seat, "players": s.players, "seats": s.seats, "automa_seat": s.automa,
            "options": dict(s.options), "phase": s.phase, "current": s.current, "to_act": to_act(s),
            "turn": s.turn, "piles": [{"size": len(p), "top": p[0] if p else None} for p in s.piles],
            "out_of_game_count": len(s.out_of_game), "hands": hands,
            "tables": [[{"cards": col[:], "common": cats_of(common(col)),
                         "category": cats_of(common(col))[0] if single(common(col)) else None,
                         "points": now["breakdown"][i][c]["points"]} for c, col in enumerate(table)]
                       for i, table in enumerate(s.tables)],
            "discard": s.discard[:], "overrides": {k: dict(v) for k, v in s.overrides.items()},
            "popular_min": s.popular_min, "collect_five_plus_one": s.collect_five_plus_one,
            "pending": None if s.pending is None else {**s.pending, "queue": s.pending["queue"][:]},
            "automa_placed": None if s.automa_placed is None else s.automa_placed[:],
            "automa_last": None if s.automa_last is None else dict(s.automa_last),
            "points_now": now["scores"],
            "result": now if over else None,
        }
        if over:
            doc["out_of_game"] = s.out_of_game[:]
        return doc

    def secrets(self, state: State, seat: int | None) -> set[str]:
        s = state
        if s.phase == "game_over":
            return set()
        hidden = set(s.out_of_game)
        for p in s.piles:
            hidden.update(p[1:])
        for i, hand in enumerate(s.hands):
            if i != seat:
                hidden.update(c for c in hand if c not in s.known[i])
        return hidden

    def determinize(self, state: State, seat: int, rng: random.Random) -> State:
        """Re-deal every card ``seat`` cannot see, from the unseen cards in a canonical order."""
        s = clone_state(state)
        s.rng = random.Random(rng.getrandbits(64))
        if s.phase == "game_over":
            return s
        slots: list[tuple[list[str], int]] = []
        for i, hand in enumerate(s.hands):
            if i != seat:
                hidden_n = len(hand) - len(s.known[i])
                slots.extend((hand, j) for j in range(hidden_n))
        for p in s.piles:
            slots.extend((p, j) for j in range(1, len(p)))
        out = s.out_of_game = s.out_of_game[:]
        slots.extend((out, j) for j in range(len(out)))
        unseen = sorted(lst[j] for lst, j in slots)
        shuffle(rng, unseen)
        for (lst, j), card in zip(slots, unseen, strict=True):
            lst[j] = card
        return s

    # -- Scoring -----------------------------------------------------------------------------------

    def result(self, state: State) -> JSONDict | None:
        return score(state) if state.phase == "game_over" else None

    def outcome(self, state: State) -> Outcome:
        doc = score(state)
        return Outcome([float(x) for x in doc["scores"]], list(doc["winners"]))

    # -- Transport ---------------------------------------------------------------------------------

    _FIELDS = ("players", "options", "phase", "current", "turn", "piles", "hands", "known", "tables", "discard",
               "out_of_game", "overrides", "popular_min", "collect_five_plus_one", "pending", "automa_placed",
               "automa_last", "rng")

    def encode(self, state: State) -> bytes:
        body = {f: getattr(state, f) for f in self._FIELDS if f != "rng"}
        body["rng"] = rng_dump(state.rng)
        return dump_document(GAME_ID, 1, body)

    def decode(self, data: bytes) -> State:
        return self._decode(data, reachable=True)

    def decode_trusted(self, data: bytes) -> State:
        """Sealed bytes: the fields are still checked as they are read, the whole-state rules are skipped."""
        return self._decode(data, reachable=False)

    def _decode(self, data: bytes, reachable: bool) -> State:
        doc = load_document(data, GAME_ID, 1, self._FIELDS)
        try:
            s = _validated(doc)
            if reachable:
                _check_reachable(s)
            return s
        except InvalidState:
            raise
        except (TypeError, KeyError, ValueError, AttributeError, IndexError) as exc:
            raise InvalidState(f"malformed state: {exc}") from None


def _str_list(value: Any, what: str) -> list[str]:
    require(isinstance(value, list) and all(isinstance(c, str) and c in ALL_IDS for c in value),
            f"{what} must be a list of card ids")
    return list(value)


def _validated(doc: dict[str, Any]) -> State:
    """Every field checked: types, ranges, each card exactly once, phase consistent with the rest."""
    s = State.__new__(State)
    players = doc["players"]
    require(is_int(players) and 2 <= players <= 5, "players out of range")
    s.players = players
    options = doc["options"]
    require(isinstance(options, dict) and set(options) == {"action_cards"} and
            isinstance(options["action_cards"], bool), "bad options")
    s.options = dict(options)
    require(doc["phase"] in PHASES, "unknown phase")
    s.phase = doc["phase"]
    n = s.seats
    require(is_int(doc["current"]) and 0 <= doc["current"] < n and doc["current"] != s.automa, "bad current seat")
    require(is_int(doc["turn"]) and 0 <= doc["turn"] <= 100, "bad turn")
    s.current, s.turn = doc["current"], doc["turn"]
    require(isinstance(doc["piles"], list) and len(doc["piles"]) == 3, "there must be 3 piles")
    s.piles = [_str_list(p, "pile") for p in doc["piles"]]
    require(isinstance(doc["hands"], list) and len(doc["hands"]) == n, "one hand per seat")
    s.hands = [_str_list(h, "hand") for h in doc["hands"]]
    require(isinstance(doc["known"], list) and len(doc["known"]) == n, "one known list per seat")
    s.known = [_str_list(k, "known") for k in doc["known"]]
    for hand, known in zip(s.hands, s.known, strict=True):
        require(len(hand) <= 4 and hand[len(hand) - len(known):] == known, "known cards must end the hand")
    require(not s.known[s.current] or s.phase != "draw" or len(s.hands[s.current]) == 3, "bad hand")
    require(isinstance(doc["tables"], list) and len(doc["tables"]) == n, "one table per seat")
    s.tables = []
    for table in doc["tables"]:
        require(isinstance(table, list), "table must be a list")
        cols = [_str_list(c, "column") for c in table]
        require(all(women_in(c) >= 1 for c in cols), "every column holds a woman card")
        s.tables.append(cols)
    s.discard = _str_list(doc["discard"], "discard")
    s.out_of_game = _str_list(doc["out_of_game"], "out_of_game")
    everything = [c for p in s.piles for c in p] + [c for h in s.hands for c in h] + \
        [c for t in s.tables for col in t for c in col] + s.discard + s.out_of_game
    deck = set(WOMAN_IDS) | (set(ACTION_IDS) if s.options["action_cards"] else set())
    require(len(everything) == len(deck) and set(everything) == deck, "every card must be in exactly one place")
    overrides = doc["overrides"]
    require(isinstance(overrides, dict) and set(overrides) <= set(CATEGORIES), "bad overrides")
    for o in overrides.values():
        require(isinstance(o, dict) and set(o) == {"value", "card", "seat"} and o["card"] in OVERRIDE_VALUE and
                is_int(o["value"]) and o["value"] == OVERRIDE_VALUE[o["card"]](n) and is_int(o["seat"]) and
                0 <= o["seat"] < n and o["seat"] != s.automa, "bad override: {value: 1 for A1 or N for A2, "
                "card: A1 or A2, seat: a player}")
    s.overrides = {k: dict(v) for k, v in overrides.items()}
    require(isinstance(doc["popular_min"], bool), "bad popular_min")
    s.popular_min = doc["popular_min"]
    c5 = doc["collect_five_plus_one"]
    require(c5 is None or (is_int(c5) and 0 <= c5 < n), "bad collect_five_plus_one")
    s.collect_five_plus_one = c5
    pending = doc["pending"]
    if s.phase in ("remove_column", "remove_cards"):
        require(isinstance(pending, dict) and set(pending) == {"action", "actor", "queue"} and
                pending["action"] == s.phase and is_int(pending["actor"]) and 0 <= pending["actor"] < n and
                isinstance(pending["queue"], list) and bool(pending["queue"]) and
                all(is_int(q) and 0 <= q < n and q != s.automa for q in pending["queue"][:1]) and
                all(is_int(q) and 0 <= q < n for q in pending["queue"]), "bad pending removal")
        s.pending = {"action": pending["action"], "actor": pending["actor"], "queue": list(pending["queue"])}
    else:
        require(pending is None, "pending must be null outside removal phases")
        s.pending = None
    placed = doc["automa_placed"]
    if s.automa is None:
        require(placed is None and doc["automa_last"] is None, "no automa in this game")
        s.automa_placed, s.automa_last = None, None
    else:
        s.automa_placed = _str_list(placed, "automa_placed")
        on_table = [c for col in s.tables[2] for c in col if c in WOMEN]
        require(len(set(s.automa_placed)) == len(s.automa_placed) and set(s.automa_placed) == set(on_table),
                "automa_placed must list exactly the automa's women")
        last = doc["automa_last"]
        require(last is None or (isinstance(last, dict) and set(last) == {"turn", "pile", "card", "column"} and
                                 is_int(last["turn"]) and is_int(last["pile"]) and 0 <= last["pile"] <= 2 and
                                 last["card"] in ALL_IDS and
                                 (last["column"] is None if last["card"] in ACTIONS else
                                  is_int(last["column"]) and 0 <= last["column"] < len(WOMAN_IDS))),
                "bad automa_last")
        s.automa_last = None if last is None else dict(last)
        require(not s.hands[2], "the automa has no hand")
    if s.phase == "game_over":
        require(not any(s.piles), "the game ends only when the piles are empty")
    else:
        require(len(s.hands[s.current]) == (4 if s.phase == "play" else 3), "hand size does not fit the phase")
    if s.phase == "rearrange":
        require(bool(free_cards(s.tables[s.current])), "nothing to rearrange")
    s.rng = rng_load(doc["rng"])
    return s


#: The value an A1/A2 override fixes, by card, for N seats (E3).
OVERRIDE_VALUE: Final = {a: (lambda n: 1) if k == "any_min" else (lambda n: n) for a, k in ACTIONS.items()
                  if k in ("any_min", "solo_max")}
_CARD_OF: Final = {k: a for a, k in ACTIONS.items()}


def _check_reachable(s: State) -> None:
    """The rules no sequence of legal moves from a deal can break, which untrusted bytes may (E2-E8, Flow).

    Every field has its type by now; this checks them against each other: the columns obey the column
    rule, hands and piles fit the turn, effects name cards that were played, a removal queue is the one
    its action card starts, and the seat to act has a move.
    """
    n, automa, real = s.seats, s.automa, 2 if s.players == 2 else s.players
    deck_size = len(WOMAN_IDS) + (len(ACTION_IDS) if s.options["action_cards"] else 0)
    dealt = 30 if n <= 3 else 40
    require(len(s.out_of_game) == deck_size - 3 * real - dealt, "out_of_game does not fit the deal")
    over = s.phase == "game_over"
    drawn = s.turn - (1 if s.phase == "draw" else 0)
    require(1 <= s.turn <= dealt and sum(map(len, s.piles)) == dealt - drawn, "the piles do not fit the turn")
    require(over or s.current == (s.turn - 1) % n, "current does not fit the turn (seats take turns in order)")
    for seat in range(n):
        if seat != automa and not (seat == s.current and s.phase == "play"):
            require(len(s.hands[seat]) == 3, f"seat {seat} must hold 3 cards between its turns")
    discard = set(s.discard)
    # E3 appends A1-A3 to a column that holds a woman card, so an action card opens a column only once A5's
    # E4 took women out of it (remove_cards keeps a column while it holds a woman, whatever came first).
    women_removed = _CARD_OF["remove_cards"] in discard
    for seat, table in enumerate(s.tables):
        seen = 0
        for i, col in enumerate(table):
            require(all(c in WOMEN or c in COLUMN_ACTIONS for c in col),
                    f"seat {seat} column {i}: only A1-A3 stay in a column")
            require(col[0] in WOMEN or women_removed,
                    f"seat {seat} column {i} starts with {col[0]}: an action card joins a column after a woman "
                    "card (E3), and only A5 takes women out of a column (E4)")
            require(seat != automa or all(c in WOMEN for c in col), "the automa never plays action cards")
            k = common(col)
            require(k != 0, f"seat {seat} column {i} has no common category")
            if single(k):
                require(not seen & k, f"seat {seat} collects {cats_of(k)[0]} in two columns")
                seen |= k
    played_by = {c: seat for seat, table in enumerate(s.tables) for col in table for c in col if c in ACTIONS}
    cards = [o["card"] for o in s.overrides.values()]
    require(len(set(cards)) == len(cards), "an override card is recorded twice")
    for o in s.overrides.values():
        require(o["card"] in discard or played_by.get(o["card"]) == o["seat"],
                f"override by {o['card']}: the card is neither in the discard pile nor on seat {o['seat']}'s table")
    require(not s.popular_min or _CARD_OF["popular_min"] in discard, "popular_min without its card played")
    c5 = s.collect_five_plus_one
    require(c5 is None or (c5 != automa and _CARD_OF["collect_five_plus_one"] in discard),
            "collect_five_plus_one without its card played")
    if s.phase == "rearrange":
        require(_CARD_OF["reshuffle"] in discard, "rearrange without its card played")
    if s.pending is not None:
        action, queue = s.pending["action"], s.pending["queue"]
        require(s.pending["actor"] == s.current and _CARD_OF[action] in discard,
                "a removal is pending only after the current seat played its card")
        order = [(s.current + i) % n for i in range(n)]
        require(queue == order[n - len(queue):], "the removal queue must be the remaining seats in turn order")
        require(has_removable(s, queue[0], action), f"seat {queue[0]} has nothing to remove")
    if automa is not None:
        last = s.automa_last
        if s.turn < 3:
            require(last is None, "the automa has not played yet")
        else:
            require(last is not None and last["turn"] == s.turn // 3 * 3, "automa_last does not fit the turn")
            assert last is not None
            on_table = {c for col in s.tables[automa] for c in col}
            require(last["card"] in discard or last["card"] in on_table,
                    "automa_last names a card that is not where the automa put it")
    if not over:
        deciding = actor(s)
        require(deciding is not None and bool(legal_moves_of(s, deciding)), "the seat to act has no legal move")


GAME: Final = FierceWomen()
