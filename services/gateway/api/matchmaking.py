"""Matchmaking: tickets per (game, players, options); humans are grouped into matches as they arrive.

A ticket id is a secret bearer of its own: whoever holds it can read the seat token once matched.
After ``MEEPLE_BOT_FILL_S`` seconds without enough humans, the next poll fills the empty seats with bots.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from typing import Any

import orjson
from flask import Blueprint, Response, jsonify

from ..context import gateway
from ..errors import ApiError
from ..parking import resumed, wait_or_park
from ..store import hash_token, new_token
from .common import int_arg, json_body, rate_limit
from .events import client_ident
from .matches import create

bp = Blueprint("matchmaking", __name__)

TICKET_TTL_S = 3600
WAKE_TTL_S = 60
#: Take ``n`` tickets off a queue only if ``n`` are there: grouping is atomic across gateways.
_TAKE = """
if redis.call('LLEN', KEYS[1]) < tonumber(ARGV[1]) then return {} end
return redis.call('LPOP', KEYS[1], ARGV[1])
"""
_TAKE_UP_TO = """
local n = math.min(redis.call('LLEN', KEYS[1]), tonumber(ARGV[1]))
if n == 0 then return {} end
return redis.call('LPOP', KEYS[1], n)
"""


def _queue(game: str, players: int, options: dict[str, Any]) -> str:
    digest = hashlib.sha256(orjson.dumps([game, players, options], option=orjson.OPT_SORT_KEYS)).hexdigest()[:24]
    return f"mm:{{{digest}}}:queue"


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
    pipe.execute()


def _public(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: doc.get(k) for k in ("ticket", "status", "game", "players", "options", "match_id", "seat", "token")}


def _seat_tickets(tickets: list[str], game: str, players: int, options: dict[str, Any]) -> None:
    """Create the match for these tickets (bots in the remaining seats) and tell each ticket its seat."""
    tokens = [new_token(seat) for seat in range(len(tickets))]
    seats: list[dict[str, Any]] = [{"kind": "human", "token_hash": hash_token(t)} for t in tokens]
    seats += [{"kind": "bot", "level": "normal", "token_hash": None} for _ in range(players - len(tickets))]
    match = create(game, players, options, None, seats)
    for seat, (ticket, token) in enumerate(zip(tickets, tokens, strict=True)):
        doc = _load(ticket)
        _save({**doc, "status": "matched", "match_id": match.id, "seat": seat, "token": token}, wake=True)


@bp.post("/v1/matchmaking")
def enqueue() -> tuple[Response, int]:
    rate_limit()
    body = json_body({"game": str, "players": int, "options": dict}, required=("game", "players"))
    gw = gateway()
    game, players, options = body["game"], body["players"], body.get("options", {})
    catalogue = {g["id"]: g for g in gw.rules.list_games()}
    if game not in catalogue:
        raise ApiError(400, "unknown_game", f"unknown game {game!r}")
    if not catalogue[game]["min_players"] <= players <= catalogue[game]["max_players"]:
        raise ApiError(400, "invalid_options", f"{game} is for {catalogue[game]['min_players']}-"
                                               f"{catalogue[game]['max_players']} players")
    ticket = secrets.token_urlsafe(18)
    doc = {"ticket": ticket, "status": "waiting", "game": game, "players": players, "options": options,
           "created_at": time.time(), "match_id": None, "seat": None, "token": None}
    _save(doc)
    queue = _queue(game, players, options)
    gw.store.redis.rpush(queue, ticket)
    gw.store.redis.expire(queue, TICKET_TTL_S)
    taken = gw.store.redis.eval(_TAKE, 1, queue, players)
    if taken:
        _seat_tickets([t.decode() for t in taken], game, players, options)
    return jsonify(_public(_load(ticket))), 201


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
        queue = _queue(doc["game"], doc["players"], doc["options"])
        if gw.store.redis.lrem(queue, 1, ticket):  # only one poller wins the ticket
            others = gw.store.redis.eval(_TAKE_UP_TO, 1, queue, doc["players"] - 1) or []
            group = [ticket, *(t.decode() for t in others)]
            _seat_tickets(group, doc["game"], doc["players"], doc["options"])
        doc = _load(ticket)
    return jsonify(_public(doc))


@bp.delete("/v1/matchmaking/<ticket>")
def cancel(ticket: str) -> Response:
    rate_limit()
    gw = gateway()
    doc = _load(ticket)
    if doc["status"] != "waiting":
        raise ApiError(409, "ticket_matched", "the ticket already has a match")
    gw.store.redis.lrem(_queue(doc["game"], doc["players"], doc["options"]), 1, ticket)
    _save({**doc, "status": "cancelled"}, wake=True)
    return jsonify(_public({**doc, "status": "cancelled"}))
