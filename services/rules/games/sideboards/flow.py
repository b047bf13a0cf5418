"""State, Setup, Flow, Moves and Effects (spec sections of the same names).

Every decision is simultaneous (D13): a ``start`` or ``place`` move is only stored in ``submitted``;
the last pending seat's submission resolves the step inside the same ``apply``. ``exchange`` is not a
submission and resolves at once (D14).
"""

from __future__ import annotations

import random
from typing import Any, Final

from ..base import IllegalMove, Move, below, check_move_shape, move_type, rng_copy, shuffle
from .components import CARD_IDS, CARD_SET, ORIENTATIONS, SIDES
from .scoring import result_doc

PHASES: Final = ("start", "place", "game_over")
MOVE_TYPES: Final = ("start", "place", "exchange")
LAST_STEP: Final = 6

# -- State ------------------------------------------------------------------------------------------


class State:
    """Plain data, the spec's canonical fields plus ``tracked``.

    ``tracked[s]`` lists the cards seat s passed that have not become public since and are not back in
    its own hand (D24); the view's ``known_in_hands`` reports their current holders.
    """

    __slots__ = ("deck", "discard", "dressers", "exchange", "goals", "hands", "last_reshuffle", "options",
                 "pass_log", "phase", "players", "result", "rng", "step", "submitted", "tracked")

    players: int
    options: dict[str, Any]
    goals: tuple[int, int, int]
    phase: str
    step: int
    deck: list[str]
    discard: list[str]
    hands: list[list[str]]
    dressers: list[list[tuple[str, int]]]
    exchange: list[str]
    submitted: list[Move | None]
    pass_log: list[dict[str, Any]]
    last_reshuffle: list[str] | None
    tracked: list[list[str]]
    rng: random.Random
    result: dict[str, Any] | None

    @property
    def four(self) -> bool:
        return bool(self.options["four_card_hand"])


def clone_state(s: State) -> State:
    """Lists copied one level down; moves, log entries, dresser tuples and the result are never mutated.

    The RNG is shared: only a reshuffle draws from it, and that copies it first (see ``draw_one``).
    """
    t = State.__new__(State)
    t.players, t.options, t.goals, t.phase, t.step = s.players, s.options, s.goals, s.phase, s.step
    t.deck = s.deck[:]
    t.discard = s.discard[:]
    t.hands = [h[:] for h in s.hands]
    t.dressers = [d[:] for d in s.dressers]
    t.exchange = s.exchange[:]
    t.submitted = s.submitted[:]
    t.pass_log = s.pass_log[:]
    t.last_reshuffle = s.last_reshuffle
    t.tracked = [k[:] for k in s.tracked]
    t.rng = s.rng
    t.result = s.result
    return t


def hand_size(four: bool) -> int:
    """H, the hand size at each place decision."""
    return 3 if four else 2


def deal_size(four: bool) -> int:
    return 4 if four else 3


# -- Setup ------------------------------------------------------------------------------------------


def setup(players: int, options: dict[str, Any], rng: random.Random) -> State:
    """Setup steps 2-5; the RNG is used for the random goals first (D20), then for the deck."""
    s = State.__new__(State)
    s.players, s.options, s.rng = players, options, rng
    if options["goals"] == "random":  # rng.choice(range(1, 8)) etc., the same draws (base.below), compiled
        colour = 1 + below(rng, 7)
        handle = 8 + below(rng, 7)
        row = 15 + below(rng, 16)
        s.goals = (colour, handle, row)
    else:
        c, h, r = options["goals"]
        s.goals = (c, h, r)
    deck = list(CARD_IDS)
    shuffle(rng, deck)
    dealt = deal_size(s.four) * players  # one card at a time to each seat in turn, from the top (deck[0])
    s.hands = [deck[seat:dealt:players] for seat in range(players)]
    s.deck = deck[dealt:]
    s.discard = []
    s.dressers = [[] for _ in range(players)]
    s.exchange = ["none" if s.four else "unused"] * players
    s.submitted = [None] * players
    s.pass_log = []
    s.last_reshuffle = None
    s.tracked = [[] for _ in range(players)]
    s.phase, s.step, s.result = "start", 0, None
    return s


# -- Flow -------------------------------------------------------------------------------------------


def to_act(s: State) -> list[int]:
    if s.phase == "game_over":
        return []
    return [seat for seat, sub in enumerate(s.submitted) if sub is None]


def draw_one(s: State, seat: int) -> None:
    """Draw the top card; an empty deck is first refilled from the shuffled discard (D16)."""
    if not s.deck and s.discard:
        s.deck, s.discard = s.discard, []
        s.rng = rng_copy(s.rng)  # the RNG may be shared with the state this one was cloned from
        shuffle(s.rng, s.deck)
        s.last_reshuffle = sorted(s.deck)
    if s.deck:
        s.hands[seat].append(s.deck.pop(0))


