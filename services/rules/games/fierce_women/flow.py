"""Fierce Women's State, Setup, Flow, the automa (E8), the effects and the moves (spec sections of the same
names): legal moves, each move's validation in the spec's order, and the shape check of step 1.
"""

from __future__ import annotations

import itertools
import random
from typing import Any, Final

from ..base import IllegalMove, Move, check_move_shape, is_int, move_type
from .components import (
    ACTIONS,
    ALL_IDS,
    COLUMN_ACTIONS,
    MOVE_TYPES,
    PHASE_MOVES,
    SINGLE,
    WOMEN,
    arrangement_error,
    best_arrangement,
    cats_of,
    common,
    defined_categories,
    free_cards,
    locked,
    place_moves,
    placement_error,
    single,
)

# -- State ------------------------------------------------------------------------------------------


class State:
    """Plain data, as the spec's "State fields"; ``known`` lists the drawn (public) cards in each hand."""

    __slots__ = ("automa_last", "automa_placed", "collect_five_plus_one", "current", "discard", "hands", "known",
                 "options", "out_of_game", "overrides", "pending", "phase", "piles", "players", "popular_min",
                 "rng", "tables", "turn")

    players: int
    options: dict[str, Any]
    phase: str
    current: int
    turn: int
    piles: list[list[str]]
    hands: list[list[str]]
    known: list[list[str]]
    tables: list[list[list[str]]]
    discard: list[str]
    out_of_game: list[str]
    overrides: dict[str, dict[str, Any]]
    popular_min: bool
    collect_five_plus_one: int | None
    pending: dict[str, Any] | None
    automa_placed: list[str] | None
    automa_last: dict[str, Any] | None
    rng: random.Random

    @property
    def seats(self) -> int:
        return 3 if self.players == 2 else self.players

    @property
    def automa(self) -> int | None:
        return 2 if self.players == 2 else None


def clone_state(s: State) -> State:
    t = State.__new__(State)
    t.players, t.options, t.phase, t.current, t.turn = s.players, s.options, s.phase, s.current, s.turn
    # Comprehensions of slices: compiled, plain loops of list copies (map(list.copy) is a generic call there).
    t.piles = [p[:] for p in s.piles]
    t.hands = [h[:] for h in s.hands]
    t.known = [k[:] for k in s.known]
    t.tables = [[col[:] for col in table] for table in s.tables]
    t.discard = s.discard[:]
    t.out_of_game = s.out_of_game  # never changes after setup
    t.overrides = dict(s.overrides)
    t.popular_min, t.collect_five_plus_one = s.popular_min, s.collect_five_plus_one
    t.pending = None if s.pending is None else {**s.pending, "queue": s.pending["queue"][:]}
    t.automa_placed = None if s.automa_placed is None else s.automa_placed[:]
    t.automa_last = s.automa_last
    t.rng = s.rng  # used only by the setup shuffle; never drawn from afterwards
    return t


# -- Setup ------------------------------------------------------------------------------------------


def setup(players: int, options: dict[str, Any], deck: list[str], rng: random.Random) -> State:
    """Deal from an already shuffled deck (d0 = top): 3 rounds to the real seats, then the piles."""
    s = State.__new__(State)
    s.players, s.options, s.rng = players, options, rng
    real = 2 if players == 2 else players
    s.hands = [[] for _ in range(s.seats)]
    s.known = [[] for _ in range(s.seats)]
    pos = 0
    for _ in range(3):
        for seat in range(real):
            s.hands[seat].append(deck[pos])
            pos += 1
    sizes = [10, 10, 10] if s.seats <= 3 else [14, 13, 13]
    s.piles = []
    for size in sizes:
        s.piles.append(deck[pos:pos + size])
        pos += size
    s.out_of_game = deck[pos:]
    s.tables = [[] for _ in range(s.seats)]
    s.discard, s.overrides, s.popular_min, s.collect_five_plus_one, s.pending = [], {}, False, None, None
    s.automa_placed = [] if players == 2 else None
    s.automa_last = None
    s.turn, s.current, s.phase = 0, 0, "draw"
    start_turn(s, 0)
    return s


# -- Flow -------------------------------------------------------------------------------------------


def start_turn(s: State, seat: int) -> None:
    automa = 2 if s.players == 2 else -1  # s.automa, as an int
    while True:
        if not any(pile for pile in s.piles):  # compiled, any() of a generator is a loop
            s.phase = "game_over"
            s.pending = None
            return
        s.turn += 1
        if seat == automa:
            automa_turn(s)
            seat = (seat + 1) % s.seats
            continue
        s.current, s.phase = seat, "draw"
        return


