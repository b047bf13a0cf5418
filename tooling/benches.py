"""``meeple bench``: every benchmark's subcommand (speed targets are measured here, not in tests)."""

from __future__ import annotations

from typing import Any

from tooling import (
    bench,
    bench_floor,
    bench_grpc,
    bench_idle,
    bench_leaderboard,
    bench_peers,
    bench_servers,
    bench_waiters,
)


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("bench", help="benchmarks (speed targets are measured here, not in tests)")
    kinds = parser.add_subparsers(dest="bench", required=True)
    bench.add_parser(kinds)
    bench_waiters.add_parser(kinds)
    bench_leaderboard.add_parser(kinds)
    bench_floor.add_parser(kinds)
    bench_idle.add_parser(kinds)
    bench_peers.add_parser(kinds)
    bench_grpc.add_parser(kinds)
    bench_servers.add_parser(kinds)
