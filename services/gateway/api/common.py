"""Request helpers shared by the blueprints: strict JSON bodies, bearer tokens, rate limits."""

from __future__ import annotations

import time
from typing import Any

from flask import g, request

from services.core import tenants
from services.core.store import Match, hash_token, seat_hint
from services.core.views import SPECTATOR

from ..context import gateway
from ..errors import ApiError

#: Deepest nesting of arrays and objects a JSON body may have (the body itself is level 1). Far above any
#: real move or options document, far below what the JSON encoder refuses (about 255).
MAX_JSON_DEPTH = 32


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """Is ``value`` nested deeper than ``limit`` levels? Iterative: a hostile body cannot blow the stack."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        elif not isinstance(item, list):
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in item if isinstance(child, dict | list))
    return False


def json_body(allowed: dict[str, type | tuple[type, ...]], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The request's JSON object, rejecting unknown fields, missing fields and wrong types (400).

    An empty body reads as ``{}``; a non-empty one must be sent as ``application/json`` (415 otherwise, not a
    silent empty body) and nest at most :data:`MAX_JSON_DEPTH` levels (400 ``too_deep``).
    """
    raw = request.get_data(cache=True)  # read up to one byte past the limit (see ``create_app``)
    limit = gateway().config.max_body_bytes
    if len(raw) > limit:
        raise ApiError(413, "body_too_large", f"request body too large (limit {limit} bytes)")
    if not raw:
        body: Any = {}
    else:
        if request.mimetype != "application/json":
            raise ApiError(415, "unsupported_media_type", "send the body as JSON with 'Content-Type: "
                           f"application/json' (got {request.mimetype or 'no Content-Type'!r})")
        body = request.get_json(silent=True, force=True)
        if body is None:
            raise ApiError(400, "malformed_json", "the request body is not valid JSON")
    if not isinstance(body, dict):
        raise ApiError(400, "malformed_json", "the request body must be a JSON object")
    if json_depth_exceeds(body, MAX_JSON_DEPTH):
        raise ApiError(400, "too_deep", f"the request body nests deeper than {MAX_JSON_DEPTH} levels")
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise ApiError(400, "unknown_field", f"unknown field {unknown[0]!r}; allowed: {', '.join(allowed)}")
    for name in required:
        if name not in body:
            raise ApiError(400, "missing_field", f"field {name!r} is required")
    for name, value in list(body.items()):
        spec = allowed[name]
        kinds: tuple[type, ...] = spec if isinstance(spec, tuple) else (spec,)
        if isinstance(value, bool) and bool not in kinds:
            raise ApiError(400, "wrong_type", f"field {name!r} has the wrong type")
        if isinstance(value, float) and int in kinds and value.is_integer():
            body[name] = int(value)  # JSON has one number type: 2.0 is the integer 2 (as JSON Schema reads it)
        elif not isinstance(value, kinds):
            raise ApiError(400, "wrong_type", f"field {name!r} has the wrong type")
    return body


def _authorization() -> str | None:
    header = request.headers.get("Authorization", "")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "bad_authorization", "use 'Authorization: Bearer <seat token or API key>'")
    return token.strip()


def bearer_token() -> str | None:
    """The caller's seat token (an API key in ``Authorization`` is not one: see :func:`current_tenant`)."""
    token = _authorization()
    return None if tenants.is_api_key(token) else token


def api_key() -> str | None:
    """The API key of the request: ``X-API-Key``, or ``Authorization: Bearer mk_...``."""
    key = request.headers.get("X-API-Key")
    if key is not None:
        return key.strip()
    token = _authorization()
    return token if tenants.is_api_key(token) else None


def current_tenant() -> tenants.Tenant | None:
    """The tenant the request's API key acts for (None without a key); 401 ``invalid_api_key`` for an
    unknown, malformed or revoked key, counted against the caller's IP first (guessing keys costs requests)."""
    if "tenant" in g:
        found: tenants.Tenant | None = g.tenant
        return found
    key = api_key()
    if key is None:
        g.tenant = None
        return None
    gw = gateway()
    found = tenants.lookup(gw.store.redis, key) if tenants.is_api_key(key) else None
    if found is None:
        if gw.config.rate_limit_per_minute > 0:
            _enforce(gw.config.rate_limit_per_minute, *gw.store.hit(_ip_ident()))
        raise ApiError(401, "invalid_api_key", "that API key is unknown or revoked",
                       {"WWW-Authenticate": 'Bearer error="invalid_token"'})
    g.tenant = found
    return found


def identify(action: str) -> tenants.Tenant | None:
    """The tenant of a request that creates something (a match, a seat, a ticket); without a key, 401
    ``api_key_required`` when anonymous access is off (``MEEPLE_ANONYMOUS=0``)."""
    tenant = current_tenant()
    if tenant is None and not gateway().config.anonymous:
        raise ApiError(401, "api_key_required", f"{action} needs an API key (X-API-Key or Authorization: Bearer "
                       "mk_...): anonymous access is off", {"WWW-Authenticate": "Bearer"})
    return tenant


