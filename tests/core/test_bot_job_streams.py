"""Where a match's bot jobs are queued (issue 28, bots ride out a failover): on a cluster, in a stream on the
primary that holds the match, so that a failover of another primary never holds its bot's moves (the deploy
test saw matches on healthy primaries wait ~9 s for a stream on the killed one); on one server, the shard's."""

from __future__ import annotations

from typing import Any

import pytest

from services import redisconn
from services.core.match.bots_seam import BOT_JOB_STREAMS, bot_jobs_stream
from services.core.record.store import SHARDS, keys


def test_a_matchs_bot_jobs_go_to_a_stream_on_the_matchs_own_primary(client: Any, tenant: str) -> None:
    ids = [f"{tenant}-bots{i}" for i in range(2000)]
    if not redisconn.is_cluster(client):
        assert all(bot_jobs_stream(m, client) == BOT_JOB_STREAMS[redisconn.shard_of(m, SHARDS)] for m in ids)
        return
    node = client.get_node_from_key
    assert all(node(bot_jobs_stream(m, client)).name == node(keys(m)[0]).name for m in ids)
    # the shard's own stream where it is on the match's primary (most matches: the streams stay spread)
    same = sum(bot_jobs_stream(m, client) == BOT_JOB_STREAMS[redisconn.shard_of(m, SHARDS)] for m in ids)
    assert same > len(ids) // 2
    # and without the slot table (a caller with no client) the shard's stream, as every release before
    assert all(bot_jobs_stream(m) == BOT_JOB_STREAMS[redisconn.shard_of(m, SHARDS)] for m in ids)


def test_the_shards_stream_alone_would_put_some_matches_jobs_on_another_primary(client: Any, tenant: str) -> None:
    """The failure the choice above removes (a 3-primary cluster's shares do not start where the shards do)."""
    if not redisconn.is_cluster(client):
        pytest.skip("one server holds every stream and every match")
    node = client.get_node_from_key
    ids = [f"{tenant}-bots{i}" for i in range(2000)]
    assert any(node(BOT_JOB_STREAMS[redisconn.shard_of(m, SHARDS)]).name != node(keys(m)[0]).name for m in ids)
