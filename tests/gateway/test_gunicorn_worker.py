"""The gateway's gunicorn worker (one thread per connection), run by real gunicorn over real HTTP."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from services.gateway.gunicorn_worker import TICK_S, Conn, Loop, Pool
from tooling.stack import ROOT, free_port, wait_until

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
    held: list[tuple[int, bytes]] = []
    slow = threading.Thread(target=lambda: held.append(get(port, "/hold")))  # answers only after /release
    slow.start()
    assert get(port, "/")[0] == 200  # served while the other request still holds its thread
    assert held == [] and slow.is_alive()
    assert get(port, "/release")[0] == 200
    slow.join(30)
    assert held and held[0][0] == 200


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
    assert get(port, "/", conn)[0] == 200  # kept alive: the same connection serves the next request
    assert conn.sock is not None
    assert conn.sock.recv(1) == b""  # then closed by the server once idle (our 10 s timeout would raise)


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
    assert get(port, "/")[0] == 200  # a second connection is served: it waited for that slot
    assert first.sock is not None and first.sock.recv(1) == b""  # because the first was closed by then


def test_sigterm_lets_a_request_in_progress_finish(start: Gunicorn) -> None:
    port = start("--graceful-timeout", "10")
    replies: list[tuple[int, bytes]] = []
    slow = threading.Thread(target=lambda: replies.append(get(port, "/sleep?s=1.5")))
    slow.start()
    time.sleep(0.5)
    start.procs[-1].send_signal(signal.SIGTERM)
    slow.join()
    assert replies and replies[0][0] == 200


# -- the selector thread's inbox and the request pool, in-process ----------------------------------------------


class _Recorder(Loop):
    """The selector thread with a message handler that only notes when each post arrived."""

    def __init__(self) -> None:
        super().__init__(None)  # type: ignore[arg-type]  # (no worker: the recorder handles nothing)
        self.seen: dict[int, float] = {}

    def message(self, what: str, conn: Conn | None) -> None:
        self.seen[int(what)] = time.monotonic()


def test_a_post_racing_the_selectors_wake_up_is_handled_at_once_not_at_the_next_tick() -> None:
    """A post that lands while the selector thread empties the bell must ring again: it used to wait up to a
    tick (a second) when the ring was cleared before the bell was read, and 1% of deliveries took ~1 s."""
    loop = _Recorder()
    loop.start()
    sent: dict[int, float] = {}

    def poster(first: int) -> None:
        for n in range(first, first + 300):
            sent[n] = time.monotonic()
            loop.post(str(n), None)
            time.sleep(0.0005 * (n % 3))

    threads = [threading.Thread(target=poster, args=(i * 1000,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wait_until(lambda: len(loop.seen) == len(sent), "every post handled")
    slowest = max(loop.seen[n] - sent[n] for n in sent)
    assert slowest < TICK_S / 2, f"a post waited {slowest:.3f} s for the selector thread"


def test_urgent_jobs_overtake_a_burst_of_timers_and_timers_keep_to_their_share_of_threads() -> None:
    pool = Pool(8, background_max=2)
    release = threading.Event()
    running: list[int] = []
    lock = threading.Lock()

    def timer(n: int) -> None:
        with lock:
            running.append(n)
        release.wait(10)

    for n in range(20):
        pool.submit(timer, n, background=True)
    wait_until(lambda: len(running) == 2, "two timers running")
    done = threading.Event()
    pool.submit(done.set)
    assert done.wait(5), "an urgent job waited behind the timers"
    time.sleep(0.1)
    assert len(running) == 2, "more timers ran at once than their share"
    release.set()
    wait_until(lambda: len(running) == 20, "every timer ran in the end")


def test_meeple_bench_waiters_parks_its_waiters_and_reports_their_deliveries() -> None:
    """The benchmark command itself, small: every waiter connected, none refused, events delivered."""
    out = subprocess.run([sys.executable, "-m", "services.cli", "bench", "waiters", "--clients", "30", "--seconds",
                          "1.5", "--idle", "0.5", "--json"], cwd=ROOT, capture_output=True, timeout=240)
    assert out.returncode == 0, out.stderr.decode()[-3000:]
    report = json.loads(out.stdout)
    assert (report["connected"], report["errors"]) == (30, 0)
    assert report["deliveries"] > 0 and report["moves"] > 0 and report["move_p50_ratio"] is not None


def test_a_wake_up_promotes_its_connections_queued_timer_job_past_the_burst() -> None:
    """A long-poll woken while its deadline job waits behind a burst of timers is answered now, not after it."""
    pool = Pool(8, background_max=1)
    release = threading.Event()
    pool.submit(release.wait, 10, background=True)  # holds the only background thread
    for _ in range(5):
        pool.submit(release.wait, 10, background=True)
    answered = threading.Event()
    job = pool.submit(answered.set, background=True)
    time.sleep(0.1)
    assert not answered.is_set()
    pool.promote(job)
    assert answered.wait(5), "the promoted job still waited for the timers"
    release.set()


def test_a_job_submitted_while_the_idle_thread_is_still_waking_gets_a_thread_of_its_own() -> None:
    """Two jobs in a row with one idle thread: the second must not wait for the first, which may be a kept-alive
    connection's requests one after another (in a load test a chatty /healthz client starved every other user)."""
    pool = Pool(8)
    started = threading.Event()
    pool.submit(started.set)
    assert started.wait(5)
    wait_until(lambda: pool.idle == 1, "the first thread idle again")
    release = threading.Event()
    second = threading.Event()
    pool.submit(release.wait, 10)  # takes the idle thread and holds it
    pool.submit(second.set)
    assert second.wait(5), "the second job waited for the first one's thread"
    release.set()
