"""End and scoring: pattern counts (exact maximum packing), row runs, rank and solo bonuses, result.

Pattern goals. A colour (or shape) occurs once per column, so for a value ``v`` a placement is fixed by
its columns alone: it matches when v's row in each of its columns minus the cell's row offset is the
same anchor row. Occurrences of different values never share a drawer, so the maximum number of
drawer-disjoint occurrences is the sum, over values, of a maximum packing of column bitmasks, computed
exactly by the spec's memoised recursion on "the lowest free column is skipped or covered".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .components import (
    CARD_COLUMNS,
    COLOUR_PAIRS_FLAT,
    EXCHANGE_BONUS,
    GOALS,
    HANDLE_PAIRS_FLAT,
    PAIR_ROW,
    PLACEMENT_CODE,
    ROW_RANK_BONUS,
    ROW_RULES,
    SOLO_RATINGS,
    Column,
    RowRule,
)

#: Lists, not any sequence: compiled (mypyc), a list is read by index, a sequence through the iterator protocol.
Dresser = list[tuple[str, int]]


def columns_of(dresser: Dresser) -> list[Column]:
    return [CARD_COLUMNS[card][0 if orientation == 0 else 1] for card, orientation in dresser]


# -- Pattern goals (1-14) ---------------------------------------------------------------------------


def max_packing(masks: list[int]) -> int:
    """The largest number of pairwise disjoint bitmasks among ``masks`` (exact)."""
    if len(masks) <= 1:
        return len(masks)
    union = 0
    for mask in masks:
        if union & mask:
            break
        union |= mask
    else:  # already pairwise disjoint: the common case
        return len(masks)
    by_low: dict[int, list[int]] = {}
    union = 0
    for mask in set(masks):
        low = mask & -mask
        same = by_low.get(low)
        if same is None:
            by_low[low] = [mask]
        else:
            same.append(mask)
        union |= mask
    return _packing(union, by_low, {})


def _packing(avail: int, by_low: dict[int, list[int]], memo: dict[int, int]) -> int:
    """The most disjoint masks within ``avail`` (``by_low``: the masks by their lowest bit): the lowest free
    column is either left empty or covered by a mask that starts there."""
    if not avail:
        return 0
    got = memo.get(avail)
    if got is not None:
        return got
    low = avail & -avail
    best = _packing(avail ^ low, by_low, memo)
    starting = by_low.get(low)
    if starting is not None:
        for mask in starting:
            if mask & avail == mask:
                value = 1 + _packing(avail & ~mask, by_low, memo)
                if value > best:
                    best = value
    memo[avail] = best
    return best


def pattern_count(cols: list[Column], goal: int) -> int:
    """The spec's ``count``: maximum number of drawer-disjoint occurrences of pattern goal ``goal``.

    Each placement is checked for every value at once (``COLOUR_PAIRS``/``HANDLE_PAIRS``, flattened): one
    lookup and an AND per extra cell; the matching column masks are then packed per value. Plain int loops
    over :data:`PLACEMENT_CODE`: this is the whole cost of final scoring, once per seat of every playout.
    """
    colour = goal <= 7
    pairs = COLOUR_PAIRS_FLAT if colour else HANDLE_PAIRS_FLAT
    values = 5 if colour else 3
    rows: list[int] = []  # per column of the dresser: its offset as column a (rows) and as column b (cells)
    cells: list[int] = []
    for c in cols:
        rows.append(c.index * PAIR_ROW)
        cells.append(c.index * 9)
    per_value: list[list[int]] = [[] for _ in range(values)]
    code = PLACEMENT_CODE[goal][len(cols)]
    p = 0
    end = len(code)
    while p < end:
        mask = code[p]
        row = rows[code[p + 1]]
        n = code[p + 2]
        p += 3
        bits = 31
        for _ in range(n):
            bits &= pairs[row + cells[code[p]] + code[p + 1]]
            p += 2
        if bits:
            for v in range(values):
                if bits >> v & 1:
                    per_value[v].append(mask)
    total = 0
    for masks in per_value:
        if masks:
            total += max_packing(masks)
    return total


# -- Row goals (15-30) ------------------------------------------------------------------------------


def run_lengths(cols: list[Column], row: int, rule: RowRule) -> list[int]:
    """Lengths of the maximal runs in ``row`` that the rule keeps (D7: no handle breaks handle runs)."""
    out: list[int] = []
    prev, length = -2, 0
    for col in cols:
        value = col.handles[row] if rule.handle else col.colours[row]
        if value == prev:
            length += 1
            continue
        if length and prev >= 0 and (rule.value < 0 or prev == rule.value):
            out.append(length)
        prev, length = value, 1
    if length and prev >= 0 and (rule.value < 0 or prev == rule.value):
        out.append(length)
    return out


def row_drawers(cols: list[Column], goal: int) -> int:
    """R, the number of counted drawers of row goal ``goal`` (modes in "Row goals")."""
    rule = ROW_RULES[goal]
    mode = rule.mode
    best = total = 0
    lengths: list[int] = []
    for row in rule.rows:
        runs = run_lengths(cols, row, rule)
        if mode == "longest":
            for n in runs:
                if n > best:
                    best = n
        elif mode == "longest_per_row":
            most = 0
            for n in runs:
                if n > most:
                    most = n
            total += most
        else:
            lengths += runs
    if mode == "longest":
        return best
    if mode == "longest_per_row":
        return total
    lengths.sort(reverse=True)
    return sum(lengths[:2])


# -- Bonuses, totals, ranking -----------------------------------------------------------------------


def rank_bonuses(values: list[int]) -> list[int]:
    """D11: dense ranking of the positive R values; bonuses only for the table's first ranks."""
    table = ROW_RANK_BONUS[len(values)]
    distinct = sorted({v for v in values if v > 0}, reverse=True)
    out = []
    for v in values:
        k = distinct.index(v) if v > 0 else len(table)
        out.append(table[k] if k < len(table) else 0)
    return out


