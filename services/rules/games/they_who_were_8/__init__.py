"""They Who Were 8 (spec ``shared/rules/they-who-were-8.md``).

Four seats in two teams play action cards on each other's gods; eight once-per-game god powers are
used in four decision windows (turn start, targeted, passing, dealing).

Layout: ``model`` (components, the state, card knowledge, scoring), ``flow`` (setup, turns, windows,
action effects and god powers from dispatch tables, move validation), this module (the engine:
views and hidden information, determinize, transport); tests build positions with
``tests/games/fixtures/they_who_were_8.py``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final

import orjson

from ..base import (
    Game,
    InvalidOptions,
    InvalidState,
    JSONDict,
    Move,
    OptionSpec,
    Outcome,
    below,
    dump_document,
    is_int,
    load_document,
    require,
    resolve_options,
    rng_dump,
    rng_load,
    shuffle,
)
from . import flow
from .flow import END_REASONS, PHASES, WINDOWS, apply_move, eligible, legal_moves, to_act
from .model import (
    ALL_CARDS,
    CARD_BIT,
    CARD_IDS,
    DATA,
    GAME_ID,
    GLORY,
    GOD_IDS,
    GOD_INDEX,
    INFAMY,
    LOCS,
    PILE,
    RULES,
    SEATS,
    SUPPLY_START,
    TEAMS,
    State,
    cards_of,
    clone_state,
    k_lists,
    k_load,
    k_load_lists,
    k_view,
    mask_of,
    result_doc,
    set_owners,
    trivial_views,
)

_OPTION: Final = DATA["options"][0]
OPTION_SPECS: Final = (OptionSpec(_OPTION["name"], _OPTION["type"], _OPTION["default"], _OPTION["description"],
                           minimum=_OPTION["min"], maximum=_OPTION["max"]),)
FORMAT: Final = 1


class TheyWhoWere8(Game[State]):
    id: ClassVar[str] = GAME_ID
    title: ClassVar[str] = DATA["title"]
    min_players: ClassVar[int] = DATA["players"]["min"]
    max_players: ClassVar[int] = DATA["players"]["max"]
    options: ClassVar[tuple[OptionSpec, ...]] = OPTION_SPECS

    # -- Setup ---------------------------------------------------------------------------------------

    def new_game(self, players: int, seed: int, options: Mapping[str, Any] | None = None) -> State:
        if not is_int(players) or players != SEATS:
            raise InvalidOptions(f"They Who Were 8 is played by exactly 4 players, not {players}")
        opts = resolve_options(self, options)
        rng = random.Random(seed)  # R0
        gods = list(GOD_IDS)
        shuffle(rng, gods)  # R1
        cards = list(CARD_IDS)
        shuffle(rng, cards)  # R2
        return flow.setup(opts["max_rounds"], rng, gods, cards)

    # -- Flow ----------------------------------------------------------------------------------------

    def to_act(self, state: State) -> list[int]:
        return [] if state.phase == "game_over" else [state.pending]

    def is_over(self, state: State) -> bool:
        return state.phase == "game_over"

    def seat_count(self, state: State) -> int:
        return SEATS

    def sides(self, state: State) -> list[list[int]]:
        """The two teams of partners (seats 0 + 2 against 1 + 3): a forfeit costs the whole team."""
        return [list(team) for team in TEAMS]

    def clone(self, state: State) -> State:
        return clone_state(state)

    def legal_moves(self, state: State, seat: int) -> list[Move]:
        return legal_moves(state, seat)

    def apply_in_place(self, state: State, seat: int, move: Move) -> None:
        apply_move(state, seat, move)

    def canonical_move(self, move: Move) -> Move:
        """``gods`` (Arystyfan) and ``cards`` (Endymina) are accepted in either order; legal_moves sorts them."""
        if isinstance(move, dict):
            for key in ("gods", "cards"):
                value = move.get(key)
                if isinstance(value, list) and all(isinstance(v, str) for v in value):
                    move = {**move, key: sorted(value)}
        return move

    # -- Hidden information --------------------------------------------------------------------------

    def view(self, state: State, seat: int | None) -> JSONDict:
        s = state
        play = s.current_play
        doc: JSONDict = {
            "game": GAME_ID, "viewer": seat, "phase": s.phase, "to_act": to_act(s), "round": s.round,
            "max_rounds": s.max_rounds, "first_player": s.first_player, "turn_seat": s.turn_seat,
            "plays_this_round": s.plays, "teams": [list(t) for t in TEAMS],
            "supply": {"glory": s.supply[GLORY], "infamy": s.supply[INFAMY]},
            "gods": _gods_doc(s),
        }
        if seat is not None:
            doc["hand"] = s.hands[seat][:]
        doc.update({
            "hand_sizes": [len(h) for h in s.hands], "pile_size": len(s.pile),
            "current_play": None if play is None else {**play, "redirects": [dict(r) for r in play["redirects"]]},
            "window": _window_doc(s),
            "keeping": _seats(s.keeping), "dealt": _seats(s.dealt),
            "offer": s.offer[:] if seat is not None and seat == s.offer_seat else None,
            "offer_size": len(s.offer),
            "result": result_doc(s) if s.phase == "game_over" else None,
            "log": [_redact(e, seat, for_view=True) for e in s.log],
        })
        return doc

    def secrets(self, state: State, seat: int | None) -> set[str]:
        """Every card ``seat`` does not hold and has never been shown (spec "Hidden information")."""
        s = state
        seen: set[str] = set()
        if seat is not None:
            seen.update(s.hands[seat])
            if s.offer_seat == seat:
                seen.update(s.offer)
        for e in s.log:  # what the seat was shown: played cards, its own draws, discards, gifts...
            r = _redact(e, seat, for_view=True)
            for key in ("card", "cards", "hand"):
                value = r.get(key)
                if isinstance(value, str):
                    seen.add(value)
                elif isinstance(value, list):
                    seen.update(v for v in value if isinstance(v, str))
        return set(CARD_IDS) - seen

    def determinize(self, state: State, seat: int, rng: random.Random) -> State:
        """Re-deal every card ``seat`` cannot see, consistent with what it has seen.

        Each hidden card goes only to a place where ``seat``'s knowledge says it may be (the card it
        passed left stays with the receiver, a played card stays in the pile until someone draws...),
        and hand, pile and offer sizes are kept. The log keeps only what ``seat`` saw, and the other
        seats' knowledge restarts from their new hands, so the result depends only on ``seat``'s view.
        """
        s = clone_state(state)
        v = seat
        own_offer = s.offer_seat == v
        mine = mask_of(s.hands[v]) | (mask_of(s.offer) if own_offer else 0)
        hidden = sorted(c for c in CARD_IDS if not mine & CARD_BIT[c])
        slots: list[int] = []
        for u in range(SEATS):
            if u != v:
                slots.extend([u] * len(s.hands[u]))
        slots.extend([PILE] * len(s.pile))
        if s.offer_seat is not None and not own_offer:
            slots.extend([LOCS] * len(s.offer))  # another seat's offer came out of the pile
        know = k_lists(s)[v]
        allowed = [[know[min(loc, PILE)] & CARD_BIT[c] != 0 for loc in range(LOCS + 1)] for c in hidden]
        placed = _sample_assignment(allowed, slots, rng)
        where: dict[int, list[str]] = {loc: [] for loc in range(LOCS + 1)}
        for card, slot in zip(hidden, placed, strict=True):
            where[slots[slot]].append(card)
        for u in range(SEATS):
            if u != v:
                s.hands[u] = sorted(where[u])
        s.pile = sorted(where[PILE])
        if s.offer_seat is not None and not own_offer:
            s.offer = sorted(where[LOCS])
        own = [mask_of(s.hands[u]) | (mask_of(s.offer) if s.offer_seat == u else 0) for u in range(SEATS)]
        views = trivial_views(own)
        views[v] = k_view(state, v)  # seat v's own picture is kept
        k_load(s, views)
        s.log = [_redact(e, v, for_view=False) for e in s.log]
        s.rng, s.rng_shared = random.Random(rng.getrandbits(64)), False
        return s

    # -- Scoring -------------------------------------------------------------------------------------

    def result(self, state: State) -> JSONDict | None:
        return result_doc(state)

    def outcome(self, state: State) -> Outcome:
        doc = result_doc(state)
        winners = [seat for seat in range(SEATS) if doc["ranking"][seat] == 1]
        return Outcome([float(x) for x in doc["scores"]], winners)

    # -- Transport -----------------------------------------------------------------------------------

    _KEYS = ("options", "phase", "round", "first_player", "turn_seat", "plays_this_round", "gods", "supply",
             "hands", "pile", "current_play", "window", "keeping", "dealt", "offer", "end_reason", "log",
             "knowledge", "rng", "history_digest")

    def encode(self, state: State) -> bytes:
        s = state
        return dump_document(GAME_ID, FORMAT, {
            "options": {"max_rounds": s.max_rounds}, "phase": s.phase, "round": s.round,
            "first_player": s.first_player, "turn_seat": s.turn_seat, "plays_this_round": s.plays,
            "gods": _gods_doc(s), "supply": {"glory": s.supply[GLORY], "infamy": s.supply[INFAMY]},
            "hands": s.hands, "pile": s.pile, "current_play": s.current_play, "window": _window_doc(s),
            "keeping": _seats(s.keeping), "dealt": _seats(s.dealt),
            "offer": None if s.offer_seat is None else {"seat": s.offer_seat, "cards": s.offer},
            "end_reason": s.end_reason, "log": s.log,
            "knowledge": k_lists(s),
            "rng": rng_dump(s.rng), "history_digest": _digest(s.log),
        })

    def decode(self, data: bytes) -> State:
        return self._decode(data, reachable=True)

    def decode_trusted(self, data: bytes) -> State:
        """Sealed bytes: the fields are still checked as they are read, the log's events are not re-checked."""
        return self._decode(data, reachable=False)

    def _decode(self, data: bytes, reachable: bool) -> State:
        doc = load_document(data, GAME_ID, FORMAT, self._KEYS)
        try:
            return _validated(self, doc, reachable)
        except InvalidState:
            raise
        except (TypeError, KeyError, ValueError, IndexError, AttributeError, InvalidOptions) as exc:
            raise InvalidState(f"malformed state: {exc}") from None


