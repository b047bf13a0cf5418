"""Matches: create, join, status with the caller's view, legal moves, moves, replay, leave.

The gateway never interprets a game: the rules service validates and applies every move, and the
store's compare-and-set makes each update atomic.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

import orjson
from flask import Blueprint, Response, jsonify, request

from ..context import gateway
from ..errors import ApiError
from ..moves import MAX_REBASES, apply_move, notify_bots
from ..store import Match, StaleVersion, hash_token, new_token
from .common import caller_seat, json_body, limited_load, load_match, rate_limit

bp = Blueprint("matches", __name__)

BOT_LEVELS = ("easy", "normal", "hard")



def seats_public(match: Match) -> list[dict[str, Any]]:
    return [{"seat": i, "kind": s["kind"], "level": s.get("level"), "taken": bool(s.get("token_hash"))
             or s["kind"] == "bot"} for i, s in enumerate(match.meta["seats"])]


def status_doc(match: Match, seat: int | None, view: Any) -> dict[str, Any]:
    meta = match.meta
    return {"id": match.id, "game": meta["game"], "players": meta["players"], "options": meta["options"],
            "status": meta["status"], "version": match.version, "seats": seats_public(match),
            "to_act": meta["to_act"], "you": seat, "view": view, "result": meta.get("result")}


def parse_seats(raw: Any, players: int) -> list[dict[str, Any]]:
    if raw is None:
        return [{"kind": "human", "token_hash": None} for _ in range(players)]
    if len(raw) != players:
        raise ApiError(400, "bad_seats", f"seats must list exactly {players} seats")
    seats = []
    for i, seat in enumerate(raw):
        if not isinstance(seat, dict) or seat.get("kind") not in ("human", "bot"):
            raise ApiError(400, "bad_seats", f"seat {i}: kind must be 'human' or 'bot'")
        if set(seat) - {"kind", "level"}:
            raise ApiError(400, "bad_seats", f"seat {i}: only 'kind' and 'level' are allowed")
        if seat["kind"] == "bot":
            level = seat.get("level", "normal")
            if level not in BOT_LEVELS:
                raise ApiError(400, "bad_seats", f"seat {i}: level must be one of {', '.join(BOT_LEVELS)}")
            seats.append({"kind": "bot", "level": level, "token_hash": None})
        else:
            if "level" in seat:
                raise ApiError(400, "bad_seats", f"seat {i}: a human seat has no level")
            seats.append({"kind": "human", "token_hash": None})
    return seats


def all_seated(seats: list[dict[str, Any]]) -> bool:
    return all(s["kind"] == "bot" or s.get("token_hash") for s in seats)


@bp.post("/v1/matches")
def create_match() -> tuple[Response, int]:
    rate_limit()
    body = json_body({"game": str, "players": int, "options": dict, "seed": int, "seats": list, "join": bool},
                     required=("game", "players"))
    if not 0 <= body.get("seed", 0) < 2**63:
        raise ApiError(400, "wrong_type", "seed must be an integer from 0 to 2^63-1")
    if not 1 <= body["players"] <= 16:
        raise ApiError(400, "invalid_options", "players out of range")
    seats = parse_seats(body.get("seats"), body["players"])
    token = None
    if body.get("join"):
        if seats[0]["kind"] != "human":
            raise ApiError(400, "bad_seats", "join needs seat 0 to be a human seat")
        token = new_token()
        seats[0]["token_hash"] = hash_token(token)
    match = create(body["game"], body["players"], body.get("options", {}), body.get("seed"), seats)
    doc = status_doc(match, 0 if token else None, None)
    if token:
        doc["token"] = token
    return jsonify(doc), 201


def create(game_id: str, players: int, options: dict[str, Any], seed: int | None,
           seats: list[dict[str, Any]]) -> Match:
    """A new match in the store (the rules service sets it up); shared by create and matchmaking."""
    gw = gateway()
    seed = secrets.randbits(63) if seed is None else seed
    game = gw.rules.new_game(game_id, players, seed, options)
    meta = {"game": game_id, "players": players, "options": options, "seed": seed,
            "seats": seats, "seat_count": game.seats, "to_act": game.to_act,
            "status": "active" if all_seated(seats) else "waiting", "result": None}
    match = gw.store.create(meta, game.state)
    notify_bots(gateway().store, match)
    return match


@bp.post("/v1/matches/<match_id>/join")
def join(match_id: str) -> tuple[Response, int]:
    rate_limit()
    body = json_body({"seat": int})
    gw = gateway()
    for _ in range(MAX_REBASES):
        match = load_match(match_id)
        if match.meta["status"] not in ("waiting", "active"):
            raise ApiError(409, "match_closed", f"the match is {match.meta['status']}")
        seats = [dict(s) for s in match.meta["seats"]]
        free = [i for i, s in enumerate(seats) if s["kind"] == "human" and not s.get("token_hash")]
        if "seat" in body:
            if not 0 <= body["seat"] < len(seats):
                raise ApiError(400, "no_such_seat", f"seat {body['seat']} does not exist")
            if body["seat"] not in free:
                raise ApiError(409, "seat_taken", f"seat {body['seat']} is not free")
            seat = body["seat"]
        elif free:
            seat = free[0]
        else:
            raise ApiError(409, "match_full", "every seat is taken")
        token = new_token()
        seats[seat]["token_hash"] = hash_token(token)
        meta = {**match.meta, "seats": seats, "status": "active" if all_seated(seats) else "waiting"}
        try:
            match = gw.store.update(match, meta, None, {"kind": "joined", "seat": seat, "to_act": meta["to_act"]})
        except StaleVersion:
            continue
        notify_bots(gateway().store, match)
        return jsonify({**status_doc(match, seat, None), "seat": seat, "token": token}), 200
    raise ApiError(409, "busy", "the match changed too often; retry")


@bp.get("/v1/matches/<match_id>")
def get_match(match_id: str) -> Response:
    match, _ = limited_load(match_id)
    seat = caller_seat(match, required=False)
    view = gateway().rules.view(match.game, match.state, seat)
    return jsonify(status_doc(match, seat, view))


@bp.get("/v1/matches/<match_id>/legal-moves")
def legal_moves(match_id: str) -> Response:
    match, _ = limited_load(match_id)
    seat = caller_seat(match, required=True)
    assert seat is not None
    moves = [] if match.meta["status"] != "active" else gateway().rules.legal_moves(match.game, match.state, seat)
    return jsonify({"version": match.version, "seat": seat, "moves": moves})


@bp.post("/v1/matches/<match_id>/moves")
def submit_move(match_id: str) -> tuple[Response, int]:
    key = request.headers.get("Idempotency-Key")
    if key is not None and not 1 <= len(key) <= 128:
        raise ApiError(400, "bad_idempotency_key", "Idempotency-Key must be 1 to 128 characters")
    match, done = limited_load(match_id, key)  # one round trip: rate limit, match, earlier response
    seat = caller_seat(match, required=True)
    assert seat is not None
    body = json_body({"move": dict, "version": int}, required=("move", "version"))
    gw = gateway()
    fingerprint = hashlib.sha256(orjson.dumps([seat, body], option=orjson.OPT_SORT_KEYS)).hexdigest()
    if done is not None:
        if done["fingerprint"] != fingerprint:
            raise ApiError(422, "idempotency_key_reused", "that Idempotency-Key was used with another request")
        return jsonify(done["body"]), done["status"]
    try:
        updated, view = apply_move(gw.store, gw.rules, match, seat, body["move"], body["version"])
        doc = status_doc(updated, seat, view)
    except ApiError as err:
        gw.metrics.moves.labels(match.game, err.code).inc()
        if key is not None and err.status in (409, 422) and err.code != "stale_version":
            gw.store.idempotent_put(match_id, key, {"fingerprint": fingerprint, "status": err.status,
                                                    "body": {"error": {"code": err.code, "message": err.message}}})
        if key is not None and err.code == "stale_version":  # a concurrent twin may have won: replay it
            done = gw.store.idempotent_get(match_id, key)
            if done is not None and done["fingerprint"] == fingerprint:
                return jsonify(done["body"]), done["status"]
        raise
    gw.metrics.moves.labels(match.game, "applied").inc()
    if key is not None:
        gw.store.idempotent_put(match_id, key, {"fingerprint": fingerprint, "status": 200, "body": doc})
    return jsonify(doc), 200


@bp.get("/v1/matches/<match_id>/replay")
def replay(match_id: str) -> Response:
    """The move log. Before the end a seat sees only its own moves (others' may hide cards), and no seed."""
    rate_limit()
    match = load_match(match_id)
    seat = caller_seat(match, required=False)
    over = match.meta["status"] == "finished"
    entries = []
    for entry in gateway().store.log(match_id):
        item = {"version": entry["version"], "kind": entry["kind"], "seat": entry.get("seat")}
        if entry["kind"] == "move" and (over or entry.get("seat") == seat):
            item["move"] = entry["move"]
        entries.append(item)
    meta = match.meta
    return jsonify({"id": match.id, "game": meta["game"], "players": meta["players"], "options": meta["options"],
                    "seed": meta["seed"] if over else None, "status": meta["status"], "version": match.version,
                    "log": entries, "result": meta.get("result")})


@bp.post("/v1/matches/<match_id>/leave")
def leave(match_id: str) -> Response:
    """Leaving a waiting match frees the seat; leaving a running one abandons it (no bot takeover yet)."""
    rate_limit()
    json_body({})
    gw = gateway()
    for _ in range(MAX_REBASES):
        match = load_match(match_id)
        seat = caller_seat(match, required=True)
        assert seat is not None
        status = match.meta["status"]
        if status in ("finished", "abandoned"):
            raise ApiError(409, "match_closed", f"the match is {status}")
        seats = [dict(s) for s in match.meta["seats"]]
        seats[seat]["token_hash"] = None
        meta = {**match.meta, "seats": seats, "status": "waiting" if status == "waiting" else "abandoned"}
        try:
            match = gw.store.update(match, meta, None, {"kind": "left", "seat": seat, "to_act": meta["to_act"]})
        except StaleVersion:
            continue
        return jsonify(status_doc(match, None, None))
    raise ApiError(409, "busy", "the match changed too often; retry")


@bp.get("/v1/matches/<match_id>/hint")
def hint(match_id: str) -> Response:
    """The bot's suggestion for the caller's own seat (an ``easy`` search, so it answers quickly).

    The search determinizes from the caller's seat, so a hint can never reveal another seat's cards.
    """
    rate_limit()
    match = load_match(match_id)
    seat = caller_seat(match, required=True)
    assert seat is not None
    if match.meta["status"] != "active" or seat not in match.meta["to_act"]:
        raise ApiError(409, "not_your_turn", "there is no decision of yours to hint at")
    from ai.bot import choose_move  # the search runs here, beside the request, on the seat's information only
    from services.rules.games import get_game

    game = get_game(match.game)
    move = choose_move(game, game.decode(match.state), seat, level="easy", seed=match.version, seconds=0.5)
    return jsonify({"version": match.version, "seat": seat, "move": move})
