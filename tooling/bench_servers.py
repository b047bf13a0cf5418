"""``meeple bench servers``: the gateway's REST doors under granian beside our connection worker, side by side.

Issue 47 asks whether a maintained server made for speed should take the REST doors from the gateway's connection
worker (``services/gateway/gunicorn_worker.py``, our own code around gunicorn's parser). One Redis and one rules
service (as ``meeple bench floor`` starts them), and the same WSGI app (``services.gateway.wsgi:app``) twice on
them: under gunicorn with the gateway's config (``services/gateway/gunicorn_conf.py``: the ``ConnectionThreads``
worker), one worker, and under granian (``--interface wsgi``, one worker, ``--blocking-threads``). Both get the same
matches and moves (the same seed): human-vs-human matches of every game in turn, as ``bench floor``'s REST move.
Timed, in turns (each kind goes first in turn, so drift hits them alike): the REST move (``POST .../moves`` with an
``Idempotency-Key``; the seat's legal moves read before it, untimed) and a status read (``GET /v1/matches/{id}``
with a seat's token), on each server. CPU per request from ``/proc``: the server's worker process (every thread:
granian's Rust runtime and its blocking threads, or our worker's), the rules service and Redis.

Then what the servers can hold, probed on each: a WebSocket upgrade (granian's WSGI interface has no way to hand
the socket over, so the gateway answers ``501 websocket_unsupported``), and a status read sent while as many
long-polls wait as granian has blocking threads (our worker parks a long-poll without a thread; granian's WSGI
holds a blocking thread for each until it answers, so the read waits for one to end).
Everything started is stopped before the command returns (the JSON lists the pids it started).
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import orjson

from tooling.bench_floor import (
    GATEWAY_ENV,
    Http,
    Player,
    Procs,
    Series,
    Stack,
    python_of,
    start_stack,
    timed,
)
from tooling.stack import ROOT, free_port, http_ok, wait_until

SERVERS = ("gunicorn", "granian")
KINDS = ("move", "status")


def children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def granian(procs: Procs, env: dict[str, str], threads: int) -> tuple[int, int]:
    """The gateway's WSGI app under granian, one worker; (its port, the worker's pid)."""
    port = free_port()
    # one process: no multiprocess metrics directory (a stale one from the environment would be refused)
    env = {k: v for k, v in {**os.environ, **env}.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    master = procs.spawn([python_of(ROOT), "-m", "granian", "--interface", "wsgi", "--workers", "1",
                          "--blocking-threads", str(threads), "--host", "127.0.0.1", "--port", str(port),
                          "--no-ws", "--log-level", "error", "--no-access-log", "services.gateway.wsgi:app"],
                         ROOT, env)
    wait_until(lambda: http_ok(f"http://127.0.0.1:{port}/healthz"), "granian", master, 60)
    workers = children(master.pid)
    if len(workers) != 1:
        raise RuntimeError(f"expected one granian worker under {master.pid}, found {workers}")
    procs.workers.append(workers[0])
    return port, workers[0]


def status_read(player: Player) -> Callable[[], Any]:
    """The timed status read of the player's current match, with its first seat's token."""
    match = player.match
    assert match is not None
    path, auth = f"/v1/matches/{match['id']}", {"Authorization": f"Bearer {match['tokens'][0]}"}
    return lambda: player.stack.http.call("GET", path, headers=auth)


def upgrade_status(port: int, match_id: str) -> tuple[int, str]:
    """The status and error code a WebSocket upgrade gets (101: the server holds the socket)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", f"/v1/matches/{match_id}/ws", headers={
            "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version": "13"})
        reply = conn.getresponse()
        if reply.status == 101:
            return 101, ""
        body = reply.read()
    finally:
        conn.close()
    try:
        return reply.status, str(orjson.loads(body)["error"]["code"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return reply.status, body[:80].decode(errors="replace")


def read_while_waiting(player: Player, polls: int, wait_s: int) -> dict[str, Any]:
    """Open ``polls`` long-polls on the player's match (nothing will happen in it), then time a status read."""
    match = player.match
    assert match is not None
    port = player.stack.http.conn.port
    version = player.stack.http.call("GET", f"/v1/matches/{match['id']}",
                                     headers={"Authorization": f"Bearer {match['tokens'][0]}"})["version"]
    waiting = []
    try:
        for i in range(polls):
            sock = socket.create_connection(("127.0.0.1", port), timeout=wait_s + 30)
            token = match["tokens"][i % len(match["tokens"])]
            sock.sendall((f"GET /v1/matches/{match['id']}/events?after={version}&wait={wait_s} HTTP/1.1\r\n"
                          f"Host: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n").encode())
            waiting.append(sock)
        time.sleep(0.5)  # every long-poll has reached the app
        start = time.perf_counter()
        status_read(player)()
        seconds = time.perf_counter() - start
    finally:
        for sock in waiting:
            sock.close()
    return {"long_polls": polls, "wait_s": wait_s, "status_read_ms": round(seconds * 1000, 1)}


def run_bench(moves: int, warmup: int, threads: int, wait_s: int, seed: int = 1) -> dict[str, Any]:
    procs = Procs()
    report: dict[str, Any] = {}
    with ExitStack() as cleanup, tempfile.TemporaryDirectory(prefix="meeple-servers-") as tmp_dir:
        cleanup.callback(procs.stop)
        ours = start_stack(procs, "gunicorn", ROOT, Path(tmp_dir))
        port, worker = granian(procs, {**GATEWAY_ENV, "REDIS_URL": ours.redis_url,
                                       "MEEPLE_RULES_ADDR": ours.rules_addr}, threads)
        theirs = Stack("granian", ROOT, ours.redis, ours.rules, worker, Http(port), ours.redis_url, ours.rules_addr)
        players = {"gunicorn": Player(ours, seed), "granian": Player(theirs, seed)}
        series = {f"{server}_{kind}": Series() for server in SERVERS for kind in KINDS}
        for n in range(warmup + moves):
            jobs: list[tuple[str, Callable[[], Any], dict[str, int], str]] = []
            for server, player in players.items():
                game, move = player.prepare()
                jobs += [(f"{server}_move", move, player.stack.pids(), game),
                         (f"{server}_status", status_read(player), player.stack.pids(), game)]
            shift = n % len(jobs)
            for kind, call, pids, game in jobs[shift:] + jobs[:shift]:
                wall, cpu = timed(call, pids)
                if n >= warmup:
                    series[kind].add(wall, cpu, game)
        report = {name: s.figures() for name, s in series.items()}
        for kind in KINDS:
            mine, ref = report[f"granian_{kind}"], report[f"gunicorn_{kind}"]
            report[f"ratio_granian_to_gunicorn_{kind}"] = {
                "p50": round(mine["p50_ms"] / ref["p50_ms"], 3), "p95": round(mine["p95_ms"] / ref["p95_ms"], 3),
                "gateway_cpu": round(mine["cpu_ms"]["gateway"] / ref["cpu_ms"]["gateway"], 3),
                "cpu_total": round(mine["cpu_ms_total"] / ref["cpu_ms_total"], 3)}
        report["holds"] = {}
        for server, player in players.items():
            assert player.match is not None
            status, code = upgrade_status(player.stack.http.conn.port, player.match["id"])
            report["holds"][server] = {"websocket_upgrade": status, "websocket_error": code,
                                       **read_while_waiting(player, threads, wait_s)}
        for player in players.values():
            player.stack.http.close()
        report.update(moves=moves, warmup=warmup, granian_blocking_threads=threads, started_pids=procs.pids())
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return report


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("servers", help="the REST doors under granian beside the gateway's connection worker",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--moves", type=int, default=400, help="timed moves (and status reads) per server")
    parser.add_argument("--warmup", type=int, default=20, help="untimed rounds first (imports, connections)")
    parser.add_argument("--threads", type=int, default=8, help="granian's blocking threads (the app's threads)")
    parser.add_argument("--wait", type=int, default=3, help="seconds the probe's long-polls wait")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        import granian  # noqa: F401
    except ImportError:
        raise SystemExit("meeple bench servers needs granian: pip install -e '.[bench]'") from None
    report = run_bench(args.moves, args.warmup, args.threads, args.wait, args.seed)
    if args.json:
        print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
        return 0
    print(f"{'request':<18} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}  CPU ms per request")
    for server in SERVERS:
        for kind in KINDS:
            f = report[f"{server}_{kind}"]
            cpu = "  ".join(f"{part} {v:.3f}" for part, v in f["cpu_ms"].items())
            print(f"{server + ' ' + kind:<18} {f['requests']:>5} {f['p50_ms']:>8.3f} {f['p95_ms']:>8.3f} "
                  f"{f['mean_ms']:>8.3f}  {cpu}  = {f['cpu_ms_total']:.3f}")
    for kind in KINDS:
        r = report[f"ratio_granian_to_gunicorn_{kind}"]
        print(f"granian / gunicorn, {kind}: p50 {r['p50']:.2f}, p95 {r['p95']:.2f}, "
              f"gateway CPU {r['gateway_cpu']:.2f}, CPU in all {r['cpu_total']:.2f}")
    for server, held in report["holds"].items():
        print(f"{server}: WebSocket upgrade -> {held['websocket_upgrade']} {held['websocket_error']}; a status read "
              f"while {held['long_polls']} long-polls wait ({held['wait_s']} s): {held['status_read_ms']:.1f} ms")
    print(f"load average after: {report['load_average_after'][0]:.1f} (a shared machine: compare the ratios)")
    return 0


__all__ = ["add_parser", "run_bench"]