def _gods_doc(s: State) -> list[JSONDict]:
    return [{"id": g, "owner": s.owner[i], "glory": s.tok[GLORY][i], "infamy": s.tok[INFAMY][i],
             "used": bool(s.used >> i & 1)} for i, g in enumerate(GOD_IDS)]


def _window_doc(s: State) -> JSONDict | None:
    if s.window is None:
        return None
    return {"kind": s.window, "active": s.active, "pending": s.pending, "declined": _seats(s.declined)}


def _seats(mask: int) -> list[int]:
    return [seat for seat in range(SEATS) if mask >> seat & 1]


def _digest(log: list[JSONDict]) -> str:
    """Integrity check of the append-only log, which cannot be re-validated without a replay."""
    return hashlib.sha256(orjson.dumps(log)).hexdigest()[:32]


# -- Log redaction ----------------------------------------------------------------------------------


def _hide(cards: list[Any]) -> list[None]:
    return [None] * len(cards)


def _redact(e: JSONDict, seat: int | None, for_view: bool) -> JSONDict:
    """An event as ``seat`` sees it: card ids it may not see become null, lists keep their length.

    ``for_view`` gives the client form (a redeal shows only the viewer's ``hand``); otherwise the
    stored form is kept (``hands`` with the other seats' cards nulled), for determinize.
    """
    kind = e["event"]
    if kind in ("draw", "discard", "offer"):
        return e if seat == e["seat"] else {**e, "cards": _hide(e["cards"])}
    if kind in ("take", "deal"):
        return e if seat == e["seat"] else {**e, "card": None}
    if kind == "pass":
        return e if seat in (e["from"], e["to"]) else {**e, "card": None}
    if kind == "redeal":
        if for_view:
            return {"event": "redeal", "seat": e["seat"], "hand": None if seat is None else e["hands"][seat][:]}
        return {**e, "hands": [h if i == seat else _hide(h) for i, h in enumerate(e["hands"])]}
    return e


