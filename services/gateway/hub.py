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
client comes straight back for the next version. Keys are grouped per Redis node by :meth:`Hub.node_of`
(one group here): on a Redis Cluster an ``XREAD`` over keys of different slots fails with ``CROSSSLOT``,
so a cluster-aware client overrides it and gets one reader per node (issue 18).

Limits (``MEEPLE_WAITERS_MAX`` per process, ``MEEPLE_WAITERS_PER_CLIENT`` per token or IP) are taken
by :meth:`Hub.admit` before a request parks: past them that request gets 503/429, nothing else is touched.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis

from .errors import ApiError
from .store import parse_wake, your_turn_or_over

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
    node: str = ""
    waiters: set[Waiter] = field(default_factory=set)
    idle_since: float = 0.0


def _cursor(after: int) -> str:
    """The XREAD id after which a waiter for versions past ``after`` must read (entry ids are ``<version>-1``)."""
    return f"{after}-1" if after >= 0 else "0-0"


class Reader(threading.Thread):
    """One blocking XREAD over every watched key of one Redis node, on a connection of its own."""

    def __init__(self, hub: Hub, node: str) -> None:
        super().__init__(name=f"hub-reader{node and '-' + node}", daemon=True)
        self.hub, self.node = hub, node
        self.client = hub.connect(node)
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


class Hub:
    """The waiters of one process, the caps on them, and the readers that wake them."""

    def __init__(self, redis_url: str, max_waiters: int, per_client: int,
                 metrics: Any = None, connect: Callable[[str], redis.Redis] | None = None) -> None:
        self.redis_url = redis_url
        self.max_waiters, self.per_client = max_waiters, per_client
        self.metrics = metrics
        self.connect = connect or self._connect
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.watches: dict[str, _Watch] = {}
        #: node -> key -> cursor: what each reader's XREAD takes, kept up to date (copied, not rebuilt, per call)
        self.cursors: dict[str, dict[str, str]] = {}
        self.pruned_at = 0.0
        self.readers: dict[str, Reader] = {}
        self.held = 0
        self.by_client: Counter[str] = Counter()
        self.by_kind: Counter[str] = Counter()
        self.stopped = False
        self._control: redis.Redis | None = None

    # -- cluster seam -------------------------------------------------------------------------------------
    def node_of(self, key: str) -> str:
        """Which Redis node serves ``key``: one reader per node (a cluster-aware hub overrides this)."""
        return ""

    def _connect(self, node: str) -> redis.Redis:
        """The reader's own connection (blocking reads never come from, or wait for, the request pool)."""
        return redis.Redis.from_url(self.redis_url, socket_connect_timeout=2, socket_timeout=BLOCK_MS / 1000 + 5,
                                    single_connection_client=True)

    @property
    def control(self) -> redis.Redis:
        """A small client of the hub's own for CLIENT UNBLOCK."""
        if self._control is None:
            self._control = redis.Redis.from_url(self.redis_url, socket_connect_timeout=2, socket_timeout=2,
                                                 max_connections=4)
        return self._control

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
            node = self.node_of(waiter.key)
            if watch is None:
                watch = self.watches[waiter.key] = _Watch(_cursor(waiter.after), waiter.after, node=node)
                self.cursors.setdefault(node, {})[waiter.key] = watch.cursor
                rearm = True
            if watch.read > waiter.after:
                fire = True  # the reader saw a newer entry already (what it was, the waiter's re-run reads)
            else:
                watch.waiters.add(waiter)
                if waiter.after < watch.version:  # the cursor came from a waiter that knew more: go back
                    watch.cursor, watch.version = _cursor(waiter.after), waiter.after
                    self.cursors[node][waiter.key] = watch.cursor
                    rearm = True
            reader = self.readers.get(node)
            if reader is None:
                reader = self.readers[node] = Reader(self, node)
                reader.start()
            self.changed.notify_all()
        if fire:
            self._fire(waiter, -1)
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

    # -- the reader's side ------------------------------------------------------------------------------------
    def _streams(self, reader: Reader) -> dict[str, str]:
        """The keys ``reader`` must watch now, with their cursors (dropping keys idle past ``LINGER_S``)."""
        now = time.monotonic()
        with self.lock:
            if now - self.pruned_at > 1.0:
                self.pruned_at = now
                for key in [k for k, w in self.watches.items() if not w.waiters and now - w.idle_since > LINGER_S]:
                    del self.cursors[self.watches.pop(key).node][key]
            reader.generation += 1
            reader.blocked = True
            return dict(self.cursors.get(reader.node, {}))

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
                watch.cursor = self.cursors[watch.node][key] = last_id.decode()
                watch.version = watch.read = int(last_id.split(b"-", 1)[0])
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
