"""Fierce Women (Strašne žene): the spec ``shared/rules/fierce-women.md``, section by section.

Cards are ids; a woman's categories are a 6-bit mask in canonical category order, so a column's common
set is the AND of its women's masks and "defined" means exactly one bit.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import Any, ClassVar, Final

from .base import (
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

GAME_ID: Final = "fierce-women"

# -- Components -------------------------------------------------------------------------------------

_DATA: Final = json.loads(resources.files(__package__).joinpath("data/fierce-women.json").read_text())
CATEGORIES: Final[list[str]] = _DATA["categories"]
CAT_BIT: Final = {c: 1 << i for i, c in enumerate(CATEGORIES)}
WOMEN: Final[dict[str, int]] = {w["id"]: sum(CAT_BIT[c] for c in w["categories"]) for w in _DATA["women"]}
ACTIONS: Final[dict[str, str]] = {a["id"]: a["key"] for a in _DATA["actions"]}
WOMAN_IDS: Final = sorted(WOMEN)
ACTION_IDS: Final = sorted(ACTIONS)
ALL_IDS: Final = frozenset(WOMAN_IDS) | frozenset(ACTION_IDS)
COLUMN_ACTIONS: Final = frozenset(a for a, k in ACTIONS.items() if k in ("any_min", "solo_max", "double_by_count"))
PHASES: Final = ("draw", "play", "remove_column", "remove_cards", "rearrange", "game_over")
MOVE_TYPES: Final = ("draw", "place", "play_action", "discard", "remove_column", "remove_cards", "rearrange")
PHASE_MOVES: Final = {"draw": ("draw",), "play": ("place", "play_action", "discard"),
                      "remove_column": ("remove_column",), "remove_cards": ("remove_cards",),
                      "rearrange": ("rearrange",), "game_over": ()}
#: Every card's category mask, action cards as "all categories" so that a column's AND ignores them (D11).
MASK: Final[dict[str, int]] = {**WOMEN, **dict.fromkeys(ACTIONS, 63)}
#: SINGLE[mask]: the mask is exactly one category (a defined column); a table, as it is asked constantly.
SINGLE: Final[tuple[bool, ...]] = tuple(m != 0 and m & (m - 1) == 0 for m in range(64))


def cats_of(mask: int) -> list[str]:
    return [c for i, c in enumerate(CATEGORIES) if mask >> i & 1]


def single(mask: int) -> bool:
    return SINGLE[mask]


def common(column: list[str]) -> int:
    """Intersection of the women's categories; action cards are ignored (D11)."""
    mask = 63
    for card in column:
        mask &= MASK[card]
    return mask


def women_in(column: list[str]) -> int:
    return sum(1 for c in column if c in WOMEN)


def locked(column: list[str]) -> bool:
    return any(c in ACTIONS for c in column)


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


# -- Column rule (E2) --------------------------------------------------------------------------------


def defined_categories(table: list[list[str]], skip: int | None = None) -> int:
    mask = 0
    for i, col in enumerate(table):
        if i != skip:
            k = common(col)
            if SINGLE[k]:
                mask |= k
    return mask


def collecting_column(table: list[list[str]], category: int, skip: int | None = None) -> int | None:
    """Index of her column defined with ``category`` (a one-bit mask), other than ``skip``."""
    return next((i for i, col in enumerate(table) if i != skip and common(col) == category), None)


def placement_error(table: list[list[str]], card: str, column: int | str) -> tuple[str, str] | None:
    """E2 with the spec's error codes; messages name the card, the column and the category (C7)."""
    w = WOMEN[card]
    if column == "new":
        held = collecting_column(table, w) if single(w) else None
        if held is not None:
            return ("category_already_collected",
                    f"{card} cannot start a new column: you already collect {cats_of(w)[0]} in column {held}")
        return None
    assert isinstance(column, int)
    k = common(table[column]) & w
    if not k:
        return ("no_common_category", f"{card} ({', '.join(cats_of(w))}) shares no category with column {column} "
                                      f"({', '.join(cats_of(common(table[column])))})")
    held = collecting_column(table, k, skip=column) if single(k) else None
    if held is not None:
        return ("category_already_collected", f"{card} cannot go in column {column}: it would collect "
                                              f"{cats_of(k)[0]}, which you already collect in column {held}")
    return None


def place_moves(hand: list[str], masks: list[int], defined: int) -> list[Move]:
    """Every legal ``place`` of the woman cards of ``hand`` (in its order) by E2, given the column masks and
    the categories the seat already collects.

    A placement is refused only when it makes the column *newly* defined (K single and not the column's own
    mask) with a category she already collects; a defined column keeps its category, so never conflicts.
    Plain loops: this runs for every ``play`` decision of every playout.
    """
    moves: list[Move] = []
    for card in hand:
        w = WOMEN.get(card)
        if w is None:
            continue
        at = _PLACE_AT[card]
        for i, m in enumerate(masks):
            k = m & w
            if k and (k == m or not SINGLE[k] or not k & defined):
                moves.append(at[i] if i < _COLUMNS_BUILT else {"type": "place", "card": card, "column": i})
        if not SINGLE[w] or not w & defined:
            moves.append(_PLACE_NEW[card])
    return moves


