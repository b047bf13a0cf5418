"""They Who Were 8: components, the state, card knowledge and scoring (spec sections Components, Flow
"State", End and scoring).

Gods are indexed 0..7 (G1..G8) and tokens by kind (0 glory, 1 infamy), so an effect reads
``s.tok[kind][god]``. Action cards keep their ids (A01..A10); hands, the pile and a Kymele offer are
sorted lists, because their order carries no information (D3).
"""

from __future__ import annotations

import json
import random
from importlib import resources
from typing import Any, Final

from ..base import JSONDict, rng_copy

GAME_ID: Final = "they-who-were-8"

# -- Components -------------------------------------------------------------------------------------

DATA: Final[dict[str, Any]] = json.loads(
    resources.files(__package__.rsplit(".", 1)[0]).joinpath("data/they-who-were-8.json").read_text())

SEATS: Final = 4
TEAMS: Final[list[list[int]]] = DATA["setup"]["teams"]
TEAM_OF: Final = [next(t for t, seats in enumerate(TEAMS) if s in seats) for s in range(SEATS)]
SUPPLY_START: Final[int] = DATA["supply"]["glory"]
TOKENS: Final = ("glory", "infamy")
GLORY, INFAMY = 0, 1

GOD_IDS: Final[list[str]] = [g["id"] for g in DATA["gods"]]
GOD_INDEX: Final = {g: i for i, g in enumerate(GOD_IDS)}
GODS: Final[dict[str, JSONDict]] = {g["id"]: g for g in DATA["gods"]}
POWER_KEY: Final = [GODS[g]["power_key"] for g in GOD_IDS]
PITON: Final = GOD_INDEX[next(g for g in GOD_IDS if GODS[g]["power_key"] == "piton_copy")]
NAME: Final = {g: GODS[g]["name"] for g in GOD_IDS}

CARD_IDS: Final[list[str]] = [a["id"] for a in DATA["actions"]]
CARD_BIT: Final = {c: 1 << i for i, c in enumerate(CARD_IDS)}
ALL_CARDS: Final = (1 << len(CARD_IDS)) - 1
CARDS: Final[dict[str, JSONDict]] = {a["id"]: a for a in DATA["actions"]}
TITLE: Final = {c: CARDS[c]["title"] for c in CARD_IDS}


class CardRule:
    """A card's fields as data: the move fields, each field's token minimum, the effect."""

    __slots__ = ("add_glory", "add_infamy", "effect", "fields", "first_needs", "keys", "op", "second",
                 "second_needs", "token", "transfers")

    def __init__(self, doc: JSONDict) -> None:
        effect = doc["effect"]
        self.effect: JSONDict = effect
        self.op: str = effect["op"]
        self.fields: tuple[str, ...] = tuple(f["name"] for f in doc["fields"])
        # The effect's parameters, by op (flow.resolve_effect): add: glory and infamy added; remove and move:
        # the token kind; swap: (token kind, from field, to field) per transfer.
        self.add_glory: int = effect["glory"] if self.op == "add" else 0
        self.add_infamy: int = effect["infamy"] if self.op == "add" else 0
        self.token: int = TOKENS.index(effect["token"]) if self.op in ("remove", "move") else -1
        self.transfers: list[tuple[int, str, str]] = [
            (TOKENS.index(t["token"]), t["from"], t["to"]) for t in effect["transfers"]] if self.op == "swap" else []
        self.keys = frozenset({"type", "card", *self.fields})  # of a play move
        first, *rest = doc["fields"]
        assert first["name"] == "target" and first["owner"] == "not_player" and len(rest) <= 1
        self.first_needs = _needs(first["requires"])
        self.second: str | None = None
        self.second_needs = -1
        if rest:
            assert rest[0]["owner"] == "not_player_not_first_owner"
            self.second = rest[0]["name"]
            self.second_needs = _needs(rest[0]["requires"])


def _needs(requires: JSONDict | None) -> int:
    """The token kind a field needs at least one of, or -1."""
    if requires is None:
        return -1
    (kind, count), = requires.items()
    assert count == 1
    return TOKENS.index(kind)


RULES: Final[dict[str, CardRule]] = {c: CardRule(CARDS[c]) for c in CARD_IDS}

#: Knowledge locations: the four hands, then the pile (a Kymele offer of another seat counts as pile).
PILE: Final = 4
LOCS: Final = 5

# -- State ------------------------------------------------------------------------------------------


