"""``meeple bench grpc``: what one gateway-rules message costs, a unary call each against one long-lived stream.

Issue 47's "gateway-rules hop". Two echo servers on loopback, each in a process of its own: the rules service's
kind (``grpc.server`` on a thread pool of 8, the rules service's channel options) and ``grpc.aio``'s. Each answers
a request of ``--request-bytes`` with a reply of ``--reply-bytes`` (bytes through, no protobuf: the message's
encoding costs the same whichever way it travels). The client is the gateway's kind, a blocking grpcio channel,
and sends its messages one at a time three ways:

* ``unary``: one unary call per message (what the gateway does today);
* ``stream``: one long-lived bidirectional stream, one message in flight, the caller reading the reply off the
  stream itself: the cheapest a stream can be, the floor of any stream design;
* ``stream_ids``: a stream shared as a gateway process would share it between its threads, moves in flight at
  once: each message carries an id, a reader thread takes the replies off the stream and hands each to the thread
  waiting for its id, and the server answers each message on a thread of its own pool (a task on ``aio``), so one
  slow move holds up no other (a stream's handler otherwise answers its messages one after the other). Still one
  message in flight here: what the hand-offs cost, not what concurrency gives.

The default sizes are those of a real move: Fierce Women (3 seats) played with random legal moves through the rules
service's own servicer in-process, sealed, each ``ApplyMove`` as the gateway sends it (``derive`` and ``describe``:
every seat's view, the legal moves and the words come back), the median request and reply bytes.

Every combination runs ``--messages`` messages per round, for ``--rounds`` rounds, the combinations taking turns
(each goes first in turn) so the machine's drift hits them alike. Figures per message: the server process's CPU
(each thread's run time from ``/proc``, to the nanosecond), the client's (this process's, all its threads: grpcio's
own included), and the round trip's p50/p95. Compare ratios: a loaded machine slows everything alike within a run.
Both servers are stopped before the command returns (the JSON lists their pids).
"""

from __future__ import annotations

import services  # noqa: F401  (before grpc, here and in the spawned servers: it sets grpcio's experiments)

# isort: split
import argparse
import asyncio
import multiprocessing
import os
import queue
import random
import statistics
import struct
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
import orjson

from tooling.bench_floor import cpu_s, percentile

SERVERS = ("sync", "aio")
MODES = ("unary", "stream", "stream_ids")
UNARY, STREAM, POOLED = "/bench.Echo/Unary", "/bench.Echo/Stream", "/bench.Echo/Pooled"
#: The rules service's channel options (services/rules/server.py): same limits, no port sharing.
OPTIONS = [("grpc.max_receive_message_length", 16 << 20), ("grpc.max_send_message_length", 16 << 20),
           ("grpc.so_reuseport", 0)]
#: Every message starts with its id (stream_ids matches replies by it; the others carry it too, so sizes match).
ID = struct.Struct("!Q")


def _same(data: bytes) -> bytes:
    return data


def reply_for(request: bytes, reply: bytes) -> bytes:
    """The echo: the request's id, then the reply's bytes."""
    return request[:ID.size] + reply[ID.size:]


