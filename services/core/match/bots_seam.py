"""Where bot turns leave the match core: called after every update with the bot seats now to act.

The bot workers (``services/bots``) consume these jobs from Redis Streams ``bots:jobs:{<shard>}``, one per
shard of the match ids (spread over a cluster's primaries; every worker reads them all); until they run, a
match with a bot seat to act waits (see docs/api.md). On a cluster a match's jobs go to a stream on the
match's own primary, so a failover of another primary never holds its bot's moves.
"""

from __future__ import annotations

from typing import Any

import orjson

from services import redisconn
from services.core.record.store import SHARDS, MatchStore, keys

#: One stream per shard; a match's jobs go to the stream of its shard (on a cluster: see bot_jobs_stream).
BOT_JOB_STREAMS = tuple(f"bots:jobs:{{{tag}}}" for tag in redisconn.spread_tags("b", SHARDS))
_STREAM_SLOTS = tuple(redisconn.slot_of(stream) for stream in BOT_JOB_STREAMS)


def _within(slot: int, spans: list[tuple[int, int]]) -> bool:
    return any(first <= slot <= last for first, last in spans)


def bot_jobs_stream(match_id: str, client: Any = None) -> str:
    """The stream of ``match_id``'s bot jobs. The shard's stream is spread like the slots, but a primary's share
    of the slots need not start where a shard does: given the ``client`` of a cluster, a stream on the primary
    that holds the match is chosen instead where the shard's is elsewhere (the same one for every process that
    reads the same slot table; every worker reads every stream, so any stream is found)."""
    if client is None or not redisconn.is_cluster(client):
        return BOT_JOB_STREAMS[redisconn.shard_of(match_id, SHARDS)]
    slot = redisconn.slot_of(keys(match_id)[0])
    owner = next((spans for _, _, spans in redisconn.slot_ranges(client) if _within(slot, spans)), None)
    return stream_on(match_id, owner)


def stream_on(match_id: str, owner: list[tuple[int, int]] | None) -> str:
    """:func:`bot_jobs_stream` for a match whose primary serves the slot ranges ``owner`` (None: unknown, as while
    its slots fail over: the shard's stream)."""
    shard = redisconn.shard_of(match_id, SHARDS)
    if owner is None or _within(_STREAM_SLOTS[shard], owner):
        return BOT_JOB_STREAMS[shard]
    local = [i for i, stream_slot in enumerate(_STREAM_SLOTS) if _within(stream_slot, owner)]
    return BOT_JOB_STREAMS[local[shard % len(local)]] if local else BOT_JOB_STREAMS[shard]


def on_bot_turn(store: MatchStore, match_id: str, game: str, version: int, seats: list[int]) -> None:
    """Enqueue one job per bot seat to act at ``version`` (workers skip jobs that went stale)."""
    stream = bot_jobs_stream(match_id, store.redis) if seats else ""  # (one slot-table look for every seat)
    for seat in seats:
        store.redis.xadd(stream, {"job": orjson.dumps(
            {"match_id": match_id, "game": game, "version": version, "seat": seat})}, maxlen=100_000)
