"""For backends: what a tenant's API key reads and registers — its matches, its players' matches and
ratings, its webhooks. Every call needs the key (401 ``api_key_required`` without one) and answers only for
the key's own tenant: player ids are the tenant's namespace, so another tenant asking for the same id sees
nothing of this one's.
"""

from __future__ import annotations

from typing import Any

from services.core.access import Caller, authorize_tenant
from services.core.competition import ratings
from services.core.errors import DomainError, Kind
from services.core.limits import count_request
from services.core.match import history
from services.core.match.seating import parse_player
from services.core.service import Core
from services.core.tenancy import webhooks

#: Entries per page at most (``limit``), and by default: history pages and dead letters.
PAGE_MAX = 100
PAGE_DEFAULT = 20


def _tenant(core: Core, caller: Caller) -> str:
    tenant = authorize_tenant(caller)
    count_request(core, caller)
    return tenant.name


def matches(core: Core, caller: Caller, player: str | None, before: float | None, limit: int) -> dict[str, Any]:
    """The tenant's matches (or its ``player``'s), newest first, created before ``before``."""
    tenant = _tenant(core, caller)
    named = parse_player(player, caller.tenant) if player is not None else None
    found, nxt = history.page(core.store, tenant, named, before, limit)
    return {"player": named, "matches": found, "next": nxt}


def player_ratings(core: Core, caller: Caller, player: str, game: str | None = None) -> dict[str, Any]:
    """The tenant's player's rating in each game they played a rated match of (or in ``game``)."""
    tenant = _tenant(core, caller)
    named = parse_player(player, caller.tenant)
    found = ratings.of_player(core.redis, tenant, named, game)
    return {"player": named, "ratings": {g: ratings.public(doc) for g, doc in found.items()}}


def add_webhook(core: Core, caller: Caller, url: str, events: list[Any]) -> dict[str, Any]:
    """Register a URL for events; the answer carries the signing secret, shown this once."""
    tenant = _tenant(core, caller)
    problem = webhooks.url_problem(url)
    if problem is not None:
        raise DomainError(Kind.MALFORMED, "bad_webhook", problem)
    if not events or not all(isinstance(e, str) and e in webhooks.EVENTS for e in events):
        raise DomainError(Kind.MALFORMED, "bad_webhook", f"events must list some of: {', '.join(webhooks.EVENTS)}")
    try:  # SSRF guard: the worker checks again at every delivery (the name may resolve elsewhere by then)
        webhooks.checked_address(url, webhooks.allowed_networks(core.config.webhook_allow_private))
    except webhooks.AddressRefused as err:
        raise DomainError(Kind.MALFORMED, err.code, str(err)) from None
    if len(webhooks.hooks(core.redis, tenant)) >= webhooks.MAX_HOOKS:
        raise DomainError(Kind.CONFLICT, "webhook_limit", f"at most {webhooks.MAX_HOOKS} webhooks per tenant; delete "
                                                          "one first")
    hook = webhooks.register(core.redis, tenant, url, sorted(set(events)))
    return {**webhooks.public(hook), "secret": hook["secret"]}


def list_webhooks(core: Core, caller: Caller) -> dict[str, Any]:
    tenant = _tenant(core, caller)
    return {"webhooks": [webhooks.public(h) for h in webhooks.hooks(core.redis, tenant)]}


def delete_webhook(core: Core, caller: Caller, hook_id: str) -> dict[str, Any]:
    tenant = _tenant(core, caller)
    if len(hook_id) > 64 or not webhooks.unregister(core.redis, tenant, hook_id):
        raise DomainError(Kind.NOT_FOUND, "webhook_not_found", "no such webhook")
    return {"deleted": hook_id}


def dead_letters(core: Core, caller: Caller, limit: int) -> dict[str, Any]:
    """Deliveries given up on after a day of retries, newest first (the last :data:`webhooks.DEAD_KEEP`)."""
    tenant = _tenant(core, caller)
    return {"dead_letters": webhooks.dead_letters(core.redis, tenant, limit)}


def clear_dead_letters(core: Core, caller: Caller) -> dict[str, Any]:
    """Empty the tenant's dead letters (once it has dealt with them)."""
    tenant = _tenant(core, caller)
    pipe = core.redis.pipeline(transaction=True)
    pipe.llen(webhooks.dead_key(tenant))
    pipe.delete(webhooks.dead_key(tenant))
    return {"cleared": int(pipe.execute()[0])}
