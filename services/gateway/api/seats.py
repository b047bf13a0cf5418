"""Seats that change hands: leave, reclaim after a bot took over, and rematch with the same seats.

No match ever waits on someone who is gone: a human who leaves a running match hands the seat to a bot
for good; one whose clock runs out gets a bot until they reclaim the seat (``services/timekeeper``).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from services.core import clocks, control, tenants
from services.core.moves import MAX_REBASES, commit
from services.core.store import Match, StaleVersion
from services.core.views import seat_view

from ..context import gateway
from ..errors import ApiError
from .common import caller_seat, client_ip, json_body, limited_load, load_match
from .matches import create, status_doc, take_seat

bp = Blueprint("seats", __name__)


def _update_seat(match_id: str, change: Any) -> tuple[Match, int]:
    """Run ``change(match, seat) -> (meta, entry)`` for the caller's seat under compare-and-set."""
    gw = gateway()
    for _ in range(MAX_REBASES):
        match = load_match(match_id)
        seat = caller_seat(match, required=True)
        assert seat is not None
        meta, entry = change(match, seat)
        try:
            return commit(gw.store, match, meta, None, entry), seat
        except StaleVersion:
            continue
    raise ApiError(409, "busy", "the match changed too often; retry")


@bp.post("/v1/matches/<match_id>/leave")
def leave(match_id: str) -> Response:
    """A waiting match frees the seat; a running one hands it to a bot for good (the token stops working)."""
    limited_load(match_id)  # the rate limit, counted for a verified token only
    json_body({})

    def change(match: Match, seat: int) -> tuple[dict[str, Any], dict[str, Any]]:
        status = match.meta["status"]
        if status == "finished":
            raise ApiError(409, "match_closed", "the match is over")
        seats = [dict(s) for s in match.meta["seats"]]
        seats[seat]["token_hash"] = None
        if status == "active":
            seats[seat].update(control="bot", left=True)
        return {**match.meta, "seats": seats}, {"kind": "left", "seat": seat, "to_act": match.meta["to_act"]}

    match, _ = _update_seat(match_id, change)
    if match.meta["status"] == "active":
        gateway().metrics.takeovers.labels("leave").inc()
    return jsonify(status_doc(match, None, None))


@bp.post("/v1/matches/<match_id>/seats/<int:seat>/reclaim")
def reclaim(match_id: str, seat: int) -> Response:
    """The owner takes back a seat a bot has played since a timeout; nothing the bot did is undone."""
    limited_load(match_id)
    json_body({})
    reclaimed = False

    def change(match: Match, caller: int) -> tuple[dict[str, Any], dict[str, Any]]:
        nonlocal reclaimed
        if caller != seat:
            raise ApiError(403, "not_your_seat", f"that token holds seat {caller}, not seat {seat}")
        info = match.meta["seats"][seat]
        if match.meta["status"] != "active":
            raise ApiError(409, "match_closed", f"the match is {match.meta['status']}")
        if info.get("forfeited"):
            raise ApiError(409, "seat_forfeited", f"seat {seat} forfeited on time; it cannot be reclaimed")
        reclaimed = info.get("control") == "bot"
        seats = [dict(s) for s in match.meta["seats"]]
        seats[seat]["control"] = "human"
        meta = {**match.meta, "seats": seats}
        if meta.get("clock"):
            meta["clock"] = clocks.restore(meta["clock"], seat)
        return meta, {"kind": "reclaimed", "seat": seat, "to_act": meta["to_act"]}

    match, _ = _update_seat(match_id, change)
    if reclaimed:
        gateway().metrics.reclaims.inc()
    return jsonify(status_doc(match, seat, seat_view(gateway(), match, seat)))


def rematch_seats(meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The same seats again: bots stay bots, a human who left is replaced by a bot, the others are free."""
    seats = []
    for info in meta["seats"]:
        if info["kind"] == "bot":
            seats.append({"kind": "bot", "level": info.get("level") or "normal", "token_hash": None})
        elif info.get("left"):
            seats.append({"kind": "bot", "level": meta.get("takeover_level") or control.DEFAULT_TAKEOVER_LEVEL,
                          "token_hash": None})
        else:
            seats.append({"kind": "human", "token_hash": None,
                          **({"player": info["player"]} if info.get("player") else {})})
    return seats


@bp.post("/v1/matches/<match_id>/rematch")
def rematch(match_id: str) -> Response:
    """The next match with the same seats; each human takes their seat (and a new token) with this call."""
    limited_load(match_id)
    json_body({})
    gw = gateway()
    for _ in range(MAX_REBASES):
        match = load_match(match_id)
        seat = caller_seat(match, required=True)
        assert seat is not None
        meta = match.meta
        if meta["status"] != "finished":
            raise ApiError(409, "match_not_finished", "a rematch can start once this match is over")
        next_id = meta.get("rematch")
        if next_id is None:
            clock = {k: v for k, v in meta["clock"].items() if k != "seats"}
            tenant = tenants.by_name(gw.store.redis, meta["tenant"]) if meta.get("tenant") else None
            fresh = create(meta["game"], meta["players"], meta["options"], None, rematch_seats(meta), clock,
                           meta.get("takeover_level", control.DEFAULT_TAKEOVER_LEVEL), owner=f"ip:{client_ip()}",
                           tenant=tenant)
            try:
                commit(gw.store, match, {**meta, "rematch": fresh.id},
                       None, {"kind": "rematch", "seat": seat, "to_act": [], "rematch": fresh.id})
            except StaleVersion:  # someone else linked a rematch first: use theirs
                gw.store.delete(fresh.id, fresh.meta)
                continue
            next_id = fresh.id
        nxt, taken, token = take_seat(next_id, seat, seat_holder=True)
        return jsonify({**status_doc(nxt, taken, seat_view(gw, nxt, taken)), "seat": taken, "token": token})
    raise ApiError(409, "busy", "the match changed too often; retry")
