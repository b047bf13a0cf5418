"""Seat clocks: pure rules for how much time each human seat has for its pending decision.

The clock lives in the match meta (so it changes in the same compare-and-set as the move that stops
or starts it) as a :class:`~services.core.meta.Clock` (``{"mode", "on_timeout", <mode parameters>, "seats":
[{"bank_s", "since", "turn"}]}`` in JSON):

* ``per_move``       — ``seconds`` for every decision;
* ``fischer``        — a bank of ``base_s`` seconds, ``increment_s`` added after each decision;
* ``correspondence`` — ``hours`` for every decision (asynchronous play with a deadline);
* ``none``           — no clock (the default).

A seat's clock runs while the seat is in ``to_act`` and a human controls it. ``since`` is when it
started and ``turn`` the match version at which it started: ``(match, seat, turn)`` names one pending
decision, so a deadline can never fire for a decision the seat has already made. Bot-controlled and
forfeited seats have no clock. The deadlines are indexed in Redis for the timekeeper
(``services/timekeeper``); this module only computes them.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from services.core.errors import DomainError, Kind
from services.core.meta import Clock, SeatClock

MODES = ("none", "per_move", "fischer", "correspondence")
TIMEOUT_POLICIES = ("bot", "forfeit")
#: Shortest allowed decision time: clocks below this are unplayable over a mobile network.
MIN_SECONDS = 0.5
MAX_SECONDS = 30 * 86400.0

_PARAMS: dict[str, tuple[str, ...]] = {
    "none": (),
    "per_move": ("seconds",),
    "fischer": ("base_s", "increment_s"),
    "correspondence": ("hours",),
}


def _number(raw: dict[str, Any], name: str, low: float, high: float) -> float:
    value = raw.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DomainError(Kind.MALFORMED, "bad_clock", f"clock.{name} must be a number")
    if not low <= value <= high:
        raise DomainError(Kind.MALFORMED, "bad_clock", f"clock.{name} must be between {low:g} and {high:g}")
    return float(value)


def parse(raw: Any) -> Clock:
    """The validated clock settings of a create request, a JSON object (``None`` means no clock): no seats yet."""
    if raw is None:
        raw = {"mode": "none"}
    if not isinstance(raw, dict):
        raise DomainError(Kind.MALFORMED, "bad_clock",
                          "clock must be an object such as {\"mode\": \"per_move\", \"seconds\": 60}")
    mode = raw.get("mode", "none")
    if mode not in MODES:
        raise DomainError(Kind.MALFORMED, "bad_clock", f"clock.mode must be one of {', '.join(MODES)}")
    allowed = {"mode", "on_timeout", *_PARAMS[mode]}
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise DomainError(Kind.MALFORMED, "bad_clock", f"clock.{unknown[0]} is not a setting of mode {mode!r}; "
                                         f"it takes {', '.join(sorted(allowed))}")
    policy = raw.get("on_timeout", "bot")
    if policy not in TIMEOUT_POLICIES:
        raise DomainError(Kind.MALFORMED, "bad_clock", "clock.on_timeout must be 'bot' or 'forfeit'")
    if mode == "per_move":
        return Clock(mode=mode, on_timeout=policy, seconds=_number(raw, "seconds", MIN_SECONDS, MAX_SECONDS))
    if mode == "fischer":
        return Clock(mode=mode, on_timeout=policy, base_s=_number(raw, "base_s", MIN_SECONDS, MAX_SECONDS),
                     increment_s=_number(raw, "increment_s", 0.0, MAX_SECONDS))
    if mode == "correspondence":
        return Clock(mode=mode, on_timeout=policy,
                     hours=_number(raw, "hours", MIN_SECONDS / 3600, MAX_SECONDS / 3600))
    return Clock(mode=mode, on_timeout=policy)


def initial(config: Clock, seats: int) -> Clock:
    """A clock for a new match: nothing runs until the match is active."""
    bank = config.base_s if config.mode == "fischer" else None
    return msgspec.structs.replace(config, seats=[SeatClock(bank_s=bank) for _ in range(seats)])


def allowance(clock: Clock, seat: int) -> float:
    """Seconds the seat has for its current decision, counted from ``since``."""
    mode = clock.mode
    if mode == "per_move":
        return float(_set(clock.seconds))
    if mode == "correspondence":
        return float(_set(clock.hours)) * 3600
    if mode == "fischer":
        return max(0.0, float(_set(clock.seats[seat].bank_s)))
    return math.inf


def _set(value: float | None) -> float:
    """A setting its mode always has (``parse`` sets it)."""
    assert value is not None
    return value


def deadline(clock: Clock, seat: int) -> float | None:
    """Wall-clock time at which the seat's pending decision times out, or ``None`` if its clock is stopped."""
    entry = clock.seats[seat]
    if clock.mode == "none" or entry.since is None:
        return None
    return float(entry.since) + allowance(clock, seat)


