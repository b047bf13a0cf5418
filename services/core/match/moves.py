"""A move: validated by the rules service, committed through the one pipeline, answered once per key.

:func:`apply_move` validates a move through the rules service and commits it, re-basing on concurrent
updates while the seat's decision is still the one it made; the bot worker calls it directly.
:func:`submit` is a player's move, from any door (REST or WebSocket): the access check, the rate limit, the
``Idempotency-Key`` (the same key and request answer the first answer again; the stored answer commits with
the move), and the metrics.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import msgspec
import orjson

from services.core.access import Action, Caller
from services.core.errors import DomainError, Kind, busy
from services.core.match import describe
from services.core.match.commit import MAX_REBASES, commit, fits_pending_decision
from services.core.match.opener import open_match
from services.core.match.reads import events_after, seat_status, status_doc
from services.core.meta import MatchMeta
from services.core.record import control
from services.core.record.store import Match, Remember, StaleVersion, your_turn_or_over
from services.core.rules_client import Applied
from services.core.service import Core

#: Makes the response to store for a move's ``Idempotency-Key`` from the updated match and the rules answer.
RememberMove = Callable[[Match, Applied], tuple[str, dict[str, Any]]]


def check_controller(match: Match, seat: int, by_bot: bool) -> None:
    """A bot may move only for a seat a bot plays, and the owner only for a seat they play themselves."""
    info = match.meta.seats[seat]
    if by_bot and not control.bot_plays(info):
        raise DomainError(Kind.CONFLICT, "seat_reclaimed", f"seat {seat} is played by its owner again")
    if not by_bot and control.bot_plays(info):
        why = "forfeited" if info.forfeited else "timed out"
        raise DomainError(Kind.CONFLICT, "seat_under_bot_control",
                          f"a bot plays seat {seat} since it {why}; reclaim it with "
                          f"POST /v1/matches/{match.id}/seats/{seat}/reclaim")


def bots_own_seats(meta: MatchMeta) -> list[int]:
    """Seats made for a bot: no one holds their token, so no one reads their view, legal moves or words (the bot
    worker plays from the state). A person's seat a bot plays for a while keeps all three: its owner still reads."""
    return [i for i, info in enumerate(meta.seats) if info.kind == "bot"]


def _for_attempt(remember: RememberMove | None, applied: Applied) -> Remember | None:
    """``remember`` bound to this attempt's answer from the rules service."""
    if remember is None:
        return None
    return lambda updated: remember(updated, applied)


def apply_move(core: Core, match: Match, seat: int, move: dict[str, Any],
               version: int, by_bot: bool = False, remember: RememberMove | None = None) -> tuple[Match, Applied]:
    """Validate through the rules service, then commit; returns the new match and what the rules service
    answered (the state, every seat's view, the legal moves of the seats to act). ``remember`` makes the
    response to store for an ``Idempotency-Key`` with the move (see :meth:`MatchStore.update`)."""
    for _ in range(MAX_REBASES):
        status = match.meta.status
        if status == "waiting":
            raise DomainError(Kind.CONFLICT, "match_not_started", "waiting for players to join")
        if status == "finished":
            raise DomainError(Kind.CONFLICT, "match_closed", "the match is over")
        check_controller(match, seat, by_bot)
        if version != match.version and not fits_pending_decision(core.store, match, seat, version):
            raise DomainError(Kind.CONFLICT, "stale_version",
                              f"the match is at version {match.version}; reload and decide again")
        applied = core.rules.apply_move(match.game, match.state, seat, move, describe=True,
                                        quiet_seats=bots_own_seats(match.meta))
        meta = msgspec.structs.replace(match.meta, to_act=applied.to_act, result=applied.result,
                                       status="finished" if applied.finished else "active")
        if applied.finished:
            meta = msgspec.structs.replace(meta, outcome=control.final(meta.sides, control.forfeited(meta),
                                                                       applied.scores, applied.winners))
        entry = {"kind": "move", "seat": seat, "move": move, "to_act": applied.to_act,
                 "by": "bot" if by_bot else "human", **describe.stored(applied.descriptions)}
        try:
            updated = commit(core, match, meta, applied.state, entry, mover=seat, derived=applied.derived(),
                             remember=_for_attempt(remember, applied))
        except StaleVersion:
            reloaded = core.store.load(match.id)
            if reloaded is None:
                raise DomainError(Kind.NOT_FOUND, "match_not_found", "the match expired") from None
            match = reloaded
            continue
        return updated, applied
    raise busy()