# -- Decoding ---------------------------------------------------------------------------------------


def _seat(v: Any) -> bool:
    return is_int(v) and 0 <= v < SEATS


def _card_or_null(v: Any) -> bool:
    return v is None or (isinstance(v, str) and v in CARD_BIT)


def _cards_or_null(v: Any) -> bool:
    return isinstance(v, list) and all(_card_or_null(c) for c in v)


def _god(v: Any) -> bool:
    return isinstance(v, str) and v in GOD_INDEX


def _one_of(*values: Any) -> Callable[[Any], bool]:
    return lambda v: any(v == x and type(v) is type(x) for x in values)


def _nonneg(v: Any) -> bool:
    return is_int(v) and v >= 0


def _change(v: Any) -> bool:
    return (isinstance(v, dict) and set(v) == {"god", "glory", "infamy"} and _god(v["god"]) and is_int(v["glory"])
            and is_int(v["infamy"]))


_EVENTS: Final[dict[str, dict[str, Callable[[Any], bool]]]] = {
    "round_start": {"round": _nonneg, "first_player": _seat},
    "decline": {"seat": _seat, "window": _one_of(*WINDOWS)},
    "power": {"seat": _seat, "god": _god, "as": lambda v: v is None or _god(v)},
    "redeal": {"seat": _seat, "hands": lambda v: isinstance(v, list) and len(v) == SEATS and
               all(_cards_or_null(h) for h in v)},
    "draw": {"seat": _seat, "cards": _cards_or_null, "reason": _one_of("endymina", "redraw")},
    "discard": {"seat": _seat, "cards": _cards_or_null, "reason": _one_of("endymina", "redraw", "no_play")},
    "play": {"seat": _seat, "card": _card_or_null, "target": _god, "to": lambda v: v is None or _god(v),
             "swap_with": lambda v: v is None or _god(v)},
    "resolve": {"card": _card_or_null, "changes": lambda v: isinstance(v, list) and all(_change(c) for c in v),
                "supply": lambda v: isinstance(v, dict) and set(v) == {"glory", "infamy"} and
                all(_nonneg(x) for x in v.values())},
    "keep": {"seat": _seat},
    "pass": {"from": _seat, "to": _seat, "card": _card_or_null},
    "offer": {"seat": _seat, "cards": _cards_or_null},
    "take": {"seat": _seat, "card": _card_or_null},
    "deal": {"seat": _seat, "card": _card_or_null},
    "game_end": {"reason": _one_of(*END_REASONS), "result": lambda v: isinstance(v, dict)},
}
_POWER_EXTRA: Final[dict[str, Callable[[Any], bool]]] = {
    "gods": lambda v: isinstance(v, list) and len(v) == 2 and all(_god(g) for g in v),
    "target": _god, "role": _one_of("target", "to", "swap_with"), "old": _god, "new": _god,
}