class State:
    """The spec's logical state fields, as plain data.

    ``tok[k][g]`` tokens of kind k on god g; ``supply[k]``; ``used`` is a god bitmask (bit g: turned);
    ``keeping``/``dealt``/``declined`` are seat bitmasks; ``current_play`` is replaced, never changed
    in place, so clones may share it.
    ``know0``..``know3`` pack, for seat ``u`` (``know<u>``) and each location (hands 0-3, pile 4), the cards
    ``u`` does not hold that may be there (see :func:`k_mask`): a sound over-approximation built from the
    events ``u`` has seen, which ``determinize`` respects.
    """

    __slots__ = ("active", "apart", "current_play", "dealt", "declined", "end_reason", "first_player", "hands",
                 "keeping", "know0", "know1", "know2", "know3", "log", "max_rounds", "offer", "offer_seat", "owner",
                 "pending", "phase", "pile", "plays", "rng", "rng_shared", "round", "supply", "tok", "turn_seat",
                 "used", "window")

    max_rounds: int
    phase: str
    round: int
    first_player: int
    turn_seat: int | None
    plays: int
    owner: list[int]
    tok: list[list[int]]
    used: int
    supply: list[int]
    hands: list[list[str]]
    pile: list[str]
    current_play: JSONDict | None
    window: str | None
    active: int
    pending: int
    declined: int
    keeping: int
    dealt: int
    offer_seat: int | None
    offer: list[str]
    end_reason: str | None
    log: list[JSONDict]
    know0: int
    know1: int
    know2: int
    know3: int
    rng: random.Random
    #: True when another state may hold the same generator object: copy it before the next draw.
    rng_shared: bool
    #: ``apart[p*4+q]``: the gods owned by neither seat p nor seat q (derived from ``owner``).
    apart: list[tuple[int, ...]]

    def gen(self) -> random.Random:
        """The generator, copied first if a clone shares it (clones are cheap; draws are rarer)."""
        if self.rng_shared:
            self.rng = rng_copy(self.rng)
            self.rng_shared = False
        return self.rng


#: The gods of a god bitmask, as a sorted tuple.
GODS_OF_MASK: Final = [tuple(g for g in range(8) if mask >> g & 1) for mask in range(256)]
PAIR_SEATS: Final = [(p, q) for p in range(SEATS) for q in range(SEATS)]


def set_owners(s: State, owner: list[int]) -> None:
    s.owner = owner
    seat_mask = [0, 0, 0, 0]
    for g, seat in enumerate(owner):
        seat_mask[seat] |= 1 << g
    s.apart = [GODS_OF_MASK[255 & ~(seat_mask[p] | seat_mask[q])] for p, q in PAIR_SEATS]


def clone_state(s: State) -> State:
    t = State.__new__(State)
    t.max_rounds, t.phase, t.round, t.first_player = s.max_rounds, s.phase, s.round, s.first_player
    t.turn_seat, t.plays = s.turn_seat, s.plays
    t.owner, t.apart = s.owner, s.apart  # fixed for the whole game
    t.tok = [s.tok[0][:], s.tok[1][:]]
    t.used = s.used
    t.supply = s.supply[:]
    h = s.hands
    t.hands = [h[0][:], h[1][:], h[2][:], h[3][:]]
    t.pile = s.pile[:]
    t.current_play = s.current_play
    t.window, t.active, t.pending, t.declined = s.window, s.active, s.pending, s.declined
    t.keeping, t.dealt = s.keeping, s.dealt
    t.offer_seat, t.offer = s.offer_seat, s.offer  # the offer list is replaced, never changed in place
    t.end_reason = s.end_reason
    t.log = s.log[:]
    t.know0, t.know1, t.know2, t.know3 = s.know0, s.know1, s.know2, s.know3
    t.rng = s.rng
    t.rng_shared = s.rng_shared = True
    return t


def mask_of(cards: list[str]) -> int:
    m = 0
    for c in cards:
        m |= CARD_BIT[c]
    return m


def cards_of(mask: int) -> list[str]:
    return [c for c in CARD_IDS if mask & CARD_BIT[c]]


# -- Card knowledge (what each seat can infer; used by determinize) ---------------------------------
#
# Seat u's picture of location loc (hands 0-3, pile 4) is a 10-bit card mask at bit offset loc * 10 of
# ``s.know<u>``: 50 bits per seat, so once compiled each picture is a machine integer held in the state
# itself, and an update is a few integer operations that allocate nothing (one 200-bit integer for all four
# made a new big integer per operation). Copying is free.

