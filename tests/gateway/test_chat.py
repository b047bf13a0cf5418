"""Chat in a match over real HTTP and real Redis (one server and a Redis Cluster): every reader of the match gets
every message on every channel (long-poll, SSE, WebSocket) and in the replay, a redaction replaces it everywhere,
and each bad input gets its documented 4xx.

The gateway is gunicorn with the parking worker (it holds the WebSockets), with the chat's limits made small and
its windows long (``MEEPLE_CHAT_*``), so no assertion here depends on how fast the machine is.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
import requests

from services import redisconn
from services.core.record.store import chat_keys, keys
from services.webhooks.worker import WebhookMetrics, WebhookWorker
from tooling import promtext
from tooling.stack import free_port, wait_until

from .conftest import Api, GatewayServer, RulesProcess, gunicorn_gateway
from .test_backends import as_key, new_key
from .test_waiters import WsClient, answer, park, read_until
from .test_webhooks import ALLOW, Receiver

RATE, CAP = 3, 8


@dataclass
class ChatNode:
    """The gunicorn gateway of these tests: its URL, port and Redis."""

    url: str
    port: int
    redis_url: str

    def waiters(self) -> float:
        return promtext.value(promtext.scrape(f"{self.url}/metrics"), "meeple_gateway_waiters")


@pytest.fixture(scope="module")
def node(redis_url: str, rules: RulesProcess) -> Iterator[ChatNode]:
    with gunicorn_gateway(redis_url, rules.port, MEEPLE_CHAT_RATE=str(RATE), MEEPLE_CHAT_RATE_WINDOW_S="3600",
                          MEEPLE_CHAT_MAX_MESSAGES=str(CAP), MEEPLE_CHAT_AFTER_FINISH_S="0") as gw:
        yield ChatNode(gw.url, int(gw.url.rsplit(":", 1)[1]), redis_url)


@pytest.fixture()
def api(node: ChatNode) -> Api:  # (the conftest's ``api`` is an in-process gateway with the default limits)
    return Api(node.url)


def new_match(api: Api, *, spectator_chat: bool = False, key: str | None = None) -> tuple[str, list[str]]:
    """A CLASH match with both seats taken: its id and the two seat tokens."""
    extra = as_key(key) if key else {}
    created = api.post("/v1/matches", headers=extra, json={"game": "clash", "players": 2, "seed": 5,
                                                           "spectator_chat": spectator_chat})
    assert created.status_code == 201, created.text
    assert created.json()["spectator_chat"] is spectator_chat
    match_id = created.json()["id"]
    tokens = [api.post(f"/v1/matches/{match_id}/join", headers=extra, json={}).json()["token"] for _ in range(2)]
    return match_id, tokens


def say(api: Api, match_id: str, who: str | None, **body: Any) -> requests.Response:
    """POST a chat message as ``who`` (a seat token, an API key, or nobody)."""
    headers = as_key(who) if who and who.startswith("mk_") else {}
    return api.post(f"/v1/matches/{match_id}/chat", None if who is None or who.startswith("mk_") else who,
                    headers=headers, json=body)


def error_of(response: requests.Response) -> str:
    code: str = response.json()["error"]["code"]
    return code


class Sse:
    """One parked SSE stream read frame by frame."""

    def __init__(self, node: ChatNode, path: str, token: str | None = None) -> None:
        self.sock = park(node, path, token)  # type: ignore[arg-type]
        self.buffer = read_until(self.sock, b"retry: 1000\n\n").split(b"retry: 1000\n\n", 1)[1]

    def next(self, kind: str) -> dict[str, Any]:
        """The data of the next ``event: <kind>`` (others are skipped)."""
        while True:
            while b"\n\n" not in self.buffer:
                chunk = self.sock.recv(65536)
                assert chunk, "the stream ended"
                self.buffer += chunk
            frame, self.buffer = self.buffer.split(b"\n\n", 1)
            lines = dict(line.split(b": ", 1) for line in frame.split(b"\n") if b": " in line)
            if lines.get(b"event") == kind.encode():
                doc: dict[str, Any] = orjson.loads(lines[b"data"])
                return doc

    def close(self) -> None:
        self.sock.close()


def socket_of(node: ChatNode, match_id: str, token: str | None, chat_after: int | None = None) -> WsClient:
    client = WsClient(node, match_id)  # type: ignore[arg-type]
    client.send({"type": "hello", "token": token, **({"chat_after": chat_after} if chat_after is not None else {})})
    ready = client.next()
    assert ready is not None and ready["type"] == "ready", ready
    return client


def next_of(client: WsClient, kind: str) -> dict[str, Any]:
    while True:
        doc = client.next()
        assert doc is not None, f"the socket closed before a {kind!r} message"
        if doc["type"] == kind:
            return doc


def long_poll(node: ChatNode, match_id: str, token: str | None, after: int, chat_after: int) -> socket.socket:
    return park(node, f"/v1/matches/{match_id}/events?after={after}&wait=30&chat_after={chat_after}",  # type: ignore[arg-type]
                token)


def test_chat_reaches_every_other_seat_and_a_spectator_on_all_four_channels_and_appears_in_the_replay(
        node: ChatNode, api: Api) -> None:
    match_id, tokens = new_match(api)
    version = api.get(f"/v1/matches/{match_id}").json()["version"]
    readers: list[str | None] = [tokens[0], tokens[1], None]  # both seats and an anonymous spectator
    sockets = [socket_of(node, match_id, who) for who in readers]
    streams = [Sse(node, f"/v1/matches/{match_id}/events/stream", who) for who in readers]
    before = node.waiters()
    polls = [long_poll(node, match_id, who, version, 0) for who in readers]
    wait_until(lambda: node.waiters() == before + len(polls), "the long-polls parked")
    try:
        posted = say(api, match_id, tokens[0], text="  hi <b>all</b> [card 12]  ")
        assert posted.status_code == 201, posted.text
        first = posted.json()
        assert first == {"id": 1, "seat": 0, "text": "hi <b>all</b> [card 12]", "preset": None, "at": first["at"],
                         "redacted": False}
        assert api.get(f"/v1/matches/{match_id}").json()["version"] == version  # chat is not a version
        for poll in polls:  # each parked long-poll was woken by the message
            status, body = answer(poll)
            doc = orjson.loads(body)
            assert status == 200 and doc["chat"] == [first] and doc["chat_redacted"] == [] and doc["events"] == []
        for stream in streams:
            assert stream.next("chat") == first
        for client in sockets:
            assert next_of(client, "chat")["message"] == first
        # seat 1 answers on its socket, as it sends moves: a reply with the REST status and body
        sockets[1].send({"type": "chat", "id": 7, "preset": "gg"})
        reply = next_of(sockets[1], "reply")
        second = reply["body"]
        assert reply["id"] == 7 and reply["status"] == 201
        assert second == {"id": 2, "seat": 1, "text": "Good game", "preset": "gg", "at": second["at"],
                          "redacted": False}
        for stream in streams:
            assert stream.next("chat") == second
        for client in sockets:
            assert next_of(client, "chat")["message"] == second
        for who in readers:  # a long-poll that has seen the first message hears of the second at once
            doc = api.get(f"/v1/matches/{match_id}/events?after={version}&chat_after=1", who).json()
            assert doc["chat"] == [second]
        for who in readers:
            assert api.get(f"/v1/matches/{match_id}/replay", who).json()["chat"] == [first, second]
    finally:
        for stream in streams:
            stream.close()
        for client in sockets:
            client.sock.close()


def test_a_redaction_replaces_the_message_everywhere(node: ChatNode, api: Api, redis_url: str) -> None:
    tenant = f"chat{uuid.uuid4().hex[:8]}"
    key, other = new_key(redis_url, tenant)["key"], new_key(redis_url, tenant + "x")["key"]
    receiver = Receiver(free_port())
    receiver.start()
    try:
        hook = api.post("/v1/webhooks", headers=as_key(key), json={
            "url": f"http://127.0.0.1:{receiver.port}/", "events": ["chat.message", "chat.redacted"]})
        assert hook.status_code == 201, hook.text
        receiver.secret = hook.json()["secret"]
        match_id, tokens = new_match(api, key=key)
        message = say(api, match_id, tokens[0], text="my hand is 3 4 5").json()
        seat_socket = socket_of(node, match_id, tokens[1], chat_after=0)
        assert next_of(seat_socket, "chat")["message"] == message  # chat_after=0: the past messages first
        stream = Sse(node, f"/v1/matches/{match_id}/events/stream?chat_after=0", key)
        assert stream.next("chat") == message
        version = api.get(f"/v1/matches/{match_id}", key).json()["version"]
        before = node.waiters()
        poll = long_poll(node, match_id, tokens[0], version, 1)
        wait_until(lambda: node.waiters() == before + 1, "the long-poll parked")

        assert api.call("DELETE", f"/v1/matches/{match_id}/chat/1", tokens[0]).status_code == 401  # a seat: no
        assert api.call("DELETE", f"/v1/matches/{match_id}/chat/1", headers=as_key(other)).status_code == 404
        assert api.call("DELETE", f"/v1/matches/{match_id}/chat/9", headers=as_key(key)).status_code == 404
        assert api.call("DELETE", f"/v1/matches/{match_id}/chat/1", headers=as_key(key)).status_code == 204
        assert api.call("DELETE", f"/v1/matches/{match_id}/chat/1", headers=as_key(key)).status_code == 204

        redacted = {**message, "text": None, "preset": None, "redacted": True}
        status, body = answer(poll)  # the redaction woke it
        assert status == 200 and orjson.loads(body)["chat_redacted"] == [1] and orjson.loads(body)["chat"] == []
        assert next_of(seat_socket, "chat_redacted") == {"type": "chat_redacted", "id": 1}
        assert stream.next("chat_redacted") == {"id": 1}
        for who in (tokens[0], tokens[1], key):
            doc = api.get(f"/v1/matches/{match_id}/events?chat_after=0", who).json()
            assert doc["chat"] == [redacted] and doc["chat_redacted"] == [1]
            assert api.get(f"/v1/matches/{match_id}/replay", who).json()["chat"] == [redacted]
        late = socket_of(node, match_id, tokens[0], chat_after=0)  # a reader arriving later: redacted already
        assert next_of(late, "chat")["message"] == redacted
        stream.close()
        seat_socket.sock.close()
        late.sock.close()

        worker = WebhookWorker(redis_url, WebhookMetrics(), backoff_s=1.0, allow=ALLOW)
        worker.run_once(time.time())
        got = {d["event"]: d["body"]["data"] for d in receiver.delivered().values()}
        assert got["chat.message"]["message"] == message and got["chat.message"]["match_id"] == match_id
        assert got["chat.redacted"]["id"] == 1
    finally:
        receiver.stop()


# -- each bad input, named after the rule it pins -------------------------------------------------------------

def test_empty_text_is_400_bad_chat(api: Api) -> None:
    match_id, tokens = new_match(api)
    for body in ({"text": ""}, {"text": " \t "}, {}, {"text": "a", "preset": "gg"}):
        refused = say(api, match_id, tokens[0], **body)
        assert refused.status_code == 400 and error_of(refused) == "bad_chat", body


def test_text_over_200_characters_is_400_bad_chat(api: Api) -> None:
    match_id, tokens = new_match(api)
    refused = say(api, match_id, tokens[0], text="é" * 201)
    assert refused.status_code == 400 and error_of(refused) == "bad_chat"
    assert say(api, match_id, tokens[0], text=" " + "é" * 200 + " ").status_code == 201  # stripped first


def test_control_characters_are_400_bad_chat(api: Api) -> None:
    match_id, tokens = new_match(api)
    for text in ("two\nlines", "bell\x07", "\x1b[31mred", "del\x7f", "nel\x85inside"):
        refused = say(api, match_id, tokens[0], text=text)
        assert refused.status_code == 400 and error_of(refused) == "bad_chat", text


def test_a_preset_the_game_does_not_have_is_400_bad_chat(api: Api) -> None:
    match_id, tokens = new_match(api)
    presets = {p["id"]: p["text"] for p in api.get("/v1/games/clash").json()["chat_presets"]}
    assert presets == {p["id"]: p["text"] for g in api.get("/v1/games").json()["games"] if g["id"] == "clash"
                       for p in g["chat_presets"]}
    refused = say(api, match_id, tokens[0], preset="no-such-preset")
    assert refused.status_code == 400 and error_of(refused) == "bad_chat"
    assert say(api, match_id, tokens[0], preset="gl").json()["text"] == presets["gl"]


def test_flooding_past_the_per_seat_rate_is_429_with_retry_after(api: Api) -> None:
    match_id, tokens = new_match(api)
    for n in range(RATE):
        assert say(api, match_id, tokens[0], text=f"spam {n}").status_code == 201
    flooded = say(api, match_id, tokens[0], text="one more")
    assert flooded.status_code == 429 and error_of(flooded) == "chat_rate_limited"
    assert 0 < int(flooded.headers["Retry-After"]) <= 3600
    assert say(api, match_id, tokens[1], text="the other seat still speaks").status_code == 201


def test_a_finished_match_past_its_chat_window_is_409_chat_closed(api: Api, gateway_server: GatewayServer) -> None:
    match_id, tokens = new_match(api)
    assert api.post(f"/v1/matches/{match_id}/resign", tokens[0], json={}).json()["status"] == "finished"
    closed = say(api, match_id, tokens[1], text="gg")  # this node's window is 0 s
    assert closed.status_code == 409 and error_of(closed) == "chat_closed"
    default = Api(gateway_server.url)  # the default window (300 s) on the same match: still open
    assert say(default, match_id, tokens[1], text="gg").status_code == 201


def test_another_matchs_token_is_401_wrong_token(api: Api) -> None:
    match_id, _ = new_match(api)
    _, others = new_match(api)
    refused = say(api, match_id, others[0], text="hello from elsewhere")
    assert refused.status_code == 401 and error_of(refused) == "wrong_token"


def test_a_spectator_posts_only_when_the_match_has_spectator_chat(api: Api) -> None:
    seats_only, _ = new_match(api)
    refused = say(api, seats_only, None, text="can I talk?")
    assert refused.status_code == 403 and error_of(refused) == "chat_spectators_off"
    open_to_all, _ = new_match(api, spectator_chat=True)
    spoken = say(api, open_to_all, None, text="go seat 1!")
    assert spoken.status_code == 201 and spoken.json()["seat"] is None


def test_the_per_match_cap_is_409_chat_full(api: Api) -> None:
    match_id, tokens = new_match(api, spectator_chat=True)
    speakers: list[str | None] = [tokens[0], tokens[1], None]  # RATE each: room for more than CAP
    for n in range(CAP):
        assert say(api, match_id, speakers[n % 3], text=f"message {n}").status_code == 201
    full = say(api, match_id, speakers[CAP % 3], text="one too many")
    assert full.status_code == 409 and error_of(full) == "chat_full"


def test_chat_expires_with_its_match(api: Api, gateway_server: GatewayServer, redis_url: str) -> None:
    store = redisconn.connect(redis_url)
    match_id, tokens = new_match(api)
    chat_key, topic_key = chat_keys(match_id)
    assert say(api, match_id, tokens[0], text="before the end").status_code == 201
    assert store.ttl(keys(match_id)[0]) == store.ttl(chat_key) == store.ttl(topic_key) == -1  # active: no TTL
    api.post(f"/v1/matches/{match_id}/resign", tokens[0], json={})
    finished = store.ttl(keys(match_id)[0])
    assert finished > 0 and finished - store.ttl(chat_key) in (0, 1) and finished - store.ttl(topic_key) in (0, 1)
    assert say(Api(gateway_server.url), match_id, tokens[1], text="gg").status_code == 201  # in its window
    assert store.ttl(keys(match_id)[0]) - store.ttl(chat_key) in (0, 1)


def redis_round_trips(node: ChatNode) -> dict[str, float]:
    """The gateway's Redis round trips so far, by command (a pipeline or MULTI counts once, as PIPELINE), with
    those of this scrape (its match gauges are one pipeline)."""
    counts = promtext.totals(promtext.scrape(f"{node.url}/metrics"), "meeple_redis_command_seconds_count", ["command"])
    return {command: n for (command,), n in counts.items()}


def test_a_long_poll_asking_for_chat_reads_it_in_the_matchs_one_round_trip(node: ChatNode, api: Api) -> None:
    """Issue 47 (one round trip to read a match): a long-poll with ``chat_after`` reads the chat's cursor in the same
    MULTI as the match, its rate limit and its log, and reads no chat list when the match has no message; once it
    has one, that list is read (the answer's messages and redactions come from it)."""
    match_id, tokens = new_match(api)
    path = f"/v1/matches/{match_id}/events?after=0&wait=0&chat_after=0"

    def between(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
        return {cmd: n - before.get(cmd, 0.0) for cmd, n in after.items() if n > before.get(cmd, 0.0)}

    first = redis_round_trips(node)
    scrape = between(first, redis_round_trips(node))  # what a scrape itself costs, taken off below

    def poll() -> tuple[dict[str, Any], dict[str, float]]:
        before = redis_round_trips(node)
        answered = api.get(path, tokens[0])
        assert answered.status_code == 200, answered.text
        used = between(before, redis_round_trips(node))
        return answered.json(), {cmd: n - scrape.get(cmd, 0.0) for cmd, n in used.items() if n > scrape.get(cmd, 0.0)}

    poll()  # (the seat's first request also writes its presence)
    doc, spent = poll()
    assert doc["chat"] == [] and doc["chat_redacted"] == []
    assert spent == {"PIPELINE": 1.0}
    assert say(api, match_id, tokens[1], text="gl hf").status_code == 201
    doc, spent = poll()
    assert [message["text"] for message in doc["chat"]] == ["gl hf"]
    assert spent == {"PIPELINE": 1.0, "LRANGE": 1.0}
