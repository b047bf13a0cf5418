"""Waiting that costs a socket and a little memory: one event reader per process wakes every waiter.

A *waiter* is a long-poll, an SSE stream, a WebSocket or a matchmaking long-poll that waits for a Redis
stream (a match's ``match:{id}:events``, a ticket's ``mm:ticket:{t}:events``) to pass a known entry.
It holds no thread and no Redis connection of its own: it is an entry in :class:`Hub`, and one
:class:`Reader` thread per process runs one blocking ``XREAD`` over the streams of every watched key on
its own connection (never the request pool, so waiters cannot starve moves). When an entry arrives, the
reader calls ``notify`` of exactly the waiters of that key whose condition holds (``until=turn``
waiters look at the entry's ``wake`` field: no wake-up for other seats' turns).

The reader is re-armed when a key is added: ``CLIENT UNBLOCK`` interrupts its ``XREAD`` (a 1-s block is
the safety net). A key stays watched for ``LINGER_S`` after its last waiter left, because a long-poll
client comes straight back for the next version.

On a Redis Cluster an ``XREAD`` over keys of different slots fails with ``CROSSSLOT`` (even on one node),
so there the hub does not read streams: every stream write also ``PUBLISH``es ``<key> <version> <wake>`` on
:data:`~.store.EVENTS_CHANNEL` (in the match script, and after a ticket's XADD), and one :class:`Subscriber`
thread per process listens on one node (Redis 6.2 sends a cluster's PUBLISH to every node; on a lost node
it subscribes on the next one). A notification can be missed where a stream read cannot (a version written
after the request looked but before its waiter was registered; anything during a re-subscription), so
each new waiter's stream is read once after it is registered, and every watched stream after each
(re-)subscription, by a :class:`Checker` thread (``XREVRANGE`` from the waiter's version, batched in one
cluster pipeline). A single Redis keeps the ``XREAD`` reader: no message per event to every process, and no
extra read per park.

Limits (``MEEPLE_WAITERS_MAX`` per process, ``MEEPLE_WAITERS_PER_CLIENT`` per token or IP) are taken
by :meth:`Hub.admit` before a request parks: past them that request gets 503/429, nothing else is touched.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis

from services import redisconn

from .errors import ApiError
from .store import EVENTS_CHANNEL, parse_wake, your_turn_or_over

log = logging.getLogger("meeple.gateway.hub")

#: How long one XREAD blocks at most (a safety net: adding a key interrupts it with CLIENT UNBLOCK).
BLOCK_MS = 1000
#: Entries read per key and XREAD (a waiter needs only the newest; more is kept for until=turn).
COUNT = 64
#: A key stays watched this long after its last waiter left (a long-poll's client comes back at once).
LINGER_S = 10.0
KINDS = ("poll", "sse", "ws", "ticket")


@dataclass(eq=False)
class Waiter:
    """One wait: ``key`` must pass entry ``after`` (and, with ``seat``, reach that seat's turn or the end).

    ``notify`` runs on the reader thread once, with the version seen (-1 when the hub could not tell):
    it must only hand the work on, never block.
    """

    key: str
    after: int
    notify: Callable[[int], None]
    seat: int | None = None
    fired_at: float = 0.0  # perf_counter() when notified: the delivery-latency metric starts here

    def wants(self, version: int, wake: bytes | None) -> bool:
        if version <= self.after:
            return False
        return self.seat is None or wake is None or your_turn_or_over(*parse_wake(wake), self.seat)


@dataclass(eq=False)
class Slot:
    """A waiter's place under the caps, held from parking to answering (or the client leaving)."""

    hub: Hub
    kind: str
    client: str
    released: bool = False

    def release(self) -> None:
        self.hub._release(self)


@dataclass
class _Watch:
    cursor: str  # the XREAD id: entries after it are new
    version: int  # the version of ``cursor`` (from a waiter's ``after`` until the reader has read an entry)
    read: int = -1  # the newest version the reader has actually seen (-1: none yet)
    waiters: set[Waiter] = field(default_factory=set)
    idle_since: float = 0.0


def _cursor(after: int) -> str:
    """The XREAD id after which a waiter for versions past ``after`` must read (entry ids are ``<version>-1``)."""
    return f"{after}-1" if after >= 0 else "0-0"


class Reader(threading.Thread):
    """One blocking XREAD over every watched key, on a connection of its own (a single Redis)."""

    def __init__(self, hub: Hub) -> None:
        super().__init__(name="hub-reader", daemon=True)
        self.hub = hub
        self.client = hub.connect()
        self.client_id: int | None = None
        self.generation = 0  # bumped by every XREAD the reader starts; lets a re-arm tell if it is in time
        self.blocked = False

    def run(self) -> None:
        while not self.hub.stopped:
            streams = self.hub._streams(self)
            if not streams:
                with self.hub.changed:
                    self.hub.changed.wait(BLOCK_MS / 1000)
                continue
            try:
                if self.client_id is None:
                    self.client_id = int(self.client.client_id())
                reply: Any = self.client.xread(streams, count=COUNT, block=BLOCK_MS)  # type: ignore[arg-type]
            except redis.RedisError as err:
                self.client_id = None
                log.warning("event reader: %s; retrying", err)
                time.sleep(0.5)
                continue
            finally:
                self.blocked = False
            if reply:
                self.hub._dispatch(reply)

    def interrupt(self) -> None:
        """Make the reader look at its keys again now (a key was added)."""
        if self.client_id is None:
            return
        generation = self.generation
        for _ in range(5):  # the reader may be between building its keys and blocking: try a few times
            try:
                if self.hub.control.client_unblock(self.client_id):
                    return
            except redis.RedisError:
                return
            if self.generation != generation:
                return  # it started a new XREAD, which includes the new key
            time.sleep(0.002)


class Subscriber(threading.Thread):
    """A Redis Cluster's reader: one subscription to :data:`EVENTS_CHANNEL` on one node, the next on a loss."""

    def __init__(self, hub: Hub) -> None:
        super().__init__(name="hub-subscriber", daemon=True)
        self.hub = hub
        self.blocked = False  # (the XREAD reader's re-arm does not apply: every key is heard)
        self.turn = 0
        self.node = ""  # host:port subscribed to now (tests kill it)
        self.subscribed = False

    def interrupt(self) -> None:
        """Nothing to re-arm: the subscription hears every key."""

    def run(self) -> None:
        while not self.hub.stopped:
            try:
                self.listen()
            except redis.RedisError as err:
                log.warning("event subscription on %s lost: %s; subscribing elsewhere", self.node, err)
                self.turn += 1
                redisconn.refresh(self.hub.checker.client)
                time.sleep(0.2)

    def listen(self) -> None:
        nodes = sorted(self.hub.checker.client.get_nodes(), key=lambda n: (n.host, n.port))
        node = nodes[self.turn % len(nodes)]
        self.node = f"{node.host}:{node.port}"
        client = redis.Redis(host=node.host, port=node.port, socket_connect_timeout=2, socket_timeout=10,
                             health_check_interval=5)
        pubsub = client.pubsub()
        try:
            pubsub.subscribe(EVENTS_CHANNEL)
            while not self.hub.stopped:
                message = pubsub.get_message(timeout=1.0)
                if message is None:
                    with self.hub.lock:
                        self.hub._prune()
                elif message["type"] == "message":
                    self.hub._published(message["data"])
                elif message["type"] == "subscribe":
                    self.subscribed = True
                    self.hub._recheck_all()  # anything written while not subscribed
        finally:
            self.subscribed = False
            pubsub.close()
            client.close()


class Checker(threading.Thread):
    """Reads streams once for the cluster's hub: a new waiter's (closing the race of a notification) and,
    after a (re-)subscription, every watched one. Batched: one pipeline per round, dispatched as XREAD is."""

    def __init__(self, hub: Hub) -> None:
        super().__init__(name="hub-checker", daemon=True)
        self.hub = hub
        self.todo: queue.SimpleQueue[tuple[str, int]] = queue.SimpleQueue()
        self.client: Any = redisconn.connect(hub.redis_url, socket_connect_timeout=2, socket_timeout=5)

    def check(self, key: str, after: int) -> None:
        self.todo.put((key, after))

    def run(self) -> None:
        while not self.hub.stopped:
            batch: dict[str, int] = {}
            key, after = self.todo.get()
            if self.hub.stopped:
                return
            while True:
                batch[key] = min(after, batch.get(key, after))
                try:
                    key, after = self.todo.get_nowait()
                except queue.Empty:
                    break
            try:
                pipe = self.client.pipeline(transaction=False)
                for key, after in batch.items():
                    pipe.xrevrange(key, "+", f"({_cursor(after)}" if after >= 0 else "-", count=COUNT)
                replies = pipe.execute()
            except redis.RedisError as err:  # failing over: again shortly, for keys still watched
                log.warning("event check: %s; retrying", err)
                time.sleep(0.5)
                with self.hub.lock:
                    for key, after in batch.items():
                        if key in self.hub.watches:
                            self.todo.put((key, after))
                continue
            self.hub._dispatch([(key, entries[::-1]) for key, entries in zip(batch, replies, strict=True) if entries])


class Hub:
    """The waiters of one process, the caps on them, and the readers that wake them."""

    def __init__(self, redis_url: str, max_waiters: int, per_client: int,
                 metrics: Any = None, connect: Callable[[], redis.Redis] | None = None) -> None:
        self.redis_url = redis_url
        self.max_waiters, self.per_client = max_waiters, per_client
        self.metrics = metrics
        self.connect = connect or self._connect
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.watches: dict[str, _Watch] = {}
        #: key -> cursor: what the reader's XREAD takes, kept up to date (copied, not rebuilt, per call)
        self.cursors: dict[str, str] = {}
        self.pruned_at = 0.0
        self.reader: Reader | Subscriber | None = None
        self.held = 0
        self.by_client: Counter[str] = Counter()
        self.by_kind: Counter[str] = Counter()
        self.stopped = False
        self._control: redis.Redis | None = None
        #: on a Redis Cluster: pub/sub and a stream check per new waiter instead of XREAD (module docstring)
        self.cluster = redisconn.cluster_url(redis_url) is not None
        self._checker: Checker | None = None

    def _connect(self) -> redis.Redis:
        """The reader's own connection (blocking reads never come from, or wait for, the request pool).

        Single Redis only (a cluster's hub subscribes instead)."""
        client: Any = redisconn.connect(self.redis_url, socket_connect_timeout=2,
                                                socket_timeout=BLOCK_MS / 1000 + 5, single_connection_client=True)
        return client

    @property
    def control(self) -> redis.Redis:
        """A small client of the hub's own for CLIENT UNBLOCK."""
        if self._control is None:
            control: Any = redisconn.connect(self.redis_url, socket_connect_timeout=2, socket_timeout=2,
                                             max_connections=4)
            self._control = control
        return self._control

    @property
    def checker(self) -> Checker:
        """The cluster's stream checker (started with the first waiter)."""
        with self.lock:
            if self._checker is None:
                self._checker = Checker(self)
                self._checker.start()
            return self._checker

    # -- limits ---------------------------------------------------------------------------------------------
    def admit(self, kind: str, client: str) -> Slot:
        """A place for one more waiter of ``client``, or 503 (this process is full) / 429 (that client is).

        ``client`` "" is a WebSocket before its hello: under the process cap only, until :meth:`transfer`.
        """
        with self.lock:
            if self.held >= self.max_waiters:
                self._count_refusal(kind, "process")
                raise ApiError(503, "too_many_waiters", f"this server holds {self.max_waiters} waiting requests; "
                               "retry shortly (another server may take it)", {"Retry-After": "2"})
            if client and self.by_client[client] >= self.per_client:
                self._count_refusal(kind, "client")
                raise ApiError(429, "too_many_waiters", f"at most {self.per_client} waiting requests per token "
                               "(or per address without one); close one first", {"Retry-After": "5"})
            self.held += 1
            self.by_client[client] += 1
            self.by_kind[kind] += 1
        if self.metrics is not None:
            self.metrics.waiters.labels(kind).inc()
            self.metrics.events_waiting.inc()
        return Slot(self, kind, client)

    def transfer(self, slot: Slot, client: str) -> None:
        """Count ``slot`` against another client from now on (a WebSocket that authenticated in its hello);
        429 if that client is at its cap (the slot then stays where it was)."""
        with self.lock:
            if slot.released or client == slot.client:
                return
            if self.by_client[client] >= self.per_client:
                self._count_refusal(slot.kind, "client")
                raise ApiError(429, "too_many_waiters", f"at most {self.per_client} waiting requests per token "
                               "(or per address without one); close one first", {"Retry-After": "5"})
            self.by_client[slot.client] -= 1
            if self.by_client[slot.client] <= 0:
                del self.by_client[slot.client]
            self.by_client[client] += 1
            slot.client = client

    def _count_refusal(self, kind: str, why: str) -> None:
        if self.metrics is not None:
            self.metrics.waiters_refused.labels(kind, why).inc()

    def _release(self, slot: Slot) -> None:
        with self.lock:
            if slot.released:
                return
            slot.released = True
            self.held -= 1
            self.by_client[slot.client] -= 1
            if self.by_client[slot.client] <= 0:
                del self.by_client[slot.client]
            self.by_kind[slot.kind] -= 1
        if self.metrics is not None:
            self.metrics.waiters.labels(slot.kind).dec()
            self.metrics.events_waiting.dec()

    # -- waiting --------------------------------------------------------------------------------------------
    def watch(self, waiter: Waiter) -> None:
        """Wake ``waiter`` (once) when its key passes ``waiter.after``; at once if the reader already saw it."""
        fire = False
        rearm = False
        with self.lock:
            watch = self.watches.get(waiter.key)
            if watch is None:
                watch = self.watches[waiter.key] = _Watch(_cursor(waiter.after), waiter.after)
                self.cursors[waiter.key] = watch.cursor
                rearm = True
            if watch.read > waiter.after:
                fire = True  # the reader saw a newer entry already (what it was, the waiter's re-run reads)
            else:
                watch.waiters.add(waiter)
                if waiter.after < watch.version:  # the cursor came from a waiter that knew more: go back
                    watch.cursor, watch.version = _cursor(waiter.after), waiter.after
                    self.cursors[waiter.key] = watch.cursor
                    rearm = True
            reader = self.reader
            if reader is None:
                reader = self.reader = Subscriber(self) if self.cluster else Reader(self)
                reader.start()
            self.changed.notify_all()
        if fire:
            self._fire(waiter, -1)
        elif self.cluster:
            self.checker.check(waiter.key, waiter.after)
        elif rearm and reader.blocked:
            reader.interrupt()

    def unwatch(self, waiter: Waiter) -> None:
        with self.lock:
            watch = self.watches.get(waiter.key)
            if watch is not None and waiter in watch.waiters:
                watch.waiters.discard(waiter)
                if not watch.waiters:
                    watch.idle_since = time.monotonic()

    def wait(self, waiter_key: str, after: int, timeout: float, seat: int | None = None) -> bool:
        """Block the calling thread until the key passes ``after`` (True) or ``timeout`` ends (False).

        For servers that cannot park a request (a plain threaded WSGI server): the thread waits, but
        still on the hub, not on a Redis connection of its own.
        """
        woken = threading.Event()
        waiter = Waiter(waiter_key, after, lambda _: woken.set(), seat)
        self.watch(waiter)
        try:
            return woken.wait(max(timeout, 0.0))
        finally:
            self.unwatch(waiter)

    def stop(self) -> None:
        self.stopped = True
        with self.lock:
            self.changed.notify_all()
            if self._checker is not None:
                self._checker.check("", -1)  # wakes it to see ``stopped``

    # -- the reader's side ------------------------------------------------------------------------------------
    def _streams(self, reader: Reader) -> dict[str, str]:
        """The keys ``reader`` must watch now, with their cursors (dropping keys idle past ``LINGER_S``)."""
        with self.lock:
            self._prune()
            reader.generation += 1
            reader.blocked = True
            return dict(self.cursors)

    def _prune(self) -> None:
        """Stop watching keys idle past ``LINGER_S`` (at most once a second; the caller holds the lock)."""
        now = time.monotonic()
        if now - self.pruned_at > 1.0:
            self.pruned_at = now
            for key in [k for k, w in self.watches.items() if not w.waiters and now - w.idle_since > LINGER_S]:
                del self.watches[key], self.cursors[key]

    def _published(self, data: bytes) -> None:
        """A message on :data:`EVENTS_CHANNEL` (``<key> <version> <wake>``): dispatched as its stream entry."""
        try:
            key, version, wake = data.split(b" ", 2)
            int(version)
        except ValueError:
            log.warning("event channel: unexpected message %r", data[:200])
            return
        self._dispatch([(key, [(version + b"-1", {b"wake": wake} if wake else {})])])

    def _recheck_all(self) -> None:
        """Read every watched stream once (after a (re-)subscription, which may have missed messages)."""
        with self.lock:
            todo = [(key, min(w.after for w in watch.waiters)) for key, watch in self.watches.items() if watch.waiters]
        for key, after in todo:
            self.checker.check(key, after)

    def _dispatch(self, reply: list[Any]) -> None:
        fired: list[tuple[Waiter, int]] = []
        with self.lock:
            for raw_key, entries in reply:
                key = raw_key.decode() if isinstance(raw_key, bytes) else str(raw_key)
                watch = self.watches.get(key)
                if watch is None or not entries:
                    continue
                for entry_id, fields in entries:
                    version = int(entry_id.split(b"-", 1)[0])
                    wake = fields.get(b"wake")
                    for waiter in [w for w in watch.waiters if w.wants(version, wake)]:
                        watch.waiters.discard(waiter)
                        fired.append((waiter, version))
                last_id = entries[-1][0]
                last = int(last_id.split(b"-", 1)[0])
                if not self.cluster or last > watch.read:  # (a check's answer may be older than a message)
                    watch.cursor = self.cursors[key] = last_id.decode()
                    watch.version = watch.read = last
                if not watch.waiters:
                    watch.idle_since = time.monotonic()
        for waiter, version in fired:
            self._fire(waiter, version)

    def _fire(self, waiter: Waiter, version: int) -> None:
        waiter.fired_at = time.perf_counter()
        if self.metrics is not None:
            self.metrics.wakeups.inc()
        try:
            waiter.notify(version)
        except Exception:
            log.exception("a waiter's notify failed")

    # -- introspection (tests, /metrics) -----------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        with self.lock:
            return {"held": self.held, "keys": len(self.watches),
                    "waiting": sum(len(w.waiters) for w in self.watches.values()), **self.by_kind}
