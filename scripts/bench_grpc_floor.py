"""What a move's hops cost by themselves: the figures behind "the waits alone are past the target" (benchmarks).

    .venv/bin/python scripts/bench_grpc_floor.py io      [--calls 5000] [--json]
    .venv/bin/python scripts/bench_grpc_floor.py unary   [--calls 3000] [--json]
    .venv/bin/python scripts/bench_grpc_floor.py rules   [--games 4] [--max-moves 120] [--json]

``io``: from one plain Python process, the client's CPU and wall time per redis-py ``GET`` and ``SET`` (a real
``redis-server``) and per empty grpcio unary call (``Health.Check`` on a real rules server).

``unary``: a grpcio threaded server of raw-bytes handlers, one process per variant in turn, and the server's and
the client's CPU per call: replies of 0 B, 10 KB and 44 KB (a move's request carries about 8 KB); channel and
server options (``grpc.optimization_target=latency``, the proxy lookup off, BDP probing off, one pool thread,
``GRPC_POLL_STRATEGY=poll``); and a handler that burns 150 or 400 µs of Python before it answers.

``rules``: the rules server's CPU per ``ApplyMove`` (describe and derive, sealed, recorded random games of every
game) over gRPC, as deployed (``python -m services.rules.server``), with ``gc.freeze()`` after start-up, with the
collector off, and inline on a ``grpc.aio`` server's event loop (no thread pool); beside it the same requests
through the servicer in this process (protobuf parsing and serialising included), the handler's own cost.

CPU is each process's threads' ``schedstat`` read around each call. Every process started is stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import services  # noqa: F401, I001  (before grpc: it sets the grpcio experiments every process runs with)

import grpc
import orjson
import redis
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parent.parent

from services.pb import rules_pb2, rules_pb2_grpc  # noqa: E402
from services.rules.games import GAMES  # noqa: E402
from services.rules.seal import ENV_VAR, new_key_spec  # noqa: E402
from tooling.bench_floor import Procs, cpu_s  # noqa: E402
from tooling.bench_rules import record_games  # noqa: E402
from tooling.stack import free_port, grpc_serving, port_open, redis_server_binary, wait_until  # noqa: E402

#: A raw-bytes unary server: ``python -c UNARY_SERVER port reply_bytes burn_us options_json``.
UNARY_SERVER = """
import json, sys, time
from concurrent import futures
import grpc
port, size, burn = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1e6
options, workers = json.loads(sys.argv[4]), int(sys.argv[5])
blob = b"x" * size
def echo(request, context):
    end = time.perf_counter() + burn
    while time.perf_counter() < end:
        pass
    return blob
handler = grpc.method_handlers_generic_handler("bench.Floor", {"Echo": grpc.unary_unary_rpc_method_handler(echo)})
server = grpc.server(futures.ThreadPoolExecutor(workers), options=[tuple(o) for o in options])
server.add_generic_rpc_handlers((handler,))
server.add_insecure_port(f"127.0.0.1:{port}")
server.start()
server.wait_for_termination()
"""

#: The rules server with the collector changed (``freeze`` or ``off``) before it serves.
GC_SERVER = """
import gc, sys
from services.rules import server
gc.collect()
gc.freeze() if sys.argv[1] == "freeze" else gc.disable()
raise SystemExit(server.main(sys.argv[2:]))
"""

#: The servicer's methods run inline on a ``grpc.aio`` event loop (no thread pool between the call and them).
AIO_INLINE_SERVER = """
import asyncio, sys
import grpc
from grpc_health.v1 import health, health_pb2_grpc
from services.pb import rules_pb2_grpc
from services.rules.seal import Sealer
from services.rules.server import RulesMetrics, RulesServicer

class Inline(rules_pb2_grpc.RulesServicer):
    def __init__(self, inner):
        self.inner = inner
    async def NewGame(self, request, context):
        return self.inner.NewGame(request, context)
    async def ApplyMove(self, request, context):
        return self.inner.ApplyMove(request, context)

async def main(port):
    server = grpc.aio.server()
    rules_pb2_grpc.add_RulesServicer_to_server(Inline(RulesServicer(RulesMetrics(), Sealer.from_env())), server)
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()

