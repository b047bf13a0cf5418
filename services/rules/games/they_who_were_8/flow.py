"""They Who Were 8: Setup, Flow (turns, decision windows, passing, dealing), Moves and Effects.

Action cards resolve through :func:`resolve_effect` (by the data file's effect ``op``) and god powers
through ``POWERS`` (keyed by ``power_key``): each power says in which window it lives, when a seat may
use it there (the spec's eligibility table), its legal parameters, how to check submitted ones and how
it resolves. Piton is the generic "any other power, used as if you owned it".
"""

from __future__ import annotations

import bisect
import random
from typing import Any, ClassVar, Final

from ..base import IllegalMove, JSONDict, Move, below, check_move_shape, move_type, shuffle
from .model import (
    CARD_BIT,
    CARD_IDS,
    CARD_NUMBER,
    CARDS,
    DATA,
    GLORY,
    GOD_IDS,
    GOD_INDEX,
    GODS,
    INFAMY,
    NAME,
    PITON,
    POWER_KEY,
    RULES,
    SEATS,
    SUPPLY_START,
    TITLE,
    TOKENS,
    CardRule,
    State,
    k_discard,
    k_draw,
    k_gain,
    k_load,
    k_passing,
    k_played,
    k_redeal,
    k_take,
    mask_of,
    result_doc,
    set_owners,
    trivial_views,
)

MOVE_TYPES: Final[tuple[str, ...]] = tuple(DATA["move_types"])
PHASES: Final[tuple[str, ...]] = tuple(p["name"] for p in DATA["phases"])
#: The phases' accepted move types (the spec's Phases table, from the data file).
PHASE_MOVES: Final[dict[str, tuple[str, ...]]] = {p["name"]: tuple(p["moves"]) for p in DATA["phases"]}
WINDOWS: Final[tuple[str, ...]] = tuple(p["name"] for p in DATA["phases"] if p["kind"] == "window")
END_REASONS: Final[tuple[str, ...]] = tuple(DATA["end_reasons"])
PHASE_OF_MOVE: Final = frozenset(MOVE_TYPES)
PLAY_PHASES: Final = frozenset(p for p, moves in PHASE_MOVES.items() if "play" in moves)
GOD_REFS: Final = {g: {"god": g} for g in GOD_IDS}
GOD_REF_AT: Final = [GOD_REFS[g] for g in GOD_IDS]
ALL_GODS: Final = list(range(8))
PAIRS: Final = [(a, b) for a in range(8) for b in range(a + 1, 8)]
PAIR_A, PAIR_B = [a for a, _ in PAIRS], [b for _, b in PAIRS]


# -- Setup ------------------------------------------------------------------------------------------


def setup(max_rounds: int, rng: random.Random, gods: list[str], cards: list[str]) -> State:
    """Setup steps 3-7 from the already shuffled god and card orders (R1, R2)."""
    s = State.__new__(State)
    s.max_rounds, s.rng, s.rng_shared = max_rounds, rng, False
    owner = [0] * 8
    for i, g in enumerate(gods):
        owner[GOD_INDEX[g]] = i // 2
    set_owners(s, owner)
    s.tok = [[0] * 8, [0] * 8]
    s.used = 0
    s.supply = [SUPPLY_START, SUPPLY_START]
    s.hands = [sorted(cards[2 * i:2 * i + 2]) for i in range(SEATS)]
    s.pile = sorted(cards[8:])
    s.current_play, s.window, s.active, s.pending, s.declined = None, None, 0, 0, 0
    s.keeping = s.dealt = 0
    s.offer_seat, s.offer, s.end_reason = None, [], None
    s.round, s.first_player, s.plays, s.turn_seat, s.phase = 1, 0, 0, 0, "turn_start"
    k_load(s, trivial_views([mask_of(h) for h in s.hands]))
    s.log = [{"event": "round_start", "round": 1, "first_player": 0}]
    start_turn(s, 0)
    return s


# -- Flow -------------------------------------------------------------------------------------------


def to_act(s: State) -> list[int]:
    return [] if s.phase == "game_over" else [s.pending]


def start_turn(s: State, seat: int) -> None:
    s.turn_seat = seat
    open_window(s, "turn_start", seat)


def open_window(s: State, kind: str, active: int) -> None:
    """D6, from the active seat; a window where every power is used up closes without a scan."""
    s.window, s.active, s.declined = kind, active, 0
    mask = WINDOW_MASK[kind]
    if s.used & mask != mask:
        seats = eligible_seats(s, kind)
        if seats:
            for seat in CLOCKWISE[active]:
                if seats >> seat & 1:
                    s.pending, s.phase = seat, kind
                    return
    s.window = None
    close_window(s, kind)


def ask_from(s: State, first: int) -> None:
    """D6: the first seat clockwise from ``first`` that has not declined and can use something here."""
    kind = s.window
    assert kind is not None
    seats = eligible_seats(s, kind) & ~s.declined
    if seats:
        for seat in CLOCKWISE[first]:
            if seats >> seat & 1:
                s.pending, s.phase = seat, kind
                return
    s.window = None
    close_window(s, kind)


CLOCKWISE: Final = [tuple((first + k) % SEATS for k in range(SEATS)) for first in range(SEATS)]


