"""For backends: what a tenant's API key reads — its matches and each of its players' matches, newest first.

Every route here needs an API key (401 ``api_key_required`` without one), and answers only for the key's
own tenant: player ids are the tenant's namespace, so another tenant asking for the same id sees nothing.
"""

from __future__ import annotations

import math
from urllib.parse import urlsplit

from flask import Blueprint, Response, jsonify, request

from services.core import history, ratings, tenants, webhooks

from ..context import gateway
from ..errors import ApiError
from .common import current_tenant, int_arg, json_body, rate_limit
from .matches import parse_player

bp = Blueprint("backends", __name__)

#: Matches per page at most (``limit``), and by default.
PAGE_MAX = 100
PAGE_DEFAULT = 20


def _tenant() -> tenants.Tenant:
    tenant = current_tenant()
    if tenant is None:
        raise ApiError(401, "api_key_required", "this call needs an API key (X-API-Key or Authorization: Bearer "
                       "mk_...)", {"WWW-Authenticate": "Bearer"})
    return tenant


def _for_player(player: str) -> tuple[tenants.Tenant, str]:
    """The key's tenant and a checked player id, the request counted (the start of every player route)."""
    tenant = _tenant()
    rate_limit()
    return tenant, parse_player(player, tenant)


def _before() -> float | None:
    raw = request.args.get("before")
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ApiError(400, "bad_parameter", "before must be a number (the `next` of the previous page)") from None
    if not math.isfinite(value) or value < 0:
        raise ApiError(400, "bad_parameter", "before must be a number >= 0 (the `next` of the previous page)")
    return value


def _page(tenant: tenants.Tenant, player: str | None) -> Response:
    limit = int_arg("limit", PAGE_DEFAULT, 1, PAGE_MAX)
    matches, nxt = history.page(gateway().store, tenant.name, player, _before(), limit)
    return jsonify({"player": player, "matches": matches, "next": nxt})


@bp.get("/v1/matches")
def tenant_matches() -> Response:
    """The tenant's matches, newest first (``limit``, then ``before=<next>`` for the next page)."""
    tenant = _tenant()
    rate_limit()
    return _page(tenant, None)


@bp.get("/v1/players/<player>/matches")
def player_matches(player: str) -> Response:
    """The matches the tenant's ``player`` sat in, newest first."""
    return _page(*_for_player(player))


@bp.get("/v1/players/<player>/ratings")
def player_ratings(player: str) -> Response:
    """The tenant's player's rating in each game they played a rated match of (``?game=`` for one)."""
    tenant, player = _for_player(player)
    found = ratings.of_player(gateway().store.redis, tenant.name, player, request.args.get("game"))
    return jsonify({"player": player, "ratings": {game: ratings.public(doc) for game, doc in found.items()}})


@bp.post("/v1/webhooks")
def add_webhook() -> tuple[Response, int]:
    """Register a URL for events; the answer carries the signing secret, shown this once."""
    tenant = _tenant()
    rate_limit()
    body = json_body({"url": str, "events": list}, required=("url", "events"))
    url, events = body["url"], body["events"]
    parts = urlsplit(url)
    if len(url) > webhooks.MAX_URL or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ApiError(400, "bad_webhook", f"url must be an http(s) URL of at most {webhooks.MAX_URL} characters")
    if not events or not all(isinstance(e, str) and e in webhooks.EVENTS for e in events):
        raise ApiError(400, "bad_webhook", f"events must list some of: {', '.join(webhooks.EVENTS)}")
    try:  # SSRF guard: the worker checks again at every delivery (the name may resolve elsewhere by then)
        webhooks.checked_address(url, webhooks.allowed_networks(gateway().config.webhook_allow_private))
    except webhooks.AddressRefused as err:
        raise ApiError(400, err.code, str(err)) from None
    client = gateway().store.redis
    if len(webhooks.hooks(client, tenant.name)) >= webhooks.MAX_HOOKS:
        raise ApiError(409, "webhook_limit", f"at most {webhooks.MAX_HOOKS} webhooks per tenant; delete one first")
    hook = webhooks.register(client, tenant.name, url, sorted(set(events)))
    return jsonify({**webhooks.public(hook), "secret": hook["secret"]}), 201


@bp.get("/v1/webhooks")
def list_webhooks() -> Response:
    tenant = _tenant()
    rate_limit()
    return jsonify({"webhooks": [webhooks.public(h) for h in webhooks.hooks(gateway().store.redis, tenant.name)]})


@bp.delete("/v1/webhooks/<hook_id>")
def delete_webhook(hook_id: str) -> Response:
    tenant = _tenant()
    rate_limit()
    if len(hook_id) > 64 or not webhooks.unregister(gateway().store.redis, tenant.name, hook_id):
        raise ApiError(404, "webhook_not_found", "no such webhook")
    return jsonify({"deleted": hook_id})


@bp.get("/v1/webhooks/dead-letters")
def dead_letters() -> Response:
    """Deliveries given up on after a day of retries, newest first (the last :data:`webhooks.DEAD_KEEP`)."""
    tenant = _tenant()
    rate_limit()
    limit = int_arg("limit", PAGE_DEFAULT, 1, PAGE_MAX)
    return jsonify({"dead_letters": webhooks.dead_letters(gateway().store.redis, tenant.name, limit)})


@bp.delete("/v1/webhooks/dead-letters")
def clear_dead_letters() -> Response:
    """Empty the tenant's dead letters (once it has dealt with them)."""
    tenant = _tenant()
    rate_limit()
    client = gateway().store.redis
    pipe = client.pipeline(transaction=True)
    pipe.llen(webhooks.dead_key(tenant.name))
    pipe.delete(webhooks.dead_key(tenant.name))
    return jsonify({"cleared": int(pipe.execute()[0])})