def _check_event(e: Any) -> None:
    require(isinstance(e, dict) and e.get("event") in _EVENTS, "log: unknown event")
    fields = _EVENTS[e["event"]]
    extra = set(e) - {"event", *fields}
    require(set(fields) <= set(e), f"log: {e['event']} event lacks fields")
    if e["event"] == "power":
        require(extra <= set(_POWER_EXTRA) and all(_POWER_EXTRA[k](e[k]) for k in extra), "log: bad power event")
    else:
        require(not extra, f"log: {e['event']} event has unexpected fields")
    require(all(check(e[name]) for name, check in fields.items()), f"log: bad {e['event']} event")


def _card_list(v: Any, what: str) -> list[str]:
    require(isinstance(v, list) and all(isinstance(c, str) and c in CARD_BIT for c in v), f"{what}: card ids expected")
    require(v == sorted(set(v)), f"{what}: cards must be distinct and sorted")
    return list(v)


def _seat_list(v: Any, what: str) -> int:
    require(isinstance(v, list) and all(_seat(x) for x in v) and v == sorted(set(v)), f"{what}: sorted seats expected")
    return sum(1 << x for x in v)


def _validated(game: TheyWhoWere8, doc: JSONDict, reachable: bool = True) -> State:
    """Every field checked: types, ranges, each card in exactly one place, the phase consistent with the rest."""
    s = State.__new__(State)
    options = doc["options"]
    require(isinstance(options, dict), "options must be an object")
    require(resolve_options(game, options) == options, "options must be complete")
    s.max_rounds = options["max_rounds"]
    require(doc["phase"] in PHASES, "unknown phase")
    s.phase = doc["phase"]
    require(is_int(doc["round"]) and 1 <= doc["round"] <= s.max_rounds, "round out of range")
    s.round = doc["round"]
    require(_seat(doc["first_player"]), "bad first_player")
    s.first_player = doc["first_player"]
    require(doc["turn_seat"] is None or _seat(doc["turn_seat"]), "bad turn_seat")
    s.turn_seat = doc["turn_seat"]
    require(is_int(doc["plays_this_round"]) and 0 <= doc["plays_this_round"] <= SEATS, "bad plays_this_round")
    s.plays = doc["plays_this_round"]

    gods = doc["gods"]
    require(isinstance(gods, list) and len(gods) == 8, "gods must list G1-G8")
    owner: list[int] = []
    s.tok, s.used = [[], []], 0
    for i, g in enumerate(gods):
        require(isinstance(g, dict) and set(g) == {"id", "owner", "glory", "infamy", "used"} and
                g["id"] == GOD_IDS[i], f"bad god entry {i}")
        require(_seat(g["owner"]) and _nonneg(g["glory"]) and _nonneg(g["infamy"]) and isinstance(g["used"], bool),
                f"bad god {g['id']}")
        owner.append(g["owner"])
        s.tok[GLORY].append(g["glory"])
        s.tok[INFAMY].append(g["infamy"])
        s.used |= g["used"] << i
    require(all(owner.count(seat) == 2 for seat in range(SEATS)), "every seat owns two gods")
    set_owners(s, owner)
    supply = doc["supply"]
    require(isinstance(supply, dict) and set(supply) == {"glory", "infamy"} and
            all(_nonneg(x) for x in supply.values()), "bad supply")
    s.supply = [supply["glory"], supply["infamy"]]
    for kind in (GLORY, INFAMY):
        require(s.supply[kind] + sum(s.tok[kind]) == SUPPLY_START, "tokens on gods and in the supply must make 15")

    hands = doc["hands"]
    require(isinstance(hands, list) and len(hands) == SEATS, "one hand per seat")
    s.hands = [_card_list(h, "hand") for h in hands]
    require(all(len(h) <= 4 for h in s.hands), "a hand holds at most 4 cards")
    s.pile = _card_list(doc["pile"], "pile")
    offer = doc["offer"]
    if offer is None:
        s.offer_seat, s.offer = None, []
    else:
        require(isinstance(offer, dict) and set(offer) == {"seat", "cards"} and _seat(offer["seat"]), "bad offer")
        s.offer_seat, s.offer = offer["seat"], _card_list(offer["cards"], "offer")
        require(1 <= len(s.offer) <= 4, "an offer holds 1 to 4 cards")
    everything = [c for h in s.hands for c in h] + s.pile + s.offer
    require(sorted(everything) == CARD_IDS, "every action card must be in exactly one place")

    end = doc["end_reason"]
    require(end is None or end in END_REASONS, "bad end_reason")
    s.end_reason = end
    s.keeping = _seat_list(doc["keeping"], "keeping")
    s.dealt = _seat_list(doc["dealt"], "dealt")
    _load_window(s, doc["window"])
    _load_play(s, doc["current_play"])
    _check_phase(s)

    log = doc["log"]
    require(isinstance(log, list), "log must be a list")
    if reachable:
        for e in log:
            _check_event(e)
        require(doc["history_digest"] == _digest(log), "the log was altered")
        powers = [e for e in log if e["event"] == "power"]
        require(all(s.owner[GOD_INDEX[e["god"]]] == e["seat"] for e in powers), "log: a power used by a non-owner")
        logged = sum(1 << GOD_INDEX[e["god"]] for e in powers)
        require(len(powers) == logged.bit_count() and logged == s.used,
                "a god is used exactly when the log records its power, once")
    s.log = log
    _load_knowledge(s, doc["knowledge"])
    s.rng, s.rng_shared = rng_load(doc["rng"]), False
    if s.phase in WINDOWS:
        require(eligible(s, s.pending), "the pending seat has nothing to use in this window")
    return s


