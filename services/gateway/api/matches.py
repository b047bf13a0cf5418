"""Matches: create, join, status with the caller's view, legal moves, moves, replay, hint.

Thin: each view parses the request with the contract's models, calls the match core (``services/core``) with
the request's caller, and answers through the route's response model.
"""

from __future__ import annotations

from flask import Blueprint, Response

from services.contract import models as m
from services.core import matches, moves

from ..context import caller, core
from .common import answer, body, given, headers, plain, query

bp = Blueprint("matches", __name__)


@bp.post("/v1/matches")
def create_match() -> Response:
    b, key = body(m.CreateMatch), headers(m.IdempotencyHeaders).idempotency_key
    return answer(matches.create(core(), caller(), game=b.game, players=b.players, options=b.options,
                                 seed=given(b.seed), seats=plain(b.seats), join=b.join, clock=plain(b.clock),
                                 takeover_level=b.takeover_level, idempotency_key=given(key)))


@bp.post("/v1/matches/<match_id>/join")
def join(match_id: str) -> Response:
    b, key = body(m.JoinMatch), headers(m.IdempotencyHeaders).idempotency_key
    return answer(matches.join(core(), caller(), match_id, given(b.seat), given(b.player),
                               idempotency_key=given(key)))


@bp.get("/v1/matches/<match_id>")
def get_match(match_id: str) -> Response:
    include = query(m.IncludeQuery).include
    return answer(matches.status(core(), caller(), match_id, include == "legal_moves"))


@bp.get("/v1/matches/<match_id>/legal-moves")
def legal_moves(match_id: str) -> Response:
    return answer(matches.legal_moves(core(), caller(), match_id))


@bp.post("/v1/matches/<match_id>/moves")
def submit_move(match_id: str) -> Response:
    key, include = headers(m.IdempotencyHeaders).idempotency_key, query(m.IncludeQuery).include
    b = body(m.SubmitMove)
    return answer(moves.submit(core(), caller(), match_id, b.move, b.version, idempotency_key=given(key),
                               include_legal=include == "legal_moves"))


@bp.get("/v1/matches/<match_id>/replay")
def replay(match_id: str) -> Response:
    include = query(m.ReplayQuery).include
    return answer(matches.replay(core(), caller(), match_id, include_views=include == "views"))


@bp.get("/v1/matches/<match_id>/hint")
def hint(match_id: str) -> Response:
    return answer(matches.hint(core(), caller(), match_id))
