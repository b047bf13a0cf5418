"""Issue 19, the gateway's half: what an attacker (or a client written from docs/api.md alone) found.

Each test names the rule it pins down; all of them run against real Redis servers, a real rules service
and the gateway over real HTTP.
"""

from __future__ import annotations

import ast
import gzip
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import requests

from loadtests.audit import audit_match
from services import redisconn
from services.contract.limits import MAX_JSON_DEPTH
from services.contract.openapi import document
from services.contract.statuses import GUNICORN_CODES, HTTP_CODES
from services.core.config import Config
from services.core.errors import CATALOG
from services.core.record import control
from services.core.record.store import MatchStore, keys
from services.timekeeper.keeper import Timekeeper
from tooling.stack import GUNICORN_CONF, Stack, StackConfig, free_port, http_ok, wait_until

from .conftest import Api, GatewayServer, RulesProcess, start_gateway

ROOT = Path(__file__).resolve().parents[2]
GAME = "clash"


def nested(depth: int) -> Any:
    """A JSON value with ``depth`` levels of arrays."""
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def two_humans(api: Api, game: str = GAME) -> tuple[str, list[str]]:
    created = api.post("/v1/matches", json={"game": game, "players": 2, "join": True}).json()
    joined = api.post(f"/v1/matches/{created['id']}/join", json={}).json()
    return created["id"], [created["token"], joined["token"]]


@pytest.fixture()
def own_gateway(own_redis_url: str, rules: RulesProcess, request: pytest.FixtureRequest) -> Iterator[GatewayServer]:
    """A gateway on a Redis of the test's own, with the settings the test's ``gateway_config`` mark names."""
    marker = request.node.get_closest_marker("gateway_config")
    server = start_gateway(own_redis_url, rules.port, **(marker.kwargs if marker else {}))
    yield server
    server.stop()


# -- 1: deep nesting is a 400, never a 500 ------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/v1/matches", "/v1/matchmaking"])
def test_options_nested_deeper_than_the_limit_are_400_too_deep_not_500(api: Api, path: str) -> None:
    reply = api.post(path, json={"game": GAME, "players": 2, "options": {"match": nested(300)}})
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "too_deep", reply.text
    assert str(MAX_JSON_DEPTH) in reply.json()["error"]["message"]
    within = api.post(path, json={"game": GAME, "players": 2, "options": {"match": nested(MAX_JSON_DEPTH - 2)}})
    assert within.status_code != 500 and within.json().get("error", {}).get("code") != "too_deep"


def test_a_move_nested_deeper_than_the_limit_is_400_too_deep_not_500(api: Api) -> None:
    match_id, tokens = two_humans(api)
    reply = api.post(f"/v1/matches/{match_id}/moves", tokens[0],
                     json={"move": {"type": "place", "x": nested(260)}, "version": 1})
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "too_deep", reply.text


@pytest.mark.parametrize(("field", "body", "code"), [
    ("a move", {"move": {"type": "place", "x": [2**64]}, "version": 2}, "malformed_move"),
    ("a move", {"move": {"type": "place", "x": -(2**63) - 1}, "version": 2}, "malformed_move"),
    ("the version", {"move": {"type": "place"}, "version": 2**70}, "wrong_type"),
])
def test_an_integer_past_64_bits_is_400_with_its_fields_code_not_500_and_the_match_plays_on(
        api: Api, field: str, body: dict[str, Any], code: str) -> None:
    """msgspec decodes integers of any size; what is stored and sent to the rules service is encoded with orjson,
    which stops at 64 bits, so the contract stops there (docs/api.md "Limits and quotas")."""
    match_id, tokens = two_humans(api)
    reply = api.post(f"/v1/matches/{match_id}/moves", tokens[0], json=body)
    assert reply.status_code == 400 and reply.json()["error"]["code"] == code, (field, reply.text)
    mover = tokens[api.get(f"/v1/matches/{match_id}", tokens[0]).json()["to_act"][0]]
    status = api.get(f"/v1/matches/{match_id}?include=legal_moves", mover).json()
    assert status["version"] == 2  # nothing was applied
    assert api.post(f"/v1/matches/{match_id}/moves", mover,
                    json={"move": status["legal_moves"][0], "version": 2}).status_code == 200


