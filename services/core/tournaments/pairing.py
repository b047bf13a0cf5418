"""Who plays whom: Swiss rounds and arena waves, for tables of 2 or more seats. Pure functions.

**Cost of a table.** For every two humans at a table: ``REPEAT`` for each time they already shared a table
(avoided first of all), plus the square of their score difference in half points times ``SCORE`` (players of
equal score meet), plus the square of their distance in the ranking (score, then rating) times ``RANK`` (among
equal scores, neighbours in rating meet). Each term outweighs everything the next one can add up to.

**Swiss, 2 seats.** An odd player out gets the bye: among the players with the fewest byes so far, the lowest
ranked. The others are paired by a minimum-cost perfect matching (Edmonds' blossom algorithm, networkx's
``max_weight_matching``), so no repeat happens while a repeat-free pairing exists. Each player's graph starts
with their nearest ``WINDOW`` neighbours in the ranking and widens until a perfect matching exists (all
pairs at last), which keeps large tournaments fast.

**Swiss, k seats (k >= 3).** ``ceil(n / k)`` tables; the ``tables * k - n`` empty seats go to bots, one per
table from the bottom table up. The humans who sit with bots are the lowest ranked among those with the fewest
byes. Tables are filled top-down greedily (the best-ranked unseated player, then whoever adds least cost among
the next few), then improved by swapping players between tables of the same kind while any swap lowers the
total cost. (Grouping into tables of k >= 3 at minimum cost is NP-hard; no library solves it.)

**Byes.** A table's empty seats get the bot rung whose ladder ``mu`` is closest to the mean rating of the
table's humans (``skill.closest_level`` on the shipped ladder or Redis's newer one).

**Arena.** The waiting players, by score then rating, are grouped as for Swiss (without byes); ``REPEAT``
counts only the players' last table (a rematch at once is avoided, an old opponent is fine), and two players the
machine *holds* apart (an opponent of their last table, before the repeat is due: see :mod:`.machine`) never sit
at one table (``HOLD``; a table that cannot avoid it is not made). Players left over wait for the next wave,
unless they have waited ``bot_after_s``: then bots fill their tables (at most ``seats - 1`` such players a table,
never two held apart).

**Seat order.** At each table the humans who were first to play least often sit first (seat 0), then by
ranking; bots take the last seats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from services.core.competition import skill

HOLD = 10**18
REPEAT = 10**15
SCORE = 10**8
RANK = 1
#: Neighbours each player is first linked with in a 2-seat Swiss pairing graph.
WINDOW = 24
#: Improvement passes over pairs of tables (each pass tries every swap).
MAX_PASSES = 50


@dataclass(frozen=True)
class Entrant:
    player: str
    score: float
    rating: float
    #: how many tables this player shared with each other player (Swiss), or their last table's (arena)
    met: Mapping[str, int] = field(default_factory=dict)
    byes: int = 0
    firsts: int = 0
    #: players this one may not sit with now (an arena's repeat that is not due yet)
    held: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Table:
    """Humans in seat order, then the bot levels of the remaining seats."""

    players: tuple[str, ...]
    bots: tuple[str, ...] = ()

    def seats(self) -> list[dict[str, str]]:
        return [{"player": p} for p in self.players] + [{"bot": b} for b in self.bots]


def ranking(entrants: Sequence[Entrant]) -> list[Entrant]:
    return sorted(entrants, key=lambda e: (-e.score, -e.rating, e.player))


def pair_cost(a: Entrant, b: Entrant, index: Mapping[str, int]) -> int:
    return (HOLD * apart(a, b) + REPEAT * a.met.get(b.player, 0) + SCORE * round(2 * (a.score - b.score)) ** 2
            + RANK * (index[a.player] - index[b.player]) ** 2)


def apart(a: Entrant, b: Entrant) -> bool:
    """Whether ``a`` and ``b`` are held apart (may not share a table now)."""
    return b.player in a.held or a.player in b.held


def table_cost(group: Sequence[Entrant], index: Mapping[str, int]) -> int:
    return sum(pair_cost(a, b, index) for i, a in enumerate(group) for b in group[i + 1:])


def bot_level(ladder: Mapping[str, Mapping[str, Any]], ratings: Sequence[float]) -> str:
    return skill.closest_level({level: dict(doc) for level, doc in ladder.items()},
                               sum(ratings) / len(ratings) if ratings else 25.0)


def _seated(group: Sequence[Entrant], bots: int, ladder: Mapping[str, Mapping[str, Any]],
            index: Mapping[str, int]) -> Table:
    order = sorted(group, key=lambda e: (e.firsts, index[e.player]))
    level = bot_level(ladder, [e.rating for e in group])
    return Table(tuple(e.player for e in order), (level,) * bots)


def swiss(entrants: Sequence[Entrant], per_table: int, ladder: Mapping[str, Mapping[str, Any]]) -> list[Table]:
    """The next Swiss round's tables (fewer than 2 entrants: none)."""
    ranked = ranking(entrants)
    if len(ranked) < 2:
        return []
    index = {e.player: i for i, e in enumerate(ranked)}
    if per_table == 2:
        return _swiss_pairs(ranked, ladder, index)
    tables = math.ceil(len(ranked) / per_table)
    bots = [0] * tables
    for i in range(tables * per_table - len(ranked)):
        bots[tables - 1 - i % tables] += 1
    with_bots = sum(per_table - b for b in bots if b)
    byes = {e.player for e in sorted(ranked, key=lambda e: (e.byes, -index[e.player]))[:with_bots]}
    full = [e for e in ranked if e.player not in byes]
    short = [e for e in ranked if e.player in byes]
    full_sizes = [per_table - b for b in bots if not b]
    short_sizes = [per_table - b for b in bots if b]
    groups = _improve(_greedy(full, full_sizes, index), index) + _improve(_greedy(short, short_sizes, index), index)
    counts = [0] * len(full_sizes) + [b for b in bots if b]
    return [_seated(g, n, ladder, index) for g, n in zip(groups, counts, strict=True)]


