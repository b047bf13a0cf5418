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
    COLOUR_PAIRS,
    COLUMNS,
    EXCHANGE_BONUS,
    GOALS,
    HANDLE_PAIRS,
    PLACEMENTS,
    ROW_RANK_BONUS,
    ROW_RULES,
    SOLO_RATINGS,
    Column,
    RowRule,
)

Dresser = Sequence[tuple[str, int]]


def columns_of(dresser: Dresser) -> list[Column]:
    return [COLUMNS[placed] for placed in dresser]


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
        by_low.setdefault(mask & -mask, []).append(mask)
        union |= mask
    memo: dict[int, int] = {}

    def f(avail: int) -> int:
        if not avail:
            return 0
        got = memo.get(avail)
        if got is not None:
            return got
        low = avail & -avail
        best = f(avail ^ low)
        for mask in by_low.get(low, ()):
            if mask & avail == mask:
                value = 1 + f(avail & ~mask)
                if value > best:
                    best = value
        memo[avail] = best
        return best

    return f(union)


def pattern_count(cols: Sequence[Column], goal: int) -> int:
    """The spec's ``count``: maximum number of drawer-disjoint occurrences of pattern goal ``goal``.

    Each placement is checked for every value at once (``COLOUR_PAIRS``/``HANDLE_PAIRS``); the matching
    column masks are then packed per value.
    """
    table = COLOUR_PAIRS if goal <= 7 else HANDLE_PAIRS
    idx = [c.index for c in cols]
    per_value: dict[int, list[int]] = {}
    for mask, first, rest in PLACEMENTS[goal][len(idx)]:
        pairs = table[idx[first]]
        bits = -1
        for col, k in rest:
            bits &= pairs[idx[col]][k]
        while bits:
            low = bits & -bits
            per_value.setdefault(low, []).append(mask)
            bits ^= low
    return sum(max_packing(masks) for masks in per_value.values())


# -- Row goals (15-30) ------------------------------------------------------------------------------


def run_lengths(cols: Sequence[Column], row: int, rule: RowRule) -> list[int]:
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


def row_drawers(cols: Sequence[Column], goal: int) -> int:
    """R, the number of counted drawers of row goal ``goal`` (modes in "Row goals")."""
    rule = ROW_RULES[goal]
    if rule.mode == "longest":
        return max((max(r) for row in rule.rows if (r := run_lengths(cols, row, rule))), default=0)
    if rule.mode == "longest_per_row":
        return sum(max(run_lengths(cols, row, rule), default=0) for row in rule.rows)
    lengths = sorted((n for row in rule.rows for n in run_lengths(cols, row, rule)), reverse=True)
    return sum(lengths[:2])


# -- Bonuses, totals, ranking -----------------------------------------------------------------------


def rank_bonuses(values: Sequence[int]) -> list[int]:
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
    return max((bonus for threshold, bonus in ROW_RULES[goal].solo_bonus if r >= threshold), default=0)


def solo_rating(total: int) -> dict[str, str]:
    for band in SOLO_RATINGS:
        if (band["min"] is None or total >= band["min"]) and (band["max"] is None or total <= band["max"]):
            return {"band": band["band"], "text": band["text"]}
    raise AssertionError(f"no solo band holds {total}")


def dresser_counts(dresser: Dresser, goals: Sequence[int]) -> tuple[int, int, int]:
    """(colour count, handle count, R) of one dresser: the whole cost of scoring a seat."""
    cols = columns_of(dresser)
    return pattern_count(cols, goals[0]), pattern_count(cols, goals[1]), row_drawers(cols, goals[2])


def result_doc(dressers: Sequence[Dresser], exchange: Sequence[str], goals: Sequence[int]) -> dict[str, Any]:
    """The spec's result document ("Total, ranking, result")."""
    n = len(dressers)
    counts = [dresser_counts(d, goals) for d in dressers]
    rs = [r for _, _, r in counts]
    bonuses = [solo_bonus(goals[2], rs[0])] if n == 1 else rank_bonuses(rs)
    p_colour, p_handle, p_row = (GOALS[g]["points"] for g in goals)
    scores = []
    for seat, ((cc, hc, r), bonus) in enumerate(zip(counts, bonuses, strict=True)):
        exch = EXCHANGE_BONUS if exchange[seat] == "unused" else 0
        scores.append({
            "seat": seat, "colour_count": cc, "colour_points": cc * p_colour, "handle_count": hc,
            "handle_points": hc * p_handle, "row_drawers": r, "row_points": r * p_row, "row_bonus": bonus,
            "exchange_bonus": exch, "total": cc * p_colour + hc * p_handle + r * p_row + bonus + exch,
        })
    totals = [s["total"] for s in scores]
    ranks = [1 + sum(1 for t in totals if t > mine) for mine in totals]
    best = max(totals)
    return {
        "scores": scores,
        "ranking": [{"seat": s, "rank": ranks[s]} for s in sorted(range(n), key=lambda s: (ranks[s], s))],
        "winners": [s for s in range(n) if totals[s] == best],
        "solo_rating": solo_rating(totals[0]) if n == 1 else None,
    }