def test_a_join_for_a_seat_past_64_bits_with_an_idempotency_key_is_400_no_such_seat_not_500(api: Api) -> None:
    created = api.post("/v1/matches", json={"game": GAME, "players": 2}).json()
    reply = api.post(f"/v1/matches/{created['id']}/join", json={"seat": 2**72}, headers={"Idempotency-Key": "j1"})
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "no_such_seat", reply.text
    assert api.post(f"/v1/matches/{created['id']}/join", json={"seat": 1}).status_code == 200


def test_options_with_an_integer_past_64_bits_are_400_not_500(api: Api) -> None:
    reply = api.post("/v1/matches", json={"game": GAME, "players": 2, "options": {"x": 2**64}})
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "wrong_type", reply.text


# -- 2: rate limits count verified identities; quotas ------------------------------------------------------------
@pytest.mark.gateway_config(rate_limit_per_minute=5)
def test_made_up_tokens_are_401_and_count_against_the_ip_not_a_bucket_of_their_own(
        own_gateway: GatewayServer, own_redis_url: str) -> None:
    api = Api(own_gateway.url)
    created = api.post("/v1/matches", json={"game": GAME, "players": 2, "join": True}).json()  # 1 for the IP
    codes = [api.get(f"/v1/matches/{created['id']}", f"invented-{i}").status_code for i in range(6)]
    assert codes == [401, 401, 401, 401, 429, 429]  # the IP's 5 a minute, whatever the tokens
    assert api.get(f"/v1/matches/{created['id']}", "invented-x").headers.get("Retry-After")
    # A verified token has a bucket of its own: the IP's being spent does not stop the seat holder.
    assert api.get(f"/v1/matches/{created['id']}", created["token"]).status_code == 200
    assert api.get("/v1/matches/no-such-match", "invented-y").status_code == 429  # a 404 counts for the IP too
    invented = {"Authorization": "Bearer made-up-create"}  # creating counts for the IP, token or not
    assert api.post("/v1/matches", json={"game": GAME, "players": 2}, headers=invented).status_code == 429
    buckets = [k.decode() for k in redisconn.connect(own_redis_url).scan_iter("ratelimit:*")]
    assert len([k for k in buckets if ":t:" in k]) == 1  # only the real token's (kept with its match)


@pytest.mark.gateway_config(max_active_matches_per_ip=2, max_bot_seats_per_ip=3, max_hard_bots_per_ip=1)
def test_per_ip_quotas_on_matches_bot_seats_and_hard_bots_are_429_with_the_limit(own_gateway: GatewayServer) -> None:
    api = Api(own_gateway.url)
    hard = [{"kind": "bot", "level": "hard"}] * 2
    two_hard = api.post("/v1/matches", json={"game": GAME, "players": 2, "seats": hard})
    assert two_hard.status_code == 429 and two_hard.json()["error"]["code"] == "quota_exceeded"
    message = two_hard.json()["error"]["message"]
    assert "hard bot seats" in message and "limit is 1" in message
    bots = api.post("/v1/matches", json={"game": GAME, "players": 2, "seats": [{"kind": "bot", "level": "easy"}] * 2})
    assert bots.status_code == 201  # an all-bot match: 2 of the 3 bot seats
    third = api.post("/v1/matches", json={"game": GAME, "players": 2, "seats": [{"kind": "bot"}] * 2})
    assert third.status_code == 429 and "limit is 3" in third.json()["error"]["message"]
    assert api.post("/v1/matches", json={"game": GAME, "players": 2}).status_code == 201
    over = api.post("/v1/matches", json={"game": GAME, "players": 2})
    assert over.status_code == 429 and "active matches" in over.json()["error"]["message"]
    assert "limit is 2" in over.json()["error"]["message"]


