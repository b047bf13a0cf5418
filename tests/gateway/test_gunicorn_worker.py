"""The gateway's gunicorn worker (one thread per connection), run by real gunicorn over real HTTP."""

from __future__ import annotations

import http.client
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from services.stack import ROOT, free_port, wait_until

WORKER = "services.gateway.gunicorn_worker.ConnectionThreads"


class Gunicorn:
    """gunicorn with the worker in front of ``tests/gateway/worker_app.py``, one worker process."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def __call__(self, *args: str) -> int:
        """Start one with these extra arguments; returns its port."""
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-k", WORKER, "--workers", "1",
                                 "--bind", f"127.0.0.1:{port}", *args, "tests.gateway.worker_app:app"],
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        wait_until(lambda: get(port, "/")[0] == 200, "gunicorn", proc)
        return port


@pytest.fixture()
def start() -> Iterator[Gunicorn]:
    gunicorn = Gunicorn()
    yield gunicorn
    for proc in gunicorn.procs:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)


def get(port: int, path: str, conn: http.client.HTTPConnection | None = None) -> tuple[int, bytes]:
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path)
    response = conn.getresponse()
    return response.status, response.read()


def test_a_busy_kept_alive_connection_keeps_its_thread_request_after_request(start: Gunicorn) -> None:
    port = start()
    one, other = (http.client.HTTPConnection("127.0.0.1", port, timeout=10) for _ in range(2))
    served_one, served_other = set(), set()
    for _ in range(5):  # interleaved: each connection's thread lingers on it between its requests
        served_one.add(get(port, "/", one)[1])
        served_other.add(get(port, "/", other)[1])
    assert len(served_one) == 1 and len(served_other) == 1
    assert served_one != served_other


def test_idle_kept_alive_connections_wait_in_the_selector_and_are_served_again(start: Gunicorn) -> None:
    port = start("--keep-alive", "5")
    conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=10) for _ in range(80)]
    for conn in conns:  # more idle connections than request threads (64): they wait in the selector
        assert get(port, "/", conn)[0] == 200
    time.sleep(1.0)  # past the threads' linger: every connection is handed to the selector
    assert all(get(port, "/", conn)[0] == 200 for conn in conns)


def test_a_slow_request_does_not_hold_up_another_connection(start: Gunicorn) -> None:
    port = start()
    slow = threading.Thread(target=get, args=(port, "/sleep?s=2"))
    slow.start()
    time.sleep(0.2)
    began = time.monotonic()
    assert get(port, "/")[0] == 200
    assert time.monotonic() - began < 1.0
    slow.join()


def test_a_request_body_reaches_the_app(start: Gunicorn) -> None:
    port = start()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for body in (b"first", b"x" * 100_000):  # the same connection, one after the other
        conn.request("POST", "/echo", body=body)
        response = conn.getresponse()
        assert (response.status, response.read()) == (200, body)


def test_a_body_the_app_did_not_read_is_skipped_before_the_next_request(start: Gunicorn) -> None:
    port = start()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/", body=b"unread " * 1000)  # "/" answers without reading the body
    response = conn.getresponse()
    served_by = response.read()
    assert response.status == 200
    assert get(port, "/", conn) == (200, served_by)  # the same connection, the next request intact


def test_an_idle_connection_closes_after_keepalive_seconds(start: Gunicorn) -> None:
    port = start("--keep-alive", "1")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    assert get(port, "/", conn)[0] == 200
    assert conn.sock is not None
    began = time.monotonic()
    assert conn.sock.recv(1) == b""  # closed by the server, not by our timeout
    assert 0.5 < time.monotonic() - began < 5


def test_a_malformed_request_gets_400(start: Gunicorn) -> None:
    port = start()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 400")


def test_an_app_error_gets_500_and_the_worker_serves_on(start: Gunicorn) -> None:
    port = start()
    assert get(port, "/boom")[0] == 500
    assert get(port, "/")[0] == 200


def test_connections_beyond_worker_connections_wait_in_the_backlog(start: Gunicorn) -> None:
    port = start("--worker-connections", "1", "--keep-alive", "1")
    first = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    assert get(port, "/", first)[0] == 200  # holds the only slot until it idles out
    began = time.monotonic()
    assert get(port, "/")[0] == 200
    assert 0.5 < time.monotonic() - began < 5


def test_sigterm_lets_a_request_in_progress_finish(start: Gunicorn) -> None:
    port = start("--graceful-timeout", "10")
    replies: list[tuple[int, bytes]] = []
    slow = threading.Thread(target=lambda: replies.append(get(port, "/sleep?s=1.5")))
    slow.start()
    time.sleep(0.5)
    start.procs[-1].send_signal(signal.SIGTERM)
    slow.join()
    assert replies and replies[0][0] == 200