def solo_bonus(goal: int, r: int) -> int:
    """D12: the highest threshold reached, not a sum."""
    best = 0
    for threshold, bonus in ROW_RULES[goal].solo_bonus:  # a loop: compiled, max() of a generator is a class
        if r >= threshold and bonus > best:
            best = bonus
    return best


def solo_rating(total: int) -> dict[str, str]:
    for band in SOLO_RATINGS:
        if (band["min"] is None or total >= band["min"]) and (band["max"] is None or total <= band["max"]):
            return {"band": band["band"], "text": band["text"]}
    raise AssertionError(f"no solo band holds {total}")


def dresser_counts(dresser: Dresser, goals: Sequence[int]) -> tuple[int, int, int]:
    """(colour count, handle count, R) of one dresser: the whole cost of scoring a seat."""
    cols = columns_of(dresser)
    return pattern_count(cols, goals[0]), pattern_count(cols, goals[1]), row_drawers(cols, goals[2])


def result_doc(dressers: list[Dresser], exchange: list[str], goals: Sequence[int]) -> dict[str, Any]:
    """The spec's result document ("Total, ranking, result").

    Plain loops and indexing (no generators, zip or lambda): compiled, this runs once per playout."""
    n = len(dressers)
    counts = [dresser_counts(d, goals) for d in dressers]
    rs = [r for _, _, r in counts]
    bonuses = [solo_bonus(goals[2], rs[0])] if n == 1 else rank_bonuses(rs)
    p_colour: int = GOALS[goals[0]]["points"]
    p_handle: int = GOALS[goals[1]]["points"]
    p_row: int = GOALS[goals[2]]["points"]
    scores = []
    totals: list[int] = []
    for seat in range(n):
        cc, hc, r = counts[seat]
        bonus = bonuses[seat]
        exch = EXCHANGE_BONUS if exchange[seat] == "unused" else 0
        total = cc * p_colour + hc * p_handle + r * p_row + bonus + exch
        scores.append({
            "seat": seat, "colour_count": cc, "colour_points": cc * p_colour, "handle_count": hc,
            "handle_points": hc * p_handle, "row_drawers": r, "row_points": r * p_row, "row_bonus": bonus,
            "exchange_bonus": exch, "total": total,
        })
        totals.append(total)
    ranks: list[int] = []
    for mine in totals:
        above = 0
        for t in totals:
            if t > mine:
                above += 1
        ranks.append(1 + above)
    best = max(totals)
    # By rank, then seat: a stable sort of the seats in order by rank alone.
    order = sorted(range(n), key=ranks.__getitem__)
    return {
        "scores": scores,
        "ranking": [{"seat": s, "rank": ranks[s]} for s in order],
        "winners": [s for s in range(n) if totals[s] == best],
        "solo_rating": solo_rating(totals[0]) if n == 1 else None,
    }
