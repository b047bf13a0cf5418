"""A new match: its seats read, the client's quotas charged, the engine's first state stored."""

from __future__ import annotations

import secrets
import time
from typing import Any

import msgspec

from services.core.access import (
    Caller,
    MatchAccess,
    authorize_create,
)
from services.core.errors import DomainError, Kind
from services.core.limits import count_request
from services.core.match import clocks, history, idempotency
from services.core.match.commit import create as commit_create
from services.core.match.opener import load
from services.core.match.reads import seat_view, status_doc
from services.core.match.seater import (
    seat_with_secret,
    take_seat,
)
from services.core.match.seating import BOT_LEVELS, MAX_PLAYERS, all_seated, parse_seats
from services.core.meta import Clock, MatchMeta, Seat
from services.core.record import control
from services.core.record.store import Match, StaleVersion, new_match_id
from services.core.service import Core
from services.core.tenancy import quotas, tenants


def quota_limits(core: Core, tenant: tenants.Tenant | None = None) -> quotas.Limits:
    """The per-address limits, or the tenant's own quotas (``meeple keys create --quota``)."""
    if tenant is not None:
        return quotas.Limits(tenant.quotas["matches"], tenant.quotas["bots"], tenant.quotas["hard"])
    cfg = core.config
    return quotas.Limits(cfg.max_active_matches_per_ip, cfg.max_bot_seats_per_ip, cfg.max_hard_bots_per_ip)


def check_room(core: Core) -> None:
    """503 ``store_full`` once Redis holds ``MEEPLE_STORE_FULL_RATIO`` of its ``maxmemory``: the rest is kept
    for the matches already running, which must never fail for want of memory."""
    ratio = core.config.store_full_ratio
    if ratio > 0 and core.store.used_share() >= ratio:
        raise DomainError(Kind.UNAVAILABLE, "store_full", "the match store is full: no new matches for now "
                                                          "(running matches go on); retry later", retry_after=60)


def charge(core: Core, owner: str, member: str, seats: list[Seat], until: float,
           tenant: tenants.Tenant | None = None) -> None:
    """Charge ``owner``'s quotas until ``until`` at the latest, or 429 ``quota_exceeded`` naming the limit."""
    try:
        quotas.charge(core.redis, owner, member, seats, time.time(), until, quota_limits(core, tenant))
    except quotas.QuotaExceeded as err:
        who = "" if tenant is None else f"tenant {tenant.name}: "
        raise DomainError(Kind.LIMITED, "quota_exceeded", who + str(err)) from None


def charge_all(core: Core, owner: str, members: list[str], until: float, tenant: tenants.Tenant | None = None) -> None:
    """Charge ``owner`` each of ``members`` as an active match, all or none (a matchmaking party: one per
    member), or 429 ``quota_exceeded`` naming the limit."""
    try:
        quotas.reserve(core.redis, owner, members, time.time(), until, quota_limits(core, tenant).matches)
    except quotas.QuotaExceeded as err:
        who = "" if tenant is None else f"tenant {tenant.name}: "
        raise DomainError(Kind.LIMITED, "quota_exceeded", who + str(err)) from None


def release_all(core: Core, owner: str, members: list[str]) -> None:
    """Give back what :func:`charge_all` charged."""
    quotas.unreserve(core.redis, owner, members)


def new_match(core: Core, game_id: str, players: int, options: dict[str, Any], seed: int | None,
              seats: list[Seat], clock: Clock | None = None,
              takeover_level: str = control.DEFAULT_TAKEOVER_LEVEL, owner: str | None = None,
              tenant: tenants.Tenant | None = None, match_id: str | None = None, rated: bool = True,
              tag: str | None = None, reserved: bool = False, spectator_chat: bool = False) -> Match:
    """A new match in the store (the rules service sets it up); shared by create, matchmaking, rematch and
    tournaments.

    ``owner`` (the creator's address) is charged the match and its bot seats until the match finishes; a
    ``tenant``'s match is charged to the tenant instead, with its quotas, and indexed for its history.
    ``rated``: whether a tenant's match is rated (see :mod:`.ratings`; matches without a tenant never are).
    ``tag``: what the match belongs to (``tournament:<id>``: the tournament is woken when it finishes).
    ``spectator_chat``: spectators may post to its chat too (see :mod:`.chat`).
    ``reserved``: its quota was taken ahead of time (a tournament's table, see
    :func:`.tournaments.machine.reservation`): it is charged nothing more.
    A match whose every seat is seated at once (bots, seats ``kept`` for named players) starts active, clocks
    running.
    """
    named = [seat.player for seat in seats if seat.player]
    if len(named) != len(set(named)):  # parse_seats' and take_seat's rule, held for every door that seats
        raise DomainError(Kind.CONFLICT, "player_seated", "a player sits at most once in a match")
    if tenant is not None:
        owner = tenant.owner
    if reserved:
        owner = None
    check_room(core)
    seed = secrets.randbits(63) if seed is None else seed
    game = core.rules.new_game(game_id, players, seed, options)
    meta = MatchMeta(
        game=game_id, players=players, options=options, seed=seed, seats=seats, seat_count=game.seats,
        sides=game.sides, to_act=game.to_act, status="active" if all_seated(seats) else "waiting", result=None,
        outcome=None, clock=clocks.initial(clock or clocks.parse(None), game.seats), takeover_level=takeover_level,
        rated=rated, tag=tag, spectator_chat=spectator_chat, tenant=tenant.name if tenant is not None else None)
    match_id = match_id or new_match_id()
    if owner is not None:
        charge(core, owner, match_id, seats, core.store.quota_until(meta.status, time.time()), tenant)
        meta = msgspec.structs.replace(meta, owner=owner)
    if tenant is not None:
        history.index(core.store, tenant.name, match_id, [s.player for s in seats], time.time())
    try:
        if meta.status == "active" and meta.clock is not None:  # everyone is seated: the clocks to act start now
            clock = clocks.advance(meta.clock, timed=control.timed(meta), to_act=meta.to_act, mover=None, version=0,
                                   now=time.time())
            meta = msgspec.structs.replace(meta, clock=clock)
            for seat, due in clocks.started(clock, 0):
                core.store.schedule(match_id, seat, 0, due)
        return commit_create(core, match_id, meta, game.state, game.derived())
    except StaleVersion:
        raise  # the match exists (made under the same Idempotency-Key): its charge is its own
    except Exception:
        if owner is not None:
            release(core, owner, match_id, seats)
        raise


