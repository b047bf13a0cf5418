"""The generated OpenAPI document (what ``GET /v1/openapi.json`` serves): valid 3.1, one operation per route of the
gateway's URL map and each served by the endpoint the contract names, security that is the access action the
gateway declares for that endpoint, and every error code of every status the server answers with."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator import validate

from services.contract import errors, limits
from services.contract.access import ACCESS
from services.contract.openapi import document, document_bytes
from services.contract.openapi import response_of as response
from services.contract.routes import ROUTES, SECURITY
from services.contract.validation import parse
from services.core.access import Action
from services.core.config import Config
from services.core.errors import DomainError
from services.gateway.app import create_app

#: Rules of the URL map that are files, not operations: static assets and Swagger UI's own files.
ASSET_RULES = {"/static/<path:filename>", "/play/<path:name>", "/docs/<path:path>", "/docs/"}

def test_an_error_response_is_written_once_and_referred_to(doc: dict[str, Any]) -> None:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            for status, answer in op["responses"].items():
                if int(status) >= 400:
                    assert answer == {"$ref": f"#/components/responses/Error{status}"}, f"{method} {path} {status}"
    used = {a["$ref"] for item in doc["paths"].values() for op in item.values() for a in op["responses"].values()
            if "$ref" in a}
    assert {f"#/components/responses/{name}" for name in doc["components"]["responses"]} == used


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return document()


def test_the_generated_document_is_valid_openapi_3_1(doc: dict[str, Any]) -> None:
    validate(doc)
    assert doc["openapi"] == "3.1.0"


def _url_map() -> dict[tuple[str, str], set[str]]:
    """(method, path) -> the endpoints serving it, from the gateway's real URL map."""
    app = create_app(Config(redis_url="redis://127.0.0.1:1/0"))  # builds the URL map; connects to nothing
    out: dict[tuple[str, str], set[str]] = {}
    for rule in app.url_map.iter_rules():
        if rule.rule in ASSET_RULES:
            continue
        path = re.sub(r"<(?:[a-z]+:)?(\w+)>", r"{\1}", rule.rule)
        for method in (rule.methods or set()) - {"HEAD", "OPTIONS"}:
            out.setdefault((method, path), set()).add(rule.endpoint)
    return out


def test_every_route_of_the_flask_url_map_is_an_operation_of_the_document_and_nothing_else(
        doc: dict[str, Any]) -> None:
    documented = {(method.upper(), path) for path, item in doc["paths"].items() for method in item}
    served = _url_map()
    assert set(served) - documented == set(), "routes the document does not describe"
    assert documented - set(served) == set(), "operations no route serves"
    for route in ROUTES:
        assert route.endpoint in served[(route.method, route.path)], route.operation_id


def test_each_operations_security_is_the_access_action_the_gateway_declares_for_its_endpoint(
        doc: dict[str, Any]) -> None:
    """Who may call a route is written once, in the contract's ``ACCESS`` (which the authorization matrix test
    holds the server to): the document's security per operation is that action's requirements."""
    for route in ROUTES:
        op = doc["paths"][route.path][route.method.lower()]
        action = ACCESS[route.endpoint]
        assert op.get("security", []) == SECURITY[action], route.operation_id
        schemes = {name for requirement in op.get("security", []) for name in requirement}
        if action is Action.ACT:
            assert schemes == {"seatToken"}, route.operation_id
        if action in (Action.CREATE, Action.JOIN, Action.TICKET, Action.TENANT, Action.TOURNAMENT, Action.SHARE,
                      Action.WATCH_TOKEN, Action.MODERATE):
            assert {"apiKey", "apiKeyBearer"} <= schemes and not schemes & {"seatToken", "watchToken"}, \
                route.operation_id
        if action in (Action.READ, Action.CHAT):  # a watch token reads; it chats where spectators may
            assert schemes == {"seatToken", "watchToken", "apiKey", "apiKeyBearer"}, route.operation_id
        anonymous = {} in op.get("security", [{}])  # no security listed: anyone
        assert anonymous == (action not in (Action.ACT, Action.TENANT, Action.TOURNAMENT, Action.SHARE,
                                            Action.WATCH_TOKEN, Action.MODERATE)), route.operation_id
    every = {action for action in ACCESS.values()}
    assert every <= set(SECURITY), "an access action without security requirements"


