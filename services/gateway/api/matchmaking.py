"""Matchmaking: queue, read (or long-poll) a ticket, leave the queue — the matchmaker is the core's
(``services/core/match/matchmaker.py``); waiting for a ticket to be matched is the transport's."""

from __future__ import annotations

import time

from flask import Blueprint, Response

from services.contract import models as m
from services.core.match import matchmaker

from ..context import caller, core, gateway
from ..parking import resumed, wait_or_park
from .common import answer, body, given, headers, query, wait_s
from .events import waiter_ident

bp = Blueprint("matchmaking", __name__)


@bp.post("/v1/matchmaking")
def enqueue() -> Response:
    b, key = body(m.Enqueue), headers(m.IdempotencyHeaders).idempotency_key
    party = given(b.party)
    return answer(matchmaker.enqueue(core(), caller(), game=b.game, players=b.players, options=b.options,
                                     player=given(b.player), idempotency_key=given(key),
                                     party=None if party is None else [_member(p) for p in party]))


def _member(spec: m.PartyMemberSpec) -> dict[str, str]:
    """A party member as the core takes it (the fields sent)."""
    return {k: v for k, v in (("player", given(spec.player)), ("name", given(spec.name))) if v is not None}


@bp.get("/v1/matchmaking/<ticket>")
def poll(ticket: str) -> Response:
    """The ticket; with ``wait=S``, a long-poll that answers once it is matched or cancelled (or after S s,
    or when the bot fill is due: that read seats the bots)."""
    gw, the_core, who = gateway(), core(), caller()
    wait = wait_s(query(m.TicketQuery).wait)
    again = resumed()
    doc = matchmaker.open_ticket(the_core, who, ticket, count=again is None)
    if doc["status"] == "waiting" and wait:
        block = again.remaining() if again is not None else float(wait)
        fill_in = matchmaker.fill_in(the_core, doc)
        if fill_in is not None:
            block = min(block, fill_in)
        if block > 0.01:
            if wait_or_park(gw.hub, None, "ticket", waiter_ident(who), matchmaker.wake_key(ticket), -1, None,
                            time.monotonic() + block, {}):
                return Response(status=204)  # never sent: the worker holds the connection until a wake-up
            doc = matchmaker.open_ticket(the_core, who, ticket, count=False)
    return answer(matchmaker.settle(the_core, doc))


@bp.delete("/v1/matchmaking/<ticket>")
def cancel(ticket: str) -> Response:
    return answer(matchmaker.cancel(core(), caller(), ticket))
