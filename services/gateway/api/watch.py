"""Watch links: a tenant's key mints read-only spectator tokens for one of its matches or tournaments, describes
and revokes them (``services/core/watch_links.py`` decides; these views only parse)."""

from __future__ import annotations

from flask import Blueprint, Response

from services.contract import models as m
from services.core import watch_links

from ..context import caller, core
from .common import answer, body

bp = Blueprint("watch", __name__)


@bp.post("/v1/matches/<match_id>/watch-tokens")
def mint_for_match(match_id: str) -> Response:
    b = body(m.MintWatchToken)
    return answer(watch_links.mint_for_match(core(), caller(), match_id, ttl_s=b.ttl_s, player_ids=b.player_ids))


@bp.post("/v1/tournaments/<tournament_id>/watch-tokens")
def mint_for_tournament(tournament_id: str) -> Response:
    b = body(m.MintWatchToken)
    return answer(watch_links.mint_for_tournament(core(), caller(), tournament_id, ttl_s=b.ttl_s,
                                                  player_ids=b.player_ids))


@bp.get("/v1/watch-tokens/<token_id>")
def describe(token_id: str) -> Response:
    return answer(watch_links.describe(core(), caller(), token_id))


@bp.delete("/v1/watch-tokens/<token_id>")
def revoke(token_id: str) -> Response:
    watch_links.revoke(core(), caller(), token_id)
    return Response(status=204)
