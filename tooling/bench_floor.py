"""``meeple bench floor``: a human move's latency at low load against a bare Flask route, side by side.

Everything runs as deployed, on loopback and free ports: a real ``redis-server`` (append-only file on, as
``meeple run``), the rules service (``python -m services.rules.server``, sealing with a fresh key) and the
gateway under gunicorn with its own config (``services.gateway.gunicorn_conf``: the same worker class).
Beside it, under the same gunicorn config and worker count, a bare Flask app (:func:`bare_app`): one
``POST /bare`` route that parses a JSON body and answers a small JSON document. That route is the floor: what
gunicorn, Flask and the loopback round trip cost with no work at all. A second route of that app,
``POST /floor-io``, is the floor of the architecture: the waits every move must make, with no work around
them — a Redis read, one call to the rules service (``grpc.health.v1.Health/Check``: an empty unary call) and
a Redis write, on the move stack's own Redis and rules service, with the clients the gateway uses
(redis-py with hiredis, grpcio).

One driver, one request at a time (low load): human-vs-human matches of every game in turn (all seats joined by the
driver, random legal moves with the version the seat saw). For each move it reads the seat's legal moves (not
timed), then sends the timed requests in an order that alternates: ``POST /bare`` with the same body,
``POST /floor-io`` with it too, and ``POST /v1/matches/{id}/moves`` with an ``Idempotency-Key`` (with
``--baseline DIR``, also the move on the stack of the checkout in ``DIR``: its own Redis, rules service and
gateway, run by ``DIR/.venv``'s Python when it has one). The client is ``http.client`` on a kept-alive connection
per server, so the client's own cost stays small beside the servers'.

The socket path (issue 47) is timed beside it on the same stack: human-vs-human matches of every game in turn
with every seat on its own WebSocket (hello with ``include: legal_moves``, so no REST read between moves). A move
is one ``move`` message; its wall time is the round trip to the ``reply``, and its CPU is read from just before
the message until every seat's socket has the move's ``update`` (the pushes count, as boardgame.io's broadcast
counts in its harness).

The core's own move (``core_move``) is timed beside both on the same stack and matches: the move made by calling
the core in this process (``services.core.match.moves.submit``, what every door calls, on a core connected to
the stack's Redis and rules service), with no HTTP request, no socket and none of the gateway's threads. Its CPU
is this process's with the rules service's and Redis's: what a move costs before any door's transport, the floor
that a cheaper door (a realtime edge process, another server) could reach at best. It pushes to nobody.

Figures: p50/p95 (and mean) of each timed request's wall time, the ratio of the move's p50 to the bare
route's (the issue's target: <= 2), the same ratio for ``/floor-io`` (how much of that target the waits alone
take) and the move's p50 over ``/floor-io``'s (what the move path adds to its waits), and CPU per timed request
from ``/proc``, read just around those requests: the gateway worker, the rules service and Redis for a move,
the bare app's worker for the bare route, and the bare app's worker, the rules service and Redis for
``/floor-io`` (each thread's own run time, to the nanosecond). A loaded machine slows all of them alike within a run:
compare ratios, not absolute times.
Everything started is stopped before the command returns (the JSON lists the pids it started).
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import signal
import socket
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Message, Ping, Request, TextMessage

from services.rules.seal import ENV_VAR as SEAL_ENV_VAR
from services.rules.seal import new_key_spec
from tooling.stack import (
    GUNICORN_CONF,
    ROOT,
    free_port,
    grpc_serving,
    http_ok,
    port_open,
    python_of,
    redis_server_binary,
    wait_until,
)

#: The gateway's per-address quotas and rate limit stay on the deployed code path, set out of reach: one driver
#: plays every seat of many matches from one address.
GATEWAY_ENV = {"MEEPLE_RATE_LIMIT_PER_MINUTE": "100000000", "MEEPLE_MAX_ACTIVE_MATCHES_PER_IP": "0",
               "MEEPLE_MAX_BOT_SEATS_PER_IP": "0", "MEEPLE_MAX_HARD_BOTS_PER_IP": "0"}


#: Where ``/floor-io`` finds the move stack's Redis and rules service (set by :func:`run_bench`).
FLOOR_REDIS_ENV, FLOOR_RULES_ENV = "MEEPLE_FLOOR_REDIS_URL", "MEEPLE_FLOOR_RULES_ADDR"
#: The one key ``/floor-io`` reads and writes (no match uses it).
FLOOR_KEY = "bench:floor-io"


def bare_app() -> Any:
    """The floor: a Flask app with one route that parses a JSON body and answers JSON (gunicorn factory)."""
    from flask import Flask, request

    app = Flask("meeple-floor")

    @app.post("/bare")
    def bare() -> Any:
        body = request.get_json()
        return {"ok": True, "version": body.get("version") if isinstance(body, dict) else None}

    @app.get("/healthz")
    def healthz() -> Any:
        return {"ok": True}

    redis_url, rules_addr = os.environ.get(FLOOR_REDIS_ENV), os.environ.get(FLOOR_RULES_ENV)
    if redis_url and rules_addr:
        import grpc
        import redis
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        store = redis.Redis.from_url(redis_url)
        health = health_pb2_grpc.HealthStub(grpc.insecure_channel(rules_addr))

        @app.post("/floor-io")
        def floor_io() -> Any:
            body = request.get_json()
            version = body.get("version") if isinstance(body, dict) else None
            store.get(FLOOR_KEY)
            health.Check(health_pb2.HealthCheckRequest(), timeout=5)
            store.set(FLOOR_KEY, orjson.dumps(version))
            return {"ok": True, "version": version}

    return app


def cpu_s(pid: int) -> float:
    """CPU seconds of process ``pid``'s live threads, to the nanosecond (``/proc/<pid>/task/*/schedstat``).

    ``/proc/<pid>/stat`` counts in clock ticks (10 ms): read around one request of a millisecond, its error is
    as large as the figure. A thread that ends between two readings takes its time with it (the servers here
    keep theirs). This process's own: ``time.process_time()`` (the same clock, without reading ``/proc``)."""
    if pid == os.getpid():
        return time.process_time()
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # the thread ended meanwhile
    return total / 1e9