@pytest.mark.gateway_config(max_active_matches_per_ip=1, max_bot_seats_per_ip=0, max_hard_bots_per_ip=0)
def test_a_match_that_finishes_gives_its_quota_back(own_gateway: GatewayServer, own_redis_url: str) -> None:
    api = Api(own_gateway.url)
    two_humans(api)
    assert api.post("/v1/matches", json={"game": GAME, "players": 2}).status_code == 429
    keeper = Timekeeper(own_redis_url)
    keeper.run_once(now=time.time() + 8 * 24 * 3600)  # a week and a day later: abandoned, hence finished
    assert api.post("/v1/matches", json={"game": GAME, "players": 2}).status_code == 201


# -- 3: bounded growth -------------------------------------------------------------------------------------------
@pytest.mark.gateway_config(idle_match_ttl_s=60)
def test_an_active_match_without_human_action_is_finished_as_abandoned_and_then_expires(
        own_gateway: GatewayServer, own_redis_url: str) -> None:
    api = Api(own_gateway.url)
    idle_id, _ = two_humans(api)
    busy_id, busy_tokens = two_humans(api)
    keeper = Timekeeper(own_redis_url, config=Config(finished_ttl_s=3600, waiting_ttl_s=3600, idle_match_ttl_s=60))
    client = redisconn.connect(own_redis_url)
    assert client.ttl(keys(idle_id)[1]) == -1  # an active match: no TTL of its own
    status = api.get(f"/v1/matches/{busy_id}", busy_tokens[0]).json()
    seat = status["to_act"][0]
    move = api.get(f"/v1/matches/{busy_id}/legal-moves", busy_tokens[seat]).json()["moves"][0]
    assert api.post(f"/v1/matches/{busy_id}/moves", busy_tokens[seat],
                    json={"move": move, "version": status["version"]}).status_code == 200
    store = MatchStore(client, 1, 1)
    idle_at, busy_at = (store.load(i).meta.human_at for i in (idle_id, busy_id))  # type: ignore[union-attr]
    assert idle_at < busy_at
    keeper.run_once(now=(idle_at + busy_at) / 2 + 60)  # the idle one's lifetime is over, the busy one's not
    idle = api.get(f"/v1/matches/{idle_id}").json()
    assert idle["status"] == "finished" and idle["to_act"] == []
    assert idle["outcome"] == {"ended_by": "abandoned", "winners": [], "forfeited": [], "scores": None,
                               "ratings": None}
    assert api.get(f"/v1/matches/{idle_id}/replay").json()["log"][-1]["kind"] == "abandoned"
    assert 0 < client.ttl(keys(idle_id)[1]) <= 3600  # now it expires like any finished match
    assert audit_match(client, idle_id).ok  # the load test's audit replays it: the log still explains the state
    assert api.get(f"/v1/matches/{busy_id}").json()["status"] == "active"


