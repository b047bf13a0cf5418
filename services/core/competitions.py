"""For backends: a tenant's leaderboards and tournaments (the routes under ``/v1/leaderboards`` and
``/v1/tournaments``). Every call needs the tenant's API key (the access policy's ``Action.TENANT``: 401
``api_key_required`` without one) and answers for the key's own tenant only: another tenant's tournament is 404
``tournament_not_found`` (the same answer as none), its boards and seasons are simply not this tenant's (a
tenant reads its own boards of a game, empty if it has none), and player ids are the tenant's namespace.

The boards are :mod:`.leaderboards`; the tournaments :mod:`.tournaments` (their state in Redis, the pure machine,
the runner the timekeeper drives). Settings that only the rules service can judge (a game, its options and player
count) are checked when a tournament is created, so its matches can be made later.
"""

from __future__ import annotations

import time
from typing import Any

from services.core.access import Caller, authorize_tenant, authorize_tournament
from services.core.competition import leaderboards
from services.core.errors import DomainError, Kind
from services.core.limits import count_request
from services.core.match import clocks
from services.core.match.creator import quota_limits
from services.core.match.seating import parse_player
from services.core.service import Core
from services.core.tenancy import quotas, tenants
from services.core.tournaments import machine
from services.core.tournaments import store as tournaments
from services.core.tournaments.matches import TournamentMatches
from services.core.tournaments.runner import TournamentRunner

#: Tournaments per page at most (``limit``), and by default.
PAGE_MAX, PAGE_DEFAULT = 100, 20


def _tenant(core: Core, caller: Caller) -> str:
    return _tenant_of(core, caller).name


def _tenant_of(core: Core, caller: Caller) -> tenants.Tenant:
    """The caller's tenant (a competition is a tenant's alone), the request counted against its rate."""
    tenant = authorize_tenant(caller)
    count_request(core, caller)
    return tenant


def _game(core: Core, game: str) -> str:
    """A game on offer, or 404 ``game_not_found`` (the catalogue is asked once per game and process)."""
    if len(game) > 64 or not tenants.NAME_RE.match(game):
        raise DomainError(Kind.NOT_FOUND, "game_not_found", "no such game in the catalogue")
    try:
        core.rules.game_components(game)
    except DomainError as err:
        if err.code == "unknown_game":
            raise DomainError(Kind.NOT_FOUND, "game_not_found", err.message) from None
        raise
    return game


# -- leaderboards ------------------------------------------------------------------------------------------------
def _board(core: Core, caller: Caller, game: str, season: str | None) -> tuple[str, str, str]:
    tenant = _tenant(core, caller)
    _game(core, game)
    return tenant, game, leaderboards.resolve(core.redis, tenant, game, season or leaderboards.ALL)


def board_top(core: Core, caller: Caller, game: str, season: str | None, limit: int, offset: int) -> dict[str, Any]:
    """``limit`` listed players from position ``offset`` (0: the best), with their ranks, and how many are listed."""
    tenant, game, board = _board(core, caller, game, season)
    entries = leaderboards.top(core.redis, tenant, game, board, limit, offset)
    return {"game": game, "season": board, "listed": leaderboards.size(core.redis, tenant, game, board),
            "entries": [e.public() for e in entries]}


def board_player(core: Core, caller: Caller, game: str, player: str, season: str | None) -> dict[str, Any]:
    """The player's entry (``rank`` null while below the minimum); 404 ``player_not_ranked`` if not on the board."""
    named = parse_player(player, caller.tenant) if caller.tenant is not None else player
    tenant, game, board = _board(core, caller, game, season)
    entry, listed = leaderboards.rank(core.redis, tenant, game, named, board)
    if entry is None:
        raise DomainError(Kind.NOT_FOUND, "player_not_ranked", f"{named!r} is not on the {board!r} board of {game} "
                                                               "(no rated match of it there)")
    return {"game": game, "season": board, "listed": listed, "entry": entry.public()}


def board_around(core: Core, caller: Caller, game: str, player: str, season: str | None, span: int) -> dict[str, Any]:
    """The listed player and up to ``span`` neighbours on each side (empty while the player is unlisted)."""
    named = parse_player(player, caller.tenant) if caller.tenant is not None else player
    tenant, game, board = _board(core, caller, game, season)
    entries = leaderboards.around(core.redis, tenant, game, named, board, span)
    return {"game": game, "season": board, "entries": [e.public() for e in entries]}


def board_settings(core: Core, caller: Caller, game: str) -> dict[str, Any]:
    tenant = _tenant(core, caller)
    return {"game": _game(core, game), "min_matches": leaderboards.conf(core.redis, tenant, game)["min_matches"]}


def set_board_settings(core: Core, caller: Caller, game: str, min_matches: int) -> dict[str, Any]:
    """A new minimum of rated matches to be listed: the all-time and live boards are relisted before the answer."""
    tenant = _tenant(core, caller)
    _game(core, game)
    return {"game": game, **leaderboards.set_min_matches(core.redis, tenant, game, min_matches)}


def seasons(core: Core, caller: Caller, game: str) -> dict[str, Any]:
    tenant = _tenant(core, caller)
    return {"game": _game(core, game), "seasons": leaderboards.seasons(core.redis, tenant, game)}


def season(core: Core, caller: Caller, game: str, name: str) -> dict[str, Any]:
    tenant = _tenant(core, caller)
    return leaderboards.season(core.redis, tenant, _game(core, game), name)


