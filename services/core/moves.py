"""How a match changes: the one compare-and-set path that HTTP handlers, bot workers and the timekeeper share.

:func:`commit` is every update (join, move, timeout, reclaim, leave, rematch link): seat clocks advance,
the deadlines that start are indexed, the match is compare-and-set, and bot seats now to act get a job.
:func:`apply_move` validates a move through the rules service and commits it, re-basing on concurrent
updates while the seat's decision is still the one it made.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from services.gateway.errors import ApiError

from . import clocks, control, ratings
from .bots_seam import on_bot_turn
from .rules_client import Applied, RulesClient
from .store import Match, MatchStore, Remember, StaleVersion

MAX_REBASES = 8
#: Makes the response to store for a move's ``Idempotency-Key`` from the updated match and the rules answer.
RememberMove = Callable[[Match, Applied], tuple[str, dict[str, Any]]]


def bot_seats_due(before: dict[str, Any] | None, after: dict[str, Any], mover: int | None) -> list[int]:
    """Bot-played seats that face a *new* decision after an update, and so need a job.

    A seat still pending from before (others acted in a simultaneous step) already has its job; it gets
    another only if it just moved, a bot just took it over, or the match just started.
    """
    if after["status"] != "active":
        return []
    seats = after["seats"]
    due = []
    for seat in after["to_act"]:
        if seat >= len(seats) or not control.bot_plays(seats[seat]):
            continue
        if (before is None or before["status"] != "active" or seat not in before["to_act"] or seat == mover
                or not control.bot_plays(before["seats"][seat])):
            due.append(seat)
    return due


def notify_bots(store: MatchStore, match: Match, seats: list[int]) -> None:
    """Enqueue a job per bot seat with a new decision (bot seats and taken-over ones)."""
    if seats:
        on_bot_turn(store, match.id, match.game, match.version, seats)


def commit(store: MatchStore, match: Match, meta: dict[str, Any], state: bytes | None, entry: dict[str, Any],
           *, mover: int | None = None, now: float | None = None, derived: dict[str, str] | None = None,
           remember: Remember | None = None) -> Match:
    """Compare-and-set ``match`` to ``meta``/``state`` (with the documents ``derived`` from a new state, and
    the idempotent response ``remember`` makes); raises :class:`StaleVersion` if someone was first."""
    now = time.time() if now is None else now
    version = match.version + 1
    if is_human_action(entry):  # what keeps a match alive (see ``services/timekeeper``: idle matches)
        meta = {**meta, "human_at": now}
    clock = meta.get("clock")
    if clock is not None:
        pending = meta["to_act"] if meta["status"] == "active" else []
        clock = clocks.advance(clock, timed=control.timed(meta), to_act=pending, mover=mover, version=version,
                               now=now)
        meta = {**meta, "clock": clock}
        for seat, due in clocks.started(clock, version):
            store.schedule(match.id, seat, version, due)
    meta = ratings.settle(store.redis, match.meta, meta)  # a rated match's rating changes, in its outcome
    updated = store.update(match, meta, state, entry, derived, remember)
    if match.meta["status"] != "finished" and (meta.get("outcome") or {}).get("ratings"):
        ratings.apply(store.redis, meta["tenant"], meta["game"], meta["outcome"])  # the worker re-applies too
    notify_bots(store, updated, bot_seats_due(match.meta, meta, mover))
    return updated


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
    if not 0 <= client_version < match.version or seat not in match.meta["to_act"]:
        return False
    entries = store.log(match.id, client_version, match.version)
    if not entries or seat not in entries[0]["to_act"]:
        return False
    return all(e.get("seat") != seat or e["kind"] != "move" for e in entries[1:])


def check_controller(match: Match, seat: int, by_bot: bool) -> None:
    """A bot may move only for a seat a bot plays, and the owner only for a seat they play themselves."""
    info = match.meta["seats"][seat]
    if by_bot and not control.bot_plays(info):
        raise ApiError(409, "seat_reclaimed", f"seat {seat} is played by its owner again")
    if not by_bot and control.bot_plays(info):
        why = "forfeited" if info.get("forfeited") else "timed out"
        raise ApiError(409, "seat_under_bot_control",
                       f"a bot plays seat {seat} since it {why}; reclaim it with "
                       f"POST /v1/matches/{match.id}/seats/{seat}/reclaim")


def _for_attempt(remember: RememberMove | None, applied: Applied) -> Remember | None:
    """``remember`` bound to this attempt's answer from the rules service."""
    if remember is None:
        return None
    return lambda updated: remember(updated, applied)


def apply_move(store: MatchStore, rules: RulesClient, match: Match, seat: int, move: dict[str, Any],
               version: int, by_bot: bool = False, remember: RememberMove | None = None) -> tuple[Match, Applied]:
    """Validate through the rules service, then commit; returns the new match and what the rules service
    answered (the state, every seat's view, the legal moves of the seats to act). ``remember`` makes the
    response to store for an ``Idempotency-Key`` with the move (see :meth:`MatchStore.update`)."""
    for _ in range(MAX_REBASES):
        status = match.meta["status"]
        if status == "waiting":
            raise ApiError(409, "match_not_started", "waiting for players to join")
        if status == "finished":
            raise ApiError(409, "match_closed", "the match is over")
        check_controller(match, seat, by_bot)
        if version != match.version and not fits_pending_decision(store, match, seat, version):
            raise ApiError(409, "stale_version", f"the match is at version {match.version}; reload and decide again")
        applied = rules.apply_move(match.game, match.state, seat, move)
        meta = {**match.meta, "to_act": applied.to_act, "status": "finished" if applied.finished else "active",
                "result": applied.result}
        if applied.finished:
            meta["outcome"] = control.final(meta["sides"], control.forfeited(meta), applied.scores, applied.winners)
        entry = {"kind": "move", "seat": seat, "move": move, "to_act": applied.to_act,
                 "by": "bot" if by_bot else "human"}
        try:
            updated = commit(store, match, meta, applied.state, entry, mover=seat, derived=applied.derived(),
                             remember=_for_attempt(remember, applied))
        except StaleVersion:
            reloaded = store.load(match.id)
            if reloaded is None:
                raise ApiError(404, "match_not_found", "the match expired") from None
            match = reloaded
            continue
        return updated, applied
    raise ApiError(409, "busy", "the match changed too often; retry")