def _load_window(s: State, w: Any) -> None:
    if w is None:
        s.window, s.active, s.pending, s.declined = None, 0, 0, 0
        return
    require(isinstance(w, dict) and set(w) == {"kind", "active", "pending", "declined"} and w["kind"] in WINDOWS and
            _seat(w["active"]) and _seat(w["pending"]), "bad window")
    s.window, s.active, s.pending = w["kind"], w["active"], w["pending"]
    s.declined = _seat_list(w["declined"], "declined")
    require(not s.declined >> s.pending & 1, "the pending seat has declined")


def _load_play(s: State, p: Any) -> None:
    if p is None:
        s.current_play = None
        return
    require(isinstance(p, dict) and set(p) == {"seat", "card", "target", "to", "swap_with", "redirects"}, "bad play")
    require(_seat(p["seat"]) and isinstance(p["card"], str) and p["card"] in RULES, "bad play")
    rule = RULES[p["card"]]
    named = [p[f] for f in rule.fields]
    require(all(_god(g) for g in named), "bad play targets")
    require(all(p[f] is None for f in ("to", "swap_with") if f not in rule.fields), "bad play fields")
    require(len({s.owner[GOD_INDEX[g]] for g in named}) == len(named), "the two gods belong to one player")
    require(p["card"] in s.pile, "a played card is in the pile")
    redirects = p["redirects"]
    require(isinstance(redirects, list) and len(redirects) <= 2, "bad redirects")
    for r in redirects:
        require(isinstance(r, dict) and set(r) == {"seat", "god", "as", "role", "old", "new"} and _seat(r["seat"]) and
                (r["god"], r["as"]) in (("G8", None), ("G7", "G8")) and r["role"] in rule.fields and
                _god(r["old"]) and _god(r["new"]) and s.used >> GOD_INDEX[r["god"]] & 1 == 1, "bad redirect")
    s.current_play = {**p, "redirects": [dict(r) for r in redirects]}


