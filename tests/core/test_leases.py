"""Due work leased over shards (``services.core.record.leases``): what is due is claimed, once, whatever its shard; what
is not due yet stays; a lease that ran out is due again; and a poll over shards with nothing due runs no claim
script. On one redis-server and on a real 3-primary cluster (the shards are in different slots)."""

from __future__ import annotations

from typing import Any

from services import redisconn
from services.core.record.leases import Leases


def shards_of(tenant: str, n: int = 6) -> list[tuple[str, str]]:
    return [(f"{{{tenant}-{i}}}:due", f"{{{tenant}-{i}}}:leases") for i in range(n)]


def scripts_run(client: Any) -> int:
    nodes = [client] if not redisconn.is_cluster(client) else [
        client.get_redis_connection(node) for node in client.get_primaries()]
    return sum(int(node.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)) for node in nodes)


def test_claiming_over_shards_takes_what_is_due_once_and_leaves_the_rest(client: Any, tenant: str) -> None:
    shards = shards_of(tenant)
    leases = Leases(client)
    client.zadd(shards[1][0], {"a": 100, "later": 500})
    client.zadd(shards[4][0], {"b": 90, "c": 95})
    taken = leases.claim_shards(shards, now=200, lease_s=30, count=10)
    assert sorted(taken) == [(1, "a"), (4, "b"), (4, "c")]
    assert leases.claim_shards(shards, now=200, lease_s=30, count=10) == []  # leased: not due again
    assert leases.claim_shards(shards, now=231, lease_s=30, count=10, start=4) == [(4, "b"), (4, "c"), (1, "a")]
    assert client.zscore(shards[1][0], "later") == 500  # not due yet: still in its index


def test_a_claim_over_shards_keeps_to_its_count_and_to_each_shards_share(client: Any, tenant: str) -> None:
    shards = shards_of(tenant, 3)
    leases = Leases(client)
    for index, _ in shards:
        client.zadd(index, {f"{index}-{i}": i for i in range(5)})
    first = leases.claim_shards(shards, now=10, lease_s=30, count=4, per_shard=2)
    assert [shard for shard, _ in first] == [0, 0, 1, 1]
    rest = leases.claim_shards(shards, now=10, lease_s=30, count=100, start=2)
    assert [shard for shard, _ in rest] == [2] * 5 + [0] * 3 + [1] * 3
    assert len({member for _, member in first + rest}) == 15


def test_a_poll_over_shards_with_nothing_due_runs_no_claim_script(client: Any, tenant: str) -> None:
    shards = shards_of(tenant, 8)
    leases = Leases(client)
    client.zadd(shards[2][0], {"soon": 1_000})
    for index, leased in shards:  # the script loaded on every node first: redis-py's NOSCRIPT retry is an EVALSHA too
        assert leases.claim(index, leased, now=0, lease_s=30, count=1) == []
    before = scripts_run(client)
    for now in range(10):
        assert leases.claim_shards(shards, now=now, lease_s=30, count=50) == []
    assert scripts_run(client) == before
    assert leases.claim_shards(shards, now=1_000, lease_s=30, count=50) == [(2, "soon")]
    assert scripts_run(client) == before + 1