def end_turn(s: State) -> None:
    s.pending = None
    start_turn(s, (s.current + 1) % s.seats)


def actor(s: State) -> int | None:
    """The one seat to act (decisions are never simultaneous), None once the game is over."""
    phase = s.phase
    if phase == "game_over":
        return None
    if phase == "remove_column" or phase == "remove_cards":
        assert s.pending is not None
        queue: list[int] = s.pending["queue"]
        return queue[0]
    return s.current


def to_act(s: State) -> list[int]:
    seat = actor(s)
    return [] if seat is None else [seat]


def has_removable(s: State, seat: int, action: str) -> bool:
    table = s.tables[seat]
    if action == "remove_column":
        return bool(table)
    return any(c in WOMEN for col in table for c in col)


def advance_queue(s: State) -> None:
    """Skip seats with nothing to remove, let the automa choose, stop at the next deciding seat."""
    assert s.pending is not None
    queue, action = s.pending["queue"], s.pending["action"]
    while queue:
        head = queue[0]
        if not has_removable(s, head, action):
            queue.pop(0)
        elif head == s.automa:
            AUTOMA_REMOVALS[action](s)
            queue.pop(0)
        else:
            s.phase = action
            return
    end_turn(s)


# -- Automa (E8) -------------------------------------------------------------------------------------


def automa_turn(s: State) -> None:
    seat = 2
    pile = next(i for i, p in enumerate(s.piles) if p)
    card = s.piles[pile].pop(0)
    column: int | None = None
    if card in ACTIONS:
        s.discard.append(card)
    else:
        table = s.tables[seat]
        column = next((i for i in range(len(table)) if placement_error(table, card, i) is None), None)
        if column is None:
            table.append([card])
            column = len(table) - 1
        else:
            table[column].append(card)
        assert s.automa_placed is not None
        s.automa_placed.append(card)
    s.automa_last = {"turn": s.turn, "pile": pile, "card": card, "column": column}


def automa_remove_column(s: State) -> None:
    remove_column(s, 2, len(s.tables[2]) - 1)


def automa_remove_cards(s: State) -> None:
    placed = s.automa_placed or []
    on_table = {c for col in s.tables[2] for c in col}
    recent = [c for c in reversed(placed) if c in on_table][:2]
    remove_cards(s, 2, recent)


AUTOMA_REMOVALS: Final = {"remove_column": automa_remove_column, "remove_cards": automa_remove_cards}


# -- Effects -----------------------------------------------------------------------------------------


def remove_column(s: State, seat: int, column: int) -> None:
    """E4: the whole column to the discard pile; later columns shift left."""
    cards = s.tables[seat].pop(column)
    s.discard.extend(cards)
    if seat == s.automa and s.automa_placed is not None:
        s.automa_placed = [c for c in s.automa_placed if c not in cards]


def remove_cards(s: State, seat: int, cards: list[str]) -> None:
    """E4: the women to the discard pile as listed; columns left without women go too."""
    table = s.tables[seat]
    gone = set(cards)
    s.discard.extend(cards)
    kept: list[list[str]] = []
    for col in table:
        rest = [c for c in col if c not in gone]
        if any(c in WOMEN for c in rest):
            kept.append(rest)
        else:
            s.discard.extend(rest)
    s.tables[seat] = kept
    if seat == s.automa and s.automa_placed is not None:
        s.automa_placed = [c for c in s.automa_placed if c not in gone]


def take_from_hand(s: State, seat: int, card: str) -> None:
    s.hands[seat].remove(card)
    if card in s.known[seat]:
        s.known[seat].remove(card)


def _override(value_of: Any) -> Any:
    def effect(s: State, seat: int, card: str, column: int | None) -> None:
        assert column is not None
        s.tables[seat][column].append(card)
        category = cats_of(common(s.tables[seat][column]))[0]
        s.overrides[category] = {"value": value_of(s), "card": card, "seat": seat}
        end_turn(s)
    return effect


def _double_by_count(s: State, seat: int, card: str, column: int | None) -> None:
    assert column is not None
    s.tables[seat][column].append(card)
    end_turn(s)


def _removal(action: str) -> Any:
    def effect(s: State, seat: int, card: str, column: int | None) -> None:
        s.discard.append(card)
        s.pending = {"action": action, "actor": seat, "queue": [(seat + i) % s.seats for i in range(s.seats)]}
        advance_queue(s)
    return effect


