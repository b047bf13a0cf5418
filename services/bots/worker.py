"""Bot worker: plays the bot seats of every match.

The gateway puts one job per bot seat to act on a Redis Stream, ``bots:jobs:{<shard>}`` of the match's
shard (see ``bots_seam``). Every worker reads every shard's stream through the consumer group ``bots``
(one stream at a time, so a worker takes one job at a time): each job goes to one worker, which loads
the match, lets an ISMCTS bot pick a move for that seat (the search determinizes from the seat's view,
so it never peeks) and submits it through the same compare-and-set path as a human's move. A job a worker
took but never acknowledged (the worker crashed mid-think) is re-claimed by another worker after
``claim_idle_ms``; so is a job whose worker lost Redis while handling it (it stays unacknowledged).

A Redis Cluster primary that is failing over never holds a worker: the worker reads the job streams and loads
a job's match *impatiently* (a node that is down fails at once instead of being waited out; connecting gives up
after ``CONNECT_TIMEOUT_S``: a dead container's or pod's address drops packets rather than refusing them), puts
a job it could not start back on a local retry-later list (it stays pending in the group, so a worker that dies
with it still loses nothing), and takes other matches' jobs meanwhile. The first failure marks the node down:
from then on the job loop leaves it alone (every job stream it serves, every job of a match on it, untried),
and a watcher thread, off the job loop, reads the slot tables again and pings the node until a promoted replica
serves its slots or it answers again. (Each try at a dead node cost seconds in the job loop: a connect that
times out, a name lookup that does, the cluster client's re-read of its slot table; py-spy showed both workers
spending a failover there while healthy matches waited.) Committing a move and enqueueing the next job stay
patient: what a commit writes must land.

Workers also answer ``/hint`` (``services/core/match/hints.py``): jobs on ``bots:hints`` run the easy bot
for the asking seat with the job's own small time budget, and are taken before bot moves (a person is
waiting on them). A hint job is never re-claimed: its gateway has stopped waiting by then.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import heapq
import logging
import os
import signal
import socket
import threading
import time
from typing import Any

import orjson
import redis
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from redis.backoff import NoBackoff
from redis.retry import Retry

from ai.bot import Bot, choose_move
from services import redisconn
from services.core.config import Config
from services.core.errors import DomainError, Kind
from services.core.match import hints, legacy
from services.core.match.bots_seam import BOT_JOB_STREAMS, bot_jobs_stream
from services.core.match.commit import fits_pending_decision
from services.core.match.moves import apply_move
from services.core.metrics import timed_redis
from services.core.record import control
from services.core.record.store import MatchStore, keys
from services.core.service import Core
from services.rules.games import get_game
from services.rules.seal import strip as unsealed

log = logging.getLogger("meeple.bots")
GROUP = "bots"
THINK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.5, 5.0, 10.0)
#: The queue-depth gauges are refreshed at most this often (two extra round trips each time).
DEPTH_EVERY_S = 1.0
DEPTH_CAP = 10_000
#: On a cluster a blocking read waits on one stream (multi-key reads must stay in one slot): this long,
#: then the worker sweeps every stream again.
CLUSTER_BLOCK_MS = 100
#: A job that could not start (its match's primary is down) is tried again after this long, doubling each
#: time up to the cap (a failover takes a few seconds: its matches go on soon after it); a node that is down
#: is left alone this long (its streams, its matches' jobs).
RETRY_FIRST_S, RETRY_CAP_S, STREAM_REST_S = 0.5, 2.0, 1.0
#: The impatient clients' connect timeout; how often the watcher looks at the nodes marked down.
CONNECT_TIMEOUT_S, WATCH_EVERY_S = 1.0, 0.5


@dataclasses.dataclass(order=True)
class Later:
    """A job put back for later (it is still pending in the group: a dead worker's is re-claimed)."""

    due: float
    stream: str = dataclasses.field(compare=False)
    entry_id: bytes = dataclasses.field(compare=False)
    fields: dict[bytes, bytes] = dataclasses.field(compare=False)
    attempts: int = dataclasses.field(default=1, compare=False)


class NodeDown(Exception):
    """A node a job needs is marked down: the job goes back for later without being tried."""


class BotMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.think = Histogram("meeple_bot_think_seconds", "Bot think time per move", ["game", "level"],
                               buckets=THINK_BUCKETS, registry=self.registry)
        self.iterations = Counter("meeple_bot_iterations_total", "ISMCTS iterations", ["game", "level"],
                                  registry=self.registry)
        self.jobs = Counter("meeple_bot_jobs_total", "Bot jobs by outcome", ["outcome"], registry=self.registry)
        self.pending = Gauge("meeple_bot_jobs_pending", "Jobs taken by a worker but not yet acknowledged",
                             registry=self.registry)
        self.claimed = Counter("meeple_bot_jobs_reclaimed_total", "Jobs re-claimed from a silent worker",
                               registry=self.registry)
        self.queue = Gauge("meeple_bot_queue_length", "Bot jobs no worker has taken yet (the queue's depth)",
                           registry=self.registry)


class Worker:
    def __init__(self, redis_url: str, rules_addr: str, name: str | None = None, claim_idle_ms: int = 30_000,
                 metrics: BotMetrics | None = None) -> None:
        self.metrics = metrics or BotMetrics()
        # the gateways' settings (TTLs), on this worker's Redis and rules service
        config = dataclasses.replace(Config.from_env(), redis_url=redis_url, rules_addr=rules_addr)
        self.core = Core.connect(config, self.metrics.registry, socket_timeout=30)
        self.redis, self.store = self.core.redis, self.core.store
        #: the job streams, read without waiting out a failover (see the module docstring), and the matches of
        #: the jobs, loaded the same way (``quick``); one try each (the job loop has other work)
        self.jobs = timed_redis(redis_url, self.core.metrics.redis, patient=False, socket_timeout=30,
                                socket_connect_timeout=CONNECT_TIMEOUT_S)
        if redisconn.is_cluster(self.jobs):
            self.jobs.set_retry(Retry(NoBackoff(), 0))
        self.quick = MatchStore.from_config(self.jobs, config)
        self.later: list[Later] = []  # a heap: jobs to try again, soonest first
        self._resting: dict[str, float] = {}  # stream -> until when it is left alone
        self._down: dict[str, float] = {}  # node ("host:port") -> when it was found down (the watcher clears it)
        self.name = name or f"{socket.gethostname()}-{os.getpid()}"
        self.claim_idle_ms = claim_idle_ms
        self._depth_at = self._claimed_at = 0.0
        self._next = 0  # the stream the next sweep starts at (round robin: no shard starves)
        self.stopping = threading.Event()
        #: streams whose consumer group is not known to exist yet (made at the first read of each)
        self._groupless = {*BOT_JOB_STREAMS, hints.HINTS_STREAM}
        for stream in sorted(self._groupless):
            self._has_group(stream)
        legacy.migrate(self.store)  # jobs an older version left in the unsharded stream

    def _has_group(self, stream: str) -> bool:
        """Make the stream's consumer group if it may not exist yet; False if its node is down (rest it)."""
        if stream not in self._groupless:
            return True
        node = self._node(self.jobs, stream)
        if node in self._down:
            return False
        try:
            self.jobs.xgroup_create(stream, GROUP, id="0", mkstream=True)
        except redis.ResponseError as err:
            if "BUSYGROUP" not in str(err):
                raise
        except redisconn.UNAVAILABLE:  # a worker that starts while a primary is down starts all the same
            self._rest(stream, node)
            return False
        self._groupless.discard(stream)
        return True

    def hint(self, job: dict[str, Any]) -> str:
        """Answer a hint job if its gateway still waits and the seat's decision is still the one asked about."""
        if time.time() > float(job["deadline"]):
            return "hint_expired"
        match, seat = self.quick.load(job["match_id"], patient=False), job["seat"]
        if (match is None or match.version != job["version"] or match.meta.status != "active"
                or seat not in match.meta.to_act):
            hints.answer(self.redis, job, {"stale": True})
            return "hint_stale"
        game = get_game(match.game)
        budget = min(max(float(job["budget_s"]), 0.01), 10.0)
        state = game.decode(unsealed(match.state))  # no key here: validated in full
        move = choose_move(game, state, seat, level=hints.HINT_LEVEL, seed=match.version, seconds=budget)
        hints.answer(self.redis, job, {"move": move})
        return "hint"

    def handle(self, job: dict[str, Any]) -> str:
        """Play the job's move if it is still due; returns the outcome for metrics."""
        match = self.quick.load(job["match_id"], patient=False)  # a primary failing over: put back at once
        if match is None:
            return "expired"
        seat = job["seat"]
        if (match.meta.status != "active" or not control.bot_plays(match.meta.seats[seat])
                or not (match.version == job["version"] or fits_pending_decision(self.store, match, seat,
                                                                                  job["version"]))):
            return "stale"  # the decision the job was for has been made (or is no longer a bot's)
        game = get_game(match.game)
        state = game.decode(unsealed(match.state))  # no key here: validated in full
        level = control.bot_level(match.meta, seat)
        seed = int.from_bytes(hashlib.sha256(f"{match.id}:{match.version}:{seat}".encode()).digest()[:8], "big")
        bot = Bot(level, seed=seed)
        start = time.perf_counter()
        move = bot.choose(game, state, seat)
        self.metrics.think.labels(game.id, level).observe(time.perf_counter() - start)
        self.metrics.iterations.labels(game.id, level).inc(bot.stats.iterations)
        try:
            apply_move(self.core, match, seat, move, match.version, by_bot=True)
        except DomainError as err:
            if err.kind is Kind.UNAVAILABLE:
                raise  # leave the job pending: it will be retried
            log.info("bot move for %s seat %d not applied: %s", match.id, seat, err.message)
            return "rejected"
        return "played"

    def _process(self, stream: Any, entry_id: bytes, fields: dict[bytes, bytes], attempts: int = 0) -> None:
        name = stream.decode() if isinstance(stream, bytes) else str(stream)
        node = None
        try:
            job = orjson.loads(fields[b"job"])
            if name != hints.HINTS_STREAM:
                node = self._node(self.jobs, keys(str(job["match_id"]))[0])
                self._must_reach(str(job["match_id"]))
            outcome = self.hint(job) if name == hints.HINTS_STREAM else self.handle(job)
        except NodeDown:  # a node this job needs is down: back for later, untried
            heapq.heappush(self.later, Later(time.monotonic() + RETRY_FIRST_S, name, entry_id, fields, attempts))
            return
        except (DomainError, *redisconn.UNAVAILABLE) as err:
            # a dependency is down (rules, or the match's primary failing over): try again later, meanwhile
            # the other matches' jobs (it stays pending: a worker that dies with it loses nothing)
            log.warning("job %s postponed: %s", entry_id, getattr(err, "message", err))
            self.metrics.jobs.labels("postponed").inc()
            if node is not None and isinstance(err, redisconn.UNAVAILABLE):
                self._rest_node(node)
            if name != hints.HINTS_STREAM:  # (a hint's asker stops waiting long before)
                wait = min(RETRY_CAP_S, RETRY_FIRST_S * 2 ** attempts)
                heapq.heappush(self.later, Later(time.monotonic() + wait, name, entry_id, fields, attempts + 1))
            return
        except Exception:
            log.exception("job %s failed", entry_id)
            outcome = "failed"
        self._ack(name, entry_id)
        self.metrics.jobs.labels(outcome).inc()

    def _ack(self, stream: str, entry_id: bytes) -> None:
        node = self._node(self.jobs, stream)
        try:
            self.jobs.xack(stream, GROUP, entry_id)
        except redisconn.UNAVAILABLE:  # the stream's node is down: its next reader sees the job and skips it
            self._rest(stream, node)

    @staticmethod
    def _node(client: Any, key: str) -> str | None:
        """The node serving ``key`` in ``client``'s slot table ("single" on one server; None if none is known)."""
        if not redisconn.is_cluster(client):
            return "single"
        try:
            return str(client.get_node_from_key(key).name)
        except (redis.RedisError, LookupError):  # a slot with no primary right now
            return None

    def _must_reach(self, match_id: str) -> None:
        """Raise :class:`NodeDown` if a node that playing this match's job must write to is marked down: the
        match's own (its webhook outbox mark too: in the match's slot, ``services/core/tenancy/webhooks.py``) and its
        job stream's (the next bot job). Started, such a job would hold the job loop while the patient commit
        waits out the failover, or commit the move and then fail to enqueue the next bot job, leaving the
        match with nobody to play its bot seat."""
        if not self._down:
            return
        for key in (keys(match_id)[0], bot_jobs_stream(match_id, self.jobs)):
            if self._node(self.jobs, key) in self._down:
                raise NodeDown(key)

    def _rest(self, stream: str, node: str | None) -> None:
        """Leave ``stream`` alone for a moment, and the node that served it (``node``, as the slot table said
        before the failed command: the cluster client reads the table again on every failure)."""
        self._resting[stream] = time.monotonic() + STREAM_REST_S
        if node is not None:
            self._rest_node(node)

    def _rest_node(self, node: str) -> None:
        """Mark ``node`` down: the job loop leaves every stream it serves and every job of a match on it alone
        until the watcher (:meth:`watch`) finds its slots served by another node, or the node answering."""
        now = time.monotonic()
        self._down.setdefault(node, now)
        for stream in (hints.HINTS_STREAM, *BOT_JOB_STREAMS):
            if self._node(self.jobs, stream) == node:
                self._resting[stream] = now + STREAM_REST_S

    def watch(self) -> None:
        """Off the job loop, while a node is marked down: read both clients' slot tables again (the longest-down
        node asked last) and ping the nodes still serving slots, every ``WATCH_EVERY_S``; a node that serves no
        slot any more (a replica took them over) or answers is up. Each ping runs in a thread of its own, waited
        on ``CONNECT_TIMEOUT_S`` at most: a dead node's name lookup can take seconds, and must not delay the
        news that its slots moved, nor the other nodes' pings."""
        pings: dict[str, threading.Thread] = {}
        answered: set[str] = set()
        while not self.stopping.wait(WATCH_EVERY_S):
            down = list(self._down)
            if not down:
                continue
            for client in (self.jobs, self.redis):
                redisconn.refresh(client, failed=down[0])
            serving = self._serving()
            for node in down:
                if serving is not None and node not in serving:
                    self._up(node, "no primary any more (its slots moved)")
                elif node not in pings or not pings[node].is_alive():
                    pings[node] = threading.Thread(target=self._ping, args=(node, answered), name=f"ping {node}",
                                                   daemon=True)
                    pings[node].start()
            deadline = time.monotonic() + CONNECT_TIMEOUT_S
            for node, ping in list(pings.items()):
                ping.join(max(0.0, deadline - time.monotonic()))
                if node in answered:
                    answered.discard(node)
                    self._up(node, "up again")

    def _ping(self, node: str, answered: set[str]) -> None:
        if self._answers(node):
            answered.add(node)

    def _up(self, node: str, why: str) -> None:
        if self._down.pop(node, None) is not None:
            log.info("redis node %s is %s", node, why)

    def _serving(self) -> set[str] | None:
        """The nodes that serve slots in the job client's table (None on one server)."""
        if not redisconn.is_cluster(self.jobs):
            return None
        cache = self.jobs.nodes_manager.slots_cache
        return {str(nodes[0].name) for nodes in list(cache.values()) if nodes}

    def _answers(self, node: str) -> bool:
        """Does ``node`` answer a PING (a client of its own, short timeouts: this runs off the job loop)?"""
        if node == "single":
            with contextlib.suppress(redis.RedisError, OSError):
                return bool(self.jobs.ping())
            return False
        host, _, port = node.rpartition(":")
        client = redis.Redis(host=host, port=int(port), socket_timeout=CONNECT_TIMEOUT_S,
                             socket_connect_timeout=CONNECT_TIMEOUT_S)
        try:
            return bool(client.ping())
        except (redis.RedisError, OSError):
            return False
        finally:
            client.close()

    def _awake(self, stream: str, now: float) -> bool:
        return (self._resting.get(stream, 0.0) <= now and self._node(self.jobs, stream) not in self._down
                and self._has_group(stream))

    def run_once(self, block_ms: int = 2000) -> int:
        """Jobs put back for later that are due, re-claimed jobs of silent workers, then new ones; returns how
        many were handled."""
        handled = 0
        now = time.monotonic()
        while self.later and self.later[0].due <= now:
            again = heapq.heappop(self.later)
            self._process(again.stream, again.entry_id, again.fields, again.attempts)
            handled += 1
        if now - self._claimed_at >= min(1.0, self.claim_idle_ms / 4000):
            self._claimed_at = now
            waiting = {entry.entry_id for entry in self.later}
            for stream in BOT_JOB_STREAMS:
                if not self._awake(stream, now):
                    continue
                node = self._node(self.jobs, stream)
                try:
                    reply: Any = self.jobs.xautoclaim(stream, GROUP, self.name, self.claim_idle_ms,
                                                      start_id="0-0", count=10)
                except redisconn.UNAVAILABLE:
                    self._rest(stream, node)
                    continue
                for entry_id, fields in reply[1]:
                    if fields and entry_id not in waiting:  # (this worker's own postponed jobs idle too)
                        self.metrics.claimed.inc()
                        self._process(stream, entry_id, fields)
                        handled += 1
        for stream, entries in self._take(block_ms):
            for entry_id, fields in entries:
                self._process(stream, entry_id, fields)
                handled += 1
        # (the gauges wait while a node is down, and until every stream has its group: XPENDING needs it)
        resting = bool(self._down) or any(until > time.monotonic() for until in self._resting.values())
        if time.monotonic() - self._depth_at >= DEPTH_EVERY_S and not resting and not self._groupless:
            self._depth_at = time.monotonic()
            try:
                pipe = self.jobs.pipeline(transaction=False)
                for stream in BOT_JOB_STREAMS:
                    pipe.xpending(stream, GROUP)
                self.metrics.pending.set(sum(p["pending"] if isinstance(p, dict) else 0 for p in pipe.execute()))
                self.metrics.queue.set(self.queue_depth())
            except redisconn.UNAVAILABLE:
                pass  # a node is down: the gauges wait for the next look
        return handled

    def _read(self, watched: dict[str, str], block_ms: int | None = None) -> list[Any]:
        """One XREADGROUP of ``watched`` (one job at most); a stream whose node is down rests instead."""
        nodes = {stream: self._node(self.jobs, stream) for stream in watched}
        try:
            found: Any = self.jobs.xreadgroup(GROUP, self.name, watched, count=1, block=block_ms)
        except redisconn.UNAVAILABLE:
            for stream in watched:
                self._rest(stream, nodes[stream])
            return []
        return list(found or [])

    def _take(self, block_ms: int) -> list[Any]:
        """The next job: a hint first (a person waits on it), then a sweep over the job streams (one job at
        most: a worker must not hoard jobs others could play), then, if all were empty, a blocking read (on
        one server, of every stream at once; never longer than the next job put back for later is due)."""
        now = time.monotonic()
        if self._awake(hints.HINTS_STREAM, now):
            asked = self._read({hints.HINTS_STREAM: ">"})
            if asked:  # a person waits on a hint: before any bot move
                return asked
        count = len(BOT_JOB_STREAMS)
        start, self._next = self._next, (self._next + 1) % count
        for i in range(count):
            stream = BOT_JOB_STREAMS[(start + i) % count]
            if self._awake(stream, now):
                fresh = self._read({stream: ">"})
                if fresh:
                    return fresh
        if self.later:
            block_ms = max(1, min(block_ms, int((self.later[0].due - now) * 1000)))
        if redisconn.is_cluster(self.jobs):
            awake = [s for s in BOT_JOB_STREAMS if self._awake(s, now)] or [BOT_JOB_STREAMS[start]]
            watched = {awake[start % len(awake)]: ">"}
            block_ms = min(block_ms, CLUSTER_BLOCK_MS)
        else:
            watched = {stream: ">" for stream in (hints.HINTS_STREAM, *BOT_JOB_STREAMS)}
        return self._read(watched, block_ms)

    def queue_depth(self) -> int:
        """Jobs the group has not handed to any worker yet, over every stream."""
        return sum(self._stream_depth(stream) for stream in BOT_JOB_STREAMS)

    def _stream_depth(self, stream: str) -> int:
        """Jobs of ``stream`` the group has not handed out.

        The stream keeps acknowledged entries (up to its MAXLEN), so its length is not the depth: count
        the entries after the group's last delivered id (Redis 6.2 has no ``lag`` field), up to a cap.
        """
        groups: Any = self.jobs.xinfo_groups(stream)
        for group in groups:
            name = group["name"].decode() if isinstance(group["name"], bytes) else group["name"]
            if name == GROUP:
                if group.get("lag") is not None:
                    return int(group["lag"])
                last = group["last-delivered-id"]
                last = last.decode() if isinstance(last, bytes) else str(last)
                waiting: Any = self.jobs.xrange(stream, min=f"({last}", count=DEPTH_CAP)
                return len(waiting)
        return 0

    def run(self) -> None:
        log.info("bot worker %s taking jobs from %s", self.name, ", ".join(BOT_JOB_STREAMS))
        threading.Thread(target=self.watch, name="down-nodes", daemon=True).start()
        while not self.stopping.is_set():
            try:
                self.run_once()
            except redisconn.UNAVAILABLE as err:
                log.warning("redis unavailable: %s", err)
                redisconn.refresh(self.redis)
                time.sleep(1)


def lower_priority(by: int) -> None:
    """``os.nice(by)``, and the same for the scheduler's autogroup when this process leads its session.

    With autogroup scheduling (Linux's default on desktops and many VMs), every session is a group that
    gets its fair share whatever its processes' nice values; a worker started in a session of its own
    (as ``meeple run`` starts it) would then not yield at all. A worker sharing a terminal's session
    leaves the group alone: that would slow the whole terminal.
    """
    os.nice(by)
    if os.getsid(0) == os.getpid():
        try:
            with open("/proc/self/autogroup", "w") as group:
                group.write(str(by))
        except OSError:  # no autogroup here (or not Linux): nice alone does it
            pass


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metrics-port", type=int, default=int(os.environ.get("MEEPLE_BOTS_METRICS_PORT", "9102")))
    parser.add_argument("--claim-idle-ms", type=int, default=int(os.environ.get("MEEPLE_BOTS_CLAIM_IDLE_MS", "30000")),
                        help="re-claim a job another worker took but did not finish after this long")
    parser.add_argument("--name", default=None, help="consumer name (default host-pid)")
    parser.add_argument("--nice", type=int, default=int(os.environ.get("MEEPLE_BOTS_NICE", "0")),
                        help="lower this worker's CPU priority by this much (os.nice): on a machine shared with "
                             "the gateway, a search then waits for HTTP requests, not the other way round")


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("bots", help="a bot worker process")
    add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.nice:
        lower_priority(args.nice)
    metrics = BotMetrics()
    start_http_server(args.metrics_port, registry=metrics.registry)
    worker = Worker(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
                    os.environ.get("MEEPLE_RULES_ADDR", "127.0.0.1:50051"), args.name, args.claim_idle_ms, metrics)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: worker.stopping.set())
    worker.run()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="meeple serve bots", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
