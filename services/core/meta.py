"""A match's record as the store keeps it (``match:{id}:meta``): every key named and typed.

:class:`MatchMeta` is the match (its game and setup, who sits where, whose turn, how it ended) and :class:`Seat`
one seat of it. They are frozen: a change is a new record (``msgspec.structs.replace``), so a match a process
keeps in memory (``MatchStore.load_next``) never changes under a reader.

The JSON is the one earlier versions wrote, key for key, so a match written by either loads in the other (a
rolling restart runs both): a key those versions always wrote is always written here, even when null (``result``,
a seat's ``token_hash``), and a key they wrote only when it mattered (``tag``, ``rated: false``, a seat's
``forfeited``...) is left out while it holds its default. ``omit_defaults`` leaves out a field equal to its
default; a field given by :func:`_always` has a default that is never left out (a default factory other than an
empty builtin collection), which is how a key that was always written keeps being written.
``tests/gateway/test_meta_record.py`` pins both.

How a match ended is an :class:`Outcome`, its seat clocks a :class:`Clock` (the settings, a :class:`SeatClock` per
seat; ``match/clocks.py`` holds their rules). ``options`` and ``result`` stay JSON documents: the engine's options and
result, passed through to clients.

On the bottom floor of the core, beside the config and the errors: the store, the tenancy (quotas, webhook
outbox) and every floor above read matches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import msgspec

SeatKind = Literal["human", "bot"]
Status = Literal["waiting", "active", "finished"]
#: Who plays a human seat now: a bot after a timeout, a forfeit or a leave; its human again after a reclaim.
Control = Literal["human", "bot"]


def _always(make: Callable[[], Any]) -> Any:
    """A default for a key that is written even when it holds it (see the module's docstring)."""
    return msgspec.field(default_factory=make)


class Seat(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One seat: a bot's, or a human's (free, reserved, kept for a named player, or taken with a token)."""

    kind: SeatKind
    #: sha256 of the seat token; null while nobody holds it (free, reserved, left)
    token_hash: str | None = _always(lambda: None)
    #: a bot seat's level
    level: str | None = None
    #: the tenant's user id in this human seat
    player: str | None = None
    #: a tournament's table keeps the seat for ``player`` (no token yet)
    kept: bool = False
    #: a matchmaking ticket holds the seat until its first read takes the token
    reserved: str | None = None
    #: who plays a human seat now (absent: its human)
    control: Control | None = None
    #: its human left a running match (for good: a bot plays it)
    left: bool = False
    #: resigned, or timed out under the ``forfeit`` policy
    forfeited: bool = False
    #: its human joined, moved or reclaimed at least once
    acted: bool = False


class Outcome(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """How a finished match ended (``control.final``, ``control.forfeit_ends``, an abort, the idle check), with the
    rating changes it made (``ratings.settle``). Clients read it as JSON: :meth:`doc`."""

    ended_by: Literal["game", "forfeit", "abandoned", "aborted"]
    #: an abort's reason (the tournament's words)
    reason: str | None = None
    winners: list[int] = _always(lambda: [])
    forfeited: list[int] = _always(lambda: [])
    #: per seat, when the game itself ended
    scores: list[float] | None = _always(lambda: None)
    #: the rating changes of a rated match: ``seat``, ``player``, ``before``, ``after``, ``change`` each
    ratings: list[dict[str, Any]] | None = _always(lambda: None)

    def doc(self) -> dict[str, Any]:
        """The outcome as a JSON document (what the status, the history and the webhooks show)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


ClockMode = Literal["none", "per_move", "fischer", "correspondence"]
#: What a seat whose time ran out gets: a bot until its human reclaims it, or a forfeit.
TimeoutPolicy = Literal["bot", "forfeit"]


class SeatClock(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One seat's clock: its Fischer bank, and its pending decision (``since`` when it started, ``turn`` the match
    version it started at); every key always written, null while unused."""

    #: seconds left in a Fischer bank (null in the other modes)
    bank_s: float | None = _always(lambda: None)
    #: when the running decision started (null: the clock is stopped)
    since: float | None = _always(lambda: None)
    #: the match version the running decision started at
    turn: int | None = _always(lambda: None)


class Clock(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A match's seat clocks: the settings (``mode``, its parameters, ``on_timeout``) and one :class:`SeatClock` a
    seat. A mode's parameters are written only in that mode (the others are null, and left out); see
    ``match/clocks.py``. A clock's settings alone (what a request asked for, a rematch copies) have no seats."""

    mode: ClockMode = _always(lambda: "none")
    on_timeout: TimeoutPolicy = _always(lambda: "bot")
    #: ``per_move``: seconds for every decision
    seconds: float | None = None
    #: ``fischer``: the bank each seat starts with, and what a decision adds to it
    base_s: float | None = None
    increment_s: float | None = None
    #: ``correspondence``: hours for every decision
    hours: float | None = None
    seats: list[SeatClock] = _always(lambda: [])

    def settings(self) -> dict[str, Any]:
        """The settings as a JSON document (its keys as stored, without the seats)."""
        doc: dict[str, Any] = msgspec.to_builtins(self)
        doc.pop("seats", None)
        return doc


class MatchMeta(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A match: fields in the order earlier versions wrote their keys."""

    game: str
    players: int = _always(lambda: 0)
    options: dict[str, Any] = _always(lambda: {})
    seed: int = _always(lambda: 0)
    seats: list[Seat]
    #: the engine's seat count (more than ``players`` with an automa)
    seat_count: int = _always(lambda: 0)
    #: the engine's sides: one seat each, or teams
    sides: list[list[int]] = _always(lambda: [])
    to_act: list[int]
    status: Status
    #: the engine's result document once finished (with its explanation)
    result: dict[str, Any] | None = _always(lambda: None)
    #: how it ended, once finished
    outcome: Outcome | None = _always(lambda: None)
    #: the seat clocks (``match/clocks.py``)
    clock: Clock | None = _always(lambda: None)
    #: the bot level that plays a human seat after a timeout or a leave
    takeover_level: str = _always(lambda: "normal")
    #: written only when false (a tenant's match is rated unless it says so)
    rated: bool = True
    #: what the match belongs to (``tournament:<id>``)
    tag: str | None = None
    #: whose quotas it is charged to (an address, or a tenant's owner)
    owner: str | None = None
    #: the tenant whose match it is (API key)
    tenant: str | None = None
    id: str = ""
    created_at: float = 0.0
    #: the last human action (the idle check's clock)
    human_at: float | None = None
    #: the id of the rematch once someone asked for it
    rematch: str | None = None
    #: spectators may post to the match's chat too (issue 51; written only when true)
    spectator_chat: bool = False
    #: when the match finished (the chat stays open a while after it)
    finished_at: float | None = None

    def with_seat(self, seat: int, **changes: Any) -> MatchMeta:
        """This record with ``changes`` made to seat ``seat``."""
        seats = list(self.seats)
        seats[seat] = msgspec.structs.replace(seats[seat], **changes)
        return msgspec.structs.replace(self, seats=seats)


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(MatchMeta).decode


def encode_meta(meta: MatchMeta) -> bytes:
    """The JSON the store writes."""
    return _encode(meta)


def decode_meta(raw: bytes | str) -> MatchMeta:
    """A stored record (as any version wrote it)."""
    return _decode(raw)