def eligible_seats(s: State, kind: str) -> int:
    """The seats (bitmask) with a legal ``use_power`` in window ``kind``: the spec's eligibility table.

    An unused god makes its owner eligible when its row holds for the owner, and the Piton owner
    (Piton unused) when it holds for her.
    """
    used, owner = s.used, s.owner
    seats = 0
    piton = -1 if used & PITON_BIT else owner[PITON]
    for g in WINDOW_GODS[kind]:
        if used >> g & 1:
            continue
        seat = owner[g]
        power = POWER_OF[g]
        if power.any_seat:
            if power.row(s, seat):
                seats |= 1 << seat if piton < 0 else 1 << seat | 1 << piton
            continue
        if not seats >> seat & 1 and power.row(s, seat):
            seats |= 1 << seat
        if piton >= 0 and not seats >> piton & 1 and power.row(s, piton):
            seats |= 1 << piton
    return seats


def eligible(s: State, seat: int) -> bool:
    """Whether ``seat`` has a legal ``use_power`` in the open window."""
    assert s.window is not None
    return bool(eligible_seats(s, s.window) >> seat & 1)


def _close_turn_start(s: State) -> None:
    assert s.turn_seat is not None
    s.phase, s.pending = "play", s.turn_seat


def _close_passing(s: State) -> None:
    do_passing(s)
    s.first_player = (s.first_player + 1) & 3
    s.dealt = 0
    open_window(s, "dealing", s.first_player)


def _close_dealing(s: State) -> None:
    """R7: one R3 draw for each seat not dealt yet, from the new First Player on (as :func:`draw`)."""
    dealt, log, pile, hands = s.dealt, s.log, s.pile, s.hands
    rng = s.gen() if s.rng_shared else s.rng
    for seat in CLOCKWISE[s.first_player]:
        if not dealt >> seat & 1:
            card = pile.pop(below(rng, len(pile)))
            bisect.insort(hands[seat], card)
            k_draw(s, seat, CARD_NUMBER[card])
            log.append({"event": "deal", "seat": seat, "card": card})
    s.dealt = 0
    s.round += 1
    s.plays = 0
    s.log.append({"event": "round_start", "round": s.round, "first_player": s.first_player})
    start_turn(s, s.first_player)


def end_turn(s: State) -> None:
    s.plays += 1
    assert s.turn_seat is not None
    if s.plays < SEATS:
        seat = s.turn_seat = (s.turn_seat + 1) & 3
        open_window(s, "turn_start", seat)
        return
    s.turn_seat = None
    if s.round >= s.max_rounds:
        game_over(s, "round_limit")
        return
    s.keeping = 0
    open_window(s, "passing", s.first_player)


def end_check(s: State) -> bool:
    """After every effect: an empty supply ends the game at once (D23)."""
    g, i = s.supply
    if g and i:
        return False
    game_over(s, "both_exhausted" if not g and not i else "glory_exhausted" if not g else "infamy_exhausted")
    return True


def game_over(s: State, reason: str) -> None:
    """No more turns, windows, passing or dealing; the result goes into the log."""
    s.phase, s.end_reason = "game_over", reason
    s.window, s.declined, s.turn_seat, s.current_play = None, 0, None, None
    s.keeping = s.dealt = 0
    s.log.append({"event": "game_end", "reason": reason, "result": result_doc(s)})


def do_passing(s: State) -> None:
    """Every seat not keeping gives its card to the next seat clockwise that is not keeping (D14)."""
    hands, log = s.hands, s.log
    gifts = [(src, dst, hands[src][0]) for src, dst in PASSES[s.keeping]]
    s.keeping = 0
    for src, dst, card in gifts:
        hands[dst] = [card]
        log.append({"event": "pass", "from": src, "to": dst, "card": card})
    k_passing(s, gifts)


def _passes(keeping: int) -> list[tuple[int, int]]:
    givers = [seat for seat in range(SEATS) if not keeping >> seat & 1]
    if len(givers) < 2:
        return []  # a lone seat not keeping keeps its card too
    return [(src, givers[(i + 1) % len(givers)]) for i, src in enumerate(givers)]


#: (giver, receiver) pairs of a passing, by the bitmask of the seats keeping their card.
PASSES: Final = [_passes(keeping) for keeping in range(1 << SEATS)]


def draw(s: State, seat: int) -> str:
    """R3: a uniformly random card of the (sorted) pile into ``seat``'s hand."""
    pile = s.pile
    rng = s.gen() if s.rng_shared else s.rng
    card = pile.pop(below(rng, len(pile)))
    bisect.insort(s.hands[seat], card)
    k_draw(s, seat, CARD_NUMBER[card])
    return card


def to_pile(s: State, seat: int, card: str) -> None:
    """A card of ``seat``'s hand goes face down into the pile."""
    s.hands[seat].remove(card)
    bisect.insort(s.pile, card)
    k_discard(s, seat, CARD_NUMBER[card])


# -- Action cards -----------------------------------------------------------------------------------


def playable(s: State, player: int, card: str) -> bool:
    """D19: a legal combination of fields exists: a first god of another player holding the token the card
    needs (if any), and for a two-god card a second one of a third player, holding its token (if any)."""
    rule = RULES[card]
    need, need2 = rule.first_needs, rule.second_needs
    apart, owner = s.apart, s.owner
    for x in apart[player * 5]:
        if need >= 0 and not s.tok[need][x]:
            continue
        if rule.second is None or need2 < 0:
            return True  # a destination of one of the two remaining players always exists
        for y in apart[player * 4 + owner[x]]:
            if s.tok[need2][y]:
                return True
    return False


