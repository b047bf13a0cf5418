"""Where a move submission's time goes: ``meeple loadtest --profile``.

A real redis-server and a real rules server (its own process, over loopback gRPC) serve the gateway app,
which runs in this process behind Flask's test client (so gunicorn's HTTP parsing is not in the figures;
the load test's ``/healthz`` baseline shows that part). Human-vs-human matches of every game are played
with random legal moves, and every ``POST /v1/matches/{id}/moves`` is measured twice over:

1. **instrumented, no profiler**: the request's wall time, the time inside the Redis client (the
   gateway's own ``meeple_redis_command_seconds``), the gRPC calls as the gateway sees them, and the
   rules server's own ``ApplyMove`` time (its ``meeple_rules_rpc_seconds``); the engine work inside that
   RPC is then timed in-process on the very same states and moves (decode, apply, encode, view, result);
2. **pyinstrument**: a sampling profile of the same loop, whose time inside the move requests is split
   by the innermost library a sample is in (Flask/Werkzeug, Redis client, gRPC, prometheus-client,
   gateway code); ``profile.html`` is the full tree;
3. **py-spy** (if installed): the same play over real HTTP against a gunicorn worker, sampling the
   worker's and the rules server's Python CPU (see :mod:`loadtests.spy`).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from services.core.config import Config
from services.core.rules_client import RulesClient
from services.gateway.app import create_app
from services.rules.games import GAMES, get_game, words
from services.rules.seal import strip as unsealed
from tooling import promtext
from tooling.stack import free_port, grpc_serving, port_open, redis_server_binary, wait_until

from .driver import Driver, post_move

#: Innermost-first: a sample belongs to the first of these its stack meets, walking from the leaf up.
CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Redis client and round trips", ("/redis/",)),
    ("gRPC call (client, wire, rules server)", ("/grpc/", "/grpc_", "services/pb/", "/google/protobuf/")),
    ("prometheus-client (metrics)", ("/prometheus_client/",)),
    ("Flask / Werkzeug (routing, request, JSON response)", ("/flask/", "/werkzeug/")),
    ("gateway code (handlers, store, moves)", ("services/gateway/",)),
)
OTHER = "other (stdlib, hashing, JSON, test client)"


@dataclass
class Sample:
    game: str
    state: bytes
    seat: int
    move: Any


@dataclass
class Timings:
    requests: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    redis_s: float = 0.0
    redis_calls: float = 0.0
    grpc_s: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    grpc_calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    samples: list[Sample] = field(default_factory=list)


@contextmanager
def instrument_rules(rules: RulesClient, timings: Timings, capture: bool) -> Iterator[None]:
    """Time every gRPC call the gateway makes (only ``ApplyMove`` is in the move request's figures: the
    driver's legal-moves call goes through here too), and keep the ApplyMove inputs for the engine replay."""
    original_call: Callable[..., Any] = rules._call
    original_apply: Callable[..., Any] = rules.apply_move

    def timed_call(method: Any, request: Any) -> Any:
        start = time.perf_counter()
        try:
            return original_call(method, request)
        finally:
            name = getattr(method, "_method", b"?")
            name = name.decode().rsplit("/", 1)[-1] if isinstance(name, bytes) else str(name)
            timings.grpc_s[name] += time.perf_counter() - start
            timings.grpc_calls[name] += 1

    def apply_move(game: str, state: bytes, seat: int, move: Any, view_seats: list[int] | None = None,
                   derive: bool = True, **options: Any) -> Any:
        if capture:
            timings.samples.append(Sample(game, state, seat, move))
        return original_apply(game, state, seat, move, view_seats, derive, **options)

    rules._call = timed_call  # type: ignore[method-assign]
    rules.apply_move = apply_move  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        rules._call = original_call  # type: ignore[method-assign]
        rules.apply_move = original_apply  # type: ignore[method-assign]


def engine_costs(samples: list[Sample], repeats: int = 3) -> dict[str, float]:
    """Mean seconds of each engine step the rules server performs for ApplyMove, timed in-process.

    Each step's time is the best of ``repeats`` runs on the same input, which filters out the other
    processes on the shared cores (the rules server's own histogram includes them).
    """
    totals: dict[str, float] = defaultdict(float)
    perf = time.perf_counter
    for sample in samples:
        game = get_game(sample.game)
        best: dict[str, float] = {}
        for _ in range(repeats):
            t0 = perf()
            move = orjson.loads(orjson.dumps(sample.move))
            state = game.decode(unsealed(sample.state))
            t1 = perf()
            game.apply_in_place(state, sample.seat, move)
            t2 = perf()
            game.encode(state)
            t3 = perf()
            for seat in (None, *range(game.seat_count(state))):  # derive: every view...
                orjson.dumps(game.view(state, seat))
            t4 = perf()
            finished = game.is_over(state)
            for seat in game.to_act(state):  # ... and the legal moves of the seats to act
                orjson.dumps(game.legal_moves(state, seat))
            orjson.dumps(words.result_document(game, state) if finished else None)
            t5 = perf()
            for name, seconds in (("decode state (+ move JSON; skipped when the replica remembers it)", t1 - t0),
                                  ("apply", t2 - t1), ("encode state", t3 - t2),
                                  ("every seat's view (+ JSON)", t4 - t3),
                                  ("legal moves of the seats to act, result", t5 - t4)):
                best[name] = min(best.get(name, seconds), seconds)
        for name, seconds in best.items():
            totals[name] += seconds
    return {name: value / max(len(samples), 1) for name, value in totals.items()}


def categorize(root: Any, marker: str) -> tuple[dict[str, float], float, int]:
    """Split the time under every ``marker`` frame by the innermost category each sample meets."""
    spent: dict[str, float] = defaultdict(float)

    def category(frame: Any, inherited: str) -> str:
        path = (frame.file_path or "").replace("\\", "/")
        for name, needles in CATEGORIES:
            if any(needle in path for needle in needles):
                return name
        return inherited

    def walk(frame: Any, inherited: str) -> None:
        mine = category(frame, inherited)
        own = frame.time - sum(child.time for child in frame.children)
        spent[mine] += own
        for child in frame.children:
            walk(child, mine)

    marked: list[Any] = []

    def find(frame: Any) -> None:
        if frame.function == marker:
            marked.append(frame)
            return
        for child in frame.children:
            find(child)

    find(root)
    for frame in marked:
        walk(frame, OTHER)
    return dict(spent), sum(frame.time for frame in marked), len(marked)


@contextmanager
def parts(workers: int = 4) -> Iterator[tuple[str, str, str, int]]:
    """A redis-server and a rules server process on free ports: (redis url, rules address, metrics url, pid)."""
    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as data:
        try:
            redis_port, rules_port, metrics_port = free_port(), free_port(), free_port()
            procs.append(subprocess.Popen([redis_server_binary(), "--port", str(redis_port), "--bind", "127.0.0.1",
                                           "--dir", data, "--save", "", "--appendonly", "no"],
                                          stdout=subprocess.DEVNULL))
            wait_until(lambda: port_open(redis_port), "redis", procs[-1])
            procs.append(subprocess.Popen([sys.executable, "-m", "services.rules.server", "--port", str(rules_port),
                                           "--metrics-port", str(metrics_port), "--workers", str(workers)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            wait_until(lambda: grpc_serving(f"127.0.0.1:{rules_port}"), "rules service", procs[-1])
            yield (f"redis://127.0.0.1:{redis_port}/0", f"127.0.0.1:{rules_port}",
                   f"http://127.0.0.1:{metrics_port}/metrics", procs[-1].pid)
        finally:
            for proc in reversed(procs):
                proc.terminate()
                proc.wait(10)


def run_profile(moves: int, out: Path, slots: int = 8) -> str:
    """Profile ``moves`` move submissions; writes ``profile.md`` and ``profile.html``; returns the markdown."""
    from pyinstrument import Profiler

    out.mkdir(parents=True, exist_ok=True)
    with parts() as (redis_url, rules_addr, rules_metrics, rules_pid):
        app = create_app(Config(redis_url=redis_url, rules_addr=rules_addr, rate_limit_per_minute=10**9))
        gw = app.extensions["meeple"]
        client = app.test_client()
        driver = Driver(client)
        for slot in range(slots):  # warm up: connections, imports, first matches
            path, token, body = driver.next_move(slot)
            driver.record(slot, post_move(client, path, token, body, f"warm-{slot}"))

        # Pass 1: instrumented, no profiler.
        timings = Timings()
        redis_hist = gw.core.metrics.redis.latency
        rules_before = promtext.scrape(rules_metrics)
        with instrument_rules(gw.core.rules, timings, capture=True):
            for n in range(moves):
                slot = n % slots
                path, token, body = driver.next_move(slot)
                redis_mid = _hist_totals(redis_hist)
                start, cpu = time.perf_counter(), time.process_time()
                reply = post_move(client, path, token, body, f"p1-{n}")
                timings.wall_s += time.perf_counter() - start
                timings.cpu_s += time.process_time() - cpu
                timings.requests += 1
                redis_after = _hist_totals(redis_hist)
                timings.redis_s += redis_after[0] - redis_mid[0]
                timings.redis_calls += redis_after[1] - redis_mid[1]
                driver.record(slot, reply)
        rules_delta = promtext.delta(promtext.scrape(rules_metrics), rules_before)
        server = promtext.histograms(rules_delta, "meeple_rules_rpc_seconds", ("method",)).get(("ApplyMove",))
        engine = engine_costs(timings.samples)

        # Pass 2: the sampling profile of the same loop.
        profiler = Profiler(interval=0.0002)
        profiler.start()
        for n in range(moves):
            slot = n % slots
            path, token, body = driver.next_move(slot)
            driver.record(slot, post_move(client, path, token, body, f"p2-{n}"))
        session = profiler.stop()
        (out / "profile.html").write_text(profiler.output_html())
        root = session.root_frame()
        spent, profiled, count = categorize(root, "post_move") if root is not None else ({}, 0.0, 0)

        # Pass 3: the same traffic over HTTP to a real gunicorn worker, sampled with py-spy.
        from .spy import run_spy

        spied = run_spy(redis_url, rules_addr, rules_pid, out)
    text = render(timings, server, engine, spent, profiled, count) + "\n" + spied
    (out / "profile.md").write_text(text)
    return text


def _hist_totals(histogram: Any) -> tuple[float, float]:
    """(sum of seconds, number of observations) over every label set of a histogram."""
    total = count = 0.0
    for metric in histogram.collect():
        for sample in metric.samples:
            if sample.name.endswith("_sum"):
                total += sample.value
            elif sample.name.endswith("_count"):
                count += sample.value
    return total, count


def render(timings: Timings, server: promtext.HistogramSummary | None, engine: dict[str, float],
           spent: dict[str, float], profiled: float, count: int) -> str:
    n = max(timings.requests, 1)

    def us(seconds: float) -> str:
        return f"{seconds * 1e6:,.0f}"

    wall = timings.wall_s / n
    redis_s = timings.redis_s / n
    apply_s = timings.grpc_s.get("ApplyMove", 0.0) / n
    server_s = server.mean if server else float("nan")
    engine_s = sum(engine.values())
    rest = wall - redis_s - apply_s
    lines = [
        "# Where a move submission's time goes", "",
        f"{timings.requests} moves (`POST /v1/matches/{{id}}/moves` with an Idempotency-Key, human-vs-human "
        f"matches of {', '.join(GAMES)}), gateway in-process behind Flask's test client, real redis-server and "
        "rules server over loopback. Means per request, in microseconds.", "",
        "| part | µs per move | share |", "|---|---:|---:|",
        f"| **whole request (WSGI, no HTTP parsing)** | **{us(wall)}** | 100% |",
        f"| Redis: {timings.redis_calls / n:.1f} round trips (client library included) | {us(redis_s)} | "
        f"{redis_s / wall:.0%} |",
        f"| gRPC `ApplyMove`, as the gateway waits for it | {us(apply_s)} | {apply_s / wall:.0%} |",
        f"| &nbsp;&nbsp;inside the rules server (its own histogram) | {us(server_s)} | {server_s / wall:.0%} |",
    ]
    for name, seconds in engine.items():
        lines.append(f"| &nbsp;&nbsp;&nbsp;&nbsp;engine: {name} | {us(seconds)} | {seconds / wall:.0%} |")
    around = server_s - engine_s
    lines += [
        f"| &nbsp;&nbsp;&nbsp;&nbsp;servicer and protobuf around the engine | "
        f"{us(around) if around > 0 else '≈ 0 (within noise)'} | {max(around, 0) / wall:.0%} |",
        f"| &nbsp;&nbsp;gRPC transport and client stubs (wait minus server time) | {us(apply_s - server_s)} | "
        f"{(apply_s - server_s) / wall:.0%} |",
        f"| Flask and gateway Python (the rest) | {us(rest)} | {rest / wall:.0%} |", "",
        f"CPU time of this process per move request: {us(timings.cpu_s / n)} µs (all its threads: the gateway "
        "code, the Redis and gRPC clients, Flask, the test client).", "",
        f"Sampling profile (pyinstrument, {count} move requests, {profiled:.2f} s under the profiler): time by the "
        "innermost library each sample was in; `profile.html` has the whole tree.", "",
        "| where | share |", "|---|---:|",
    ]
    for name, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {name} | {seconds / profiled:.0%} |" if profiled else f"| {name} | - |")
    lines.append("")
    return "\n".join(lines)


def main(moves: int, out: Path) -> int:
    started = time.perf_counter()
    text = run_profile(moves, out)
    print(text)
    print(f"profile: {out / 'profile.md'}, {out / 'profile.html'} ({time.perf_counter() - started:.0f} s)",
          file=sys.stderr)
    return 0


__all__ = ["main", "run_profile"]
