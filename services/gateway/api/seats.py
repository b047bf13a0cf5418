"""Seats that change hands: leave, resign, reclaim after a bot took over, and rematch with the same seats.

No match ever waits on someone who is gone: a human who leaves a running match hands the seat to a bot
for good; one whose clock runs out gets a bot until they reclaim the seat (``services/timekeeper``).
"""

from __future__ import annotations

from flask import Blueprint, Response

from services.contract import models as m
from services.core.match import rematcher, seater

from ..context import caller, core
from .common import answer, body, given, headers

bp = Blueprint("seats", __name__)


@bp.post("/v1/matches/<match_id>/leave")
def leave(match_id: str) -> Response:
    body(m.Empty)
    return answer(seater.leave(core(), caller(), match_id))


@bp.post("/v1/matches/<match_id>/resign")
def resign(match_id: str) -> Response:
    body(m.Empty)
    return answer(seater.resign(core(), caller(), match_id))


@bp.post("/v1/matches/<match_id>/seats/<int:seat>/reclaim")
def reclaim(match_id: str, seat: int) -> Response:
    body(m.Empty)
    return answer(seater.reclaim(core(), caller(), match_id, seat))


@bp.post("/v1/matches/<match_id>/rematch")
def rematch(match_id: str) -> Response:
    body(m.Empty)
    key = headers(m.IdempotencyHeaders).idempotency_key
    return answer(rematcher.rematch(core(), caller(), match_id, idempotency_key=given(key)))
