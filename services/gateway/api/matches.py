"""Matches: create, join, status with the caller's view, legal moves, moves (and a move that waits for the next
turn), replay, hint.

Thin: each view parses the request with the contract's models, calls the match core (``services/core``) with
the request's caller, and answers through the route's response model.
"""

from __future__ import annotations

import time

from flask import Blueprint, Response

from services.contract import models as m
from services.core.errors import DomainError
from services.core.match import creator, hinter, moves, opener, replayer, seater
from services.core.match.events import match_topic

from ..context import caller, core, gateway
from ..parking import resumed, wait_or_park
from .common import answer, body, given, headers, plain, query, wait_s
from .events import waiter_ident

bp = Blueprint("matches", __name__)


@bp.post("/v1/matches")
def create_match() -> Response:
    b, key = body(m.CreateMatch), headers(m.IdempotencyHeaders).idempotency_key
    return answer(creator.create(core(), caller(), game=b.game, players=b.players, options=b.options,
                                 seed=given(b.seed), seats=plain(b.seats), join=b.join, clock=plain(b.clock),
                                 takeover_level=b.takeover_level, idempotency_key=given(key),
                                 spectator_chat=b.spectator_chat))


@bp.post("/v1/matches/<match_id>/join")
def join(match_id: str) -> Response:
    b, key = body(m.JoinMatch), headers(m.IdempotencyHeaders).idempotency_key
    return answer(seater.join(core(), caller(), match_id, given(b.seat), given(b.player),
                               idempotency_key=given(key)))


@bp.get("/v1/matches/<match_id>")
def get_match(match_id: str) -> Response:
    include = query(m.IncludeQuery).include
    return answer(opener.status(core(), caller(), match_id, include == "legal_moves"))


@bp.get("/v1/matches/<match_id>/legal-moves")
def legal_moves(match_id: str) -> Response:
    return answer(opener.legal_moves(core(), caller(), match_id))


@bp.post("/v1/matches/<match_id>/moves")
def submit_move(match_id: str) -> Response:
    """A move; with ``wait``, the answer waits for the caller's next turn as a long-poll ``until=turn`` does:
    parked, then this view runs again, and reads (the move is not submitted twice)."""
    asked, who = query(m.MoveQuery), caller()
    include, wait = asked.include == "legal_moves", wait_s(asked.wait)
    again = resumed()
    if again is None:
        key, b = headers(m.IdempotencyHeaders).idempotency_key, body(m.SubmitMove)
        doc = moves.submit(core(), who, match_id, b.move, b.version, idempotency_key=given(key),
                           include_legal=include, connected_for=wait)
        if not wait or moves.must_act_or_over(doc):
            return answer({**doc, "events": []} if wait else doc)
        moved, seat, deadline = doc["version"], doc["you"], time.monotonic() + wait
    else:  # woken (the seat's turn, or the match is over) or at the deadline
        moved, seat, deadline = again.state["moved"], again.seat, again.deadline
        doc = moves.after_move(core(), who, match_id, moved, include)
        if moves.must_act_or_over(doc) or again.remaining() <= 0.01:
            return answer(doc)
    try:
        parked = wait_or_park(gateway().hub, None, "poll", waiter_ident(who), match_topic(match_id), doc["version"],
                              seat, deadline, {"moved": moved})
    except DomainError as refused:
        if again is None and refused.code == "too_many_waiters":
            return answer({**doc, "events": []})  # the move is applied: it answers at once instead of failing
        raise
    if parked:
        return Response(status=204)  # never sent: the worker holds the connection until a wake-up
    return answer(moves.after_move(core(), who, match_id, moved, include))


@bp.get("/v1/matches/<match_id>/replay")
def replay(match_id: str) -> Response:
    include = query(m.ReplayQuery).include
    return answer(replayer.replay(core(), caller(), match_id, include_views=include == "views"))


@bp.get("/v1/matches/<match_id>/hint")
def hint(match_id: str) -> Response:
    return answer(hinter.hint(core(), caller(), match_id))