#: The place moves, built once and shared (``legal_moves`` returns fresh lists of read-only moves): a table
#: rarely has more than 10 columns, and any further one gets a fresh move.
_COLUMNS_BUILT: Final = 16
_PLACE_AT: Final = {card: [{"type": "place", "card": card, "column": i} for i in range(_COLUMNS_BUILT)]
                    for card in WOMAN_IDS}
_PLACE_NEW: Final = {card: {"type": "place", "card": card, "column": "new"} for card in WOMAN_IDS}


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


# -- Rearrange (E6, E7) ------------------------------------------------------------------------------


def free_cards(table: list[list[str]]) -> list[str]:
    return [c for col in table if not locked(col) for c in col]


def arrangement_error(table: list[list[str]], columns: list[list[str]]) -> str | None:
    free = free_cards(table)
    submitted = [c for col in columns for c in col]
    if sorted(submitted) != sorted(free):
        extra = sorted(set(submitted) - set(free))
        missing = sorted(set(free) - set(submitted))
        return (f"{extra[0]} is not a card of your free columns" if extra
                else f"{missing[0]} is missing from the arrangement")
    seen = 0
    for col in [c for c in table if locked(c)] + columns:
        k = common(col)
        if not k:
            return f"column {col} has no common category"
        if single(k):
            if seen & k:
                return f"two columns would collect {cats_of(k)[0]}"
            seen |= k
    return None


def best_arrangement(table: list[list[str]]) -> list[list[str]]:
    """E7, exactly: the most defined columns, then the most cards in them, then the lowest categories."""
    best = _best_for(tuple(sorted(free_cards(table))), defined_categories([c for c in table if locked(c)]))
    return [list(col) for col in best]


def _and_of(masks: Iterable[int]) -> int:
    out = 63
    for m in masks:
        out &= m
    return out


@functools.lru_cache(maxsize=4096)
def _best_for(free: tuple[str, ...], taken: int) -> tuple[tuple[str, ...], ...]:
    """E7 depends only on the free cards and the locked categories: searches repeat it, so cache it.

    A category X can get a defined column only if all free women carrying X, together, have common set
    {X} (a group's common set only shrinks as cards join it), so D is chosen among those categories
    only; every other D has no cover and E7 would skip it anyway.
    """
    cards = list(free)
    masks = [WOMEN[c] for c in cards]
    viable = [x for x in range(len(CATEGORIES))
              if not taken >> x & 1 and _and_of(m for m in masks if m >> x & 1) == 1 << x]
    candidates = []
    for size in range(len(viable), -1, -1):
        for combo in itertools.combinations(viable, size):
            dmask = sum(1 << x for x in combo)
            covered = sum(1 for m in masks if m & dmask)
            candidates.append((-size, -covered, combo, dmask))
    candidates.sort()
    for _, _, subset, dmask in candidates:
        chosen = [i for i, m in enumerate(masks) if m & dmask]
        cover = _first_cover([masks[i] for i in chosen], subset)
        if cover is None:
            continue
        columns = [[cards[chosen[j]] for j, x in enumerate(cover) if x == category] for category in subset]
        rest: list[list[str]] = []
        for c, m in zip(cards, masks, strict=True):
            if m & dmask:
                continue
            for col in rest:
                if bin(common(col) & m).count("1") >= 2:
                    col.append(c)
                    break
            else:
                rest.append([c])
        return tuple(tuple(col) for col in columns + rest)
    raise AssertionError("the empty set always has a cover")


def _first_cover(masks: list[int], subset: tuple[int, ...]) -> list[int] | None:
    """E7 step 3: the first assignment (card index -> category) in depth-first order, or None.

    A branch is cut as soon as some X of D could not end with common set {X} even if every remaining card
    carrying X joined it; that never cuts a valid cover, so the first cover found is E7's.
    """
    n = len(masks)
    reach = {x: [63] * (n + 1) for x in subset}  # reach[x][i]: AND of the masks i.. that carry x
    for x in subset:
        for i in range(n - 1, -1, -1):
            reach[x][i] = reach[x][i + 1] & masks[i] if masks[i] >> x & 1 else reach[x][i + 1]
    group = dict.fromkeys(subset, 63)  # AND of the masks assigned to each category so far
    choice = [0] * n

    def dfs(i: int) -> bool:
        if any(group[x] & reach[x][i] != 1 << x for x in subset):
            return False
        if i == n:
            return True
        for x in subset:
            if masks[i] >> x & 1:
                before = group[x]
                group[x] = before & masks[i]
                choice[i] = x
                if dfs(i + 1):
                    return True
                group[x] = before
        return False

    return choice if dfs(0) else None