def _check_phase(s: State) -> None:
    """The phase fits the round, the hands, the window and the other fields (see the spec's invariants)."""
    ph = s.phase
    sizes = [len(h) for h in s.hands]
    require((s.current_play is not None) == (ph == "targeted"), "current_play only in the targeted window")
    require((s.offer_seat is not None) == (ph == "kymele_take"), "an offer only in kymele_take")
    require(not s.keeping or ph == "passing", "keeping only in passing")
    require(not s.dealt or ph in ("dealing", "kymele_take"), "dealt only while dealing")
    if ph == "game_over":
        require(s.end_reason is not None and s.window is None and s.turn_seat is None, "bad finished state")
        g, i = s.supply
        if s.end_reason == "round_limit":
            require(g > 0 and i > 0 and s.round == s.max_rounds and s.plays == SEATS, "bad round_limit end")
        else:
            want = "both_exhausted" if not g and not i else "glory_exhausted" if not g else "infamy_exhausted"
            require(s.end_reason == want, "end_reason does not fit the supply")
        return
    require(s.end_reason is None and s.supply[GLORY] > 0 and s.supply[INFAMY] > 0, "a running game has tokens")
    if ph in ("passing", "dealing", "kymele_take"):
        require(s.turn_seat is None and s.plays == SEATS and s.round < s.max_rounds, "bad end of round")
        if ph == "passing":
            require(s.first_player == (s.round - 1) % SEATS and s.active == s.first_player, "bad passing")
            require(sizes == [1] * SEATS, "every seat holds one card while passing")
        else:
            require(s.first_player == s.round % SEATS and s.active == s.first_player, "bad dealing")
            require(sizes == [2 if s.dealt >> seat & 1 else 1 for seat in range(SEATS)], "bad hands while dealing")
        require(s.window == ("passing" if ph == "passing" else "dealing"), "window does not fit the phase")
        if ph == "kymele_take":
            require(s.pending == s.offer_seat and not s.dealt >> s.pending & 1, "bad Kymele offer")
        return
    # a turn: turn_start, endymina_discard, play, play_after_redraw, targeted
    require(s.first_player == (s.round - 1) % SEATS and s.plays < SEATS, "bad round position")
    require(s.turn_seat == (s.first_player + s.plays) % SEATS, "turn_seat does not fit plays_this_round")
    turn = s.turn_seat
    assert turn is not None
    size = {"turn_start": 2, "play": 2, "play_after_redraw": 2, "targeted": 1, "endymina_discard": 4}[ph]
    for seat in range(SEATS):
        k = (seat - s.first_player) % SEATS
        require(sizes[seat] == (size if seat == turn else 1 if k < s.plays else 2), "hand sizes do not fit the turn")
    if ph in ("play", "play_after_redraw"):
        require(s.window is None, "no window is open during a play")
        s.pending = turn
    else:
        require(s.window == ("targeted" if ph == "targeted" else "turn_start") and s.active == turn, "bad window")
        if ph == "targeted":
            assert s.current_play is not None
            require(s.current_play["seat"] == turn, "the card was played by the turn seat")
        if ph == "endymina_discard":
            require(s.pending == turn, "Endymina discards on her own turn")


