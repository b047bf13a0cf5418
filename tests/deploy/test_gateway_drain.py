"""A gateway that is stopped (SIGTERM: a rolling restart) drains, over real HTTP against real gunicorn.

The clients a gateway holds when it is told to stop are each of the kinds a rolling restart meets: a kept-alive
connection idle between requests, one that sends request after request, a parked long-poll, an SSE stream and a
WebSocket. None of them may see a failure other than a clean close between requests: the idle and the busy
connection get their next answer with ``Connection: close``, the long-poll answers, the SSE response ends with
its last chunk and the WebSocket gets a close frame 1012 ("service restart"), so every client reconnects
(elsewhere, behind a load balancer) and loses nothing.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect as ws_connect

from tests.gateway.conftest import RulesProcess, redis_server, rules  # noqa: F401  (rules: a fixture)
from tooling.stack import GUNICORN_CONF, ROOT, free_port, http_ok, wait_until


@dataclass
class Gateway:
    port: int
    proc: subprocess.Popen[bytes]

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)


@pytest.fixture()
def gateway(rules: RulesProcess) -> Iterator[Gateway]:  # noqa: F811  (the imported fixture)
    """The gateway as deployed: gunicorn with the gateway's config and worker, keep-alive on, a real Redis."""
    with redis_server() as redis_url, tempfile.TemporaryDirectory(prefix="meeple-prom-") as prom:
        port = free_port()
        env = {**os.environ, "REDIS_URL": redis_url, "MEEPLE_RULES_ADDR": f"127.0.0.1:{rules.port}",
               "PROMETHEUS_MULTIPROC_DIR": prom, "MEEPLE_RATE_LIMIT_PER_MINUTE": "100000"}
        proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", GUNICORN_CONF, "--workers", "1",
                                 "--bind", f"127.0.0.1:{port}", "--keep-alive", "5", "--graceful-timeout", "10",
                                 "services.gateway.wsgi:app"], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until(lambda: http_ok(f"http://127.0.0.1:{port}/healthz"), "gunicorn", proc)
            yield Gateway(port, proc)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            proc.wait(20)


def request(conn: http.client.HTTPConnection, method: str, path: str, body: object = None
            ) -> http.client.HTTPResponse:
    headers = {"Content-Type": "application/json"} if body is not None else {}
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    return conn.getresponse()


def test_a_stopping_gateway_answers_every_client_it_holds_and_closes_only_between_requests(gateway: Gateway) -> None:
    with contextlib.ExitStack() as closing:
        _drain_with_every_kind_of_client(gateway, closing)


def _drain_with_every_kind_of_client(gateway: Gateway, closing: contextlib.ExitStack) -> None:
    setup = gateway.connection()
    created = request(setup, "POST", "/v1/matches",
                      {"game": "clash", "players": 2, "seats": [{"kind": "human"}, {"kind": "human"}]})
    match = json.loads(created.read())
    assert created.status == 201, match
    events = f"/v1/matches/{match['id']}/events"

    # An idle kept-alive connection (one answered request), and one that keeps sending requests.
    idle = gateway.connection()
    first = request(idle, "GET", "/healthz")
    first.read()
    assert first.status == 200 and first.getheader("Connection", "").lower() != "close"
    busy_seen: list[str] = []
    busy_failures: list[BaseException] = []
    stopping = threading.Event()

    def keep_busy() -> None:
        conn = gateway.connection()
        while True:
            try:
                answer = request(conn, "GET", "/healthz")
                answer.read()
            except BaseException as exc:  # any failure before a Connection: close answer is the client's loss
                busy_failures.append(exc)
                return
            busy_seen.append(answer.getheader("Connection", "keep-alive").lower())
            if busy_seen[-1] == "close":
                return
            time.sleep(0.02 if stopping.is_set() else 0.05)

    busy = threading.Thread(target=keep_busy)
    busy.start()

    # Parked waiters: a long-poll, an SSE stream (its first bytes read), a WebSocket (ready).
    poll_conn = gateway.connection()
    poll_conn.request("GET", f"{events}?after={match['version']}&wait=30")
    sse_conn = gateway.connection()
    sse_conn.request("GET", f"{events}/stream?after={match['version']}")
    sse = sse_conn.getresponse()
    assert sse.status == 200 and sse.read1(64).startswith(b"retry:")
    ws = closing.enter_context(ws_connect(f"ws://127.0.0.1:{gateway.port}{events[:-len('/events')]}/ws",
                                          open_timeout=10))
    ws.send(json.dumps({"type": "hello", "after": match["version"]}))
    assert json.loads(ws.recv(10))["type"] == "ready"
    time.sleep(0.3)  # the long-poll is parked by now (a poll that had not parked would answer all the same)

    gateway.proc.send_signal(signal.SIGTERM)
    stopping.set()
    time.sleep(0.3)

    # The idle connection is reused after the stop began: answered, and told to close.
    again = request(idle, "GET", "/healthz")
    again.read()
    assert again.status == 200 and again.getheader("Connection", "").lower() == "close"
    # The long-poll answers (nothing new: no events) and closes.
    polled = poll_conn.getresponse()
    assert polled.status == 200 and json.loads(polled.read())["events"] == []
    assert polled.getheader("Connection", "").lower() == "close"
    # The SSE response ends with its last chunk: reading it to the end raises no IncompleteRead.
    rest = sse.read()
    assert sse.isclosed() and b"event: update" not in rest
    # The WebSocket is closed by the server with 1012 "service restart".
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            ws.recv(10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1012
    busy.join(20)
    assert not busy_failures, f"the busy connection failed: {busy_failures!r} after {busy_seen}"
    assert busy_seen[-1] == "close"
    assert gateway.proc.wait(20) == 0  # and the gateway stops by itself, cleanly
    with pytest.raises(ConnectionRefusedError):  # a new connection is refused: nothing was sent, retry elsewhere
        request(gateway.connection(), "GET", "/healthz")
