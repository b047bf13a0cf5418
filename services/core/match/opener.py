"""Opening a match for a caller: the one access decision, the match loaded with what the caller may see."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from services.core.access import (
    Action,
    Caller,
    MatchAccess,
    authorize_match,
    require_credential,
)
from services.core.errors import not_found
from services.core.limits import count_request, enforce, ip_ident, limit_of, token_ident
from services.core.match.reads import caller_fields, seat_legal_moves, seat_view, status_doc
from services.core.match.seating import MAX_ID
from services.core.record.store import Match
from services.core.service import Core


@dataclass
class Opened:
    """A match as a door opened it for a caller."""

    match: Match
    access: MatchAccess
    #: The stored answer of the request's ``Idempotency-Key``, when one was asked for and exists.
    done: dict[str, Any] | None = None


def open_match(core: Core, caller: Caller, match_id: str, action: Action, *, view: bool = False,
               legal: bool = False, log_from: int | None = None, idempotency_key: str | None = None,
               connected_for: float = 0.0, count: bool = True, chat: bool = False) -> Opened:
    """The rate limit, the match (with the caller's view / legal moves, the log from ``log_from``, the stored
    answer of ``idempotency_key`` and, with ``chat``, the chat cursor if asked for: one Redis round trip), the
    token check and the access decision.

    A seat token is counted in its own bucket, which lives with the match; a token that holds no seat here is
    401 and its count moves to the caller's address, so made-up tokens never earn a bucket of their own. A
    verified seat counts as connected for the presence window (plus ``connected_for`` seconds: a long-poll
    or stream holds its connection that long). ``count=False``: the request was counted already (the re-run
    of a parked long-poll).
    """
    require_credential(caller)
    store = core.store
    fields = caller_fields(caller.token, view, legal)
    if len(match_id) > MAX_ID:
        if count:
            count_request(core, caller)
        raise not_found(match_id[:MAX_ID] + "...")
    limit = limit_of(core, caller) if count else 0
    done = None
    if limit <= 0:
        found = store.load(match_id, fields, log_from, chat=chat)
        if found is not None and idempotency_key is not None:
            done = store.idempotent_get(match_id, idempotency_key)
    else:
        token = caller.token
        ident = token_ident(token) if token else caller.tenant.owner if caller.tenant else ip_ident(caller.address)
        found, (hits, reset), done = store.load_counted(match_id, ident, idempotency_key, fields, log_from,
                                                        scoped=token is not None, chat=chat)
        if token is not None and (found is None or found.seat_of(token) is None):
            # Never a bucket of its own: the count moves to the address, then 404 (no match) or 401 (no seat).
            moved, reset = store.move_hit(ident, ip_ident(caller.address), drop=hits <= 1, source_scope=match_id)
            enforce(core.config.rate_limit_per_minute, moved, reset)
        else:
            enforce(limit, hits, reset, caller)
    if found is None:
        raise not_found(match_id)
    access = authorize_match(caller, found, action)
    if access.seat is not None:
        cfg = core.config
        store.touch(found, access.seat, time.time() + cfg.presence_s + connected_for, slack=cfg.presence_s / 4)
    return Opened(found, access, done)


def load(core: Core, match_id: str) -> Match:
    """The match (no caller: the pipeline's own re-reads), or 404."""
    if len(match_id) > MAX_ID:
        raise not_found(match_id[:MAX_ID] + "...")
    found = core.store.load(match_id)
    if found is None:
        raise not_found(match_id)
    return found


def status(core: Core, caller: Caller, match_id: str, include_legal: bool = False) -> dict[str, Any]:
    """The match as the caller sees it: its seat's view (or the spectator's), and its legal moves if asked."""
    opened = open_match(core, caller, match_id, Action.READ, view=True, legal=include_legal)
    doc = status_doc(opened.match, opened.access, seat_view(core, opened.match, opened.access.seat))
    if include_legal:
        seat = opened.access.seat
        doc["legal_moves"] = None if seat is None else seat_legal_moves(core, opened.match, seat)
    return doc


def legal_moves(core: Core, caller: Caller, match_id: str) -> dict[str, Any]:
    opened = open_match(core, caller, match_id, Action.ACT, legal=True)
    seat = opened.access.seat
    assert seat is not None
    return {"version": opened.match.version, "seat": seat, "moves": seat_legal_moves(core, opened.match, seat)}