def _play_table(card: str) -> list[list[Move]]:
    """Every conceivable play move of ``card``: ``[x][y]`` for a two-god card, ``[8][x]`` for a one-god card."""
    rule = RULES[card]
    if rule.second is None:  # one row, by target
        return [[]] * 8 + [[{"type": "play", "card": card, "target": GOD_REF_AT[x]} for x in range(8)]]
    return [[{"type": "play", "card": card, "target": GOD_REF_AT[x], rule.second: GOD_REF_AT[y]} for y in range(8)]
            for x in range(8)]


#: The move objects are built once and shared: ``legal_moves`` returns fresh lists of read-only moves.
PLAY_TABLE: Final = {c: _play_table(c) for c in CARD_IDS}


def play_moves(s: State, player: int, card: str, out: list[Move]) -> None:
    """Appends the legal play moves of ``card`` to ``out``: other players' gods holding the tokens the
    card needs (first choices, then second choices, as :func:`first_choices` and :func:`second_choices`)."""
    # Plain loops, not map/filter over bound __getitem__: compiled (mypyc), loops are the fast form.
    rule = RULES[card]
    table: list[list[Move]] = PLAY_TABLE[card]
    apart = s.apart
    need = rule.first_needs
    has_first = s.tok[need] if need >= 0 else None
    single = rule.second is None
    owner = s.owner
    need2 = rule.second_needs
    has_second = s.tok[need2] if need2 >= 0 else None
    for x in apart[player * 5]:
        if has_first is not None and not has_first[x]:
            continue
        if single:
            out.append(table[8][x])
            continue
        row = table[x]
        for y in apart[player * 4 + owner[x]]:
            if has_second is None or has_second[y]:
                out.append(row[y])


def target_error(s: State, player: int, card: str, first: int, second: int | None) -> str | None:
    rule = RULES[card]
    owner = s.owner
    x = GOD_IDS[first]
    if owner[first] == player:
        return f"{card} cannot name {x}: it is your own god (cards act only on other players' gods)"
    if rule.first_needs >= 0 and not s.tok[rule.first_needs][first]:
        return f"{card} cannot take {TOKENS[rule.first_needs]} from {x}: {x} has no {TOKENS[rule.first_needs]} token"
    if second is not None:
        y = GOD_IDS[second]
        if owner[second] == player:
            return f"{card} cannot name {y}: it is your own god"
        if owner[second] == owner[first]:
            return f"{card} needs two different players: {x} and {y} both belong to seat {owner[first]}"
        if rule.second_needs >= 0 and not s.tok[rule.second_needs][second]:
            kind = TOKENS[rule.second_needs]
            return f"{card} cannot take {kind} from {y}: {y} has no {kind} token"
    return None


def _change(g: int, glory: int, infamy: int) -> JSONDict:
    return {"god": GOD_IDS[g], "glory": glory, "infamy": infamy}


def _add(s: State, rule: CardRule, play: JSONDict) -> list[JSONDict]:
    """Up to the supply: a partial effect when it runs short (D19)."""
    g = GOD_INDEX[play["target"]]
    supply = s.supply
    sg, si = supply[0], supply[1]
    add_g, add_i = rule.add_glory, rule.add_infamy
    ng = add_g if add_g <= sg else sg
    ni = add_i if add_i <= si else si
    if not ng and not ni:
        return []
    supply[0], supply[1] = sg - ng, si - ni
    s.tok[0][g] += ng
    s.tok[1][g] += ni
    return [_change(g, ng, ni)]


def _remove(s: State, rule: CardRule, play: JSONDict) -> list[JSONDict]:
    kind = rule.token
    g = GOD_INDEX[play["target"]]
    tok = s.tok[kind]
    if not tok[g]:
        return []
    tok[g] -= 1
    s.supply[kind] += 1
    return [_change(g, -1, 0) if kind == GLORY else _change(g, 0, -1)]


def _move(s: State, rule: CardRule, play: JSONDict) -> list[JSONDict]:
    kind = rule.token
    a, b = GOD_INDEX[play["target"]], GOD_INDEX[play["to"]]
    tok = s.tok[kind]
    if not tok[a]:
        return []
    tok[a] -= 1
    tok[b] += 1
    return [_change(a, -1, 0), _change(b, 1, 0)] if kind == GLORY else [_change(a, 0, -1), _change(b, 0, 1)]


def _swap(s: State, rule: CardRule, play: JSONDict) -> list[JSONDict]:
    """Independent transfers, each judged on the state before the effect (D19)."""
    moves = [(kind, GOD_INDEX[play[a]], GOD_INDEX[play[b]]) for kind, a, b in rule.transfers]
    moves = [(kind, a, b) for kind, a, b in moves if s.tok[kind][a] >= 1]
    delta: dict[int, list[int]] = {GOD_INDEX[play[f]]: [0, 0] for f in rule.fields}
    for kind, a, b in moves:
        s.tok[kind][a] -= 1
        s.tok[kind][b] += 1
        delta[a][kind] -= 1
        delta[b][kind] += 1
    return [_change(g, d[0], d[1]) for g, d in delta.items() if d[0] or d[1]]


def resolve_effect(s: State, rule: CardRule, play: JSONDict) -> list[JSONDict]:
    """Effects: how each kind of action card acts on its final gods, by the data file's ``op``; returns the
    token changes for the log."""
    op = rule.op
    if op == "add":
        return _add(s, rule, play)
    if op == "remove":
        return _remove(s, rule, play)
    if op == "move":
        return _move(s, rule, play)
    return _swap(s, rule, play)