def only_child(pid: int) -> int:
    """The one worker of a gunicorn master."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    if len(children) != 1:
        raise RuntimeError(f"expected one gunicorn worker under {pid}, found {children}")
    return int(children[0])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Procs:
    """The processes this bench starts, each in a session of its own; all stopped on :meth:`stop`."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[bytes]] = []
        #: gunicorn workers (their master stops them)
        self.workers: list[int] = []

    def spawn(self, argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        self.started.append(proc)
        return proc

    def pids(self) -> list[int]:
        return [proc.pid for proc in self.started] + self.workers

    def stop(self) -> None:
        for proc in reversed(self.started):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(self.started):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # its own session: the gunicorn worker goes with it
                proc.wait()


class Http:
    """One kept-alive HTTP/1.1 connection to a server; JSON in, JSON out."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        data = orjson.dumps(body) if body is not None else None
        sent = {**(headers or {}), **({"Content-Type": "application/json"} if data is not None else {})}
        self.conn.request(method, path, body=data, headers=sent)
        reply = self.conn.getresponse()
        raw = reply.read()
        if reply.status >= 300:
            raise RuntimeError(f"{method} {path}: {reply.status} {raw[:300]!r}")
        return orjson.loads(raw)

    def close(self) -> None:
        self.conn.close()


@dataclass
class Stack:
    """Redis, the rules service and the gateway of one checkout."""

    name: str
    root: Path
    redis: subprocess.Popen[bytes]
    rules: subprocess.Popen[bytes]
    gateway_worker: int
    http: Http
    redis_url: str
    rules_addr: str

    def pids(self) -> dict[str, int]:
        """The processes behind a move, by the part they play (whose CPU a timed move reads)."""
        return {"gateway": self.gateway_worker, "rules": self.rules.pid, "redis": self.redis.pid}


def gunicorn(procs: Procs, root: Path, app: str, env: dict[str, str], tmp: Path) -> tuple[int, int]:
    """A gunicorn master serving ``app`` with the gateway's config and one worker; (its port, the worker's pid)."""
    port = free_port()
    prom = Path(tempfile.mkdtemp(prefix="prom-", dir=tmp))
    master = procs.spawn([python_of(root), "-m", "gunicorn", "-c", GUNICORN_CONF, "--workers", "1",
                          "--bind", f"127.0.0.1:{port}", "--graceful-timeout", "5", app], root,
                         {**os.environ, **env, "PROMETHEUS_MULTIPROC_DIR": str(prom)})
    wait_until(lambda: http_ok(f"http://127.0.0.1:{port}/healthz"), f"gunicorn {app} ({root})", master, 60)
    worker = only_child(master.pid)
    procs.workers.append(worker)
    return port, worker


def start_stack(procs: Procs, name: str, root: Path, tmp: Path) -> Stack:
    data = tmp / name
    data.mkdir()
    redis_port, rules_port = free_port(), free_port()
    redis = procs.spawn([redis_server_binary(), "--bind", "127.0.0.1", "--port", str(redis_port), "--dir", str(data),
                         "--appendonly", "yes", "--save", "", "--maxmemory", "512mb",
                         "--maxmemory-policy", "noeviction"], root, dict(os.environ))
    wait_until(lambda: port_open(redis_port), "redis", redis)
    env = {**os.environ, SEAL_ENV_VAR: new_key_spec("floor")}
    rules = procs.spawn([python_of(root), "-m", "services.rules.server", "--host", "127.0.0.1", "--port",
                         str(rules_port), "--metrics-port", str(free_port())], root, env)
    wait_until(lambda: grpc_serving(f"127.0.0.1:{rules_port}"), f"rules service ({root})", rules, 60)
    redis_url, rules_addr = f"redis://127.0.0.1:{redis_port}/0", f"127.0.0.1:{rules_port}"
    port, worker = gunicorn(procs, root, "services.gateway.wsgi:app",
                            {**GATEWAY_ENV, "REDIS_URL": redis_url, "MEEPLE_RULES_ADDR": rules_addr}, tmp)
    return Stack(name, root, redis, rules, worker, Http(port), redis_url, rules_addr)


@dataclass
class Series:
    """Wall times (s) of one kind of timed request, and the CPU (s) of the processes behind it."""

    wall: list[float] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)
    per_game: dict[str, list[float]] = field(default_factory=dict)
    #: the CPU (s, all parts) of each game's timed requests
    cpu_by_game: dict[str, float] = field(default_factory=dict)

    def add(self, wall: float, cpu: dict[str, float], game: str | None = None) -> None:
        self.wall.append(wall)
        for part, seconds in cpu.items():
            self.cpu[part] = self.cpu.get(part, 0.0) + seconds
        if game is not None:
            self.per_game.setdefault(game, []).append(wall)
            self.cpu_by_game[game] = self.cpu_by_game.get(game, 0.0) + sum(cpu.values())

    def figures(self) -> dict[str, Any]:
        n = max(len(self.wall), 1)
        return {"requests": len(self.wall), "p50_ms": ms(percentile(self.wall, 50)),
                "p95_ms": ms(percentile(self.wall, 95)), "mean_ms": ms(statistics.fmean(self.wall or [0.0])),
                "cpu_ms": {part: round(seconds * 1000 / n, 3) for part, seconds in self.cpu.items()},
                "cpu_ms_total": round(sum(self.cpu.values()) * 1000 / n, 3),
                **({"p50_ms_by_game": {g: ms(percentile(w, 50)) for g, w in self.per_game.items()},
                    "cpu_ms_total_by_game": {g: round(self.cpu_by_game[g] * 1000 / len(w), 3)
                                             for g, w in self.per_game.items()}}
                   if self.per_game else {})}


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


class Player:
    """Human-vs-human matches of every game in turn on one stack, one seat's move at a time."""

    def __init__(self, stack: Stack, seed: int) -> None:
        from services.rules.games import GAMES

        self.stack, self.rng = stack, random.Random(seed)
        self.games = [(g.id, max(g.min_players, 2)) for g in GAMES.values()]
        self.played = 0
        self.match: dict[str, Any] | None = None

    def _new_match(self) -> dict[str, Any]:
        gid, players = self.games[self.played % len(self.games)]
        self.played += 1
        http = self.stack.http
        made = http.call("POST", "/v1/matches", {"game": gid, "players": players, "join": True,
                                                 "seed": self.rng.randrange(2**31)})
        tokens = [made["token"]] + [http.call("POST", f"/v1/matches/{made['id']}/join", {})["token"]
                                    for _ in range(players - 1)]
        return {"id": made["id"], "game": gid, "tokens": tokens, "to_act": made["to_act"], "status": made["status"]}

    def next_move(self) -> tuple[dict[str, Any], int, dict[str, Any], str]:
        """(the match, the seat to move, the move's body, its Idempotency-Key): the seat's legal moves are read
        over REST, untimed."""
        if self.match is None or self.match["status"] != "active":
            self.match = self._new_match()
        match = self.match
        seat = self.rng.choice(match["to_act"])
        legal = self.stack.http.call("GET", f"/v1/matches/{match['id']}/legal-moves",
                                     headers={"Authorization": f"Bearer {match['tokens'][seat]}"})
        body = {"move": self.rng.choice(legal["moves"]), "version": legal["version"]}
        return match, seat, body, uuid.UUID(int=self.rng.getrandbits(128)).hex

    def prepare(self) -> tuple[str, Callable[[], Any]]:
        """(game, the timed move request) of the next move."""
        match, seat, body, key = self.next_move()
        headers = {"Authorization": f"Bearer {match['tokens'][seat]}", "Idempotency-Key": key}

        def move() -> Any:
            doc = self.stack.http.call("POST", f"/v1/matches/{match['id']}/moves", body, headers)
            match["to_act"], match["status"] = doc["to_act"], doc["status"]
            return doc

        return match["game"], move

    def pids(self) -> dict[str, int]:
        """The processes its moves run in, by part (whose CPU a timed move reads)."""
        return self.stack.pids()

    def close(self) -> None:
        """Nothing of its own to close (the stack's HTTP connection is closed with the stack)."""


