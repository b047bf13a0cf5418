"""Skill matchmaking policy: pure functions, shared by the core's matchmaker and the population simulation.

Tickets carry a rating (``mu`` of the server's openskill rating: the tenant's player's own, else the default
25). A ticket may hold a *party* of several players, who play in one match: its rating is the mean ``mu`` of
its members, and its window is widened by half its spread (highest minus lowest member ``mu``), so a mixed
party is not held back for being mixed. A group of tickets whose parties fill the ``n`` seats may play when its
rating spread (highest minus lowest ticket) is within the widest *window* of its tickets, which widens with
waiting time: ``base + widen * wait + party spread / 2``. Of the groups that may play, the one with the smallest
spread is taken (ties: the longest wait). At bot-fill time the waiting ticket takes the others closest in rating
that fit its table, and each empty seat gets the bot level whose ladder rating is closest to the mean of the
table's humans. A group never seats one player twice: a tenant's player may hold several tickets at once
(matches of their own), but a match takes a player once, as a join and a create do.

In a team game (a game whose sides hold more than one seat, e.g. They Who Were 8: seats 0+2 against 1+3) a
party sits on one team when it is no larger than a team; a larger one fills whole teams first and the rest sit
together on one other team (:func:`place`). A group is built only of parties that can all be placed so.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

#: The seats of each side of a game (``[[0, 2], [1, 3]]``), or None where it does not matter (no party).
Sides = Sequence[Sequence[int]]


@dataclass(frozen=True)
class Entry:
    ticket: str
    #: the ticket's rating: its player's ``mu``, a party's mean ``mu``
    rating: float
    since: float
    #: the tenant's player a one-member ticket seats (None: anonymous, never the same as another ticket's)
    player: str | None = None
    #: how many seats the ticket takes (its party's members)
    size: int = 1
    #: a party's named players (a group takes each at most once)
    members: tuple[str, ...] = ()
    #: a party's rating spread (highest minus lowest member ``mu``)
    spread: float = 0.0

    def names(self) -> set[str]:
        """The tenant's players this ticket seats."""
        return set(self.members) | ({self.player} if self.player is not None else set())

    def window(self, now: float, base: float, widen: float) -> float:
        """How far apart in rating this ticket accepts a group to be: widening as it waits, and by half its
        party's spread."""
        return window(now - self.since, base, widen) + self.spread / 2


def window(wait_s: float, base: float, widen: float) -> float:
    return base + widen * max(0.0, wait_s)


def is_team_game(sides: Sides | None) -> bool:
    return sides is not None and any(len(side) > 1 for side in sides)


def team_of(sides: Sides | None, seat: int) -> int | None:
    """The team (index of the side) a seat plays on, or None in a game without teams."""
    if not is_team_game(sides):
        return None
    assert sides is not None
    return next((t for t, side in enumerate(sides) if seat in side), None)


def place(sizes: Sequence[int], n: int, sides: Sides | None = None) -> list[list[int]] | None:
    """The seats of each party (in the order of ``sizes``) at a table of ``n``, or None if they do not fit.
    Without teams, parties sit in consecutive seats in their order. With teams, a party no larger than a team
    sits on one team; a larger one fills whole teams first (lowest first) and the rest sit on one other team.
    Larger parties are placed first; the first placement found (teams in their order) is taken."""
    if sum(sizes) > n:
        return None
    if not is_team_game(sides):
        out, at = [], 0
        for size in sizes:
            out.append(list(range(at, at + size)))
            at += size
        return out
    assert sides is not None
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    found = _place_teams([sizes[i] for i in order], [list(side) for side in sides], max(len(s) for s in sides))
    if found is None:
        return None
    result: list[list[int]] = [[] for _ in sizes]
    for i, seats in zip(order, found, strict=True):
        result[i] = seats
    return result


def _place_teams(sizes: list[int], free: list[list[int]], team_size: int) -> list[list[int]] | None:
    """Backtracking over the teams each party may take (``free``: each team's free seats, in seat order)."""
    if not sizes:
        return []
    size, rest = sizes[0], sizes[1:]
    for teams in _team_choices(size, free, team_size):
        left = [list(seats) for seats in free]
        taken: list[int] = []
        for team, count in teams:
            taken += left[team][:count]
            left[team] = left[team][count:]
        placed = _place_teams(rest, left, team_size)
        if placed is not None:
            return [sorted(taken), *placed]
    return None


