"""The gateway's gunicorn worker: ``gunicorn -k services.gateway.gunicorn_worker.ConnectionThreads``.

Threads go to connections that are *doing* something; waiting costs a socket. Three kinds of threads:

* the main thread accepts connections (up to ``worker_connections`` open at once; the next ones wait in the
  listen backlog) and heartbeats to the gunicorn master;
* a pool of request threads (``--threads``, 64 if not set): a thread takes a connection that has a request,
  reads it with gunicorn's parser, runs the Flask app and writes the response — and then *lingers* on the
  connection for up to ``LINGER_S`` in ``poll``, so a client that sends its next request at once is served by
  the same thread with no hand-off (why this is not ``gthread``: on the 2-core VM a wake-up across threads is
  expensive; a ``/healthz`` cost about 750 µs of the worker's CPU under ``gthread`` and 400 µs this way);
* one selector thread (:class:`Loop`) that holds every connection nobody is serving: kept-alive connections
  idling between requests (closed after ``keepalive`` seconds), and *parked* requests — long-polls, SSE
  streams and WebSockets that wait for a match to change (see ``parking.py`` and ``hub.py``). A parked
  socket is watched for readability, so a client that closes is released at once (read-side EOF), and gets
  a thread again only when the hub wakes it, its timer is due (a deadline, a heartbeat) or it sends bytes.

A connection has one owner at a time (a request thread, or the selector thread), so nothing is shared
without the selector thread's inbox. The HTTP/1.1 parsing, the WSGI environ and the response are gunicorn's
own (``gunicorn.http``); gunicorn's master, signals, heartbeats, ``max_requests`` and hooks work as for any
worker. Limits: HTTP/1.1 only (no h2c); with TLS nothing parks (requests wait on their thread instead).
"""

from __future__ import annotations

import collections
import contextlib
import errno
import gc
import heapq
import http as http_status
import itertools
import json
import os
import resource
import select
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from gunicorn import http, util
from gunicorn import sock as gunicorn_sock
from gunicorn.http import wsgi
from gunicorn.http.body import ChunkedReader
from gunicorn.http.errors import ParseException, UnsupportedTransferCoding
from gunicorn.workers import base
from werkzeug.exceptions import BadRequest

from services.contract.statuses import GUNICORN_CODES

#: How long the accept loop sleeps at most between heartbeats to the master.
TICK_S = 1.0
#: How long an unread request body may take to drain before its connection is closed instead.
DRAIN_S = 5.0
#: How long a request thread waits on its connection for the next request before handing it to the selector.
LINGER_S = 0.5
#: Request threads when gunicorn's ``--threads`` is not set: below redis-py's pool of 100 connections, so a burst
#: of requests waits for a thread here rather than failing for want of a Redis connection.
DEFAULT_THREADS = 64
#: The garbage collector's first threshold (CPython's default is 700). Thousands of parked waiters are as many
#: long-lived objects, and at the default a request's short-lived objects are promoted to the old generation
#: so often that a full collection -- a pause proportional to every object held, 200-450 ms at 5,000 waiters
#: a process -- ran every few seconds. Young collections of up to this many objects take a few milliseconds.
GC_THRESHOLD = 50_000
PARKED = "parked"


class Conn:
    """One client connection and what the worker knows of it."""

    def __init__(self, sock: socket.socket, addr: Any, server: Any, parser: Any, loop: Loop) -> None:
        self.sock, self.addr, self.server, self.parser = sock, addr, server, parser
        self.req: Any = None
        self.resp: Any = None
        self.parked: Any = None  # a parking.Parked while parked (or streaming)
        # owned by the selector thread:
        self.state = "busy"  # busy | idle | parked | closed
        self.pending: collections.deque[str] = collections.deque()
        self.registered = False
        self.watch_reads = True
        self.timer_gen = 0
        self.job: Job | None = None  # the pool job that serves it now (or did last)
        self.wake: Callable[[], None] = lambda: loop.post("wake", self)


