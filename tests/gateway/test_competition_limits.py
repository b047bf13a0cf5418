"""Every bound docs/api.md lists for the leaderboard and tournament routes (generated from the contract) is one the
server holds: a value just past each is refused with 400 and the field's code, over real HTTP and Redis, and the
value at the bound is taken. The bounds are read from the served OpenAPI document, so a bound added to the contract
is tested here without a new line.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from services.contract import limits as L

from .conftest import OPENAPI, Api
from .test_backends import as_key, new_key

GAME = "clash"


def _schema(ref_or_schema: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in ref_or_schema:
        return dict(OPENAPI["components"]["schemas"][ref_or_schema["$ref"].rsplit("/", 1)[1]])
    return ref_or_schema


def _numbers(schema: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """(field path, schema) of every bounded number of a body, nested objects included (the clock's are the
    match clock's, tested with matches)."""
    out = []
    for name, sub in _schema(schema).get("properties", {}).items():
        sub = _schema(sub)
        if sub.get("type") == "object" and "properties" in sub:
            if name != "clock":
                out += _numbers(sub, (*prefix, name))
        elif sub.get("type") in ("integer", "number") and ("minimum" in sub or "exclusiveMinimum" in sub):
            out.append(((*prefix, name), sub))
    return out


def _with(body: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    if len(path) == 1:
        return {**body, path[0]: value}
    return {**body, path[0]: _with(body.get(path[0], {}), path[1:], value)}


def _past(schema: dict[str, Any]) -> list[float]:
    """Values just outside the field's bounds."""
    step = 1 if schema["type"] == "integer" else 0.5
    out = []
    if "minimum" in schema:
        out.append(schema["minimum"] - step)
    if "exclusiveMinimum" in schema:
        out.append(schema["exclusiveMinimum"])
    if "maximum" in schema and schema["maximum"] < 2**53:
        out.append(schema["maximum"] + step)
    if "exclusiveMaximum" in schema:
        out.append(schema["exclusiveMaximum"])
    return out


def _tournament(kind: str) -> dict[str, Any]:
    fmt = {"kind": "swiss", "rounds": 2, "round_s": 600} if kind == "swiss" else {
        "kind": "arena", "duration_s": 600, "grace_s": 0, "bot_after_s": 60}
    return {"name": "limits", "game": GAME, "players_per_table": 2, "clock": {"mode": "per_move", "seconds": 60},
            "starts_at": time.time() + 3600, "format": fmt}


def _season(name: str) -> dict[str, Any]:
    return {"name": name, "starts_at": 3e9, "ends_at": 3.1e9, "policy": "decay", "decay": 0.5}


@pytest.fixture()
def key(api: Api, redis_url: str) -> dict[str, str]:
    return as_key(new_key(redis_url, f"limits-{time.monotonic_ns()}")["key"])


def test_every_bounded_number_of_a_tournament_or_season_body_is_refused_just_past_its_bound(
        api: Api, key: dict[str, str]) -> None:
    cases = [("POST", "/v1/tournaments", "CreateTournament", _tournament(kind)) for kind in ("swiss", "arena")]
    cases += [("POST", f"/v1/leaderboards/{GAME}/seasons", "CreateSeason", _season("s1")),
              ("PUT", f"/v1/leaderboards/{GAME}/settings", "BoardSettingsBody", {"min_matches": 0})]
    tried = set()
    for method, path, model, body in cases:
        assert api.call(method, path, headers=key, json=body).status_code in (200, 201)  # the valid body is taken
        fields = [(f, s) for f, s in _numbers({"$ref": f"#/x/{model}"})
                  if f[0] != "format" or f[-1] in body["format"]]
        for field, schema in fields:
            for value in _past(schema):
                reply = api.call(method, path, headers=key, json=_with(body, field, value))
                assert reply.status_code == 400, (path, field, value, reply.text)
                tried.add(".".join(field))
    assert {"players_per_table", "max_players", "format.rounds", "format.round_s", "format.duration_s",
            "format.grace_s", "format.bot_after_s", "decay", "min_matches"} <= tried


def test_the_bounds_of_strings_and_of_starts_at_are_held(api: Api, key: dict[str, str]) -> None:
    body = _tournament("swiss")
    for bad in ({"name": ""}, {"name": "x" * (L.TOURNAMENT_NAME_MAX + 1)},
                {"starts_at": time.time() - L.TOURNAMENT_STARTS_PAST_S - 60},
                {"starts_at": time.time() + L.TOURNAMENT_STARTS_AHEAD_S + 60},
                {"format": {"kind": "swiss", "rounds": 2, "duration_s": 600}}):
        reply = api.post("/v1/tournaments", headers=key, json={**body, **bad})
        assert reply.status_code == 400 and reply.json()["error"]["code"] == "bad_tournament", (bad, reply.text)
    made = api.post("/v1/tournaments", headers=key, json={**body, "name": "x" * L.TOURNAMENT_NAME_MAX})
    assert made.status_code == 201, made.text
    tid = made.json()["id"]
    too_long = "p" * (L.PLAYER_ID_MAX + 1)
    assert api.post(f"/v1/tournaments/{tid}/players", headers=key, json={"player": too_long}).status_code == 400
    assert api.get(f"/v1/tournaments/{tid}/players/{too_long}", headers=key).status_code == 400
    for name in ("", "x" * (L.SEASON_NAME_MAX + 1), "-lead", "all", "current"):
        reply = api.post(f"/v1/leaderboards/{GAME}/seasons", headers=key, json=_season(name))
        assert reply.status_code == 400 and reply.json()["error"]["code"] == "bad_season", (name, reply.text)


def test_every_bounded_query_parameter_is_refused_just_past_its_bound(api: Api, key: dict[str, str]) -> None:
    api.post(f"/v1/leaderboards/{GAME}/seasons", headers=key, json=_season("s2"))
    # a tournament of the key's (a malformed request about one the caller may not see is that refusal: 404)
    made = api.post("/v1/tournaments", headers=key, json=_tournament("swiss"))
    assert made.status_code == 201, made.text
    tried = []
    for path, item in OPENAPI["paths"].items():
        if not path.startswith(("/v1/leaderboards", "/v1/tournaments")) or "get" not in item:
            continue
        url = path.replace("{game}", GAME).replace("{player}", "ann").replace("{tournament_id}", made.json()["id"])
        for param in item["get"].get("parameters", []):
            if param["in"] != "query" or param["schema"].get("type") not in ("integer", "number"):
                continue
            for value in _past(param["schema"]):
                reply = api.get(url, headers=key, params={param["name"]: value})
                assert reply.status_code == 400 and reply.json()["error"]["code"] == "bad_parameter", (
                    url, param["name"], value, reply.text)
                tried.append((path, param["name"]))
    assert {n for _, n in tried} == {"limit", "offset", "span", "before", "after"}
    # at the bounds: taken
    top = api.get(f"/v1/leaderboards/{GAME}", headers=key, params={"limit": L.BOARD_LIMIT_MAX,
                                                                   "offset": L.BOARD_OFFSET_MAX})
    assert top.status_code == 200 and top.json()["entries"] == []