def _team_choices(size: int, free: list[list[int]], team_size: int) -> Iterable[list[tuple[int, int]]]:
    """Ways a party of ``size`` may sit: (team, seats taken there) lists, as :func:`place` says."""
    if size <= team_size:
        return ([(t, size)] for t, seats in enumerate(free) if len(seats) >= size)
    whole, remainder = divmod(size, team_size)
    empty = [t for t, seats in enumerate(free) if len(seats) == team_size]
    choices = []
    for teams in combinations(empty, whole):
        filled = [(t, team_size) for t in teams]
        if not remainder:
            choices.append(filled)
            continue
        choices += [[*filled, (t, remainder)] for t, seats in enumerate(free)
                    if t not in teams and len(seats) >= remainder]
    return choices


def fits(sizes: Sequence[int], n: int, sides: Sides | None = None) -> bool:
    return place(sizes, n, sides) is not None


def _sums_after(ordered: Sequence[Entry], n: int) -> list[int]:
    """For each position, the seat counts up to ``n`` that tickets after it can make up (a bit mask; players
    and teams left out): a ticket is passed over when what would remain after it cannot be filled."""
    reach = [1] * (len(ordered) + 1)
    for i in range(len(ordered) - 1, -1, -1):
        reach[i] = (reach[i + 1] | (reach[i + 1] << ordered[i].size)) & ((1 << (n + 1)) - 1)
    return reach


def _fill(ordered: Sequence[Entry], i: int, n: int, reach: list[int], sides: Sides | None) -> list[Entry] | None:
    """The group of exactly ``n`` seats led by ``ordered[i]``: the next tickets in rating order whose players
    are new to it, whose parties fit the table, and after which the rest can still be filled."""
    first = ordered[i]
    if not fits([first.size], n, sides):
        return None
    group, used, seen = [first], first.size, first.names()
    for j in range(i + 1, len(ordered)):
        if used == n:
            break
        entry = ordered[j]
        rest = n - used - entry.size
        if rest < 0 or entry.names() & seen or not (reach[j + 1] >> rest) & 1:
            continue
        if entry.size > 1 and not fits([e.size for e in group] + [entry.size], n, sides):
            continue  # (single players fit any seat the parties leave)
        group.append(entry)
        used += entry.size
        seen |= entry.names()
    return group if used == n else None


def pick_group(entries: Sequence[Entry], n: int, now: float, base: float, widen: float,
               sides: Sides | None = None) -> list[Entry] | None:
    """The closest-rated group filling ``n`` seats that its tickets' widest window admits, or None. From each
    lowest ticket up, the group is the next tickets in rating order that fill the table (see :func:`_fill`)."""
    ordered = sorted(entries, key=lambda e: (e.rating, e.since))
    reach = _sums_after(ordered, n)
    best: tuple[float, float, list[Entry]] | None = None
    for i in range(len(ordered)):
        if not (reach[i] >> n) & 1:
            break  # the tickets from here on cannot fill a table, so those after them neither
        group = _fill(ordered, i, n, reach, sides)
        if group is None:
            continue
        spread = group[-1].rating - group[0].rating
        oldest = min(e.since for e in group)
        widest = max(e.window(now, base, widen) for e in group)
        if spread <= widest and (best is None or (spread, oldest) < best[:2]):
            best = (spread, oldest, group)
    return None if best is None else best[2]


def nearest(entries: Sequence[Entry], anchor: Entry, k: int, sides: Sides | None = None) -> list[Entry]:
    """Tickets filling up to ``k`` more seats beside ``anchor`` (left out), closest in rating first (longest
    waiting on ties), each of players other than the anchor's and each other's, whose parties fit the table."""
    others = sorted((e for e in entries if e.ticket != anchor.ticket),
                    key=lambda e: (abs(e.rating - anchor.rating), e.since))
    n = anchor.size + k
    chosen: list[Entry] = []
    seen, used = anchor.names(), 0
    for entry in others:
        if used == k:
            break
        if used + entry.size > k or entry.names() & seen:
            continue
        if entry.size > 1 and not fits(
                [anchor.size, *(e.size for e in chosen), entry.size], n, sides):
            continue
        chosen.append(entry)
        used += entry.size
        seen |= entry.names()
    return chosen


def closest_level(levels: dict[str, dict[str, Any]], rating: float, fallback: str = "normal") -> str:
    """The bot level whose ``mu`` is closest to ``rating`` (``fallback`` before any ladder ran)."""
    if not levels:
        return fallback
    return min(levels, key=lambda level: (abs(float(levels[level]["mu"]) - rating), level))


def spread(ratings: Sequence[float]) -> float:
    return max(ratings) - min(ratings) if ratings else 0.0