def resolve_card(s: State) -> None:
    """The card acts on its final gods (after any redirects), then the end check, then the next turn."""
    play = s.current_play
    assert play is not None
    card = play["card"]
    changes = resolve_effect(s, RULES[card], play)
    g, i = s.supply
    s.log.append({"event": "resolve", "card": card, "changes": changes, "supply": {"glory": g, "infamy": i}})
    s.current_play = None
    if g and i:
        end_turn(s)
    else:
        end_check(s)


def close_window(s: State, kind: str) -> None:
    """What happens when a window closes (the continuations named in the spec's Procedure)."""
    if kind == "turn_start":
        _close_turn_start(s)
    elif kind == "targeted":
        resolve_card(s)
    elif kind == "passing":
        _close_passing(s)
    else:
        _close_dealing(s)


# -- Powers -----------------------------------------------------------------------------------------


class Power:
    """One god power: its window, the eligibility row, legal parameters, checks and resolution.

    ``row(s, seat)`` is the spec's eligibility condition for a seat using this power now (ownership
    and ``used`` are checked by the caller, so Piton can ask the same question of any god).
    ``options(s, seat)`` lists the parameters of every legal use as keys of ``spells``, which gives
    a key's move fields (so the moves themselves are built once); ``check`` returns the reason a
    submitted parameter set is wrong; ``resolve`` applies it and returns True if a follow-up phase
    now waits for the user.
    """

    fields: ClassVar[dict[str, Any]] = {}
    window = ""
    #: The row does not depend on the seat (it is asked once for the owner and the Piton owner).
    any_seat = False

    def row(self, s: State, seat: int) -> bool:
        return True

    def options(self, s: State, seat: int) -> list[Any]:
        return [None]

    def spells(self) -> list[tuple[Any, JSONDict]]:
        """Every conceivable parameter key with its move fields."""
        return [(None, {})]

    def check(self, s: State, seat: int, move: Move) -> str | None:
        return None

    def resolve(self, s: State, seat: int, move: Move, event: JSONDict) -> bool:
        raise NotImplementedError


class Anatok(Power):
    window = "turn_start"
    any_seat = True

    def resolve(self, s: State, seat: int, move: Move, event: JSONDict) -> bool:
        """R6: every hand card is shuffled and dealt back, each seat keeping its hand size."""
        old = [mask_of(h) for h in s.hands]
        sizes = [len(h) for h in s.hands]
        cards = sorted(c for h in s.hands for c in h)
        shuffle(s.gen(), cards)
        pos = 0
        for i, n in enumerate(sizes):
            s.hands[i] = sorted(cards[pos:pos + n])
            pos += n
        k_redeal(s, old, [mask_of(h) for h in s.hands])
        s.log.append(event)
        s.log.append({"event": "redeal", "seat": seat, "hands": [h[:] for h in s.hands]})
        return False


def _differ(s: State) -> bool:
    """Some two gods differ in (glory, infamy): not every god holds what G1 holds."""
    g, i = s.tok
    return g.count(g[0]) != 8 or i.count(i[0]) != 8


class Arystyfan(Power):
    window = "turn_start"
    any_seat = True
    fields = {"gods": list}

    def row(self, s: State, seat: int) -> bool:
        return _differ(s)

    def options(self, s: State, seat: int) -> list[Any]:
        g, i = s.tok
        held = [g[x] << 8 | i[x] for x in range(8)]  # (glory, infamy) as one number per god
        return [PAIRS[k] for k in range(len(PAIRS)) if held[PAIR_A[k]] != held[PAIR_B[k]]]

    def spells(self) -> list[tuple[Any, JSONDict]]:
        return [((a, b), {"gods": [GOD_IDS[a], GOD_IDS[b]]}) for a, b in PAIRS]

    def check(self, s: State, seat: int, move: Move) -> str | None:
        a, b = move["gods"]
        if a == b:
            return f"Arystyfan swaps two different gods, not {a} with itself"
        x, y = GOD_INDEX[a], GOD_INDEX[b]
        if s.tok[GLORY][x] == s.tok[GLORY][y] and s.tok[INFAMY][x] == s.tok[INFAMY][y]:
            return f"{a} and {b} hold the same tokens: swapping them would change nothing"
        return None

    def resolve(self, s: State, seat: int, move: Move, event: JSONDict) -> bool:
        a, b = sorted(move["gods"])
        x, y = GOD_INDEX[a], GOD_INDEX[b]
        for tok in s.tok:
            tok[x], tok[y] = tok[y], tok[x]
        event["gods"] = [a, b]
        s.log.append(event)
        return False


KASANA_AT_LEAST: Final[int] = GODS["G3"]["condition"]["value"]


class Kasana(Power):
    window = "turn_start"
    any_seat = True
    fields = {"target": dict}
    at_least: ClassVar[int] = KASANA_AT_LEAST

    def row(self, s: State, seat: int) -> bool:
        at_least = KASANA_AT_LEAST
        return any(n >= at_least for n in s.tok[GLORY])

    def options(self, s: State, seat: int) -> list[Any]:
        return ALL_GODS

    def spells(self) -> list[tuple[Any, JSONDict]]:
        return [(g, {"target": GOD_REF_AT[g]}) for g in ALL_GODS]

    def resolve(self, s: State, seat: int, move: Move, event: JSONDict) -> bool:
        target = move["target"]["god"]
        if s.supply[GLORY]:
            s.supply[GLORY] -= 1
            s.tok[GLORY][GOD_INDEX[target]] += 1
        event["target"] = target
        s.log.append(event)
        return False