class Job:
    """One unit of pool work; a queued background job can be promoted (a wake-up came for its connection)."""

    __slots__ = ("args", "background", "fn", "taken")

    def __init__(self, fn: Callable[..., None], args: tuple[Any, ...], background: bool) -> None:
        self.fn, self.args, self.background, self.taken = fn, args, background, False


class Pool:
    """Request threads, started as needed up to ``size``, that take urgent work first.

    *Urgent* jobs are what a client waits for: a new request, a wake-up to deliver, a WebSocket's bytes.
    *Background* jobs are a parked request's timers: heartbeats and long-poll deadlines. Timers come in bursts
    (waiters that parked together beat together) and are never late by much, so a burst waits behind every
    urgent job and at most ``background_max`` threads run it at once: a move or a delivery never queues behind
    thousands of heartbeats, nor fights as many threads for the GIL. A wake-up for a connection whose timer
    job is still queued promotes that job (the wake-up is delivered by it).
    """

    def __init__(self, size: int, background_max: int = 4) -> None:
        self.size = size
        self.background_max = max(1, min(background_max, size))
        self.urgent: collections.deque[Job] = collections.deque()
        self.background: collections.deque[Job] = collections.deque()
        self.ready = threading.Condition(threading.Lock())
        self.threads = self.idle = self.in_background = 0
        self.names = itertools.count()

    def submit(self, fn: Callable[..., None], *args: Any, background: bool = False) -> Job:
        job = Job(fn, args, background)
        with self.ready:
            (self.background if background else self.urgent).append(job)
            spawn = self._staff(background)
        if spawn:
            self._spawn()
        return job

    def promote(self, job: Job | None) -> None:
        """Make a queued background job urgent (nothing if it already runs, ran, or was urgent)."""
        with self.ready:
            if job is None or job.taken or not job.background:
                return
            job.background = False  # its entry in ``background`` is skipped when reached
            self.urgent.append(job)
            spawn = self._staff(False)
        if spawn:
            self._spawn()

    def _staff(self, background: bool) -> bool:
        """A job was queued: wake an idle thread, and tell whether a new one must start (the caller holds the lock).

        ``idle`` still counts a thread that was notified but has not woken yet: a new thread starts whenever
        more urgent jobs wait than idle threads can take (else a job could wait for as long as a busy kept-alive
        connection holds the one thread that was about to take it)."""
        if self.idle > 0:
            self.ready.notify()
        if background and (self.idle > 0 or self.in_background >= self.background_max):
            return False
        if not background and len(self.urgent) <= self.idle:
            return False
        if self.threads >= self.size:
            return False
        self.threads += 1
        return True

    def _spawn(self) -> None:
        threading.Thread(target=self._run, name=f"request-{next(self.names)}", daemon=True).start()

    def spare(self) -> bool:
        """Is a thread free for other connections (so that lingering on this one starves nobody)?"""
        # (Not "no urgent job queued": a wake-up queued for a moment while idle threads are about to take it
        # would make a busy client's next request a hand-off through the selector, for no thread saved.)
        return self.idle > len(self.urgent) or self.threads < self.size

    def _take(self) -> Job:
        """The next job (urgent first; background only under its cap), waiting for one; the caller holds the lock."""
        while True:
            while self.background and not self.background[0].background:
                self.background.popleft()  # promoted: it is (or was) in ``urgent``
            if self.urgent:
                job = self.urgent.popleft()
            elif self.background and self.in_background < self.background_max:
                job = self.background.popleft()
                self.in_background += 1
            else:
                self.idle += 1
                self.ready.wait()
                self.idle -= 1
                continue
            job.taken = True
            return job

    def _run(self) -> None:
        while True:
            with self.ready:
                job = self._take()
            try:
                job.fn(*job.args)
            finally:
                if job.background:
                    with self.ready:
                        self.in_background -= 1
                        if self.background and self.idle > 0:
                            self.ready.notify()