W: Final = len(CARD_IDS)
SLOT_MASK: Final = (1 << W) - 1
#: Each of a picture's five slots' lowest bit: ``cb * ONES`` is card bits cb in every slot.
ONES: Final = sum(1 << loc * W for loc in range(LOCS))
PILE_BITS: Final = SLOT_MASK << PILE * W
#: The bits of the slot of location loc; ``~`` of it.
SLOT_BITS: Final = [SLOT_MASK << loc * W for loc in range(LOCS)]
NOT_SLOT: Final = [~(SLOT_MASK << loc * W) for loc in range(LOCS)]
HAND_SLOTS_012: Final = SLOT_BITS[0] | SLOT_BITS[1] | SLOT_BITS[2]
#: Shift from the pile slot down to the slot of seat s.
PILE_SHIFT: Final = [(PILE - s) * W for s in range(SEATS)]
#: By card number (card number i for bit 1 << i): ``~(cb * ONES)`` (the seat knows where card cb is) and
#: ``cb << PILE * W`` (card cb may be in the pile).
FORGET: Final = [~((1 << i) * ONES) for i in range(W)]
TO_PILE: Final = [(1 << i) << PILE * W for i in range(W)]
CARD_NUMBER: Final = {c: i for i, c in enumerate(CARD_IDS)}


def k_view(s: State, u: int) -> int:
    """Seat ``u``'s picture."""
    return s.know0 if u == 0 else s.know1 if u == 1 else s.know2 if u == 2 else s.know3


def k_views(s: State) -> list[int]:
    return [s.know0, s.know1, s.know2, s.know3]


def k_load(s: State, views: list[int]) -> None:
    s.know0, s.know1, s.know2, s.know3 = views


def k_mask(view: int, loc: int) -> int:
    """Where the seat of picture ``view`` thinks cards may be at ``loc``: a card bitmask."""
    return view >> loc * W & SLOT_MASK


def k_lists(s: State) -> list[list[int]]:
    return [[k_mask(view, loc) for loc in range(LOCS)] for view in k_views(s)]


def k_load_lists(s: State, masks: list[list[int]]) -> None:
    k_load(s, [sum(m << loc * W for loc, m in enumerate(row)) for row in masks])


def k_gain(s: State, u: int, cb: int) -> None:
    """Seat ``u`` now holds (or is offered) the cards ``cb``: it knows exactly where they are."""
    views = k_views(s)
    views[u] &= ~(cb * ONES)
    k_load(s, views)


def k_draw(s: State, seat: int, card: int) -> None:
    """``seat`` draws card number ``card`` face down: the others learn only that one of the pile's cards went
    to ``seat``; ``seat`` knows where that card is."""
    down, forget = PILE_SHIFT[seat], FORGET[card]
    a, b, c, d = s.know0, s.know1, s.know2, s.know3
    s.know0 = a & forget if seat == 0 else a | (a & PILE_BITS) >> down
    s.know1 = b & forget if seat == 1 else b | (b & PILE_BITS) >> down
    s.know2 = c & forget if seat == 2 else c | (c & PILE_BITS) >> down
    s.know3 = d & forget if seat == 3 else d | (d & PILE_BITS) >> down


def k_discard(s: State, seat: int, card: int) -> None:
    """``seat`` puts card number ``card`` face down into the pile: to the others, any card of ``seat`` may now
    be there; ``seat`` knows it is."""
    up, hand, pile = PILE_SHIFT[seat], SLOT_BITS[seat], TO_PILE[card]
    a, b, c, d = s.know0, s.know1, s.know2, s.know3
    s.know0 = a | (a & hand) << up | (pile if seat == 0 else 0)
    s.know1 = b | (b & hand) << up | (pile if seat == 1 else 0)
    s.know2 = c | (c & hand) << up | (pile if seat == 2 else 0)
    s.know3 = d | (d & hand) << up | (pile if seat == 3 else 0)


def k_played(s: State, card: int) -> None:
    """Card number ``card``, played, is shown to everyone and goes into the pile."""
    forget, pile = FORGET[card], TO_PILE[card]
    s.know0 = s.know0 & forget | pile
    s.know1 = s.know1 & forget | pile
    s.know2 = s.know2 & forget | pile
    s.know3 = s.know3 & forget | pile