class Kymele(Power):
    window = "dealing"

    def row(self, s: State, seat: int) -> bool:
        return not s.dealt >> seat & 1

    def resolve(self, s: State, seat: int, move: Move, event: JSONDict) -> bool:
        """R5: up to 4 random cards leave the pile as the user's private offer."""
        offer = s.gen().sample(s.pile, min(4, len(s.pile)))
        for c in offer:
            s.pile.remove(c)
        s.offer_seat, s.offer = seat, sorted(offer)
        k_gain(s, seat, mask_of(offer))
        s.log.append(event)
        s.log.append({"event": "offer", "seat": seat, "cards": s.offer[:]})
        s.phase = "kymele_take"
        return True


class Endymina(Power):
    window = "turn_start"

    def row(self, s: State, seat: int) -> bool:
        return seat == s.turn_seat

    def resolve(self, s: State, seat: int, move: Move, event: JSONDict) -> bool:
        """R4: two draws into the hand; the discard of two follows."""
        s.log.append(event)
        drawn = [draw(s, seat), draw(s, seat)]
        s.log.append({"event": "draw", "seat": seat, "cards": drawn, "reason": "endymina"})
        s.phase = "endymina_discard"
        return True


class Nanos(Power):
    window = "passing"

    def row(self, s: State, seat: int) -> bool:
        return not s.keeping >> seat & 1

    def resolve(self, s: State, seat: int, move: Move, event: JSONDict) -> bool:
        s.keeping |= 1 << seat
        s.log.append(event)
        s.log.append({"event": "keep", "seat": seat})
        return False


def _my_role(s: State, seat: int) -> tuple[str, str | None] | None:
    """The field of the current play that names one of ``seat``'s gods, and the other named god."""
    play = s.current_play
    if play is None:
        return None
    fields = RULES[play["card"]].fields
    for f in fields:
        if s.owner[GOD_INDEX[play[f]]] == seat:
            others = [play[o] for o in fields if o != f]
            return f, (others[0] if others else None)
    return None


class Rymon(Power):
    window = "targeted"
    fields = {"target": dict}

    def row(self, s: State, seat: int) -> bool:
        play = s.current_play
        if play is None:
            return False
        owner = s.owner
        return any(owner[GOD_INDEX[play[f]]] == seat for f in RULES[play["card"]].fields)

    def _choices(self, s: State, seat: int) -> list[int]:
        role = _my_role(s, seat)
        assert role is not None
        other = -1 if role[1] is None else s.owner[GOD_INDEX[role[1]]]
        return [g for g in range(8) if s.owner[g] != seat and s.owner[g] != other]

    def options(self, s: State, seat: int) -> list[Any]:
        return self._choices(s, seat)

    def spells(self) -> list[tuple[Any, JSONDict]]:
        return [(g, {"target": GOD_REF_AT[g]}) for g in ALL_GODS]

    def check(self, s: State, seat: int, move: Move) -> str | None:
        target = move["target"]["god"]
        g = GOD_INDEX[target]
        if s.owner[g] == seat:
            return f"Rymon cannot redirect the card to {target}: it is your own god"
        role = _my_role(s, seat)
        assert role is not None
        if role[1] is not None and s.owner[GOD_INDEX[role[1]]] == s.owner[g]:
            return (f"Rymon cannot redirect to {target}: the card also names {role[1]}, and its two gods must "
                    f"belong to different players")
        return None

    def resolve(self, s: State, seat: int, move: Move, event: JSONDict) -> bool:
        play = s.current_play
        role = _my_role(s, seat)
        assert play is not None and role is not None
        field, new = role[0], move["target"]["god"]
        redirect = {"seat": seat, "god": event["god"], "as": event["as"], "role": field, "old": play[field],
                    "new": new}
        s.current_play = {**play, field: new, "redirects": [*play["redirects"], redirect]}
        event.update(target=new, role=field, old=play[field], new=new)
        s.log.append(event)
        return False


class Piton(Power):
    """Never asked directly: :func:`eligible_seats` and :func:`power_moves` expand it into the other powers."""

    window = "copied"


POWERS: Final[dict[str, Power]] = {
    "anatok_reshuffle": Anatok(), "arystyfan_swap": Arystyfan(), "kasana_extra_glory": Kasana(),
    "kymele_choose_deal": Kymele(), "endymina_draw_two": Endymina(), "nanos_keep_card": Nanos(),
    "piton_copy": Piton(), "rymon_redirect": Rymon(),
}
assert all(POWERS[POWER_KEY[g]].window == GODS[GOD_IDS[g]]["window"] for g in range(8))
assert all(set(POWERS[POWER_KEY[g]].fields) == {p["name"] for p in GODS[GOD_IDS[g]]["params"]}
           for g in range(8) if g != PITON)

POWER_OF: Final = [POWERS[POWER_KEY[g]] for g in range(8)]
#: The fields of a ``use_power`` of each god, and of Piton copying each god.
USE_KEYS: Final = [frozenset({"type", "god", *POWER_OF[g].fields}) for g in range(8)]
PITON_KEYS: Final = [frozenset({"type", "god", "as", *POWER_OF[g].fields}) for g in range(8)]
#: Per window: the gods (Piton aside) whose power is used there.
WINDOW_GODS: Final[dict[str, list[int]]] = {w: [g for g in range(8) if POWER_OF[g].window == w] for w in WINDOWS}