class CorePlayer(Player):
    """The same matches, each move made by calling the core in this process (:func:`services.core.match.moves.submit`,
    what every door calls) on a core connected to the stack's Redis and rules service: no HTTP, no socket, no thread
    of the gateway's. Its CPU is this process's (the core's own work, its Redis and gRPC clients) with the rules
    service's and Redis's: the floor of any door's move, however cheap its transport."""

    def __init__(self, stack: Stack, seed: int) -> None:
        from dataclasses import replace

        from prometheus_client import CollectorRegistry

        from services.core.config import ENV, Config
        from services.core.service import Core

        super().__init__(stack, seed)
        limits: dict[str, Any] = {name: int(GATEWAY_ENV[var]) for name, var in ENV.items() if var in GATEWAY_ENV}
        config = replace(Config.from_env(), redis_url=stack.redis_url, rules_addr=stack.rules_addr, **limits)
        self.core = Core.connect(config, CollectorRegistry())

    def pids(self) -> dict[str, int]:
        """The core in this process instead of the gateway's worker."""
        return {"core": os.getpid(), "rules": self.stack.rules.pid, "redis": self.stack.redis.pid}

    def prepare(self) -> tuple[str, Callable[[], Any]]:
        from services.core import access
        from services.core.match import moves

        match, seat, body, key = self.next_move()
        caller = access.with_token(self.core.redis, access.Caller("127.0.0.1"), match["tokens"][seat])

        def move() -> Any:
            doc = moves.submit(self.core, caller, match["id"], body["move"], body["version"], idempotency_key=key)
            match["to_act"], match["status"] = doc["to_act"], doc["status"]
            return doc

        return match["game"], move

    def close(self) -> None:
        self.core.rules.close()