def _popular_min(s: State, seat: int, card: str, column: int | None) -> None:
    s.discard.append(card)
    s.popular_min = True
    end_turn(s)


def _collect_five(s: State, seat: int, card: str, column: int | None) -> None:
    s.discard.append(card)
    s.collect_five_plus_one = seat
    end_turn(s)


def _reshuffle(s: State, seat: int, card: str, column: int | None) -> None:
    s.discard.append(card)
    if free_cards(s.tables[seat]):
        s.phase = "rearrange"
    else:
        end_turn(s)


#: E3: what each action card does when played, by its data-file key.
EFFECTS: Final = {
    "any_min": _override(lambda s: 1),
    "solo_max": _override(lambda s: s.seats),
    "double_by_count": _double_by_count,
    "remove_column": _removal("remove_column"),
    "remove_cards": _removal("remove_cards"),
    "popular_min": _popular_min,
    "collect_five_plus_one": _collect_five,
    "reshuffle": _reshuffle,
}


# -- Parameterised moves and legal_moves ------------------------------------------------------------


#: The draw moves, shared read-only as the place moves are.
_DRAW: Final = [{"type": "draw", "pile": i} for i in range(3)]


def _legal_draw(s: State, seat: int) -> list[Move]:
    moves: list[Move] = []
    for i, p in enumerate(s.piles):
        if p:
            moves.append(_DRAW[i])
    return moves


def _legal_play(s: State, seat: int) -> list[Move]:
    """Places (card x column, then "new"), then actions (A1-A3 per legal column), discards only as a last resort."""
    hand = sorted(s.hands[seat])
    masks = [common(col) for col in s.tables[seat]]
    defined = 0
    for m in masks:
        if SINGLE[m]:
            defined |= m
    moves = place_moves(hand, masks, defined)
    for card in hand:
        if card not in ACTIONS:
            continue
        if card not in COLUMN_ACTIONS:
            moves.append({"type": "play_action", "card": card})
            continue
        elsewhere = 0  # categories other seats collect: Solo -> max may not target them
        if ACTIONS[card] == "solo_max":
            for other, table in enumerate(s.tables):
                if other != seat:
                    elsewhere |= defined_categories(table)
        moves.extend({"type": "play_action", "card": card, "column": i}
                     for i, m in enumerate(masks) if SINGLE[m] and not m & elsewhere)
    if not moves:
        moves = [{"type": "discard", "card": c} for c in hand if c in ACTIONS]
    return moves


def _legal_remove_column(s: State, seat: int) -> list[Move]:
    return [{"type": "remove_column", "column": i} for i in range(len(s.tables[seat]))]


def _legal_remove_cards(s: State, seat: int) -> list[Move]:
    women = sorted(c for col in s.tables[seat] for c in col if c in WOMEN)
    return [{"type": "remove_cards", "cards": list(combo)}
            for combo in itertools.combinations(women, min(2, len(women)))]


def _legal_rearrange(s: State, seat: int) -> list[Move]:
    """*keep*, then E7's *best* unless it is the same grouping."""
    table = s.tables[seat]
    keep = [col[:] for col in table if not locked(col)]
    best = best_arrangement(table)
    return [{"type": "rearrange", "columns": keep}] + ([] if best == keep else [{"type": "rearrange", "columns": best}])


def legal_moves_of(s: State, seat: int) -> list[Move]:
    """The spec's table "Parameterised moves and legal_moves", one function per phase."""
    if actor(s) != seat:
        return []
    phase = s.phase
    if phase == "play":
        return _legal_play(s, seat)
    if phase == "draw":
        return _legal_draw(s, seat)
    if phase == "remove_column":
        return _legal_remove_column(s, seat)
    if phase == "remove_cards":
        return _legal_remove_cards(s, seat)
    if phase == "rearrange":
        return _legal_rearrange(s, seat)
    return []


# -- Moves: validation steps 2 and on, one function per move type -------------------------------------


def play_move(state: State, seat: int, move: Move) -> None:
    """Validate (in the spec's order) and play ``move`` on ``state``; dispatched by plain comparisons, so
    that compiled, every step is a direct call."""
    if not _plain_place_or_draw(move):  # the common moves, well formed: checked at once
        check_shape(move_type(move, MOVE_TYPES), move)
    kind: str = move["type"]
    s = state
    if s.phase == "game_over":
        raise IllegalMove("game_over", "the game is over")
    if actor(s) != seat:
        raise IllegalMove("not_your_turn", f"it is not seat {seat}'s turn (waiting for seat {actor(s)})")
    if kind not in PHASE_MOVES[s.phase]:
        raise IllegalMove("wrong_phase", f"{kind} is not allowed now: the phase is {s.phase}")
    if kind == "place":
        _place(s, seat, move)
    elif kind == "draw":
        _draw(s, seat, move)
    elif kind == "play_action":
        _play_action(s, seat, move)
    elif kind == "discard":
        _discard(s, seat, move)
    elif kind == "remove_column":
        _remove_column(s, seat, move)
    elif kind == "remove_cards":
        _remove_cards(s, seat, move)
    else:
        _rearrange(s, seat, move)


