"""The contract's cost per request: pydantic v2 against msgspec on the API's real bodies and documents.

    .venv/bin/python scripts/bench_contract.py [--rounds 15] [--seconds 0.2] [--json]

Requests (bytes as clients send them): create match (seats, clock, options), a real CLASH move, join,
matchmaking; each validated into its model (unknown fields refused, the nesting bound checked) by
* ``today``: ``orjson.loads`` + the checks ``json_body`` did by hand (services/gateway/api/common.py),
* ``msgspec``: ``services.contract.validation.parse`` with the contract's own models,
* ``pydantic``: ``model_validate_json`` on twin models (strict, ``extra="forbid"``), the same nesting check.
Responses: the status document a move answers (a real CLASH view and legal moves, read from Redis as JSON
bytes) and an events document, built and serialised by
* ``today``: a dict with ``orjson.Fragment`` for the stored JSON, ``orjson.dumps``,
* ``msgspec``: the contract's ``Match``/``Events`` with the stored JSON as ``msgspec.Raw``, ``dump``,
* ``gateway``: what the gateway does since phase 2: the core's dict (its ``orjson.Fragment``s included) through
  ``validation.answer(model, doc)`` (``msgspec.convert`` into the model, then the encoder),
* ``pydantic``: twin models; pydantic has no raw-JSON type, so the stored view is decoded and validated
  (``validated``), or the model is built unvalidated with ``model_construct`` and dumped to a dict that orjson
  serialises with the fragments (``construct``).
The move view (``move view``): parsing a move request (its Idempotency-Key header, ``include`` and body) and
answering the core's status document, inside a Flask request context, as the gateway at 0a5fd17 did it
(``today``: ``json_body``'s checks, ``jsonify`` through orjson) and as it does now (``gateway``: ``headers``,
``query``, ``body`` and ``answer`` of ``services/gateway/api/common.py``).
Each figure is the median over ``--rounds`` rounds (variants interleaved within a round) of the mean time per
call; compare ratios within one run (absolute times drift on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from services.contract import models as m
from services.contract.limits import MAX_JSON_DEPTH, PLAYER_ID_PATTERN
from services.contract.validation import answer, dump, json_depth_exceeds, parse
from services.rules.games import get_game


# -- the pydantic twins of the contract's models ------------------------------------------------------------
class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class PSeatSpec(_In):
    kind: Literal["human", "bot"]
    level: Literal["novice", "easy", "casual", "normal", "strong", "hard"] | None = None
    player: str | None = Field(default=None, min_length=1, max_length=64, pattern=PLAYER_ID_PATTERN)


class PClockSpec(_In):
    mode: Literal["none", "per_move", "fischer", "correspondence"] = "none"
    on_timeout: Literal["bot", "forfeit"] = "bot"
    seconds: float | None = Field(default=None, ge=0.5, le=2592000)
    base_s: float | None = Field(default=None, ge=0.5, le=2592000)
    increment_s: float | None = Field(default=None, ge=0, le=2592000)
    hours: float | None = Field(default=None, ge=0.5 / 3600, le=720)


class PCreateMatch(_In):
    game: str
    players: int = Field(ge=1, le=16)
    options: dict[str, Any] = {}
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1)
    seats: list[PSeatSpec] | None = Field(default=None, max_length=16)
    join: bool = False
    clock: PClockSpec | None = None
    takeover_level: Literal["novice", "easy", "casual", "normal", "strong", "hard"] = "normal"


class PJoinMatch(_In):
    seat: int | None = Field(default=None, ge=0)
    player: str | None = Field(default=None, min_length=1, max_length=64, pattern=PLAYER_ID_PATTERN)


class PSubmitMove(_In):
    move: dict[str, Any]
    version: int = Field(ge=0)


class PEnqueue(_In):
    game: str
    players: int = Field(ge=1, le=16)
    options: dict[str, Any] = {}
    player: str | None = Field(default=None, min_length=1, max_length=64, pattern=PLAYER_ID_PATTERN)


class PSeat(BaseModel):
    seat: int
    kind: Literal["human", "bot"]
    level: str | None
    taken: bool
    control: Literal["human", "bot"]
    connected: bool
    forfeited: bool
    left: bool


class PClockSeat(BaseModel):
    seat: int
    running: bool
    remaining_s: float | None
    deadline: float | None


class PClock(BaseModel):
    mode: str
    on_timeout: str
    base_s: float | None = None
    increment_s: float | None = None
    seats: list[PClockSeat]


class PMatch(BaseModel):
    id: str
    game: str
    players: int
    options: dict[str, Any]
    status: Literal["waiting", "active", "finished"]
    version: int
    seats: list[PSeat]
    to_act: list[int]
    you: int | None
    view: Any
    result: Any
    outcome: Any
    clock: PClock | None
    takeover_level: str
    rematch: str | None
    legal_moves: Any = None


class PEvent(BaseModel):
    version: int
    kind: str
    seat: int | None
    to_act: list[int]
    by: str | None = None
    move: dict[str, Any] | None = None


class PEvents(BaseModel):
    version: int
    status: str
    to_act: list[int]
    events: list[PEvent]
    view: Any
    result: Any
    legal_moves: Any = None


# -- today's hand-written check (services/gateway/api/common.py json_body, without Flask) -------------------
def today_body(raw: bytes, allowed: Mapping[str, type | tuple[type, ...]], required: tuple[str, ...]) -> dict[str, Any]:
    body = orjson.loads(raw) if raw else {}
    if not isinstance(body, dict) or json_depth_exceeds(body, MAX_JSON_DEPTH):
        raise ValueError("malformed")
    if set(body) - set(allowed) or any(name not in body for name in required):
        raise ValueError("fields")
    for name, value in list(body.items()):
        spec = allowed[name]
        kinds = spec if isinstance(spec, tuple) else (spec,)
        if isinstance(value, bool) and bool not in kinds:
            raise ValueError("type")
        if isinstance(value, float) and int in kinds and value.is_integer():
            body[name] = int(value)
        elif not isinstance(value, kinds):
            raise ValueError("type")
    return body


def pydantic_body(model: type[BaseModel], raw: bytes, free: tuple[str, ...]) -> BaseModel:
    body = model.model_validate_json(raw)
    for name in free:
        if json_depth_exceeds(getattr(body, name), MAX_JSON_DEPTH - 1):
            raise ValueError("too deep")
    return body


# -- real documents -----------------------------------------------------------------------------------------
def real_clash(moves: int = 12, seed: int = 7) -> tuple[bytes, bytes, dict[str, Any], int]:
    """A CLASH match after ``moves`` random moves: the seat to act's view and legal moves as JSON bytes (as the
    store holds them), one of its legal moves, and that seat."""
    game = get_game("clash")
    state = game.new_game(2, seed, {"match": "single"})
    rng = random.Random(1)
    for _ in range(moves):
        seat = game.to_act(state)[0]
        state = game.apply(state, seat, rng.choice(game.legal_moves(state, seat)))
    seat = game.to_act(state)[0]
    legal = game.legal_moves(state, seat)
    return orjson.dumps(game.view(state, seat)), orjson.dumps(legal), legal[0], seat


def status_fields(seat: int) -> dict[str, Any]:
    now = time.time()
    return {"id": "Qx3fT0aB9c", "game": "clash", "players": 2, "options": {"match": "single"}, "status": "active",
            "version": 14, "seats": [{"seat": i, "kind": k, "level": lv, "taken": True, "control": k,
                                      "connected": k == "human", "forfeited": False, "left": False}
                                     for i, (k, lv) in enumerate((("human", None), ("bot", "normal")))],
            "to_act": [seat], "you": seat, "result": None, "outcome": None,
            "clock": {"mode": "fischer", "on_timeout": "bot", "base_s": 300.0, "increment_s": 5.0,
                      "seats": [{"seat": 0, "running": True, "remaining_s": 287.113, "deadline": now + 287.1},
                                {"seat": 1, "running": False, "remaining_s": 301.5, "deadline": None}]},
            "takeover_level": "normal", "rematch": None}


def events_list(move: dict[str, Any], seat: int) -> list[dict[str, Any]]:
    return [{"version": 13, "kind": "move", "seat": 1 - seat, "to_act": [seat], "by": "bot"},
            {"version": 14, "kind": "move", "seat": seat, "to_act": [1 - seat], "by": "human", "move": move}]


def build_cases() -> dict[str, dict[str, Callable[[], Any]]]:
    view, legal, move, seat = real_clash()
    move_raw = orjson.dumps({"move": move, "version": 14})
    create_raw = orjson.dumps({"game": "clash", "players": 2, "options": {"match": "single"}, "join": True,
                               "seats": [{"kind": "human"}, {"kind": "bot", "level": "normal"}],
                               "clock": {"mode": "fischer", "base_s": 300, "increment_s": 5, "on_timeout": "bot"},
                               "takeover_level": "normal"})
    join_raw = b'{"seat": 1}'
    mm_raw = orjson.dumps({"game": "clash", "players": 2, "options": {"match": "single"}})
    create_spec = {"game": str, "players": int, "options": dict, "seed": int, "seats": list, "join": bool,
                   "clock": dict, "takeover_level": str}
    fields = status_fields(seat)
    events = events_list(move, seat)
    nonstr = orjson.OPT_NON_STR_KEYS

    def today_status() -> bytes:  # status_doc(): the seats and the clock built as dicts, as the view builds them
        f = fields
        doc = {**f, "seats": [dict(s) for s in f["seats"]],
               "clock": {**f["clock"], "seats": [dict(s) for s in f["clock"]["seats"]]},
               "view": orjson.Fragment(view), "legal_moves": orjson.Fragment(legal)}
        return orjson.dumps(doc, option=nonstr)

    def gateway_status() -> bytes:  # the core's dict (status_doc), answered through the route's model
        f = fields
        doc = {**f, "seats": [dict(s) for s in f["seats"]],
               "clock": {**f["clock"], "seats": [dict(s) for s in f["clock"]["seats"]]},
               "view": orjson.Fragment(view), "legal_moves": orjson.Fragment(legal)}
        return answer(m.Match, doc)

    def msgspec_status() -> bytes:
        f = fields
        doc = m.Match(id=f["id"], game=f["game"], players=f["players"], options=f["options"], status=f["status"],
                      version=f["version"], seats=[m.Seat(**s) for s in f["seats"]], to_act=f["to_act"], you=f["you"],
                      view=m.fragment(view), result=None, outcome=None,
                      clock=m.Clock(mode="fischer", on_timeout="bot", base_s=300.0, increment_s=5.0,
                                    seats=[m.ClockSeat(**s) for s in f["clock"]["seats"]]),
                      takeover_level="normal", rematch=None, legal_moves=m.fragment(legal))
        return dump(doc)

    def pydantic_status_validated() -> bytes:
        doc = PMatch(**fields, view=orjson.loads(view), legal_moves=orjson.loads(legal))
        return doc.model_dump_json(exclude_unset=True).encode()

    def pydantic_status_construct() -> bytes:
        f = fields
        doc = PMatch.model_construct(
            **{**f, "seats": [PSeat.model_construct(**s) for s in f["seats"]],
               "clock": PClock.model_construct(**{**f["clock"], "seats": [PClockSeat.model_construct(**s)
                                                                          for s in f["clock"]["seats"]]})},
            view=orjson.Fragment(view), legal_moves=orjson.Fragment(legal))
        return orjson.dumps(doc.model_dump(exclude_unset=True), option=nonstr)

    def today_events() -> bytes:
        return orjson.dumps({"version": 14, "status": "active", "to_act": [1 - seat],
                             "events": [dict(e) for e in events],
                             "view": orjson.Fragment(view), "result": None}, option=nonstr)

    def gateway_events() -> bytes:
        return answer(m.Events, {"version": 14, "status": "active", "to_act": [1 - seat],
                                 "events": [dict(e) for e in events], "view": orjson.Fragment(view), "result": None})

    def msgspec_events() -> bytes:
        return dump(m.Events(version=14, status="active", to_act=[1 - seat], events=[m.Event(**e) for e in events],
                             view=m.fragment(view), result=None))

    def pydantic_events_validated() -> bytes:
        return PEvents(version=14, status="active", to_act=[1 - seat], events=events,  # type: ignore[arg-type]
                       view=orjson.loads(view),
                       result=None).model_dump_json(exclude_unset=True).encode()

    def pydantic_events_construct() -> bytes:
        doc = PEvents.model_construct(version=14, status="active", to_act=[1 - seat],
                                      events=[PEvent.model_construct(**e) for e in events],
                                      view=orjson.Fragment(view), result=None)
        return orjson.dumps(doc.model_dump(exclude_unset=True), option=nonstr)

    today_view, gateway_view = move_views(move_raw, fields, view, legal)

    # Every variant must say the same thing: the documents are equal once decoded.
    for a, b in ((today_status, msgspec_status), (today_status, pydantic_status_validated),
                 (today_status, gateway_status), (today_events, gateway_events), (today_view, gateway_view),
                 (today_events, msgspec_events), (today_events, pydantic_events_validated)):
        assert orjson.loads(a()) == orjson.loads(b()), (a.__name__, b.__name__)
    assert parse(m.SubmitMove, move_raw).move == move == PSubmitMove.model_validate_json(move_raw).move

    return {
        "create match (request)": {
            "today": lambda: today_body(create_raw, create_spec, ("game", "players")),
            "msgspec": lambda: parse(m.CreateMatch, create_raw),
            "pydantic": lambda: pydantic_body(PCreateMatch, create_raw, ("options",))},
        "move (request)": {
            "today": lambda: today_body(move_raw, {"move": dict, "version": int}, ("move", "version")),
            "msgspec": lambda: parse(m.SubmitMove, move_raw),
            "pydantic": lambda: pydantic_body(PSubmitMove, move_raw, ("move",))},
        "join (request)": {
            "today": lambda: today_body(join_raw, {"seat": int, "player": str}, ()),
            "msgspec": lambda: parse(m.JoinMatch, join_raw),
            "pydantic": lambda: pydantic_body(PJoinMatch, join_raw, ())},
        "matchmaking (request)": {
            "today": lambda: today_body(mm_raw, {"game": str, "players": int, "options": dict, "player": str},
                                        ("game", "players")),
            "msgspec": lambda: parse(m.Enqueue, mm_raw),
            "pydantic": lambda: pydantic_body(PEnqueue, mm_raw, ("options",))},
        f"status document with view and legal moves ({len(view) + len(legal)} B of stored JSON)": {
            "today": today_status, "msgspec": msgspec_status, "gateway": gateway_status,
            "pydantic validated": pydantic_status_validated, "pydantic construct": pydantic_status_construct},
        "move view (request context: parse the request, answer the status document)": {
            "today": today_view, "gateway": gateway_view},
        "events document with view": {
            "today": today_events, "msgspec": msgspec_events, "gateway": gateway_events,
            "pydantic validated": pydantic_events_validated, "pydantic construct": pydantic_events_construct},
    }


def move_views(move_raw: bytes, fields: dict[str, Any], view: bytes, legal: bytes
               ) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """The move view's own work before (0a5fd17: ``json_body`` + ``jsonify``) and now (the contract's models),
    in one pushed request context of the real app (no Redis is reached)."""
    from flask import jsonify, request

    from services.core.config import Config
    from services.gateway.api.common import answer as answer_view
    from services.gateway.api.common import body, headers, query
    from services.gateway.app import create_app

    app = create_app(Config(redis_url="redis://127.0.0.1:1/0"))
    ctx = app.test_request_context(
        "/v1/matches/Qx3fT0aB9c/moves?include=legal_moves", method="POST", data=move_raw,
        headers={"Authorization": "Bearer 0.abcdefghijklmnopqrstuvwxyz", "Idempotency-Key": "7f1c-8",
                 "Content-Type": "application/json", "Accept": "*/*", "User-Agent": "python-httpx/0.28"})
    ctx.push()  # for the whole run
    request.url_rule = app.url_map._rules_by_endpoint["matches.submit_move"][0]

    def core_doc() -> dict[str, Any]:
        return {**fields, "seats": [dict(s) for s in fields["seats"]],
                "clock": {**fields["clock"], "seats": [dict(s) for s in fields["clock"]["seats"]]},
                "view": orjson.Fragment(view), "legal_moves": orjson.Fragment(legal)}

    def today() -> bytes:
        key = request.headers.get("Idempotency-Key")
        if key is not None and not 1 <= len(key) <= 128:
            raise ValueError("bad_idempotency_key")
        include = request.args.get("include", "")
        parts = {part.strip() for part in include.split(",") if part.strip()}
        if parts - {"legal_moves"}:
            raise ValueError("bad_parameter")
        raw = request.get_data(cache=True)
        if len(raw) > app.extensions["meeple"].config.max_body_bytes or request.mimetype != "application/json":
            raise ValueError("413/415")
        today_body(raw, {"move": dict, "version": int}, ("move", "version"))
        return bytes(jsonify(core_doc()).get_data())

    def gateway() -> bytes:
        headers(m.IdempotencyHeaders)
        query(m.IncludeQuery)
        body(m.SubmitMove)
        return bytes(answer_view(core_doc()).get_data())

    return today, gateway


def measure(fn: Callable[[], Any], seconds: float) -> float:
    """Mean µs per call over about ``seconds`` (calibrated batch)."""
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        took = time.perf_counter() - start
        if took >= seconds / 4:
            break
        n *= 2
    batch = max(1, int(n * seconds / max(took, 1e-9)))
    start = time.perf_counter()
    for _ in range(batch):
        fn()
    return (time.perf_counter() - start) / batch * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--seconds", type=float, default=0.2, help="per variant per round")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cases = build_cases()
    results: dict[str, dict[str, float]] = {}
    samples: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for case, variants in cases.items():
            for name, fn in variants.items():
                samples.setdefault((case, name), []).append(measure(fn, args.seconds))
    for (case, name), values in samples.items():
        results.setdefault(case, {})[name] = round(statistics.median(values), 3)
    move_case = "move (request)"
    status_case = next(c for c in results if c.startswith("status document"))
    per_move = {
        "today": results[move_case]["today"] + results[status_case]["today"],
        "msgspec": results[move_case]["msgspec"] + results[status_case]["msgspec"],
        "gateway": results[move_case]["msgspec"] + results[status_case]["gateway"],
        "pydantic validated": results[move_case]["pydantic"] + results[status_case]["pydantic validated"],
        "pydantic construct": results[move_case]["pydantic"] + results[status_case]["pydantic construct"]}
    per_move = {name: round(us, 3) for name, us in per_move.items()}
    if args.json:
        print(json.dumps({"us_per_call": results, "per_move_us": per_move, "rounds": args.rounds}, indent=2))
        return
    for case, figures in results.items():
        base = figures["today"]
        print(case)
        for name, us in figures.items():
            print(f"  {name:<20} {us:9.2f} µs   {us / base:5.2f}x today")
    print("per move (validate the move + serialise the status document it answers), of a 2.0 ms gateway budget:")
    for name, us in per_move.items():
        print(f"  {name:<20} {us:9.2f} µs   {us / 2000 * 100:5.2f}% of 2.0 ms")


if __name__ == "__main__":
    main()
