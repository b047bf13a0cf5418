"""How a match changes: the one commit pipeline that every door and worker shares.

:func:`commit` is every update (join, move, timeout, reclaim, leave, resign, rematch link): seat clocks
advance and the deadlines that start are indexed, a finishing rated match gets its rating changes, the
match is compare-and-set together with the webhook events the change makes (its outbox), the status
counters and the owner's quota charges follow the change, and bot seats now to act get a job.
:func:`create` is the same for a new match (version 0).
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from services import redisconn
from services.core.competition import due as tournament_due
from services.core.competition import leaderboards, ratings
from services.core.match import clocks
from services.core.match.bots_seam import on_bot_turn
from services.core.meta import MatchMeta
from services.core.record import control
from services.core.record.store import MATCH_STATS_KEYS, SHARDS, Match, MatchStore, Remember
from services.core.service import Core
from services.core.tenancy import quotas, webhooks

#: How often an update is retried on a match that changed under it before the caller is told ``busy``.
MAX_REBASES = 8


def bot_seats_due(before: MatchMeta | None, after: MatchMeta, mover: int | None) -> list[int]:
    """Bot-played seats that face a *new* decision after an update, and so need a job.

    A seat still pending from before (others acted in a simultaneous step) already has its job; it gets
    another only if it just moved, a bot just took it over, or the match just started.
    """
    if after.status != "active":
        return []
    seats = after.seats
    due = []
    for seat in after.to_act:
        if seat >= len(seats) or not control.bot_plays(seats[seat]):
            continue
        if (before is None or before.status != "active" or seat not in before.to_act or seat == mover
                or not control.bot_plays(before.seats[seat])):
            due.append(seat)
    return due


def notify_bots(store: MatchStore, match: Match, seats: list[int]) -> None:
    """Enqueue a job per bot seat with a new decision (bot seats and taken-over ones)."""
    if seats:
        on_bot_turn(store, match.id, match.game, match.version, seats)


def create(core: Core, match_id: str, meta: MatchMeta, state: bytes,
           derived: dict[str, str] | None = None) -> Match:
    """Write a new match (version 0): its ``match.created`` (and ``match.started``) events, counters, bot jobs."""
    events = webhooks.events_of(None, meta, {"kind": "created", "seat": None})
    match = core.store.create(match_id, meta, state, derived, events)
    _transition(core, None, match.meta)
    notify_bots(core.store, match, bot_seats_due(None, match.meta, None))
    return match


def commit(core: Core, match: Match, meta: MatchMeta, state: bytes | None, entry: dict[str, Any],
           *, mover: int | None = None, now: float | None = None, derived: dict[str, str] | None = None,
           remember: Remember | None = None) -> Match:
    """Compare-and-set ``match`` to ``meta``/``state`` (with the documents ``derived`` from a new state, and
    the idempotent response ``remember`` makes); raises :class:`StaleVersion` if someone was first."""
    store = core.store
    now = time.time() if now is None else now
    version = match.version + 1
    if is_human_action(entry):  # what keeps a match alive (see ``services/timekeeper``: idle matches)
        meta = _acted(msgspec.structs.replace(meta, human_at=now), entry)
    clock = meta.clock
    if clock is not None:
        pending = meta.to_act if meta.status == "active" else []
        clock = clocks.advance(clock, timed=control.timed(meta), to_act=pending, mover=mover, version=version,
                               now=now)
        meta = msgspec.structs.replace(meta, clock=clock)
        for seat, due in clocks.started(clock, version):
            store.schedule(match.id, seat, version, due)
    if meta.status == "finished" and match.meta.status != "finished":  # chat stays open a while after it
        meta = msgspec.structs.replace(meta, finished_at=now)
    meta = ratings.settle(store.redis, match.meta, meta)  # a rated match's rating changes, in its outcome
    updated = store.update(match, meta, state, entry, derived, remember, webhooks.events_of(match.meta, meta, entry))
    _transition(core, match.meta.status, meta)
    if match.meta.status != "finished" and meta.tenant and meta.outcome is not None and meta.outcome.ratings:
        # the ratings and the boards with them; the webhook worker re-applies too
        leaderboards.apply_ratings(store.redis, meta.tenant, meta.game, meta.outcome.doc())
    notify_bots(store, updated, bot_seats_due(match.meta, meta, mover))
    return updated


def _acted(meta: MatchMeta, entry: dict[str, Any]) -> MatchMeta:
    """Mark the seat whose human just acted in the match (joined, moved, reclaimed): a seat a bot played to the
    end is rated, and scored by a tournament, by whether its human ever came (see :mod:`.ratings`)."""
    seat = entry.get("seat")
    if entry["kind"] == "rematch" or not isinstance(seat, int) or not 0 <= seat < len(meta.seats):
        return meta
    if meta.seats[seat].acted:
        return meta
    return meta.with_seat(seat, acted=True)


def _transition(core: Core, before: str | None, meta: MatchMeta) -> None:
    """Follow a status change: the match counters the metrics read, the owner's quota charges, who filled the
    seats of a match that starts, and the wake-up of the tournament a finishing match belongs to (its ``tag``).
    One extra round trip, only when the status changes.

    Outside the compare-and-set (the counters are in another Cluster slot), so a crash in between can leave a
    count off by one, a charge that lapses by its own time, or a tournament that sees the finish at its next
    poll (``machine.POLL_S``); the matches themselves are never affected.
    """
    after = meta.status
    if before == after:
        return
    store, game = core.store, meta.game
    stats = MATCH_STATS_KEYS[redisconn.shard_of(meta.id, SHARDS)]
    pipe = store.redis.pipeline(transaction=False)
    owner = meta.owner
    if owner and before is not None:
        if after == "finished":
            quotas.release(pipe, owner, meta.id, meta.seats)
        elif after == "active":
            now = time.time()
            quotas.extend(pipe, owner, meta.id, meta.seats, now, store.quota_until(after, now))
    if before is None:
        pipe.hincrby(stats, f"created:{game}", 1)
    if before == "active":
        pipe.hincrby(stats, f"active:{game}", -1)
    if after == "active":
        pipe.hincrby(stats, f"active:{game}", 1)
    if after == "finished":
        pipe.hincrby(stats, f"finished:{game}", 1)
        tournament = tournament_due.tournament_of(meta.tag)
        if tournament is not None:  # the tournament scores the table now (a lost wake-up: its next poll does)
            tournament_due.wake(pipe, tournament)
    pipe.execute()
    if after == "active":
        for info in meta.seats:
            core.metrics.seats_filled.labels("bot" if control.bot_plays(info) else "human").inc()


def is_human_action(entry: dict[str, Any]) -> bool:
    """A person did something: joined, reclaimed a seat, moved or asked for a rematch."""
    kind = entry["kind"]
    return kind in ("joined", "reclaimed", "rematch") or (kind == "move" and entry.get("by") == "human")


def fits_pending_decision(store: MatchStore, match: Match, seat: int, client_version: int) -> bool:
    """May a move made at ``client_version`` be applied at the current version instead?

    Yes when the seat was already to act then, is still to act now, and made no move in between: its
    pending decision is the same one (others acting in a simultaneous step or a window do not make it
    stale). Otherwise the client decided on a picture that no longer holds: 409.
    """
    if not 0 <= client_version < match.version or seat not in match.meta.to_act:
        return False
    entries = store.log(match.id, client_version, match.version)
    if not entries or seat not in entries[0]["to_act"]:
        return False
    return all(e.get("seat") != seat or e["kind"] != "move" for e in entries[1:])