asyncio.run(main(int(sys.argv[1])))
"""


@contextmanager
def started(argv: list[str], env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """One server process for the ``with`` block (``bench floor``'s :class:`Procs`: its own session, stopped after)."""
    procs = Procs()
    try:
        yield procs.spawn(argv, ROOT, {**os.environ, **(env or {})})
    finally:
        procs.stop()


def per_call(call: Callable[[], Any], calls: int, server_pid: int | None = None) -> dict[str, float]:
    """µs per call: the client's CPU (this process), the server's CPU (if given) and the wall time (p50)."""
    for _ in range(min(300, calls)):
        call()
    walls = []
    client, server = 0.0, 0.0
    for _ in range(calls):
        before = cpu_s(server_pid) if server_pid else 0.0
        cpu, start = time.process_time(), time.perf_counter()
        call()
        walls.append(time.perf_counter() - start)
        client += time.process_time() - cpu
        if server_pid:
            server += cpu_s(server_pid) - before
    walls.sort()
    out = {"client_cpu_us": round(client / calls * 1e6, 1), "wall_p50_us": round(walls[calls // 2] * 1e6, 1)}
    if server_pid:
        out["server_cpu_us"] = round(server / calls * 1e6, 1)
    return out


def rules_server(extra: list[str] | None = None, argv: list[str] | None = None) -> tuple[list[str], int]:
    port = free_port()
    base = argv or [sys.executable, "-m", "services.rules.server"]
    return [*base, *(extra or []), "--host", "127.0.0.1", "--port", str(port), "--metrics-port", "0"], port


def bench_io(calls: int) -> dict[str, Any]:
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        argv, rules_port = rules_server()
        with started([redis_server_binary(), "--bind", "127.0.0.1", "--port", str(port), "--dir", data,
                      "--save", ""]) as redis_proc, started(argv) as rules_proc:
            wait_until(lambda: port_open(port), "redis", redis_proc)
            wait_until(lambda: grpc_serving(f"127.0.0.1:{rules_port}"), "rules service", rules_proc, 60)
            client = redis.Redis(port=port)
            with grpc.insecure_channel(f"127.0.0.1:{rules_port}") as channel:
                health = health_pb2_grpc.HealthStub(channel)
                return {"redis_get": per_call(lambda: client.get("bench:floor"), calls),
                        "redis_set": per_call(lambda: client.set("bench:floor", b"12"), calls),
                        "grpc_empty_call": per_call(lambda: health.Check(health_pb2.HealthCheckRequest(), timeout=5),
                                                    calls, rules_proc.pid)}


UNARY_VARIANTS: list[tuple[str, int, int, list[tuple[str, Any]], dict[str, str], int]] = [
    # name, reply bytes, burn µs, channel and server options, environment, pool threads
    ("0 B reply", 0, 0, [], {}, 8),
    ("10 KB reply", 10_000, 0, [], {}, 8),
    ("44 KB reply", 44_000, 0, [], {}, 8),
    ("44 KB, optimization_target=latency", 44_000, 0, [("grpc.optimization_target", "latency")], {}, 8),
    ("44 KB, proxy lookup off", 44_000, 0, [("grpc.enable_http_proxy", 0)], {}, 8),
    ("44 KB, BDP probe off", 44_000, 0, [("grpc.http2.bdp_probe", 0)], {}, 8),
    ("44 KB, one pool thread", 44_000, 0, [], {}, 1),
    ("44 KB, GRPC_POLL_STRATEGY=poll", 44_000, 0, [], {"GRPC_POLL_STRATEGY": "poll"}, 8),
    ("10 KB, handler burns 150 µs", 10_000, 150, [], {}, 8),
    ("10 KB, handler burns 400 µs", 10_000, 400, [], {}, 8),
]


def bench_unary(calls: int) -> dict[str, Any]:
    report = {}
    request = b"y" * 8000
    for name, size, burn, options, env, workers in UNARY_VARIANTS:
        port = free_port()
        with started([sys.executable, "-c", UNARY_SERVER, str(port), str(size), str(burn), json.dumps(options),
                      str(workers)], env) as proc, grpc.insecure_channel(f"127.0.0.1:{port}", options=options) as ch:
            grpc.channel_ready_future(ch).result(timeout=30)
            echo = ch.unary_unary("/bench.Floor/Echo", None, None)  # raw bytes both ways

            def one(call: Any = echo) -> Any:
                return call(request, timeout=5)

            report[name] = per_call(one, calls, proc.pid)
    return report


def recorded_requests(games: int, max_moves: int) -> list[tuple[rules_pb2.NewGameRequest, list[tuple[int, str]]]]:
    out = []
    for game in GAMES.values():
        for players, seed, moves in record_games(game, games, max_moves):
            out.append((rules_pb2.NewGameRequest(game=game.id, players=players, seed=seed, derive=True),
                        [(seat, orjson.dumps(move).decode()) for seat, move in moves]))
    return out


def replay(new_game: Callable[[Any], Any], apply_move: Callable[[Any], Any], games: list[Any],
           around: Callable[[], float]) -> dict[str, float]:
    """µs per ApplyMove by game: ``around()`` read before and after each call (a CPU clock)."""
    spent: dict[str, list[float]] = {}
    for request, moves in games:
        reply = new_game(request)
        for seat, move_json in moves:
            move = rules_pb2.ApplyMoveRequest(game=request.game, state=reply.state, seat=seat, move_json=move_json,
                                              derive=True, describe=True)
            before = around()
            reply = apply_move(move)
            spent.setdefault(request.game, []).append(around() - before)
    return {game: round(sum(s) / len(s) * 1e6, 1) for game, s in spent.items()}


class _Context:
    """Enough of a servicer context for calls that succeed."""

    def set_trailing_metadata(self, metadata: Any) -> None:
        pass

    def abort(self, code: Any, message: str) -> None:
        raise RuntimeError(message)


def bench_rules(games: int, max_moves: int) -> dict[str, Any]:
    from services.rules.seal import Sealer
    from services.rules.server import RulesMetrics, RulesServicer

    recorded = recorded_requests(games, max_moves)
    key = new_key_spec("floor")
    variants = {"deployed (threaded)": rules_server(),
                "gc.freeze() after start-up": rules_server(["freeze"], [sys.executable, "-c", GC_SERVER]),
                "collector off": rules_server(["off"], [sys.executable, "-c", GC_SERVER])}
    report: dict[str, Any] = {}
    for name, (argv, port) in variants.items():
        with started(argv, {ENV_VAR: key}) as proc:
            wait_until(lambda p=port: grpc_serving(f"127.0.0.1:{p}"), "rules service", proc, 60)
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = rules_pb2_grpc.RulesStub(channel)
                report[name] = replay(stub.NewGame, stub.ApplyMove, recorded, partial(cpu_s, proc.pid))
    port = free_port()
    with started([sys.executable, "-c", AIO_INLINE_SERVER, str(port)], {ENV_VAR: key}) as proc:
        wait_until(lambda: grpc_serving(f"127.0.0.1:{port}"), "rules service (aio)", proc, 60)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = rules_pb2_grpc.RulesStub(channel)
            report["inline on grpc.aio"] = replay(stub.NewGame, stub.ApplyMove, recorded, partial(cpu_s, proc.pid))
    servicer, context = RulesServicer(RulesMetrics(), Sealer.from_spec(key)), cast(grpc.ServicerContext, _Context())

    def in_process(request: Any) -> Any:
        parsed = rules_pb2.ApplyMoveRequest.FromString(request.SerializeToString())
        return rules_pb2.GameState.FromString(servicer.ApplyMove(parsed, context).SerializeToString())

    report["handler in this process"] = replay(lambda r: servicer.NewGame(r, context), in_process, recorded,
                                               time.process_time)
    report["moves_per_game"] = {request.game: 0 for request, _ in recorded}
    for request, moves in recorded:
        report["moves_per_game"][request.game] += len(moves)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("what", choices=("io", "unary", "rules"))
    parser.add_argument("--calls", type=int, default=0, help="calls per figure (io: 5000, unary: 3000)")
    parser.add_argument("--games", type=int, default=4, help="rules: recorded games per game")
    parser.add_argument("--max-moves", type=int, default=120, help="rules: moves recorded per game at most")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.what == "io":
        report = bench_io(args.calls or 5000)
    elif args.what == "unary":
        report = bench_unary(args.calls or 3000)
    else:
        report = bench_rules(args.games, args.max_moves)
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for name, figures in report.items():
        print(f"{name:40s} " + "  ".join(f"{k} {v}" for k, v in (figures.items() if isinstance(figures, dict)
                                                                 else [("", figures)])))
    print("µs per call" if args.what != "rules" else "server CPU µs per ApplyMove, by game")


if __name__ == "__main__":
    main()