PITON_BIT: Final = 1 << PITON
#: Per window: the ``used`` bits that, all set, mean nothing can be used there any more (Piton included:
#: once the window's own gods are used, it has nothing to copy).
WINDOW_MASK: Final = {w: sum(1 << g for g in gods) for w, gods in WINDOW_GODS.items()}


def _use_table(g: int, x: int) -> dict[Any, Move]:
    """Every conceivable ``use_power`` of god ``g`` (as ``x`` for Piton), by parameter key."""
    head: JSONDict = {"type": "use_power", "god": GOD_IDS[g]}
    if g == PITON:
        head["as"] = GOD_IDS[x]
    return {key: {**head, **fields} for key, fields in POWER_OF[x].spells()}


#: The move objects are built once and shared: ``legal_moves`` returns fresh lists of read-only moves.
USE_TABLE: Final = [[_use_table(g, x) if x != PITON and (g == PITON or x == g) else {} for x in range(8)]
             for g in range(8)]


def power_moves(s: State, seat: int) -> list[Move]:
    """Every legal ``use_power`` of ``seat`` in the open window, by god, then ``as``, then parameters."""
    kind = s.window
    assert kind is not None
    moves: list[Move] = []
    used, owner = s.used, s.owner
    unused = [g for g in WINDOW_GODS[kind] if not used >> g & 1]
    for g in sorted([*unused, PITON]):
        if owner[g] != seat or used >> g & 1:
            continue
        table = USE_TABLE[g]
        for x in (unused if g == PITON else (g,)):
            power = POWER_OF[x]
            if power.row(s, seat):
                spelt = table[x]
                for key in power.options(s, seat):
                    moves.append(spelt[key])
    return moves


# -- Moves ------------------------------------------------------------------------------------------


def _god_ref(value: Any, what: str) -> None:
    if not (isinstance(value, dict) and len(value) == 1 and isinstance(value.get("god"), str)
            and value["god"] in GOD_INDEX):
        raise IllegalMove("malformed_move", f"{what} must be a god reference like {{\"god\": \"G5\"}}")


def _god_id(value: Any, what: str) -> None:
    if not (isinstance(value, str) and value in GOD_INDEX):
        raise IllegalMove("malformed_move", f"{what} must be a god id G1-G8")


def _card_id(value: Any, what: str) -> None:
    if not (isinstance(value, str) and value in CARD_BIT):
        raise IllegalMove("malformed_move", f"{what} must be an action card id A01-A10")


def _check_params(move: Move, fields: dict[str, Any], base: dict[str, Any], kind: str) -> None:
    check_move_shape(move, {**base, **fields}, kind)
    if "target" in fields:
        _god_ref(move["target"], "target")
    if "gods" in fields:
        gods = move["gods"]
        if len(gods) != 2:
            raise IllegalMove("malformed_move", "gods must list exactly two god ids")
        for g in gods:
            _god_id(g, "each of gods")


def _parse_play(move: Any) -> tuple[str, CardRule, str, str | None] | None:
    """A ``play`` with exactly its card's fields, each a god reference: (card, rule, target, second god).

    This is the common case, checked fast; anything else gets the detailed check of :func:`check_shape`.
    """
    card = move.get("card")
    rule = RULES.get(card) if type(card) is str else None
    # Exactly the card's fields (type and card are there): as many keys, and the god fields among them.
    if rule is None or len(move) != len(rule.keys):
        return None
    ref = move.get("target")  # exactly {"god": <a god id>}
    if type(ref) is not dict or len(ref) != 1 or type(target := ref.get("god")) is not str or target not in GOD_INDEX:
        return None
    second = rule.second
    if second is None:
        return card, rule, target, None
    ref = move.get(second)
    if type(ref) is not dict or len(ref) != 1 or type(other := ref.get("god")) is not str or other not in GOD_INDEX:
        return None
    return card, rule, target, other


def _ref_ok(ref: Any) -> bool:
    return type(ref) is dict and len(ref) == 1 and type(g := ref.get("god")) is str and g in GOD_INDEX


def _well_formed_power(move: Move) -> bool:
    """The common case of a ``use_power``, checked fast (anything else gets the detailed check)."""
    god = move.get("god")
    x = GOD_INDEX.get(god, -1) if type(god) is str else -1
    if x == PITON:
        as_ = move.get("as")
        x = GOD_INDEX.get(as_, PITON) if type(as_) is str else PITON
        if x == PITON:
            return False
        keys = PITON_KEYS[x]
    elif x >= 0:
        keys = USE_KEYS[x]
    else:
        return False
    if move.keys() != keys:
        return False
    if "target" in keys and not _ref_ok(move["target"]):
        return False
    if "gods" in keys:
        gods = move["gods"]
        return type(gods) is list and len(gods) == 2 and all(type(g) is str and g in GOD_INDEX for g in gods)
    return True