def test_when_redis_is_nearly_full_creating_is_503_store_full_and_running_matches_still_play(
        own_redis_url: str, rules: RulesProcess) -> None:
    if redisconn.cluster_url(own_redis_url):
        pytest.skip("maxmemory is per node: the fullest primary's share is what a cluster store checks")
    client = redisconn.connect(own_redis_url)
    client.config_set("maxmemory-policy", "noeviction")
    first = start_gateway(own_redis_url, rules.port)
    match_id, tokens = two_humans(Api(first.url))
    first.stop()
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory", str(int(used / 0.6)))  # 60% full: past the 50% where this gateway stops creating
    gateway = start_gateway(own_redis_url, rules.port, store_full_ratio=0.5)
    try:
        api = Api(gateway.url)
        refused = api.post("/v1/matches", json={"game": GAME, "players": 2})
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "store_full", refused.text
        assert api.post("/v1/matchmaking", json={"game": GAME, "players": 2}).json()["error"]["code"] == "store_full"
        for _ in range(3):  # the match already running plays on in the headroom
            status = api.get(f"/v1/matches/{match_id}", tokens[0]).json()
            seat = status["to_act"][0]
            move = api.get(f"/v1/matches/{match_id}/legal-moves", tokens[seat]).json()["moves"][0]
            moved = api.post(f"/v1/matches/{match_id}/moves", tokens[seat],
                             json={"move": move, "version": status["version"]})
            assert moved.status_code == 200, moved.text
        client.config_set("maxmemory", str(int(client.info("memory")["used_memory"]) // 2))  # really full now
        refused = api.post(f"/v1/matches/{match_id}/moves", tokens[0], json={"move": {"type": "x"}, "version": 0})
        assert refused.status_code in (409, 422, 503)  # never a 500
        if refused.status_code == 503:
            assert refused.json()["error"]["code"] == "store_full"
    finally:
        client.config_set("maxmemory", "0")
        gateway.stop()


def test_the_gateway_never_imports_the_bots_or_the_engines() -> None:
    """``/hint`` runs in the bot workers: no module of the gateway imports ``ai`` or the game engines."""
    offenders = []
    for path in (ROOT / "services" / "gateway").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.name}: {n}" for n in names if n == "ai" or n.startswith(("ai.", "services.rules"))]
    assert offenders == []


@pytest.mark.gateway_config(hint_wait_s=0.3, hints_per_seat_minute=2)
def test_hint_without_a_bot_worker_is_503_and_each_seat_has_a_hint_limit(own_gateway: GatewayServer) -> None:
    api = Api(own_gateway.url)
    match_id, tokens = two_humans(api)
    seat = api.get(f"/v1/matches/{match_id}").json()["to_act"][0]
    replies = []
    while not replies or replies[-1].status_code != 429:  # 2 a minute: the third (or, across a minute's
        replies.append(api.get(f"/v1/matches/{match_id}/hint", tokens[seat]))  # turn, the fifth) is refused
        assert len(replies) <= 5
    assert all(r.status_code == 503 and r.json()["error"]["code"] == "hint_unavailable" for r in replies[:-1])
    limited = replies[-1]
    assert limited.json()["error"]["code"] == "hint_limited" and int(limited.headers["Retry-After"]) > 0
    assert "2 hints a minute" in limited.json()["error"]["message"]


# -- 4: matchmaking hands the token out once and stores only its hash -----------------------------------------------
def test_matchmaking_hands_out_the_seat_token_once_and_stores_only_its_hash(own_gateway: GatewayServer,
                                                                             own_redis_url: str) -> None:
    api = Api(own_gateway.url)
    first = api.post("/v1/matchmaking", json={"game": GAME, "players": 2}).json()
    second = api.post("/v1/matchmaking", json={"game": GAME, "players": 2}).json()
    assert first["token"] is None and second["status"] == "matched" and second["token"]  # the POST that matched
    polls = [api.get(f"/v1/matchmaking/{first['ticket']}").json() for _ in range(3)]
    assert polls[0]["token"] and polls[0]["token_issued"]
    assert [p["token"] for p in polls[1:]] == [None, None] and all(p["token_issued"] for p in polls[1:])
    assert api.get(f"/v1/matchmaking/{second['ticket']}").json()["token"] is None
    client = redisconn.connect(own_redis_url)
    stored = b"".join(client.dump(k) or b"" for k in client.scan_iter("*"))
    for token in (polls[0]["token"], second["token"]):
        assert token.encode() not in stored
    match = api.get(f"/v1/matches/{second['match_id']}", polls[0]["token"]).json()
    assert match["you"] == polls[0]["seat"] and match["status"] == "active"
    assert [e["kind"] for e in api.get(f"/v1/matches/{second['match_id']}/replay").json()["log"]] == [
        "created", "joined", "joined"]


# -- 6: the contract states every limit; the error table lists every code ------------------------------------------
def test_the_openapi_document_states_every_enforced_limit() -> None:
    doc = document()
    paths = doc["paths"]

    def param(path: str, name: str) -> dict[str, Any]:
        op = next(iter(paths[path].values()))
        found: dict[str, Any] = next(p for p in op["parameters"] if p["name"] == name)
        return found

    events = "/v1/matches/{match_id}/events"
    assert param(events, "wait")["schema"]["minimum"] == 0 and param(events, "wait")["schema"]["maximum"] == 30
    assert param(events, "after")["schema"]["minimum"] == 0
    assert param(events + "/stream", "after")["schema"]["minimum"] == 0
    assert param(events + "/stream", "limit")["schema"] == {"type": "integer", "minimum": 1, "maximum": 3600,
                                                            "default": 3600}
    key = param("/v1/matches/{match_id}/moves", "Idempotency-Key")["schema"]
    assert (key["minLength"], key["maxLength"]) == (1, 128)
    create = paths["/v1/matches"]["post"]["requestBody"]
    schema = create["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    players = doc["components"]["schemas"][schema]["properties"]["players"]
    assert (players["minimum"], players["maximum"]) == (1, 16)
    assert str(MAX_JSON_DEPTH) in create["description"] and "64 KiB" in doc["info"]["description"]
    assert paths["/v1/matches/{match_id}/replay"]["get"]["security"] == [
        {}, {"seatToken": []}, {"watchToken": []}, {"apiKey": []}, {"apiKeyBearer": []}]  # a watch link reads it too
    for path in ("/v1/matches", "/v1/matches/{match_id}/moves", "/v1/matchmaking"):
        assert {"413", "415", "429"} <= set(paths[path]["post"]["responses"])


def test_the_error_table_of_docs_api_md_lists_every_code_the_server_answers() -> None:
    codes = {code for _, code in CATALOG}
    codes |= set(HTTP_CODES.values()) | set(GUNICORN_CODES.values()) | {"store_unavailable", "store_full",
                                                                          "internal_error", "rules_unavailable"}
    table = (ROOT / "docs" / "api.md").read_text().split("## Errors", 1)[1].split("\n## ", 1)[0]
    missing = sorted(code for code in codes if f"`{code}`" not in table)
    assert missing == []
    for code in ("no_such_seat", "bad_idempotency_key", "malformed_request", "method_not_allowed", "busy"):
        assert f"`{code}`" in table


# -- 9: the outcome names exactly the engine's winners --------------------------------------------------------------
def test_the_outcome_keeps_a_winner_on_no_side_such_as_the_fierce_women_automa() -> None:
    sides = [[0], [1]]  # 2-player Fierce Women: seat 2 is the automa, on no side
    assert control.final(sides, [], [10.0, 11.0, 12.0], [2]).winners == [2]
    assert control.final(sides, [], [12.0, 11.0, 12.0], [0, 2]).winners == [0, 2]
    assert control.final([[0]], [], [3.0], []).winners == []  # a solo game lost: nobody wins


# -- 10: contract drift ------------------------------------------------------------------------------------------
def test_join_answers_with_the_seats_view_and_replay_logs_created_and_every_joined(api: Api) -> None:
    created = api.post("/v1/matches", json={"game": GAME, "players": 2, "join": True}).json()
    assert created["version"] == 1 and created["view"] is not None
    joined = api.post(f"/v1/matches/{created['id']}/join", json={}).json()
    assert joined["view"] is not None and joined["you"] == 1
    log = api.get(f"/v1/matches/{created['id']}/replay").json()["log"]
    assert [(e["version"], e["kind"], e["seat"]) for e in log] == [(0, "created", None), (1, "joined", 0),
                                                                   (2, "joined", 1)]


def test_a_body_left_out_reads_as_empty_where_the_contract_says_it_may_be(api: Api) -> None:
    """The OpenAPI document marks the join's body not required: a join with no body at all takes the first free
    seat. A create's body is required: left out, it is 400 ``missing_field``, never a 500 or a silent default."""
    created = api.post("/v1/matches", json={"game": GAME, "players": 2, "join": True}).json()
    joined = api.post(f"/v1/matches/{created['id']}/join")
    assert joined.status_code == 200 and joined.json()["you"] == 1 and joined.json()["token"]
    refused = api.post("/v1/matches")
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "missing_field"


def test_a_garbage_bearer_token_is_401_with_www_authenticate(api: Api) -> None:
    match_id, _ = two_humans(api)
    for path in ("", "/legal-moves", "/replay", "/events?wait=0"):
        reply = api.get(f"/v1/matches/{match_id}{path}", "garbage")
        assert reply.status_code == 401 and reply.json()["error"]["code"] == "wrong_token", path
        assert reply.headers["WWW-Authenticate"].startswith("Bearer")
    assert api.get("/v1/matches/no-such-match", "garbage").status_code == 404  # no match: 404, token or not


def test_a_post_body_not_sent_as_json_is_415_with_a_clear_message(api: Api) -> None:
    reply = api.post("/v1/matches", data=b'{"game": "clash", "players": 2}')  # no Content-Type
    assert reply.status_code == 415 and reply.json()["error"]["code"] == "unsupported_media_type"
    assert "application/json" in reply.json()["error"]["message"]
    form = api.post("/v1/matches", data={"game": "clash", "players": "2"})
    assert form.status_code == 415
    match_id, _ = two_humans(api)
    assert api.post(f"/v1/matches/{match_id}/join").status_code == 409  # an empty body still reads as {}


def test_an_integer_field_takes_a_json_number_with_an_integral_value_as_the_openapi_schema_does(api: Api) -> None:
    created = api.post("/v1/matches", json={"game": GAME, "players": 2.0, "join": True})
    assert created.status_code == 201 and created.json()["players"] == 2
    assert api.post("/v1/matches", json={"game": GAME, "players": 2.5}).json()["error"]["code"] == "wrong_type"


def test_405_names_the_allowed_methods(gateway_server: GatewayServer) -> None:
    reply = requests.put(f"{gateway_server.url}/v1/matches", timeout=10)
    assert reply.status_code == 405 and reply.json()["error"]["code"] == "method_not_allowed"
    assert "POST" in reply.headers["Allow"]


@pytest.mark.parametrize("path", ["/v1//games", "/v1/matches//events", "/v1/matches//moves"])
def test_a_doubled_slash_is_a_json_404_not_an_html_redirect(gateway_server: GatewayServer, path: str) -> None:
    reply = requests.get(f"{gateway_server.url}{path}", timeout=10, allow_redirects=False)
    assert reply.status_code == 404 and reply.json()["error"]["code"] == "not_found"


def test_meeple_run_help_explains_the_ports_and_their_variables() -> None:
    from services.cli import build_parser

    run = build_parser()._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    text = run.format_help()
    for needed in ("--http-port", "--rules-port", "MEEPLE_HTTP_PORT", "MEEPLE_RULES_PORT", "8000", "50051"):
        assert needed in text
    readme = (ROOT / "README.md").read_text()
    assert "MEEPLE_HTTP_PORT" in readme and "--http-port" in readme



# -- 5 and 7: the real gateway under gunicorn ---------------------------------------------------------------------
@pytest.fixture()
def gunicorn_gateway(redis_url: str, rules: RulesProcess, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``gunicorn -c services.gateway.gunicorn_conf`` with the gateway, HOME in a temporary directory."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env.update(HOME=str(tmp_path), REDIS_URL=redis_url, MEEPLE_RULES_ADDR=f"127.0.0.1:{rules.port}",
               PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "prom"))
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", GUNICORN_CONF, "--workers", "1",
                             "--bind", f"127.0.0.1:{port}", "services.gateway.wsgi:app"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: http_ok(f"http://127.0.0.1:{port}/healthz"), "gateway", proc)
        yield f"http://127.0.0.1:{port}", tmp_path
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)


