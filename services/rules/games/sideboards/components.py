"""Components: the data file turned into lookup tables (spec section "Components").

A placed card is a *column*: its 5 drawers top to bottom after turning. Because a card has each colour
once and each handle shape once, a column is described by where each value sits: ``cpos[colour]`` and
``hpos[shape]`` give the row (0-based) of that colour / shape. Pattern matching then reduces to "the
value's rows in the placement's columns line up with the pattern's row offsets" (see ``scoring``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

GAME_ID: Final = "sideboards"

DATA: Final[dict[str, Any]] = json.loads(  # not __file__: a compiled module's __file__ is not its source's
    resources.files(__package__.rsplit(".", 1)[0]).joinpath("data/sideboards.json").read_text("utf-8"))
COLOURS: Final[list[str]] = DATA["colours"]
HANDLES: Final[list[str]] = DATA["handles"]
CARD_IDS: Final[list[str]] = [c["id"] for c in DATA["cards"]]
CARD_SET: Final = frozenset(CARD_IDS)
EXCHANGE_BONUS: Final[int] = DATA["exchange_bonus"]
ROW_RANK_BONUS: Final[dict[int, list[int]]] = {int(k): list(v) for k, v in DATA["row_rank_bonus"].items()}
SUGGESTED_SETUPS: Final[list[list[int]]] = [list(t) for t in DATA["suggested_setups"]]
SOLO_RATINGS: Final[list[dict[str, Any]]] = DATA["solo_ratings"]
ORIENTATIONS: Final = (0, 180)
SIDES: Final = ("left", "right")
ROWS: Final = 5
DRESSER_WIDTH: Final = 8
COLOUR_GOALS: Final = range(1, 8)
HANDLE_GOALS: Final = range(8, 15)
ROW_GOALS: Final = range(15, 31)

# -- Dresser cards ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Column:
    """One card in one orientation: drawer attributes by row, the row of each colour / shape, and its
    index into the pair tables below."""

    index: int
    colours: tuple[int, ...]  # colour index of rows 0..4
    handles: tuple[int, ...]  # shape index of rows 0..4, -1 = no handle
    cpos: tuple[int, ...]  # row of colour 0..4
    hpos: tuple[int, ...]  # row of shape 0..2


def _column(index: int, drawers: list[dict[str, Any]]) -> Column:
    colours = tuple(COLOURS.index(d["colour"]) for d in drawers)
    handles = tuple(-1 if d["handle"] is None else HANDLES.index(d["handle"]) for d in drawers)
    assert sorted(colours) == list(range(5)) and sorted(h for h in handles if h >= 0) == [0, 1, 2]
    return Column(index, colours, handles, tuple(colours.index(v) for v in range(5)),
                  tuple(handles.index(v) for v in range(3)))


#: ``COLUMNS[(card, orientation)]``: orientation 180 reverses the drawer order (shapes unchanged).
COLUMNS: Final[dict[tuple[str, int], Column]] = {}
for _card in DATA["cards"]:
    COLUMNS[(_card["id"], 0)] = _column(len(COLUMNS), _card["drawers"])
    COLUMNS[(_card["id"], 180)] = _column(len(COLUMNS), _card["drawers"][::-1])
_BY_INDEX: Final = sorted(COLUMNS.values(), key=lambda c: c.index)
#: ``CARD_COLUMNS[card]``: its columns at orientation 0 and at 180 (as COLUMNS, without hashing a pair).
CARD_COLUMNS: Final[dict[str, tuple[Column, Column]]] = {
    card["id"]: (COLUMNS[(card["id"], 0)], COLUMNS[(card["id"], 180)]) for card in DATA["cards"]}


def _pair_table(positions: list[tuple[int, ...]]) -> list[list[tuple[int, ...]]]:
    """``T[a][b][k + 4]`` = bitmask of the values whose row in column b is k below their row in column a.

    With it, one lookup per extra cell tells, for all colours (or shapes) at once, which values a
    placement matches: the scoring's inner loop is a few list indexings and an AND.
    """
    table = []
    for pa in positions:
        row = []
        for pb in positions:
            diffs = [0] * 9
            for v, (ra, rb) in enumerate(zip(pa, pb, strict=True)):
                diffs[rb - ra + 4] |= 1 << v
            row.append(tuple(diffs))
        table.append(row)
    return table


COLOUR_PAIRS: Final = _pair_table([c.cpos for c in _BY_INDEX])
HANDLE_PAIRS: Final = _pair_table([c.hpos for c in _BY_INDEX])
#: The pair tables flattened for the scoring's inner loop: ``T[a][b][k]`` is ``FLAT[a * PAIR_ROW + b * 9 + k]``
#: (one list of plain ints, one indexing per cell, instead of three).
#: ``bytes``, as every mask fits in a byte: compiled, an index into bytes reads a plain int (no object).
PAIR_ROW: Final = len(_BY_INDEX) * 9
COLOUR_PAIRS_FLAT: Final = bytes(mask for row in COLOUR_PAIRS for diffs in row for mask in diffs)
HANDLE_PAIRS_FLAT: Final = bytes(mask for row in HANDLE_PAIRS for diffs in row for mask in diffs)

# -- Goal cards -------------------------------------------------------------------------------------

GOALS: Final[dict[int, dict[str, Any]]] = {g["id"]: g for g in DATA["goals"]}

_SYMMETRIES: Final = (
    lambda x, y: (x, y), lambda x, y: (-y, x), lambda x, y: (-x, -y), lambda x, y: (y, -x),
    lambda x, y: (-x, y), lambda x, y: (x, -y), lambda x, y: (y, x), lambda x, y: (-y, -x),
)


def variants(cells: list[list[int]]) -> list[tuple[tuple[int, int], ...]]:
    """The distinct images of ``cells`` under the 8 symmetries of the square, normalised (D4)."""
    out: list[tuple[tuple[int, int], ...]] = []
    for sym in _SYMMETRIES:
        image = [sym(x, y) for x, y in cells]
        mx, my = min(x for x, _ in image), min(y for _, y in image)
        norm = tuple(sorted((x - mx, y - my) for x, y in image))
        if norm not in out:
            out.append(norm)
    return out


def matchable(variant: tuple[tuple[int, int], ...]) -> bool:
    """D5: a variant with two cells in one column can never match (a column has each value once)."""
    return len({x for x, _ in variant}) == len(variant)


#: A placement: (column bitmask, first column, ((other column, row offset from the first cell + 4), ...)).
Placement = tuple[int, int, tuple[tuple[int, int], ...]]


def _placements(goal_id: int, width: int) -> list[Placement]:
    """Every anchored matchable variant of a pattern goal in a dresser of ``width`` columns.

    Rows need no bounds: a placement matches value v only where v's drawers sit at the pattern's row
    offsets, and those drawers are inside the grid by construction.
    """
    out: list[Placement] = []
    for variant in variants(GOALS[goal_id]["cells"]):
        if not matchable(variant):
            continue
        w = max(x for x, _ in variant) + 1
        (x0, y0), *rest = variant  # sorted by column
        for c0 in range(width - w + 1):
            mask = sum(1 << (c0 + x) for x, _ in variant)
            out.append((mask, c0 + x0, tuple((c0 + x, y - y0 + 4) for x, y in rest)))
    return out


#: ``PLACEMENTS[goal][width]`` for the pattern goals 1-14 and widths 0-8.
PLACEMENTS: Final[dict[int, list[list[Placement]]]] = {
    g: [_placements(g, m) for m in range(DRESSER_WIDTH + 1)] for g in (*COLOUR_GOALS, *HANDLE_GOALS)
}


def _placement_code(placements: list[Placement]) -> bytes:
    """The placements as one string of small ints (bytes: each fits in one): per placement its column mask,
    first column, number of other cells, then (column, row offset + 4) per other cell. The scoring walks it
    with plain int arithmetic."""
    code: list[int] = []
    for mask, first, rest in placements:
        code += [mask, first, len(rest)]
        for col, k in rest:
            code += [col, k]
    return bytes(code)


#: ``PLACEMENT_CODE[goal][width]``: :data:`PLACEMENTS` as :func:`_placement_code`, goals 1-14 (index 0 unused).
PLACEMENT_CODE: Final[list[list[bytes]]] = [
    [_placement_code(PLACEMENTS[g][m]) for m in range(DRESSER_WIDTH + 1)] if g in PLACEMENTS else []
    for g in range(max(HANDLE_GOALS) + 1)]


@dataclass(frozen=True, slots=True)
class RowRule:
    """A row goal (15-30): attribute, kept value (-1 = any), kept rows (0-based), mode, solo bonus."""

    handle: bool
    value: int
    rows: tuple[int, ...]
    mode: str
    solo_bonus: tuple[tuple[int, int], ...]


def _row_rule(goal: dict[str, Any]) -> RowRule:
    rule = goal["row_rule"]
    handle = rule["attribute"] == "handle"
    names = HANDLES if handle else COLOURS
    return RowRule(handle, -1 if rule["value"] is None else names.index(rule["value"]),
                   tuple(r - 1 for r in rule["rows"]), rule["mode"],
                   tuple((t, b) for t, b in rule["solo_bonus"]))


ROW_RULES: Final[dict[int, RowRule]] = {g: _row_rule(GOALS[g]) for g in ROW_GOALS}
