"""For backends: what a tenant's API key reads — its matches and each of its players' matches, newest first,
its players' ratings, its webhooks (``services/core/backends.py`` decides; these views only parse)."""

from __future__ import annotations

import math

from flask import Blueprint, Response, jsonify, request

from services.core import backends

from ..context import caller, core
from .common import int_arg, json_body, malformed

bp = Blueprint("backends", __name__)


def _before() -> float | None:
    raw = request.args.get("before")
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise malformed("bad_parameter", "before must be a number (the `next` of the previous page)") from None
    if not math.isfinite(value) or value < 0:
        raise malformed("bad_parameter", "before must be a number >= 0 (the `next` of the previous page)")
    return value


def _page_limit() -> int:
    return int_arg("limit", backends.PAGE_DEFAULT, 1, backends.PAGE_MAX)


@bp.get("/v1/matches")
def tenant_matches() -> Response:
    """The tenant's matches, newest first (``limit``, then ``before=<next>`` for the next page)."""
    return jsonify(backends.matches(core(), caller(), None, _before(), _page_limit()))


@bp.get("/v1/players/<player>/matches")
def player_matches(player: str) -> Response:
    """The matches the tenant's ``player`` sat in, newest first."""
    return jsonify(backends.matches(core(), caller(), player, _before(), _page_limit()))


@bp.get("/v1/players/<player>/ratings")
def player_ratings(player: str) -> Response:
    """The tenant's player's rating in each game they played a rated match of (``?game=`` for one)."""
    return jsonify(backends.player_ratings(core(), caller(), player, request.args.get("game")))


@bp.post("/v1/webhooks")
def add_webhook() -> tuple[Response, int]:
    body = json_body({"url": str, "events": list}, required=("url", "events"))
    return jsonify(backends.add_webhook(core(), caller(), body["url"], body["events"])), 201


@bp.get("/v1/webhooks")
def list_webhooks() -> Response:
    return jsonify(backends.list_webhooks(core(), caller()))


@bp.delete("/v1/webhooks/<hook_id>")
def delete_webhook(hook_id: str) -> Response:
    return jsonify(backends.delete_webhook(core(), caller(), hook_id))


@bp.get("/v1/webhooks/dead-letters")
def dead_letters() -> Response:
    return jsonify(backends.dead_letters(core(), caller(), _page_limit()))


@bp.delete("/v1/webhooks/dead-letters")
def clear_dead_letters() -> Response:
    return jsonify(backends.clear_dead_letters(core(), caller()))
