"""``GET /v1/games``: the catalogue, straight from the rules service; ``GET /v1/games/{game}``: one game with its
components (every card, tile, god and goal with its name, colours and rules text), cacheable. Both public."""

from __future__ import annotations

import hashlib

from flask import Blueprint, Response, request

from services.core import games

from ..context import caller, core, gateway
from .common import JSON, answer

bp = Blueprint("games", __name__)
#: Components never change while a rules service runs the same code: an hour in caches, revalidated by ETag.
COMPONENTS_MAX_AGE_S = 3600


@bp.get("/v1/games")
def list_games() -> Response:
    return answer(games.catalogue(core(), caller()))


@bp.get("/v1/games/<game>")
def game_components(game: str) -> Response:
    """The game's catalogue entry plus ``components``; ``ETag`` and ``Cache-Control: public``, 304 on a match."""
    doc = games.game(core(), caller(), game)
    cache = gateway().components  # the encoded document and its ETag, made once per process and game
    if game not in cache:
        body = answer(doc).get_data()
        cache[game] = (body, hashlib.sha256(body).hexdigest()[:32])
    body, etag = cache[game]
    response = Response(body, mimetype=JSON)
    response.set_etag(etag)
    response.headers["Cache-Control"] = f"public, max-age={COMPONENTS_MAX_AGE_S}"
    response.make_conditional(request)  # 304 without a body when If-None-Match names this ETag
    return response
