"""How many long-polls the gateway holds under granian's WSGI interface (issue 47, "the HTTP server").

    .venv/bin/python scripts/granian_waiters.py N [--ramp S]

Under granian the gateway cannot park a request (``can_park()`` is false), so a long-poll holds one of granian's
blocking threads until it answers. This starts Redis, the rules service and the gateway under granian with N + 16
blocking threads and a backpressure above N (``tooling/bench_servers.py``'s start-up; the per-client waiter cap
lifted), opens N long-polls (``events?after=<version>&wait=30``, nothing happens in the match) one every ``--ramp``
seconds from one asyncio client, and then reads the worker's threads, its RSS growth, its CPU over 5 s with every
poll waiting, and a status read's time on a fresh connection. Every process it started is stopped, also on
SIGTERM or Ctrl-C. Compare ``meeple bench waiters --clients N`` (the gateway's own worker: no thread per waiter).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import resource
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import services  # noqa: F401  (before grpc: it sets the grpcio experiments every process runs with)
from tooling.bench_floor import GATEWAY_ENV, Http, Player, Procs, Stack, cpu_s, start_stack
from tooling.bench_servers import granian, status_read
from tooling.stack import ROOT

WAIT_S = 30


async def long_poll(port: int, path: str, token: str, outcomes: list[str]) -> None:
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
        await writer.drain()
        line = await reader.readline()
        outcomes.append(line.split()[1].decode() if line else "closed")
        writer.close()
    except OSError as exc:
        outcomes.append(type(exc).__name__)


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0


async def measure(polls: int, ramp: float, procs: Procs, tmp: Path) -> dict[str, Any]:
    ours = start_stack(procs, "stack", ROOT, tmp)
    env = {**GATEWAY_ENV, "REDIS_URL": ours.redis_url, "MEEPLE_RULES_ADDR": ours.rules_addr,
           "MEEPLE_WAITERS_PER_CLIENT": "1000000", "GRANIAN_BACKPRESSURE": str(polls + 64)}
    port, worker = granian(procs, env, polls + 16)
    stack = Stack("granian", ROOT, ours.redis, ours.rules, worker, Http(port), ours.redis_url, ours.rules_addr)
    player = Player(stack, 1)
    player.prepare()  # a match of two human seats, and their tokens
    match = player.match
    assert match is not None
    version = stack.http.call("GET", f"/v1/matches/{match['id']}",
                              headers={"Authorization": f"Bearer {match['tokens'][0]}"})["version"]
    threads_before, rss_before = len(os.listdir(f"/proc/{worker}/task")), rss_mb(worker)
    outcomes: list[str] = []
    began = time.monotonic()
    tasks = []
    for i in range(polls):
        path = f"/v1/matches/{match['id']}/events?after={version}&wait={WAIT_S}"
        tasks.append(asyncio.create_task(long_poll(port, path, match["tokens"][i % len(match["tokens"])], outcomes)))
        await asyncio.sleep(ramp)
    await asyncio.sleep(3)
    figures: dict[str, Any] = {"long_polls": polls, "ramp_s": ramp, "opened_in_s": round(time.monotonic() - began, 1),
                               "answered_before_their_wait": dict(collections.Counter(outcomes)),
                               "worker_threads": [threads_before, len(os.listdir(f"/proc/{worker}/task"))]}
    rss = rss_mb(worker)
    figures["rss_mb_per_1000"] = round((rss - rss_before) / polls * 1000, 1)
    cpu0 = cpu_s(worker)
    await asyncio.sleep(5)
    figures["waiting_cpu_pct_of_one_core"] = round((cpu_s(worker) - cpu0) / 5 * 100, 1)
    stack.http.close()
    stack.http = Http(port)
    start = time.perf_counter()
    try:
        await asyncio.get_running_loop().run_in_executor(None, status_read(player))
        figures["status_read_ms"] = round((time.perf_counter() - start) * 1000, 1)
    except OSError as exc:
        figures["status_read_ms"] = f"failed after {(time.perf_counter() - start) * 1000:.0f} ms: {exc!r}"
    for task in tasks:
        task.cancel()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("polls", type=int)
    parser.add_argument("--ramp", type=float, default=0.005, help="seconds between two long-polls opened")
    args = parser.parse_args()
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the client's sockets, and granian's (inherited)

    def stop(*_: Any) -> None:
        raise SystemExit(1)

    signal.signal(signal.SIGTERM, stop)
    procs = Procs()
    try:
        with tempfile.TemporaryDirectory(prefix="meeple-granian-waiters-") as tmp:
            print(measure_sync(args.polls, args.ramp, procs, Path(tmp)), flush=True)
    finally:
        procs.stop()
    return 0


def measure_sync(polls: int, ramp: float, procs: Procs, tmp: Path) -> dict[str, Any]:
    return asyncio.run(measure(polls, ramp, procs, tmp))


if __name__ == "__main__":
    sys.exit(main())
