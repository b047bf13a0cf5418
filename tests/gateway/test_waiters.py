"""Waiters (long-polls, SSE, WebSockets) parked in the gateway's gunicorn worker, over real HTTP and real Redis."""

from __future__ import annotations

import http.client
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis
import requests
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Ping, Request, TextMessage

from services.core.record.store import keys
from services.gateway.gunicorn_worker import raise_fd_limit
from services.rules.games import GAMES
from tests.games.fixtures import leaked_secrets
from tooling import promtext
from tooling.stack import GUNICORN_CONF, ROOT, free_port, http_ok, wait_until

from .conftest import RulesProcess, redis_server


@dataclass
class Node:
    """One gateway node: gunicorn with the gateway's worker class in front of the app."""

    url: str
    port: int
    proc: subprocess.Popen[bytes]
    redis_url: str
    log: Path  # gunicorn's stderr: the worker's and the app's log lines

    def scrape(self) -> promtext.Samples:
        return promtext.scrape(f"{self.url}/metrics")

    def waiters(self) -> float:
        return promtext.value(self.scrape(), "meeple_gateway_waiters")

    def workers(self) -> set[int]:
        raw = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        return {int(p) for p in raw}


@pytest.fixture()
def start_node(rules: RulesProcess, tmp_path: Path) -> Iterator[Callable[..., Node]]:
    procs: list[subprocess.Popen[bytes]] = []
    stack = []

    def start(workers: int = 1, **env: str) -> Node:
        ctx = redis_server()
        redis_url = ctx.__enter__()
        stack.append(ctx)
        port = free_port()
        log = tmp_path / f"gunicorn-{port}.log"
        full = {**os.environ, "REDIS_URL": redis_url, "MEEPLE_RULES_ADDR": f"127.0.0.1:{rules.port}",
                "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / f"prom-{port}"), "MEEPLE_RATE_LIMIT_PER_MINUTE": "100000",
                **env}
        proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", GUNICORN_CONF, "--workers", str(workers),
                                 "--bind", f"127.0.0.1:{port}", "--graceful-timeout", "2",
                                 "services.gateway.wsgi:app"], cwd=ROOT, env=full,
                                stdout=subprocess.DEVNULL, stderr=log.open("wb"))
        procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: http_ok(f"{url}/healthz"), "gunicorn", proc)
        return Node(url, port, proc, redis_url, log)

    yield start
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
    for ctx in stack:
        ctx.__exit__(None, None, None)


def new_match(node: Node, game: str = "clash", players: int = 2) -> tuple[str, list[str]]:
    created = requests.post(f"{node.url}/v1/matches", json={"game": game, "players": players, "seed": 7,
                                                            "join": True}, timeout=10)
    assert created.status_code == 201, created.text
    body = created.json()
    tokens = [body["token"]]
    for _ in range(players - 1):
        joined = requests.post(f"{node.url}/v1/matches/{body['id']}/join", json={}, timeout=10)
        tokens.append(joined.json()["token"])
    return body["id"], tokens


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def first_move(node: Node, match_id: str, tokens: list[str], session: requests.Session | None = None
               ) -> tuple[int, dict[str, Any], int]:
    """The seat to act, its first legal move and the version it is at."""
    http_ = session or requests
    status = http_.get(f"{node.url}/v1/matches/{match_id}", timeout=10).json()
    seat = status["to_act"][0]
    legal = http_.get(f"{node.url}/v1/matches/{match_id}/legal-moves", headers=auth(tokens[seat]), timeout=10)
    assert legal.status_code == 200, legal.text
    return seat, legal.json()["moves"][0], status["version"]


def play_one(node: Node, match_id: str, tokens: list[str], session: requests.Session | None = None) -> int:
    """One legal move by a seat to act; returns the new version."""
    http_ = session or requests
    seat, move, version_seen = first_move(node, match_id, tokens, session)
    reply = http_.post(f"{node.url}/v1/matches/{match_id}/moves", headers=auth(tokens[seat]), timeout=10,
                       json={"move": move, "version": version_seen})
    assert reply.status_code == 200, reply.text
    version: int = reply.json()["version"]
    return version


