"""A gateway's API key cache (``services/core/tenancy/tenants.py``, "Key cache"): it spares a tenant's every request the
read of its key's record, which on a Redis Cluster lives on one primary unrelated to the match (issue 28), and
must still let a revocation through within its TTL. The cache's clock is the test's own: what is checked is
what a lookup answers at each age of the record, never a stopwatch. (Reads that fail while a primary is down:
``tests/deploy/test_failover_server_findings.py``, on a cluster with a node killed.)"""

from __future__ import annotations

from typing import Any

from services.core.tenancy import tenants


class Clock:
    """The cache's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_revoked_key_is_refused_once_the_cached_record_is_older_than_the_ttl(client: Any, tenant: str) -> None:
    """The documented window: a revocation reaches a gateway that read the key before within ``ttl_s``."""
    clock = Clock()
    cache = tenants.KeyCache(ttl_s=5.0, stale_s=60.0, clock=clock)
    key, record = tenants.create_key(client, tenant)
    assert tenants.lookup(client, key, cache) is not None
    tenants.revoke(client, record["key_id"])  # (another process: the operator's CLI)
    assert tenants.lookup(client, key, None) is None  # uncached: at once
    clock.now += 4.9
    assert tenants.lookup(client, key, cache) is not None  # the cached record, within its TTL
    clock.now += 0.1
    assert tenants.lookup(client, key, cache) is None  # read again: revoked
    clock.now += 100.0
    assert tenants.lookup(client, key, cache) is None  # and the revoked record stays refused


def test_a_quota_change_reaches_a_cached_key_after_the_ttl(client: Any, tenant: str) -> None:
    clock = Clock()
    cache = tenants.KeyCache(ttl_s=5.0, clock=clock)
    key, _ = tenants.create_key(client, tenant, {"rpm": 100})
    assert tenants.lookup(client, key, cache).quotas["rpm"] == 100  # type: ignore[union-attr]
    tenants.create_key(client, tenant, {"rpm": 7})
    assert tenants.lookup(client, key, cache).quotas["rpm"] == 100  # type: ignore[union-attr]
    clock.now += 5.0
    assert tenants.lookup(client, key, cache).quotas["rpm"] == 7  # type: ignore[union-attr]


def test_a_cached_key_id_with_another_secret_is_refused(client: Any, tenant: str) -> None:
    """The cache is keyed by key id: the secret is still checked against the record on every lookup."""
    cache = tenants.KeyCache(clock=Clock())
    key, _ = tenants.create_key(client, tenant)
    assert tenants.lookup(client, key, cache) is not None
    forged = key.rpartition(".")[0] + ".not-the-secret"
    assert tenants.lookup(client, forged, cache) is None


def test_an_unknown_key_is_never_kept_and_the_cache_is_bounded(client: Any, tenant: str) -> None:
    """Made-up key ids (guessing) cannot fill a gateway's memory; the least recently used key goes first."""
    clock = Clock()
    cache = tenants.KeyCache(size=2, clock=clock)
    for i in range(5):
        assert tenants.lookup(client, f"mk_{i:012x}.madeup", cache) is None
    assert cache.get(f"{0:012x}") is None
    made = [tenants.create_key(client, tenant) for _ in range(3)]
    for key, _ in made:
        assert tenants.lookup(client, key, cache) is not None
    assert [cache.get(r["key_id"]) is not None for _, r in made] == [False, True, True]


def test_a_ttl_of_zero_reads_the_record_on_every_lookup(client: Any, tenant: str) -> None:
    """``MEEPLE_KEY_CACHE_S=0``: a revocation takes effect on the next request."""
    cache = tenants.KeyCache(ttl_s=0.0, clock=Clock())
    key, record = tenants.create_key(client, tenant)
    assert tenants.lookup(client, key, cache) is not None
    tenants.revoke(client, record["key_id"])
    assert tenants.lookup(client, key, cache) is None
