"""The documents of the API as TypedDicts (the schemas of /v1/openapi.json; a test keeps them equal).

Views, moves and results are each game's own JSON (docs/games/*.md): plain dicts here.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

Move = dict[str, Any]


class Game(TypedDict):
    id: str
    title: str
    min_players: int
    max_players: int
    simultaneous: bool
    options: list[Any]


class Seat(TypedDict):
    seat: int
    kind: Literal["human", "bot"]
    level: str | None
    taken: bool
    control: Literal["human", "bot"]
    connected: bool
    forfeited: bool
    left: bool


class ClockSeat(TypedDict):
    seat: int
    running: bool
    remaining_s: float | None
    deadline: float | None


class Clock(TypedDict, total=False):
    mode: str
    on_timeout: str
    seconds: float
    base_s: float
    increment_s: float
    hours: float
    seats: list[ClockSeat]


class Outcome(TypedDict):
    ended_by: Literal["game", "forfeit"]
    winners: list[int]
    forfeited: list[int]
    scores: list[float] | None


class MatchDoc(TypedDict, total=False):
    id: str
    game: str
    players: int
    options: dict[str, Any]
    status: Literal["waiting", "active", "finished"]
    version: int
    seats: list[Seat]
    to_act: list[int]
    you: int | None
    view: dict[str, Any] | None
    result: dict[str, Any] | None
    outcome: Outcome | None
    clock: Clock | None
    takeover_level: str
    rematch: str | None
    legal_moves: list[Move] | None
    token: str
    seat: int


class Event(TypedDict, total=False):
    version: int
    kind: str
    seat: int | None
    to_act: list[int]
    by: Literal["human", "bot"]
    move: Move


class EventsDoc(TypedDict, total=False):
    version: int
    status: str
    to_act: list[int]
    events: list[Event]
    view: dict[str, Any] | None
    result: dict[str, Any] | None
    legal_moves: list[Move] | None


class LegalMovesDoc(TypedDict):
    version: int
    seat: int
    moves: list[Move]


class Hint(TypedDict):
    version: int
    seat: int
    move: Move


class ReplayDoc(TypedDict):
    id: str
    game: str
    players: int
    options: dict[str, Any]
    seed: int | None
    status: str
    version: int
    log: list[dict[str, Any]]
    result: dict[str, Any] | None


class TicketDoc(TypedDict):
    ticket: str
    status: Literal["waiting", "matched", "cancelled"]
    game: str
    players: int
    options: dict[str, Any]
    match_id: str | None
    seat: int | None
    #: the seat token is in ``token`` exactly once (the first read that finds the ticket matched); later reads
    #: say ``token: null, token_issued: true``
    token: str | None
    token_issued: bool


#: Which TypedDict is which schema of the OpenAPI document (components/schemas).
SCHEMAS: dict[str, type] = {"Seat": Seat, "Clock": Clock, "Outcome": Outcome, "Match": MatchDoc,
                            "Events": EventsDoc, "LegalMoves": LegalMovesDoc, "Hint": Hint, "Replay": ReplayDoc,
                            "Ticket": TicketDoc}
