"""Per-client quotas: how many matches, bot seats and ``hard`` bot seats one client IP holds at once.

The rate limit bounds requests; these bound what the requests leave behind (a match's memory, the bot
workers' CPU). Each owner has three sorted sets in one Redis Cluster slot, ``quota:{<owner>}:matches``,
``…:bots`` and ``…:hard``, whose members are what it holds (``<match>``, ``<match>:<seat>``, or
``t:<ticket>`` for a matchmaking ticket) scored by when the charge lapses at the latest. A match's charge
is released when it finishes (:func:`release`, run with the update that finishes it); a waiting match
that expires, or a crash between two writes, only leaves a charge that lapses by its score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from services.core.meta import Seat

#: Drop lapsed charges, check every limit, then charge everything at once: (0) or (which limit, held now).
#: ARGV: now, until, then the members to charge (JSON lists: matches, bot seats, hard ones), then the limits.
_CHARGE = """
local now = tonumber(ARGV[1])
local wanted = {cjson.decode(ARGV[3]), cjson.decode(ARGV[4]), cjson.decode(ARGV[5])}
for i = 1, 3 do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  local limit = tonumber(ARGV[5 + i])
  local held = redis.call('ZCARD', KEYS[i])
  if limit > 0 and #wanted[i] > 0 and held + #wanted[i] > limit then return {i, held} end
end
local ttl = math.ceil(tonumber(ARGV[2]) - now) + 1
for i = 1, 3 do
  for _, member in ipairs(wanted[i]) do redis.call('ZADD', KEYS[i], ARGV[2], member) end
  if #wanted[i] > 0 and redis.call('TTL', KEYS[i]) < ttl then redis.call('EXPIRE', KEYS[i], ttl) end
end
return {0, 0}
"""

WHAT = ("active matches", "bot seats", "hard bot seats")


@dataclass(frozen=True)
class Limits:
    matches: int
    bots: int
    hard: int

    def values(self) -> tuple[int, int, int]:
        return self.matches, self.bots, self.hard


class QuotaExceeded(Exception):
    def __init__(self, what: str, limit: int, held: int) -> None:
        super().__init__(f"this client already holds {held} {what}; the limit is {limit} at once "
                         f"(finish or leave some first)")
        self.what, self.limit, self.held = what, limit, held


def keys(owner: str) -> list[str]:
    return [f"quota:{{{owner}}}:{kind}" for kind in ("matches", "bots", "hard")]


def seat_members(match_id: str, seats: Sequence[Seat]) -> tuple[list[str], list[str]]:
    """The bot seats a match charges, and those of them at level ``hard``."""
    bots = [i for i, s in enumerate(seats) if s.kind == "bot"]
    return ([f"{match_id}:{i}" for i in bots],
            [f"{match_id}:{i}" for i in bots if seats[i].level == "hard"])


def charge(client: Any, owner: str, member: str, seats: Sequence[Seat], now: float, until: float,
           limits: Limits) -> None:
    """Charge ``owner`` one match (``member``) and its bot seats, or raise :class:`QuotaExceeded`."""
    bots, hard = seat_members(member, seats)
    _charge(client, owner, ([member], bots, hard), now, until, limits)


def reserve(client: Any, owner: str, members: list[str], now: float, until: float, limit: int) -> None:
    """Charge ``owner`` the ``members`` as matches, all or none (a tournament's tables, ahead of time), or raise
    :class:`QuotaExceeded`."""
    _charge(client, owner, (members, [], []), now, until, Limits(limit, 0, 0))


def _charge(client: Any, owner: str, members: tuple[list[str], list[str], list[str]], now: float, until: float,
            limits: Limits) -> None:
    which, held = client.eval(_CHARGE, 3, *keys(owner), now, until, *(orjson.dumps(m).decode() for m in members),
                              *limits.values())
    if which:
        raise QuotaExceeded(WHAT[which - 1], limits.values()[which - 1], int(held))


def unreserve(client: Any, owner: str, members: list[str]) -> None:
    """Give back a :func:`reserve` (a tournament that ended)."""
    if members:
        client.zrem(keys(owner)[0], *members)


def release(pipe: Any, owner: str, member: str, seats: Sequence[Seat]) -> None:
    """Queue on ``pipe`` the release of what a match (or ticket) holds."""
    bots, hard = seat_members(member, seats)
    matches_key, bots_key, hard_key = keys(owner)
    pipe.zrem(matches_key, member)
    if bots:
        pipe.zrem(bots_key, *bots)
    if hard:
        pipe.zrem(hard_key, *hard)


def extend(pipe: Any, owner: str, member: str, seats: Sequence[Seat], now: float, until: float) -> None:
    """Queue on ``pipe``: the charges of a match that just started lapse at ``until`` (never earlier).

    Plain commands, not a script, so a Redis Cluster pipeline can carry them beside the match counters. The
    keys' lifetime may be set outright: every charge already held was made by ``now`` and lapses by
    ``now`` plus the longest lifetime at the latest, which is ``until``.
    """
    bots, hard = seat_members(member, seats)
    ttl = math.ceil(until - now) + 1
    for key, members in zip(keys(owner), ([member], bots, hard), strict=True):
        if members:
            pipe.zadd(key, dict.fromkeys(members, until), xx=True, gt=True)
            pipe.expire(key, ttl)