class Socket:
    """A seat's WebSocket (wsproto on a blocking socket): JSON messages in and out."""

    def __init__(self, port: int, match_id: str, token: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.sock.sendall(self.ws.send(Request(host="127.0.0.1", target=f"/v1/matches/{match_id}/ws")))
        self.inbox: list[dict[str, Any]] = []
        self.parts: list[str] = []
        self.accepted = False
        while not self.accepted:
            self._pump()
        # after 0: the first update carries the seat's view and legal moves at once
        self.send({"type": "hello", "token": token, "include": "legal_moves", "after": 0})

    def send(self, doc: dict[str, Any]) -> None:
        self.sock.sendall(self.ws.send(Message(data=orjson.dumps(doc).decode())))

    def _pump(self) -> None:
        data = self.sock.recv(1 << 20)
        if not data:
            raise ConnectionError("the gateway closed the socket")
        self.ws.receive_data(data)
        for event in self.ws.events():
            if isinstance(event, AcceptConnection):
                self.accepted = True
            elif isinstance(event, TextMessage):
                self.parts.append(event.data)
                if event.message_finished:
                    self.inbox.append(orjson.loads("".join(self.parts)))
                    self.parts = []
            elif isinstance(event, Ping):
                self.sock.sendall(self.ws.send(event.response()))
            elif isinstance(event, CloseConnection):
                self.inbox.append({"type": "closed"})

    def until(self, kind: str, version: int = -1) -> dict[str, Any]:
        """The next message of ``kind`` (an update: at ``version`` or later), dropping what comes before it."""
        while True:
            for i, msg in enumerate(self.inbox):
                if msg["type"] == kind and msg.get("version", version) >= version:
                    del self.inbox[:i + 1]
                    return msg
            self._pump()

    def close(self) -> None:
        self.sock.close()


class SocketPlayer(Player):
    """The same matches, every seat on its own WebSocket: a move is one ``move`` message, its ``reply`` the round
    trip timed, and the CPU read once every seat has the move's ``update`` (the gateway pushes it to each socket,
    as boardgame.io pushes each seat its state)."""

    def __init__(self, stack: Stack, seed: int) -> None:
        super().__init__(stack, seed)
        self.sockets: list[Socket] = []
        self.last: dict[int, dict[str, Any]] = {}
        self.rtt = 0.0

    def _open(self) -> None:
        self.close()
        match = self._new_match()
        self.game = match["game"]
        self.sockets = [Socket(self.stack.http.conn.port, match["id"], token) for token in match["tokens"]]
        for sock in self.sockets:
            sock.until("ready")
        self.last = {seat: sock.until("update") for seat, sock in enumerate(self.sockets)}

    def _latest(self) -> dict[str, Any]:
        return max(self.last.values(), key=lambda doc: doc["version"])

    def prepare(self) -> tuple[str, Callable[[], Any]]:
        if not self.sockets or self._latest()["status"] != "active":
            self._open()
        seat = self.rng.choice(self._latest()["to_act"])
        seen = self.last[seat]
        message = {"type": "move", "id": self.played, "move": self.rng.choice(seen["legal_moves"]),
                   "version": seen["version"], "idempotency_key": uuid.UUID(int=self.rng.getrandbits(128)).hex}

        def move() -> None:
            start = time.perf_counter()
            self.sockets[seat].send(message)
            reply = self.sockets[seat].until("reply")
            self.rtt = time.perf_counter() - start
            if reply["status"] != 200:
                raise RuntimeError(f"socket move: {reply['status']} {reply['body']}")
            for other, sock in enumerate(self.sockets):
                self.last[other] = sock.until("update", reply["body"]["version"])

        return self.game, move

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()


#: Every series a run may time, in the order they are printed.
SERIES = ("bare", "floor_io", "core_move", "move", "socket_move", "baseline_move", "baseline_socket_move")


def socket_name(stack: str) -> str:
    """The socket path's series of a stack's (``move`` -> ``socket_move``)."""
    return stack.replace("move", "socket_move")


def timed(call: Callable[[], Any], pids: dict[str, int]) -> tuple[float, dict[str, float]]:
    """Wall seconds of ``call`` and the CPU seconds each of ``pids`` spent meanwhile.

    This process (the core's own move) is read last before the call and first after it: reading the others'
    ``/proc`` costs this process CPU that is not the move's."""
    order = sorted(pids, key=lambda part: pids[part] == os.getpid())
    before = {part: cpu_s(pids[part]) for part in order}
    start = time.perf_counter()
    call()
    wall = time.perf_counter() - start
    after = {part: cpu_s(pids[part]) for part in reversed(order)}
    return wall, {part: after[part] - before[part] for part in pids}


def run_bench(moves: int, warmup: int = 20, baseline: Path | None = None, seed: int = 1) -> dict[str, Any]:
    """Start everything, play ``moves`` timed moves per stack (and as many bare requests), stop everything."""
    procs = Procs()
    report: dict[str, Any] = {}
    with ExitStack() as cleanup, tempfile.TemporaryDirectory(prefix="meeple-floor-") as tmp_dir:
        tmp = Path(tmp_dir)
        cleanup.callback(procs.stop)
        roots = {"move": ROOT, **({"baseline_move": baseline.resolve()} if baseline else {})}
        stacks = {name: start_stack(procs, name, root, tmp) for name, root in roots.items()}
        mover = stacks["move"]
        bare_port, bare_worker = gunicorn(procs, ROOT, "tooling.bench_floor:bare_app()",
                                          {FLOOR_REDIS_ENV: mover.redis_url, FLOOR_RULES_ENV: mover.rules_addr}, tmp)
        bare = Http(bare_port)
        players: dict[str, Player] = {name: Player(stack, seed) for name, stack in stacks.items()}
        sockets = {socket_name(name): SocketPlayer(stack, seed) for name, stack in stacks.items()}
        players.update(sockets)
        players["core_move"] = CorePlayer(mover, seed)
        series = {name: Series() for name in ("bare", "floor_io", *players)}
        io_pids = {**mover.pids(), "gateway": bare_worker}  # the bare app makes the move stack's hops
        for n in range(warmup + moves):
            jobs: list[tuple[str, Callable[[], Any], dict[str, int], str | None]] = []
            for name, player in players.items():
                game, move = player.prepare()
                jobs.append((name, move, player.pids(), game))
            body = {"move": {"n": n}, "version": n}
            jobs.append(("bare", lambda b=body: bare.call("POST", "/bare", b), {"gateway": bare_worker}, None))  # type: ignore[misc]
            jobs.append(("floor_io", lambda b=body: bare.call("POST", "/floor-io", b), io_pids, None))  # type: ignore[misc]
            shift = n % len(jobs)
            for kind, call, pids, played in jobs[shift:] + jobs[:shift]:  # each kind goes first in turn
                wall, cpu = timed(call, pids)
                if kind in sockets:  # the reply's round trip; the CPU is read once every seat has the update
                    wall = sockets[kind].rtt
                if n >= warmup:
                    series[kind].add(wall, cpu, played)
        for stack in stacks.values():
            stack.http.close()
        for player in players.values():
            player.close()
        bare.close()
        report = {name: s.figures() for name, s in series.items()}
        pairs = [("move", "bare"), ("floor_io", "bare"), ("move", "floor_io"), ("socket_move", "move"),
                 ("core_move", "move")]
        if baseline:
            pairs += [("baseline_move", "bare"), ("move", "baseline_move"), ("socket_move", "baseline_socket_move")]
        for kind, over in pairs:
            report[f"ratio_{kind}_to_{over}_p50"] = round(report[kind]["p50_ms"] / report[over]["p50_ms"], 3)
        if baseline:
            report["baseline"] = str(baseline.resolve())
        report["moves"], report["warmup"] = moves, warmup
        report["started_pids"] = procs.pids()
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return report


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("floor", help="a move's low-load latency against a bare Flask route, side by side",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--moves", type=int, default=400, help="timed moves (and bare requests)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed rounds first (imports, connections)")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="also time the move on the stack of the checkout in DIR (before/after in one run)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = run_bench(args.moves, args.warmup, args.baseline, args.seed)
    if args.json:
        print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
        return 0
    print(f"{'request':<20} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}  CPU ms per request")
    for name in SERIES:
        if name in report:
            f = report[name]
            cpu = "  ".join(f"{part} {v:.3f}" for part, v in f["cpu_ms"].items())
            print(f"{name:<20} {f['requests']:>5} {f['p50_ms']:>8.3f} {f['p95_ms']:>8.3f} {f['mean_ms']:>8.3f}  {cpu}"
                  f"  = {f['cpu_ms_total']:.3f}")
    print(f"move p50 / floor_io p50: {report['ratio_move_to_floor_io_p50']:.2f}  (issue 47's target: <= 1.3); "
          f"move p50 / bare p50: {report['ratio_move_to_bare_p50']:.2f}")
    print(f"floor_io p50 / bare p50: {report['ratio_floor_io_to_bare_p50']:.2f}  (a Redis read, an empty gRPC call "
          f"and a Redis write, nothing else); socket move p50 / REST move p50: "
          f"{report['ratio_socket_move_to_move_p50']:.2f}")
    if "baseline" in report:
        print(f"baseline move p50 / bare p50: {report['ratio_baseline_move_to_bare_p50']:.2f}; "
              f"move / baseline move p50: {report['ratio_move_to_baseline_move_p50']:.3f}; socket move / baseline "
              f"socket move p50: {report['ratio_socket_move_to_baseline_socket_move_p50']:.3f}  ({report['baseline']})")
    for name in ("move", "baseline_move", "socket_move", "baseline_socket_move"):
        if name in report:
            games = ", ".join(f"{g} {v:.2f}" for g, v in report[name]["p50_ms_by_game"].items())
            print(f"{name} p50 ms by game: {games}")
    print(f"load average after: {report['load_average_after'][0]:.1f} (a shared machine: compare the ratios)")
    return 0
