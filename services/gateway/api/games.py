"""``GET /v1/games``: the catalogue, straight from the rules service (public: no credential needed)."""

from __future__ import annotations

from flask import Blueprint, Response

from services.core import limits

from ..context import caller, core
from .common import answer

bp = Blueprint("games", __name__)


@bp.get("/v1/games")
def list_games() -> Response:
    the_core = core()
    limits.count_request(the_core, caller())
    return answer({"games": the_core.rules.list_games()})