def _load_knowledge(s: State, k: Any) -> None:
    """Each seat's knowledge must be sound: every card it does not hold is where it may be."""
    require(isinstance(k, list) and len(k) == SEATS, "bad knowledge")
    where = {c: seat for seat, h in enumerate(s.hands) for c in h}
    for u, masks in enumerate(k):
        require(isinstance(masks, list) and len(masks) == LOCS and
                all(is_int(m) and 0 <= m <= ALL_CARDS for m in masks), "bad knowledge")
        own = mask_of(s.hands[u]) | (mask_of(s.offer) if s.offer_seat == u else 0)
        require(masks[u] == 0 and not any(m & own for m in masks), "knowledge of own cards")
        for c in cards_of(ALL_CARDS & ~own):
            require(masks[where.get(c, PILE)] & CARD_BIT[c] != 0, "knowledge contradicts the cards")
    k_load_lists(s, k)


# -- determinize: a random assignment of hidden cards to the places they may be ---------------------


def _sample_assignment(allowed: list[list[bool]], slots: list[int], rng: random.Random) -> list[int]:
    """A random perfect matching of cards to slots (``allowed[card][slot location]``), then mixing swaps.

    Kuhn's augmenting paths in a random order always find a matching when one exists, and the true
    deal is one, since knowledge is sound.
    """
    n = len(allowed)
    order = list(range(n))
    shuffle(rng, order)
    owner_of = [-1] * len(slots)
    slot_order = list(range(len(slots)))

    def augment(card: int, seen: list[bool]) -> bool:
        for j in slot_order:
            if not seen[j] and allowed[card][slots[j]]:
                seen[j] = True
                if owner_of[j] < 0 or augment(owner_of[j], seen):
                    owner_of[j] = card
                    return True
        return False

    for card in order:
        shuffle(rng, slot_order)
        if not augment(card, [False] * len(slots)):
            raise AssertionError("no deal fits the seat's knowledge")
    placed = [0] * n
    for j, card in enumerate(owner_of):
        placed[card] = j
    for _ in range(3 * n):
        a, b = below(rng, n), below(rng, n)
        ja, jb = placed[a], placed[b]
        if allowed[a][slots[jb]] and allowed[b][slots[ja]]:
            placed[a], placed[b] = jb, ja
    return placed


GAME: Final = TheyWhoWere8()


__all__ = ["GAME", "State", "TheyWhoWere8"]
