"""``meeple bench waiters``: one gateway node on loopback holding N parked waiters while moves are played.

It boots Redis, the rules service and the gateway (gunicorn, 2 workers, as ``make run``; no bot workers)
on free loopback ports, raises its own open-file limit (the gateway's worker raises its own), creates
matches of 4 human seats (``--per-match`` waiters each, one per seat, with the seat's token), and then:

1. plays ``--rate`` moves a second for ``--seconds`` with no waiter: ``move_ms_without_waiters``;
2. parks ``--clients`` waiters, spread over the matches and over the ``--mix`` (``poll`` = long-polls
   ``events?after=&wait=30`` re-polled after every answer, ``sse`` = event streams, ``ws`` = WebSockets);
   ``connected`` counts the ones the server holds (its ``meeple_gateway_waiters``), ``errors`` the ones that
   got anything but their events (a refused request, a dropped connection);
3. measures the gateway's memory (``rss_mb_per_1000``: RSS growth of its processes per 1,000 waiters) and
   its CPU over ``--idle`` seconds with every waiter parked and nothing played (``idle_cpu_pct``: percent
   of one core; ``idle_cpu_pct_per_1000`` the same per 1,000 waiters);
4. plays moves again at the same rate: ``move_ms`` (the move request's round trip, measured by a process of
   its own in both phases, so that this one's event loop serving the waiters does not count) and
   ``event_delivery_ms`` (from the move's commit — the ``at`` the gateway wrote in the match log, the same
   clock — to the waiter's receipt of the event).

The client side is one asyncio process with sans-IO protocol libraries (``h11`` for HTTP/1.1, ``wsproto``
for WebSocket: python-hyper's, the same the server frames WebSockets with), so that 10,000 waiters cost it a
socket and a coroutine each. Every process shares the machine's cores: figures are comparable within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import gc
import itertools
import multiprocessing
import random
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h11
import orjson
import psutil
import redis
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Ping, RejectConnection, Request, TextMessage

from services.core.record.store import keys
from services.gateway.gunicorn_worker import raise_fd_limit
from tooling import promtext
from tooling.stack import Stack, StackConfig

GAME, PLAYERS = "fierce-women", 4
KINDS = ("poll", "sse", "ws")


class Http:
    """One kept-alive HTTP/1.1 connection (h11)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.conn = h11.Connection(h11.CLIENT)
        self.reopened = 0

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()

    def send(self, method: str, path: str, token: str | None = None, body: Any = None,
             headers: dict[str, str] | None = None) -> None:
        assert self.writer is not None
        if self.conn.our_state is h11.DONE:
            self.conn.start_next_cycle()
        data = orjson.dumps(body) if body is not None else b""
        head = [("Host", self.host), ("Content-Length", str(len(data)))]
        if body is not None:
            head.append(("Content-Type", "application/json"))
        if token:
            head.append(("Authorization", f"Bearer {token}"))
        head += list((headers or {}).items())
        self.writer.write(self.conn.send(h11.Request(method=method, target=path, headers=head)))
        self.writer.write(self.conn.send(h11.Data(data=data)) if data else b"")
        self.writer.write(self.conn.send(h11.EndOfMessage()))

    async def event(self) -> Any:
        assert self.reader is not None
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                chunk = await self.reader.read(65536)
                self.conn.receive_data(chunk)
                continue
            return event

    async def response(self) -> tuple[int, bytes]:
        status, body = 0, b""
        while True:
            event = await self.event()
            if isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                return status, body

    async def call(self, method: str, path: str, token: str | None = None, body: Any = None,
                   headers: dict[str, str] | None = None) -> tuple[int, Any]:
        """One request; a kept-alive connection the server closed meanwhile is reopened and the request sent
        again once, as HTTP client libraries do (moves carry an Idempotency-Key, so that is safe)."""
        for attempt in range(2):
            try:
                self.send(method, path, token, body, headers)
                status, raw = await self.response()
                if status:
                    return status, orjson.loads(raw) if raw else None
            except (OSError, h11.ProtocolError):
                if attempt:
                    raise
            self.reopened += 1
            self.close()
            self.conn = h11.Connection(h11.CLIENT)
            await self.open()
        return 0, None


