"""Matches: create, join, status with the caller's view, legal moves, moves, replay, hint.

Thin: each view parses the request and calls the match core (``services/core``) with the request's caller.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from services.core import matches, moves

from ..context import caller, core
from .common import idempotency_key, json_body, malformed, wants_legal_moves

bp = Blueprint("matches", __name__)


@bp.post("/v1/matches")
def create_match() -> tuple[Response, int]:
    body = json_body({"game": str, "players": int, "options": dict, "seed": int, "seats": list, "join": bool,
                      "clock": dict, "takeover_level": str}, required=("game", "players"))
    return jsonify(matches.create(core(), caller(), **body, idempotency_key=idempotency_key())), 201


@bp.post("/v1/matches/<match_id>/join")
def join(match_id: str) -> tuple[Response, int]:
    body = json_body({"seat": int, "player": str})
    return jsonify(matches.join(core(), caller(), match_id, body.get("seat"), body.get("player"),
                                idempotency_key=idempotency_key())), 200


@bp.get("/v1/matches/<match_id>")
def get_match(match_id: str) -> Response:
    return jsonify(matches.status(core(), caller(), match_id, wants_legal_moves()))


@bp.get("/v1/matches/<match_id>/legal-moves")
def legal_moves(match_id: str) -> Response:
    return jsonify(matches.legal_moves(core(), caller(), match_id))


@bp.post("/v1/matches/<match_id>/moves")
def submit_move(match_id: str) -> Response:
    key, include_legal = idempotency_key(), wants_legal_moves()
    body = json_body({"move": dict, "version": int}, required=("move", "version"))
    return jsonify(moves.submit(core(), caller(), match_id, body["move"], body["version"], idempotency_key=key,
                                include_legal=include_legal))


@bp.get("/v1/matches/<match_id>/replay")
def replay(match_id: str) -> Response:
    include = request.args.get("include")
    if include not in (None, "views"):
        raise malformed("bad_parameter", "include takes: views")
    return jsonify(matches.replay(core(), caller(), match_id, include_views=include == "views"))


@bp.get("/v1/matches/<match_id>/hint")
def hint(match_id: str) -> Response:
    return jsonify(matches.hint(core(), caller(), match_id))