class Loop(threading.Thread):
    """The selector thread: idle kept-alive connections and parked requests, their timers and wake-ups."""

    def __init__(self, worker: ConnectionThreads) -> None:
        super().__init__(name="selector", daemon=True)
        self.worker = worker
        self.selector = selectors.DefaultSelector()
        self.inbox: collections.deque[tuple[str, Conn | None]] = collections.deque()
        self.bell_in, self.bell_out = socket.socketpair()
        self.bell_in.setblocking(False)
        self.bell_out.setblocking(False)
        self.selector.register(self.bell_in, selectors.EVENT_READ, None)
        self.rung = False
        self.timers: list[tuple[float, int, Conn, int]] = []
        self.seq = itertools.count()
        self.held: set[Conn] = set()  # idle and parked connections (the drain closes or answers them)
        self.draining = False

    def post(self, what: str, conn: Conn | None) -> None:
        """From any thread: ``idle`` / ``park`` (a thread hands a connection over), ``wake``, ``drain``."""
        self.inbox.append((what, conn))
        if not self.rung:
            self.rung = True
            with contextlib.suppress(BlockingIOError):
                self.bell_out.send(b"\0")

    def run(self) -> None:
        while True:
            timeout = TICK_S
            if self.timers:
                timeout = max(0.0, min(timeout, self.timers[0][0] - time.monotonic()))
            events = self.selector.select(timeout)
            if any(key.data is None for key, _ in events):
                try:
                    while self.bell_in.recv(4096):
                        pass
                except BlockingIOError:
                    pass
            # After the bell is emptied and before the inbox is read: a post from now on rings again. (Cleared
            # before the bell was read, a ring could be swallowed with its post drained, and the next post --
            # seeing ``rung`` still set -- would wait for the next tick: a wake-up a second late.)
            self.rung = False
            for key, _ in events:
                if key.data is not None:
                    self.readable(key.data)
            while self.inbox:
                what, conn = self.inbox.popleft()
                self.message(what, conn)
            now = time.monotonic()
            while self.timers and self.timers[0][0] <= now:
                _, _, conn, gen = heapq.heappop(self.timers)
                if conn.timer_gen == gen:
                    self.due(conn)

    # -- what happens to a connection the selector holds ---------------------------------------------------
    def message(self, what: str, conn: Conn | None) -> None:
        if what == "drain":
            # (See ConnectionThreads.drain.) Long-polls answer now, streams end cleanly; an idle kept-alive
            # connection is left alone: closing it could cut a request the client is sending on it this moment.
            # Its next request is answered with ``Connection: close``; if none comes, its keep-alive timer closes
            # it as on any day, between requests.
            self.draining = True
            for held in list(self.held):
                if held.state == "parked" and held.parked.rerun:
                    held.parked.expired = True
                    self.dispatch(held, "timer")
                elif held.state == "parked":
                    self.dispatch(held, "drain")
            return
        assert conn is not None
        if what == "idle":
            conn.state = "idle"
            self.held.add(conn)
            self.register(conn)
            self.set_timer(conn, time.monotonic() + max(0.1, (self.worker.cfg.keepalive or 2) - LINGER_S))
        elif what == "park":
            conn.state = "parked"
            self.held.add(conn)
            conn.watch_reads = True
            if conn.pending:
                self.dispatch(conn, conn.pending.popleft())
                return
            if self.draining:  # parked while the drain went on: a long-poll answers, a stream ends
                if conn.parked.rerun:
                    conn.parked.expired = True
                self.dispatch(conn, "timer" if conn.parked.rerun else "drain")
                return
            self.register(conn)
            due = conn.parked.timer()
            if due is not None:
                self.set_timer(conn, due)
        elif what == "wake":
            if conn.state == "parked":
                self.dispatch(conn, "wake")
            elif conn.state == "busy":
                conn.pending.append("wake")
                self.worker.pool.promote(conn.job)  # a timer job still queued delivers it: not behind a burst

    def readable(self, conn: Conn) -> None:
        if conn.state == "idle":
            self.dispatch(conn, "request")
            return
        try:
            peek = conn.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            peek = b""
        if not peek:
            self.close(conn)  # the client went away: leave the hub now, not at the next heartbeat
        elif conn.parked.reads:
            self.dispatch(conn, "data")
        else:  # a request sent before the answer: it is read after the answer; until then only timers
            self.unregister(conn)
            conn.watch_reads = False

    def due(self, conn: Conn) -> None:
        if conn.state == "idle":
            self.close(conn)  # idled past keepalive
        elif conn.state == "parked":
            self.dispatch(conn, "timer")
        elif conn.state == "busy":
            conn.pending.append("timer")

    def dispatch(self, conn: Conn, reason: str) -> None:
        """Give the connection to a request thread."""
        self.unregister(conn)
        self.held.discard(conn)
        conn.state = "busy"
        conn.timer_gen += 1
        if reason == "request":
            conn.job = self.worker.pool.submit(self.worker.serve, conn, None)
        else:  # a timer (heartbeats, deadlines) waits behind urgent work; a wake-up, bytes or the drain do not
            conn.job = self.worker.pool.submit(self.worker.run_parked, conn, reason, background=reason == "timer")

    def close(self, conn: Conn) -> None:
        self.unregister(conn)
        self.held.discard(conn)
        conn.state = "closed"
        conn.timer_gen += 1
        self.worker.close(conn)

    def register(self, conn: Conn) -> None:
        if not conn.registered and conn.watch_reads:
            try:
                self.selector.register(conn.sock, selectors.EVENT_READ, conn)
                conn.registered = True
            except (ValueError, OSError):  # closed under us
                self.close(conn)

    def unregister(self, conn: Conn) -> None:
        if conn.registered:
            conn.registered = False
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.selector.unregister(conn.sock)

    def set_timer(self, conn: Conn, when: float) -> None:
        conn.timer_gen += 1
        heapq.heappush(self.timers, (when, next(self.seq), conn, conn.timer_gen))