@dataclass
class Match:
    id: str
    tokens: list[str]
    version: int = 0
    to_act: list[int] = field(default_factory=list)
    busy: bool = False


@dataclass
class Run:
    host: str
    port: int
    deliveries: list[tuple[str, int, float]] = field(default_factory=list)  # (match, version, received at)
    errors: int = 0
    reopened: int = 0  # the movers' kept-alive connections found closed by the server and reopened
    started: int = 0
    stopping: bool = False
    error_kinds: dict[str, int] = field(default_factory=dict)

    def failed(self, why: str) -> None:
        self.errors += 1
        self.error_kinds[why] = self.error_kinds.get(why, 0) + 1

    def received(self, match: str, doc: dict[str, Any]) -> None:
        now = time.time()
        for event in doc.get("events") or []:
            self.deliveries.append((match, event["version"], now))


async def poll_waiter(run: Run, match: Match, seat: int) -> None:
    client = Http(run.host, run.port)
    await client.open()
    run.started += 1
    after = match.version
    try:
        while not run.stopping:
            status, doc = await client.call("GET", f"/v1/matches/{match.id}/events?after={after}&wait=30",
                                            match.tokens[seat])
            if status != 200:
                run.failed(f"poll {status}")
                return
            run.received(match.id, doc)
            after = doc["version"]
    except (OSError, h11.ProtocolError):
        if not run.stopping:
            run.failed("poll dropped")
    finally:
        client.close()


async def sse_waiter(run: Run, match: Match, seat: int) -> None:
    client = Http(run.host, run.port)
    await client.open()
    run.started += 1
    try:
        client.send("GET", f"/v1/matches/{match.id}/events/stream?after={match.version}", match.tokens[seat])
        buffer = b""
        while not run.stopping:
            event = await client.event()
            if isinstance(event, h11.Response) and event.status_code != 200:
                run.failed(f"sse {event.status_code}")
                return
            if isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                if not run.stopping:
                    run.failed("sse ended")
                return
            if isinstance(event, h11.Data):
                buffer += event.data
                while b"\n\n" in buffer:
                    message, buffer = buffer.split(b"\n\n", 1)
                    for line in message.split(b"\n"):
                        if line.startswith(b"data: "):
                            run.received(match.id, orjson.loads(line[6:]))
    except (OSError, h11.ProtocolError):
        if not run.stopping:
            run.failed("sse dropped")
    finally:
        client.close()


async def ws_waiter(run: Run, match: Match, seat: int) -> None:
    reader, writer = await asyncio.open_connection(run.host, run.port)
    run.started += 1
    ws = WSConnection(ConnectionType.CLIENT)
    writer.write(ws.send(Request(host=run.host, target=f"/v1/matches/{match.id}/ws")))
    try:
        while not run.stopping:
            data = await reader.read(65536)
            if not data:
                if not run.stopping:
                    run.failed("ws closed")
                return
            ws.receive_data(data)
            for event in ws.events():
                if isinstance(event, AcceptConnection):
                    writer.write(ws.send(TextMessage(data=orjson.dumps(
                        {"type": "hello", "token": match.tokens[seat], "after": match.version}).decode())))
                elif isinstance(event, Ping):
                    writer.write(ws.send(event.response()))
                elif isinstance(event, TextMessage):
                    doc = orjson.loads(event.data)
                    if doc.get("type") == "update":
                        run.received(match.id, doc)
                    elif doc.get("type") == "error":
                        run.failed(f"ws {doc['error']['code']}")
                elif isinstance(event, CloseConnection):
                    if not run.stopping:
                        run.failed("ws closed")
                    return
                elif isinstance(event, RejectConnection):
                    run.failed(f"ws {event.status_code}")
                    return
                else:
                    run.failed(f"ws {type(event).__name__}")
                    return
    except OSError:
        if not run.stopping:
            run.failed("ws dropped")
    finally:
        writer.close()