def _stored_answer(done: dict[str, Any], fingerprint: str) -> dict[str, Any]:
    """The first answer to this key: its document, or the refusal raised again."""
    if done["fingerprint"] != fingerprint:
        raise DomainError(Kind.ILLEGAL, "idempotency_key_reused", "that Idempotency-Key was used with another request")
    if "error" in done:
        error = done["error"]
        raise DomainError(Kind(error["kind"]), error["code"], error["message"])
    if done.get("status", 200) != 200:  # a record written before refusals kept their kind (all were 422)
        error = done["body"]["error"]
        raise DomainError(Kind.ILLEGAL, error["code"], error["message"])
    body: dict[str, Any] = done["body"]
    return body


def submit(core: Core, caller: Caller, match_id: str, move: dict[str, Any], version: int, *,
           idempotency_key: str | None = None, include_legal: bool = False,
           connected_for: float = 0.0) -> dict[str, Any]:
    """A player's move for the seat their token holds; the status document after it (their view).

    ``connected_for``: the seat counts as connected that much longer (a move that then waits for the seat's turn).
    """
    key = idempotency_key
    opened = open_match(core, caller, match_id, Action.ACT, idempotency_key=key, connected_for=connected_for)
    match, seat = opened.match, opened.access.seat
    assert seat is not None
    fingerprint = hashlib.sha256(orjson.dumps([seat, {"move": move, "version": version}],
                                              option=orjson.OPT_SORT_KEYS)).hexdigest()
    if opened.done is not None:
        return _stored_answer(opened.done, fingerprint)

    def respond(updated: Match, applied: Applied) -> dict[str, Any]:
        doc = status_doc(updated, opened.access, orjson.Fragment(applied.views[seat]))
        if include_legal:
            mine = applied.legal.get(seat)
            doc["legal_moves"] = orjson.Fragment(mine) if mine is not None and not control.bot_plays(
                updated.meta.seats[seat]) and updated.meta.status == "active" else []
        return doc

    made: list[dict[str, Any]] = []  # by remember(): the last one is the attempt that committed

    def remember(updated: Match, applied: Applied) -> tuple[str, dict[str, Any]]:
        """The answer, stored by the same compare-and-set as the move."""
        assert key is not None
        made.append(respond(updated, applied))
        return key, {"fingerprint": fingerprint, "body": made[-1]}

    try:
        updated, applied = apply_move(core, match, seat, move, version, remember=remember if key is not None else None)
    except DomainError as err:
        core.metrics.moves.labels(match.game, err.code).inc()
        if key is not None and err.kind is Kind.ILLEGAL:
            core.store.idempotent_put(match_id, key, {"fingerprint": fingerprint, "error": {
                "kind": err.kind.value, "code": err.code, "message": err.message}})
        if key is not None and err.code == "stale_version":  # a concurrent twin may have won: answer as it did
            done = core.store.idempotent_get(match_id, key)
            if done is not None and done["fingerprint"] == fingerprint:
                return _stored_answer(done, fingerprint)
        raise
    core.metrics.moves.labels(match.game, "applied").inc()
    return made[-1] if made else respond(updated, applied)


def must_act_or_over(doc: dict[str, Any]) -> bool:
    """Is the status document's reader to act now, or the match over? (What a move with ``wait`` waits for.)"""
    seat = doc["you"]
    return seat is None or your_turn_or_over(doc["status"], doc["to_act"], seat)


def after_move(core: Core, caller: Caller, match_id: str, moved: int, include_legal: bool) -> dict[str, Any]:
    """The answer to a move that waited for the seat's turn: the caller's status document now, with ``events``
    after ``moved`` (the version the move made). Not counted against the rate limit: the move was."""
    opened = open_match(core, caller, match_id, Action.ACT, view=True, legal=include_legal, log_from=moved + 1,
                        count=False)
    doc = seat_status(core, opened.match, opened.access, include_legal)
    doc["events"] = events_after(core, opened.match, opened.access, moved)
    return doc