def _swiss_pairs(ranked: list[Entrant], ladder: Mapping[str, Mapping[str, Any]],
                 index: Mapping[str, int]) -> list[Table]:
    tables: list[Table] = []
    if len(ranked) % 2:
        bye = min(ranked, key=lambda e: (e.byes, -index[e.player]))
        ranked = [e for e in ranked if e is not bye]
        tables_bye = [_seated([bye], 1, ladder, index)]
    else:
        tables_bye = []
    n = len(ranked)
    window = WINDOW
    by_name = {e.player: e for e in ranked}
    while True:
        graph = nx.Graph()
        edges = [(a.player, b.player, pair_cost(a, b, index)) for i, a in enumerate(ranked)
                 for b in (ranked[i + 1:] if window >= n else ranked[i + 1:i + 1 + window])]
        worst = max(cost for _, _, cost in edges)
        for a_name, b_name, cost in edges:  # (maximum weight = minimum cost among the perfect matchings)
            graph.add_edge(a_name, b_name, weight=worst + 1 - cost)
        matching = nx.max_weight_matching(graph, maxcardinality=True)
        repeats = sum(by_name[a].met.get(b, 0) for a, b in matching)
        if (2 * len(matching) == n and not repeats) or window >= n:
            break  # (a repeat in a narrow graph may be avoidable in a wider one)
        window *= 2
    pairs = [sorted((by_name[a], by_name[b]), key=lambda e: index[e.player]) for a, b in matching]
    pairs.sort(key=lambda pair: index[pair[0].player])
    tables += [_seated(pair, 0, ladder, index) for pair in pairs]
    return tables + tables_bye


def _greedy(ranked: list[Entrant], sizes: list[int], index: Mapping[str, int]) -> list[list[Entrant]]:
    """Tables top-down: the best unseated player, then whoever adds least cost among the next few."""
    left = list(ranked)
    groups = []
    for size in sizes:
        group = [left.pop(0)]
        while len(group) < size:
            look = left[:3 * size]
            best = min(look, key=lambda e: (sum(pair_cost(e, g, index) for g in group), index[e.player]))
            left.remove(best)
            group.append(best)
        groups.append(group)
    return groups


def _improve(groups: list[list[Entrant]], index: Mapping[str, int]) -> list[list[Entrant]]:
    """Swap players between tables while a swap lowers the total cost."""
    for _ in range(MAX_PASSES):
        better = False
        for i in range(len(groups)):
            for j in range(i + 1, len(groups)):
                for a in range(len(groups[i])):
                    for b in range(len(groups[j])):
                        gi, gj = groups[i], groups[j]
                        before = table_cost(gi, index) + table_cost(gj, index)
                        ni = [*gi[:a], gj[b], *gi[a + 1:]]
                        nj = [*gj[:b], gi[a], *gj[b + 1:]]
                        if table_cost(ni, index) + table_cost(nj, index) < before:
                            groups[i], groups[j] = ni, nj
                            better = True
        if not better:
            break
    return groups


def arena(waiting: Sequence[Entrant], per_table: int, ladder: Mapping[str, Mapping[str, Any]],
          waited: Mapping[str, float], bot_after_s: float) -> list[Table]:
    """Tables for the players waiting now; those left over wait, unless they waited ``bot_after_s`` (then bots
    fill their table). ``waited``: seconds each has waited."""
    ranked = ranking(waiting)
    index = {e.player: i for i, e in enumerate(ranked)}
    full = len(ranked) // per_table
    groups = _improve(_greedy(ranked, [per_table] * full, index), index) if full else []
    groups = [g for g in groups if not any(apart(a, b) for i, a in enumerate(g) for b in g[i + 1:])]
    tables = [_seated(g, 0, ladder, index) for g in groups]
    seated = {e.player for g in groups for e in g}
    rest = [e for e in ranked if e.player not in seated and waited.get(e.player, 0.0) >= bot_after_s]
    return tables + [_seated(g, per_table - len(g), ladder, index) for g in _with_bots(rest, per_table)]


def _with_bots(rest: list[Entrant], per_table: int) -> list[list[Entrant]]:
    """The players who waited ``bot_after_s`` and are left over, in tables with at least one bot, first fit (never
    two held apart at one table)."""
    groups: list[list[Entrant]] = []
    for entrant in rest:
        fits = next((g for g in groups if len(g) < per_table - 1 and not any(apart(entrant, o) for o in g)), None)
        if fits is None:
            groups.append([entrant])
        else:
            fits.append(entrant)
    return groups