async def setup_matches(run: Run, count: int) -> list[Match]:
    """``count`` matches of PLAYERS human seats (every seat joined), 16 requests in flight."""
    matches: list[Match] = []
    pending = list(range(count))

    async def maker() -> None:
        client = Http(run.host, run.port)
        await client.open()
        while pending:
            pending.pop()
            status, doc = await client.call("POST", "/v1/matches", body={"game": GAME, "players": PLAYERS,
                                                                         "join": True})
            assert status == 201, doc
            tokens = [doc["token"]]
            for _ in range(PLAYERS - 1):
                status, joined = await client.call("POST", f"/v1/matches/{doc['id']}/join", body={})
                assert status == 200, joined
                tokens.append(joined["token"])
            matches.append(Match(doc["id"], tokens, joined["version"], joined["to_act"]))
        client.close()

    await asyncio.gather(*(maker() for _ in range(16)))
    return matches


async def play(run: Run, matches: list[Match], rate: float, seconds: float) -> list[float]:
    """Moves at ``rate`` a second for ``seconds``, each in the next match (a seat to act, its first legal
    move); returns the move requests' round trips in ms."""
    free: asyncio.Queue[Http] = asyncio.Queue()
    for _ in range(16):
        client = Http(run.host, run.port)
        await client.open()
        free.put_nowait(client)
    timings: list[float] = []
    order = itertools.cycle(random.Random(1).sample(matches, len(matches)))

    async def one(match: Match) -> None:
        client = await free.get()
        try:
            seat = match.to_act[0]
            status, legal = await client.call("GET", f"/v1/matches/{match.id}/legal-moves", match.tokens[seat])
            if status != 200 or not legal["moves"]:
                return
            began = time.perf_counter()
            status, doc = await client.call("POST", f"/v1/matches/{match.id}/moves", match.tokens[seat],
                                            {"move": legal["moves"][0], "version": match.version},
                                            {"Idempotency-Key": f"bench-{match.version}"})
            if status == 200:
                timings.append((time.perf_counter() - began) * 1000)
                match.version, match.to_act = doc["version"], doc["to_act"]
        finally:
            match.busy = False
            free.put_nowait(client)

    tasks = []
    start = time.perf_counter()
    n = 0
    while (now := time.perf_counter()) - start < seconds:
        due = start + n / rate
        if due > now:
            await asyncio.sleep(due - now)
        match = next(order)
        if match.busy or not match.to_act:
            await asyncio.sleep(0.001)  # (a few matches: wait for one to be free)
            continue
        match.busy = True
        tasks.append(asyncio.create_task(one(match)))
        n += 1
    await asyncio.gather(*tasks)
    while not free.empty():
        client = free.get_nowait()
        run.reopened += client.reopened
        client.close()
    return timings


def _play_here(host: str, port: int, matches: list[Match], rate: float, seconds: float
               ) -> tuple[list[float], list[Match], int]:
    run = Run(host, port)
    timings = asyncio.run(play(run, matches, rate, seconds))
    return timings, matches, run.reopened


async def play_apart(run: Run, matches: list[Match], rate: float, seconds: float) -> list[float]:
    """:func:`play` in a process of its own, so that the move timings measure the server, not this process's
    event loop while it serves thousands of waiters (the two share the machine's cores, as before)."""
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        timings, played, reopened = await asyncio.get_running_loop().run_in_executor(
            pool, _play_here, run.host, run.port, matches, rate, seconds)
    for match, after in zip(matches, played, strict=True):
        match.version, match.to_act = after.version, after.to_act
    run.reopened += reopened
    return timings


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": float("nan"), "p99": float("nan")}
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 2),
            "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2)}


def gateway_processes(stack: Stack) -> list[psutil.Process]:
    master = next(proc for name, proc in stack.procs if name == "gateway")
    parent = psutil.Process(master.pid)
    return [parent, *parent.children(recursive=True)]