def require_reader(match: Match) -> None:
    """Who may read ``match``: its tenant's key (any other key: 404, as if it did not exist), a seat token
    (checked by the caller), or anyone while anonymous access is on."""
    tenant = current_tenant()
    if tenant is not None:
        if match.meta.get("tenant") != tenant.name and bearer_token() is None:
            raise ApiError(404, "match_not_found", f"no match {match.id!r} (it may have expired)")
        return
    if bearer_token() is None and not gateway().config.anonymous:
        raise ApiError(401, "missing_token", "anonymous access is off: send a seat token or an API key",
                       {"WWW-Authenticate": "Bearer"})


def load_match(match_id: str) -> Match:
    if len(match_id) > 64:
        raise ApiError(404, "match_not_found", "no such match")
    return found_or_404(match_id, gateway().store.load(match_id))


def limited_load(match_id: str, idempotency_key: str | None = None, *, view: bool = False, legal: bool = False,
                 log_from: int | None = None) -> tuple[Match, dict[str, Any] | None]:
    """The rate limit, then ``load_match()`` (and the stored idempotent response) in one Redis round trip.

    ``view``/``legal`` also fetch the caller's view / legal moves (the seat its token names, the
    spectator's view without one) and ``log_from`` the log from that version on, in the same trip.

    A request with a bearer token is counted in that token's bucket in the same trip, and the token is
    verified against the match right after: one that holds no seat here is 401 and its count moves to the
    caller's IP (:func:`reject_token`), so made-up tokens never earn a bucket of their own.
    """
    gw = gateway()
    fields = caller_fields(view, legal)
    tenant = current_tenant()
    limit = gw.config.rate_limit_per_minute if tenant is None else tenant.quotas["rpm"]
    if len(match_id) > 64:
        rate_limit()
        raise ApiError(404, "match_not_found", "no such match")
    if limit <= 0:
        match = found_or_404(match_id, gw.store.load(match_id, fields, log_from))
        verified_seat(match)
        require_reader(match)
        return match, None if idempotency_key is None else gw.store.idempotent_get(match_id, idempotency_key)
    token = bearer_token()
    ident = _token_ident(token) if token else tenant.owner if tenant else _ip_ident()
    # A seat token acts in this match only: its bucket lives with the match (one round trip on a cluster too).
    found, (count, reset), done = gw.store.load_counted(match_id, ident, idempotency_key, fields, log_from,
                                                        scoped=token is not None)
    if token is not None and (found is None or found.seat_of(token) is None):
        # Never a bucket of its own: the count moves to the IP, then 404 (no match) or 401 (no seat).
        limit = gw.config.rate_limit_per_minute
        hits, reset = gw.store.move_hit(ident, _ip_ident(), drop=count <= 1, source_scope=match_id)
        _enforce(limit, hits, reset)
        found_or_404(match_id, found)
        _invalid_token()
    _enforce(limit, count, reset, tenant)
    match = found_or_404(match_id, found)
    require_reader(match)
    return match, done


def _invalid_token() -> None:
    raise ApiError(401, "wrong_token", "that token holds no seat in this match (unknown, revoked or another "
                   "match's)", {"WWW-Authenticate": 'Bearer error="invalid_token"'})


def verified_seat(match: Match) -> int | None:
    """The seat of the caller's bearer token in ``match``; 401 ``wrong_token`` if it holds none."""
    token = bearer_token()
    if token is None:
        return None
    seat = match.seat_of(token)
    if seat is None:
        _invalid_token()
    return seat


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
            raise ApiError(401, "missing_token", "this call needs your seat token (Authorization: Bearer ...)",
                           {"WWW-Authenticate": "Bearer"})
        return None
    seat = match.seat_of(token)
    if seat is None:
        _invalid_token()
    assert seat is not None
    gw = gateway()
    gw.store.touch(match, seat, time.time() + gw.config.presence_s + connected_for, slack=gw.config.presence_s / 4)
    return seat


def rate_limit() -> None:
    """Count the request against the caller's IP (calls that hold no match to verify a token against)."""
    gw = gateway()
    tenant = current_tenant()
    limit = gw.config.rate_limit_per_minute if tenant is None else tenant.quotas["rpm"]
    if limit <= 0:
        return
    count, reset = gw.store.hit(_ip_ident() if tenant is None else tenant.owner)
    _enforce(limit, count, reset, tenant)


def client_ip() -> str:
    """The connecting address: what per-IP limits and quotas count (run proxies that set it right)."""
    return request.remote_addr or "unknown"


def _ip_ident() -> str:
    return f"ip:{client_ip()}"


def _token_ident(token: str) -> str:
    return f"t:{hash_token(token)[:20]}"


def _enforce(limit: int, count: int, reset: int, tenant: tenants.Tenant | None = None) -> None:
    if count > limit:
        who = "" if tenant is None else f" for tenant {tenant.name}"
        raise ApiError(429, "rate_limited", f"more than {limit} requests a minute{who}; retry in {reset} s",
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