def check_shape(move: Any) -> str:
    """Validation step 1 (malformed_move), independent of the state."""
    kind = move.get("type") if type(move) is dict else None
    if type(kind) is not str or kind not in PHASE_OF_MOVE:
        kind = move_type(move, MOVE_TYPES)
    if kind == "play":
        card = move.get("card")
        _card_id(card, "card")
        check_move_shape(move, {"card": str, **{f: dict for f in RULES[card].fields}}, kind)
        for f in RULES[card].fields:
            _god_ref(move[f], f)
    elif kind in ("discard_and_draw", "discard", "kymele_take"):
        check_move_shape(move, {"card": str}, kind)
        _card_id(move["card"], "card")
    elif kind == "decline":
        if len(move) != 1:
            check_move_shape(move, {}, kind)
    elif kind == "endymina_discard":
        check_move_shape(move, {"cards": list}, kind)
        if len(move["cards"]) != 2:
            raise IllegalMove("malformed_move", "endymina_discard needs exactly two cards")
        for c in move["cards"]:
            _card_id(c, "each of cards")
    elif not _well_formed_power(move):  # use_power
        god = move.get("god")
        _god_id(god, "god")
        g = GOD_INDEX[god]
        if g != PITON:
            _check_params(move, POWERS[POWER_KEY[g]].fields, {"god": str}, kind)
        else:
            as_ = move.get("as")
            _god_id(as_, "as")
            x = GOD_INDEX[as_]
            if x != PITON:
                _check_params(move, POWERS[POWER_KEY[x]].fields, {"god": str, "as": str}, kind)
            else:  # refused later (power_not_available); only its fields' shapes matter here
                extra = {k: v for k, v in {"gods": list, "target": dict}.items() if k in move}
                _check_params(move, extra, {"god": str, "as": str}, kind)
    return kind


def do_play(s: State, seat: int, move: Move) -> None:
    parsed = _parse_play(move)
    assert parsed is not None  # check_shape accepted it
    _play(s, seat, *parsed)


def _play(s: State, seat: int, card: str, rule: CardRule, target: str, other: str | None) -> None:
    hand = s.hands[seat]
    if card not in hand:
        raise IllegalMove("card_not_in_hand", f"{card} is not in your hand")
    first = GOD_INDEX[target]
    owner, need, field = s.owner, rule.first_needs, rule.second
    ok = owner[first] != seat and (need < 0 or s.tok[need][first] > 0)
    if other is None:
        second = None
        play = {"seat": seat, "card": card, "target": target, "to": None, "swap_with": None, "redirects": []}
    else:
        assert field is not None
        second = GOD_INDEX[other]
        need = rule.second_needs
        ok = ok and seat != owner[second] != owner[first] and (need < 0 or s.tok[need][second] > 0)
        play = {"seat": seat, "card": card, "target": target, "to": None, "swap_with": None, "redirects": [],
                field: other}
    if not ok:  # legal targets prove the card playable, so playability is tested only on a refusal
        if not playable(s, seat, card):
            raise IllegalMove("card_not_playable", f"{card} ({TITLE[card]}) has no legal target now")
        raise IllegalMove("invalid_target", target_error(s, seat, card, first, second) or "bad target")
    hand.remove(card)
    bisect.insort(s.pile, card)
    k_played(s, CARD_NUMBER[card])
    s.current_play = play
    s.log.append({"event": "play", "seat": seat, "card": card, "target": target, "to": play["to"],
                  "swap_with": play["swap_with"]})
    open_window(s, "targeted", seat)


def _any_playable(s: State, seat: int) -> bool:
    return any(playable(s, seat, c) for c in s.hands[seat])


def do_discard_and_draw(s: State, seat: int, move: Move) -> None:
    card = move["card"]
    if card not in s.hands[seat]:
        raise IllegalMove("card_not_in_hand", f"{card} is not in your hand")
    if _any_playable(s, seat):
        raise IllegalMove("must_play", "you hold a playable card: you must play it")
    drawn = draw(s, seat)
    s.log.append({"event": "draw", "seat": seat, "cards": [drawn], "reason": "redraw"})
    to_pile(s, seat, card)
    s.log.append({"event": "discard", "seat": seat, "cards": [card], "reason": "redraw"})
    s.phase = "play_after_redraw"


def do_discard(s: State, seat: int, move: Move) -> None:
    card = move["card"]
    if card not in s.hands[seat]:
        raise IllegalMove("card_not_in_hand", f"{card} is not in your hand")
    if _any_playable(s, seat):
        raise IllegalMove("must_play", "you hold a playable card: you must play it")
    to_pile(s, seat, card)
    s.log.append({"event": "discard", "seat": seat, "cards": [card], "reason": "no_play"})
    end_turn(s)


def do_use_power(s: State, seat: int, move: Move) -> None:
    name = move["god"]
    g = GOD_INDEX[name]
    if s.owner[g] != seat:
        raise IllegalMove("not_owner", f"{name} ({NAME[name]}) belongs to seat {s.owner[g]}, not to you")
    if s.used >> g & 1:
        raise IllegalMove("power_used", f"{name} ({NAME[name]}) has already been used")
    kind = s.window
    assert kind is not None
    as_: str | None = None
    x = g
    if g == PITON:
        as_ = move["as"]
        x = GOD_INDEX[as_]
        if x == PITON:
            raise IllegalMove("power_not_available", "Piton cannot copy itself")
        if s.used >> x & 1:
            raise IllegalMove("power_not_available", f"Piton can copy only unturned gods: {as_} has been used")
    power = POWERS[POWER_KEY[x]]
    label = NAME[GOD_IDS[x]] if as_ is None else f"Piton as {NAME[GOD_IDS[x]]}"
    if power.window != kind:
        raise IllegalMove("power_not_available",
                          f"{label} is used in the {power.window} window, but this is the {kind} window")
    if not power.row(s, seat):
        raise IllegalMove("power_not_available", f"{label} cannot be used by you now: {UNAVAILABLE[POWER_KEY[x]]}")
    error = power.check(s, seat, move)
    if error:
        raise IllegalMove("invalid_power_params", error)
    s.used |= 1 << g
    event: JSONDict = {"event": "power", "seat": seat, "god": name, "as": as_}
    if power.resolve(s, seat, move, event):
        return  # a follow-up phase waits for the user
    after_power(s, seat)


