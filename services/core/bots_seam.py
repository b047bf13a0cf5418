"""Where bot turns leave the gateway: called after every update with the bot seats now to act.

The bot workers (``services/bots``) consume these jobs from Redis Streams ``bots:jobs:{<shard>}``, one per
shard of the match ids (spread over a cluster's primaries; every worker reads them all); until they run, a
match with a bot seat to act waits (see docs/api.md).
"""

from __future__ import annotations

import orjson

from services import redisconn

from .store import SHARDS, MatchStore

#: One stream per shard; a match's jobs go to the stream of its shard.
BOT_JOB_STREAMS = tuple(f"bots:jobs:{{{tag}}}" for tag in redisconn.spread_tags("b", SHARDS))


def bot_jobs_stream(match_id: str) -> str:
    return BOT_JOB_STREAMS[redisconn.shard_of(match_id, SHARDS)]


def on_bot_turn(store: MatchStore, match_id: str, game: str, version: int, seats: list[int]) -> None:
    """Enqueue one job per bot seat to act at ``version`` (workers skip jobs that went stale)."""
    for seat in seats:
        store.redis.xadd(bot_jobs_stream(match_id), {"job": orjson.dumps(
            {"match_id": match_id, "game": game, "version": version, "seat": seat})}, maxlen=100_000)
