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
    ``know`` packs, per seat ``u`` and location (hands 0-3, pile 4), the cards ``u`` does not hold that
    may be there (see :func:`k_mask`): a sound over-approximation built from the events ``u`` has
    seen, which ``determinize`` respects.
    """

    __slots__ = ("active", "apart", "current_play", "dealt", "declined", "end_reason", "first_player", "hands",
                 "keeping", "know", "log", "max_rounds", "offer", "offer_seat", "owner", "pending", "phase", "pile",
                 "plays", "rng", "rng_shared", "round", "supply", "tok", "turn_seat", "used", "window")

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
    know: int
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
    t.know = s.know
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
# Seat u's picture of location loc (hands 0-3, pile 4) is a 10-bit card mask at bit offset
# (u*5 + loc) * 10 of one integer: updates are a few integer operations and copying is free.

W: Final = len(CARD_IDS)
SLOT_MASK: Final = (1 << W) - 1
SEAT_MASK: Final = (1 << (LOCS * W)) - 1


def _slot(u: int, loc: int) -> int:
    return (u * LOCS + loc) * W


ONES_ALL: Final = sum(1 << _slot(u, loc) for u in range(SEATS) for loc in range(LOCS))
ONES_PILE: Final = sum(1 << _slot(u, PILE) for u in range(SEATS))
ONES_SEAT: Final = [sum(1 << _slot(u, loc) for loc in range(LOCS)) for u in range(SEATS)]
#: All viewers' pictures of location loc.
LOC_SLOTS: Final = [sum(SLOT_MASK << _slot(u, loc) for u in range(SEATS)) for loc in range(LOCS)]
OWN_SLOT: Final = [SLOT_MASK << _slot(u, u) for u in range(SEATS)]
#: Shift from every viewer's pile slot to its slot of seat s; bit offset of seat s's own pile slot.
PILE_SHIFT: Final = [(PILE - s) * W for s in range(SEATS)]
PILE_AT: Final = [_slot(s, PILE) for s in range(SEATS)]
SLOT: Final = [[_slot(u, loc) for loc in range(LOCS)] for u in range(SEATS)]
HAND_SLOTS_012: Final = LOC_SLOTS[0] | LOC_SLOTS[1] | LOC_SLOTS[2]
HAND_SLOTS: Final = HAND_SLOTS_012 | LOC_SLOTS[3]
ALL_OWN_SLOTS: Final = OWN_SLOT[0] | OWN_SLOT[1] | OWN_SLOT[2] | OWN_SLOT[3]
#: (left, right) shifts taking every viewer's slot of location a to its slot of location b.
SHIFT: Final = [[(max(b - a, 0) * W, max(a - b, 0) * W) for b in range(LOCS)] for a in range(LOCS)]


def k_mask(k: int, u: int, loc: int) -> int:
    """Where seat ``u`` thinks cards may be at ``loc``: a card bitmask."""
    return k >> _slot(u, loc) & SLOT_MASK


def k_lists(k: int) -> list[list[int]]:
    return [[k_mask(k, u, loc) for loc in range(LOCS)] for u in range(SEATS)]


def k_from_lists(masks: list[list[int]]) -> int:
    return sum(m << _slot(u, loc) for u, row in enumerate(masks) for loc, m in enumerate(row))


def k_gain(k: int, u: int, cb: int) -> int:
    """Seat ``u`` now holds (or is offered) the cards ``cb``: it knows exactly where they are."""
    return k & ~(cb * ONES_SEAT[u])


# The knowledge is one integer of 200 bits, so every operation on it makes a new one: the masks that depend
# only on a seat and a card are tables, built once (``[seat][card number]``, card number i for bit 1 << i).
NOT_OWN_SLOT: Final = [~OWN_SLOT[s] for s in range(SEATS)]
#: ``~(cb * ONES_SEAT[s])``: seat s knows where card cb is.
KNOWN_BY: Final = [[~((1 << i) * ONES_SEAT[s]) for i in range(W)] for s in range(SEATS)]
#: ``cb << PILE_AT[s]``: seat s knows card cb went to the pile.
TO_PILE_SEEN_BY: Final = [[(1 << i) << PILE_AT[s] for i in range(W)] for s in range(SEATS)]
#: ``~(cb * ONES_ALL)`` and ``cb * ONES_PILE``: card cb is shown to everyone, into the pile.
SHOWN: Final = [~((1 << i) * ONES_ALL) for i in range(W)]
IN_PILE: Final = [(1 << i) * ONES_PILE for i in range(W)]
CARD_NUMBER: Final = {c: i for i, c in enumerate(CARD_IDS)}
#: Passing: ``cb << SLOT[src][dst]`` (the giver knows where its card went) and ``cb * ONES_SEAT[dst]``.
GIFT_SEEN: Final = [[[(1 << i) << SLOT[src][dst] for i in range(W)] for dst in range(SEATS)] for src in range(SEATS)]
GIFT_KNOWN: Final = [[(1 << i) * ONES_SEAT[dst] for i in range(W)] for dst in range(SEATS)]
NOT_HAND_SLOTS: Final = ~HAND_SLOTS


def k_draw(k: int, s: int, card: int) -> int:
    """``s`` draws card number ``card`` face down: the others learn only that one of the pile's cards went
    to ``s``."""
    return (k | ((k & LOC_SLOTS[PILE]) >> PILE_SHIFT[s] & NOT_OWN_SLOT[s])) & KNOWN_BY[s][card]


def k_discard(k: int, s: int, card: int) -> int:
    """``s`` puts card number ``card`` face down into the pile: to the others, any card of ``s`` may now be
    there."""
    return k | (k & LOC_SLOTS[s]) << PILE_SHIFT[s] | TO_PILE_SEEN_BY[s][card]


def k_played(k: int, card: int) -> int:
    """Card number ``card``, played, is shown to everyone and goes into the pile."""
    return k & SHOWN[card] | IN_PILE[card]


def k_take(k: int, s: int, rest: int) -> int:
    """Kymele: ``s`` took one offered card (a face-down draw to the others); ``rest`` went back."""
    return k | ((k & LOC_SLOTS[PILE]) >> PILE_SHIFT[s] & ~OWN_SLOT[s]) | rest << PILE_AT[s]


def k_passing(k: int, gifts: list[tuple[int, int, str]]) -> int:
    """All gifts at once: every seat's picture of a giver's hand becomes its picture of the receiver's;
    the giver knows where its card went, the receiver knows its new hand."""
    if len(gifts) == SEATS:  # nobody keeps: every hand moves one seat on, in a couple of shifts
        moved = (k & HAND_SLOTS_012) << W | (k & LOC_SLOTS[3]) >> 3 * W
        own = ALL_OWN_SLOTS
        for src, dst, card in gifts:
            i = CARD_NUMBER[card]
            moved |= GIFT_SEEN[src][dst][i]
            own |= GIFT_KNOWN[dst][i]
        return (k & NOT_HAND_SLOTS | moved) & ~own
    cleared = moved = own = 0
    for src, dst, card in gifts:
        left, right = SHIFT[src][dst]
        cleared |= LOC_SLOTS[dst]
        moved |= (k & LOC_SLOTS[src]) << left >> right | CARD_BIT[card] << SLOT[src][dst]
        own |= OWN_SLOT[dst] | CARD_BIT[card] * ONES_SEAT[dst]
    return (k & ~cleared | moved) & ~own


def k_redeal(k: int, old_hands: list[int], new_hands: list[int]) -> int:
    """Anatok: every seat knows its new hand; any card that was in a hand may now be in any other."""
    out = 0
    for u in range(SEATS):
        mine = new_hands[u]
        view = k >> SLOT[u][0] & SEAT_MASK  # seat u's 5 slots only: small ints from here on
        in_hands = (old_hands[u] | view | view >> W | view >> 2 * W | view >> 3 * W) & SLOT_MASK & ~mine
        out |= (in_hands * ONES_SEAT[u] & ~(SLOT_MASK << SLOT[u][u]) & ~(SLOT_MASK << SLOT[u][PILE])
                | (view >> PILE * W & SLOT_MASK & ~mine) << SLOT[u][PILE])
    return out


def trivial_knowledge(own: list[int]) -> int:
    """Knowledge of seats that have seen nothing but their own cards (``own[u]``: hand and offer)."""
    return sum((ALL_CARDS & ~own[u]) * ONES_SEAT[u] & ~OWN_SLOT[u] for u in range(SEATS))


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
