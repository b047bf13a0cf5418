"""The authorization matrix (issue 27): every route of the Flask URL map, and the WebSocket, asked by every kind
of caller, against ONE table of expected answers kept here (:data:`EXPECTED`, by access profile, and
:data:`PROFILE`, each route's profile). A route added without a row fails; a check removed from the policy
makes some cell answer otherwise and fails.

Two real gateways under gunicorn (its worker holds WebSockets) share one Redis (a server, then a Cluster):
anonymous access on (``make run``'s setting) and off (the deploy setting). The callers:

* ``none_on`` / ``none_off`` — no credential, anonymous access on / off;
* ``seat_on`` — the anonymous client holding this match's seat token, anonymous access on;
* ``seat`` — this match's seat token, anonymous access off (as every caller below);
* ``other_seat`` — the seat token of another match;
* ``owner_key`` — the key of the tenant the match or ticket belongs to (tenant A);
* ``other_key`` — another tenant's key (tenant B);
* ``revoked_key`` — tenant A's key after ``meeple keys revoke``; ``madeup_key`` — a key nobody made;
* ``watch`` — a watch token (issue 51) of this match of A's (of this tournament on tournament routes, of another
  match of A's on routes about neither: an anonymous match is no tenant's, so no token covers it);
* ``watch_on`` — the same, asking the gateway with anonymous access on (a watch token only reads, whatever the
  setting: it creates, joins and reads tickets no more than with it off);
* ``other_watch`` — a watch token of another match of A's;
* ``expired_watch`` — a watch token past its expiry, of the match asked about where that is A's (one match made
  first: a token lives at least 60 s, so the module waits for it once); ``revoked_watch`` — a token of this match,
  revoked.

Match and ticket routes are asked about a tenant's (A's) and an anonymous one (made with anonymous access on);
tournament routes about a tournament of A's (a fresh one for each route: a cancel must not decide the others).
An answer is a *denial* when it is one of the access codes below, else ``ok`` (the request got past the policy:
a 409 ``match_not_started`` is ok here — the other tests check what the call then does).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
import requests
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as ws_connect

from services import redisconn
from services.contract.access import ACCESS
from services.core.access import RULES, Action
from services.core.config import Config
from services.core.tenancy import tenants
from services.gateway.app import create_app

from .conftest import Node, RulesProcess, gunicorn_gateway

GAME = "fierce-women"  # 2-5 players: a 3-player match with one seat taken stays waiting (nothing runs)
CALLERS = ("none_on", "none_off", "seat_on", "seat", "other_seat", "owner_key", "other_key", "revoked_key",
           "madeup_key", "watch", "watch_on", "other_watch", "expired_watch", "revoked_watch")
WATCHERS = ("watch", "watch_on", "other_watch", "expired_watch", "revoked_watch")
#: The answers that mean "the policy said no", by code.
DENIALS = {"missing_token": 401, "wrong_token": 401, "invalid_api_key": 401, "api_key_required": 401,
           "watch_token_expired": 401, "watch_token_revoked": 401, "match_not_found": 404, "ticket_not_found": 404,
           "tournament_not_found": 404, "watch_token_not_found": 404, "chat_spectators_off": 403}
TENANT, ANON = "tenant", "anon"
OK = "ok"

# Expected answer per caller; for match and ticket profiles a pair: (about A's, about an anonymous one).
_REFUSED = ("401", "401")
#: A watch token is refused as expired or revoked before anything else; one that holds reads its match only.
_WATCH_REFUSED = {"expired_watch": _REFUSED, "revoked_watch": _REFUSED}
_MATCH_READ = {"none_on": ("404", OK), "none_off": _REFUSED, "seat_on": (OK, OK), "seat": (OK, OK),
               "other_seat": _REFUSED, "owner_key": (OK, "404"), "other_key": ("404", "404"),
               "revoked_key": _REFUSED, "madeup_key": _REFUSED,
               "watch": (OK, "404"), "watch_on": (OK, "404"), "other_watch": ("404", "404"), **_WATCH_REFUSED}
#: Creating, joining, tickets, minting and the tenant's own data: a watch token is no key (401).
_NO_WATCHER = dict.fromkeys(WATCHERS, "401")
_TOURNAMENT = {"none_on": "401", "none_off": "401", "seat_on": "401", "seat": "401", "other_seat": "401",
               "owner_key": OK, "other_key": "404", "revoked_key": "401", "madeup_key": "401", **_NO_WATCHER}
EXPECTED: dict[str, dict[str, Any]] = {
    "read": _MATCH_READ,
    "act": {**_MATCH_READ, "none_on": ("404", "401"), "owner_key": ("401", "404"), "watch": ("401", "404"),
            "watch_on": ("401", "404")},
    "join": {**_MATCH_READ, "seat_on": ("404", OK), "seat": _REFUSED, **dict.fromkeys(WATCHERS, _REFUSED)},
    "ticket": {**_MATCH_READ, "seat_on": ("404", OK), "seat": _REFUSED, **dict.fromkeys(WATCHERS, _REFUSED)},
    "share": {**dict.fromkeys(CALLERS, _REFUSED), "owner_key": (OK, "404"), "other_key": ("404", "404")},
    "create": {"none_on": OK, "none_off": "401", "seat_on": OK, "seat": "401", "other_seat": "401",
               "owner_key": OK, "other_key": OK, "revoked_key": "401", "madeup_key": "401", **_NO_WATCHER},
    "tenant": {"none_on": "401", "none_off": "401", "seat_on": "401", "seat": "401", "other_seat": "401",
               "owner_key": OK, "other_key": OK, "revoked_key": "401", "madeup_key": "401", **_NO_WATCHER},
    "tournament": _TOURNAMENT,
    "watch_token": _TOURNAMENT,  # the minter's key; another tenant's: 404 watch_token_not_found
    # the matrix's matches have no spectator_chat: a reader without a seat is refused (403), a seat speaks; a watch
    # token reads as a spectator, so it is refused as one (403) where it reads, and as a reader elsewhere
    "chat": {**_MATCH_READ, "none_on": ("404", "403"), "owner_key": ("403", "404"), "watch": ("403", "404"),
             "watch_on": ("403", "404")},
    # redacting: the match's tenant's key, and nobody without a key (a seat holder, a watch token: no moderator)
    "moderate": {**_MATCH_READ, "none_on": ("401", "401"), "seat_on": ("401", "401"), "seat": ("401", "401"),
                 **dict.fromkeys(WATCHERS, _REFUSED)},
    # a credential that is presented must be valid: an expired or revoked watch token too
    "catalogue": {**dict.fromkeys(CALLERS, OK), "revoked_key": "401", "madeup_key": "401",
                  "expired_watch": "401", "revoked_watch": "401"},
    "open": dict.fromkeys(CALLERS, OK),
}
#: Each route's profile: a route without one fails the test.
PROFILE: dict[tuple[str, str], str] = {
    ("GET", "/v1/games"): "catalogue",
    ("GET", "/v1/games/<game>"): "catalogue",
    ("POST", "/v1/matches"): "create",
    ("GET", "/v1/matches"): "tenant",
    ("GET", "/v1/matches/<match_id>"): "read",
    ("GET", "/v1/matches/<match_id>/events"): "read",
    ("GET", "/v1/matches/<match_id>/events/stream"): "read",
    ("GET", "/v1/matches/<match_id>/replay"): "read",
    ("GET", "/v1/matches/<match_id>/legal-moves"): "act",
    ("POST", "/v1/matches/<match_id>/moves"): "act",
    ("GET", "/v1/matches/<match_id>/hint"): "act",
    ("POST", "/v1/matches/<match_id>/leave"): "act",
    ("POST", "/v1/matches/<match_id>/resign"): "act",
    ("POST", "/v1/matches/<match_id>/seats/<int:seat>/reclaim"): "act",
    ("POST", "/v1/matches/<match_id>/rematch"): "act",
    ("POST", "/v1/matches/<match_id>/join"): "join",
    ("POST", "/v1/matches/<match_id>/chat"): "chat",
    ("DELETE", "/v1/matches/<match_id>/chat/<int:message_id>"): "moderate",
    ("GET", "/v1/matches/<match_id>/ws"): "open",  # without an upgrade: 426 to anyone
    ("WS", "/v1/matches/<match_id>/ws"): "read",
    ("POST", "/v1/matchmaking"): "create",
    ("GET", "/v1/matchmaking/<ticket>"): "ticket",
    ("DELETE", "/v1/matchmaking/<ticket>"): "ticket",
    ("GET", "/v1/players/<player>/matches"): "tenant",
    ("GET", "/v1/players/<player>/ratings"): "tenant",
    ("POST", "/v1/webhooks"): "tenant",
    ("GET", "/v1/webhooks"): "tenant",
    ("DELETE", "/v1/webhooks/<hook_id>"): "tenant",
    ("GET", "/v1/webhooks/dead-letters"): "tenant",
    ("DELETE", "/v1/webhooks/dead-letters"): "tenant",
    ("GET", "/v1/leaderboards/<game>"): "tenant",
    ("GET", "/v1/leaderboards/<game>/players/<player>"): "tenant",
    ("GET", "/v1/leaderboards/<game>/players/<player>/around"): "tenant",
    ("GET", "/v1/leaderboards/<game>/settings"): "tenant",
    ("PUT", "/v1/leaderboards/<game>/settings"): "tenant",
    ("GET", "/v1/leaderboards/<game>/seasons"): "tenant",
    ("POST", "/v1/leaderboards/<game>/seasons"): "tenant",
    ("GET", "/v1/leaderboards/<game>/seasons/<name>"): "tenant",
    ("PATCH", "/v1/leaderboards/<game>/seasons/<name>"): "tenant",
    ("DELETE", "/v1/leaderboards/<game>/seasons/<name>"): "tenant",
    ("POST", "/v1/tournaments"): "tenant",
    ("GET", "/v1/tournaments"): "tenant",
    ("GET", "/v1/tournaments/<tournament_id>"): "tournament",
    ("GET", "/v1/tournaments/<tournament_id>/rounds"): "tournament",
    ("POST", "/v1/tournaments/<tournament_id>/players"): "tournament",
    ("GET", "/v1/tournaments/<tournament_id>/players/<player>"): "tournament",
    ("DELETE", "/v1/tournaments/<tournament_id>/players/<player>"): "tournament",
    ("POST", "/v1/tournaments/<tournament_id>/cancel"): "tournament",
    ("POST", "/v1/matches/<match_id>/watch-tokens"): "share",
    ("POST", "/v1/tournaments/<tournament_id>/watch-tokens"): "tournament",
    ("GET", "/v1/watch-tokens/<token_id>"): "watch_token",
    ("DELETE", "/v1/watch-tokens/<token_id>"): "watch_token",
    ("GET", "/healthz"): "open",
    ("GET", "/readyz"): "open",
    ("GET", "/metrics"): "open",
    ("GET", "/v1/openapi.json"): "open",
    ("GET", "/docs"): "open",
    ("GET", "/docs/"): "open",
    ("GET", "/docs/<path:path>"): "open",
    ("GET", "/play"): "open",
    ("GET", "/play/<path:name>"): "open",
}
#: Sample bodies and path values (valid in shape: what is then refused is refused by the policy or the state).
BODIES: dict[tuple[str, str], Any] = {
    ("POST", "/v1/matches"): {"game": GAME, "players": 3},
    ("POST", "/v1/matches/<match_id>/moves"): {"move": {"type": "draw"}, "version": 1},
    ("POST", "/v1/matches/<match_id>/chat"): {"text": "matrix"},
    ("POST", "/v1/matchmaking"): {"game": GAME, "players": 5},
    ("POST", "/v1/webhooks"): {"url": "http://127.0.0.1:9/hook", "events": ["match.finished"]},
    ("PUT", "/v1/leaderboards/<game>/settings"): {"min_matches": 0},
    ("POST", "/v1/leaderboards/<game>/seasons"): {"name": "s1", "starts_at": 4e9, "ends_at": 4.1e9},
    ("PATCH", "/v1/leaderboards/<game>/seasons/<name>"): {"ends_at": 4.2e9},
    ("POST", "/v1/tournaments/<tournament_id>/players"): {"player": "ann"},
    ("POST", "/v1/tournaments/<tournament_id>/cancel"): {},
    ("POST", "/v1/matches/<match_id>/watch-tokens"): {"ttl_s": 600},
    ("POST", "/v1/tournaments/<tournament_id>/watch-tokens"): {"ttl_s": 600},
}
#: A tournament's settings (it starts in a day: nothing of it runs while the matrix asks about it; it holds one match
#: of its tenant's quota, so the many the matrix makes fit).
TOURNAMENT = {"name": "matrix", "game": "clash", "players_per_table": 2, "clock": {"mode": "per_move", "seconds": 60},
              "format": {"kind": "swiss", "rounds": 1}, "max_players": 2}
BODIES[("POST", "/v1/tournaments")] = {**TOURNAMENT, "starts_at": time.time() + 86400}
PATHS = {"<game>": "clash", "<int:seat>": "0", "<int:message_id>": "1", "<player>": "ann", "<hook_id>": "0123456789ab",
         "<name>": "s1",
         "<path:path>": "index.html", "<path:name>": "app.js"}
ACTION_PROFILE = {Action.CATALOGUE: "catalogue", Action.CREATE: "create", Action.JOIN: "join", Action.READ: "read",
                  Action.ACT: "act", Action.TICKET: "ticket", Action.TENANT: "tenant", Action.TOURNAMENT: "tournament",
                  Action.SHARE: "share", Action.WATCH_TOKEN: "watch_token", Action.CHAT: "chat",
                  Action.MODERATE: "moderate", None: "open"}


@dataclass
class World:
    """Two gateways on one store, two tenants, and the keys and tokens each kind of caller holds."""

    on: Node
    off: Node
    keys: dict[str, str]
    http: requests.Session = field(default_factory=requests.Session)
    #: a seat token of a match that is not the one asked about
    other_token: str = ""
    spare: tuple[str, str] = ("", "")
    #: watch tokens: of a match of A's (the routes about no match), of another one, and one past its expiry with
    #: the match of A's it covers
    standing_watch: str = ""
    other_watch: str = ""
    expired: tuple[str, str] = ("", "")

    def call(self, node: Node, method: str, path: str, headers: dict[str, str] | None = None,
             body: Any = None) -> requests.Response:
        return self.http.request(method, node.url + path, headers=headers or {}, timeout=30,
                                 **({"json": body} if body is not None else {}),
                                 **({"stream": True} if path.endswith("/events/stream") else {}))

    def match(self, tenant: bool) -> tuple[str, str]:
        """A waiting 3-player match (A's, or anonymous) whose seat 0 is taken: its id and seat 0's token."""
        node, headers = (self.off, {"X-API-Key": self.keys["owner_key"]}) if tenant else (self.on, {})
        made = self.call(node, "POST", "/v1/matches", headers, {"game": GAME, "players": 3, "join": True})
        assert made.status_code == 201, made.text
        return made.json()["id"], made.json()["token"]

    def ticket(self, tenant: bool) -> str:
        node, headers = (self.off, {"X-API-Key": self.keys["owner_key"]}) if tenant else (self.on, {})
        # a pool of its own (an option value nobody else queues with), so it stays waiting
        made = self.call(node, "POST", "/v1/matchmaking", headers,
                         {"game": "they-who-were-8", "players": 4, "options": {"max_rounds": random.randint(100, 200)}})
        assert made.status_code == 201, made.text
        return str(made.json()["ticket"])

    def tournament(self) -> str:
        """A tournament of A's, registering (it starts in a day), with ``ann`` registered."""
        headers = {"X-API-Key": self.keys["owner_key"]}
        made = self.call(self.off, "POST", "/v1/tournaments", headers, {**TOURNAMENT, "starts_at": time.time() + 86400})
        assert made.status_code == 201, made.text
        tournament_id = str(made.json()["id"])
        joined = self.call(self.off, "POST", f"/v1/tournaments/{tournament_id}/players", headers, {"player": "ann"})
        assert joined.status_code == 201, joined.text
        return tournament_id

    def mint(self, match_id: str | None = None, tournament_id: str | None = None, ttl_s: int = 600) -> dict[str, Any]:
        """A watch token of A's match or tournament, minted with A's key."""
        path = f"/v1/matches/{match_id}" if match_id else f"/v1/tournaments/{tournament_id}"
        made = self.call(self.off, "POST", path + "/watch-tokens", {"X-API-Key": self.keys["owner_key"]},
                         {"ttl_s": ttl_s})
        assert made.status_code == 201, made.text
        found: dict[str, Any] = made.json()
        return found

    def watcher(self, kind: str, match_id: str | None, tournament_id: str | None) -> str:
        """The watch token a kind of watcher presents about this match (A's: ``match_id``) or tournament."""
        if kind == "other_watch":
            return self.other_watch
        if kind == "expired_watch":
            return self.expired[1]
        minted = self.mint(match_id, tournament_id) if match_id or tournament_id else None
        if kind == "watch":
            return minted["token"] if minted else self.standing_watch
        minted = minted or self.mint(self.expired[0])
        revoked = self.call(self.off, "DELETE", f"/v1/watch-tokens/{minted['id']}",
                            {"X-API-Key": self.keys["owner_key"]})
        assert revoked.status_code == 204, revoked.text
        return str(minted["token"])

    def caller(self, kind: str, token: str, other_token: str, match_id: str | None = None,
               tournament_id: str | None = None) -> tuple[Node, dict[str, str]]:
        """The gateway a kind of caller asks, and the headers it sends (a watcher: about A's ``match_id`` or
        ``tournament_id``, if the route is about one)."""
        if kind in WATCHERS:
            node = self.on if kind == "watch_on" else self.off
            return node, {"Authorization": f"Bearer {self.watcher(kind.removesuffix('_on'), match_id, tournament_id)}"}
        if kind == "none_on":
            return self.on, {}
        if kind == "none_off":
            return self.off, {}
        if kind == "seat_on":
            return self.on, {"Authorization": f"Bearer {token}"}
        if kind == "seat":
            return self.off, {"Authorization": f"Bearer {token}"}
        if kind == "other_seat":
            return self.off, {"Authorization": f"Bearer {other_token}"}
        return self.off, {"X-API-Key": self.keys[kind]}


def verdict(response: requests.Response) -> str:
    """``ok``, or the status of a denial by the access policy (checked to be the code's own status)."""
    if response.status_code in (401, 403, 404):
        try:
            code = response.json()["error"]["code"]
        except (ValueError, KeyError, TypeError):
            return OK
        if code in DENIALS:
            assert DENIALS[code] == response.status_code, response.text
            return str(response.status_code)
    return OK


def ws_verdict(node: Node, match_id: str, headers: dict[str, str], hello_token: str | None) -> str:
    """The WebSocket's answer: refused at the upgrade (a status), or in the hello (an error), or ``ready``."""
    url = node.url.replace("http://", "ws://") + f"/v1/matches/{match_id}/ws"
    try:
        with ws_connect(url, additional_headers=headers, open_timeout=20) as socket:
            socket.send(orjson.dumps({"type": "hello", "token": hello_token}).decode())
            first = orjson.loads(socket.recv(timeout=20))
    except InvalidStatus as refused:
        body = orjson.loads(refused.response.body or b"{}")
        code = body.get("error", {}).get("code")
        assert code in DENIALS and DENIALS[code] == refused.response.status_code, body
        return str(refused.response.status_code)
    if first["type"] == "ready":
        return OK
    code = first["error"]["code"]
    assert code in DENIALS, first
    return str(DENIALS[code])


@pytest.fixture(scope="module")
def world(redis_url: str, rules: RulesProcess) -> Iterator[World]:
    client = redisconn.connect(redis_url)
    keys = {"owner_key": tenants.create_key(client, "matrix-a")[0],
            "other_key": tenants.create_key(client, "matrix-b")[0]}
    revoked, record = tenants.create_key(client, "matrix-a")
    tenants.revoke(client, record["key_id"])
    keys["revoked_key"], keys["madeup_key"] = revoked, "mk_0a1b2c3d4e5f.this-key-was-never-made"
    with gunicorn_gateway(redis_url, rules.port) as on, \
            gunicorn_gateway(redis_url, rules.port, MEEPLE_ANONYMOUS="0") as off:
        world = World(on, off, keys)
        watched = world.match(True)[0]
        expiring = world.mint(watched, ttl_s=60)  # the shortest a token lives: waited for below, once
        world.expired = (watched, expiring["token"])
        world.other_token = world.match(False)[1]
        world.spare = world.match(False)  # a seat token for the callers of routes about no match
        world.standing_watch = world.mint(world.match(True)[0])["token"]
        world.other_watch = world.mint(world.match(True)[0])["token"]
        time.sleep(max(0.0, expiring["expires_at"] - time.time()) + 0.5)
        yield world


def routes() -> list[tuple[str, str]]:
    """Every (method, rule) of the app's URL map; the WebSocket rule as ``WS``."""
    app = create_app(Config(redis_url="redis://127.0.0.1:1/0"))
    found = set()
    for rule in app.url_map.iter_rules():
        if getattr(rule, "websocket", False):
            found.add(("WS", rule.rule))
            continue
        for method in rule.methods or ():
            if method not in ("HEAD", "OPTIONS"):
                found.add((method, rule.rule))
    return sorted(found)


def test_every_route_has_a_row_and_its_profile_is_the_action_the_gateway_declares() -> None:
    app = create_app(Config(redis_url="redis://127.0.0.1:1/0"))
    assert sorted(set(routes()) - set(PROFILE)) == [], "a route without a row in the matrix"
    assert sorted(set(PROFILE) - set(routes())) == [], "a row for a route that does not exist"
    for rule in app.url_map.iter_rules():
        assert rule.endpoint in ACCESS, f"{rule.endpoint} declares no access action (services/contract/access.py)"
        methods = ["WS"] if getattr(rule, "websocket", False) else sorted((rule.methods or set()) - {"HEAD", "OPTIONS"})
        for method in methods:
            assert PROFILE[(method, rule.rule)] == ACTION_PROFILE[ACCESS[rule.endpoint]], (method, rule.rule)
    assert set(ACTION_PROFILE) - {None} == set(RULES), "every action has its rule in the policy's words"


def _path(rule: str, match_id: str, ticket: str, tournament_id: str, token_id: str) -> str:
    path = rule.replace("<match_id>", match_id).replace("<ticket>", ticket).replace("<tournament_id>", tournament_id)
    path = path.replace("<token_id>", token_id)
    for placeholder, value in PATHS.items():
        path = path.replace(placeholder, value)
    return path


def ask_every_caller(world: World, method: str, rule: str, malformed: bool = False) -> dict[str, Any]:
    """Each kind of caller's verdict on the route (about a tenant's and an anonymous match or ticket, as the
    matrix's pairs); ``malformed``: the request is one the server cannot read (:data:`MALFORMED`), and a 400, 413
    or 415 is the verdict ``400``."""
    about_matches = "<match_id>" in rule and PROFILE[(method, rule)] != "open"
    about_tickets = "<ticket>" in rule
    about_tournament = "<tournament_id>" in rule
    tournament_id = world.tournament() if about_tournament else "T0000000000"
    got: dict[str, Any] = {}
    for kind in CALLERS:
        answers = []
        for tenant in ((True, False) if about_matches or about_tickets else (True,)):
            match_id, token = world.match(tenant) if about_matches else world.spare
            if kind == "expired_watch" and about_matches and tenant:
                match_id = world.expired[0]  # the match the expired token covers (its refusals change nothing)
            ticket = world.ticket(tenant) if about_tickets else "t0000000000"
            token_id = world.mint(world.expired[0])["id"] if "<token_id>" in rule else "0123456789abcdef"
            node, headers = world.caller(kind, token, world.other_token, match_id if about_matches and tenant else None,
                                         tournament_id if about_tournament else None)
            if method == "WS":
                answers.append(ws_verdict(node, match_id, headers, None))
            elif malformed:
                path = _path(rule, match_id, ticket, tournament_id, token_id) + "?" + MALFORMED_QUERY
                body = MALFORMED_BODY if method in ("POST", "PUT", "PATCH") else None
                response = world.call(node, method, path, headers, body)
                answers.append("400" if response.status_code in (400, 413, 415) else verdict(response))
                response.close()
            else:
                path = _path(rule, match_id, ticket, tournament_id, token_id)
                response = world.call(node, method, path, headers, BODIES.get((method, rule)))
                answers.append(verdict(response))
                response.close()
        got[kind] = tuple(answers) if about_matches or about_tickets else answers[0]
    return got


@pytest.mark.parametrize(("method", "rule"), sorted(PROFILE))
def test_the_route_answers_every_kind_of_caller_as_the_matrix_says(world: World, method: str, rule: str) -> None:
    assert ask_every_caller(world, method, rule) == EXPECTED[PROFILE[(method, rule)]]


#: A body no route takes (400 ``unknown_field``), and a query string every parameter of which is out of range for
#: the routes that read it (unknown parameters are ignored).
MALFORMED_BODY = {"zz": 1}
MALFORMED_QUERY = "include=zz&limit=0&wait=-1&after=-5&span=0&offset=-1"
#: The routes without a body that read one of those parameters (the others read nothing a caller can get wrong).
QUERIED = {("GET", "/v1/matches"), ("GET", "/v1/matches/<match_id>"), ("GET", "/v1/matches/<match_id>/events"),
           ("GET", "/v1/matches/<match_id>/events/stream"), ("GET", "/v1/matches/<match_id>/replay"),
           ("GET", "/v1/matchmaking/<ticket>"), ("GET", "/v1/players/<player>/matches"),
           ("GET", "/v1/webhooks/dead-letters"), ("GET", "/v1/leaderboards/<game>"),
           ("GET", "/v1/leaderboards/<game>/players/<player>/around"), ("GET", "/v1/tournaments"),
           ("GET", "/v1/tournaments/<tournament_id>/rounds")}
UNREADABLE = sorted(r for r in PROFILE if PROFILE[r] not in ("open", "catalogue")
                    and (r[0] in ("POST", "PUT", "PATCH") or r in QUERIED))


def _refused_or_400(answer: Any) -> Any:
    if isinstance(answer, tuple):
        return tuple(_refused_or_400(a) for a in answer)
    return "400" if answer == OK else answer


@pytest.mark.parametrize(("method", "rule"), UNREADABLE)
def test_a_caller_the_policy_refuses_gets_the_refusal_whatever_the_request_says(
        world: World, method: str, rule: str) -> None:
    """Issue 49: with no credential (anonymous access off), ``POST /v1/matches {}`` was 400 ``missing_field`` and
    the same call with a valid body 401: the body was read before the caller. Now every route asks the policy
    first: a caller it refuses gets its refusal (401 or 404, as the matrix says) whatever the body or query, with
    anonymous access on and off; a caller it admits gets the 400."""
    expected = {kind: _refused_or_400(cell) for kind, cell in EXPECTED[PROFILE[(method, rule)]].items()}
    assert ask_every_caller(world, method, rule, malformed=True) == expected


def test_a_seat_token_in_the_websocket_hello_is_decided_as_in_a_header(world: World) -> None:
    """The browser's way in (the token in the first message): the same answers as the header's."""
    for tenant in (True, False):
        match_id, token = world.match(tenant)
        for node in (world.on, world.off):
            assert ws_verdict(node, match_id, {}, token) == OK
            assert ws_verdict(node, match_id, {}, world.other_token) == "401"
        # another tenant's key on the upgrade does not let a hello without a token in
        assert ws_verdict(world.off, match_id, {"X-API-Key": world.keys["other_key"]}, None) == "404"



def test_a_watch_token_in_the_websocket_hello_is_decided_as_in_a_header(world: World) -> None:
    """A watch link in the hello (the browser's way in): its match's spectator, 404 elsewhere, 401 once expired."""
    match_id = world.match(True)[0]
    token = world.mint(match_id)["token"]
    for node in (world.on, world.off):
        assert ws_verdict(node, match_id, {}, token) == OK
        assert ws_verdict(node, world.match(True)[0], {}, token) == "404"
        assert ws_verdict(node, world.match(False)[0], {}, token) == "404"
        assert ws_verdict(node, world.expired[0], {}, world.expired[1]) == "401"
