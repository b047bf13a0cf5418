"""Matches: open one for a caller, create, join, read, leave, reclaim, resign, rematch, replay, hint.

Every function takes the :class:`~.service.Core` and the :class:`~.access.Caller` and either answers a
document (a dict the transport serialises) or raises a :class:`~.errors.DomainError`. :func:`open_match` is
how every door reaches a match: the caller's request is counted, the match loaded (with what the caller will
read of it, in the same round trip), the seat token verified and the access policy applied.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import orjson

from services.core.access import (
    Action,
    Caller,
    MatchAccess,
    authorize_create,
    authorize_match,
    authorize_tenant,
    require_credential,
)
from services.core.errors import DomainError, Kind, busy, not_found
from services.core.limits import count_request, enforce, ip_ident, limit_of, token_ident
from services.core.match import chat, clocks, history, idempotency
from services.core.match.commit import MAX_REBASES, commit
from services.core.match.commit import create as commit_create
from services.core.match.reads import SPECTATOR, caller_fields, log_entry, seat_legal_moves, seat_view, status_doc
from services.core.meta import MatchMeta, Outcome, Seat
from services.core.record import control
from services.core.record.store import Match, StaleVersion, hash_token, new_match_id, new_token
from services.core.service import Core
from services.core.tenancy import quotas, tenants

#: Weakest first (the levels of ``ai/bot.py``; the core does not import ``ai/``).
BOT_LEVELS = ("novice", "easy", "casual", "normal", "strong", "hard")
#: Players a match may be created for (each game's own range is narrower; the rules service checks it).
MAX_PLAYERS = 16
#: Match and ticket ids longer than this are unknown without a lookup.
MAX_ID = 64


@dataclass
class Opened:
    """A match as a door opened it for a caller."""

    match: Match
    access: MatchAccess
    #: The stored answer of the request's ``Idempotency-Key``, when one was asked for and exists.
    done: dict[str, Any] | None = None


def open_match(core: Core, caller: Caller, match_id: str, action: Action, *, view: bool = False,
               legal: bool = False, log_from: int | None = None, idempotency_key: str | None = None,
               connected_for: float = 0.0, count: bool = True) -> Opened:
    """The rate limit, the match (with the caller's view / legal moves, the log from ``log_from`` and the stored
    answer of ``idempotency_key`` if asked for: one Redis round trip), the token check and the access decision.

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
        found = store.load(match_id, fields, log_from)
        if found is not None and idempotency_key is not None:
            done = store.idempotent_get(match_id, idempotency_key)
    else:
        token = caller.token
        ident = token_ident(token) if token else caller.tenant.owner if caller.tenant else ip_ident(caller.address)
        found, (hits, reset), done = store.load_counted(match_id, ident, idempotency_key, fields, log_from,
                                                        scoped=token is not None)
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


# -- reading ---------------------------------------------------------------------------------------------------

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


def post_chat(core: Core, caller: Caller, match_id: str, *, text: str | None = None,
              preset: str | None = None) -> dict[str, Any]:
    """``POST /v1/matches/{id}/chat`` (and the WebSocket's ``chat``): the caller's message, as a seat or, where the
    match allows it, as a spectator (see :mod:`.chat`)."""
    chat.check_body(text, preset)
    opened = open_match(core, caller, match_id, Action.CHAT)
    return chat.post(core, caller, opened.match, opened.access, text=text, preset=preset)


def redact_chat(core: Core, caller: Caller, match_id: str, message_id: int) -> None:
    """``DELETE /v1/matches/{id}/chat/{message_id}``: the match's tenant's key redacts a message."""
    authorize_tenant(caller)  # a key first: without one, nothing is said of the match
    chat.redact(core, open_match(core, caller, match_id, Action.MODERATE).match, message_id)


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