def raw_exchange(url: str, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes and read one answer (up to its Content-Length): status, headers, body."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < _length(data):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def _length(data: bytes) -> int:
    found = re.search(rb"\r\nContent-Length: (\d+)\r\n", data, re.IGNORECASE)
    return int(found.group(1)) if found else 1 << 30


def test_requests_gunicorn_rejects_before_the_app_get_json_errors(gunicorn_gateway: tuple[str, Path]) -> None:
    url, _ = gunicorn_gateway
    long_url = b"GET /v1/games?x=" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    many_headers = b"GET /v1/games HTTP/1.1\r\nHost: x\r\n" + b"".join(
        b"X-H%d: v\r\n" % i for i in range(150)) + b"\r\n"
    bad_header = b"GET /v1/games HTTP/1.1\r\nHost: x\r\nBad Header: v\r\n\r\n"
    for request, status, code in ((long_url, 414, "uri_too_long"), (many_headers, 431, "headers_too_large"),
                                  (bad_header, 400, "malformed_request")):
        got, headers, body = raw_exchange(url, request)
        assert got == status and headers["Content-Type"] == "application/json", body
        assert json.loads(body)["error"]["code"] == code


def test_an_oversized_chunked_body_is_413_not_malformed_json(gunicorn_gateway: tuple[str, Path]) -> None:
    url, _ = gunicorn_gateway
    chunk = b'{"game": "' + b"x" * 32_000  # 96 KB sent of a body that would go on: no Content-Length to refuse
    body = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in [chunk] + [b"y" * 32_000] * 2)
    request = (b"POST /v1/matches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n" + body)
    status, _, reply = raw_exchange(url, request)
    assert status == 413 and json.loads(reply)["error"]["code"] == "body_too_large", reply


