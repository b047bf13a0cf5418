"""Request helpers shared by the blueprints: strict JSON bodies, bearer tokens, rate limits."""

from __future__ import annotations

import time
from typing import Any

from flask import request

from ..context import gateway
from ..errors import ApiError
from ..store import Match, hash_token, seat_hint
from ..views import SPECTATOR


def json_body(allowed: dict[str, type | tuple[type, ...]], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The request's JSON object, rejecting unknown fields, missing fields and wrong types (400)."""
    body = request.get_json(silent=True, force=True) if request.data else {}
    if body is None:
        raise ApiError(400, "malformed_json", "the request body is not valid JSON")
    if not isinstance(body, dict):
        raise ApiError(400, "malformed_json", "the request body must be a JSON object")
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise ApiError(400, "unknown_field", f"unknown field {unknown[0]!r}; allowed: {', '.join(allowed)}")
    for name in required:
        if name not in body:
            raise ApiError(400, "missing_field", f"field {name!r} is required")
    for name, value in body.items():
        spec = allowed[name]
        kinds: tuple[type, ...] = spec if isinstance(spec, tuple) else (spec,)
        if isinstance(value, bool) and bool not in kinds:
            raise ApiError(400, "wrong_type", f"field {name!r} has the wrong type")
        if not isinstance(value, kinds):
            raise ApiError(400, "wrong_type", f"field {name!r} has the wrong type")
    return body


def bearer_token() -> str | None:
    header = request.headers.get("Authorization", "")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "bad_authorization", "use 'Authorization: Bearer <seat token>'")
    return token.strip()


def load_match(match_id: str) -> Match:
    if len(match_id) > 64:
        raise ApiError(404, "match_not_found", "no such match")
    return found_or_404(match_id, gateway().store.load(match_id))


def limited_load(match_id: str, idempotency_key: str | None = None, *, view: bool = False, legal: bool = False,
                 log_from: int | None = None) -> tuple[Match, dict[str, Any] | None]:
    """``rate_limit()`` then ``load_match()`` (and the stored idempotent response) in one Redis round trip.

    ``view``/``legal`` also fetch the caller's view / legal moves (the seat its token names, the
    spectator's view without one) and ``log_from`` the log from that version on, in the same trip.
    """
    gw = gateway()
    fields = caller_fields(view, legal)
    limit = gw.config.rate_limit_per_minute
    if limit <= 0 or len(match_id) > 64:
        rate_limit()
        match = found_or_404(match_id, gw.store.load(match_id, fields, log_from) if len(match_id) <= 64 else None)
        return match, None if idempotency_key is None else gw.store.idempotent_get(match_id, idempotency_key)
    found, (count, reset), done = gw.store.load_counted(match_id, _rate_ident(), idempotency_key, fields, log_from)
    _enforce(limit, count, reset)
    return found_or_404(match_id, found), done


def caller_fields(view: bool, legal: bool) -> tuple[str, ...]:
    """The derived documents of the caller's seat (by its token's seat hint) to load with the match."""
    hint = seat_hint(bearer_token())
    key = SPECTATOR if hint is None else hint
    return (*((f"view:{key}",) if view else ()), *((f"legal:{key}",) if legal and hint is not None else ()))


def wants_legal_moves() -> bool:
    """``?include=legal_moves``: the response also carries the caller's legal moves (saves a request)."""
    include = request.args.get("include", "")
    parts = {part.strip() for part in include.split(",") if part.strip()}
    if parts - {"legal_moves"}:
        raise ApiError(400, "bad_parameter", "include takes: legal_moves")
    return "legal_moves" in parts


def found_or_404(match_id: str, match: Match | None) -> Match:
    if match is None:
        raise ApiError(404, "match_not_found", f"no match {match_id!r} (it may have expired)")
    return match


def caller_seat(match: Match, required: bool, connected_for: float = 0.0) -> int | None:
    """The seat whose token the caller presents; 401 without a token when one is required, 403 if wrong.

    An authenticated request marks the seat connected for the presence window (plus ``connected_for``
    seconds: a long-poll or stream holds the connection that long).
    """
    token = bearer_token()
    if token is None:
        if required:
            raise ApiError(401, "missing_token", "this call needs your seat token (Authorization: Bearer ...)")
        return None
    seat = match.seat_of(token)
    if seat is None:
        raise ApiError(403, "wrong_token", "that token does not hold a seat in this match")
    gw = gateway()
    gw.store.touch(match, seat, time.time() + gw.config.presence_s + connected_for, slack=gw.config.presence_s / 4)
    return seat


def rate_limit() -> None:
    gw = gateway()
    limit = gw.config.rate_limit_per_minute
    if limit <= 0:
        return
    count, reset = gw.store.hit(_rate_ident())
    _enforce(limit, count, reset)


def _rate_ident() -> str:
    token = request.headers.get("Authorization", "")
    return f"t:{hash_token(token)[:20]}" if token else f"ip:{request.remote_addr}"


def _enforce(limit: int, count: int, reset: int) -> None:
    if count > limit:
        raise ApiError(429, "rate_limited", f"more than {limit} requests a minute; retry in {reset} s",
                       {"Retry-After": str(reset)})


def int_arg(name: str, default: int, low: int, high: int) -> int:
    """An integer query parameter in [low, high]; 400 ``bad_parameter`` otherwise."""
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, "bad_parameter", f"{name} must be an integer") from None
    if not low <= value <= high:
        raise ApiError(400, "bad_parameter", f"{name} must be between {low} and {high}")
    return value