def hint(core: Core, caller: Caller, match_id: str) -> dict[str, Any]:
    """The ``HINT_LEVEL`` bot's move for the caller's own seat, computed by a bot worker (never in the gateway).

    The search determinizes from the caller's seat, so a hint can never reveal another seat's cards.
    """
    from services.core.match import hints

    opened = open_match(core, caller, match_id, Action.ACT)
    match, seat = opened.match, opened.access.seat
    assert seat is not None
    if match.meta.status != "active" or seat not in match.meta.to_act:
        raise DomainError(Kind.CONFLICT, "not_your_turn", "there is no decision of yours to hint at")
    tenant = match.meta.tenant
    if tenant:  # the tenant's hint budget, shared by all its matches
        budget = tenants.quotas_of(core.redis, tenant)["hints"]
        used, reset = core.store.hit(f"hints:{tenants.owner_of(tenant)}")
        if budget > 0 and used > budget:
            raise DomainError(Kind.LIMITED, "hint_limited", f"tenant {tenant}: at most {budget} hints a minute; "
                                                            f"retry in {reset} s", retry_after=reset)
    cfg = core.config
    move = hints.ask(core.redis, match, seat, wait_s=cfg.hint_wait_s, budget_s=cfg.hint_budget_s,
                     per_minute=cfg.hints_per_seat_minute)
    return {"version": match.version, "seat": seat, "move": move, "level": hints.HINT_LEVEL}


# -- creating ---------------------------------------------------------------------------------------------------

def parse_player(raw: Any, tenant: tenants.Tenant | None) -> str:
    """A tenant's user id (``"player"``): only with an API key, 1-64 characters of ``[A-Za-z0-9._:@-]``."""
    if tenant is None:
        raise DomainError(Kind.MALFORMED, "player_needs_api_key", "'player' names a tenant's user: send it with "
                                                                  "an API key")
    if not isinstance(raw, str) or not tenants.NAME_RE.match(raw):
        raise DomainError(Kind.MALFORMED, "bad_player", "player must be 1-64 characters: letters, digits and "
                                                        ". _ : @ - (not first)")
    return raw


def parse_seats(raw: Any, players: int, tenant: tenants.Tenant | None = None) -> list[Seat]:
    def bad(message: str) -> DomainError:
        return DomainError(Kind.MALFORMED, "bad_seats", message)

    if raw is None:
        return [Seat(kind="human") for _ in range(players)]
    if len(raw) != players:
        raise bad(f"seats must list exactly {players} seats")
    seats: list[Seat] = []
    named: set[str] = set()
    for i, seat in enumerate(raw):
        if not isinstance(seat, dict) or seat.get("kind") not in ("human", "bot"):
            raise bad(f"seat {i}: kind must be 'human' or 'bot'")
        if set(seat) - {"kind", "level", "player"}:
            raise bad(f"seat {i}: only 'kind', 'level' and 'player' are allowed")
        if "player" in seat:
            if seat["kind"] != "human":
                raise bad(f"seat {i}: only a human seat names a player")
            player = parse_player(seat["player"], tenant)
            if player in named:
                raise bad(f"seat {i}: player {player!r} already sits in another seat")
            named.add(player)
            seats.append(Seat(kind="human", player=player))
            continue
        if seat["kind"] == "bot":
            level = seat.get("level", "normal")
            if level not in BOT_LEVELS:
                raise bad(f"seat {i}: level must be one of {', '.join(BOT_LEVELS)}")
            seats.append(Seat(kind="bot", level=level))
        else:
            if "level" in seat:
                raise bad(f"seat {i}: a human seat has no level")
            seats.append(Seat(kind="human"))
    return seats