@pytest.mark.parametrize("framing", [b"zz\r\n{}\r\n0\r\n\r\n", b"2\r\n{}XX0\r\n\r\n"],
                         ids=["chunk size not hex", "chunk without its CRLF"])
def test_a_chunked_body_with_broken_framing_is_400_malformed_request_not_500(gunicorn_gateway: tuple[str, Path],
                                                                              framing: bytes) -> None:
    """gunicorn finds the framing error only while the app reads the body: still a 400, and the connection,
    whose next request no longer has a known start, is closed."""
    url, _ = gunicorn_gateway
    request = (b"POST /v1/matches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n" + framing)
    status, headers, reply = raw_exchange(url, request)
    assert status == 400 and json.loads(reply)["error"]["code"] == "malformed_request", reply
    assert headers["Connection"] == "close"


def test_the_gateway_binds_no_shared_gunicorn_control_socket(gunicorn_gateway: tuple[str, Path]) -> None:
    """Two gateways on one host must not fight over ``~/.gunicorn/gunicorn.ctl``: it is off by default."""
    url, home = gunicorn_gateway
    assert requests.get(f"{url}/healthz", timeout=10).status_code == 200
    assert not (home / ".gunicorn").exists()


def test_the_embedded_redis_has_a_maxmemory_and_never_evicts_a_live_match(tmp_path: Path) -> None:
    stack = Stack(StackConfig(data_dir=tmp_path, redis_maxmemory="64mb"))
    try:
        client = redis.Redis.from_url(stack._start_redis())
        assert client.config_get("maxmemory")["maxmemory"] == str(64 * 1024 * 1024)
        assert client.config_get("maxmemory-policy")["maxmemory-policy"] == "noeviction"
    finally:
        stack.stop()