# -- End and scoring ---------------------------------------------------------------------------------


def score(s: State) -> JSONDict:
    n = s.seats
    counts = {c: 0 for c in CATEGORIES}
    for table in s.tables:
        for col in table:
            k = common(col)
            if single(k):
                counts[cats_of(k)[0]] += 1
    values = dict(counts)
    if s.popular_min:
        for c in CATEGORIES:
            if counts[c] == n:
                values[c] = 1
    for c, o in s.overrides.items():
        values[c] = o["value"]
    k_count = next((women_in(col) for table in s.tables for col in table
                    if any(ACTIONS.get(x) == "double_by_count" for x in col)), None)
    breakdown, scores = [], []
    for seat, table in enumerate(s.tables):
        defined_n = sum(1 for col in table if single(common(col)))
        bonus_on = s.collect_five_plus_one == seat and defined_n >= 5
        rows, total = [], 0
        for i, col in enumerate(table):
            k = common(col)
            w = women_in(col)
            if single(k):
                cat = cats_of(k)[0]
                value = values[cat]
                doubled = k_count is not None and w == k_count
                base = w * value * (2 if doubled else 1)
                bonus = w if bonus_on else 0
                rows.append({"column": i, "category": cat, "women": w, "value": value, "doubled": doubled,
                             "bonus": bonus, "points": base + bonus})
                total += base + bonus
            else:
                rows.append({"column": i, "category": None, "women": w, "value": 0, "doubled": False, "bonus": 0,
                             "points": 0})
        breakdown.append(rows)
        scores.append(total)
    ranking = sorted(({"seat": i, "score": sc, "rank": 1 + sum(1 for o in scores if o > sc)}
                      for i, sc in enumerate(scores)), key=lambda r: (-r["score"], r["seat"]))
    return {"scores": scores, "category_columns": counts,
            "category_values": {c: values[c] if counts[c] or c in s.overrides else 0 for c in CATEGORIES},
            "double_count": k_count, "breakdown": breakdown, "ranking": ranking,
            "winners": [r["seat"] for r in ranking if r["rank"] == 1]}


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
        doc: JSONDict = {
            "game": GAME_ID, "viewer": seat, "players": s.players, "seats": s.seats, "automa_seat": s.automa,
            "options": dict(s.options), "phase": s.phase, "current": s.current, "to_act": to_act(s),
            "turn": s.turn, "piles": [{"size": len(p), "top": p[0] if p else None} for p in s.piles],
            "out_of_game_count": len(s.out_of_game), "hands": hands,
            "tables": [[{"cards": col[:], "common": cats_of(common(col)),
                         "category": cats_of(common(col))[0] if single(common(col)) else None} for col in table]
                       for table in s.tables],
            "discard": s.discard[:], "overrides": {k: dict(v) for k, v in s.overrides.items()},
            "popular_min": s.popular_min, "collect_five_plus_one": s.collect_five_plus_one,
            "pending": None if s.pending is None else {**s.pending, "queue": s.pending["queue"][:]},
            "automa_placed": None if s.automa_placed is None else s.automa_placed[:],
            "automa_last": None if s.automa_last is None else dict(s.automa_last),
            "result": score(s) if over else None,
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

GAME: Final = FierceWomen()


def position(players: int = 3, *, tables: list[list[list[str]]] | None = None,
             hands: list[list[str]] | None = None, piles: list[list[str]] | None = None, current: int = 0,
             phase: str = "play", action_cards: bool = True, **fields: Any) -> State:
    """A position in the spec's test notation (``T[s]``, ``H[s]``, piles top first).

    Cards not mentioned go out of the game, so the state stays a valid deal; ``fields`` sets any other
    state field (``overrides``, ``popular_min``, ``automa_placed``, ...).
    """
    s = State.__new__(State)
    s.players, s.options, s.rng = players, {"action_cards": action_cards}, random.Random(0)
    n = s.seats
    s.tables = [[list(c) for c in t] for t in (tables or [[] for _ in range(n)])]
    s.hands = [list(h) for h in (hands or [[] for _ in range(n)])]
    s.known = [[] for _ in range(n)]
    s.piles = [list(p) for p in (piles or [[], [], ["W56"]])]
    s.discard, s.overrides, s.popular_min, s.collect_five_plus_one, s.pending = [], {}, False, None, None
    s.automa_placed = [c for col in s.tables[2] for c in col if c in WOMEN] if players == 2 else None
    s.automa_last = None
    s.phase, s.current, s.turn = phase, current, 1
    for name, value in fields.items():
        setattr(s, name, value)
    used = {c for p in s.piles for c in p} | {c for h in s.hands for c in h} | set(s.discard) | \
        {c for t in s.tables for col in t for c in col}
    deck = WOMAN_IDS + (ACTION_IDS if action_cards else [])
    s.out_of_game = [c for c in deck if c not in used]
    return s
