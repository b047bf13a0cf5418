"""Request rate limits: a fixed window a minute per caller, counted in Redis so every gateway shares it.

Whose bucket a request counts in: a seat token's own (kept in its match's slot, counted only once the token is
verified against the match: a made-up token's count moves to the caller's address), else the tenant's (its
``rpm`` quota, all its keys together), else the caller's address.
"""

from __future__ import annotations

from services.core.access import Caller
from services.core.errors import DomainError, Kind
from services.core.record.store import hash_token
from services.core.service import Core


def ip_ident(address: str) -> str:
    return f"ip:{address}"


def token_ident(token: str) -> str:
    return f"t:{hash_token(token)[:20]}"


def limit_of(core: Core, caller: Caller) -> int:
    """Requests a minute the caller may make (0: no limit)."""
    return core.config.rate_limit_per_minute if caller.tenant is None else caller.tenant.quotas["rpm"]


def enforce(limit: int, count: int, reset: int, caller: Caller | None = None) -> None:
    if limit > 0 and count > limit:
        tenant = caller.tenant if caller is not None else None
        who = "" if tenant is None else f" for tenant {tenant.name}"
        raise DomainError(Kind.LIMITED, "rate_limited", f"more than {limit} requests a minute{who}; retry in "
                                                        f"{reset} s", retry_after=reset)


def count_request(core: Core, caller: Caller) -> None:
    """Count a request that holds no match to verify a token against: the caller's tenant or address."""
    limit = limit_of(core, caller)
    if limit <= 0:
        return
    ident = caller.tenant.owner if caller.tenant is not None else ip_ident(caller.address)
    enforce(limit, *core.store.hit(ident), caller)


def count_address(core: Core, address: str) -> None:
    """Count a request against its address alone (a refused API key: guessing keys costs requests)."""
    limit = core.config.rate_limit_per_minute
    if limit > 0:
        enforce(limit, *core.store.hit(ip_ident(address)))
