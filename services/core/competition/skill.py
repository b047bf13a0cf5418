"""Skill matchmaking policy: pure functions, shared by the core's matchmaker and the population simulation.

Tickets carry a rating (``mu`` of the server's openskill rating: the tenant's player's own, else the default
25). A group of ``n`` tickets may play when its rating spread (highest minus lowest) is within the *window*
of its longest-waiting member, which widens with waiting time: ``base + widen * wait``. Of the groups that
may play, the one with the smallest spread is taken (ties: the longest wait). At bot-fill time the waiting
ticket takes the up to ``n - 1`` others closest in rating, and each empty seat gets the bot level whose
ladder rating is closest to the mean of the table's humans. A group never seats one player twice: a tenant's
player may hold several tickets at once (matches of their own), but a match takes a player once, as a join
and a create do.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any


@dataclass(frozen=True)
class Entry:
    ticket: str
    rating: float
    since: float
    #: the tenant's player the ticket seats (None: anonymous, never the same as another ticket's)
    player: str | None = None


def _distinct(candidates: Iterable[Entry], k: int, taken: set[str] | None = None) -> list[Entry]:
    """The first ``k`` of ``candidates`` (in their order) whose players differ from each other and from
    ``taken``'s."""
    chosen: list[Entry] = []
    seen = set(taken or ())
    for entry in candidates:
        if len(chosen) == k:
            break
        if entry.player is not None:
            if entry.player in seen:
                continue
            seen.add(entry.player)
        chosen.append(entry)
    return chosen


def window(wait_s: float, base: float, widen: float) -> float:
    return base + widen * max(0.0, wait_s)


def pick_group(entries: Sequence[Entry], n: int, now: float, base: float, widen: float) -> list[Entry] | None:
    """The closest-rated group of ``n`` that its longest-waiting member's window admits, or None. From each
    lowest member up, the group is the next ``n`` distinct players in rating order (the closest such group)."""
    ordered = sorted(entries, key=lambda e: (e.rating, e.since))
    best: tuple[float, float, list[Entry]] | None = None
    for i in range(len(ordered)):
        group = _distinct(islice(ordered, i, None), n)
        if len(group) < n:
            break  # fewer distinct players above this one, so above any later one too
        spread = group[-1].rating - group[0].rating
        oldest = min(e.since for e in group)
        if spread <= window(now - oldest, base, widen) and (best is None or (spread, oldest) < best[:2]):
            best = (spread, oldest, group)
    return None if best is None else best[2]


def nearest(entries: Sequence[Entry], anchor: Entry, k: int) -> list[Entry]:
    """The ``k`` entries (``anchor`` left out) closest in rating to ``anchor``, longest-waiting first on ties,
    each a player other than the anchor's and each other's."""
    others = sorted((e for e in entries if e.ticket != anchor.ticket),
                    key=lambda e: (abs(e.rating - anchor.rating), e.since))
    return _distinct(others, k, {anchor.player} if anchor.player is not None else None)


def closest_level(levels: dict[str, dict[str, Any]], rating: float, fallback: str = "normal") -> str:
    """The bot level whose ``mu`` is closest to ``rating`` (``fallback`` before any ladder ran)."""
    if not levels:
        return fallback
    return min(levels, key=lambda level: (abs(float(levels[level]["mu"]) - rating), level))


def spread(ratings: Sequence[float]) -> float:
    return max(ratings) - min(ratings) if ratings else 0.0
