"""Waiting that costs a socket and a little memory: one subscription per process wakes every waiter.

A *waiter* is a long-poll, an SSE stream, a WebSocket or a matchmaking long-poll that waits for a Redis
stream (a match's ``match:{id}:events``, a ticket's ``mm:ticket:{t}:events``) to pass a known entry.
It holds no thread and no Redis connection of its own: it is an entry in :class:`Hub`. Every stream write
also ``PUBLISH``es ``<key> <version> <wake>`` on the events channel (in the match script, and
after a ticket's XADD), and one :class:`Subscriber` thread per process listens on its own connection (never
the request pool, so waiters cannot starve moves). For each message it wakes exactly the waiters of that key
whose condition holds (``until=turn`` waiters look at the ``wake`` field: no wake-up for other seats' turns).

The cost of an event is one message to each gateway process, whatever the number of waiters. (The first
design, one blocking ``XREAD`` over the streams of every watched key, re-sent every key at each event: at
10,000 waiters on 2,500 matches that is 2,500 keys 50 times a second per process, and it measured worse:
README "Waiting players".) On a Redis Cluster a multi-key ``XREAD`` is ``CROSSSLOT`` anyway; Redis sends a
cluster's PUBLISH to every node, so the subscriber listens on one node and on the next one when it is lost.

A version can land after a request looked at the match but before its waiter is registered. The hub keeps
the newest version it heard of *every* key for :data:`RECENT_S` (not only watched ones), so such a waiter
fires at once. What a subscription cannot hear — anything before it was (re-)established — the
:class:`Checker` reads from the streams: every watched stream once after each (re-)subscription, and each
new waiter's stream during :data:`CHECK_AFTER_SUBSCRIBE_S` after it (its request may have looked before).

Limits (``MEEPLE_WAITERS_MAX`` per process, ``MEEPLE_WAITERS_PER_CLIENT`` per token or IP) are taken
by :meth:`Hub.admit` before a request parks: past them that request gets 503/429, nothing else is touched.
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from services import redisconn
from services.core.errors import DomainError, Kind
from services.core.match import events

log = logging.getLogger("meeple.gateway.hub")

#: How long a heard event waits before its waiters are woken: the move that wrote it answers its client
#: first, instead of sharing the GIL and the cores with the deliveries it caused.
WAKE_DELAY_S = 0.003
#: Entries a check reads per key (a waiter needs only the newest; more is kept for until=turn).
COUNT = 64
#: How long the newest version heard of each key is kept (far longer than a request takes to park).
RECENT_S = 30.0
#: How long after a (re-)subscription each new waiter's stream is read once (its request may have looked
#: at the match before the subscription heard anything).
CHECK_AFTER_SUBSCRIBE_S = 5.0
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
        return self.seat is None or wake is None or events.wakes_seat(wake, self.seat)


@dataclass(eq=False)
class Slot:
    """A waiter's place under the caps, held from parking to answering (or the client leaving)."""

    hub: Hub
    kind: str
    client: str
    released: bool = False

    def release(self) -> None:
        self.hub._release(self)