def _security(doc: dict[str, Any], method: str, path: str) -> list[dict[str, list[str]]]:
    found: list[dict[str, list[str]]] = doc["paths"][path][method].get("security", [])
    return found


def test_public_routes_carry_no_lock_tickets_take_a_key_and_the_tenant_routes_need_one(doc: dict[str, Any]) -> None:
    schemes = doc["components"]["securitySchemes"]
    assert schemes["apiKey"] == {**schemes["apiKey"], "type": "apiKey", "in": "header", "name": "X-API-Key"}
    assert schemes["apiKeyBearer"]["scheme"] == schemes["seatToken"]["scheme"] == "bearer"
    for path in ("/healthz", "/readyz", "/metrics", "/v1/openapi.json", "/docs", "/play", "/v1/games"):
        for method, op in doc["paths"][path].items():
            assert "security" not in op, f"{method} {path}"
    assert "x-meeple-api-key" in doc["paths"]["/v1/games"]["get"]  # a key sent counts against its tenant
    for method in ("get", "delete"):  # a tenant's ticket needs its key; an anonymous one needs nothing
        assert _security(doc, method, "/v1/matchmaking/{ticket}") == [{}, {"apiKey": []}, {"apiKeyBearer": []}]
    assert _security(doc, "get", "/v1/webhooks") == [{"apiKey": []}, {"apiKeyBearer": []}]


def test_creates_joins_enqueues_and_moves_take_an_idempotency_key_and_document_its_conflicts(
        doc: dict[str, Any]) -> None:
    for method, path in (("post", "/v1/matches"), ("post", "/v1/matches/{match_id}/join"),
                         ("post", "/v1/matchmaking"), ("post", "/v1/matches/{match_id}/moves")):
        op = doc["paths"][path][method]
        key = next(p for p in op["parameters"] if p["name"] == "Idempotency-Key")
        assert key["in"] == "header" and not key["required"], path
        assert "`idempotency_key_in_use`" in response(doc, op, 409)["description"], path
        assert "`idempotency_key_reused`" in response(doc, op, 422)["description"], path


def test_resign_the_seed_as_a_string_and_unrated_outcomes(doc: dict[str, Any]) -> None:
    resign = doc["paths"]["/v1/matches/{match_id}/resign"]["post"]
    assert resign["security"] == [{"seatToken": []}] and resign["requestBody"]["required"] is False
    schemas = doc["components"]["schemas"]
    assert "resigned" in schemas["LogEntry"]["properties"]["kind"]["enum"]
    seed = schemas["Replay"]["properties"]["seed"]
    assert {"type": "string", "pattern": "^[0-9]{1,19}$"} in seed["anyOf"] and {"type": "null"} in seed["anyOf"]
    ratings = schemas["Outcome"]["properties"]["ratings"]
    assert "ratings" not in schemas["Outcome"].get("required", []) and {"type": "null"} in ratings["anyOf"]
    assert "player" not in schemas["RatingChange"]["required"]


def test_operations_are_tagged_by_area_and_the_intro_is_short(doc: dict[str, Any]) -> None:
    tags = [t["name"] for t in doc["tags"]]
    for path, item in doc["paths"].items():
        for method, op in item.items():
            assert len(op["tags"]) == 1 and op["tags"][0] in tags, f"{method} {path}"
    used = {op["tags"][0] for item in doc["paths"].values() for op in item.values()}
    assert used == set(tags)
    intro = doc["info"]["description"]
    assert len(intro.splitlines()) <= 12 and intro.count("MEEPLE_") == 0, "the intro is a wall again"


