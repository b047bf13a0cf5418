"""The six doors a second tenant found open (issue 27, findings 1-6), each asked again over real HTTP and a real
WebSocket, as a client written from docs/api.md would: two tenants, anonymous access off (the deploy setting)
on one gateway and on (``make run``'s) on another, one store.

Only HTTP, the ``meeple keys`` command and the timekeeper are used, so the same file runs against an older
server too (where it fails: that is how these findings were pinned).
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
import requests
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as ws_connect

from services import cli
from services.timekeeper.keeper import Timekeeper

from .conftest import Node, RulesProcess, gunicorn_gateway

GAME = "fierce-women"


@dataclass
class Two:
    on: Node
    off: Node
    redis_url: str
    acme: str
    rival: str

    def call(self, node: Node, method: str, path: str, key: str | None = None, token: str | None = None,
             **kwargs: Any) -> requests.Response:
        headers = {**({"X-API-Key": key} if key else {}), **({"Authorization": f"Bearer {token}"} if token else {})}
        return requests.request(method, node.url + path, headers=headers, timeout=30, **kwargs)

    def rated_forfeit(self) -> tuple[str, list[str], dict[str, Any]]:
        """A finished rated match of acme's players ann and ben (one forfeits on time): id, tokens, its status
        as acme's key reads it."""
        created = self.call(self.off, "POST", "/v1/matches", self.acme, json={
            "game": GAME, "players": 2, "clock": {"mode": "per_move", "seconds": 5, "on_timeout": "forfeit"},
            "seats": [{"kind": "human", "player": "ann"}, {"kind": "human", "player": "ben"}]}).json()
        tokens = [self.call(self.off, "POST", f"/v1/matches/{created['id']}/join", self.acme,
                            json={"seat": s}).json()["token"] for s in (0, 1)]
        status = self.call(self.off, "GET", f"/v1/matches/{created['id']}", token=tokens[0]).json()
        seat = status["to_act"][0]
        move = self.call(self.off, "GET", f"/v1/matches/{created['id']}/legal-moves", token=tokens[seat]
                         ).json()["moves"][0]
        assert self.call(self.off, "POST", f"/v1/matches/{created['id']}/moves", token=tokens[seat],
                         json={"move": move, "version": status["version"]}).status_code == 200
        Timekeeper(self.redis_url).run_once(now=time.time() + 60)  # the other runs out of time and forfeits
        done = self.call(self.off, "GET", f"/v1/matches/{created['id']}", self.acme).json()
        assert done["status"] == "finished" and done["outcome"]["ratings"], done["outcome"]
        return str(created["id"]), tokens, done


def new_key(redis_url: str, name: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["keys", "create", "--name", name, "--json", "--redis-url", redis_url]) == 0
    return str(orjson.loads(out.getvalue())["key"])


@pytest.fixture(scope="module")
def two(redis_url: str, rules: RulesProcess) -> Iterator[Two]:
    with gunicorn_gateway(redis_url, rules.port) as on, \
            gunicorn_gateway(redis_url, rules.port, MEEPLE_ANONYMOUS="0") as off:
        yield Two(on, off, redis_url, new_key(redis_url, "acme-f"), new_key(redis_url, "rival-f"))


def hello(node: Node, match_id: str, headers: dict[str, str], token: str | None) -> dict[str, Any]:
    """The WebSocket's first answer to a hello: ``ready``, an ``error``, or the upgrade's refusal."""
    url = node.url.replace("http://", "ws://") + f"/v1/matches/{match_id}/ws"
    try:
        with ws_connect(url, additional_headers=headers, open_timeout=20) as socket:
            socket.send(orjson.dumps({"type": "hello", "token": token}).decode())
            answer: dict[str, Any] = orjson.loads(socket.recv(timeout=20))
            return answer
    except InvalidStatus as refused:
        return {"type": "refused", "status": refused.response.status_code,
                "error": orjson.loads(refused.response.body or b"{}").get("error")}


def test_finding_1_another_tenants_key_reads_neither_the_stream_nor_the_websocket_of_a_match(two: Two) -> None:
    match = two.call(two.off, "POST", "/v1/matches", two.acme, json={"game": GAME, "players": 2, "join": True}).json()
    path = f"/v1/matches/{match['id']}"
    assert two.call(two.off, "GET", path + "/events", two.rival).status_code == 404
    stream = two.call(two.off, "GET", path + "/events/stream?after=0", two.rival, stream=True)
    assert stream.status_code == 404 and stream.json()["error"]["code"] == "match_not_found"
    refused = hello(two.off, match["id"], {"X-API-Key": two.rival}, None)
    assert refused["type"] == "refused" and refused["status"] == 404, refused
    # the owner's key still reads its own match's stream
    own = two.call(two.off, "GET", path + "/events/stream?after=0&limit=1", two.acme, stream=True)
    assert own.status_code == 200 and b"event: update" in own.raw.read(4096)
    own.close()


