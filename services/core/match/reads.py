"""What a caller reads of a match: its status document, its view, its legal moves, the events since a version.

Views and legal moves come from the cache the compare-and-set keeps beside the state (``MatchStore.derived``),
passed through as JSON text (``orjson.Fragment``) without being decoded; only when the cache cannot answer
(a newer state landed meanwhile, or the match predates the cache) is the rules service asked. What is shown
follows :class:`~.access.MatchAccess`: the seat's own view (or the spectator's), its own moves while the game
runs, and player ids only for the owning tenant.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from services.core.access import MatchAccess, redact_outcome
from services.core.match import chat, clocks, describe
from services.core.record import control
from services.core.record.store import Match, seat_hint
from services.core.service import Core

SPECTATOR = -1


def caller_fields(token: str | None, view: bool, legal: bool) -> tuple[str, ...]:
    """The derived documents of a caller's seat (by its token's seat hint) to load with the match."""
    hint = seat_hint(token)
    key = SPECTATOR if hint is None else hint
    return (*((f"view:{key}",) if view else ()), *((f"legal:{key}",) if legal and hint is not None else ()))


def seat_view(core: Core, match: Match, seat: int | None) -> Any:
    key = SPECTATOR if seat is None else seat
    cached = core.store.derived(match, f"view:{key}")
    if cached is not None:
        return orjson.Fragment(cached)
    return core.rules.view(match.game, match.state, seat)


def seat_legal_moves(core: Core, match: Match, seat: int) -> Any:
    """The seat's legal moves; [] without a rules call when it has nothing to decide (not to act, the match
    not running, or a bot plays the seat)."""
    info = match.meta.seats[seat]
    if seat not in match.meta.to_act or match.meta.status != "active" or control.bot_plays(info):
        return []
    cached = core.store.derived(match, f"legal:{seat}")
    if cached is not None:
        return orjson.Fragment(cached)
    return core.rules.legal_moves(match.game, match.state, seat)


def seats_public(match: Match, access: MatchAccess, now: float) -> list[dict[str, Any]]:
    return [{"seat": i, "kind": s.kind, "level": s.level, "taken": bool(s.token_hash) or s.kind == "bot" or s.left
             or bool(s.reserved),
             "control": "bot" if control.bot_plays(s) else "human",
             "connected": s.kind == "human" and match.presence.get(i, 0.0) >= now,
             "forfeited": s.forfeited, "left": s.left,
             **({"player": s.player} if access.players and s.kind == "human" else {})}
            for i, s in enumerate(match.meta.seats)]


def status_doc(match: Match, access: MatchAccess, view: Any) -> dict[str, Any]:
    """The match as this caller sees it (``view``: its seat's view, or the spectator's)."""
    meta = match.meta
    now = time.time()
    clock = meta.clock
    return {"id": match.id, "game": meta.game, "players": meta.players, "options": meta.options,
            "status": meta.status, "version": match.version, "seats": seats_public(match, access, now),
            "to_act": meta.to_act, "you": access.seat, "view": view, "result": meta.result,
            "outcome": redact_outcome(meta.outcome, access.players),
            "clock": clocks.public(clock, now) if clock is not None else None,
            "takeover_level": meta.takeover_level, "rematch": meta.rematch, "spectator_chat": meta.spectator_chat}


def seat_status(core: Core, match: Match, access: MatchAccess, include_legal: bool = False) -> dict[str, Any]:
    """:func:`status_doc` with the caller's view (and legal moves, if asked for)."""
    doc = status_doc(match, access, seat_view(core, match, access.seat))
    if include_legal:
        doc["legal_moves"] = None if access.seat is None else seat_legal_moves(core, match, access.seat)
    return doc


def log_entry(entry: dict[str, Any], seat: int | None, over: bool) -> dict[str, Any]:
    """One log entry as a reader sees it: moves only for their own seat while the game runs (another seat's
    move can reveal cards), and in words written for this reader alone (``text``, ``summary``)."""
    item = {"version": entry["version"], "kind": entry["kind"], "seat": entry.get("seat")}
    if "by" in entry:
        item["by"] = entry["by"]
    visible = entry["kind"] == "move" and (over or entry.get("seat") == seat)
    if visible:
        item["move"] = entry["move"]
    item.update(describe.for_viewer(entry, seat, visible))
    return item


def events_after(core: Core, match: Match, access: MatchAccess, after: int) -> list[dict[str, Any]]:
    """The log entries after version ``after`` as this caller may see them (the Events document's ``events``)."""
    over = match.meta.status == "finished"
    entries = match.tail if match.tail is not None else core.store.log(match.id, after + 1, match.version)
    return [{**log_entry(entry, access.seat, over), "to_act": entry["to_act"]}
            for entry in entries if after < entry["version"] <= match.version]


def events_since(core: Core, match: Match, access: MatchAccess, after: int,
                 include_legal: bool = False, chat_after: int | None = None) -> dict[str, Any]:
    """What happened after version ``after``: the entries, and the caller's view (and legal moves, if asked
    for) when anything did. The same document for long-polls, SSE and the WebSocket. ``chat_after`` (a
    long-poll's): the chat messages past that id too, and the ids of the redacted ones (see :mod:`.chat`)."""
    items = events_after(core, match, access, after)
    doc = {"version": match.version, "status": match.meta.status, "to_act": match.meta.to_act,
           "events": items, "view": seat_view(core, match, access.seat) if items else None,
           "result": match.meta.result}
    if include_legal:
        doc["legal_moves"] = seat_legal_moves(core, match, access.seat) if access.seat is not None else None
    if chat_after is not None:  # (a match loaded with its chat cursor says whether it has any message at all)
        doc.update(chat.poll_part(core, match.id, chat_after,
                                  match.chat_cursor[1] if match.chat_cursor is not None else None))
    return doc
