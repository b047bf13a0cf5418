"""Bots ride out a failover (issue 28): a bot worker holding a job whose match's primary is down puts it back
for later and plays the other matches' jobs meanwhile, instead of waiting out the failover with every bot match
stalled behind it.

The cluster here serves the slots of its live nodes while one is down (``cluster-require-full-coverage no``)
and has no replica to promote, so the primary stays down for as long as the test needs: what is checked is an
order of events (healthy matches advance *while* the dead match's job waits in the worker's retry list), never
a stopwatch.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from services import redisconn
from services.core.config import Config
from services.core.match.bots_seam import BOT_JOB_STREAMS, bot_jobs_stream
from services.core.match.creator import new_match
from services.core.meta import Seat
from services.core.record.store import keys
from services.core.service import Core
from tooling.rediscluster import LocalCluster

from .conftest import RulesProcess, bot_worker_thread

BOTS = [Seat(kind="bot", level="novice")] * 2


def wait_for(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    give_up = time.monotonic() + timeout  # a failure detector, not a measurement
    while not check():
        assert time.monotonic() < give_up, f"gave up waiting for {what}"
        time.sleep(0.05)


def test_a_bot_worker_plays_other_matches_while_one_matchs_primary_is_down(rules: RulesProcess) -> None:
    with tempfile.TemporaryDirectory() as data:
        cluster = LocalCluster(3, 0, Path(data), node_timeout_ms=2000, require_full_coverage=False).start()
        try:
            url = cluster.url
            core = Core.connect(Config(redis_url=url, rules_addr=f"127.0.0.1:{rules.port}"))
            victim = cluster.primary_nodes()[0]

            def on_victim(key: str) -> bool:
                return cluster.node_for(key).port == victim.port

            made = [new_match(core, "clash", 2, {"match": "best_of_3"}, seed, list(BOTS)) for seed in range(30)]
            dead = [m for m in made if on_victim(keys(m.id)[0])]
            healthy = [m.id for m in made if not on_victim(keys(m.id)[0]) and not on_victim(bot_jobs_stream(m.id))]
            assert dead and healthy, "the matches should fall on every primary"
            # A job whose match's primary dies after it was queued (a job stream's shard can straddle two
            # primaries, and a job may be queued just before the kill): in a stream the worker can read.
            elsewhere = next(s for s in BOT_JOB_STREAMS if not on_victim(s))
            core.redis.xadd(elsewhere, {"job": orjson.dumps({"match_id": dead[0].id, "game": "clash",
                                                             "version": dead[0].version, "seat": 0})})
            victim_streams = {stream for stream in BOT_JOB_STREAMS if on_victim(stream)}
            victim.client().execute_command("SAVE")  # its matches come back when it restarts
            cluster.kill(victim)

            with bot_worker_thread(cluster.url, rules.port, "failover", join_s=30) as worker:
                def versions(ids: list[str]) -> dict[str, int]:
                    return {i: int(core.redis.get(keys(i)[0]) or 0) for i in ids}

                start = versions(healthy)
                wait_for(lambda: worker.later != [], "a dead match's job put back for later")
                wait_for(lambda: sum(v - start[i] for i, v in versions(healthy).items()) >= 3 * len(healthy),
                         "the healthy matches to advance")
                # ... while the dead match's job waits for its primary, which is still down, and the streams on
                # that primary are left alone instead of being waited on
                assert dead[0].id in {orjson_match(e.fields) for e in worker.later}
                assert victim.proc is not None and victim.proc.poll() is not None
                assert victim_streams & set(worker._resting)
                cluster.restart(victim)
                cluster.wait_healthy()
                redisconn.refresh(core.redis)
                wait_for(lambda: all(int(core.redis.get(keys(m.id)[0]) or 0) > 0 for m in dead),
                         "the dead matches to advance once their primary is back")
        finally:
            cluster.stop()


def orjson_match(fields: dict[bytes, bytes]) -> str:
    return str(orjson.loads(fields[b"job"])["match_id"])