def all_seated(seats: list[Seat]) -> bool:
    """Every seat has its player: a bot, a token, a matchmaking ticket that holds it, a named player it is kept for
    (a tournament's table), or a human who left."""
    return all(s.kind == "bot" or s.token_hash or s.reserved or s.kept or s.left for s in seats)


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
              seats: list[Seat], clock: dict[str, Any] | None = None,
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
        return _seat_answer(core, match, taken, token,
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

    return _seat_once(claim, joined, lambda secret: answer(*take_seat(core, match_id, seat, named, caller=caller,
                                                                       secret=secret)))


def _seat_once(claim: idempotency.Claim, seated: Callable[[str], dict[str, Any] | None],
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


def _seat_answer(core: Core, match: Match, seat: int, token: str, players: bool) -> dict[str, Any]:
    """A seat just taken, as its caller sees it: the seat's status and view, the seat and its token (shown once).
    ``players``: the caller is the match's tenant (player ids shown)."""
    return {**status_doc(match, MatchAccess(seat, players), seat_view(core, match, seat)), "seat": seat,
            "token": token}


def abort(core: Core, match_id: str, reason: str, *, tenant: str | None = None) -> Match | None:
    """End a running match now, with no winner and unrated: ``outcome = {"ended_by": "aborted", "reason": ...,
    "winners": [], ...}`` (a tournament round's deadline, a cancelled tournament). Nothing if it is finished
    already; None if there is no such match (or, with ``tenant``, it is another tenant's)."""
    for _ in range(MAX_REBASES):
        match = core.store.load(match_id) if len(match_id) <= MAX_ID else None
        if match is None or (tenant is not None and match.meta.tenant != tenant):
            return None
        meta = match.meta
        if meta.status == "finished":
            return match
        outcome = Outcome(ended_by="aborted", reason=reason, winners=[], forfeited=control.forfeited(meta),
                          scores=None, ratings=None)
        try:
            ended = msgspec.structs.replace(meta, status="finished", to_act=[], outcome=outcome)
            return commit(core, match, ended, None, {"kind": "aborted", "seat": None, "to_act": []})
        except StaleVersion:
            continue
    raise busy()


# -- seats that change hands ------------------------------------------------------------------------------------

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
        if meta.clock:
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


def rematch_seats(meta: MatchMeta) -> list[Seat]:
    """The same seats again: bots stay bots, a human who left is replaced by a bot, the others are free."""
    seats = []
    for info in meta.seats:
        if info.kind == "bot":
            seats.append(Seat(kind="bot", level=info.level or "normal"))
        elif info.left:
            seats.append(Seat(kind="bot", level=meta.takeover_level or control.DEFAULT_TAKEOVER_LEVEL))
        else:
            seats.append(Seat(kind="human", player=info.player or None))
    return seats


def rematch(core: Core, caller: Caller, match_id: str, *, idempotency_key: str | None = None) -> dict[str, Any]:
    """The next match with the same seats; each human takes their seat (and a new token) with this call. With an
    ``idempotency_key``, the same seat and token on every retry, as a join (the token is shown once: an answer
    lost on the way must not lose the seat)."""
    opened = open_match(core, caller, match_id, Action.ACT)
    if idempotency_key is None:
        return _rematch(core, caller, match_id, opened)
    claim = idempotency.claim(core.redis, idempotency.match_record(match_id, caller.owner, idempotency_key),
                              idempotency_key, idempotency.fingerprint("rematch", {"seat": opened.access.seat}), {})

    def seated(secret: str) -> dict[str, Any] | None:
        next_id = opened.match.meta.rematch
        nxt = core.store.load(next_id) if next_id else None
        if nxt is None or (taken := seat_with_secret(nxt, secret)) is None:
            return None
        return _seat_answer(core, nxt, taken, f"{taken}.{secret}", opened.access.players)

    return _seat_once(claim, seated, lambda secret: _rematch(core, caller, match_id, opened, secret=secret))


def _rematch(core: Core, caller: Caller, match_id: str, opened: Opened, *, secret: str | None = None
             ) -> dict[str, Any]:
    for _ in range(MAX_REBASES):
        match, seat = opened.match, opened.access.seat
        assert seat is not None
        meta = match.meta
        if meta.status != "finished":
            raise DomainError(Kind.CONFLICT, "match_not_finished", "a rematch can start once this match is over")
        next_id = meta.rematch
        if next_id is None:
            clock = {k: v for k, v in (meta.clock or {}).items() if k != "seats"}
            tenant = tenants.by_name(core.redis, meta.tenant) if meta.tenant else None
            fresh = new_match(core, meta.game, meta.players, meta.options, None, rematch_seats(meta), clock,
                              meta.takeover_level, owner=caller.owner, tenant=tenant, rated=meta.rated,
                              spectator_chat=meta.spectator_chat)
            try:
                commit(core, match, msgspec.structs.replace(meta, rematch=fresh.id),
                       None, {"kind": "rematch", "seat": seat, "to_act": [], "rematch": fresh.id})
            except StaleVersion:  # someone else linked a rematch first: use theirs
                core.store.delete(fresh.id)
                if fresh.meta.owner:
                    release(core, fresh.meta.owner, fresh.id, fresh.meta.seats)
                opened = open_match(core, caller, match_id, Action.ACT, count=False)
                continue
            next_id = fresh.id
        nxt, taken, token = take_seat(core, next_id, seat, secret=secret)
        return _seat_answer(core, nxt, taken, token, opened.access.players)
    raise busy()