@pytest.mark.parametrize("coding", ["gzip, chunked", "deflate,chunked"])
def test_a_compressed_chunked_body_is_501_not_implemented_not_read_as_json(gunicorn_gateway: tuple[str, Path],
                                                                          coding: str) -> None:
    """gunicorn frames ``gzip, chunked`` and leaves the decompressing to the app, which reads bodies as sent:
    the compressed bytes were a 400 malformed_json, and a plain body so labelled was taken as it was."""
    url, _ = gunicorn_gateway
    body = gzip.compress(b'{"game": "clash", "players": 2}')
    request = (b"POST /v1/matches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: %s\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (coding.encode(), len(body), body))
    status, headers, reply = raw_exchange(url, request)
    assert status == 501 and json.loads(reply)["error"]["code"] == "not_implemented", reply
    assert headers["Connection"] == "close"


def test_a_refusal_before_the_app_has_its_own_reason_phrase(gunicorn_gateway: tuple[str, Path]) -> None:
    url, _ = gunicorn_gateway
    request = (b"POST /v1/matches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: foo, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        first = sock.recv(65536).split(b"\r\n", 1)[0]
    assert first == b"HTTP/1.1 501 Not Implemented"  # gunicorn's own line says "501 Bad Request"


@pytest.mark.parametrize("coding", ["gzip", "br"])
def test_a_body_sent_with_a_content_encoding_is_415_not_read_as_json(gunicorn_gateway: tuple[str, Path],
                                                                      coding: str) -> None:
    url, _ = gunicorn_gateway
    plain = b'{"game": "clash", "players": 2}'
    for body in (plain, gzip.compress(plain)):
        reply = requests.post(f"{url}/v1/matches", data=body, timeout=10,
                              headers={"Content-Type": "application/json", "Content-Encoding": coding})
        assert reply.status_code == 415 and reply.json()["error"]["code"] == "unsupported_media_type", reply.text
        assert "uncompressed" in reply.json()["error"]["message"]
    # identity is no compression: the body is read (an unknown field, so nothing is created on the shared Redis,
    # where this address may be at its match quota)
    identity = requests.post(f"{url}/v1/matches", data=b'{"nope": 1}', timeout=10,
                             headers={"Content-Type": "application/json", "Content-Encoding": "identity"})
    assert identity.status_code == 400 and identity.json()["error"]["code"] == "unknown_field", identity.text


def test_an_allowed_origin_may_read_retry_after_etag_and_www_authenticate_and_send_an_idempotency_key(
        redis_url: str, rules: RulesProcess) -> None:
    """A browser hides every header of a cross-origin answer it is not told to expose: the TypeScript SDK in
    another origin's page could not read Retry-After (found reading the CORS answer; nothing tested it)."""
    server = start_gateway(redis_url, rules.port, cors_origins=("https://app.example",))
    try:
        allowed = {"Origin": "https://app.example"}
        answer = requests.get(f"{server.url}/v1/games/clash", headers=allowed, timeout=10)
        assert answer.headers["Access-Control-Allow-Origin"] == "https://app.example"
        exposed = {h.strip() for h in answer.headers["Access-Control-Expose-Headers"].split(",")}
        assert {"Retry-After", "ETag", "WWW-Authenticate"} <= exposed and "ETag" in answer.headers
        preflight = requests.options(f"{server.url}/v1/matches/x/rematch", timeout=10, headers={
            **allowed, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "idempotency-key"})
        assert "Idempotency-Key" in preflight.headers["Access-Control-Allow-Headers"]
        other = requests.get(f"{server.url}/v1/games", headers={"Origin": "https://evil.example"}, timeout=10)
        assert "Access-Control-Allow-Origin" not in other.headers
    finally:
        server.stop()


def test_a_malformed_request_while_the_store_is_down_is_503_not_500(rules: RulesProcess) -> None:
    """A request the server cannot read asks the access policy first (issue 49): with the store unreachable that
    question fails, and the answer is the store's 503 (as any request's), not an error raised inside the error
    handler."""
    down = start_gateway(f"redis://127.0.0.1:{free_port()}/0", rules.port)
    try:
        reply = requests.get(f"{down.url}/v1/matches/abcdefabcdef?include=zz",
                             headers={"Authorization": "Bearer 0.not-a-token"}, timeout=30)
        assert reply.status_code == 503 and reply.json()["error"]["code"] == "store_unavailable", reply.text
        assert reply.headers["Retry-After"]
    finally:
        down.stop()