def create_season(core: Core, caller: Caller, game: str, name: str, starts_at: float, ends_at: float, policy: str,
                  decay: float | None) -> dict[str, Any]:
    tenant = _tenant(core, caller)
    return leaderboards.define_season(core.redis, tenant, _game(core, game), name, starts_at, ends_at, policy, decay)


def update_season(core: Core, caller: Caller, game: str, name: str, **changes: Any) -> dict[str, Any]:
    """``changes``: any of ``starts_at``, ``ends_at``, ``policy``, ``decay`` (None: unchanged)."""
    tenant = _tenant(core, caller)
    return leaderboards.update_season(core.redis, tenant, _game(core, game), name, **changes)


def delete_season(core: Core, caller: Caller, game: str, name: str) -> dict[str, Any]:
    tenant = _tenant(core, caller)
    leaderboards.delete_season(core.redis, tenant, _game(core, game), name)
    return {"deleted": name}


# -- tournaments -------------------------------------------------------------------------------------------------
def create_tournament(core: Core, caller: Caller, body: dict[str, Any]) -> dict[str, Any]:
    """A new tournament of the caller's tenant, registering from now until it starts (Swiss) or ends (arena).

    The settings are checked by the machine (400 ``bad_tournament``), the clock as a match's (400 ``bad_clock``),
    and the game, its options and the table size by the rules service, as a match of the tournament will be
    (400 ``unknown_game``, ``invalid_options``)."""
    who = _tenant_of(core, caller)
    tenant, owner = who.name, who.owner
    now = time.time()
    checked = machine.settings(body, now)
    clock = clocks.parse(checked["clock"])
    core.rules.new_game(checked["game"], checked["players_per_table"], 0, checked["options"], derive=False)
    tournament_id = tournaments.new_id()
    held, until = machine.reservation(tournament_id, checked)
    limit = quota_limits(core, who).matches
    try:
        quotas.reserve(core.redis, owner, held, now, until, limit)
    except quotas.QuotaExceeded as err:
        raise DomainError(Kind.LIMITED, "quota_exceeded", f"tenant {tenant}: a tournament holds one of the tenant's "
                          f"{limit} matches for each table of a round ({len(held)} for {checked['max_players']} "
                          f"players at {checked['players_per_table']} a table) until it ends, and {err.held} are "
                          "held now; lower max_players, or end some matches or tournaments first") from None
    try:
        doc = tournaments.create(core.redis, tenant, {**body, "clock": clock.settings()}, now, tournament_id)
    except Exception:
        quotas.unreserve(core.redis, owner, held)
        raise
    return machine.view(doc, {})


def _tournament(core: Core, caller: Caller, tournament_id: str
                ) -> tuple[str, dict[str, Any], dict[str, dict[str, Any]]]:
    """The caller's tenant and the tournament, as the access policy allows (another tenant's, or none: 404)."""
    _tenant(core, caller)  # a key first: without one, 401 before any lookup
    found = tournaments.load(core.redis, tournament_id) if tournaments.plausible(tournament_id) else None
    tenant = authorize_tournament(caller, found[1]["tenant"] if found else None)
    assert found is not None
    return tenant.name, found[1], found[2]


def tournament(core: Core, caller: Caller, tournament_id: str) -> dict[str, Any]:
    """Settings, status, the current round and its tables (each with its ``match_id``), and the standings."""
    _, doc, players = _tournament(core, caller, tournament_id)
    return machine.view(doc, players)


def tournament_rounds(core: Core, caller: Caller, tournament_id: str, after: int, limit: int) -> dict[str, Any]:
    """The tournament's history: its rounds after ``after``, oldest first, every table with its match and result."""
    _, doc, _ = _tournament(core, caller, tournament_id)
    return machine.rounds_page(doc, after, limit)


def tournaments_page(core: Core, caller: Caller, limit: int, before: float | None) -> dict[str, Any]:
    tenant = _tenant(core, caller)
    found, nxt = tournaments.listing(core.redis, tenant, limit, before)
    return {"tournaments": found, "next": nxt}


def register(core: Core, caller: Caller, tournament_id: str, player: str) -> dict[str, Any]:
    tenant, _, _ = _tournament(core, caller, tournament_id)
    return tournaments.register(core.redis, tenant, tournament_id, parse_player(player, caller.tenant))


def unregister(core: Core, caller: Caller, tournament_id: str, player: str) -> dict[str, Any]:
    tenant, _, _ = _tournament(core, caller, tournament_id)
    named = parse_player(player, caller.tenant)
    return {"player": named, "status": tournaments.unregister(core.redis, tenant, tournament_id, named)}


def tournament_player(core: Core, caller: Caller, tournament_id: str, player: str) -> dict[str, Any]:
    """The player's standing and the table they play at now (its ``match_id``: the way into their match)."""
    _, doc, players = _tournament(core, caller, tournament_id)
    named = parse_player(player, caller.tenant)
    return {"player": named, **machine.player_view(doc, players, named)}


def cancel(core: Core, caller: Caller, tournament_id: str) -> dict[str, Any]:
    """Cancel: the standings so far are final; running matches are ended (aborted) by the runner at once."""
    tenant, _, _ = _tournament(core, caller, tournament_id)
    return TournamentRunner(core.redis, TournamentMatches(core)).cancel(tenant, tournament_id)