def forget(s: State, cards: list[str]) -> None:
    """Cards that became public (placed or discarded) are no longer tracked by anyone."""
    for known in s.tracked:
        if known:
            for card in cards:
                if card in known:
                    known.remove(card)


def hand_off_and_draw(s: State) -> None:
    n = s.players
    outgoing = s.hands
    s.hands = [[] for _ in range(n)]
    if n >= 2:
        for seat in range(n):
            cards = outgoing[seat]
            to = (seat + 1) % n
            s.hands[to].extend(cards)
            if cards:
                s.pass_log.append({"step": s.step, "from": seat, "to": to, "cards": cards[:]})
                s.tracked[seat].extend(cards)
        for seat in range(n):  # a card that came round again is in its passer's own hand
            known = s.tracked[seat]
            if known:
                hand = s.hands[seat]
                s.tracked[seat] = [c for c in known if c not in hand]
        k = 1
    else:
        s.discard.extend(outgoing[0])
        k = hand_size(s.four)
    for seat in range(n):
        for _ in range(k):
            draw_one(s, seat)


def resolve_start(s: State) -> None:
    placed: list[str] = []
    for seat, move in enumerate(s.submitted):
        assert move is not None
        cards, orientations = move["cards"], move["orientations"]
        hand = s.hands[seat]
        hand.remove(cards[0])
        hand.remove(cards[1])
        s.dressers[seat] = [(cards[0], orientations[0]), (cards[1], orientations[1])]
        placed.extend(cards)
    forget(s, placed)
    hand_off_and_draw(s)
    s.phase, s.step = "place", 1
    s.submitted = [None] * s.players


def resolve_place(s: State) -> None:
    placed: list[str] = []
    for seat, move in enumerate(s.submitted):
        assert move is not None
        card = move["card"]
        s.hands[seat].remove(card)
        if move["side"] == "left":
            s.dressers[seat].insert(0, (card, move["orientation"]))
        else:
            s.dressers[seat].append((card, move["orientation"]))
        placed.append(card)
    forget(s, placed)
    s.submitted = [None] * s.players
    if s.step == LAST_STEP:
        leftovers = [c for hand in s.hands for c in hand]
        s.discard.extend(leftovers)
        s.hands = [[] for _ in range(s.players)]
        forget(s, leftovers)
        s.phase = "game_over"
        s.result = result_doc(s.dressers, s.exchange, s.goals)
        return
    hand_off_and_draw(s)
    s.step += 1


def exchange(s: State, seat: int) -> None:
    """Effects, "Exchange": discard the hand, draw two (the reshuffle may return them), flip the card."""
    hand = s.hands[seat]
    s.discard.extend(hand)
    forget(s, hand)
    s.hands[seat] = []
    draw_one(s, seat)
    draw_one(s, seat)
    s.exchange[seat] = "used"


# -- Moves ------------------------------------------------------------------------------------------


def _card_id(value: Any, what: str) -> str:
    if not isinstance(value, str) or value not in CARD_SET:
        raise IllegalMove("malformed_move", f"{what}: {value!r} is not a dresser card (S01-S60)")
    return value