class Subscriber(threading.Thread):
    """The process's reader: one subscription to the events channel (on a cluster: on one node, the next
    one when it is lost), feeding every message to the hub."""

    def __init__(self, hub: Hub) -> None:
        super().__init__(name="hub-subscriber", daemon=True)
        self.hub = hub
        self.turn = 0
        self.node = ""  # host:port subscribed to now (tests kill it)
        self.subscribed = False
        self.failures = 0  # losses in a row without a subscription in between

    def run(self) -> None:
        while not self.hub.stopped:
            try:
                self.listen()
            except redisconn.FAILURES as err:  # (a whole cluster unreachable once ended this thread for good)
                self.failures += 1
                if self.failures == 1:  # (a Redis that stays down is logged once, not five times a second)
                    log.warning("event subscription on %s lost: %s; subscribing again", self.node or "redis", err)
                self.turn += 1
                if self.hub.cluster:
                    redisconn.refresh(self.hub.checker.client)
                time.sleep(min(0.2 * 2 ** (self.failures - 1), 2.0))

    def connect(self) -> redis.Redis:
        """A connection of the subscription's own: the server's, or a cluster node's (the next one each turn)."""
        if not self.hub.cluster:
            client: Any = redisconn.connect(self.hub.redis_url, socket_connect_timeout=2, socket_timeout=10,
                                            health_check_interval=5, single_connection_client=True)
            return client
        nodes = sorted(self.hub.checker.client.get_nodes(), key=lambda n: (n.host, n.port))
        node = nodes[self.turn % len(nodes)]
        self.node = f"{node.host}:{node.port}"
        return redis.Redis(host=node.host, port=node.port, socket_connect_timeout=2, socket_timeout=10,
                           health_check_interval=5)

    def listen(self) -> None:
        client = self.connect()
        pubsub = client.pubsub()
        try:
            events.subscribe(pubsub)
            held: collections.deque[tuple[float, bytes]] = collections.deque()
            while not self.hub.stopped:
                wait = 1.0 if not held else max(0.0, held[0][0] - time.monotonic())
                message = pubsub.get_message(timeout=wait)
                while held and held[0][0] <= time.monotonic():
                    self.hub._published(held.popleft()[1])
                if message is None:
                    if not held:
                        with self.hub.lock:
                            self.hub._prune()
                elif message["type"] == "message":
                    held.append((time.monotonic() + WAKE_DELAY_S, message["data"]))
                elif message["type"] == "subscribe":
                    self.subscribed, self.failures = True, 0
                    self.hub._subscribed()  # anything written while not subscribed
        finally:
            self.subscribed = False
            self.hub.check_until = float("inf")
            pubsub.close()
            client.close()


