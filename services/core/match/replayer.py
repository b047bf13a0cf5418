"""A match's replay: its log, its seed once over, and the views a reader may see at each version."""

from __future__ import annotations

from typing import Any

import orjson

from services.core.access import (
    Action,
    Caller,
)
from services.core.errors import DomainError, Kind
from services.core.match import chat
from services.core.match.opener import open_match
from services.core.match.reads import SPECTATOR, log_entry
from services.core.record.store import Match
from services.core.service import Core


def replay(core: Core, caller: Caller, match_id: str, include_views: bool = False) -> dict[str, Any]:
    """The move log. Before the end a seat sees only its own moves (others' may hide cards), and no seed.

    ``include_views`` (a finished match only) adds the caller's view after each version, rebuilt by the rules
    service from the seed and the moves: a replay viewer draws the board at every step without a game engine,
    and sees only what that seat (or a spectator) saw then. The seed is a decimal string: it is a 63-bit
    integer, more than a JavaScript number holds exactly."""
    opened = open_match(core, caller, match_id, Action.READ)
    match, seat = opened.match, opened.access.seat
    over = match.meta.status == "finished"
    if include_views and not over:
        raise DomainError(Kind.CONFLICT, "match_not_finished", "views of past versions are served once the match "
                                                               "is over")
    log = core.store.log(match_id)
    views = _replay_views(core, match, log, seat) if include_views else None
    entries = []
    for i, entry in enumerate(log):
        item = log_entry(entry, seat, over)
        if views is not None:
            item["view"] = views[i]
        entries.append(item)
    meta = match.meta
    return {"id": match.id, "game": meta.game, "players": meta.players, "options": meta.options,
            "seed": str(meta.seed) if over else None, "status": meta.status, "version": match.version,
            "log": entries, "result": meta.result, "chat": chat.messages(core, match_id)}


def _replay_views(core: Core, match: Match, log: list[dict[str, Any]], seat: int | None) -> list[Any]:
    """The view of ``seat`` (None: a spectator) after each log entry: the game replayed from its seed, one
    rules-service call per move, asking for that one view only. Entries other than moves change no state."""
    meta, key = match.meta, SPECTATOR if seat is None else seat
    applied = core.rules.new_game(match.game, meta.players, meta.seed, meta.options, derive=False,
                                  view_seats=[key])
    views = []
    for entry in log:
        if entry["kind"] == "move":
            applied = core.rules.apply_move(match.game, applied.state, entry["seat"], entry["move"],
                                            view_seats=[key], derive=False)
        views.append(orjson.loads(applied.views[key]))
    return views
