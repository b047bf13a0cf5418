"""Watch links (issue 51), over real HTTP and a real Redis (one server, then a cluster): a tenant's key mints a
read-only spectator token for one of its matches or tournaments, hands it to its app's users, and revokes it.

The gateway is the deployed one (gunicorn with its worker: SSE and WebSockets held open), anonymous access off.
A token's shortest life is 60 s (the API's lower bound): the expiry test waits for it once, and asserts nothing
about how long anything took.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
import requests
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection
from websockets.sync.client import connect as ws_connect

from services import redisconn
from services.core import watching
from services.core.config import Config
from services.core.tenancy import tenants
from services.timekeeper.keeper import Timekeeper

from .conftest import Node, RulesProcess, gunicorn_gateway

GAME = "fierce-women"
#: Acting for a seat: every one is refused to a watch token (401 wrong_token), as the policy says.
ACTING: tuple[tuple[str, str, dict[str, Any] | None], ...] = (
    ("GET", "/legal-moves", None), ("POST", "/moves", {"move": {"type": "draw"}, "version": 1}),
    ("GET", "/hint", None), ("POST", "/leave", {}), ("POST", "/resign", {}), ("POST", "/seats/0/reclaim", {}),
    ("POST", "/rematch", {}), ("GET", "/events?until=turn&wait=0", None))


@dataclass
class Site:
    """A gateway and two tenants' keys (A owns the matches; B is another tenant)."""

    node: Node
    key_a: str
    key_b: str
    redis_url: str
    http: requests.Session

    def call(self, method: str, path: str, credential: str | None = None, body: Any = None,
             key: str | None = None) -> requests.Response:
        headers = {"Authorization": f"Bearer {credential}"} if credential else {}
        if key:
            headers["X-API-Key"] = key
        return self.http.request(method, self.node.url + path, headers=headers, timeout=30,
                                 **({"json": body} if body is not None else {}))

    def match(self) -> tuple[str, list[str]]:
        """An active two-seat match of A's, seats named u1 and u2, one move made: its id and seat tokens."""
        made = self.call("POST", "/v1/matches", key=self.key_a, body={
            "game": GAME, "players": 2, "join": True,
            "seats": [{"kind": "human", "player": "u1"}, {"kind": "human", "player": "u2"}]})
        assert made.status_code == 201, made.text
        match_id, tokens = made.json()["id"], [made.json()["token"]]
        joined = self.call("POST", f"/v1/matches/{match_id}/join", key=self.key_a, body={"seat": 1})
        assert joined.status_code == 200, joined.text
        tokens.append(joined.json()["token"])
        status = self.call("GET", f"/v1/matches/{match_id}", key=self.key_a).json()
        seat = status["to_act"][0]
        moves = self.call("GET", f"/v1/matches/{match_id}/legal-moves", tokens[seat]).json()["moves"]
        moved = self.call("POST", f"/v1/matches/{match_id}/moves", tokens[seat],
                          body={"move": moves[0], "version": status["version"]})
        assert moved.status_code == 200, moved.text
        return match_id, tokens

    def mint(self, match_id: str | None = None, tournament_id: str | None = None, **body: Any) -> dict[str, Any]:
        path = f"/v1/matches/{match_id}" if match_id else f"/v1/tournaments/{tournament_id}"
        made = self.call("POST", path + "/watch-tokens", key=self.key_a, body=body)
        assert made.status_code == 201, made.text
        found: dict[str, Any] = made.json()
        return found

    def revoke(self, token_id: str) -> None:
        assert self.call("DELETE", f"/v1/watch-tokens/{token_id}", key=self.key_a).status_code == 204


@pytest.fixture(scope="module")
def site(redis_url: str, rules: RulesProcess) -> Iterator[Site]:
    client = redisconn.connect(redis_url)
    key_a, key_b = tenants.create_key(client, "watch-a")[0], tenants.create_key(client, "watch-b")[0]
    with gunicorn_gateway(redis_url, rules.port, MEEPLE_ANONYMOUS="0") as node:
        yield Site(node, key_a, key_b, redis_url, requests.Session())


