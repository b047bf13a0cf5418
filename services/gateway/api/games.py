"""``GET /v1/games``: the catalogue, straight from the rules service; ``GET /v1/games/{game}``: one game with its
components (every card, tile, god and goal with its name, colours and rules text), cacheable."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
from flask import Blueprint, Response, jsonify, request

from ..context import gateway
from ..errors import ApiError
from .common import rate_limit

bp = Blueprint("games", __name__)
#: Components never change while a rules service runs the same code: an hour in caches, revalidated by ETag.
COMPONENTS_MAX_AGE_S = 3600
#: game id -> (body, etag), per process: the document is the same for every request.
_components: dict[str, tuple[bytes, str]] = {}


@bp.get("/v1/games")
def list_games() -> Response:
    rate_limit()
    return jsonify({"games": gateway().rules.list_games()})


@bp.get("/v1/games/<game>")
def game_components(game: str) -> Response:
    """The game's catalogue entry plus ``components``; ``ETag`` and ``Cache-Control: public``, 304 on a match."""
    rate_limit()
    cached = _components.get(game)
    if cached is None:
        try:
            doc: dict[str, Any] = gateway().rules.game_components(game)
        except ApiError as err:
            if err.code == "unknown_game":
                raise ApiError(404, "game_not_found", err.message) from None
            raise
        body = orjson.dumps(doc)
        cached = _components[game] = (body, hashlib.sha256(body).hexdigest()[:32])
    body, etag = cached
    response = Response(body, mimetype="application/json")
    response.set_etag(etag)
    response.headers["Cache-Control"] = f"public, max-age={COMPONENTS_MAX_AGE_S}"
    response.make_conditional(request)  # 304 without a body when If-None-Match names this ETag
    return response