class _Captured:
    """Stands in for the client socket while gunicorn writes its HTML error page: keeps the status line."""

    def __init__(self) -> None:
        self.data = b""

    def gettimeout(self) -> float:
        return 0.0

    def sendall(self, data: bytes) -> None:
        self.data += data

    def send(self, data: bytes) -> int:
        self.data += data
        return len(data)

    def status_line(self) -> str:
        first = self.data.split(b"\r\n", 1)[0].decode("latin1")  # "HTTP/1.1 414 URI Too Long"
        return first.partition(" ")[2]


class ConnectionThreads(base.Worker):  # type: ignore[misc]  # gunicorn ships no type hints
    alive: bool  # set by gunicorn's Worker; False once the worker is to stop

    def init_process(self) -> None:
        #: One slot per open connection, held until the connection closes.
        self.connections = max(1, self.cfg.worker_connections)
        self.slots = threading.BoundedSemaphore(self.connections)
        raise_fd_limit(self.connections + 256)
        self.pool = Pool(self.cfg.threads if self.cfg.threads > 1 else DEFAULT_THREADS)
        self.loop = Loop(self)
        self.loop.start()
        gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
        super().init_process()

    def load_wsgi(self) -> None:
        """After the app is loaded: what exists now lives as long as the process, so no collection scans it."""
        super().load_wsgi()
        gc.collect()
        gc.freeze()

    # -- the main thread: accept, heartbeat, drain on the way out ------------------------------------------------
    def run(self) -> None:
        for listener in self.sockets:
            listener.setblocking(False)
        with selectors.DefaultSelector() as listening:
            for listener in self.sockets:
                listening.register(listener, selectors.EVENT_READ)
            while self.alive:
                self.notify()
                if self.ppid != os.getppid():
                    self.log.info("Parent changed, shutting down: %s", self)
                    break
                if not self.slots.acquire(timeout=TICK_S):
                    continue  # every connection slot is taken: leave new ones in the backlog
                if not self.accept_one(listening):
                    self.slots.release()
        self.drain()

    def accept_one(self, listening: selectors.BaseSelector) -> bool:
        """Wait up to a tick for a connection and give it to a request thread; False if none came."""
        return any(self.take(key.fileobj) for key, _ in listening.select(TICK_S))

    def take(self, listener: Any) -> bool:
        """Accept one connection waiting on ``listener`` (non-blocking) and give it to a request thread."""
        try:
            client, addr = listener.accept()
        except (BlockingIOError, InterruptedError):
            return False  # another worker took it
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE):  # out of file descriptors: back off, don't spin
                self.log.error("Cannot accept a connection: %s", e)
                time.sleep(TICK_S / 10)
            elif e.errno != errno.ECONNABORTED:
                raise
            return False
        try:
            client.setblocking(True)
            if self.cfg.is_ssl:
                client = gunicorn_sock.ssl_wrap_socket(client, self.cfg)
            conn = Conn(client, addr, listener.getsockname(), None, self.loop)
            conn.parser = http.get_parser(self.cfg, client, addr)
            self.pool.submit(self.serve, conn, None)
        except Exception:
            self.log.exception("Cannot take a new connection")
            util.close(client)
            return False
        return True

    def drain(self) -> None:
        """Graceful stop (SIGTERM), so that no client sees a failure other than a clean close between requests:

        * stop accepting -- but first take the connections already in the listen backlog (closing the listener
          would reset them, requests and all); new ones are refused, which a client (or a load balancer) retries
          elsewhere since nothing was sent;
        * requests in progress finish, and every response from now on says ``Connection: close`` (then the
          connection closes, between requests);
        * a kept-alive connection idle now is not cut (its client may be sending on it this moment): a request
          that comes on it is answered with ``Connection: close``, and one that stays idle is closed by its
          keep-alive timer as always;
        * waiters are told to reconnect: a parked long-poll answers now (what is new, possibly nothing), an SSE
          stream ends with its last chunk (EventSource and the SDK reconnect with ``after``), a WebSocket gets a
          close frame 1012 "service restart" (the SDK reopens it with ``after`` = the last version seen).

        Up to ``graceful_timeout``; holding every connection slot means every connection is done."""
        for listener in self.sockets:
            listener.setblocking(False)
            while self.slots.acquire(blocking=False):
                if not self.take(listener):
                    self.slots.release()
                    break
            util.close(listener)
        self.loop.post("drain", None)
        deadline = time.monotonic() + self.cfg.graceful_timeout
        held = 0
        while held < self.connections and (left := deadline - time.monotonic()) > 0:
            if self.slots.acquire(timeout=min(TICK_S, left)):
                held += 1
            else:
                self.notify()

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        """gunicorn's own answer to a request it rejected before the app (its status, logging and access
        log), but with the API's JSON error body instead of gunicorn's HTML page."""
        captured = _Captured()
        super().handle_error(req, captured, addr, exc)
        status, _, reason = captured.status_line().partition(" ")
        if not status.isdigit():
            return
        with contextlib.suppress(ValueError):  # gunicorn says "Bad Request" for its 501 too
            reason = http_status.HTTPStatus(int(status)).phrase
        code = GUNICORN_CODES.get(int(status), "malformed_request")
        message = str(exc) or reason or "the request was rejected"
        body = json.dumps({"error": {"code": code, "message": f"{reason}: {message}"}}).encode()
        head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode("latin1")
        try:
            util.write_nonblock(client, head + body)
        except Exception:
            self.log.debug("Failed to send error message.")

    def close(self, conn: Conn) -> None:
        """The connection is done (any thread that owns it): leave the hub, close, give the slot back."""
        if conn.parked is not None:
            conn.parked.close()
            conn.parked = None
        util.close(conn.sock)
        self.slots.release()

    # -- request threads ------------------------------------------------------------------------------------
    def serve(self, conn: Conn, resume: Any) -> None:
        """Serve the connection's requests in turn (first the re-run of ``resume``, if given) until it closes,
        parks, or has nothing to say for ``LINGER_S`` (then the selector holds it)."""
        req = conn.req
        try:
            keep = True
            if resume is not None:
                outcome = self.handle_request(conn, req, resume)
                if outcome == PARKED:
                    return
                keep = bool(outcome)
            # Not ``while self.alive``: a response sent before the drain promised keep-alive, so the client may
            # reuse the connection; its next request is answered (with ``Connection: close``, see handle_request).
            while keep:
                # A body the app left unread (a 413, say) must be skipped before the next request; a
                # client that sends more than a little of it, or stalls, loses the connection instead.
                if not conn.parser.finish_body(deadline=time.monotonic() + DRAIN_S):
                    break
                if not self.request_within(conn, LINGER_S if self.pool.spare() else 0.0):
                    if not self.cfg.keepalive:
                        break
                    self.loop.post("idle", conn)
                    return
                conn.sock.settimeout(self.cfg.keepalive or self.cfg.timeout or None)
                req = conn.req = next(conn.parser)
                outcome = self.handle_request(conn, req, None)
                if outcome == PARKED:
                    return
                keep = bool(outcome)
        except (StopIteration, http.errors.NoMoreData, TimeoutError):
            pass  # the client closed, or stalled mid-request
        except ssl.SSLError as e:
            if e.args[0] != ssl.SSL_ERROR_EOF:
                self.handle_error(req, conn.sock, conn.addr, e)
        except OSError as e:
            if e.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
                self.log.exception("Socket error processing request.")
        except Exception as e:
            self.handle_error(req, conn.sock, conn.addr, e)
        self.close(conn)

    @staticmethod
    def request_within(conn: Conn, seconds: float) -> bool:
        """Has the next request begun to arrive, or does it within ``seconds``? (Buffered bytes count.)"""
        with conn.parser.unreader.buf.getbuffer() as buffered:
            if buffered.nbytes:
                return True
        if isinstance(conn.sock, ssl.SSLSocket) and conn.sock.pending():
            return True
        poller = select.poll()
        poller.register(conn.sock, select.POLLIN)
        return bool(poller.poll(seconds * 1000))

    def run_parked(self, conn: Conn, reason: str) -> None:
        """A parked request's turn: re-run a long-poll, or feed a stream its wake-up, timer or bytes."""
        parked = conn.parked
        if parked is None:
            self.close(conn)
            return
        if parked.rerun:
            self.serve(conn, parked)
            return
        websocket = conn.resp.status_code == 101
        write = conn.sock.sendall if websocket else conn.resp.write
        try:
            if reason == "data":
                data = conn.sock.recv(65536)
                keep = bool(data) and parked.on_data(data, write)
            elif reason == "wake":
                keep = parked.on_wake(write)
            elif reason == "drain":
                keep = True  # nothing to do but end it, below
            else:
                keep = parked.on_timer(write)
            if keep and self.alive:
                parked.arm(conn.wake)
                self.loop.post("park", conn)
                return
            if keep and websocket:
                end_websocket(parked, write)
            if not websocket:
                conn.resp.close()  # the last chunk of an SSE response
        except OSError:
            pass  # the client went away mid-write
        except Exception:
            self.log.exception("Error in a parked stream")
        self.close(conn)

    def handle_request(self, conn: Conn, req: Any, resume: Any) -> bool | str:
        """gunicorn's own request cycle (as in its ``gthread`` worker); True if the connection stays open,
        ``PARKED`` if the app parked the request (the selector thread holds the connection now)."""
        environ: dict[str, Any] = {}
        resp = None
        parked: list[Any] = []
        logged = True
        try:
            self.cfg.pre_request(self, req)
            request_start = datetime.now()
            resp, environ = wsgi.create(req, conn.sock, conn.addr, conn.server, self.cfg)
            environ["wsgi.multithread"] = True
            if isinstance(req.body.reader, ChunkedReader):
                compressed = compressed_coding(req.headers)
                if compressed:
                    raise UnsupportedTransferCoding(compressed)
                environ["wsgi.input"] = ChunkedInput(environ["wsgi.input"], resp.force_close)
            if not self.cfg.is_ssl:
                environ["meeple.park"] = parked.append
            if resume is not None:
                environ["meeple.resumed"] = resume
            self.nr += 1
            if self.nr >= self.max_requests and self.alive:
                self.log.info("Autorestarting worker after current request.")
                self.alive = False
            if not self.alive or not self.cfg.keepalive:
                resp.force_close()
            respiter = self.wsgi(environ, resp.start_response)
            try:
                if parked and parked[-1].rerun:  # a long-poll with nothing yet: no answer now
                    logged = False
                    conn.parked = parked[-1]
                    conn.parked.arm(conn.wake)
                    self.loop.post("park", conn)
                    return PARKED
                if isinstance(respiter, environ["wsgi.file_wrapper"]):
                    resp.write_file(respiter)
                else:
                    for item in respiter:
                        resp.write(item)
                if parked:  # a stream: headers and what is ready are out, the rest comes on wake-ups
                    resp.send_headers()
                    conn.resp, conn.parked = resp, parked[-1]
                    conn.parked.arm(conn.wake)
                    self.loop.post("park", conn)
                    return PARKED
                resp.close()
                if resume is not None:
                    resume.delivered()
            finally:
                if logged:
                    self.log.access(resp, req, environ, datetime.now() - request_start)
                if hasattr(respiter, "close"):
                    respiter.close()
            return not resp.should_close()
        except (Exception, SystemExit) as err:
            if resp is not None and resp.headers_sent:
                # Writing a 500 after a started response would corrupt the stream: drop the connection. A
                # client that went away mid-answer (a probe that timed out, a phone losing its network) is no
                # error of ours: no traceback for it.
                if not (isinstance(err, OSError) and err.errno in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN)):
                    self.log.exception("Error handling request")
                raise StopIteration() from None
            raise
        finally:
            if resume is not None and conn.parked is resume and not (parked and parked[-1] is resume):
                resume.close()  # answered (or failed): the waiter's slot is free again
                conn.parked = None
            try:
                self.cfg.post_request(self, req, environ, resp)
            except Exception:
                self.log.exception("Exception in post_request hook")


