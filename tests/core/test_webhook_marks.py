"""Where a tenant match's commit marks its webhook outbox pending (issue 28): in the pending set of the match's
own Cluster slot, so a commit on a healthy primary never needs another one; and the webhook worker still finds
every mark, whatever its slot, on one server and on a real 3-primary cluster. (With a primary down:
``tests/deploy/test_failover_server_findings.py``.)"""

from __future__ import annotations

import itertools
import time
from typing import Any

from services import redisconn
from services.core.record.store import keys
from services.core.tenancy import webhooks
from services.webhooks.worker import WebhookWorker

_runs = itertools.count()


def test_a_mark_is_in_its_matchs_own_slot(tenant: str) -> None:
    for i in range(500):
        match_id = f"{tenant}-m{i}"
        assert redisconn.slot_of(webhooks.mark_key(match_id)) == redisconn.slot_of(keys(match_id)[0])


def test_the_worker_finds_every_mark_whatever_its_slot_and_the_legacy_shards(redis_url: str, client: Any,
                                                                             tenant: str) -> None:
    run = f"{tenant}-{next(_runs)}"
    ids = [f"{run}-m{i}" for i in range(300)]
    for match_id in ids:
        webhooks.mark(client, match_id)
    old = [f"{run}-old{i}" for i in range(20)]  # marked by a gateway of the release before
    for match_id in old:
        client.zadd(webhooks.legacy_pending_key(webhooks.shard_of(match_id)), {match_id: 1.0})
    found = {(key, member.decode()) for key, marks in WebhookWorker(redis_url).marked() for member, _ in marks}
    assert {(webhooks.mark_key(m), m) for m in ids} <= found
    assert {(webhooks.legacy_pending_key(webhooks.shard_of(m)), m) for m in old} <= found
    if redisconn.is_cluster(client):  # (the marks were on every primary)
        assert len({client.get_node_from_key(webhooks.mark_key(m)).name for m in ids}) == 3
    for match_id in ids:
        client.zrem(webhooks.mark_key(match_id), match_id)
    for match_id in old:
        client.zrem(webhooks.legacy_pending_key(webhooks.shard_of(match_id)), match_id)


def test_between_full_scans_a_pump_reads_the_sets_that_held_marks_and_a_new_slots_mark_waits(
        redis_url: str, client: Any, tenant: str) -> None:
    """The scan of every slot runs at most every ``scan_every_s``; a pump in between reads only the sets the last
    reads found marks in (an active match's next events go out at once) and the legacy shards. What a pump
    read shows in what it unmarks: a drained mark past the grace."""
    run = f"{tenant}-{next(_runs)}"
    active = f"{run}-active"
    other = next(f"{run}-other{i}" for i in range(1000)
                 if redisconn.slot_of(webhooks.mark_key(f"{run}-other{i}")) != redisconn.slot_of(
                     webhooks.mark_key(active)))
    worker = WebhookWorker(redis_url, scan_every_s=3600.0)
    now = time.time()
    webhooks.mark(client, active)  # fresh: kept
    worker.pump(now)  # the first pump scans every slot
    old = {webhooks.mark_key(active): f"{run}-old-in-active-set", webhooks.mark_key(other): other}
    for key, member in old.items():
        client.zadd(key, {member: 1.0})  # drained long ago: unmarked by the next pump that reads it
    worker.pump(now)
    assert client.zscore(webhooks.mark_key(active), old[webhooks.mark_key(active)]) is None  # read
    assert client.zscore(webhooks.mark_key(other), other) is not None  # not read yet
    worker.scan_every_s = 0.0
    worker.pump(now)
    assert client.zscore(webhooks.mark_key(other), other) is None  # the next full scan found it
    client.zrem(webhooks.mark_key(active), active)