def park(node: Node, path: str, token: str | None = None) -> socket.socket:
    """Send a GET and leave its answer unread: a waiter parked on the server."""
    sock = socket.create_connection(("127.0.0.1", node.port), timeout=10)
    extra = f"Authorization: Bearer {token}\r\n" if token else ""
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode())
    return sock


def answer(sock: socket.socket) -> tuple[int, bytes]:
    """Read one HTTP response from a parked socket (status, body; a stream's first bytes)."""
    response = http.client.HTTPResponse(sock)
    response.begin()
    if response.getheader("Content-Type", "").startswith("text/event-stream"):
        return response.status, response.read1(65536) if hasattr(response, "read1") else b""
    return response.status, response.read()


def read_until(sock: socket.socket, marker: bytes) -> bytes:
    """Bytes from a parked socket up to and including ``marker`` (a long-poll's body, an SSE update)."""
    data = b""
    while marker not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the server closed before {marker!r}: {data!r}"
        data += chunk
    return data


def test_two_thousand_parked_waiters_leave_status_moves_and_readyz_alone(start_node: Callable[..., Node]) -> None:
    raise_fd_limit(4096)
    node = start_node(MEEPLE_WAITERS_PER_CLIENT="5000")
    matches = [new_match(node) for _ in range(10)]
    sockets = []
    for i in range(2000):  # waiter i: match (i // 2) % 10, an SSE stream (even i) or a long-poll (odd i)
        match_id, tokens = matches[(i // 2) % 10]
        path = f"/v1/matches/{match_id}/events?after=2&wait=30" if i % 2 else f"/v1/matches/{match_id}/events/stream"
        sockets.append(park(node, path, tokens[i % 2]))
    try:
        wait_until(lambda: node.waiters() == 2000, "2000 parked waiters", node.proc)
        session = requests.Session()
        assert session.get(f"{node.url}/readyz", timeout=10).status_code == 200
        for match_id, tokens in matches:
            status = session.get(f"{node.url}/v1/matches/{match_id}", headers=auth(tokens[0]), timeout=10)
            assert status.status_code == 200
        match_id, tokens = matches[0]
        assert play_one(node, match_id, tokens, session) == 3  # created + joined (v1), joined (v2), the move
        first = [i for i in range(2000) if (i // 2) % 10 == 0]
        for i in first:  # every waiter of that match gets the move: the long-polls' answer, the streams' update
            got = read_until(sockets[i], b"}" if i % 2 else b"event: update")
            assert got.startswith(b"HTTP/1.1 200") and b'"version":3' in got
        wait_until(lambda: node.waiters() == 2000 - len(first) // 2, "the other waiters still parked", node.proc)
        assert session.get(f"{node.url}/readyz", timeout=10).status_code == 200
    finally:
        for sock in sockets:
            sock.close()
    wait_until(lambda: node.waiters() == 0, "every closed waiter released", node.proc, timeout=10)


def test_a_long_poll_answers_when_its_match_changes_and_until_turn_sleeps_through_other_turns(
        start_node: Callable[..., Node]) -> None:
    node = start_node()
    match_id, tokens = new_match(node)
    poll = park(node, f"/v1/matches/{match_id}/events?after=2&wait=30", tokens[0])
    wait_until(lambda: node.waiters() == 1, "a parked long-poll", node.proc)
    version = play_one(node, match_id, tokens)
    status, body = answer(poll)
    doc = orjson.loads(body)
    assert status == 200 and doc["version"] == version and [e["version"] for e in doc["events"]] == [version]
    # until=turn for the seat that is not to act: sleeps through its own... wait for the other seat's move
    status_doc = requests.get(f"{node.url}/v1/matches/{match_id}", timeout=10).json()
    idle_seat = 1 - status_doc["to_act"][0] if len(status_doc["to_act"]) == 1 else None
    if idle_seat is not None:
        turn = park(node, f"/v1/matches/{match_id}/events?after={version}&wait=30&until=turn", tokens[idle_seat])
        wait_until(lambda: node.waiters() == 1, "a parked until=turn long-poll", node.proc)
        later = play_one(node, match_id, tokens)
        status, body = answer(turn)
        assert status == 200 and orjson.loads(body)["version"] >= later
    poll.close()


def post_parked(node: Node, path: str, token: str, body: dict[str, Any]) -> socket.socket:
    """Send a POST and leave its answer unread (a move with ``wait``: parked once the move is applied)."""
    sock = socket.create_connection(("127.0.0.1", node.port), timeout=10)
    data = orjson.dumps(body)
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                 f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
    return sock


def test_a_move_with_wait_parks_after_it_is_applied_and_answers_on_the_movers_turn(
        start_node: Callable[..., Node]) -> None:
    node = start_node()
    match_id, tokens = new_match(node)  # CLASH: the turn passes with each move
    mover, move, start = first_move(node, match_id, tokens)
    sock = post_parked(node, f"/v1/matches/{match_id}/moves?wait=30&include=legal_moves", tokens[mover],
                       {"move": move, "version": start})
    wait_until(lambda: node.waiters() == 1, "the move parked after it was applied", node.proc)
    status = requests.get(f"{node.url}/v1/matches/{match_id}", timeout=10).json()
    assert status["version"] == start + 1 and mover not in status["to_act"]
    version = start + 1
    while mover not in status["to_act"] and status["status"] == "active":
        version = play_one(node, match_id, tokens)
        status = requests.get(f"{node.url}/v1/matches/{match_id}", timeout=10).json()
    code, body = answer(sock)
    doc = orjson.loads(body)
    assert code == 200 and doc["version"] == version and doc["you"] == mover and doc["legal_moves"]
    assert [e["version"] for e in doc["events"]] == list(range(start + 2, version + 1))
    wait_until(lambda: node.waiters() == 0, "the waiter released once answered", node.proc, timeout=5)
    sock.close()


def test_two_seats_sending_every_move_with_wait_play_a_whole_match_and_no_answer_waits_out_its_deadline(
        start_node: Callable[..., Node]) -> None:
    """Each seat's answer must come from a wake-up (its turn, or the end), never from the 30-s deadline: a lost
    wake-up would show as an answer where the seat still has nothing to decide."""
    node = start_node()
    match_id, tokens = new_match(node)
    answers: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def seat_loop(seat: int) -> None:
        try:
            play_seat(seat)
        except BaseException as exc:  # a thread's failure fails the test, below
            errors.append(exc)

    def play_seat(seat: int) -> None:
        with requests.Session() as session:
            headers = auth(tokens[seat])
            status = session.get(f"{node.url}/v1/matches/{match_id}?include=legal_moves", headers=headers,
                                 timeout=10).json()
            if seat not in status["to_act"]:
                status = session.get(f"{node.url}/v1/matches/{match_id}/events?after={status['version']}&wait=30"
                                     "&until=turn&include=legal_moves", headers=headers, timeout=40).json()
            while status["status"] == "active":
                reply = session.post(f"{node.url}/v1/matches/{match_id}/moves?include=legal_moves&wait=30",
                                     headers=headers, json={"move": status["legal_moves"][0],
                                                            "version": status["version"]}, timeout=40)
                assert reply.status_code == 200, reply.text
                status = reply.json()
                answers.append({"seat": seat, "version": status["version"], "to_act": status["to_act"],
                                "status": status["status"]})

    threads = [threading.Thread(target=seat_loop, args=(seat,)) for seat in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == [] and len(answers) >= 10
    waited_out = [a for a in answers if a["status"] == "active" and a["seat"] not in a["to_act"]]
    assert waited_out == [], "answered at the deadline, not at the seat's turn: a wake-up was lost"
    assert requests.get(f"{node.url}/v1/matches/{match_id}", timeout=10).json()["status"] == "finished"


def test_a_move_with_wait_over_the_waiter_cap_is_applied_and_answered_at_once(
        start_node: Callable[..., Node]) -> None:
    node = start_node(MEEPLE_WAITERS_PER_CLIENT="1")
    match_id, tokens = new_match(node, "fierce-women", 2)
    mover, move, start = first_move(node, match_id, tokens)
    held = park(node, f"/v1/matches/{match_id}/events?after={start}&wait=30", tokens[mover])
    wait_until(lambda: node.waiters() == 1, "the mover's long-poll parked", node.proc)
    reply = requests.post(f"{node.url}/v1/matches/{match_id}/moves?wait=30", headers=auth(tokens[mover]),
                          json={"move": move, "version": start}, timeout=10)
    assert reply.status_code == 200, reply.text
    assert reply.json()["version"] == start + 1 and reply.json()["events"] == []
    held.close()


def test_a_client_that_disconnects_is_released_within_two_seconds(start_node: Callable[..., Node]) -> None:
    node = start_node()
    match_id, tokens = new_match(node)
    waiters = [park(node, f"/v1/matches/{match_id}/events?after=5&wait=30", tokens[0]),
               park(node, f"/v1/matches/{match_id}/events/stream", tokens[1])]
    wait_until(lambda: node.waiters() == 2, "two parked waiters", node.proc)
    for sock in waiters:
        sock.close()
    wait_until(lambda: node.waiters() == 0, "the closed waiters released", node.proc, timeout=2.0)


def test_an_sse_client_that_vanishes_mid_stream_logs_no_error(start_node: Callable[..., Node]) -> None:
    """Issue 19 item 10: a stream whose client is gone (reset, then an update to write) is closed quietly."""
    node = start_node()
    match_id, tokens = new_match(node)
    sock = park(node, f"/v1/matches/{match_id}/events/stream", tokens[1])
    wait_until(lambda: node.waiters() == 1, "a parked stream", node.proc)
    version = play_one(node, match_id, tokens)
    assert b"event: update" in read_until(sock, b"event: update")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()  # a reset, as a phone losing its network does
    play_one(node, match_id, tokens)  # an update for the stream that has nobody to go to
    wait_until(lambda: node.waiters() == 0, "the vanished stream released", node.proc, timeout=5)
    assert version > 0
    logged = node.log.read_text(errors="replace")
    assert "Booting worker" in logged  # the log is really gunicorn's
    assert "Traceback" not in logged and "[ERROR]" not in logged and "BrokenPipe" not in logged, logged[-2000:]


def test_the_process_cap_answers_the_waiter_503_with_retry_after_and_nothing_else(
        start_node: Callable[..., Node]) -> None:
    node = start_node(MEEPLE_WAITERS_MAX="3")
    match_id, tokens = new_match(node)
    held = [park(node, f"/v1/matches/{match_id}/events?after=5&wait=30", tokens[i % 2]) for i in range(3)]
    wait_until(lambda: node.waiters() == 3, "three parked waiters", node.proc)
    refused = requests.get(f"{node.url}/v1/matches/{match_id}/events?after=5&wait=30", timeout=10)
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "too_many_waiters" and int(refused.headers["Retry-After"]) > 0
    stream = requests.get(f"{node.url}/v1/matches/{match_id}/events/stream", timeout=10)
    assert stream.status_code == 503 and "Retry-After" in stream.headers
    # everything that does not wait is served: status, an events call with news, a move, readiness
    assert requests.get(f"{node.url}/v1/matches/{match_id}", timeout=10).status_code == 200
    assert requests.get(f"{node.url}/v1/matches/{match_id}/events?after=0&wait=30", timeout=10).status_code == 200
    play_one(node, match_id, tokens)
    assert requests.get(f"{node.url}/readyz", timeout=10).status_code == 200
    for sock in held:
        sock.close()


def test_the_per_client_cap_answers_429_to_that_client_only(start_node: Callable[..., Node]) -> None:
    node = start_node(MEEPLE_WAITERS_PER_CLIENT="2")
    match_id, tokens = new_match(node)
    held = [park(node, f"/v1/matches/{match_id}/events?after=5&wait=30", tokens[0]) for _ in range(2)]
    wait_until(lambda: node.waiters() == 2, "two parked waiters", node.proc)
    mine = requests.get(f"{node.url}/v1/matches/{match_id}/events?after=5&wait=30", headers=auth(tokens[0]),
                        timeout=10)
    assert mine.status_code == 429 and mine.json()["error"]["code"] == "too_many_waiters"
    assert "Retry-After" in mine.headers
    other = park(node, f"/v1/matches/{match_id}/events?after=5&wait=30", tokens[1])
    wait_until(lambda: node.waiters() == 3, "the other seat's waiter parked", node.proc)
    for sock in [*held, other]:
        sock.close()


def test_the_in_flight_gauge_counts_a_stream_once_and_never_goes_negative(start_node: Callable[..., Node]) -> None:
    node = start_node()
    match_id, _ = new_match(node)
    for _ in range(10):
        with requests.get(f"{node.url}/v1/matches/{match_id}/events/stream", stream=True, timeout=10) as r:
            assert r.status_code == 200
            next(r.iter_content(16))
    wait_until(lambda: node.waiters() == 0, "the streams released", node.proc, timeout=5)
    in_flight = promtext.value(node.scrape(), "meeple_gateway_requests_in_flight")
    assert in_flight in (0.0, 1.0)  # (the scrape itself may count)


def test_a_killed_worker_loses_no_event_for_clients_that_reconnect_with_after_or_last_event_id(
        start_node: Callable[..., Node]) -> None:
    node = start_node(workers=1)
    match_id, tokens = new_match(node)
    version = requests.get(f"{node.url}/v1/matches/{match_id}", timeout=10).json()["version"]
    poll = park(node, f"/v1/matches/{match_id}/events?after={version}&wait=30", tokens[0])
    sse = park(node, f"/v1/matches/{match_id}/events/stream?after={version}", tokens[1])
    wait_until(lambda: node.waiters() == 2, "two parked waiters", node.proc)
    (victim,) = node.workers()
    os.kill(victim, signal.SIGKILL)
    for sock in (poll, sse):  # the clients see their connection end...
        sock.settimeout(10)
        assert sock.recv(65536) == b"" or True
        sock.close()
    wait_until(lambda: len(node.workers()) == 1 and victim not in node.workers(), "a new worker", node.proc)
    wait_until(lambda: http_ok(f"{node.url}/healthz"), "the gateway", node.proc)
    moved = play_one(node, match_id, tokens)  # ...and a move lands while they are away
    # reconnecting with what they had seen, they get it
    again = requests.get(f"{node.url}/v1/matches/{match_id}/events?after={version}&wait=30",
                         headers=auth(tokens[0]), timeout=10).json()
    assert [e["version"] for e in again["events"]] == [moved]
    with requests.get(f"{node.url}/v1/matches/{match_id}/events/stream", stream=True, timeout=10,
                      headers={**auth(tokens[1]), "Last-Event-ID": str(version)}) as r:
        text = b""
        for chunk in r.iter_content(None):
            text += chunk
            if b"event: update" in text and text.endswith(b"\n\n"):
                break
    update = next(line for line in text.decode().splitlines() if line.startswith("data: "))
    assert [e["version"] for e in orjson.loads(update[6:])["events"]] == [moved]


class WsClient:
    """A blocking WebSocket client over wsproto (the same library the server frames with)."""

    def __init__(self, node: Node, match_id: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", node.port), timeout=10)
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.sock.sendall(self.ws.send(Request(host="127.0.0.1", target=f"/v1/matches/{match_id}/ws")))
        self.inbox: list[Any] = []
        while not any(isinstance(e, AcceptConnection) for e in self.inbox):
            assert not any(isinstance(e, CloseConnection) for e in self.inbox), "the upgrade was refused"
            self.pump()
        self.inbox.clear()

    def pump(self) -> None:
        data = self.sock.recv(65536)
        self.ws.receive_data(data or None)
        for event in self.ws.events():
            if isinstance(event, Ping):
                self.sock.sendall(self.ws.send(event.response()))
            else:
                self.inbox.append(event)
        if not data:
            self.inbox.append(CloseConnection(1006))

    def send(self, doc: dict[str, Any]) -> None:
        self.send_text(orjson.dumps(doc).decode())

    def send_text(self, text: str) -> None:
        self.sock.sendall(self.ws.send(TextMessage(data=text)))

    def next(self) -> dict[str, Any] | None:
        """The next JSON message, or None once the server closed."""
        parts = ""
        while True:
            while not self.inbox:
                self.pump()
            event = self.inbox.pop(0)
            if isinstance(event, CloseConnection):
                return None
            if isinstance(event, TextMessage):
                parts += event.data
                if event.message_finished:
                    doc: dict[str, Any] = orjson.loads(parts)
                    return doc


@pytest.mark.parametrize("gid", list(GAMES))
def test_a_full_game_over_websockets_never_shows_a_seat_another_seats_secrets(
        start_node: Callable[..., Node], gid: str) -> None:
    node = start_node()
    game = GAMES[gid]
    players = max(game.min_players, 2)
    match_id, tokens = new_match(node, gid, players)
    store = redis.Redis.from_url(node.redis_url)
    sockets = [WsClient(node, match_id) for _ in range(players)]
    for seat, client in enumerate(sockets):
        client.send({"type": "hello", "token": tokens[seat], "include": "legal_moves"})
        ready = client.next()
        assert ready is not None and ready["type"] == "ready" and ready["seat"] == seat

    def check(seat: int, doc: dict[str, Any]) -> None:
        state = game.decode(store.get(keys(match_id)[2]))  # type: ignore[arg-type]
        assert leaked_secrets(game, state, seat, doc) == set(), f"seat {seat} received hidden ids"

    rng = random.Random(5)
    status = requests.get(f"{node.url}/v1/matches/{match_id}", timeout=10).json()
    version, to_act, finished, moves = status["version"], status["to_act"], False, 0
    legal = {seat: requests.get(f"{node.url}/v1/matches/{match_id}/legal-moves", headers=auth(tokens[seat]),
                                timeout=10).json()["moves"] for seat in range(players)}
    while not finished:
        seat = rng.choice(to_act)
        sockets[seat].send({"type": "move", "id": moves, "move": rng.choice(legal[seat]), "version": version,
                            "idempotency_key": f"k{moves}"})
        for other, client in enumerate(sockets):  # every seat gets the update, the mover its reply too
            need_update, need_reply = True, other == seat
            while need_update or need_reply:
                doc = client.next()
                assert doc is not None, "the socket closed before the match finished"
                check(other, doc)
                if doc["type"] == "reply":
                    assert doc["status"] == 200 and doc["id"] == moves, doc
                    need_reply = False
                else:
                    assert doc["type"] == "update" and doc["version"] == version + 1, doc
                    legal[other] = doc["legal_moves"] or []
                    need_update = False
        version, to_act, finished = doc["version"], doc["to_act"], doc["status"] == "finished"
        moves += 1
    for client in sockets:
        assert client.next() is None  # the server closes each socket after the final update
    assert requests.get(f"{node.url}/v1/matches/{match_id}", timeout=10).json()["status"] == "finished"


def test_the_updates_a_socket_move_causes_on_its_own_gateway_are_pushed_without_reading_the_match_again(
        start_node: Callable[..., Node]) -> None:
    """Issue 47: a move's pushes (the mover's update and the other seat's) come from the version the gateway just
    committed, not from a read of Redis each: one match read per move (its own), where there were three. And
    each update is exactly what a REST read of the same events answers."""
    node = start_node()
    match_id, tokens = new_match(node, "fierce-women")
    store = redis.Redis.from_url(node.redis_url)
    sockets = [WsClient(node, match_id) for _ in tokens]
    for seat, client in enumerate(sockets):
        client.send({"type": "hello", "token": tokens[seat], "include": "legal_moves", "after": 0})
        assert (client.next() or {})["type"] == "ready"
        update = client.next()
        assert update is not None and update["type"] == "update"
    version, to_act, legal = update["version"], update["to_act"], {}
    for seat in range(len(tokens)):
        legal[seat] = requests.get(f"{node.url}/v1/matches/{match_id}/legal-moves", headers=auth(tokens[seat]),
                                   timeout=10).json()["moves"]
    rng, moves = random.Random(3), 6

    def match_reads() -> int:
        return int(store.info("commandstats").get("cmdstat_mget", {}).get("calls", 0))

    before = match_reads()
    for n in range(moves):
        seat = rng.choice(to_act)
        sockets[seat].send({"type": "move", "id": n, "move": rng.choice(legal[seat]), "version": version})
        updates = {}
        for other, client in enumerate(sockets):
            while other not in updates:
                doc = client.next()
                assert doc is not None
                if doc["type"] == "update":
                    updates[other] = doc
                else:
                    assert doc["type"] == "reply" and doc["status"] == 200, doc
        for other, doc in updates.items():  # what a REST read of the same step answers, word for word
            rest = requests.get(f"{node.url}/v1/matches/{match_id}/events?after={version}&include=legal_moves",
                                headers=auth(tokens[other]), timeout=10).json()
            assert {k: doc[k] for k in rest} == rest
            legal[other] = doc["legal_moves"] or []
        version, to_act = updates[0]["version"], updates[0]["to_act"]
    pushed = match_reads() - before - moves * len(tokens)  # less the REST reads above
    assert pushed < 2 * moves  # its own read, and rarely a wake that raced it; it was three a move (one per push)


def test_a_socket_move_refused_by_the_rate_limit_says_when_to_retry_as_rest_does(
        start_node: Callable[..., Node]) -> None:
    node = start_node(MEEPLE_RATE_LIMIT_PER_MINUTE="4")
    match_id, tokens = new_match(node)
    status = requests.get(f"{node.url}/v1/matches/{match_id}", timeout=10).json()
    seat = status["to_act"][0]
    client = WsClient(node, match_id)
    client.send({"type": "hello", "token": tokens[seat]})
    assert (client.next() or {})["type"] == "ready"
    replies = []
    for n in range(6):  # stale versions: refused (409) until the limit refuses them (429)
        client.send({"type": "move", "id": n, "move": {"type": "pass"}, "version": status["version"] + 9})
        doc = client.next()
        assert doc is not None and doc["type"] == "reply"
        replies.append(doc)
    limited = [r for r in replies if r["status"] == 429]
    assert limited and all(r["body"]["error"]["code"] == "rate_limited" for r in limited)
    rest = requests.post(f"{node.url}/v1/matches/{match_id}/moves", headers=auth(tokens[seat]), timeout=10,
                         json={"move": {"type": "pass"}, "version": status["version"] + 9})
    assert rest.status_code == 429
    assert 0 < limited[-1]["retry_after"] <= int(rest.headers["Retry-After"]) + 1
    assert all("retry_after" not in r for r in replies if r["status"] != 429)


def test_a_websocket_move_gets_the_rest_errors_and_idempotent_replays(start_node: Callable[..., Node]) -> None:
    node = start_node()
    match_id, tokens = new_match(node)
    status = requests.get(f"{node.url}/v1/matches/{match_id}", timeout=10).json()
    seat = status["to_act"][0]
    client = WsClient(node, match_id)
    client.send({"type": "hello", "token": tokens[seat]})
    assert client.next() == {"type": "ready", "seat": seat, "version": status["version"]}
    move = requests.get(f"{node.url}/v1/matches/{match_id}/legal-moves", headers=auth(tokens[seat]),
                        timeout=10).json()["moves"][0]
    client.send({"type": "move", "id": "stale", "move": move, "version": status["version"] + 7})
    reply = client.next()
    assert reply is not None and reply["status"] == 409 and reply["body"]["error"]["code"] == "stale_version"
    for attempt in ("a", "b"):  # the same idempotency key twice: one move, the same answer
        client.send({"type": "move", "id": attempt, "move": move, "version": status["version"],
                     "idempotency_key": "once"})
    answers = []
    while len(answers) < 2:
        doc = client.next()
        assert doc is not None
        if doc["type"] == "reply":
            answers.append(doc)
    assert [a["status"] for a in answers] == [200, 200] and answers[0]["body"] == answers[1]["body"]
    assert requests.get(f"{node.url}/v1/matches/{match_id}", timeout=10).json()["version"] == status["version"] + 1
    client.send({"type": "dance"})
    doc = client.next()
    while doc is not None and doc["type"] == "update":
        doc = client.next()
    assert doc is not None and doc["type"] == "error" and doc["error"]["code"] == "bad_message"


def test_a_websocket_move_with_an_integer_past_64_bits_is_refused_as_the_rest_body_is(
        start_node: Callable[..., Node]) -> None:
    """The contract bounds every integer of a body to 64 bits. The socket's messages were read with orjson, which
    turns a larger integer into a float: the move went on to the version check and the rules service, where the
    same REST body is refused by the bound. Now both read it the same way: the same error, nothing applied."""
    node = start_node()
    match_id, tokens = new_match(node)
    status = requests.get(f"{node.url}/v1/matches/{match_id}", timeout=10).json()
    seat = status["to_act"][0]
    body = f'{{"move": {{"type": "draw", "n": {2**70}}}, "version": {status["version"]}}}'
    rest = requests.post(f"{node.url}/v1/matches/{match_id}/moves", data=body, timeout=10,
                         headers={**auth(tokens[seat]), "Content-Type": "application/json"})
    assert rest.status_code == 400 and rest.json()["error"]["code"] == "malformed_move"
    client = WsClient(node, match_id)
    client.send({"type": "hello", "token": tokens[seat]})
    assert client.next() == {"type": "ready", "seat": seat, "version": status["version"]}
    client.send_text('{"type": "move", "id": 1, ' + body[1:])
    reply = client.next()
    assert reply is not None and reply["type"] == "reply" and reply["status"] == 400, reply
    assert reply["body"]["error"] == rest.json()["error"]
    assert requests.get(f"{node.url}/v1/matches/{match_id}", timeout=10).json()["version"] == status["version"]


def test_a_hellos_include_takes_what_the_rest_parameter_takes(start_node: Callable[..., Node]) -> None:
    """`include=` (empty) is "nothing" on REST; the hello refused it (bad_parameter), found probing the two doors
    with the same values. Now both take the contract's values, and both refuse another."""
    node = start_node()
    match_id, tokens = new_match(node)
    for include, ok in (("", True), ("legal_moves", True), ("foo", False)):
        rest = requests.get(f"{node.url}/v1/matches/{match_id}/events", params={"include": include},
                            headers=auth(tokens[0]), timeout=10)
        client = WsClient(node, match_id)
        client.send({"type": "hello", "token": tokens[0], "include": include})
        first = client.next()
        assert first is not None and (rest.status_code == 200) == ok == (first["type"] == "ready"), (include, first)
        if not ok:
            assert rest.json()["error"]["code"] == first["error"]["code"] == "bad_parameter"


def test_a_websocket_with_a_wrong_token_or_no_hello_is_closed(start_node: Callable[..., Node]) -> None:
    node = start_node()
    match_id, _ = new_match(node)
    client = WsClient(node, match_id)
    client.send({"type": "hello", "token": "0.not-a-token"})
    error = client.next()
    assert error is not None and error["error"]["code"] == "wrong_token"
    assert client.next() is None
    plain = requests.get(f"{node.url}/v1/matches/{match_id}/ws", timeout=10)
    assert plain.status_code == 426 and plain.json()["error"]["code"] == "upgrade_required"
