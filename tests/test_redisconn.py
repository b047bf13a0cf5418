"""``REDIS_URL`` forms and the shard tags (no server needed; tests/gateway/test_cluster.py uses real ones)."""

from __future__ import annotations

import pytest
from redis.crc import key_slot

from services import redisconn


@pytest.mark.parametrize(("url", "expected"), [
    ("redis://h:6379/0", None),
    ("redis://h:6379/0?cluster=false", None),
    ("redis://h:6379/0?cluster=true", "redis://h:6379"),
    ("redis://h:7000?cluster=TRUE&socket_timeout=5", "redis://h:7000?socket_timeout=5"),
    ("redis+cluster://h:7000", "redis://h:7000"),
    ("rediss+cluster://user:pw@h:7000/0", "rediss://user:pw@h:7000"),
])
def test_a_cluster_url_is_recognised_in_both_forms(url: str, expected: str | None) -> None:
    assert redisconn.cluster_url(url) == expected


def test_shard_tags_fall_one_in_each_equal_part_of_the_slot_range() -> None:
    tags = redisconn.spread_tags("x", 8)
    assert len(set(tags)) == 8
    assert [key_slot(f"k:{{{tag}}}".encode()) * 8 // 16384 for tag in tags] == list(range(8))
    assert redisconn.spread_tags("x", 8) == tags  # every process computes the same ones


def test_a_refused_connection_is_retried_and_any_other_error_is_not() -> None:
    calls = []

    def refused() -> None:
        calls.append(1)
        if len(calls) < 3:
            raise redisconn.redis.ConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused.")

    redisconn.ride_out_failover(refused)
    assert len(calls) == 3

    def dropped() -> None:
        raise redisconn.redis.ConnectionError("Connection closed by server.")

    with pytest.raises(redisconn.redis.ConnectionError):
        redisconn.ride_out_failover(dropped)
