"""``meeple bench idle``: what the whole stack costs while nobody plays.

It boots the stack as ``make run`` does (embedded Redis, the rules service, the gateway's gunicorn workers, a
bot worker, the timekeeper and the webhook worker) on free loopback ports, waits ``--warmup`` seconds for
everything to settle, and reads each process's CPU over ``--seconds``: percent of one core, by process, and in
all. Nothing is sent to it, so what it spends is its own polling -- the timekeeper's clocks, tournaments and
season ends, the webhook worker's scan of the pending sets and its deliveries, the bot worker's stream reads,
and Redis answering them all -- which a busy stack pays too, beside its moves.

    meeple bench idle [--seconds 30] [--warmup 10] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from tooling.stack import Stack, StackConfig


def measure(seconds: float, warmup: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="meeple-bench-idle-") as tmp:
        stack = Stack(StackConfig(http_port=0, rules_port=0, use_env_redis=False, data_dir=Path(tmp),
                                  log_dir=Path(tmp) / "logs"))
        try:
            stack.start()
            time.sleep(warmup)
            before, began = stack.cpu_seconds(), time.monotonic()
            time.sleep(seconds)
            after, elapsed = stack.cpu_seconds(), time.monotonic() - began
            failed = stack.failed()
        finally:
            with contextlib.suppress(Exception):
                stack.stop()
    if failed:
        raise RuntimeError(f"the stack failed while measured: {failed}")
    pct = {name: round((after[name] - before.get(name, 0.0)) / elapsed * 100, 2) for name in after}
    return {"seconds": round(elapsed, 1), "warmup_s": warmup, "cpu_pct_of_one_core": pct,
            "total_cpu_pct_of_one_core": round(sum(pct.values()), 2)}


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("idle", help="the CPU the whole stack spends while nobody plays",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0, help="how long to measure")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds after start-up before measuring")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = measure(args.seconds, args.warmup)
    if args.json:
        print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
        return 0
    for name, pct in report["cpu_pct_of_one_core"].items():
        print(f"{name:>12}: {pct:6.2f}% of one core")
    print(f"{'in all':>12}: {report['total_cpu_pct_of_one_core']:6.2f}% of one core over {report['seconds']} s")
    return 0
