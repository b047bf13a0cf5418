"""The generated OpenAPI document: valid 3.1, one operation per route of the gateway's URL map, security that
says who may call what, error codes per status, and — while the old hand-written dict still serves — no
difference from it that is not a fix named below."""

from __future__ import annotations

import re
from typing import Any

import pytest
from openapi_spec_validator import validate

from services.contract import errors, limits
from services.contract.openapi import document, document_bytes
from services.contract.routes import ROUTES, Auth
from tests.contract.docdiff import differences

#: Rules of the URL map that are files, not operations: static assets and Swagger UI's own files.
ASSET_RULES = {"/static/<path:filename>", "/play/<path:name>", "/docs/<path:path>", "/docs/"}

#: Each difference from the old document, and why it is a fix (issue 29's list and issue 33's Swagger UI bullet).
FIXES: list[tuple[str, str]] = [
    (r"^GET /v1/matches/\{match_id\}(/events|/events/stream|/ws|/replay)? security: \['bearer', 'none'\] -> "
     r"\['apiKey', 'apiKeyBearer', 'none', 'seatToken'\]$",
     "match reads listed [{}, bearer] only, though a tenant's X-API-Key works there (and the bearer was one "
     "scheme for two different credentials)"),
    (r" security: \['bearer'\] -> \['seatToken'\]$",
     "seat calls take a seat token only: an API key as the bearer is 401 missing_token there"),
    (r" security: \['apiKey', 'bearer'(, 'none')?\] -> \['apiKey', 'apiKeyBearer'(, 'none')?\]$",
     "the key as a bearer token is its own scheme (mk_...), not the seat token's"),
    (r"^GET /v1/games security: \['apiKey', 'bearer', 'none'\] -> \[\]$",
     "the catalogue is public: no lock in Swagger UI (a key, if sent, still counts against its tenant: "
     "x-meeple-api-key)"),
    (r"^GET /v1/games statuses: \['200', '401', '429', '503'\] -> \['200', '400', '401', '429', '503'\]$",
     "a malformed request (400 malformed_request) can meet any API call"),
    (r"^GET /(healthz|readyz|metrics|docs|play|v1/openapi\.json) 200\.[a-z/+]+(json|html|plain): added$",
     "the probes, metrics and pages say what they answer (media type, and the JSON's schema)"),
    (r"^GET /v1/games 200\.application/json\.properties\.games\.items\.properties\.options\.items: added$",
     "a game's options are objects"),
    (r"\.(kind|status)\.enum: added$|\.(kind|status)\.types: removed$",
     "an event's kind and a match's status are enums (waiting, active, finished), not any string"),
    (r"\.to_act\.items: added$", "an event's to_act lists seats (integers)"),
    (r"\.types: added$", "enums say they are strings, and objects of the game's own JSON say so"),
    (r"parameters\.query:include\.enum: \('legal_moves',\) -> \('', 'legal_moves'\)$",
     "an empty `include` asks for nothing, as the server reads it (schemathesis found it accepted)"),
    (r"^GET /v1/matches/\{match_id\}/replay 200\.application/json\.properties\.log\.items\.properties\.view\.types: "
     r"added$", "a replayed view is an object"),
    (r"^POST /v1/matches request\.application/json\.properties\.clock\.properties\.(seconds|base_s|increment_s|hours)"
     r"\.(minimum|maximum): added$", "the clock's bounds (clocks.parse enforces them) are in the schema"),
]


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return document()


def test_the_generated_document_is_valid_openapi_3_1(doc: dict[str, Any]) -> None:
    validate(doc)
    assert doc["openapi"] == "3.1.0"


def _url_map() -> set[tuple[str, str]]:
    from services.gateway.config import GatewayConfig

    from services.gateway.app import create_app

    app = create_app(GatewayConfig(redis_url="redis://127.0.0.1:1/0"))  # builds the URL map; connects to nothing
    out = set()
    for rule in app.url_map.iter_rules():
        if rule.rule in ASSET_RULES:
            continue
        path = re.sub(r"<(?:[a-z]+:)?(\w+)>", r"{\1}", rule.rule)
        out |= {(method, path) for method in (rule.methods or set()) - {"HEAD", "OPTIONS"}}
    return out


def test_every_route_of_the_flask_url_map_is_an_operation_of_the_document_and_nothing_else(
        doc: dict[str, Any]) -> None:
    documented = {(method.upper(), path) for path, item in doc["paths"].items() for method in item}
    served = _url_map()
    assert served - documented == set(), "routes the document does not describe"
    assert documented - served == set(), "operations no route serves"


def test_the_document_differs_from_the_hand_written_one_only_by_the_listed_fixes(doc: dict[str, Any]) -> None:
    from services.gateway.openapi import document as old_document

    found = differences(old_document(), doc)
    unexplained = [d for d in found if not any(re.search(pattern, d) for pattern, _ in FIXES)]
    assert unexplained == [], "\n".join(unexplained)
    unused = [reason for pattern, reason in FIXES if not any(re.search(pattern, d) for d in found)]
    assert unused == [], "fixes listed that no longer differ (drop them)"


def _security(doc: dict[str, Any], method: str, path: str) -> list[dict[str, list[str]]]:
    found: list[dict[str, list[str]]] = doc["paths"][path][method].get("security", [])
    return found


def test_every_match_route_lists_each_credential_that_works_there(doc: dict[str, Any]) -> None:
    schemes = doc["components"]["securitySchemes"]
    assert schemes["apiKey"] == {**schemes["apiKey"], "type": "apiKey", "in": "header", "name": "X-API-Key"}
    assert schemes["apiKeyBearer"]["scheme"] == schemes["seatToken"]["scheme"] == "bearer"
    for route in ROUTES:
        if not route.path.startswith("/v1/matches/"):
            continue
        listed = {name for req in _security(doc, route.method.lower(), route.path) for name in req}
        if route.auth is Auth.SEAT:
            assert listed == {"seatToken"}, route.operation_id
        else:  # reads take a seat token, the tenant's key either way, or nothing (anonymous access)
            assert {"apiKey", "apiKeyBearer"} <= listed, route.operation_id
            assert {} in _security(doc, route.method.lower(), route.path), route.operation_id


def test_public_routes_carry_no_lock_and_the_tenant_routes_need_the_key(doc: dict[str, Any]) -> None:
    for path in ("/healthz", "/readyz", "/metrics", "/v1/openapi.json", "/docs", "/play", "/v1/games",
                 "/v1/matchmaking/{ticket}"):
        for method, op in doc["paths"][path].items():
            assert "security" not in op, f"{method} {path}"
    assert _security(doc, "get", "/v1/webhooks") == [{"apiKey": []}, {"apiKeyBearer": []}]


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
            for status, response in op["responses"].items():
                if int(status) < 400:
                    continue
                for code in errors.codes_of(int(status)):
                    assert f"`{code}`" in response["description"], f"{method} {path} {status} {code}"
    limited = doc["paths"]["/v1/matches/{match_id}/moves"]["post"]["responses"]["429"]
    assert "`rate_limited`: `MEEPLE_RATE_LIMIT_PER_MINUTE`" in limited["description"]
    assert limited["headers"]["Retry-After"]


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
