"""Seats changing hands: a join takes one (its token shown once), a leave, a reclaim or a resignation
changes who plays it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import msgspec

from services.core.access import (
    Action,
    Caller,
    MatchAccess,
    authorize_create,
    authorize_match,
)
from services.core.errors import DomainError, Kind, busy, not_found
from services.core.limits import count_request
from services.core.match import clocks, history, idempotency
from services.core.match.commit import MAX_REBASES, commit
from services.core.match.opener import Opened, load, open_match
from services.core.match.reads import seat_view, status_doc
from services.core.match.seating import MAX_ID, all_seated, parse_player
from services.core.meta import MatchMeta
from services.core.record import control
from services.core.record.store import Match, StaleVersion, hash_token, new_token
from services.core.service import Core


def seat_with_secret(match: Match, secret: str) -> int | None:
    """The seat whose token is ``<seat>.<secret>`` (a join made under an Idempotency-Key), if any."""
    for seat, info in enumerate(match.meta.seats):
        if info.token_hash and info.token_hash == hash_token(f"{seat}.{secret}"):
            return seat
    return None


def take_seat(core: Core, match_id: str, wanted: int | None, player: str | None = None, *,
              caller: Caller | None = None, secret: str | None = None) -> tuple[Match, int, str]:
    """A free human seat (``wanted`` or the first) gets a new token; returns the match, seat and token.

    ``caller``: whose join it is (the access policy decides); None: the server seats someone who already holds
    a right to the seat (a rematch's seat holder, a matchmaking ticket). ``secret``: the token's secret part,
    chosen up front (an Idempotency-Key's), else a new one.
    """
    for _ in range(MAX_REBASES):
        match = load(core, match_id)
        if caller is not None:
            authorize_match(caller, match, Action.JOIN)
        owner = match.meta.tenant
        if player is not None and owner is None:
            raise DomainError(Kind.MALFORMED, "bad_player", "a player is named only in its tenant's own matches "
                                                            "(this one was created without an API key)")
        if match.meta.status == "finished":
            raise DomainError(Kind.CONFLICT, "match_closed", "the match is over")
        seats = match.meta.seats
        free = [i for i, s in enumerate(seats) if s.kind == "human" and not s.token_hash and not s.left
                and not s.reserved and (not s.kept or s.player == player)]
        kept = [i for i in free if player is not None and seats[i].player == player]
        if player is not None and not kept and any(s.player == player and s.token_hash for s in seats):
            raise DomainError(Kind.CONFLICT, "player_seated", f"player {player!r} already sits in this match")
        if wanted is None and kept:  # the seat a tournament keeps for this player
            wanted = kept[0]
        if wanted is not None:
            if not 0 <= wanted < len(seats):
                raise DomainError(Kind.MALFORMED, "no_such_seat", f"seat {wanted} does not exist")
            if wanted not in free:
                raise DomainError(Kind.CONFLICT, "seat_taken", f"seat {wanted} is not free")
            seat = wanted
        elif free:
            seat = free[0]
        else:
            raise DomainError(Kind.CONFLICT, "match_full", "every seat is taken")
        if player is not None and seats[seat].player not in (None, player):
            raise DomainError(Kind.CONFLICT, "seat_taken", f"seat {seat} is kept for another player")
        if player is not None and any(s.player == player for i, s in enumerate(seats) if i != seat):
            raise DomainError(Kind.CONFLICT, "player_seated", f"player {player!r} already sits in this match")
        token = new_token(seat) if secret is None else f"{seat}.{secret}"
        meta = match.meta.with_seat(seat, token_hash=hash_token(token))
        if player is not None:
            meta = meta.with_seat(seat, player=player)
            history.index(core.store, str(owner), match_id, [player], match.meta.created_at or time.time())
        meta = msgspec.structs.replace(meta, status="active" if all_seated(meta.seats) else "waiting")
        try:
            match = commit(core, match, meta, None, {"kind": "joined", "seat": seat, "to_act": meta.to_act})
        except StaleVersion:
            continue
        return match, seat, token
    raise busy()


def join(core: Core, caller: Caller, match_id: str, seat: int | None = None, player: str | None = None, *,
         idempotency_key: str | None = None) -> dict[str, Any]:
    """``POST /v1/matches/{id}/join``: a free seat and its token (shown once), with the seat's view; with an
    ``idempotency_key``, the same seat and token on every retry (see :mod:`.idempotency`)."""
    authorize_create(caller, "joining a match")
    count_request(core, caller)
    named = parse_player(player, caller.tenant) if player is not None else None

    def answer(match: Match, taken: int, token: str) -> dict[str, Any]:
        return seat_answer(core, match, taken, token,
                            caller.tenant is not None and caller.tenant.name == match.meta.tenant)

    if idempotency_key is None:
        return answer(*take_seat(core, match_id, seat, named, caller=caller))
    if len(match_id) > MAX_ID:
        raise not_found(match_id[:MAX_ID] + "...")
    claim = idempotency.claim(core.redis, idempotency.match_record(match_id, caller.owner, idempotency_key),
                              idempotency_key, idempotency.fingerprint("join", {"seat": seat, "player": player}), {})

    def joined(secret: str) -> dict[str, Any] | None:
        match = load(core, match_id)
        authorize_match(caller, match, Action.JOIN)
        taken = seat_with_secret(match, secret)
        return None if taken is None else answer(match, taken, f"{taken}.{secret}")

    return seat_once(claim, joined, lambda secret: answer(*take_seat(core, match_id, seat, named, caller=caller,
                                                                       secret=secret)))


def seat_once(claim: idempotency.Claim, seated: Callable[[str], dict[str, Any] | None],
               take: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """A seat taken once for an Idempotency-Key (a join, a rematch): the key's stored answer; else the seat an
    earlier request with the key took and whose answer was lost (``seated``: found by the key's token secret);
    else 409 ``idempotency_key_in_use`` while that request may still be running; else ``take`` it now with the
    key's secret (a refusal forgets the claim, so a retry is a new request)."""
    if (done := claim.answer) is not None:
        return done
    if not claim.fresh:
        if (found := seated(claim.secret)) is not None:
            return claim.complete(found)
        if claim.young():
            raise claim.in_use()
    try:
        made = take(claim.secret)
    except Exception:
        claim.forget()
        raise
    return claim.complete(made)


def seat_answer(core: Core, match: Match, seat: int, token: str, players: bool) -> dict[str, Any]:
    """A seat just taken, as its caller sees it: the seat's status and view, the seat and its token (shown once).
    ``players``: the caller is the match's tenant (player ids shown)."""
    return {**status_doc(match, MatchAccess(seat, players), seat_view(core, match, seat)), "seat": seat,
            "token": token}


def _update_seat(core: Core, caller: Caller, match_id: str, change: Any, first: Opened) -> tuple[Match, MatchAccess]:
    """Run ``change(match, seat) -> (meta, entry)`` for the caller's seat under compare-and-set (``first``: the
    match as the request opened it; re-read, not re-counted, when someone else was first)."""
    opened = first
    for _ in range(MAX_REBASES):
        seat = opened.access.seat
        assert seat is not None
        meta, entry = change(opened.match, seat)
        try:
            return commit(core, opened.match, meta, None, entry), opened.access
        except StaleVersion:
            opened = open_match(core, caller, match_id, Action.ACT, count=False)
    raise busy()


def leave(core: Core, caller: Caller, match_id: str) -> dict[str, Any]:
    """A waiting match frees the seat; a running one hands it to a bot for good (the token stops working)."""
    def change(match: Match, seat: int) -> tuple[MatchMeta, dict[str, Any]]:
        status = match.meta.status
        if status == "finished":
            raise DomainError(Kind.CONFLICT, "match_closed", "the match is over")
        if status == "active":
            meta = match.meta.with_seat(seat, token_hash=None, control="bot", left=True)
        else:
            meta = match.meta.with_seat(seat, token_hash=None)
        return meta, {"kind": "left", "seat": seat, "to_act": match.meta.to_act}

    first = open_match(core, caller, match_id, Action.ACT)
    match, access = _update_seat(core, caller, match_id, change, first)
    if match.meta.status == "active":
        core.metrics.takeovers.labels("leave").inc()
    return status_doc(match, MatchAccess(None, access.players), None)


def reclaim(core: Core, caller: Caller, match_id: str, seat: int) -> dict[str, Any]:
    """The owner takes back a seat a bot has played since a timeout; nothing the bot did is undone."""
    reclaimed = False

    def change(match: Match, caller_seat: int) -> tuple[MatchMeta, dict[str, Any]]:
        nonlocal reclaimed
        if caller_seat != seat:
            raise DomainError(Kind.FORBIDDEN, "not_your_seat", f"that token holds seat {caller_seat}, not seat {seat}")
        info = match.meta.seats[seat]
        if match.meta.status != "active":
            raise DomainError(Kind.CONFLICT, "match_closed", f"the match is {match.meta.status}")
        if info.forfeited:
            raise DomainError(Kind.CONFLICT, "seat_forfeited", f"seat {seat} forfeited; it cannot be reclaimed")
        reclaimed = info.control == "bot"
        meta = match.meta.with_seat(seat, control="human")
        if meta.clock is not None:
            meta = msgspec.structs.replace(meta, clock=clocks.restore(meta.clock, seat))
        return meta, {"kind": "reclaimed", "seat": seat, "to_act": meta.to_act}

    first = open_match(core, caller, match_id, Action.ACT)
    match, access = _update_seat(core, caller, match_id, change, first)
    if reclaimed:
        core.metrics.reclaims.inc()
    return status_doc(match, access, seat_view(core, match, seat))


def resign(core: Core, caller: Caller, match_id: str) -> dict[str, Any]:
    """The caller's seat forfeits: its side can no longer win, an easy bot plays its remaining decisions, and
    the match ends at once when a single side is left (as a forfeit on time does)."""
    def change(match: Match, seat: int) -> tuple[MatchMeta, dict[str, Any]]:
        meta = match.meta
        if meta.status != "active":
            raise DomainError(Kind.CONFLICT, "match_closed" if meta.status == "finished" else "match_not_started",
                              f"the match is {meta.status}")
        if meta.seats[seat].forfeited:
            raise DomainError(Kind.CONFLICT, "seat_forfeited", f"seat {seat} has forfeited already")
        new = control.forfeit(meta, seat)
        return new, {"kind": "resigned", "seat": seat, "to_act": new.to_act}

    first = open_match(core, caller, match_id, Action.ACT)
    match, access = _update_seat(core, caller, match_id, change, first)
    core.metrics.takeovers.labels("resign").inc()
    return status_doc(match, access, seat_view(core, match, access.seat))