def test_every_error_response_lists_the_codes_of_its_status(doc: dict[str, Any]) -> None:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            for status in op["responses"]:
                if int(status) < 400:
                    continue
                answer = response(doc, op, int(status))
                for code in errors.codes_of(int(status)):
                    assert f"`{code}`" in answer["description"], f"{method} {path} {status} {code}"
                assert answer["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
    limited = response(doc, doc["paths"]["/v1/matches/{match_id}/moves"]["post"], 429)
    assert "`MEEPLE_RATE_LIMIT_PER_MINUTE`" in limited["description"].split("`rate_limited`: ")[1].split(";")[0]
    assert limited["headers"]["Retry-After"]


def test_every_operation_lists_what_the_http_server_answers_to_any_request(doc: dict[str, Any]) -> None:
    # A query over 4094 bytes is a 414 whatever the route (found by an exploratory schemathesis run with an API
    # key: GET /v1/players/{player}/matches answered a 414 its operation did not list).
    assert set(errors.HTTP_LAYER) >= {400, 414, 431} and 500 not in errors.HTTP_LAYER
    for path, item in doc["paths"].items():
        for method, op in item.items():
            assert {str(s) for s in errors.HTTP_LAYER} <= set(op["responses"]), f"{method} {path}"
    api_md = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    assert f"before routing it ({', '.join(map(str, errors.HTTP_LAYER))})" in api_md.replace("\n", " ")


def test_limits_come_from_the_contract(doc: dict[str, Any]) -> None:
    def param(path: str, method: str, name: str) -> dict[str, Any]:
        found: dict[str, Any] = next(p for p in doc["paths"][path][method]["parameters"] if p["name"] == name)
        return found

    assert param("/v1/matches/{match_id}/moves", "post", "Idempotency-Key")["schema"]["maxLength"] \
        == limits.IDEMPOTENCY_KEY_MAX
    assert param("/v1/matches/{match_id}/events", "get", "wait")["schema"]["maximum"] == limits.LONG_POLL_MAX_S
    assert param("/v1/matches", "get", "limit")["schema"]["maximum"] == limits.PAGE_MAX
    dead = param("/v1/webhooks/dead-letters", "get", "limit")
    assert "dead letters per page" in dead["description"] and "matches" not in dead["description"]
    create = doc["components"]["schemas"]["CreateMatch"]["properties"]
    assert create["players"]["maximum"] == limits.MAX_PLAYERS
    assert doc["components"]["schemas"]["SeatSpec"]["properties"]["level"]["enum"] == list(limits.BOT_LEVELS)
    assert doc["info"]["x-limits"]["MAX_BODY_BYTES"] == limits.MAX_BODY_BYTES
    rating = doc["components"]["schemas"]["Rating"]["properties"]
    assert "rounded to 3 decimals" in rating["rating"]["description"]


def test_the_served_bytes_are_the_document(doc: dict[str, Any]) -> None:
    import json

    assert json.loads(document_bytes()) == doc


def test_a_request_body_is_marked_required_exactly_when_the_server_refuses_it_left_out(doc: dict[str, Any]) -> None:
    """The gateway reads an empty body as ``{}`` (``validation.parse``): a client written from the document may leave
    a body out exactly where the document says it is not required (a join, a resign), and nowhere else."""
    checked = 0
    for route in ROUTES:
        if route.body is None:
            continue
        op = doc["paths"][route.path][route.method.lower()]
        try:
            parse(route.body, b"")
            refused = False
        except DomainError as err:
            refused = True
            assert err.code == "missing_field", route.operation_id
        assert op["requestBody"]["required"] is refused, route.operation_id
        checked += 1
    assert checked >= 10
    assert doc["paths"]["/v1/matches/{match_id}/join"]["post"]["requestBody"]["required"] is False
    assert doc["paths"]["/v1/matches"]["post"]["requestBody"]["required"] is True
