"""What made matches on healthy primaries wait while one Redis primary fails over (issue 28), found with
py-spy in the compose stack's gateways during a primary kill: request threads held for the whole failover in
``tenants.lookup`` (every request with an API key read the key's record, ``apikey:{<id>}``: one slot, so
one primary) and in ``webhooks.mark`` (every commit of a tenant's match first marked its outbox pending in
``{webhooks:<crc32 % 16>}:pending``: a shard unrelated to the match's slot, on any primary). Bot workers
no longer wait there (they leave such jobs for later), but people's requests did, and a person's move is
half of every bot match.

Both were pinned here as strict expected failures, and are fixed in ``services/core``: a gateway's key cache
serves a key read before while its primary is down (bounded), and the mark is in the match's own slot. Each
test runs on a real cluster with one primary down (its slots not taken over, so the node stays down for as
long as the test needs), read with a client that fails at once instead of waiting out the failover.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from services import redisconn
from services.core.record.store import keys
from services.core.tenancy import tenants, webhooks
from services.webhooks.worker import WebhookWorker
from tooling.rediscluster import LocalCluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with tempfile.TemporaryDirectory() as data:
        cluster = LocalCluster(3, 0, Path(data), node_timeout_ms=2000, require_full_coverage=False).start()
        try:
            yield cluster
        finally:
            cluster.stop()


class Clock:
    """A key cache's clock, moved by the test (no stopwatch: the record's age is what is set)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_tenants_requests_do_not_need_the_primary_holding_its_key_record(cluster: LocalCluster) -> None:
    """With the key's primary down, a gateway that read the key before keeps answering for the tenant: within
    the cache's TTL without asking Redis, past it from the record read before (the read fails at once, not
    after the failover), until the staleness bound; past that the error is the caller's (a 503)."""
    client = redisconn.connect(cluster.url, patient=False, socket_timeout=5, socket_connect_timeout=1)
    clock = Clock()
    told: list[bool] = []
    cache = tenants.KeyCache(ttl_s=5.0, stale_s=60.0, clock=clock, on_stale=lambda: told.append(True))
    key, record = tenants.create_key(client, "findings-key")
    assert tenants.lookup(client, key, cache) is not None
    holder = cluster.node_for(tenants.key_record(record["key_id"]))
    cluster.kill(holder)
    try:
        redisconn.refresh(client)
        assert tenants.lookup(client, key, cache) is not None  # fresh: Redis not asked
        clock.now += 30.0
        assert tenants.lookup(client, key, cache) is not None and cache.stale_served == 1 == len(told)  # stale
        clock.now += 35.0
        with pytest.raises(redisconn.UNAVAILABLE):  # 65 s old: past 5 s + 60 s, not served any more
            tenants.lookup(client, key, cache)
        with pytest.raises(redisconn.UNAVAILABLE):  # and a key never read before still needs its primary
            tenants.lookup(client, key, tenants.KeyCache(clock=clock))
    finally:
        cluster.restart(holder)
        cluster.wait_healthy()


def test_committing_a_tenants_match_on_a_healthy_primary_does_not_need_another_primary(
        cluster: LocalCluster) -> None:
    """The outbox mark is in the match's own slot: with a primary down, every healthy match's mark is written,
    and the webhook worker still finds those marks (it leaves the dead primary's for later)."""
    client = redisconn.connect(cluster.url, patient=False, socket_timeout=5, socket_connect_timeout=1)
    victim = cluster.primary_nodes()[0]

    def on_victim(key: str) -> bool:
        return cluster.node_for(key).port == victim.port

    healthy = [f"f{i}" for i in range(400) if not on_victim(keys(f"f{i}")[0])]
    worker = WebhookWorker(cluster.url)
    cluster.kill(victim)
    try:
        redisconn.refresh(client)
        for match_id in healthy:  # what MatchStore._compare_and_set does first for a tenant's match
            webhooks.mark(client, match_id)
        found = {member.decode() for _, marks in worker.marked() for member, _ in marks}
        assert set(healthy) <= found
    finally:
        cluster.restart(victim)
        cluster.wait_healthy()