def serve_sync(reply_bytes: int, ready: Any) -> None:
    """A blocking grpcio server as the rules service runs one (a thread pool of 8)."""
    reply = bytes(reply_bytes)

    def unary(request: bytes, context: Any) -> bytes:
        return reply_for(request, reply)

    def stream(requests: Iterator[bytes], context: Any) -> Iterator[bytes]:
        for request in requests:
            yield reply_for(request, reply)

    workers = futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="answer")

    def pooled(requests: Iterator[bytes], context: Any) -> Iterator[bytes]:
        """A shared stream's server: each message answered on a pool thread, so one slow move holds up no other."""
        replies: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()

        def answer(request: bytes) -> None:
            replies.put(reply_for(request, reply))

        def read() -> None:
            answers = []
            try:
                for request in requests:
                    answers.append(workers.submit(answer, request))
            except grpc.RpcError:
                pass  # the client went away: the call is over
            futures.wait(answers)
            replies.put(None)

        threading.Thread(target=read, daemon=True).start()
        yield from iter(replies.get, None)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), options=OPTIONS)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("bench.Echo", {
        "Unary": grpc.unary_unary_rpc_method_handler(unary, _same, _same),
        "Stream": grpc.stream_stream_rpc_method_handler(stream, _same, _same),
        "Pooled": grpc.stream_stream_rpc_method_handler(pooled, _same, _same)}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    ready.put(port)
    server.wait_for_termination()


def serve_aio(reply_bytes: int, ready: Any) -> None:
    """The same echo on ``grpc.aio`` (one event loop, no thread per call)."""
    reply = bytes(reply_bytes)

    async def unary(request: bytes, context: Any) -> bytes:
        return reply_for(request, reply)

    async def stream(requests: Any, context: Any) -> Any:
        async for request in requests:
            yield reply_for(request, reply)

    async def pooled(requests: Any, context: Any) -> None:
        """A shared stream's server: each message answered by a task of its own, the replies written in turn."""
        lock, pending = asyncio.Lock(), set()

        async def answer(request: bytes) -> None:
            async with lock:
                await context.write(reply_for(request, reply))

        async for request in requests:
            task = asyncio.create_task(answer(request))
            pending.add(task)
            task.add_done_callback(pending.discard)
        await asyncio.gather(*pending)

    async def main() -> None:
        server = grpc.aio.server(options=OPTIONS)
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("bench.Echo", {
            "Unary": grpc.unary_unary_rpc_method_handler(unary, _same, _same),
            "Stream": grpc.stream_stream_rpc_method_handler(stream, _same, _same),
            "Pooled": grpc.stream_stream_rpc_method_handler(pooled, _same, _same)}),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        ready.put(port)
        await server.wait_for_termination()

    asyncio.run(main())


class Unary:
    """A unary call per message."""

    def __init__(self, channel: grpc.Channel) -> None:
        self.call = channel.unary_unary(UNARY, request_serializer=_same, response_deserializer=_same)

    def send(self, message: bytes) -> bytes:
        reply: bytes = self.call(message, timeout=10)
        return reply

    def close(self) -> None:
        pass


class Stream:
    """One long-lived bidirectional stream, one message in flight, the caller reading its own reply."""

    method = STREAM

    def __init__(self, channel: grpc.Channel) -> None:
        self.outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        call = channel.stream_stream(self.method, request_serializer=_same, response_deserializer=_same)
        self.call: Any = call(iter(self.outbox.get, None))
        self.replies: Iterator[bytes] = iter(self.call)

    def send(self, message: bytes) -> bytes:
        self.outbox.put(message)
        return next(self.replies)

    def close(self) -> None:
        """Half-close: the server answers what it has, then ends the call."""
        self.outbox.put(None)
        for _ in self.replies:
            pass


class StreamIds(Stream):
    """The stream shared by a process's threads: a reader thread hands each reply to the caller waiting for its id
    (the server answers each message on a thread or task of its own: see ``pooled``)."""

    method = POOLED

    def __init__(self, channel: grpc.Channel) -> None:
        super().__init__(channel)
        self.waiting: dict[bytes, futures.Future[bytes]] = {}
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, name="bench-stream-reader", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        try:
            for reply in self.replies:
                with self.lock:
                    waiter = self.waiting.pop(reply[:ID.size], None)
                if waiter is not None:
                    waiter.set_result(reply)
        except grpc.RpcError:
            pass  # the call failed: its waiters time out

    def close(self) -> None:
        self.outbox.put(None)
        self.reader.join(10)

    def send(self, message: bytes) -> bytes:
        waiter: futures.Future[bytes] = futures.Future()
        with self.lock:
            self.waiting[message[:ID.size]] = waiter
        self.outbox.put(message)
        return waiter.result(timeout=10)


CLIENTS: dict[str, Callable[[grpc.Channel], Unary | Stream]] = {"unary": Unary, "stream": Stream,
                                                                "stream_ids": StreamIds}


@dataclass
class Series:
    """One combination's round trips (s), CPU seconds (server, client) and per-round means (µs per message)."""

    rtt: list[float] = field(default_factory=list)
    server_s: float = 0.0
    client_s: float = 0.0
    rounds: list[dict[str, float]] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        n = max(len(self.rtt), 1)
        server, client = self.server_s * 1e6 / n, self.client_s * 1e6 / n
        return {"messages": len(self.rtt), "server_cpu_us": round(server, 1), "client_cpu_us": round(client, 1),
                "cpu_us": round(server + client, 1), "rtt_p50_us": round(percentile(self.rtt, 50) * 1e6, 1),
                "rtt_p95_us": round(percentile(self.rtt, 95) * 1e6, 1),
                "rtt_mean_us": round(statistics.fmean(self.rtt or [0.0]) * 1e6, 1),
                "cpu_us_by_round": [round(r["server"] + r["client"], 1) for r in self.rounds]}


def real_sizes(moves: int = 60, seed: int = 1) -> dict[str, Any]:
    """The median request and reply bytes of ``ApplyMove`` as the gateway sends it, in a Fierce Women match."""
    from services.pb import rules_pb2
    from services.rules.games import get_game
    from services.rules.seal import Sealer, new_key_spec
    from services.rules.server import RulesMetrics, RulesServicer

    game, players = get_game("fierce-women"), 3
    servicer = RulesServicer(RulesMetrics(), Sealer.from_spec(new_key_spec("bench")))
    context: Any = None  # used only to abort, and these moves are legal
    reply = servicer.NewGame(rules_pb2.NewGameRequest(game=game.id, players=players, seed=seed, options_json="{}",
                                                      derive=True), context)
    rng = random.Random(seed)
    state = game.new_game(players, seed, {})
    requests: list[int] = []
    replies: list[int] = []
    while not game.is_over(state) and len(requests) < moves:
        seat = rng.choice(game.to_act(state))
        move = game.sample_move(state, seat, rng)
        request = rules_pb2.ApplyMoveRequest(game=game.id, state=reply.state, seat=seat,
                                             move_json=orjson.dumps(move).decode(), derive=True, describe=True)
        reply = servicer.ApplyMove(request, context)
        game.apply_in_place(state, seat, move)
        requests.append(request.ByteSize())
        replies.append(reply.ByteSize())
    return {"game": game.id, "players": players, "moves": len(requests),
            "request_bytes": int(statistics.median(requests)), "reply_bytes": int(statistics.median(replies)),
            "request_bytes_max": max(requests), "reply_bytes_max": max(replies)}


class Servers:
    """The echo servers, each in a fresh interpreter (``spawn``: no grpcio state forked); all stopped on exit."""

    def __init__(self, reply_bytes: int) -> None:
        self.reply_bytes = reply_bytes
        self.procs: dict[str, Any] = {}
        self.ports: dict[str, int] = {}

    def __enter__(self) -> Servers:
        context = multiprocessing.get_context("spawn")
        try:
            for name, target in (("sync", serve_sync), ("aio", serve_aio)):
                ready = context.Queue()
                proc = context.Process(target=target, args=(self.reply_bytes, ready), name=f"bench-grpc-{name}",
                                       daemon=True)
                proc.start()
                self.procs[name] = proc
                self.ports[name] = ready.get(timeout=60)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def pid(self, name: str) -> int:
        pid: int = self.procs[name].pid
        return pid

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.is_alive():
                proc.terminate()
        for proc in self.procs.values():
            proc.join(10)
            if proc.is_alive():
                proc.kill()
                proc.join()


def run_round(client: Unary | Stream, server_pid: int, messages: list[bytes], series: Series) -> None:
    """Send ``messages`` one at a time; add each round trip and the CPU both sides spent meanwhile."""
    me = os.getpid()
    server0, client0 = cpu_s(server_pid), cpu_s(me)
    rtt = []
    for message in messages:
        start = time.perf_counter()
        reply = client.send(message)
        rtt.append(time.perf_counter() - start)
        if reply[:ID.size] != message[:ID.size]:
            raise RuntimeError("a reply came back for another message")
    server, client_cpu = cpu_s(server_pid) - server0, cpu_s(me) - client0
    series.rtt += rtt
    series.server_s += server
    series.client_s += client_cpu
    series.rounds.append({"server": server * 1e6 / len(messages), "client": client_cpu * 1e6 / len(messages)})


def run_bench(messages: int, rounds: int, warmup: int, request_bytes: int | None, reply_bytes: int | None
              ) -> dict[str, Any]:
    sizes = real_sizes() if request_bytes is None or reply_bytes is None else {}
    request_bytes = sizes["request_bytes"] if request_bytes is None else request_bytes
    reply_bytes = sizes["reply_bytes"] if reply_bytes is None else reply_bytes
    request_bytes, reply_bytes = max(request_bytes, ID.size), max(reply_bytes, ID.size)
    pad = bytes(request_bytes - ID.size)
    sent = 0

    def batch(n: int) -> list[bytes]:
        nonlocal sent
        sent += n
        return [ID.pack(i) + pad for i in range(sent - n, sent)]

    report: dict[str, Any] = {}
    with Servers(reply_bytes) as servers:
        channels = {name: grpc.insecure_channel(f"127.0.0.1:{port}", options=OPTIONS)
                    for name, port in servers.ports.items()}
        combos = [(server, mode) for server in SERVERS for mode in MODES]
        clients = {(server, mode): CLIENTS[mode](channels[server]) for server, mode in combos}
        series = {combo: Series() for combo in combos}
        try:
            for combo, client in clients.items():  # connections, threads, the streams' first message
                run_round(client, servers.pid(combo[0]), batch(warmup), Series())
            for n in range(rounds):
                shift = n % len(combos)
                for combo in combos[shift:] + combos[:shift]:
                    run_round(clients[combo], servers.pid(combo[0]), batch(messages), series[combo])
        finally:
            for client in clients.values():
                client.close()
            for channel in channels.values():
                channel.close()
        report["started_pids"] = [servers.pid(name) for name in SERVERS]
    results = {f"{server}/{mode}": s.figures() for (server, mode), s in series.items()}
    ratios = {}
    for server in SERVERS:
        unary = results[f"{server}/unary"]
        for mode in MODES[1:]:
            mine = results[f"{server}/{mode}"]
            ratios[f"{server}/{mode}_to_unary"] = {key: round(mine[key] / unary[key], 3) if unary[key] else None
                                                  for key in ("server_cpu_us", "client_cpu_us", "cpu_us",
                                                              "rtt_p50_us")}
    return {"request_bytes": request_bytes, "reply_bytes": reply_bytes, "sizes_from": sizes or "given",
            "messages_per_round": messages, "rounds": rounds, "warmup": warmup, "grpcio": grpc.__version__,
            "results": results, "ratios": ratios, **report,
            "load_average_after": [round(x, 2) for x in os.getloadavg()]}


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("grpc", help="a gateway-rules message's CPU and round trip: unary calls against a stream",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1000, help="messages per combination per round")
    parser.add_argument("--rounds", type=int, default=6, help="rounds, the combinations taking turns in each")
    parser.add_argument("--warmup", type=int, default=200, help="untimed messages per combination first")
    parser.add_argument("--request-bytes", type=int, default=None,
                        help="request size (default: the median ApplyMove request of a Fierce Women match)")
    parser.add_argument("--reply-bytes", type=int, default=None,
                        help="reply size (default: the median ApplyMove reply of a Fierce Women match)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.messages < 1 or args.rounds < 1 or args.warmup < 1:
        raise SystemExit("--messages, --rounds and --warmup must be at least 1")
    report = run_bench(args.messages, args.rounds, args.warmup, args.request_bytes, args.reply_bytes)
    if args.json:
        print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
        return 0
    origin = report["sizes_from"]
    print(f"request {report['request_bytes']} B, reply {report['reply_bytes']} B"
          + (f" (median ApplyMove of {origin['game']}, {origin['players']} seats, {origin['moves']} moves)"
             if isinstance(origin, dict) else "")
          + f"; {report['rounds']} rounds x {report['messages_per_round']} messages; grpcio {report['grpcio']}")
    print(f"{'server/client':<18} {'server us':>9} {'client us':>9} {'CPU us':>8} {'rtt p50':>8} {'rtt p95':>8}"
          "  CPU us per message by round")
    for name, f in report["results"].items():
        rounds = " ".join(f"{v:.0f}" for v in f["cpu_us_by_round"])
        print(f"{name:<18} {f['server_cpu_us']:>9.1f} {f['client_cpu_us']:>9.1f} {f['cpu_us']:>8.1f} "
              f"{f['rtt_p50_us']:>8.1f} {f['rtt_p95_us']:>8.1f}  {rounds}")
    for name, r in report["ratios"].items():
        print(f"{name}: server CPU {r['server_cpu_us']:.2f}, client CPU {r['client_cpu_us']:.2f}, "
              f"CPU {r['cpu_us']:.2f}, rtt p50 {r['rtt_p50_us']:.2f}")
    print(f"load average after: {report['load_average_after'][0]:.1f} (a shared machine: compare the ratios)")
    return 0


__all__ = ["add_parser", "run_bench"]
