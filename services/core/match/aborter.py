"""Ending a match that cannot be played (a tournament's no-show table), without a game result."""

from __future__ import annotations

import msgspec

from services.core.errors import busy
from services.core.match.commit import MAX_REBASES, commit
from services.core.match.seating import MAX_ID
from services.core.meta import Outcome
from services.core.record import control
from services.core.record.store import Match, StaleVersion
from services.core.service import Core


def abort(core: Core, match_id: str, reason: str, *, tenant: str | None = None) -> Match | None:
    """End a running match now, with no winner and unrated: ``outcome = {"ended_by": "aborted", "reason": ...,
    "winners": [], ...}`` (a tournament round's deadline, a cancelled tournament). Nothing if it is finished
    already; None if there is no such match (or, with ``tenant``, it is another tenant's)."""
    for _ in range(MAX_REBASES):
        match = core.store.load(match_id) if len(match_id) <= MAX_ID else None
        if match is None or (tenant is not None and match.meta.tenant != tenant):
            return None
        meta = match.meta
        if meta.status == "finished":
            return match
        outcome = Outcome(ended_by="aborted", reason=reason, winners=[], forfeited=control.forfeited(meta),
                          scores=None, ratings=None)
        try:
            ended = msgspec.structs.replace(meta, status="finished", to_act=[], outcome=outcome)
            return commit(core, match, ended, None, {"kind": "aborted", "seat": None, "to_act": []})
        except StaleVersion:
            continue
    raise busy()
