"""Fierce Women's components and table rules (spec ``shared/rules/fierce-women.md``: "Components", E2, E6, E7).

Cards are ids; a woman's categories are a 6-bit mask in canonical category order, so a column's common
set is the AND of its women's masks and "defined" means exactly one bit. Here: the data file, the masks, the
column rule (E2) and the rearrangements of a table (E6, E7), which read columns of cards and no state.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Iterable
from importlib import resources
from typing import Final

from ..base import Move

GAME_ID: Final = "fierce-women"

# -- Components -------------------------------------------------------------------------------------

_DATA: Final = json.loads(resources.files(__package__.rsplit(".", 1)[0]).joinpath("data/fierce-women.json").read_text())
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