def compressed_coding(headers: list[tuple[str, str]]) -> str:
    """The ``Transfer-Encoding`` of a chunked request if it also names a compression (``gzip, chunked``), else "".

    gunicorn frames such a body and leaves the decompressing to the app; the API reads bodies as they are sent,
    so it refuses them (501 ``not_implemented``) rather than read compressed bytes as JSON."""
    for name, value in headers:
        if name == "TRANSFER-ENCODING" and any(
                part.strip(" \t").lower() in ("gzip", "deflate", "compress") for part in value.split(",")):
            return str(value)
    return ""


class ChunkedInput:
    """``wsgi.input`` of a chunked body: a framing error found while the app reads it (a chunk size that is not
    hex, a chunk without its CRLF) reaches the app as werkzeug's ``BadRequest`` -- a 400 ``malformed_request``
    like any request gunicorn refuses before the app -- not as an exception the app does not know (a 500).
    The answer closes the connection: where its next request starts is unknown now. A body with a
    ``Content-Length`` has no framing to get wrong: it is not wrapped."""

    def __init__(self, body: Any, close: Callable[[], None]) -> None:
        self.body, self.close = body, close

    def read(self, size: int | None = None) -> bytes:
        return self._framed(self.body.read, size)

    def readline(self, size: int | None = None) -> bytes:
        return self._framed(self.body.readline, size)

    def readlines(self, size: int | None = None) -> list[bytes]:
        return self._framed(self.body.readlines, size)  # type: ignore[no-any-return]

    def __iter__(self) -> ChunkedInput:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def _framed(self, read: Callable[[int | None], Any], size: int | None) -> Any:
        try:
            return read(size)
        except ParseException as err:
            self.close()
            raise BadRequest(f"malformed chunked body: {err}") from None


#: The WebSocket close code a draining gateway sends (RFC 6455 registry: "Service Restart", reconnect).
SERVICE_RESTART = 1012


def end_websocket(parked: Any, write: Callable[[bytes], None]) -> None:
    """Close a WebSocket the worker is stopping with 1012, through the session's own framing (``close_with``)."""
    close_with = getattr(parked, "close_with", None)
    if close_with is not None:
        close_with(write, SERVICE_RESTART, "service restart: reconnect")


def raise_fd_limit(wanted: int) -> None:
    """Each parked waiter is an open socket: lift the soft file limit toward ``wanted`` (up to the hard one)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