def _orientation(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise IllegalMove("malformed_move", "an orientation must be a whole number (0 or 180)")
    return value


def well_formed(move: Any) -> Move:
    """Step (1) of the validation order: the move's shape, returned as a normalised copy (a fresh one, or the
    shared read-only move of :data:`PLACE_MOVES` that is equal to it)."""
    if type(move) is dict and len(move) == 4 and move.get("type") == "place":  # the search's hot path
        card, side, orientation = move.get("card"), move.get("side"), move.get("orientation")
        if type(card) is str and card in CARD_SET and type(side) is str and type(orientation) is int:
            if orientation in ORIENTATIONS and side in SIDES:  # the shared move of legal_moves, equal to it
                return PLACE_MOVES[card][(0 if side == "left" else 2) + (0 if orientation == 0 else 1)]
            return {"type": "place", "card": card, "side": side, "orientation": orientation}
    if type(move) is dict and len(move) == 3 and move.get("type") == "start":  # well formed: one check each
        cards, orientations = move.get("cards"), move.get("orientations")
        if type(cards) is list and type(orientations) is list and len(cards) == 2 and len(orientations) == 2:
            a, b = cards[0], cards[1]
            o1, o2 = orientations[0], orientations[1]
            if (type(a) is str and a in CARD_SET and type(b) is str and b in CARD_SET and type(o1) is int
                    and type(o2) is int):
                return {"type": "start", "cards": [a, b], "orientations": [o1, o2]}
    kind = move_type(move, MOVE_TYPES)
    if kind == "start":
        check_move_shape(move, {"cards": list, "orientations": list}, "start")
        cards, orientations = move["cards"], move["orientations"]
        if len(cards) != 2 or len(orientations) != 2:
            raise IllegalMove("malformed_move", "start needs exactly 2 cards and 2 orientations")
        return {"type": "start", "cards": [_card_id(cards[0], "start"), _card_id(cards[1], "start")],
                "orientations": [_orientation(orientations[0]), _orientation(orientations[1])]}
    if kind == "place":
        if set(move) != {"type", "card", "side", "orientation"}:
            raise IllegalMove("malformed_move", "place needs card, side and orientation")
        check_move_shape(move, {"card": str, "side": str, "orientation": int}, "place")
        return {"type": "place", "card": _card_id(move["card"], "place"), "side": move["side"],
                "orientation": move["orientation"]}
    check_move_shape(move, {}, "exchange")
    return {"type": "exchange"}


def check_move(s: State, seat: int, move: Move) -> None:
    """Steps (2)-(5) of the validation order, for a well-formed move; raises :class:`IllegalMove`."""
    kind = move["type"]
    if s.phase == "game_over":
        raise IllegalMove("game_over", "the game is over")
    if kind == "start" and s.phase != "start":
        raise IllegalMove("wrong_phase", "the starting cards are already chosen; place one card with 'place'")
    if kind != "start" and s.phase != "place":
        raise IllegalMove("wrong_phase", "exchange is allowed only after the starting cards are placed"
                          if kind == "exchange" else "first choose your 2 starting cards with 'start'")
    if s.submitted[seat] is not None:
        waiting = [str(i) for i, sub in enumerate(s.submitted) if sub is None]
        raise IllegalMove("already_submitted", "you already chose your card this step; waiting for seat"
                          f"{'s' if len(waiting) > 1 else ''} {', '.join(waiting)}")
    hand = s.hands[seat]
    if kind == "start":
        if any(o not in ORIENTATIONS for o in move["orientations"]):
            raise IllegalMove("bad_orientation", "a card can only be turned 0 or 180 degrees")
        a, b = move["cards"]
        if a == b:
            raise IllegalMove("duplicate_card", "choose two different cards")
        for card in (a, b):
            if card not in hand:
                raise IllegalMove("not_in_hand", f"{card} is not in your hand")
    elif kind == "place":
        if move["orientation"] not in ORIENTATIONS:
            raise IllegalMove("bad_orientation", "a card can only be turned 0 or 180 degrees")
        if move["side"] not in SIDES:
            raise IllegalMove("bad_side", "side must be left or right")
        if move["card"] not in hand:
            raise IllegalMove("not_in_hand", f"{move['card']} is not in your hand")
    else:
        if s.four:
            raise IllegalMove("exchange_disabled", "there are no exchange cards in the four-card-hand variant")
        if s.exchange[seat] != "unused":
            raise IllegalMove("exchange_used", "you already used your exchange card")


def play(s: State, seat: int, move: Any) -> None:
    """Validate and play on ``s`` itself; nothing changes when the move is rejected."""
    normal = well_formed(move)
    check_move(s, seat, normal)
    if normal["type"] == "exchange":
        exchange(s, seat)
        return
    s.submitted[seat] = normal
    if None not in s.submitted:
        if s.phase == "start":
            resolve_start(s)
        else:
            resolve_place(s)


#: Every card's place moves in the spec's order (side, then orientation), built once and shared: ``legal_moves``
#: returns fresh lists of read-only moves (``well_formed`` copies a move before the state keeps it).
PLACE_MOVES: Final[dict[str, list[Move]]] = {
    card: [{"type": "place", "card": card, "side": side, "orientation": o} for side in SIDES for o in ORIENTATIONS]
    for card in CARD_IDS}


EXCHANGE_MOVE: Final[Move] = {"type": "exchange"}
#: The start moves of every ordered pair of cards (a, b), by orientations, built on first use and shared as the
#: place moves are: ``START_MOVES[a][b]``.
START_MOVES: Final[dict[str, dict[str, list[Move]]]] = {card: {} for card in CARD_IDS}


def legal_moves(s: State, seat: int) -> list[Move]:
    """The spec's order: start pairs (a, b, o1, o2); place (card, side, orientation), then exchange."""
    if s.phase == "game_over" or s.submitted[seat] is not None:
        return []
    hand = s.hands[seat]
    moves: list[Move] = []
    if s.phase == "start":
        for a in hand:
            pairs = START_MOVES[a]
            for b in hand:
                if b != a:
                    got = pairs.get(b)
                    if got is None:
                        got = pairs[b] = [{"type": "start", "cards": [a, b], "orientations": [o1, o2]}
                                          for o1 in ORIENTATIONS for o2 in ORIENTATIONS]
                    moves += got  # +=, not extend: compiled, extend goes through a generic slice assignment
        return moves
    for card in hand:
        moves += PLACE_MOVES[card]
    if s.exchange[seat] == "unused":
        moves.append(EXCHANGE_MOVE)
    return moves
