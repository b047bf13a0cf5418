"""The one-time move of a store written before the shared structures were sharded.

Before, one Redis held every bot job in ``bots:jobs``, every clock deadline in ``{clock}:deadlines`` (and
the leased ones in ``{clock}:leases``) and the match counters in ``stats:matches``. After an upgrade nobody
reads those keys, so a bot turn or a deadline left there would never be played or fire. Bot workers and
timekeepers call :func:`migrate` when they start: each legacy key is first renamed to a name of the caller's
own (so two processes starting together never move the same entries twice), then its entries go to their
shards. A cluster never ran the old layout (it could not), so there is nothing to do there.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import orjson
import redis

from services import redisconn
from services.core.match.bots_seam import bot_jobs_stream
from services.core.record.store import MATCH_STATS_KEYS, MatchStore, deadline_keys

log = logging.getLogger("meeple.store")
LEGACY_JOBS = "bots:jobs"
LEGACY_GROUP = "bots"
LEGACY_DEADLINES = ("{clock}:deadlines", "{clock}:leases")
LEGACY_STATS = "stats:matches"


def _claim(client: Any, key: str) -> str | None:
    """Rename ``key`` to a name only this caller knows; None if there is no such key (any more)."""
    mine = f"{key}:migrating:{uuid.uuid4().hex}"
    try:
        client.rename(key, mine)
    except redis.ResponseError:  # no such key: nothing to move, or another process took it
        return None
    return mine


def migrate(store: MatchStore) -> dict[str, int]:
    """Move what the legacy keys hold into the shards; returns how many entries of each kind moved."""
    client = store.redis
    moved = {"deadlines": 0, "counters": 0, "bot_jobs": 0}
    if redisconn.is_cluster(client):
        return moved
    for legacy in LEGACY_DEADLINES:  # a lease goes back as a deadline due when the lease ends
        mine = _claim(client, legacy)
        if mine is None:
            continue
        pipe = client.pipeline(transaction=False)
        for member, due in client.zrange(mine, 0, -1, withscores=True):
            pipe.zadd(deadline_keys(member.decode().split("|", 1)[0])[0], {member: due})
            moved["deadlines"] += 1
        pipe.delete(mine)
        pipe.execute()
    mine = _claim(client, LEGACY_STATS)
    if mine is not None:
        pipe = client.pipeline(transaction=False)
        for name, count in client.hgetall(mine).items():
            pipe.hincrby(MATCH_STATS_KEYS[0], name, int(count))
            moved["counters"] += 1
        pipe.delete(mine)
        pipe.execute()
    mine = _claim(client, LEGACY_JOBS)
    if mine is not None:
        moved["bot_jobs"] = _move_jobs(client, mine)
    if any(moved.values()):
        log.info("moved what the unsharded keys held into the shards: %s", moved)
    return moved


def _move_jobs(client: Any, stream: str) -> int:
    """Re-enqueue the jobs no worker finished: those taken but not acknowledged, and those never taken."""
    unfinished: list[Any] = []
    groups: Any = client.xinfo_groups(stream)
    group = next((g for g in groups if g["name"] in (LEGACY_GROUP, LEGACY_GROUP.encode())), None)
    if group is None:
        unfinished = client.xrange(stream)
    else:
        pending: Any = client.xpending_range(stream, LEGACY_GROUP, "-", "+", 1_000_000)
        for entry in pending:
            unfinished += client.xrange(stream, entry["message_id"], entry["message_id"])
        last = group["last-delivered-id"]
        unfinished += client.xrange(stream, min=f"({last.decode() if isinstance(last, bytes) else last}")
    pipe = client.pipeline(transaction=False)
    for _, fields in unfinished:
        job = orjson.loads(fields[b"job"])
        pipe.xadd(bot_jobs_stream(str(job["match_id"]), client), {"job": fields[b"job"]}, maxlen=100_000)
    pipe.delete(stream)
    pipe.execute()
    return len(unfinished)