class Checker(threading.Thread):
    """Reads streams once, for what the subscription could not hear: every watched stream after a
    (re-)subscription, and new waiters' streams just after it. Batched: one pipeline per round."""

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
                    events.read_after(pipe, key, after, COUNT)
                replies = pipe.execute()
            except redisconn.FAILURES as err:  # failing over, or no node answers: again shortly, for keys watched
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

    def __init__(self, redis_url: str, max_waiters: int, per_client: int, metrics: Any = None) -> None:
        self.redis_url = redis_url
        self.max_waiters, self.per_client = max_waiters, per_client
        self.metrics = metrics
        self.lock = threading.Lock()
        #: key -> the waiters of that key
        self.watches: dict[str, set[Waiter]] = {}
        #: key -> (newest version heard, when): every key heard in the last RECENT_S, oldest first
        self.recent: dict[str, tuple[int, float]] = {}
        self.pruned_at = 0.0
        #: until when each new waiter's stream is read once (no subscription yet: forever)
        self.check_until = float("inf")
        self.reader: Subscriber | None = None
        self.held = 0
        self.by_client: Counter[str] = Counter()
        self.by_kind: Counter[str] = Counter()
        self.stopped = False
        self.cluster = redisconn.cluster_url(redis_url) is not None
        self._checker: Checker | None = None

    @property
    def checker(self) -> Checker:
        """The stream checker (started with the first check)."""
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
                raise DomainError(Kind.UNAVAILABLE, "too_many_waiters", f"this server holds {self.max_waiters} "
                                  "waiting requests; retry shortly (another server may take it)", retry_after=2)
            if client and self.by_client[client] >= self.per_client:
                self._count_refusal(kind, "client")
                raise DomainError(Kind.LIMITED, "too_many_waiters", f"at most {self.per_client} waiting requests per "
                                  "token (or per address without one); close one first", retry_after=5)
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
                raise DomainError(Kind.LIMITED, "too_many_waiters", f"at most {self.per_client} waiting requests per "
                                  "token (or per address without one); close one first", retry_after=5)
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
        """Wake ``waiter`` (once) when its key passes ``waiter.after``; at once if the hub heard it already."""
        with self.lock:
            heard = self.recent.get(waiter.key)
            fire = heard is not None and heard[0] > waiter.after  # (what it was, the waiter's re-run reads)
            if not fire:
                self.watches.setdefault(waiter.key, set()).add(waiter)
            check = not fire and time.monotonic() < self.check_until
            if self.reader is None:
                self.reader = Subscriber(self)
                self.reader.start()
        if fire:
            self._fire(waiter, -1)
        elif check:
            self.checker.check(waiter.key, waiter.after)

    def unwatch(self, waiter: Waiter) -> None:
        with self.lock:
            waiters = self.watches.get(waiter.key)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self.watches[waiter.key]

    def wait(self, waiter_key: str, after: int, timeout: float, seat: int | None = None,
             also: tuple[str, int] | None = None) -> bool:
        """Block the calling thread until the key passes ``after`` (or ``also``'s key its position: a match's
        chat) (True) or ``timeout`` ends (False).

        For servers that cannot park a request (a plain threaded WSGI server): the thread waits, but
        still on the hub, not on a Redis connection of its own.
        """
        woken = threading.Event()
        waiters = [Waiter(waiter_key, after, lambda _: woken.set(), seat)]
        if also is not None:
            waiters.append(Waiter(also[0], also[1], lambda _: woken.set()))
        for waiter in waiters:
            self.watch(waiter)
        try:
            return woken.wait(max(timeout, 0.0))
        finally:
            for waiter in waiters:
                self.unwatch(waiter)

    def stop(self) -> None:
        self.stopped = True
        with self.lock:
            if self._checker is not None:
                self._checker.check("", -1)  # wakes it to see ``stopped``

    # -- the reader's side ------------------------------------------------------------------------------------
    def _prune(self) -> None:
        """Forget versions heard more than ``RECENT_S`` ago (at most once a second; the caller holds the lock)."""
        now = time.monotonic()
        if now - self.pruned_at > 1.0:
            self.pruned_at = now
            for key, (_, heard_at) in list(self.recent.items()):  # oldest first: stop at the first young one
                if now - heard_at <= RECENT_S:
                    break
                del self.recent[key]

    def _published(self, data: bytes) -> None:
        """A message on the events channel (``<key> <version> <wake>``): dispatched as its stream entry."""
        announced = events.published_entry(data)
        if announced is None:
            log.warning("event channel: unexpected message %r", data[:200])
            return
        self._dispatch([announced])

    def _subscribed(self) -> None:
        """A (re-)subscription: read every watched stream once, and each new waiter's for a few seconds."""
        with self.lock:
            self.check_until = time.monotonic() + CHECK_AFTER_SUBSCRIBE_S
            todo = [(key, min(w.after for w in waiters)) for key, waiters in self.watches.items() if waiters]
        for key, after in todo:
            self.checker.check(key, after)

    def _dispatch(self, reply: list[Any]) -> None:
        """Entries of streams (heard or read): remember each key's newest version, wake whoever waits for it."""
        fired: list[tuple[Waiter, int]] = []
        now = time.monotonic()
        with self.lock:
            for raw_key, entries in reply:
                if not entries:
                    continue
                key = raw_key.decode() if isinstance(raw_key, bytes) else str(raw_key)
                last = int(entries[-1][0].split(b"-", 1)[0])
                heard = self.recent.pop(key, None)
                self.recent[key] = (max(last, heard[0]) if heard else last, now)  # (a check may be older)
                waiters = self.watches.get(key)
                if not waiters:
                    continue
                for entry_id, fields in entries:
                    version = int(entry_id.split(b"-", 1)[0])
                    wake = fields.get(b"wake")
                    for waiter in [w for w in waiters if w.wants(version, wake)]:
                        waiters.discard(waiter)
                        fired.append((waiter, version))
                if not waiters:
                    del self.watches[key]
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
                    "waiting": sum(len(w) for w in self.watches.values()), **self.by_kind}
