"""Applying a move: the one compare-and-set path that humans (via HTTP) and bot workers share."""

from __future__ import annotations

from typing import Any

from .bots_seam import on_bot_turn
from .errors import ApiError
from .rules_client import RulesClient
from .store import Match, MatchStore, StaleVersion

MAX_REBASES = 8


def notify_bots(store: MatchStore, match: Match) -> None:
    """Enqueue a job for every bot seat now to act."""
    seats = match.meta["seats"]
    bots = [s for s in match.meta["to_act"] if s < len(seats) and seats[s]["kind"] == "bot"]
    if bots and match.meta["status"] == "active":
        on_bot_turn(store, match.id, match.game, match.version, bots)


def fits_pending_decision(store: MatchStore, match: Match, seat: int, client_version: int) -> bool:
    """May a move made at ``client_version`` be applied at the current version instead?

    Yes when the seat was already to act then, is still to act now, and made no move in between: its
    pending decision is the same one (others acting in a simultaneous step or a window do not make it
    stale). Otherwise the client decided on a picture that no longer holds: 409.
    """
    if not 0 <= client_version < match.version or seat not in match.meta["to_act"]:
        return False
    entries = store.log(match.id, client_version, match.version)
    if not entries or seat not in entries[0]["to_act"]:
        return False
    return all(e.get("seat") != seat or e["kind"] != "move" for e in entries[1:])


def apply_move(store: MatchStore, rules: RulesClient, match: Match, seat: int, move: dict[str, Any],
               version: int) -> tuple[Match, Any]:
    """Validate through the rules service, then compare-and-set; returns the new match and the seat's view."""
    for _ in range(MAX_REBASES):
        status = match.meta["status"]
        if status == "waiting":
            raise ApiError(409, "match_not_started", "waiting for players to join")
        if status == "abandoned":
            raise ApiError(409, "match_abandoned", "the match was abandoned")
        if version != match.version and not fits_pending_decision(store, match, seat, version):
            raise ApiError(409, "stale_version", f"the match is at version {match.version}; reload and decide again")
        applied = rules.apply_move(match.game, match.state, seat, move, [seat])
        meta = {**match.meta, "to_act": applied.to_act, "status": "finished" if applied.finished else "active",
                "result": applied.result}
        entry = {"kind": "move", "seat": seat, "move": move, "to_act": applied.to_act}
        try:
            updated = store.update(match, meta, applied.state, entry)
        except StaleVersion:
            reloaded = store.load(match.id)
            if reloaded is None:
                raise ApiError(404, "match_not_found", "the match expired") from None
            match = reloaded
            continue
        notify_bots(store, updated)
        return updated, applied.views[seat]
    raise ApiError(409, "busy", "the match changed too often; retry")