def _summed(procs: list[psutil.Process], read: Callable[[psutil.Process], float]) -> float:
    """``read`` summed over the gateway's processes. One that is gone is a worker that died mid-run (gunicorn
    starts another): the figures would be wrong, and the death is the finding, so the run stops saying so."""
    total = 0.0
    for proc in procs:
        try:
            total += read(proc)
        except psutil.NoSuchProcess:
            raise RuntimeError(f"gateway process {proc.pid} died during the benchmark (a crashed worker: "
                               "gunicorn's log says how)") from None
    return total


def rss_mb(procs: list[psutil.Process]) -> float:
    return _summed(procs, lambda p: p.memory_info().rss) / 2**20


def cpu_s(procs: list[psutil.Process]) -> float:
    return _summed(procs, lambda p: sum(p.cpu_times()[:2]))


def waiters_held(url: str) -> float:
    # queued behind thousands of parking requests while they connect: a patient scrape
    return promtext.value(promtext.scrape(f"{url}/metrics", timeout=60), "meeple_gateway_waiters")


async def bench(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    assert stack.gateway_url is not None
    host, port = stack.gateway_url.removeprefix("http://").split(":")
    run = Run(host, int(port))
    procs = gateway_processes(stack)
    matches = await setup_matches(run, max(1, -(-args.clients // args.per_match)))
    print(f"  {len(matches)} matches created", file=sys.stderr)
    without = await play_apart(run, matches, args.rate, args.seconds)
    print(f"  {len(without)} moves without waiters", file=sys.stderr)
    rss_before = rss_mb(procs)
    mix = args.mix.split(",")
    kinds = {"poll": poll_waiter, "sse": sse_waiter, "ws": ws_waiter}
    tasks = []
    for i in range(args.clients):
        match = matches[i // args.per_match % len(matches)]
        tasks.append(asyncio.create_task(kinds[mix[i % len(mix)]](run, match, i % args.per_match)))
        if i % 200 == 199:
            await asyncio.sleep(0.05)  # let the listen backlog drain
    deadline = time.monotonic() + 60
    held = 0.0
    while time.monotonic() < deadline:
        held = await asyncio.to_thread(waiters_held, stack.gateway_url)
        if held + run.errors >= args.clients:
            break
        await asyncio.sleep(0.5)
    print(f"  {held:.0f} waiters parked, {run.errors} errors", file=sys.stderr)
    gc.collect()
    gc.freeze()  # 10,000 waiters' objects: a full collection of them would stall this process's deliveries
    await asyncio.sleep(1)
    rss_after = rss_mb(procs)
    cpu0, t0 = cpu_s(procs), time.monotonic()
    await asyncio.sleep(args.idle)
    idle_pct = (cpu_s(procs) - cpu0) / (time.monotonic() - t0) * 100
    run.deliveries.clear()
    scraped = await asyncio.to_thread(promtext.scrape, f"{stack.gateway_url}/metrics")
    cpu1, t1 = cpu_s(procs), time.monotonic()
    loaded = await play_apart(run, matches, args.rate, args.seconds)
    loaded_cpu_pct = (cpu_s(procs) - cpu1) / (time.monotonic() - t1) * 100
    await asyncio.sleep(1)  # the last deliveries
    server = promtext.delta(await asyncio.to_thread(promtext.scrape, f"{stack.gateway_url}/metrics"), scraped)
    inside = {kind: {"p50": round(h.p50 * 1000, 2), "p99": round(h.p99 * 1000, 2), "count": h.count}
              for (kind,), h in promtext.histograms(server, "meeple_gateway_event_delivery_seconds",
                                                    ["kind"]).items()}
    connected = await asyncio.to_thread(waiters_held, stack.gateway_url)
    run.stopping = True
    deliveries = list(run.deliveries)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    commits = commit_times(stack.redis_url, {(m, v) for m, v, _ in deliveries})
    delivery_ms = [(at - commits[(m, v)]) * 1000 for m, v, at in deliveries if (m, v) in commits]
    if args.dump:  # one record per delivery, to see when the slow ones happened
        args.dump.write_bytes(orjson.dumps([{"match": m, "version": v, "committed": commits.get((m, v)),
                                             "received": at} for m, v, at in deliveries]))
    per_1000 = max(args.clients, 1) / 1000
    return {"clients": args.clients, "mix": mix, "connected": int(min(held, connected)), "errors": run.errors,
            "error_kinds": run.error_kinds,
            "rss_mb_per_1000": round((rss_after - rss_before) / per_1000, 2),
            "idle_cpu_pct": round(idle_pct, 2), "idle_cpu_pct_per_1000": round(idle_pct / per_1000, 3),
            "event_delivery_ms": percentiles(delivery_ms), "deliveries": len(delivery_ms),
            "server_wake_to_write_ms": inside,
            "move_ms": percentiles(loaded), "moves": len(loaded),
            "move_ms_without_waiters": percentiles(without), "moves_without_waiters": len(without),
            "move_p50_ratio": round(statistics.median(loaded) / statistics.median(without), 3)
            if loaded and without else None,
            "gateway_cpu_pct_while_playing": round(loaded_cpu_pct, 1), "mover_reconnects": run.reopened,
            "rate_moves_per_s": args.rate, "matches": len(matches), "gateway_workers": 2}


def commit_times(redis_url: str, wanted: set[tuple[str, int]]) -> dict[tuple[str, int], float]:
    """When each (match, version) was committed: the ``at`` of its log entry."""
    client = redis.Redis.from_url(redis_url)
    pipe = client.pipeline(transaction=False)
    items = sorted(wanted)
    for match_id, version in items:
        pipe.lindex(keys(match_id)[3], version)
    found = {}
    for item, raw in zip(items, pipe.execute(), strict=True):
        if raw:
            found[item] = float(orjson.loads(raw)["at"])
    return found


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("waiters", help="one gateway node holding N parked waiters while moves are played",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=1000, help="waiters to park")
    parser.add_argument("--mix", default="poll,sse,ws", help="waiter kinds, round robin: poll, sse, ws")
    parser.add_argument("--per-match", type=int, default=PLAYERS, help="waiters per match (one per seat)")
    parser.add_argument("--rate", type=float, default=50.0, help="moves per second while measuring")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each playing phase")
    parser.add_argument("--idle", type=float, default=10.0, help="length of the idle-CPU window")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--dump", type=Path, help="write every delivery (match, version, commit and receipt "
                        "times) to this JSON file")
    parser.set_defaults(func=run_cli)


def run_cli(args: argparse.Namespace) -> int:
    bad = set(args.mix.split(",")) - set(KINDS)
    if bad or not 1 <= args.per_match <= PLAYERS:
        print(f"--mix takes {', '.join(KINDS)}; --per-match 1..{PLAYERS}", file=sys.stderr)
        return 2
    raise_fd_limit(args.clients * 2 + 1024)  # the gateway inherits it; its workers raise their own too
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if limit < args.clients + 512:
        print(f"open-file limit {limit} is too low for {args.clients} waiters", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="meeple-bench-waiters-") as tmp:
        # all the bench's clients share one address: lift the per-address rate limit and match quota
        env = {"MEEPLE_RATE_LIMIT_PER_MINUTE": "1000000", "MEEPLE_MAX_ACTIVE_MATCHES_PER_IP": "1000000"}
        stack = Stack(StackConfig(http_port=0, rules_port=0, bot_workers=0, use_env_redis=False,
                                  data_dir=Path(tmp), log_dir=Path(tmp) / "logs", env=env))
        try:
            stack.start()
            report = asyncio.run(bench(args, stack))
        finally:
            with contextlib.suppress(Exception):
                stack.stop()
    if args.json:
        print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
    else:
        for key, value in report.items():
            print(f"{key:>28}: {value}")
    return 0