def test_finding_2_with_anonymous_access_off_no_door_answers_without_a_credential(two: Two) -> None:
    match = two.call(two.off, "POST", "/v1/matches", two.acme, json={"game": GAME, "players": 2, "join": True}).json()
    path = f"/v1/matches/{match['id']}"
    assert two.call(two.off, "GET", path).status_code == 401
    stream = two.call(two.off, "GET", path + "/events/stream?after=0", stream=True)
    assert stream.status_code == 401 and stream.json()["error"]["code"] == "missing_token"
    answer = hello(two.off, match["id"], {}, None)
    assert answer["type"] == "error" and answer["error"]["code"] == "missing_token", answer
    assert hello(two.off, match["id"], {}, match["token"])["type"] == "ready"  # its seat token still does


def test_finding_3_another_tenant_cannot_take_the_seat_of_a_ticket(two: Two) -> None:
    def queue(player: str) -> dict[str, Any]:  # (with action cards: a queue no other test uses)
        made = two.call(two.off, "POST", "/v1/matchmaking", two.acme,
                        json={"game": GAME, "players": 2, "player": player, "options": {"action_cards": True}})
        assert made.status_code == 201, made.text
        return dict(made.json())

    first = queue("ann")
    second = queue("ben")  # matched at once: the second ticket's answer carries its token
    assert second["status"] == "matched" and second["token"]
    ticket = f"/v1/matchmaking/{first['ticket']}"
    stolen = two.call(two.off, "GET", ticket + "?wait=11", two.rival)
    assert stolen.status_code == 404 and stolen.json()["error"]["code"] == "ticket_not_found"
    assert two.call(two.off, "GET", ticket).status_code == 401  # no credential, anonymous access off
    assert two.call(two.off, "DELETE", ticket, two.rival).status_code == 404
    mine = two.call(two.off, "GET", ticket, two.acme).json()
    assert mine["token"] and mine["token_issued"]  # the owner still gets the seat's token, once


def test_finding_4_player_ids_are_shown_to_the_owning_tenants_key_only(two: Two) -> None:
    match_id, tokens, done = two.rated_forfeit()
    assert {c["player"] for c in done["outcome"]["ratings"]} == {"ann", "ben"}  # the owner's key
    for token in tokens:
        seen = two.call(two.off, "GET", f"/v1/matches/{match_id}", token=token).json()
        assert all("player" not in s for s in seen["seats"])
        assert seen["outcome"]["ratings"] and all("player" not in c for c in seen["outcome"]["ratings"])
        assert b'"ann"' not in two.call(two.off, "GET", f"/v1/matches/{match_id}/events?after=0",
                                        token=token).content
    # an anonymous spectator (anonymous access on) does not see a tenant's match at all
    assert two.call(two.on, "GET", f"/v1/matches/{match_id}").status_code == 404


def test_finding_5_an_event_stream_ends_once_the_match_is_finished_even_after_its_last_version(two: Two) -> None:
    match_id, tokens, done = two.rated_forfeit()
    stream = two.call(two.off, "GET", f"/v1/matches/{match_id}/events/stream?after={done['version']}",
                      token=tokens[0], stream=True)
    assert stream.status_code == 200
    body = stream.raw.read()  # the response must end by itself (a read timeout fails the test)
    assert b"heartbeat" not in body and b"event: update" not in body


def test_finding_6_a_solo_match_is_unrated_as_the_docs_say(two: Two) -> None:
    created = two.call(two.off, "POST", "/v1/matches", two.acme, json={
        "game": "sideboards", "players": 1, "seed": 3, "seats": [{"kind": "human", "player": "solo"}]}).json()
    token = two.call(two.off, "POST", f"/v1/matches/{created['id']}/join", two.acme, json={}).json()["token"]
    status = two.call(two.off, "GET", f"/v1/matches/{created['id']}?include=legal_moves", token=token).json()
    while status["status"] != "finished":
        played = two.call(two.off, "POST", f"/v1/matches/{created['id']}/moves?include=legal_moves", token=token,
                          json={"move": status["legal_moves"][0], "version": status["version"]})
        assert played.status_code == 200, played.text
        status = played.json()
    assert status["outcome"]["ratings"] is None
    rated = two.call(two.off, "GET", "/v1/players/solo/ratings", two.acme).json()
    assert rated["ratings"] == {}
    guide = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    assert "Solo matches (one player) are not rated" in guide
