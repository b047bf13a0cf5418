"""``/hint``: the bot's suggested move for the caller's own seat, asked of a bot worker."""

from __future__ import annotations

from typing import Any

from services.core.access import (
    Action,
    Caller,
)
from services.core.errors import DomainError, Kind
from services.core.match.opener import open_match
from services.core.service import Core
from services.core.tenancy import tenants


def hint(core: Core, caller: Caller, match_id: str) -> dict[str, Any]:
    """The ``HINT_LEVEL`` bot's move for the caller's own seat, computed by a bot worker (never in the gateway).

    The search determinizes from the caller's seat, so a hint can never reveal another seat's cards.
    """
    from services.core.match import hints

    opened = open_match(core, caller, match_id, Action.ACT)
    match, seat = opened.match, opened.access.seat
    assert seat is not None
    if match.meta.status != "active" or seat not in match.meta.to_act:
        raise DomainError(Kind.CONFLICT, "not_your_turn", "there is no decision of yours to hint at")
    tenant = match.meta.tenant
    if tenant:  # the tenant's hint budget, shared by all its matches
        budget = tenants.quotas_of(core.redis, tenant)["hints"]
        used, reset = core.store.hit(f"hints:{tenants.owner_of(tenant)}")
        if budget > 0 and used > budget:
            raise DomainError(Kind.LIMITED, "hint_limited", f"tenant {tenant}: at most {budget} hints a minute; "
                                                            f"retry in {reset} s", retry_after=reset)
    cfg = core.config
    move = hints.ask(core.redis, match, seat, wait_s=cfg.hint_wait_s, budget_s=cfg.hint_budget_s,
                     per_minute=cfg.hints_per_seat_minute)
    return {"version": match.version, "seat": seat, "move": move, "level": hints.HINT_LEVEL}