def code(response: requests.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


def ws_url(site: Site, match_id: str) -> str:
    return site.node.url.replace("http://", "ws://") + f"/v1/matches/{match_id}/ws"


@contextlib.contextmanager
def ws_hello(site: Site, match_id: str, token: str | None, headers: dict[str, str] | None = None,
             after: int | None = 0) -> Iterator[tuple[ClientConnection, dict[str, Any]]]:
    """An open socket and its first answer to the hello (``ready`` or an error)."""
    with ws_connect(ws_url(site, match_id), additional_headers=headers or {}, open_timeout=20) as socket:
        socket.send(orjson.dumps({"type": "hello", "token": token, "after": after}).decode())
        yield socket, orjson.loads(socket.recv(timeout=20))


def ws_update(site: Site, match_id: str, token: str | None, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """The first update a socket gets (after version 0): the spectator's, for a watch token."""
    with ws_hello(site, match_id, token, headers) as (socket, ready):
        assert ready["type"] == "ready", ready
        assert ready["seat"] is None
        update: dict[str, Any] = orjson.loads(socket.recv(timeout=20))
    assert update["type"] == "update"
    return update


def sse_first_update(site: Site, match_id: str, token: str) -> dict[str, Any]:
    with requests.get(f"{site.node.url}/v1/matches/{match_id}/events/stream?after=0", stream=True, timeout=30,
                       headers={"Authorization": f"Bearer {token}"}) as stream:
        assert stream.status_code == 200, stream.text
        for line in stream.iter_lines():
            if line.startswith(b"data: "):
                found: dict[str, Any] = orjson.loads(line[len(b"data: "):])
                return found
    raise AssertionError("the stream ended without an update")


def every_read(site: Site, match_id: str, token: str) -> dict[str, tuple[int, str]]:
    """Each read door's refusal of ``token`` (status and code); the WebSocket's in its hello and on the upgrade."""
    base = f"/v1/matches/{match_id}"
    got = {door: code(site.call("GET", base + path, token))
           for door, path in (("match", ""), ("events", "/events?after=0&wait=0"), ("stream", "/events/stream"),
                              ("replay", "/replay"))}
    with ws_hello(site, match_id, token) as (_, answer):
        pass
    got["ws_hello"] = (0, answer["error"]["code"]) if answer["type"] == "error" else (0, answer["type"])
    try:
        ws_connect(ws_url(site, match_id), additional_headers={"Authorization": f"Bearer {token}"},
                   open_timeout=20).close()
        got["ws_upgrade"] = (101, "")
    except InvalidStatus as refused:
        got["ws_upgrade"] = (refused.response.status_code, orjson.loads(refused.response.body)["error"]["code"])
    return got


def refused_everywhere(status: int, error: str) -> dict[str, tuple[int, str]]:
    return {"match": (status, error), "events": (status, error), "stream": (status, error),
            "replay": (status, error), "ws_hello": (0, error), "ws_upgrade": (status, error)}


def test_a_watch_token_reads_the_spectator_view_of_a_tenants_match_and_is_refused_everywhere_else(site: Site) -> None:
    match_id, seats = site.match()
    minted = site.mint(match_id)
    token = minted["token"]
    assert token.startswith(f"w_{minted['id']}.") and minted["match_id"] == match_id
    assert (minted["tournament_id"], minted["player_ids"], minted["revoked_at"]) == (None, False, None)
    assert minted["expires_at"] - minted["created_at"] == pytest.approx(86400)  # the default ttl
    base = f"/v1/matches/{match_id}"
    spectator = site.call("GET", base, key=site.key_a).json()
    seat_view = site.call("GET", base, seats[0]).json()["view"]

    read = site.call("GET", base + "?include=legal_moves", token)  # no legal moves, no seat, no player ids
    assert read.status_code == 200, read.text
    doc = read.json()
    assert (doc["you"], doc["legal_moves"], doc["view"]) == (None, None, spectator["view"])
    assert doc["view"] != seat_view and all("player" not in s for s in doc["seats"])
    events = site.call("GET", base + "/events?after=0&wait=0", token).json()
    assert events["view"] == spectator["view"] and len(events["events"]) == events["version"]
    assert sse_first_update(site, match_id, token) == events
    assert ws_update(site, match_id, token)["view"] == spectator["view"]  # the token in the hello
    assert ws_update(site, match_id, None, {"Authorization": f"Bearer {token}"})["view"] == spectator["view"]
    replay = site.call("GET", base + "/replay", token)
    assert replay.status_code == 200 and replay.json()["seed"] is None  # the spectator's replay of a running match

    for method, path, body in ACTING:
        assert code(site.call(method, base + path, token, body)) == (401, "wrong_token"), path
    with ws_hello(site, match_id, token, after=None) as (socket, ready):  # a move on the socket: REST's refusal
        assert ready["type"] == "ready"
        socket.send(orjson.dumps({"type": "move", "id": 1, "move": {"type": "draw"}, "version": 1}).decode())
        reply = orjson.loads(socket.recv(timeout=20))
    assert (reply["status"], reply["body"]["error"]["code"]) == (401, "wrong_token")

    other, _ = site.match()
    assert every_read(site, other, token) == refused_everywhere(404, "match_not_found")
    assert code(site.call("POST", f"/v1/matches/{other}/join", token, {})) == (401, "api_key_required")
    assert code(site.call("POST", "/v1/matches", token, {"game": GAME, "players": 2})) == (401, "api_key_required")
    assert code(site.call("GET", "/v1/matches", token)) == (401, "api_key_required")
    assert code(site.call("GET", f"/v1/watch-tokens/{minted['id']}", token)) == (401, "api_key_required")
    assert code(site.call("POST", base + "/watch-tokens", token, {})) == (401, "api_key_required")
    assert site.call("GET", "/v1/games", token).status_code == 200  # the catalogue: anyone


def test_a_tenants_key_mints_describes_and_revokes_its_own_tokens_only(site: Site) -> None:
    match_id, _ = site.match()
    minted = site.mint(match_id, ttl_s=60)
    assert minted["expires_at"] - minted["created_at"] == pytest.approx(60)
    described = site.call("GET", f"/v1/watch-tokens/{minted['id']}", key=site.key_a).json()
    assert described == {k: v for k, v in minted.items() if k != "token"}  # never the token, nor its hash
    raw = redisconn.connect(site.redis_url).get(watching.record_key(minted["id"]))
    assert isinstance(raw, bytes)
    assert minted["token"].encode() not in raw and minted["token"].split(".")[1].encode() not in raw
    for ttl in (59, 604801, "long"):
        assert code(site.call("POST", f"/v1/matches/{match_id}/watch-tokens", key=site.key_a,
                              body={"ttl_s": ttl}))[0] == 400
    # another tenant: the match and the token do not exist
    assert code(site.call("POST", f"/v1/matches/{match_id}/watch-tokens", key=site.key_b, body={})) == (
        404, "match_not_found")
    for method in ("GET", "DELETE"):
        assert code(site.call(method, f"/v1/watch-tokens/{minted['id']}", key=site.key_b)) == (
            404, "watch_token_not_found")
    assert code(site.call("GET", "/v1/watch-tokens/0123456789abcdef", key=site.key_a)) == (
        404, "watch_token_not_found")
    assert site.call("GET", f"/v1/matches/{match_id}", minted["token"]).status_code == 200  # B revoked nothing
    site.revoke(minted["id"])
    site.revoke(minted["id"])  # again: still 204
    assert site.call("GET", f"/v1/watch-tokens/{minted['id']}", key=site.key_a).json()["revoked_at"] is not None
    forged = minted["token"][:-4] + "AAAA"  # the id of a real token, another secret
    assert code(site.call("GET", f"/v1/matches/{match_id}", forged)) == (401, "wrong_token")


def test_player_ids_only_when_the_tenant_asks(site: Site) -> None:
    match_id, _ = site.match()
    for asked in (False, True):
        token = site.mint(match_id, player_ids=asked)["token"]
        seats = site.call("GET", f"/v1/matches/{match_id}", token).json()["seats"]
        assert [s.get("player") for s in seats] == (["u1", "u2"] if asked else [None, None])
        assert ("player" in seats[0]) is asked


def test_revoked_and_expired_tokens_are_refused_on_every_door_and_end_the_streams_open_with_them(site: Site) -> None:
    match_id, _ = site.match()
    expiring = site.mint(match_id, ttl_s=60)  # the shortest life: waited for at the end
    revoked = site.mint(match_id)
    streams = {name: open_streams(site, match_id, minted["token"])
               for name, minted in (("revoked", revoked), ("expired", expiring))}
    site.revoke(revoked["id"])
    assert streams_end(*streams["revoked"]) == "watch_token_revoked"  # at once: the revocation wakes them
    assert every_read(site, match_id, revoked["token"]) == refused_everywhere(401, "watch_token_revoked")
    assert site.call("GET", f"/v1/matches/{match_id}", expiring["token"]).status_code == 200  # not yet
    time.sleep(max(0.0, expiring["expires_at"] - time.time()))
    assert streams_end(*streams["expired"], timeout=30) == "watch_token_expired"
    assert every_read(site, match_id, expiring["token"]) == refused_everywhere(401, "watch_token_expired")
    assert code(site.call("GET", "/v1/games", expiring["token"])) == (401, "watch_token_expired")


def open_streams(site: Site, match_id: str, token: str) -> tuple[ClientConnection, requests.Response]:
    """A WebSocket and an SSE stream reading with ``token``, both past their first answer (nothing new to send)."""
    socket = ws_connect(ws_url(site, match_id), open_timeout=20)
    socket.send(orjson.dumps({"type": "hello", "token": token}).decode())
    ready = orjson.loads(socket.recv(timeout=20))
    assert ready["type"] == "ready", ready
    stream = requests.get(f"{site.node.url}/v1/matches/{match_id}/events/stream", stream=True, timeout=90,
                           headers={"Authorization": f"Bearer {token}"})
    assert stream.status_code == 200, stream.text
    return socket, stream


def streams_end(socket: ClientConnection, stream: requests.Response, timeout: float = 20) -> str:
    """Why an open socket ended (its close 1000's reason, and the error it is sent before), once the SSE stream
    has ended too. (The server closes the connection after its close frame: the client library may then lose the
    error message it read with the close frame, never the close frame itself.)"""
    messages = []
    with socket, pytest.raises(ConnectionClosed) as closed:
        while True:
            messages.append(orjson.loads(socket.recv(timeout=timeout)))
    with stream:
        sent = b"".join(bytes(chunk) for chunk in stream.iter_content(chunk_size=None))
        assert b"event: update" not in sent  # it ends, with nothing new
    ended = closed.value.rcvd
    assert ended is not None and ended.code == 1000, closed.value
    assert all(m["type"] == "error" and m["error"]["code"] == ended.reason for m in messages), messages
    return ended.reason


def test_a_tournaments_token_reads_its_matches_current_and_future_and_no_other(site: Site, redis_url: str,
                                                                             rules: RulesProcess) -> None:
    made = site.call("POST", "/v1/tournaments", key=site.key_a, body={
        "name": "watched", "game": "clash", "players_per_table": 2, "clock": {"mode": "per_move", "seconds": 60},
        "format": {"kind": "swiss", "rounds": 1}, "max_players": 4, "starts_at": time.time()})
    assert made.status_code == 201, made.text
    tournament_id = made.json()["id"]
    minted = site.mint(tournament_id=tournament_id, player_ids=True)  # before any table exists
    assert (minted["match_id"], minted["tournament_id"]) == (None, tournament_id)
    for player in ("ann", "ben", "cat", "dan"):
        assert site.call("POST", f"/v1/tournaments/{tournament_id}/players", key=site.key_a,
                         body={"player": player}).status_code == 201
    keeper = Timekeeper(redis_url, lease_s=5, competitions_every_s=0,
                        config=Config(redis_url=redis_url, rules_addr=f"127.0.0.1:{rules.port}"))
    tables: list[dict[str, Any]] = []
    for _ in range(20):
        keeper.run_once()
        tables = site.call("GET", f"/v1/tournaments/{tournament_id}", key=site.key_a).json()["tables"]
        if tables and all(t["match_id"] for t in tables):
            break
    assert len(tables) == 2
    for table in tables:
        read = site.call("GET", f"/v1/matches/{table['match_id']}", minted["token"])
        assert read.status_code == 200, read.text
        assert {s.get("player") for s in read.json()["seats"]} == {s["player"] for s in table["seats"]}
        with ws_hello(site, table["match_id"], minted["token"]) as (_, ready):
            pass
        assert (ready["type"], ready["seat"]) == ("ready", None)
    own, _ = site.match()  # a match of the same tenant outside the tournament
    assert every_read(site, own, minted["token"]) == refused_everywhere(404, "match_not_found")
    assert code(site.call("POST", f"/v1/tournaments/{tournament_id}/watch-tokens", key=site.key_b, body={})) == (
        404, "tournament_not_found")
    assert site.call("POST", f"/v1/tournaments/{tournament_id}/cancel", key=site.key_a, body={}).status_code == 200
