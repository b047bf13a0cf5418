"""A rematch: the same table again, asked for by a seat, made once however many ask."""

from __future__ import annotations

from typing import Any

import msgspec

from services.core.access import (
    Action,
    Caller,
)
from services.core.errors import DomainError, Kind, busy
from services.core.match import idempotency
from services.core.match.commit import MAX_REBASES, commit
from services.core.match.creator import (
    new_match,
    release,
)
from services.core.match.opener import Opened, open_match
from services.core.match.seater import (
    seat_answer,
    seat_once,
    seat_with_secret,
    take_seat,
)
from services.core.meta import MatchMeta, Seat
from services.core.record import control
from services.core.record.store import StaleVersion
from services.core.service import Core
from services.core.tenancy import tenants


def rematch_seats(meta: MatchMeta) -> list[Seat]:
    """The same seats again: bots stay bots, a human who left is replaced by a bot, the others are free."""
    seats = []
    for info in meta.seats:
        if info.kind == "bot":
            seats.append(Seat(kind="bot", level=info.level or "normal"))
        elif info.left:
            seats.append(Seat(kind="bot", level=meta.takeover_level or control.DEFAULT_TAKEOVER_LEVEL))
        else:
            seats.append(Seat(kind="human", player=info.player or None))
    return seats


def rematch(core: Core, caller: Caller, match_id: str, *, idempotency_key: str | None = None) -> dict[str, Any]:
    """The next match with the same seats; each human takes their seat (and a new token) with this call. With an
    ``idempotency_key``, the same seat and token on every retry, as a join (the token is shown once: an answer
    lost on the way must not lose the seat)."""
    opened = open_match(core, caller, match_id, Action.ACT)
    if idempotency_key is None:
        return _rematch(core, caller, match_id, opened)
    claim = idempotency.claim(core.redis, idempotency.match_record(match_id, caller.owner, idempotency_key),
                              idempotency_key, idempotency.fingerprint("rematch", {"seat": opened.access.seat}), {})

    def seated(secret: str) -> dict[str, Any] | None:
        next_id = opened.match.meta.rematch
        nxt = core.store.load(next_id) if next_id else None
        if nxt is None or (taken := seat_with_secret(nxt, secret)) is None:
            return None
        return seat_answer(core, nxt, taken, f"{taken}.{secret}", opened.access.players)

    return seat_once(claim, seated, lambda secret: _rematch(core, caller, match_id, opened, secret=secret))


def _rematch(core: Core, caller: Caller, match_id: str, opened: Opened, *, secret: str | None = None
             ) -> dict[str, Any]:
    for _ in range(MAX_REBASES):
        match, seat = opened.match, opened.access.seat
        assert seat is not None
        meta = match.meta
        if meta.status != "finished":
            raise DomainError(Kind.CONFLICT, "match_not_finished", "a rematch can start once this match is over")
        next_id = meta.rematch
        if next_id is None:
            clock = msgspec.structs.replace(meta.clock, seats=[]) if meta.clock is not None else None
            tenant = tenants.by_name(core.redis, meta.tenant) if meta.tenant else None
            fresh = new_match(core, meta.game, meta.players, meta.options, None, rematch_seats(meta), clock,
                              meta.takeover_level, owner=caller.owner, tenant=tenant, rated=meta.rated,
                              spectator_chat=meta.spectator_chat)
            try:
                commit(core, match, msgspec.structs.replace(meta, rematch=fresh.id),
                       None, {"kind": "rematch", "seat": seat, "to_act": [], "rematch": fresh.id})
            except StaleVersion:  # someone else linked a rematch first: use theirs
                core.store.delete(fresh.id)
                if fresh.meta.owner:
                    release(core, fresh.meta.owner, fresh.id, fresh.meta.seats)
                opened = open_match(core, caller, match_id, Action.ACT, count=False)
                continue
            next_id = fresh.id
        nxt, taken, token = take_seat(core, next_id, seat, secret=secret)
        return seat_answer(core, nxt, taken, token, opened.access.players)
    raise busy()
