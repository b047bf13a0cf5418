"""A bot worker rests a Redis node that is down as a whole (issue 28: bot matches on healthy primaries must not
stall during a failover). Every command that reaches a dead node costs the cluster client a re-read of the
slot table; tried once per stream and once per job of each of its matches, that ate the time the healthy
matches' jobs needed on a busy machine. One failure now rests the node: every job stream it serves, and every
job of a match on it, waits untried until the rest is over.

A real 3-primary cluster that serves the live nodes' slots while one is down, and the worker's own
``run_once``: what is checked is what the worker did (which streams rest, a job back for later with no attempt
made), never a stopwatch; the rest is made long so that nothing here depends on the machine's speed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
import pytest

from services.bots import worker as bots
from services.core.bots_seam import BOT_JOB_STREAMS
from services.core.store import keys
from services.rediscluster import LocalCluster


def test_one_failure_rests_the_whole_node_its_streams_and_its_matches_jobs_wait_untried(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bots, "STREAM_REST_S", 600.0)
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
            assert f"127.0.0.1:{victim.port}" in worker._down
            assert worker.metrics.jobs.labels("postponed")._value.get() == 0
        finally:
            cluster.stop()
