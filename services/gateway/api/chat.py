"""Chat: post a message to a match (a seat, or a spectator where the match allows it), and redact one (the match's
tenant). Thin: the match core (``speaker.post_chat``, ``services.core.match.chat``) decides, stores and wakes every
reader; the events views (long-poll, SSE) and the WebSocket deliver."""

from __future__ import annotations

from flask import Blueprint, Response

from services.contract import models as m
from services.core.match import speaker

from ..context import caller, core
from .common import answer, body, given

bp = Blueprint("chat", __name__)


@bp.post("/v1/matches/<match_id>/chat")
def post_chat(match_id: str) -> Response:
    b = body(m.PostChat)
    return answer(speaker.post_chat(core(), caller(), match_id, text=given(b.text), preset=given(b.preset)))


@bp.delete("/v1/matches/<match_id>/chat/<int:message_id>")
def redact_chat(match_id: str, message_id: int) -> Response:
    speaker.redact_chat(core(), caller(), match_id, message_id)
    return Response(status=204)