def _action_column_error(s: State, seat: int, card: str, column: int) -> tuple[str, str] | None:
    table = s.tables[seat]
    if column >= len(table):
        return ("no_such_column", f"you have no column {column}")
    k = common(table[column])
    if not single(k):
        return ("column_not_defined", f"{card} needs a defined column; column {column} is not defined "
                                      f"(common categories: {', '.join(cats_of(k))})")
    if ACTIONS[card] == "solo_max":
        others = [o for o in range(s.seats) if o != seat and defined_categories(s.tables[o]) & k]
        if others:
            return ("category_not_solo", f"{card} needs a category no one else collects; column {column} "
                                         f"collects {cats_of(k)[0]}, which seat {others[0]} collects too")
    return None

def _draw(s: State, seat: int, move: Move) -> None:
    pile = s.piles[move["pile"]]
    if not pile:
        raise IllegalMove("empty_pile", f"pile {move['pile']} is empty")
    card = pile.pop(0)
    s.hands[seat].append(card)
    s.known[seat].append(card)
    s.phase = "play"

def _place(s: State, seat: int, move: Move) -> None:
    card, column = move["card"], move["column"]
    if card in ACTIONS:
        raise IllegalMove("not_a_woman_card", f"{card} is an action card: play it with play_action")
    if card not in s.hands[seat]:
        raise IllegalMove("card_not_in_hand", f"{card} is not in your hand")
    table = s.tables[seat]
    if column != "new" and column >= len(table):
        raise IllegalMove("no_such_column", f"you have no column {column}")
    error = placement_error(table, card, column)
    if error:
        raise IllegalMove(*error)
    take_from_hand(s, seat, card)
    if column == "new":
        table.append([card])
    else:
        table[column].append(card)
    end_turn(s)

def _play_action(s: State, seat: int, move: Move) -> None:
    card = move["card"]
    if card in WOMEN:
        raise IllegalMove("not_an_action_card", f"{card} is a woman card: place it in a column")
    if card not in s.hands[seat]:
        raise IllegalMove("card_not_in_hand", f"{card} is not in your hand")
    column = move.get("column")
    if card in COLUMN_ACTIONS:
        assert column is not None
        error = _action_column_error(s, seat, card, column)
        if error:
            raise IllegalMove(*error)
    take_from_hand(s, seat, card)
    EFFECTS[ACTIONS[card]](s, seat, card, column)

def _discard(s: State, seat: int, move: Move) -> None:
    card = move["card"]
    if card in WOMEN:
        raise IllegalMove("not_an_action_card", f"{card} is a woman card: only action cards can be discarded")
    if card not in s.hands[seat]:
        raise IllegalMove("card_not_in_hand", f"{card} is not in your hand")
    if any(m["type"] != "discard" for m in legal_moves_of(s, seat)):
        raise IllegalMove("discard_not_allowed", f"{card} cannot be discarded: you have a card you can play")
    take_from_hand(s, seat, card)
    s.discard.append(card)
    end_turn(s)

def _remove_column(s: State, seat: int, move: Move) -> None:
    if move["column"] >= len(s.tables[seat]):
        raise IllegalMove("no_such_column", f"you have no column {move['column']}")
    remove_column(s, seat, move["column"])
    assert s.pending is not None
    s.pending["queue"].pop(0)
    advance_queue(s)

def _remove_cards(s: State, seat: int, move: Move) -> None:
    cards = move["cards"]
    mine = {c for col in s.tables[seat] for c in col if c in WOMEN}
    need = min(2, len(mine))
    if len(cards) != need:
        raise IllegalMove("bad_removal", f"remove exactly {need} woman card{'s' if need != 1 else ''}")
    for card in cards:
        if card not in mine:
            raise IllegalMove("bad_removal", f"{card} is not a woman card on your table")
    remove_cards(s, seat, cards)
    assert s.pending is not None
    s.pending["queue"].pop(0)
    advance_queue(s)

