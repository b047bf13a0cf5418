"""For backends: a tenant's leaderboards per game — top N, around a player, a player's rank, the minimum of rated
matches to be listed, and seasons (``services/core/competitions.py`` decides; these views only parse)."""

from __future__ import annotations

from flask import Blueprint, Response

from services.contract import models as m
from services.core import competitions

from ..context import caller, core
from .common import answer, body, given, query

bp = Blueprint("leaderboards", __name__)
_B = "/v1/leaderboards/<game>"


@bp.get(_B)
def leaderboard(game: str) -> Response:
    """``limit`` listed players from position ``offset``, best first, on the all-time board or a season's."""
    q = query(m.LeaderboardQuery)
    return answer(competitions.board_top(core(), caller(), game, given(q.season), q.limit, q.offset))


@bp.get(_B + "/players/<player>")
def leaderboard_player(game: str, player: str) -> Response:
    return answer(competitions.board_player(core(), caller(), game, player, given(query(m.SeasonQuery).season)))


@bp.get(_B + "/players/<player>/around")
def leaderboard_around(game: str, player: str) -> Response:
    q = query(m.AroundQuery)
    return answer(competitions.board_around(core(), caller(), game, player, given(q.season), q.span))


@bp.get(_B + "/settings")
def leaderboard_settings(game: str) -> Response:
    return answer(competitions.board_settings(core(), caller(), game))


@bp.put(_B + "/settings")
def set_leaderboard_settings(game: str) -> Response:
    return answer(competitions.set_board_settings(core(), caller(), game, body(m.BoardSettingsBody).min_matches))


@bp.get(_B + "/seasons")
def seasons(game: str) -> Response:
    return answer(competitions.seasons(core(), caller(), game))


@bp.post(_B + "/seasons")
def create_season(game: str) -> Response:
    b = body(m.CreateSeason)
    return answer(competitions.create_season(core(), caller(), game, b.name, b.starts_at, b.ends_at, b.policy,
                                             given(b.decay)))


@bp.get(_B + "/seasons/<name>")
def season(game: str, name: str) -> Response:
    return answer(competitions.season(core(), caller(), game, name))


@bp.patch(_B + "/seasons/<name>")
def update_season(game: str, name: str) -> Response:
    b = body(m.UpdateSeason)
    return answer(competitions.update_season(core(), caller(), game, name, starts_at=given(b.starts_at),
                                             ends_at=given(b.ends_at), policy=given(b.policy), decay=given(b.decay)))


@bp.delete(_B + "/seasons/<name>")
def delete_season(game: str, name: str) -> Response:
    return answer(competitions.delete_season(core(), caller(), game, name))
