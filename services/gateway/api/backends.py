"""For backends: what a tenant's API key reads — its matches and each of its players' matches, newest first,
its players' ratings, its webhooks (``services/core/backends.py`` decides; these views only parse)."""

from __future__ import annotations

from flask import Blueprint, Response

from services.contract import models as m
from services.core import backends

from ..context import caller, core
from .common import answer, body, given, query

bp = Blueprint("backends", __name__)


@bp.get("/v1/matches")
def tenant_matches() -> Response:
    """The tenant's matches, newest first (``limit``, then ``before=<next>`` for the next page)."""
    page = query(m.PageQuery)
    return answer(backends.matches(core(), caller(), None, given(page.before), page.limit))


@bp.get("/v1/players/<player>/matches")
def player_matches(player: str) -> Response:
    """The matches the tenant's ``player`` sat in, newest first."""
    page = query(m.PageQuery)
    return answer(backends.matches(core(), caller(), player, given(page.before), page.limit))


@bp.get("/v1/players/<player>/ratings")
def player_ratings(player: str) -> Response:
    """The tenant's player's rating in each game they played a rated match of (``?game=`` for one)."""
    return answer(backends.player_ratings(core(), caller(), player, given(query(m.RatingsQuery).game)))


@bp.post("/v1/webhooks")
def add_webhook() -> Response:
    b = body(m.AddWebhook)
    return answer(backends.add_webhook(core(), caller(), b.url, list(b.events)))


@bp.get("/v1/webhooks")
def list_webhooks() -> Response:
    return answer(backends.list_webhooks(core(), caller()))


@bp.delete("/v1/webhooks/<hook_id>")
def delete_webhook(hook_id: str) -> Response:
    return answer(backends.delete_webhook(core(), caller(), hook_id))


@bp.get("/v1/webhooks/dead-letters")
def dead_letters() -> Response:
    return answer(backends.dead_letters(core(), caller(), query(m.DeadLettersQuery).limit))


@bp.delete("/v1/webhooks/dead-letters")
def clear_dead_letters() -> Response:
    return answer(backends.clear_dead_letters(core(), caller()))
