"""Matchmaking: tickets per (game, players, options); humans are grouped into matches as they arrive.

A ticket id is a secret bearer of its own, but it travels in URLs (and so into logs): the seat token is
therefore not made when the ticket is matched. The match holds the seat ``reserved`` for the ticket (by
the ticket's hash), and the first read that finds the ticket matched makes the token, stores its hash in
the seat (a ``joined`` entry, through the commit pipeline, so exactly one reader gets it) and answers it
once, as join does; the ticket record never holds a token. After ``MEEPLE_BOT_FILL_S`` seconds without
enough humans, the next read fills the empty seats with bots. A waiting or matched ticket counts as one of
its owner's active matches until it is cancelled or expires. Who may read a ticket is the access policy's
call (:func:`~.access.authorize_ticket`): a tenant's ticket is its key's alone.

Keys: ``mm:ticket:{<ticket>}`` (the record), ``mm:ticket:{<ticket>}:events`` (one entry when it is matched or
cancelled: what a long-polling reader waits on), and per pool ``mm:{<digest>}:pool`` (sorted set: ticket by
rating), ``mm:{<digest>}:since`` (hash: ticket -> queued at) and ``mm:{<digest>}:player`` (hash: ticket -> the
tenant's player it seats, for named tickets: a group never seats one player twice).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from typing import Any

import orjson
import redis

from services.core.access import Caller, authorize_create, authorize_ticket, require_credential
from services.core.competition import ratings, skill
from services.core.errors import DomainError, Kind, busy
from services.core.limits import count_request
from services.core.match import idempotency
from services.core.match.commit import MAX_REBASES, commit
from services.core.match.matches import BOT_LEVELS, MAX_ID, charge, check_room, load, new_match, parse_player, release
from services.core.meta import Seat
from services.core.record.store import EVENTS_CHANNEL, StaleVersion, hash_token, new_token
from services.core.service import Core
from services.core.tenancy import tenants

TICKET_TTL_S = 3600
WAKE_TTL_S = 60
#: Tickets a grouping looks at (the lowest-rated first): bounds the work of one enqueue or poll.
POOL_SCAN = 500


def _queue(game: str, players: int, options: dict[str, Any], tenant: str | None = None) -> str:
    """One pool per (game, players, options) and tenant (a tenant's players meet each other only)."""
    parts: list[Any] = [game, players, options] if tenant is None else [game, players, options, tenant]
    digest = hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()[:24]
    return f"mm:{{{digest}}}"


def _take(core: Core, prefix: str, choose: Callable[[list[skill.Entry], float], list[skill.Entry] | None]
          ) -> list[str]:
    """Take the group ``choose`` picks off the pool, atomically across gateways (WATCH: a pool that changed
    meanwhile is read again)."""
    pool, since, named = _pool_keys(prefix)
    for _ in range(MAX_REBASES):
        with core.redis.pipeline(transaction=True) as pipe:  # a cluster's pipeline WATCHes only as a transaction
            try:
                pipe.watch(pool)
                rows: list[tuple[bytes, float]] = pipe.zrange(pool, 0, POOL_SCAN - 1, withscores=True)  # type: ignore[assignment]
                stamps: dict[bytes, bytes] = pipe.hgetall(since)  # type: ignore[assignment]
                players: dict[bytes, bytes] = pipe.hgetall(named)  # type: ignore[assignment]
                now = time.time()
                group = choose([skill.Entry(m.decode(), float(r), float(stamps.get(m, now)),
                                            players[m].decode() if m in players else None) for m, r in rows], now)
                if not group:
                    pipe.unwatch()
                    return []
                ids = [e.ticket for e in group]
                pipe.multi()
                pipe.zrem(pool, *ids)
                pipe.hdel(since, *ids)
                pipe.hdel(named, *ids)
                pipe.execute()
                return ids
            except redis.WatchError:
                continue
    return []


def _pool_keys(prefix: str) -> tuple[str, str, str]:
    """A pool's keys (one slot): tickets by rating, when each started waiting, and the player each seats."""
    return f"{prefix}:pool", f"{prefix}:since", f"{prefix}:player"


def _pool_add(core: Core, prefix: str, docs: list[dict[str, Any]]) -> None:
    """Put waiting tickets into their queue's pool, by rating, each with the time it started waiting (and the
    player it seats, if named)."""
    if not docs:
        return
    pool, since, named = _pool_keys(prefix)
    players = {d["ticket"]: d["player"] for d in docs if d.get("player")}
    pipe = core.redis.pipeline(transaction=True)
    pipe.zadd(pool, {d["ticket"]: d["rating"] for d in docs})
    pipe.hset(since, mapping={d["ticket"]: repr(d["created_at"]) for d in docs})
    if players:
        pipe.hset(named, mapping=players)
    for key in (pool, since, named):
        pipe.expire(key, TICKET_TTL_S)
    pipe.execute()


def _rating_of(core: Core, tenant: tenants.Tenant | None, player: str | None, game: str) -> float:
    """What a ticket is matched by: the tenant's player's rating (mu), else the default."""
    if tenant is None or player is None:
        return float(ratings.default()["mu"])
    found = ratings.of_player(core.redis, tenant.name, player, game).get(game)
    return float((found or ratings.default())["mu"])


def ticket_key(ticket: str) -> str:
    return f"mm:ticket:{{{ticket}}}"


def wake_key(ticket: str) -> str:
    """A stream the hub watches for a long-polling read: one entry when the ticket is matched or cancelled."""
    return f"mm:ticket:{{{ticket}}}:events"


def ticket_record(core: Core, ticket: str) -> dict[str, Any]:
    """The ticket's stored record, or 404 ``ticket_not_found`` (no access decided: see :func:`open_ticket`)."""
    raw = core.redis.get(ticket_key(ticket)) if len(ticket) <= MAX_ID else None
    if raw is None:
        raise DomainError(Kind.NOT_FOUND, "ticket_not_found", "no such ticket (it may have expired)")
    doc: dict[str, Any] = orjson.loads(raw)
    return doc


def _save(core: Core, doc: dict[str, Any], wake: bool = False) -> None:
    pipe = core.redis.pipeline(transaction=False)
    pipe.set(ticket_key(doc["ticket"]), orjson.dumps(doc), ex=TICKET_TTL_S)
    if wake:
        pipe.xadd(wake_key(doc["ticket"]), {"status": doc["status"]})
        pipe.expire(wake_key(doc["ticket"]), WAKE_TTL_S)
    done = pipe.execute()
    if wake:  # announced for the hubs as the match script does (see ``services/gateway/hub.py``)
        entry = done[1].decode() if isinstance(done[1], bytes) else str(done[1])
        core.redis.publish(EVENTS_CHANNEL, f"{wake_key(doc['ticket'])} {entry.split('-')[0]} ")


def public(doc: dict[str, Any], token: str | None = None) -> dict[str, Any]:
    """The ticket as clients see it; ``token`` only in the one response that hands it out."""
    return {**{k: doc.get(k) for k in ("ticket", "status", "game", "players", "options", "match_id", "seat")},
            "token": token, "token_issued": bool(doc.get("token_issued")) or token is not None}


def _reservation(ticket: str) -> str:
    return hash_token(ticket)[:32]


def _seat_tickets(core: Core, tickets: list[str], game: str, players: int, options: dict[str, Any],
                  tenant: str | None = None) -> None:
    """Create the match for these tickets (bots in the remaining seats, each human seat reserved for its
    ticket, with the ticket's player) and tell each ticket its seat."""
    docs = [ticket_record(core, t) for t in tickets]
    seats = [Seat(kind="human", reserved=_reservation(t), player=d.get("player") or None)
             for t, d in zip(tickets, docs, strict=True)]
    if len(tickets) < players:  # the bot level (rung) closest in rating to the table's humans
        mean = sum(float(d.get("rating", ratings.default()["mu"])) for d in docs) / len(docs)
        rungs = {lv: doc for lv, doc in ratings.bot_ratings(core.redis, game).items() if lv in BOT_LEVELS}
        level = skill.closest_level(rungs, mean)
        seats += [Seat(kind="bot", level=level) for _ in range(players - len(tickets))]
    try:
        match = new_match(core, game, players, options, None, seats,
                          tenant=tenants.by_name(core.redis, tenant) if tenant else None)
    except Exception:  # e.g. the rules service is down: nobody was seated, so every ticket waits again
        _pool_add(core, _queue(game, players, options, tenant), _still_waiting(core, tickets))
        raise
    for seat, doc in enumerate(docs):
        _save(core, {**ticket_record(core, doc["ticket"]), "status": "matched", "match_id": match.id, "seat": seat},
              wake=True)


def _still_waiting(core: Core, tickets: list[str]) -> list[dict[str, Any]]:
    """The records of those tickets that are still waiting (not cancelled, not expired)."""
    raws = [core.redis.get(ticket_key(t)) for t in tickets]  # one slot each on a cluster: no MGET
    docs = [orjson.loads(raw) for raw in raws if raw is not None]
    return [d for d in docs if d["status"] == "waiting"]


def _issue_token(core: Core, doc: dict[str, Any]) -> str | None:
    """The seat token of a matched ticket, made on the first read and never again (None after that)."""
    if doc["status"] != "matched" or doc.get("token_issued"):
        return None
    seat, reservation = doc["seat"], _reservation(doc["ticket"])
    for _ in range(MAX_REBASES):
        match = load(core, doc["match_id"])
        if match.meta.seats[seat].reserved != reservation:
            break  # another read of this ticket took the token first
        token = new_token(seat)
        try:
            commit(core, match, match.meta.with_seat(seat, token_hash=hash_token(token), reserved=None), None,
                   {"kind": "joined", "seat": seat, "to_act": match.meta.to_act})
        except StaleVersion:
            continue
        _save(core, {**doc, "token_issued": True})
        return token
    else:
        raise busy()
    _save(core, {**doc, "token_issued": True})
    return None


def with_defaults(game: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """The options a ticket asks for, each option the game takes and it leaves out at the game's default: players
    who send a default and players who leave it out ask for the same game, so they share a pool."""
    return {**{o["name"]: o["default"] for o in game.get("options", [])}, **options}


def enqueue(core: Core, caller: Caller, *, game: str, players: int, options: dict[str, Any] | None = None,
            player: str | None = None, idempotency_key: str | None = None) -> dict[str, Any]:
    """``POST /v1/matchmaking``: a new ticket, seated at once if a group can play (then with its token); with an
    ``idempotency_key``, the same ticket (and token) on every retry (see :mod:`.idempotency`)."""
    authorize_create(caller, "queueing")
    count_request(core, caller)
    options = options or {}
    tenant = caller.tenant
    named = parse_player(player, tenant) if player is not None else None
    catalogue = core.rules.catalogue()
    if game not in catalogue:
        raise DomainError(Kind.MALFORMED, "unknown_game", f"unknown game {game!r}")
    if not catalogue[game]["min_players"] <= players <= catalogue[game]["max_players"]:
        raise DomainError(Kind.MALFORMED, "invalid_options", f"{game} is for {catalogue[game]['min_players']}-"
                                                             f"{catalogue[game]['max_players']} players")
    if options:  # options the game does not take are refused now (400 invalid_options), not when a group is seated
        core.rules.new_game(game, players, 0, options, derive=False)
    options = with_defaults(catalogue[game], options)
    if idempotency_key is None:
        return _enqueue(core, caller, game, players, options, named, secrets.token_urlsafe(18), kept=False)
    request = {"game": game, "players": players, "options": options, "player": player}
    claim = idempotency.claim(core.redis, idempotency.caller_record(caller.owner, "enqueue", idempotency_key),
                              idempotency_key, idempotency.fingerprint("enqueue", request),
                              {"id": secrets.token_urlsafe(18)})
    if (answer := claim.answer) is not None:
        return answer
    ticket = str(claim.record["id"])
    if not claim.fresh:
        raw = core.redis.get(ticket_key(ticket))
        if raw is not None:  # the first request queued it, and its answer was lost (or it could not seat its group)
            doc = orjson.loads(raw)
            if doc["status"] == "waiting":
                _group(core, game, players, options, doc["tenant"])
                doc = ticket_record(core, ticket)  # seated just now, perhaps
            return claim.complete(settle(core, doc))
        if claim.young():
            raise claim.in_use()
    try:
        answer = _enqueue(core, caller, game, players, options, named, ticket)
    except Exception:
        if core.redis.get(ticket_key(ticket)) is None:
            claim.forget()
        raise
    return claim.complete(answer)


def _enqueue(core: Core, caller: Caller, game: str, players: int, options: dict[str, Any], player: str | None,
             ticket: str, kept: bool = True) -> dict[str, Any]:
    """Queue a new ticket and seat a group if one can play. ``kept``: the request has an Idempotency-Key, so the
    ticket outlives a failed answer (its retry finds it); without one, a ticket whose request fails leaves the
    queue, since nobody could ask for it again."""
    check_room(core)
    tenant = caller.tenant
    charge(core, caller.owner, f"t:{ticket}", [], time.time() + TICKET_TTL_S, tenant)
    doc: dict[str, Any] = {"ticket": ticket, "status": "waiting", "game": game, "players": players,
                           "options": options, "created_at": time.time(), "match_id": None, "seat": None,
                           "owner": caller.owner, "tenant": tenant.name if tenant else None, "player": player,
                           "rating": _rating_of(core, tenant, player, game)}
    _save(core, doc)
    prefix = _queue(game, players, options, doc["tenant"])
    _pool_add(core, prefix, [doc])
    try:
        _group(core, game, players, options, doc["tenant"])
    except Exception:
        if not kept and (own := _still_waiting(core, [ticket])):
            _withdraw(core, own[0])
        raise
    doc = ticket_record(core, ticket)
    return public(doc, _issue_token(core, doc))


def _group(core: Core, game: str, players: int, options: dict[str, Any], tenant: str | None) -> None:
    """Seat a group of the queue's waiting tickets if one can play now."""
    cfg = core.config
    taken = _take(core, _queue(game, players, options, tenant),
                  lambda entries, now: skill.pick_group(entries, players, now, cfg.mm_window, cfg.mm_widen_per_s))
    if taken:
        _seat_tickets(core, taken, game, players, options, tenant)


def open_ticket(core: Core, caller: Caller, ticket: str, *, count: bool = True) -> dict[str, Any]:
    """The ticket's record, if the caller may read it (the request counted unless ``count`` is False)."""
    require_credential(caller)
    if count:
        count_request(core, caller)
    doc = ticket_record(core, ticket)
    authorize_ticket(caller, doc)
    return doc


def fill_in(core: Core, doc: dict[str, Any]) -> float | None:
    """Seconds until a waiting ticket's empty seats are due to be filled with bots (None: never)."""
    fill_after = core.config.bot_fill_s
    if doc["status"] != "waiting" or fill_after <= 0:
        return None
    return float(doc["created_at"]) + fill_after - time.time()


def settle(core: Core, doc: dict[str, Any]) -> dict[str, Any]:
    """A read of the ticket: bots fill its seats once that is due, and the first read that finds it matched
    takes its seat token."""
    due = fill_in(core, doc)
    if due is not None and due <= 0:
        ticket = doc["ticket"]

        def with_nearest(entries: list[skill.Entry], _: float) -> list[skill.Entry] | None:
            anchor = next((e for e in entries if e.ticket == ticket), None)  # gone: another read seated it
            return None if anchor is None else [anchor, *skill.nearest(entries, anchor, doc["players"] - 1)]

        group = _take(core, _queue(doc["game"], doc["players"], doc["options"], doc.get("tenant")), with_nearest)
        if group:
            _seat_tickets(core, group, doc["game"], doc["players"], doc["options"], doc.get("tenant"))
        doc = ticket_record(core, ticket)
    return public(doc, _issue_token(core, doc))


def cancel(core: Core, caller: Caller, ticket: str) -> dict[str, Any]:
    """``DELETE /v1/matchmaking/{ticket}``: leave the queue (409 once matched); the owner's charge is released."""
    doc = open_ticket(core, caller, ticket)
    if doc["status"] != "waiting":
        raise DomainError(Kind.CONFLICT, "ticket_matched", "the ticket already has a match")
    _withdraw(core, doc)
    return public({**doc, "status": "cancelled"})


def _withdraw(core: Core, doc: dict[str, Any]) -> None:
    """Take a waiting ticket out of its queue for good (cancelled); its owner's charge is released."""
    ticket = doc["ticket"]
    pool, since, named = _pool_keys(_queue(doc["game"], doc["players"], doc["options"], doc.get("tenant")))
    pipe = core.redis.pipeline(transaction=True)
    pipe.zrem(pool, ticket)
    pipe.hdel(since, ticket)
    pipe.hdel(named, ticket)
    pipe.execute()
    _save(core, {**doc, "status": "cancelled"}, wake=True)
    if doc.get("owner"):
        release(core, doc["owner"], f"t:{ticket}", [])