def _stop(clock: Clock, entry: SeatClock, now: float, decided: bool) -> SeatClock:
    """The seat's clock stopped at ``now``, its decision made (``decided``: Fischer adds the increment) or not."""
    if entry.since is None:
        return entry
    bank = entry.bank_s
    if clock.mode == "fischer":
        left = float(_set(entry.bank_s)) - max(0.0, now - float(entry.since))
        bank = max(0.0, left) + (float(_set(clock.increment_s)) if decided else 0.0)
    return msgspec.structs.replace(entry, bank_s=bank, since=None, turn=None)


def advance(clock: Clock, *, timed: list[bool], to_act: list[int], mover: int | None, version: int,
            now: float) -> Clock:
    """The clock after an update that becomes ``version``.

    ``timed[s]`` says whether seat ``s`` plays against a clock now (a human controls it, it has not
    forfeited, and the match is active). The mover's decision is over (Fischer adds the increment);
    seats that dropped out of ``to_act`` without moving are stopped without one; every timed seat now
    to act whose clock is stopped starts a new decision at ``version``. Seats that stay pending keep
    running (others acting in a simultaneous step do not reset anyone's time).
    """
    if clock.mode == "none":
        return clock
    seats = list(clock.seats)
    pending = set(to_act)
    if mover is not None:
        seats[mover] = _stop(clock, seats[mover], now, decided=True)
    for seat, entry in enumerate(seats):
        if entry.since is not None and (seat not in pending or not timed[seat]):
            seats[seat] = _stop(clock, entry, now, decided=False)
    for seat in sorted(pending):
        if timed[seat] and seats[seat].since is None:
            seats[seat] = msgspec.structs.replace(seats[seat], since=now, turn=version)
    return msgspec.structs.replace(clock, seats=seats)


def expire(clock: Clock, seat: int) -> Clock:
    """The clock after ``seat`` ran out of time: stopped, with an empty Fischer bank."""
    seats = list(clock.seats)
    entry = msgspec.structs.replace(seats[seat], since=None, turn=None)
    seats[seat] = msgspec.structs.replace(entry, bank_s=0.0) if clock.mode == "fischer" else entry
    return msgspec.structs.replace(clock, seats=seats)


def restore(clock: Clock, seat: int) -> Clock:
    """A reclaimed seat whose Fischer bank ran dry gets a quarter of the base time back.

    Without it the owner would time out again the instant they return; a quarter of the base is
    enough to decide and still makes timing out cost something.
    """
    if clock.mode != "fischer":
        return clock
    seats = list(clock.seats)
    entry = seats[seat]
    seats[seat] = msgspec.structs.replace(
        entry, bank_s=max(float(_set(entry.bank_s)), float(_set(clock.base_s)) / 4))
    return msgspec.structs.replace(clock, seats=seats)


def started(clock: Clock, version: int) -> list[tuple[int, float]]:
    """(seat, deadline) of every decision that started at ``version`` (to be indexed for the timekeeper)."""
    out = []
    for seat, entry in enumerate(clock.seats):
        if entry.turn == version:
            due = deadline(clock, seat)
            if due is not None:
                out.append((seat, due))
    return out


def public(clock: Clock, now: float) -> dict[str, Any]:
    """The clock as clients see it: the settings and, per seat, the time left and whether it runs."""
    doc = clock.settings()
    seats = []
    for seat, entry in enumerate(clock.seats):
        due = deadline(clock, seat)
        if clock.mode == "none":
            remaining = None
        elif due is not None:
            remaining = max(0.0, due - now)
        elif clock.mode == "fischer":
            remaining = float(_set(entry.bank_s))
        else:
            remaining = allowance(clock, seat)
        seats.append({"seat": seat, "running": due is not None,
                      "remaining_s": None if remaining is None else round(remaining, 3), "deadline": due})
    doc["seats"] = seats
    return doc