UNAVAILABLE: Final = {
    "arystyfan_swap": "every god holds the same tokens",
    "kasana_extra_glory": f"no god has {Kasana.at_least} or more glory",
    "endymina_draw_two": "it is not your turn",
    "nanos_keep_card": "you already keep your card",
    "kymele_choose_deal": "you already have your card for this deal",
    "rymon_redirect": "the card does not name any of your gods",
}


def after_power(s: State, seat: int) -> None:
    """D6: after a use the window starts again from the user, with nobody's decline remembered."""
    if end_check(s):
        return
    s.declined = 0
    ask_from(s, seat)


def do_decline(s: State, seat: int, move: Move) -> None:
    s.declined |= 1 << seat
    s.log.append({"event": "decline", "seat": seat, "window": s.window})
    ask_from(s, (seat + 1) & 3)


def do_endymina_discard(s: State, seat: int, move: Move) -> None:
    a, b = sorted(move["cards"])
    if a == b:
        raise IllegalMove("invalid_power_params", f"discard two different cards, not {a} twice")
    hand = s.hands[seat]
    for c in (a, b):
        if c not in hand:
            raise IllegalMove("card_not_in_hand", f"{c} is not in your hand")
    to_pile(s, seat, a)
    to_pile(s, seat, b)
    s.log.append({"event": "discard", "seat": seat, "cards": [a, b], "reason": "endymina"})
    after_power(s, seat)


def do_kymele_take(s: State, seat: int, move: Move) -> None:
    card = move["card"]
    if card not in s.offer:
        raise IllegalMove("card_not_in_hand", f"{card} is not among the offered cards {', '.join(s.offer)}")
    rest = [c for c in s.offer if c != card]
    bisect.insort(s.hands[seat], card)
    for c in rest:
        bisect.insort(s.pile, c)
    k_take(s, seat, mask_of(rest))
    s.offer_seat, s.offer = None, []
    s.dealt |= 1 << seat
    s.log.append({"event": "take", "seat": seat, "card": card})
    after_power(s, seat)


def apply_move(s: State, seat: int, move: Move) -> None:
    """The spec's check order: malformed_move, game_over, not_your_turn, wrong_phase, then the move's own.

    A well-formed play by the seat to act, the most common move, is recognised first and goes straight on.
    The moves are dispatched by plain comparisons (compiled, direct calls), one function per move type.
    """
    if type(move) is dict and move.get("type") == "play" and seat == s.pending and s.phase in PLAY_PHASES:
        parsed = _parse_play(move)
        if parsed is not None:
            card, rule, target, other = parsed  # unpacked, not *parsed: a direct (compiled) call
            _play(s, seat, card, rule, target, other)
            return
    kind = check_shape(move)
    _check_turn(s, seat, kind)
    if kind == "play":
        do_play(s, seat, move)
    elif kind == "use_power":
        do_use_power(s, seat, move)
    elif kind == "decline":
        do_decline(s, seat, move)
    elif kind == "discard_and_draw":
        do_discard_and_draw(s, seat, move)
    elif kind == "discard":
        do_discard(s, seat, move)
    elif kind == "endymina_discard":
        do_endymina_discard(s, seat, move)
    else:
        do_kymele_take(s, seat, move)


def _check_turn(s: State, seat: int, kind: str) -> None:
    phase = s.phase
    if phase == "game_over":
        raise IllegalMove("game_over", "the game is over")
    if seat != s.pending:
        raise IllegalMove("not_your_turn", f"it is seat {s.pending}'s decision, not seat {seat}'s")
    if kind not in PHASE_MOVES[phase]:
        raise IllegalMove("wrong_phase", f"{kind} is not accepted now: the phase is {phase} "
                                         f"(accepted: {', '.join(PHASE_MOVES[phase])})")


def _legal_play(s: State, seat: int) -> list[Move]:
    hand = s.hands[seat]
    moves: list[Move] = []
    for card in hand:
        play_moves(s, seat, card, moves)
    if not moves:
        other = "discard_and_draw" if s.phase == "play" else "discard"
        moves = [{"type": other, "card": c} for c in hand]
    return moves


def _legal_window(s: State, seat: int) -> list[Move]:
    moves = power_moves(s, seat)
    moves.append({"type": "decline"})
    return moves


def _legal_endymina(s: State, seat: int) -> list[Move]:
    hand = s.hands[seat]
    return [{"type": "endymina_discard", "cards": [a, b]} for i, a in enumerate(hand) for b in hand[i + 1:]]


def _legal_kymele(s: State, seat: int) -> list[Move]:
    return [{"type": "kymele_take", "card": c} for c in s.offer]


def legal_moves(s: State, seat: int) -> list[Move]:
    """By phase: plays (or the discards of a hand without a playable card), a window's powers and decline, a
    follow-up's choices."""
    phase = s.phase
    if seat != s.pending or phase == "game_over":
        return []
    if phase == "play" or phase == "play_after_redraw":
        return _legal_play(s, seat)
    if phase == "endymina_discard":
        return _legal_endymina(s, seat)
    if phase == "kymele_take":
        return _legal_kymele(s, seat)
    return _legal_window(s, seat)


__all__ = ["CARDS", "END_REASONS", "PHASES", "WINDOWS", "apply_move", "eligible", "legal_moves",
           "setup", "to_act"]
