"""Matchmaking: tickets per (game, players, options); humans are grouped into matches as they arrive.

A ticket id is a secret bearer of its own, but it travels in URLs (and so into logs): the seat token is
therefore not made when the ticket is matched. The match holds the seat ``reserved`` for the ticket (by
the ticket's hash), and the first read that finds the ticket matched makes the token, stores its hash in
the seat (a ``joined`` entry, through the compare-and-set, so exactly one reader gets it) and answers it
once, as join does; the ticket record never holds a token. After ``MEEPLE_BOT_FILL_S`` seconds without
enough humans, the next poll fills the empty seats with bots. A waiting or matched ticket counts as one of
its client's active matches (``MEEPLE_MAX_ACTIVE_MATCHES_PER_IP``) until it is cancelled or expires.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from typing import Any

import orjson
import redis
from flask import Blueprint, Response, jsonify

from services.core import quotas, ratings, skill, tenants
from services.core.moves import MAX_REBASES, commit
from services.core.store import EVENTS_CHANNEL, StaleVersion, hash_token, new_token

from ..context import gateway
from ..errors import ApiError
from ..parking import resumed, wait_or_park
from .common import client_ip, identify, int_arg, json_body, load_match, rate_limit
from .events import client_ident
from .matches import BOT_LEVELS, charge, check_room, create, parse_player

bp = Blueprint("matchmaking", __name__)

TICKET_TTL_S = 3600
WAKE_TTL_S = 60
#: Tickets a grouping looks at (the lowest-rated first): bounds the work of one enqueue or poll.
POOL_SCAN = 500


def _queue(game: str, players: int, options: dict[str, Any], tenant: str | None = None) -> str:
    """One pool per (game, players, options) and tenant (a tenant's players meet each other only):
    ``<prefix>:pool`` (sorted set: ticket by rating) and ``<prefix>:since`` (hash: ticket -> queued at)."""
    parts: list[Any] = [game, players, options] if tenant is None else [game, players, options, tenant]
    digest = hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()[:24]
    return f"mm:{{{digest}}}"


def _take(prefix: str, choose: Callable[[list[skill.Entry], float], list[skill.Entry] | None]) -> list[str]:
    """Take the group ``choose`` picks off the pool, atomically across gateways (WATCH: a pool that changed
    meanwhile is read again)."""
    client = gateway().store.redis
    pool, since = f"{prefix}:pool", f"{prefix}:since"
    for _ in range(MAX_REBASES):
        with client.pipeline(transaction=True) as pipe:  # a cluster's pipeline WATCHes only as a transaction
            try:
                pipe.watch(pool)
                rows: list[tuple[bytes, float]] = pipe.zrange(pool, 0, POOL_SCAN - 1, withscores=True)  # type: ignore[assignment]
                stamps: dict[bytes, bytes] = pipe.hgetall(since)  # type: ignore[assignment]
                now = time.time()
                group = choose([skill.Entry(m.decode(), float(r), float(stamps.get(m, now))) for m, r in rows], now)
                if not group:
                    pipe.unwatch()
                    return []
                ids = [e.ticket for e in group]
                pipe.multi()
                pipe.zrem(pool, *ids)
                pipe.hdel(since, *ids)
                pipe.execute()
                return ids
            except redis.WatchError:
                continue
    return []


def _rating_of(tenant: tenants.Tenant | None, player: str | None, game: str) -> float:
    """What a ticket is matched by: the tenant's player's rating (mu), else the default."""
    if tenant is None or player is None:
        return float(ratings.default()["mu"])
    found = ratings.of_player(gateway().store.redis, tenant.name, player, game).get(game)
    return float((found or ratings.default())["mu"])


def _ticket_key(ticket: str) -> str:
    return f"mm:ticket:{{{ticket}}}"


def _load(ticket: str) -> dict[str, Any]:
    raw = gateway().store.redis.get(_ticket_key(ticket))
    if raw is None or len(ticket) > 64:
        raise ApiError(404, "ticket_not_found", "no such ticket (it may have expired)")
    doc: dict[str, Any] = orjson.loads(raw)
    return doc


def _wake_key(ticket: str) -> str:
    """A stream the hub watches for a long-polling ``GET``: one entry when the ticket is matched or cancelled."""
    return f"mm:ticket:{{{ticket}}}:events"


def _save(doc: dict[str, Any], wake: bool = False) -> None:
    pipe = gateway().store.redis.pipeline(transaction=False)
    pipe.set(_ticket_key(doc["ticket"]), orjson.dumps(doc), ex=TICKET_TTL_S)
    if wake:
        pipe.xadd(_wake_key(doc["ticket"]), {"status": doc["status"]})
        pipe.expire(_wake_key(doc["ticket"]), WAKE_TTL_S)
    done = pipe.execute()
    if wake:  # announced for a cluster's hub as the match script does (see ``hub.py``)
        entry = done[1].decode() if isinstance(done[1], bytes) else str(done[1])
        gateway().store.redis.publish(EVENTS_CHANNEL, f"{_wake_key(doc['ticket'])} {entry.split('-')[0]} ")


def _public(doc: dict[str, Any], token: str | None = None) -> dict[str, Any]:
    """The ticket as clients see it; ``token`` only in the one response that hands it out."""
    return {**{k: doc.get(k) for k in ("ticket", "status", "game", "players", "options", "match_id", "seat")},
            "token": token, "token_issued": bool(doc.get("token_issued")) or token is not None}


def _reservation(ticket: str) -> str:
    return hash_token(ticket)[:32]


def _seat_tickets(tickets: list[str], game: str, players: int, options: dict[str, Any],
                  tenant: str | None = None) -> None:
    """Create the match for these tickets (bots in the remaining seats, each human seat reserved for its
    ticket, with the ticket's player) and tell each ticket its seat."""
    docs = [_load(t) for t in tickets]
    seats: list[dict[str, Any]] = [{"kind": "human", "token_hash": None, "reserved": _reservation(t),
                                    **({"player": d["player"]} if d.get("player") else {})}
                                   for t, d in zip(tickets, docs, strict=True)]
    if len(tickets) < players:  # the bot level (rung) closest in rating to the table's humans
        mean = sum(float(d.get("rating", ratings.default()["mu"])) for d in docs) / len(docs)
        rungs = {lv: doc for lv, doc in ratings.bot_ratings(gateway().store.redis, game).items() if lv in BOT_LEVELS}
        level = skill.closest_level(rungs, mean)
        seats += [{"kind": "bot", "level": level, "token_hash": None} for _ in range(players - len(tickets))]
    match = create(game, players, options, None, seats,
                   tenant=tenants.by_name(gateway().store.redis, tenant) if tenant else None)
    for seat, doc in enumerate(docs):
        _save({**_load(doc["ticket"]), "status": "matched", "match_id": match.id, "seat": seat}, wake=True)


def _issue_token(doc: dict[str, Any]) -> str | None:
    """The seat token of a matched ticket, made on the first read and never again (None after that)."""
    if doc["status"] != "matched" or doc.get("token_issued"):
        return None
    gw = gateway()
    seat, reservation = doc["seat"], _reservation(doc["ticket"])
    for _ in range(MAX_REBASES):
        match = load_match(doc["match_id"])
        seats = [dict(s) for s in match.meta["seats"]]
        if seats[seat].get("reserved") != reservation:
            break  # another read of this ticket took the token first
        token = new_token(seat)
        seats[seat].update(token_hash=hash_token(token))
        del seats[seat]["reserved"]
        try:
            commit(gw.store, match, {**match.meta, "seats": seats}, None,
                   {"kind": "joined", "seat": seat, "to_act": match.meta["to_act"]})
        except StaleVersion:
            continue
        _save({**doc, "token_issued": True})
        return token
    else:
        raise ApiError(409, "busy", "the match changed too often; retry")
    _save({**doc, "token_issued": True})
    return None


@bp.post("/v1/matchmaking")
def enqueue() -> tuple[Response, int]:
    tenant = identify("queueing")
    rate_limit()
    body = json_body({"game": str, "players": int, "options": dict, "player": str}, required=("game", "players"))
    gw = gateway()
    game, players, options = body["game"], body["players"], body.get("options", {})
    player = parse_player(body["player"], tenant) if "player" in body else None
    catalogue = {g["id"]: g for g in gw.rules.list_games()}
    if game not in catalogue:
        raise ApiError(400, "unknown_game", f"unknown game {game!r}")
    if not catalogue[game]["min_players"] <= players <= catalogue[game]["max_players"]:
        raise ApiError(400, "invalid_options", f"{game} is for {catalogue[game]['min_players']}-"
                                               f"{catalogue[game]['max_players']} players")
    check_room()
    ticket = secrets.token_urlsafe(18)
    owner = f"ip:{client_ip()}" if tenant is None else tenant.owner
    charge(owner, f"t:{ticket}", [], time.time() + TICKET_TTL_S, tenant)
    doc = {"ticket": ticket, "status": "waiting", "game": game, "players": players, "options": options,
           "created_at": time.time(), "match_id": None, "seat": None, "owner": owner,
           "tenant": tenant.name if tenant else None, "player": player, "rating": _rating_of(tenant, player, game)}
    _save(doc)
    prefix = _queue(game, players, options, doc["tenant"])
    pipe = gw.store.redis.pipeline(transaction=True)
    pipe.zadd(f"{prefix}:pool", {ticket: doc["rating"]})
    pipe.hset(f"{prefix}:since", ticket, repr(doc["created_at"]))
    pipe.expire(f"{prefix}:pool", TICKET_TTL_S)
    pipe.expire(f"{prefix}:since", TICKET_TTL_S)
    pipe.execute()
    cfg = gw.config
    taken = _take(prefix, lambda entries, now: skill.pick_group(entries, players, now, cfg.mm_window,
                                                                 cfg.mm_widen_per_s))
    if taken:
        _seat_tickets(taken, game, players, options, doc["tenant"])
    doc = _load(ticket)
    return jsonify(_public(doc, _issue_token(doc))), 201


@bp.get("/v1/matchmaking/<ticket>")
def poll(ticket: str) -> Response:
    """The ticket; with ``wait=S``, a long-poll that answers once it is matched or cancelled (or after S s,
    or when the bot fill is due: that poll seats the bots)."""
    again = resumed()
    if again is None:
        rate_limit()
    gw = gateway()
    wait = int_arg("wait", 0, 0, gw.config.long_poll_max_s)
    doc = _load(ticket)
    fill_after = gw.config.bot_fill_s
    if doc["status"] == "waiting" and wait:
        block = again.remaining() if again is not None else float(wait)
        if fill_after > 0:
            block = min(block, doc["created_at"] + fill_after - time.time())
        if block > 0.01:
            if wait_or_park(gw.hub, None, "ticket", client_ident(), _wake_key(ticket), -1, None,
                            time.monotonic() + block, {}):
                return Response(status=204)  # never sent: the worker holds the connection until a wake-up
            doc = _load(ticket)
    if doc["status"] == "waiting" and fill_after > 0 and time.time() - doc["created_at"] >= fill_after:
        def with_nearest(entries: list[skill.Entry], _: float) -> list[skill.Entry] | None:
            anchor = next((e for e in entries if e.ticket == ticket), None)  # gone: another poll seated it
            return None if anchor is None else [anchor, *skill.nearest(entries, anchor, doc["players"] - 1)]

        group = _take(_queue(doc["game"], doc["players"], doc["options"], doc.get("tenant")), with_nearest)
        if group:
            _seat_tickets(group, doc["game"], doc["players"], doc["options"], doc.get("tenant"))
        doc = _load(ticket)
    return jsonify(_public(doc, _issue_token(doc)))


@bp.delete("/v1/matchmaking/<ticket>")
def cancel(ticket: str) -> Response:
    rate_limit()
    gw = gateway()
    doc = _load(ticket)
    if doc["status"] != "waiting":
        raise ApiError(409, "ticket_matched", "the ticket already has a match")
    prefix = _queue(doc["game"], doc["players"], doc["options"], doc.get("tenant"))
    pipe = gw.store.redis.pipeline(transaction=True)
    pipe.zrem(f"{prefix}:pool", ticket)
    pipe.hdel(f"{prefix}:since", ticket)
    pipe.execute()
    _save({**doc, "status": "cancelled"}, wake=True)
    if doc.get("owner"):
        pipe = gw.store.redis.pipeline(transaction=False)
        quotas.release(pipe, doc["owner"], f"t:{ticket}", [])
        pipe.execute()
    return jsonify(_public({**doc, "status": "cancelled"}))
