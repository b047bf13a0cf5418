"""Watch links: a tenant's key mints, describes and revokes read-only spectator tokens (:mod:`.watching` keeps
them; the access policy decides who may ask, and what a token reads).

A token covers one of the tenant's matches, or every match of one of its tournaments (its tables, current and
future): the tenant hands it to its app's users, and never its key.
"""

from __future__ import annotations

from typing import Any

from services.core import watching
from services.core.access import Caller, authorize_share, authorize_tenant, authorize_tournament, authorize_watch_token
from services.core.errors import DomainError, Kind
from services.core.limits import count_request
from services.core.match.opener import load
from services.core.service import Core
from services.core.tournaments import store as tournaments

#: A token's lifetime (``ttl_s``): at least, at most, by default (seconds; the contract's, a test holds them equal).
TTL_MIN_S = 60
TTL_MAX_S = 7 * 86400
TTL_DEFAULT_S = 86400


def _ttl(ttl_s: int) -> int:
    if not TTL_MIN_S <= ttl_s <= TTL_MAX_S:  # (the contract's model refuses it first at the REST door)
        raise DomainError(Kind.MALFORMED, "wrong_type", f"ttl_s must be from {TTL_MIN_S} to {TTL_MAX_S}")
    return ttl_s


def mint_for_match(core: Core, caller: Caller, match_id: str, *, ttl_s: int = TTL_DEFAULT_S,
                   player_ids: bool = False) -> dict[str, Any]:
    """A token reading one of the caller's tenant's matches (another tenant's, or an anonymous one: 404)."""
    authorize_tenant(caller)  # a key first: without one, 401 before any lookup
    count_request(core, caller)
    tenant = authorize_share(caller, load(core, match_id))
    return watching.mint(core.redis, tenant.name, match_id=match_id, ttl_s=_ttl(ttl_s), player_ids=player_ids)


def mint_for_tournament(core: Core, caller: Caller, tournament_id: str, *, ttl_s: int = TTL_DEFAULT_S,
                        player_ids: bool = False) -> dict[str, Any]:
    """A token reading every match of one of the caller's tenant's tournaments, current and future."""
    authorize_tenant(caller)
    count_request(core, caller)
    found = tournaments.load(core.redis, tournament_id) if tournaments.plausible(tournament_id) else None
    tenant = authorize_tournament(caller, found[1]["tenant"] if found else None)
    return watching.mint(core.redis, tenant.name, tournament_id=tournament_id, ttl_s=_ttl(ttl_s),
                         player_ids=player_ids)


def _owned(core: Core, caller: Caller, token_id: str) -> dict[str, Any]:
    authorize_tenant(caller)
    count_request(core, caller)
    record = watching.record_of(core.redis, token_id)
    authorize_watch_token(caller, record)
    assert record is not None
    return record


def describe(core: Core, caller: Caller, token_id: str) -> dict[str, Any]:
    """A token the caller's tenant minted, as minted (without the token), with its revocation if any."""
    return watching.public(_owned(core, caller, token_id))


def revoke(core: Core, caller: Caller, token_id: str) -> None:
    """Revoke a token the caller's tenant minted: at once on every door, open streams included."""
    watching.revoke(core.redis, _owned(core, caller, token_id))
