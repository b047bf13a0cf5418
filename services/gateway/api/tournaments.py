"""For backends: a tenant's tournaments — create, list, read (standings, the current round's tables with their
matches), its rounds (history), register and unregister players, a player's standing and table, cancel
(``services/core/competitions.py`` decides; the timekeeper runs them; these views only parse)."""

from __future__ import annotations

from flask import Blueprint, Response

from services.contract import models as m
from services.core import competitions

from ..context import caller, core
from .common import answer, body, given, plain, query

bp = Blueprint("tournaments", __name__)
_T = "/v1/tournaments/<tournament_id>"


@bp.post("/v1/tournaments")
def create_tournament() -> Response:
    return answer(competitions.create_tournament(core(), caller(), plain(body(m.CreateTournament))))


@bp.get("/v1/tournaments")
def list_tournaments() -> Response:
    page = query(m.TournamentsQuery)
    return answer(competitions.tournaments_page(core(), caller(), page.limit, given(page.before)))


@bp.get(_T)
def get_tournament(tournament_id: str) -> Response:
    return answer(competitions.tournament(core(), caller(), tournament_id))


@bp.get(_T + "/rounds")
def tournament_rounds(tournament_id: str) -> Response:
    page = query(m.RoundsQuery)
    return answer(competitions.tournament_rounds(core(), caller(), tournament_id, page.after, page.limit))


@bp.post(_T + "/players")
def register(tournament_id: str) -> Response:
    return answer(competitions.register(core(), caller(), tournament_id, body(m.RegisterPlayer).player))


@bp.get(_T + "/players/<player>")
def tournament_player(tournament_id: str, player: str) -> Response:
    return answer(competitions.tournament_player(core(), caller(), tournament_id, player))


@bp.delete(_T + "/players/<player>")
def unregister(tournament_id: str, player: str) -> Response:
    return answer(competitions.unregister(core(), caller(), tournament_id, player))


@bp.post(_T + "/cancel")
def cancel(tournament_id: str) -> Response:
    body(m.Empty)
    return answer(competitions.cancel(core(), caller(), tournament_id))
