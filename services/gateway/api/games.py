"""``GET /v1/games``: the catalogue, straight from the rules service."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from ..context import gateway
from .common import rate_limit

bp = Blueprint("games", __name__)


@bp.get("/v1/games")
def list_games() -> Response:
    rate_limit()
    return jsonify({"games": gateway().rules.list_games()})
