"""A bot worker leaves a Redis node that is down alone as a whole (issue 28: bot matches on healthy primaries
must not stall during a failover). Every try at a dead node costs the job loop time (a connect or a name
lookup that times out, the cluster client's re-read of its slot table; py-spy showed both workers of the
compose stack spending a failover there). One failure now marks the node down: every job stream it serves,
and every job of a match on it, waits untried; a watcher thread, not the job loop, finds it up again.

Real clusters and the worker's own ``run_once``/``watch``: what is checked is what the worker did (which
streams rest, a job back for later with no attempt made, the node cleared once a replica serves its slots),
never a stopwatch.
"""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path

import orjson

from services.bots import worker as bots
from services.core.match.bots_seam import BOT_JOB_STREAMS, bot_jobs_stream
from services.core.record.store import keys
from tooling.rediscluster import LocalCluster


def test_one_failure_rests_the_whole_node_its_streams_and_its_matches_jobs_wait_untried() -> None:
    with tempfile.TemporaryDirectory() as data:
        cluster = LocalCluster(3, 0, Path(data), node_timeout_ms=2000, require_full_coverage=False).start()
        try:
            # (no rules service: no job here gets as far as a move)
            worker = bots.Worker(cluster.url, "127.0.0.1:9", name="rests", claim_idle_ms=600_000)
            victim = cluster.node_for(BOT_JOB_STREAMS[0])  # the first stream a sweep reads is on it

            def on_victim(key: str) -> bool:
                return cluster.node_for(key).port == victim.port

            victim_streams = {s for s in BOT_JOB_STREAMS if on_victim(s)}
            assert 1 < len(victim_streams) < len(BOT_JOB_STREAMS)
            dead_match = next(f"m{i}" for i in range(10_000) if on_victim(keys(f"m{i}")[0]))
            elsewhere = next(s for s in BOT_JOB_STREAMS if not on_victim(s))
            worker.redis.xadd(elsewhere, {"job": orjson.dumps({"match_id": dead_match, "game": "clash",
                                                               "version": 3, "seat": 1})})
            cluster.kill(victim)

            for _ in range(50):  # a sweep or two; bounded, whatever the machine's speed
                worker.run_once(block_ms=1)
                if worker.later:
                    break
            assert [(orjson.loads(e.fields[b"job"])["match_id"], e.attempts) for e in worker.later] == [
                (dead_match, 0)]  # back for later with no attempt made: its node was already resting
            assert victim_streams <= set(worker._resting)
            assert f"127.0.0.1:{victim.port}" in worker._down  # (no watcher runs here: it stays down)
            assert worker.metrics.jobs.labels("postponed")._value.get() == 0
        finally:
            cluster.stop()


def test_the_watcher_not_the_job_loop_finds_the_node_up_again_once_a_replica_serves_its_slots() -> None:
    """Marked down, a node stays down for the job loop until the watcher thread sees its slots served by the
    promoted replica; then its streams are read again (now on the replica). The job loop never waited on it."""
    with tempfile.TemporaryDirectory() as data:
        cluster = LocalCluster(3, 1, Path(data), node_timeout_ms=1500).start()
        try:
            cluster.wait_healthy(replicas=1)
            worker = bots.Worker(cluster.url, "127.0.0.1:9", name="watch", claim_idle_ms=600_000)
            victim = cluster.node_for(BOT_JOB_STREAMS[0])
            name = f"127.0.0.1:{victim.port}"
            cluster.kill(victim)
            for _ in range(50):
                worker.run_once(block_ms=1)
                if name in worker._down:
                    break
            assert name in worker._down and not worker._awake(BOT_JOB_STREAMS[0], float("inf"))
            watcher = threading.Thread(target=worker.watch, daemon=True)
            watcher.start()
            try:
                give_up = time.monotonic() + 120  # a failure detector, not a measurement
                while name in worker._down:
                    assert time.monotonic() < give_up, "the watcher never found the slots served again"
                    time.sleep(0.1)
                served_by = worker._node(worker.jobs, BOT_JOB_STREAMS[0])
                assert served_by != name and served_by not in worker._down
                assert worker._awake(BOT_JOB_STREAMS[0], float("inf"))
            finally:
                worker.stopping.set()
                watcher.join(30)
        finally:
            cluster.stop()


def test_a_tenants_match_on_a_healthy_primary_is_played_while_another_primary_is_down() -> None:
    """A tenant's bot match whose keys and job stream are on healthy primaries goes on while another primary
    is down: its commit's webhook outbox mark is in the match's own slot (``services/core/tenancy/webhooks.py``), so
    neither the worker's checks nor the commit need the dead node. (It used to be the mark's shard on any
    primary: the worker had to leave such matches untried for the whole failover.)"""
    from services.core.config import Config
    from services.core.match.creator import new_match
    from services.core.meta import Seat
    from services.core.service import Core
    from services.core.tenancy import tenants, webhooks
    from services.rules.server import serve, shutdown
    from tooling.stack import free_port

    with tempfile.TemporaryDirectory() as data:
        cluster = LocalCluster(3, 0, Path(data), node_timeout_ms=2000, require_full_coverage=False).start()
        rules_port = free_port()
        server, _ = serve(f"127.0.0.1:{rules_port}")
        try:
            core = Core.connect(Config(redis_url=cluster.url, rules_addr=f"127.0.0.1:{rules_port}"))
            victim = cluster.node_for(BOT_JOB_STREAMS[0])

            def on_victim(key: str) -> bool:
                return cluster.node_for(key).port == victim.port

            # (and whose mark, where gateways used to put it, would be on the dead node)
            match_id = next(f"t{i}" for i in range(100_000)
                            if not on_victim(keys(f"t{i}")[0]) and not on_victim(bot_jobs_stream(f"t{i}"))
                            and on_victim(webhooks.legacy_pending_key(webhooks.shard_of(f"t{i}"))))
            key, _ = tenants.create_key(core.redis, "acme")
            tenant = tenants.lookup(core.redis, key)
            bot = Seat(kind="bot", level="novice")
            match = new_match(core, "clash", 2, {"match": "single"}, 7, [bot, bot], tenant=tenant,
                              match_id=match_id)
            assert match.meta.tenant == "acme"
            worker = bots.Worker(cluster.url, f"127.0.0.1:{rules_port}", name="marks", claim_idle_ms=600_000)
            cluster.kill(victim)

            for _ in range(50):
                worker.run_once(block_ms=1)
                if int(core.redis.get(keys(match_id)[0])) > match.version:
                    break
            assert int(core.redis.get(keys(match_id)[0])) > match.version  # a bot move committed
            assert core.redis.zscore(webhooks.mark_key(match_id), match_id) is not None  # its outbox marked
            assert match_id not in [orjson.loads(e.fields[b"job"])["match_id"] for e in worker.later]
        finally:
            shutdown(server, grace=0.2)
            cluster.stop()