def _rearrange(s: State, seat: int, move: Move) -> None:
    table = s.tables[seat]
    error = arrangement_error(table, move["columns"])
    if error:
        raise IllegalMove("bad_arrangement", error)
    s.tables[seat] = [col for col in table if locked(col)] + [col[:] for col in move["columns"]]
    end_turn(s)


def _known_card(card: str) -> None:
    if card not in ALL_IDS:
        raise IllegalMove("malformed_move", f"{card!r} is not a card of this game")


def _card_list(cards: list[Any]) -> None:
    if not all(isinstance(c, str) for c in cards):
        raise IllegalMove("malformed_move", "cards must be card ids")
    for c in cards:
        _known_card(c)
    if len(set(cards)) != len(cards):
        raise IllegalMove("malformed_move", "a card is listed twice")


# -- Moves: validation step 1 (malformed regardless of state) ----------------------------------------


# The fields of each move shape (built once: shapes are checked on every move).
_PILE: Final[dict[str, Any]] = {"pile": int}
_CARD: Final[dict[str, Any]] = {"card": str}
_CARD_COLUMN: Final[dict[str, Any]] = {"card": str, "column": int}
_CARD_PLACE: Final[dict[str, Any]] = {"card": str, "column": (int, str)}
_COLUMN: Final[dict[str, Any]] = {"column": int}
_CARDS: Final[dict[str, Any]] = {"cards": list}
_COLUMNS: Final[dict[str, Any]] = {"columns": list}


def _column_index(move: Move) -> None:
    if move["column"] < 0:
        raise IllegalMove("malformed_move", "column must not be negative")


def _shape_draw(move: Move) -> None:
    check_move_shape(move, _PILE, "draw")
    if not 0 <= move["pile"] <= 2:
        raise IllegalMove("malformed_move", "pile must be 0, 1 or 2")


def _shape_place(move: Move) -> None:
    check_move_shape(move, _CARD_PLACE, "place")
    _known_card(move["card"])
    if not (move["column"] == "new" or (is_int(move["column"]) and move["column"] >= 0)):
        raise IllegalMove("malformed_move", "column must be a column index or \"new\"")


def _shape_play_action(move: Move) -> None:
    """A1-A3 need ``column``, A4-A8 must not have it; for a woman id either is accepted (not_an_action_card)."""
    card = move.get("card")
    if not isinstance(card, str):
        raise IllegalMove("malformed_move", "play_action needs a card")
    _known_card(card)
    if card in COLUMN_ACTIONS or (card in WOMEN and "column" in move):
        check_move_shape(move, _CARD_COLUMN, "play_action")
        _column_index(move)
    else:
        check_move_shape(move, _CARD, "play_action")


def _shape_discard(move: Move) -> None:
    check_move_shape(move, _CARD, "discard")
    _known_card(move["card"])


def _shape_remove_column(move: Move) -> None:
    check_move_shape(move, _COLUMN, "remove_column")
    _column_index(move)


def _shape_remove_cards(move: Move) -> None:
    check_move_shape(move, _CARDS, "remove_cards")
    _card_list(move["cards"])


def _shape_rearrange(move: Move) -> None:
    check_move_shape(move, _COLUMNS, "rearrange")
    cols = move["columns"]
    if not cols or not all(isinstance(c, list) and c for c in cols):
        raise IllegalMove("malformed_move", "columns must be a non-empty list of non-empty lists")
    _card_list([c for col in cols for c in col])


def _plain_place_or_draw(move: Any) -> bool:
    """A well-formed ``place`` or ``draw`` (what :func:`check_shape` accepts of them), told in a few comparisons."""
    if type(move) is not dict:
        return False
    kind = move.get("type")
    if kind == "place":
        card, column = move.get("card"), move.get("column")
        return (len(move) == 3 and type(card) is str and card in ALL_IDS
                and ((type(column) is int and column >= 0) or column == "new"))
    if kind == "draw":
        pile = move.get("pile")
        return len(move) == 2 and type(pile) is int and 0 <= pile <= 2
    return False


def check_shape(kind: str, move: Move) -> None:
    """Validation step 1 of a move of a known ``kind``: its fields (malformed_move)."""
    if kind == "place":
        _shape_place(move)
    elif kind == "draw":
        _shape_draw(move)
    elif kind == "play_action":
        _shape_play_action(move)
    elif kind == "discard":
        _shape_discard(move)
    elif kind == "remove_column":
        _shape_remove_column(move)
    elif kind == "remove_cards":
        _shape_remove_cards(move)
    else:
        _shape_rearrange(move)
