"""Parking a request: how a view that must wait hands its connection to the gunicorn worker and frees its thread.

The worker (``gunicorn_worker.py``) puts a callable under ``environ["meeple.park"]``. A view that has to wait
(a long-poll with nothing new, an SSE stream between events, a WebSocket) builds a :class:`Parked` and calls it;
the worker then keeps the socket in its selector, with no thread, until the hub wakes it, a timer is due or the
client sends bytes (or closes: noticed at once, not at the next heartbeat). Two shapes:

* :class:`Rerun` — a long-poll. The response is not written; on a wake-up or at the deadline the worker runs
  the *same request* through the app again with ``environ["meeple.resumed"]`` set to the Rerun, and the view
  answers (or parks again). Rate limiting, auth, headers and errors are the ordinary ones; in the metrics a
  run that parked has the status ``parked`` (its response is never sent) and no tenant count, so a request is
  counted by its tenant once, with the status its client got.
* :class:`Stream` — SSE and WebSocket. The response headers (and what is ready) are written; afterwards the
  worker calls ``on_wake``/``on_timer``/``on_data`` with a ``write`` function on a pool thread.

Without ``meeple.park`` (a plain threaded WSGI server, as in some tests) the views block their thread on
:meth:`Hub.wait` instead: still no Redis connection per waiter.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from flask import g, request

from .hub import Hub, Slot, Waiter

Write = Callable[[bytes], None]


class Parked:
    """What the worker needs of a parked request (see the module docstring)."""

    kind = "poll"
    #: True: incoming bytes go to :meth:`on_data` (WebSocket); False: they are only watched for EOF.
    reads = False
    #: True: the worker re-runs the request through the app on a wake-up or at :meth:`timer`.
    rerun = False

    def __init__(self, hub: Hub, slot: Slot) -> None:
        self.hub, self.slot = hub, slot
        self.waiter: Waiter | None = None
        #: a second wait armed with the first (a match's chat beside its versions): either one wakes the request
        self.also: Waiter | None = None
        #: the keys whose waiter fired since the request last looked (see :meth:`heard`)
        self._heard: set[str] = set()
        #: a topic that wakes this request too, armed apart from the two above (an open stream's watch token: its
        #: revocation)
        self.revocation: Waiter | None = None
        self.closed = False

    def timer(self) -> float | None:
        """``time.monotonic()`` at which the worker must call :meth:`on_timer` (or re-run); None: never."""
        return None

    def watch(self, key: str, after: int, wake: Callable[[], None], seat: int | None = None,
              also: tuple[str, int] | None = None) -> None:
        """(Re-)register with the hub: ``wake`` runs (on the reader thread) once ``key`` passes ``after``, or
        ``also``'s key passes its position (a match's chat topic): once for both, whichever comes first."""
        self._unwatch()
        fired = False

        def once(key: str) -> None:
            nonlocal fired
            self._heard.add(key)
            if not fired:
                fired = True
                wake()

        self.waiter = Waiter(key, after, lambda _version: once(key), seat)
        self.also = Waiter(also[0], also[1], lambda _version: once(also[0])) if also is not None else None
        self.hub.watch(self.waiter)
        if self.also is not None:
            self.hub.watch(self.also)

    def heard(self) -> set[str]:
        """The keys that woke this request since it last asked (a stream skips the reads the other key needs)."""
        heard, self._heard = self._heard, set()
        return heard

    def _unwatch(self) -> None:
        for waiter in (self.waiter, self.also):
            if waiter is not None:
                self.hub.unwatch(waiter)

    def watch_also(self, key: str, after: int, wake: Callable[[], None]) -> None:
        """(Re-)register a third topic with the hub: ``wake`` runs too once ``key`` passes ``after``."""
        if self.revocation is not None:
            self.hub.unwatch(self.revocation)
        self.revocation = Waiter(key, after, lambda _version: wake())
        self.hub.watch(self.revocation)

    def arm(self, wake: Callable[[], None]) -> None:
        """Called by the worker each time it parks this request."""

    def on_wake(self, write: Write) -> bool:
        """The hub woke us: write what is new; False ends the response."""
        return True

    def on_timer(self, write: Write) -> bool:
        return True

    def on_data(self, data: bytes, write: Write) -> bool:
        return True

    def delivered(self) -> None:
        """An answer to a wake-up was written: observe the delivery latency (hub wake-up to write)."""
        waiter = self.waiter
        if waiter is not None and waiter.fired_at and self.hub.metrics is not None:
            self.hub.metrics.delivery.labels(self.kind).observe(time.perf_counter() - waiter.fired_at)
            waiter.fired_at = 0.0

    def close(self) -> None:
        """Leave the hub and give the slot back (idempotent): the answer went out, or the client left."""
        if self.closed:
            return
        self.closed = True
        self._unwatch()
        if self.revocation is not None:
            self.hub.unwatch(self.revocation)
        self.slot.release()


class Rerun(Parked):
    """A long-poll: wait for ``key`` past ``after`` (``seat``: until its turn), until ``deadline``."""

    rerun = True

    def __init__(self, hub: Hub, slot: Slot, kind: str, deadline: float, state: dict[str, Any]) -> None:
        super().__init__(hub, slot)
        self.kind, self.deadline, self.state = kind, deadline, state
        self.key, self.after = "", -1
        self.seat: int | None = None
        self.chat: tuple[str, int] | None = None
        #: set by the worker when it drains: answer now, do not park again
        self.expired = False

    def wait_for(self, key: str, after: int, seat: int | None, also: tuple[str, int] | None = None) -> None:
        self.key, self.after, self.seat, self.chat = key, after, seat, also

    def timer(self) -> float | None:
        return self.deadline

    def arm(self, wake: Callable[[], None]) -> None:
        self.watch(self.key, self.after, wake, self.seat, self.chat)

    def remaining(self) -> float:
        return 0.0 if self.expired else self.deadline - time.monotonic()


class Stream(Parked):
    """An open response (SSE, WebSocket) fed on wake-ups, timers and client bytes."""


def can_park() -> bool:
    return "meeple.park" in request.environ


def park(parked: Parked) -> None:
    """Hand this request's connection to the worker once the view returns (see the module docstring)."""
    request.environ["meeple.park"](parked)
    if parked.rerun:  # the view's response is never sent: the metrics count this run as parked, not by a status
        g.parked = True


def resumed() -> Rerun | None:
    """The :class:`Rerun` this request is the re-run of, or None on its first run."""
    found: Rerun | None = request.environ.get("meeple.resumed")
    return found


def wait_or_park(hub: Hub, slot: Slot | None, kind: str, client: str, key: str, after: int, seat: int | None,
                 deadline: float, state: dict[str, Any], also: tuple[str, int] | None = None) -> Rerun | None:
    """Wait for ``key`` to pass ``after`` (``seat``: until its turn) until ``deadline``; or for ``also``'s key (a
    match's chat topic) to pass its position.

    Under the worker: returns the parked :class:`Rerun` (the view returns any response; it is not sent).
    Elsewhere: blocks on the hub and returns None (then the view reloads and answers). Either way the
    caps apply first (``slot`` is the one a re-run already holds).
    """
    previous = resumed()
    if previous is not None:
        previous.wait_for(key, after, seat, also)
        previous.state = state
        park(previous)
        return previous
    slot = slot or hub.admit(kind, client)
    if can_park():
        rerun = Rerun(hub, slot, kind, deadline, state)
        rerun.wait_for(key, after, seat, also)
        park(rerun)
        return rerun
    try:
        hub.wait(key, after, deadline - time.monotonic(), seat, also)
    finally:
        slot.release()
    return None