def release(core: Core, owner: str, member: str, seats: list[Seat]) -> None:
    """Give back what a match (or ticket) that never came to be was charged."""
    pipe = core.redis.pipeline(transaction=False)
    quotas.release(pipe, owner, member, seats)
    pipe.execute()


def create(core: Core, caller: Caller, *, game: str, players: int, options: dict[str, Any] | None = None,
           seed: int | None = None, seats: list[Any] | None = None, join: bool = False,
           clock: dict[str, Any] | None = None, takeover_level: str | None = None,
           idempotency_key: str | None = None, spectator_chat: bool = False) -> dict[str, Any]:
    """``POST /v1/matches``: a new match (and seat 0's token with ``join``), as the caller sees it; with an
    ``idempotency_key``, the same match and token on every retry (see :mod:`.idempotency`)."""
    authorize_create(caller, "creating a match")
    count_request(core, caller)
    if seed is not None and not 0 <= seed < 2**63:
        raise DomainError(Kind.MALFORMED, "wrong_type", "seed must be an integer from 0 to 2^63-1")
    if not 1 <= players <= MAX_PLAYERS:
        raise DomainError(Kind.MALFORMED, "invalid_options", f"players must be from 1 to {MAX_PLAYERS}")
    parsed = parse_seats(seats, players, caller.tenant)
    clock_config = clocks.parse(clock)
    takeover = takeover_level if takeover_level is not None else control.DEFAULT_TAKEOVER_LEVEL
    if takeover not in BOT_LEVELS:
        raise DomainError(Kind.MALFORMED, "bad_seats", f"takeover_level must be one of {', '.join(BOT_LEVELS)}")
    if join and parsed[0].kind != "human":
        raise DomainError(Kind.MALFORMED, "bad_seats", "join needs seat 0 to be a human seat")

    def make(match_id: str | None = None, existing: Match | None = None, secret: str | None = None) -> dict[str, Any]:
        match = existing
        if match is None:
            try:
                match = new_match(core, game, players, options or {}, seed, parsed, clock_config, takeover,
                                  owner=caller.owner, tenant=caller.tenant, match_id=match_id,
                                  spectator_chat=spectator_chat)
            except StaleVersion:  # a twin under the same Idempotency-Key made it meanwhile
                match = load(core, str(match_id))
        own = MatchAccess(None, caller.tenant is not None)
        if not join:
            return status_doc(match, own, seat_view(core, match, None))
        seat = seat_with_secret(match, secret) if secret is not None else None
        if seat is None:  # version 1: a join's ``joined`` entry
            match, seat, token = take_seat(core, match.id, 0, caller=caller, secret=secret)
        else:
            token = f"{seat}.{secret}"
        return {**status_doc(match, MatchAccess(seat, own.players), seat_view(core, match, seat)), "token": token}

    if idempotency_key is None:
        return make()
    request = {"game": game, "players": players, "options": options, "seed": seed, "seats": seats, "join": join,
               "clock": clock, "takeover_level": takeover_level,
               **({"spectator_chat": True} if spectator_chat else {})}
    claim = idempotency.claim(core.redis, idempotency.caller_record(caller.owner, "create", idempotency_key),
                              idempotency_key, idempotency.fingerprint("create", request), {"id": new_match_id()})
    if (answer := claim.answer) is not None:
        return answer
    match_id = str(claim.record["id"])
    existing = None if claim.fresh else core.store.load(match_id)
    if existing is None and not claim.fresh and claim.young():
        raise claim.in_use()
    try:
        answer = make(match_id, existing, claim.secret)
    except Exception:
        if core.store.load(match_id) is None:
            claim.forget()
        raise
    return claim.complete(answer)
