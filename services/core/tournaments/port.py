"""What the tournament runner needs from the match core: a small, explicit interface.

The runner (:mod:`.runner`) creates matches, reads how they ended, ends the ones a round's deadline overtakes,
reads ratings and the bot ladder, and hands its webhook events over. The core implements
:class:`TournamentCore` once it has its own package (phase 2 of issue 31); nothing here knows Redis keys of
matches, Flask or HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol


@dataclass(frozen=True)
class SeatSpec:
    """A seat of a tournament match: a tenant's player (a human seat kept for them), or a bot of a rung."""

    player: str | None = None
    bot_level: str | None = None


@dataclass(frozen=True)
class MatchSpec:
    """A match the runner asks for. ``key`` is its idempotency key (``<tournament>:<table>``): asking again with
    the same key returns the same match, so a runner that died between creating it and recording its id makes
    no second match.

    The core creates it *active* at once, each human seat reserved for its player (they join it with the
    tenant's key and their player id, as for any tenant match) and the clock running: a player who never
    comes times out and a bot of ``takeover_level`` plays the seat (the existing takeover rules), so no table
    waits for a no-show. ``tag`` (``tournament:<id>``) is kept in the match, and the core calls the
    tournament's wake-up (:func:`services.core.tournaments.store.wake`) when a tagged match finishes.
    """

    key: str
    tenant: str
    game: str
    seats: tuple[SeatSpec, ...]
    options: Mapping[str, Any]
    clock: Mapping[str, Any]
    takeover_level: str
    rated: bool
    tag: str
    #: The id to make the match under (chosen when the round was paired, so its events name it); None: the core
    #: chooses one, once per ``key``.
    match_id: str | None = None


@dataclass(frozen=True)
class SeatResult:
    """How one seat ended: its player (None for a bot seat); ``bot_played``: a human seat a bot was playing when
    the match ended (taken over and never reclaimed, left, or forfeited); ``acted``: its human made at least one
    decision (or joined)."""

    player: str | None
    bot: bool
    bot_played: bool
    acted: bool


@dataclass(frozen=True)
class MatchResult:
    """A match as the runner sees it. ``status``: ``active`` (still going; ``waiting`` counts as active),
    ``finished``, or ``gone`` (expired or unknown: the runner scores it as aborted). ``ranks``: per seat, 1 the
    best, equal for a tie (the outcome's order: winners, then scores, forfeited seats last), None unless it
    finished by the game or a forfeit; ``ended_by`` as the outcome says (``game``, ``forfeit``, ``abandoned``,
    ``aborted``)."""

    match_id: str
    status: Literal["active", "finished", "gone"]
    ended_by: str | None = None
    ranks: tuple[int, ...] | None = None
    seats: tuple[SeatResult, ...] = field(default_factory=tuple)


class TournamentCore(Protocol):
    """The match core, as the tournament runner uses it (implemented by the core in phase 2)."""

    def create_match(self, spec: MatchSpec) -> str:
        """The id of the match ``spec`` describes, creating it unless a match with ``spec.key`` exists."""
        ...

    def match_result(self, tenant: str, match_id: str) -> MatchResult:
        """How the tenant's match stands (``gone`` when it does not exist, or is another tenant's)."""
        ...

    def abort_match(self, tenant: str, match_id: str, reason: str) -> None:
        """End a running match now, unrated (``ended_by: "aborted"``, ``reason`` in its outcome); nothing if it
        already finished."""
        ...

    def player_ratings(self, tenant: str, game: str, players: list[str]) -> dict[str, float]:
        """Each player's rating ``mu`` in ``game`` (the default for one without a rated match)."""
        ...

    def bot_ladder(self, game: str) -> dict[str, dict[str, Any]]:
        """The game's bot rungs: ``{level: {"mu": ..., ...}}`` (``ratings.bot_ratings``)."""
        ...

    def emit(self, tenant: str, event_id: str, event: dict[str, Any]) -> None:
        """Hand a webhook event to the tenant's hooks (at least once: ``event_id`` is the same on a repeat)."""
        ...
