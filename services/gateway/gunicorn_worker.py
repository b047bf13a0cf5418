"""A gunicorn worker with one thread per connection: ``gunicorn -k services.gateway.gunicorn_worker.ConnectionThreads``.

Why not ``gthread``: it passes every request from its poller thread to a pool thread and the kept-alive
connection back again (a queue, a pipe, ``epoll_ctl`` twice, two more thread wake-ups). On the 2-core VM
the load test runs on, a wake-up across threads is expensive: a ``/healthz`` took about 750 µs of the
worker's CPU under ``gthread`` and takes about 400 µs here. Here the thread that owns a connection blocks
in ``recv`` itself, so the kernel wakes it straight away when the next request arrives; it reads, runs the
app and writes the response, and nothing else in the process is woken. Long-polls hold their thread, as in ``gthread``.

The HTTP/1.1 parsing, the WSGI environ and the response are gunicorn's own (``gunicorn.http``); gunicorn's
master, signals, heartbeats, ``max_requests`` and hooks work as for any worker. Limits: HTTP/1.1 only
(no h2c), at most ``worker_connections`` open connections per worker (the next ones wait in the listen
backlog), and a connection closes when it idles, or stalls mid-request, for ``keepalive`` seconds.
"""

from __future__ import annotations

import errno
import json
import os
import selectors
import socket
import ssl
import threading
import time
from datetime import datetime
from typing import Any

from gunicorn import http, util
from gunicorn import sock as gunicorn_sock
from gunicorn.http import wsgi
from gunicorn.workers import base

#: How long the accept loop sleeps at most between heartbeats to the master.
TICK_S = 1.0
#: How long an unread request body may take to drain before its connection is closed instead.
DRAIN_S = 5.0


#: Error codes of the requests gunicorn answers itself (before the app), by status.
_GUNICORN_CODES = {400: "malformed_request", 403: "forbidden", 414: "uri_too_long", 417: "expectation_failed",
                   431: "headers_too_large", 500: "internal_error", 501: "not_implemented"}


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
        #: One slot per open connection: its thread holds it until the connection closes.
        self.connections = max(1, self.cfg.worker_connections)
        self.slots = threading.BoundedSemaphore(self.connections)
        super().init_process()

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
        """Wait up to a tick for a connection and start its thread; False if none came."""
        for key, _ in listening.select(TICK_S):
            listener = key.fileobj
            try:
                client, addr = listener.accept()  # type: ignore[union-attr]
            except (BlockingIOError, InterruptedError):
                continue  # another worker took it
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE):  # out of file descriptors: back off, don't spin
                    self.log.error("Cannot accept a connection: %s", e)
                    time.sleep(TICK_S / 10)
                elif e.errno != errno.ECONNABORTED:
                    raise
                continue
            thread = threading.Thread(target=self.serve, name=f"conn-{addr}", daemon=True,
                                      args=(client, addr, listener.getsockname()))  # type: ignore[union-attr]
            try:
                thread.start()
            except RuntimeError:  # the system will not give us another thread: refuse this connection
                self.log.exception("Cannot start a thread for a new connection")
                util.close(client)
                return False
            return True
        return False

    def drain(self) -> None:
        """Graceful stop: let requests in progress finish, up to ``graceful_timeout``. Every connection's
        thread gives its slot back when it ends, so holding all the slots means every connection is done."""
        for listener in self.sockets:
            util.close(listener)
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
        code = _GUNICORN_CODES.get(int(status), "malformed_request")
        message = str(exc) or reason or "the request was rejected"
        body = json.dumps({"error": {"code": code, "message": f"{reason}: {message}"}}).encode()
        head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode("latin1")
        try:
            util.write_nonblock(client, head + body)
        except Exception:
            self.log.debug("Failed to send error message.")

    # -- a connection's own thread ----------------------------------------------------------------------------
    def serve(self, client: socket.socket, addr: Any, server: Any) -> None:
        """Serve one connection's requests in turn until it closes, idles past ``keepalive`` or we stop."""
        req = None
        try:
            client.setblocking(True)
            if self.cfg.is_ssl:
                client = gunicorn_sock.ssl_wrap_socket(client, self.cfg)
            client.settimeout(self.cfg.keepalive or self.cfg.timeout or None)
            parser = http.get_parser(self.cfg, client, addr)
            while self.alive:
                req = next(parser)
                if not self.handle_request(req, client, addr, server):
                    break
                # A body the app left unread (a 413, say) must be skipped before the next request; a
                # client that sends more than a little of it, or stalls, loses the connection instead.
                if not parser.finish_body(deadline=time.monotonic() + DRAIN_S):
                    break
        except (StopIteration, http.errors.NoMoreData, TimeoutError):
            pass  # the client closed, or idled past keepalive
        except ssl.SSLError as e:
            if e.args[0] != ssl.SSL_ERROR_EOF:
                self.handle_error(req, client, addr, e)
        except OSError as e:
            if e.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
                self.log.exception("Socket error processing request.")
        except Exception as e:
            self.handle_error(req, client, addr, e)
        finally:
            util.close(client)
            self.slots.release()

    def handle_request(self, req: Any, client: socket.socket, addr: Any, server: Any) -> bool:
        """gunicorn's own request cycle (as in its ``gthread`` worker); True if the connection stays open."""
        environ: dict[str, Any] = {}
        resp = None
        try:
            self.cfg.pre_request(self, req)
            request_start = datetime.now()
            resp, environ = wsgi.create(req, client, addr, server, self.cfg)
            environ["wsgi.multithread"] = True
            self.nr += 1
            if self.nr >= self.max_requests and self.alive:
                self.log.info("Autorestarting worker after current request.")
                self.alive = False
            if not self.alive or not self.cfg.keepalive:
                resp.force_close()
            respiter = self.wsgi(environ, resp.start_response)
            try:
                if isinstance(respiter, environ["wsgi.file_wrapper"]):
                    resp.write_file(respiter)
                else:
                    for item in respiter:
                        resp.write(item)
                resp.close()
            finally:
                self.log.access(resp, req, environ, datetime.now() - request_start)
                if hasattr(respiter, "close"):
                    respiter.close()
            return not resp.should_close()
        except (Exception, SystemExit):
            if resp is not None and resp.headers_sent:
                # Writing a 500 after a started response would corrupt the stream: drop the connection.
                self.log.exception("Error handling request")
                raise StopIteration() from None
            raise
        finally:
            try:
                self.cfg.post_request(self, req, environ, resp)
            except Exception:
                self.log.exception("Exception in post_request hook")