def k_take(s: State, seat: int, rest: int) -> None:
    """Kymele: ``seat`` took one offered card (a face-down draw to the others); ``rest`` went back."""
    down = PILE_SHIFT[seat]
    views = [view if u == seat else view | (view & PILE_BITS) >> down for u, view in enumerate(k_views(s))]
    views[seat] |= rest << PILE * W
    k_load(s, views)


def _moved(view: int, gifts: list[tuple[int, int, str]]) -> int:
    """A picture's slots of the givers' hands, moved to the slots of their receivers' hands."""
    moved = 0
    for src, dst, _ in gifts:
        bits = view & SLOT_BITS[src]
        moved |= bits << (dst - src) * W if dst >= src else bits >> (src - dst) * W
    return moved


def k_passing(s: State, gifts: list[tuple[int, int, str]]) -> None:
    """All gifts at once: every seat's picture of a giver's hand becomes its picture of the receiver's;
    the giver knows where its card went, the receiver knows its new hand."""
    views = k_views(s)
    if len(gifts) == SEATS:  # nobody keeps: every hand moves one seat on, in a couple of shifts
        views = [(v & HAND_SLOTS_012) << W | (v & SLOT_BITS[3]) >> 3 * W | v & PILE_BITS for v in views]
    else:
        kept = ~0
        for _, dst, _ in gifts:
            kept &= NOT_SLOT[dst]
        views = [v & kept | _moved(v, gifts) for v in views]
    for src, dst, card in gifts:  # the givers' news first, then what the receivers know (it wins)
        views[src] |= CARD_BIT[card] << dst * W
    for _, dst, card in gifts:
        views[dst] &= NOT_SLOT[dst] & ~(CARD_BIT[card] * ONES)
    k_load(s, views)


def k_redeal(s: State, old_hands: list[int], new_hands: list[int]) -> None:
    """Anatok: every seat knows its new hand; any card that was in a hand may now be in any other."""
    views = k_views(s)
    for u in range(SEATS):
        mine, view = new_hands[u], views[u]
        in_hands = (old_hands[u] | view | view >> W | view >> 2 * W | view >> 3 * W) & SLOT_MASK & ~mine
        views[u] = (in_hands * ONES & NOT_SLOT[u] & NOT_SLOT[PILE]
                    | (view >> PILE * W & SLOT_MASK & ~mine) << PILE * W)
    k_load(s, views)


def trivial_views(own: list[int]) -> list[int]:
    """Pictures of seats that have seen nothing but their own cards (``own[u]``: hand and offer)."""
    return [(ALL_CARDS & ~own[u]) * ONES & NOT_SLOT[u] for u in range(SEATS)]


# -- End and scoring --------------------------------------------------------------------------------

_SCORING: Final = DATA["scoring"]
PER_GLORY, PER_INFAMY, PER_POWER = _SCORING["per_glory"], _SCORING["per_infamy"], _SCORING["per_power_used"]


def result_doc(s: State) -> JSONDict:
    """The spec's result document (``finished`` false while the game runs: a provisional score)."""
    glory, infamy = s.tok
    seats = [{"seat": seat, "glory": 0, "infamy": 0, "powers_used": 0} for seat in range(SEATS)]
    for g, seat in enumerate(s.owner):
        row = seats[seat]
        row["glory"] += glory[g]
        row["infamy"] += infamy[g]
        row["powers_used"] += s.used >> g & 1
    teams = []
    for t, members in enumerate(TEAMS):
        g = sum(seats[m]["glory"] for m in members)
        i = sum(seats[m]["infamy"] for m in members)
        p = sum(seats[m]["powers_used"] for m in members)
        teams.append({"team": t, "seats": list(members), "glory": g, "infamy": i, "powers_used": p,
                      "points": PER_GLORY * g + PER_INFAMY * i + PER_POWER * p})
    a, b = teams
    winner: int | None
    if a["points"] != b["points"]:
        winner, decided_by = (0 if a["points"] > b["points"] else 1), "points"
    elif a["glory"] != b["glory"]:
        winner, decided_by = (0 if a["glory"] > b["glory"] else 1), "glory"
    else:
        winner, decided_by = None, "draw"
    scores = [teams[TEAM_OF[seat]]["points"] for seat in range(SEATS)]
    ranking = [1 if winner is None or TEAM_OF[seat] == winner else 2 for seat in range(SEATS)]
    return {"finished": s.phase == "game_over", "end_reason": s.end_reason, "teams": teams,
            "winner_team": winner, "draw": winner is None, "decided_by": decided_by,
            "scores": scores, "ranking": ranking, "seats": seats}
