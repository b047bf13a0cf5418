"""The documents of the API as TypedDicts (the schemas of /v1/openapi.json; a test keeps them equal).

Views, moves and results are each game's own JSON (docs/games/*.md): plain dicts here.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

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
    #: the tenant's user id in a human seat: only in answers to the match's own tenant (its API key)
    player: NotRequired[str | None]


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


class Rating(TypedDict):
    #: ``mu - 3 sigma``: the conservative estimate (openskill Plackett-Luce), 0 for a new player
    rating: float
    mu: float
    sigma: float
    matches: int


class RatingChange(TypedDict):
    seat: int
    player: str
    before: Rating
    after: Rating
    change: float


class Outcome(TypedDict):
    ended_by: Literal["game", "forfeit"]
    winners: list[int]
    forfeited: list[int]
    scores: list[float] | None
    #: a tenant's rated match: each named player's rating before and after
    ratings: NotRequired[list[RatingChange]]


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
    seed: str | None
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


class HistorySeat(TypedDict):
    seat: int
    kind: Literal["human", "bot"]
    player: str | None


class HistoryMatch(TypedDict):
    id: str
    game: str
    players: int
    status: Literal["waiting", "active", "finished"]
    created_at: float
    #: the player's seat in a player's history (None in the tenant's list)
    seat: int | None
    seats: list[HistorySeat]
    result: dict[str, Any] | None
    outcome: Outcome | None


class HistoryDoc(TypedDict):
    player: str | None
    matches: list[HistoryMatch]
    #: pass as ``before`` for the next (older) page; None at the end
    next: float | None


class RatingsDoc(TypedDict):
    player: str
    #: by game id
    ratings: dict[str, Rating]


WebhookEvent = Literal["match.created", "match.started", "match.finished", "seat.timeout", "seat.taken_over",
                       "seat.reclaimed", "turn"]


class Webhook(TypedDict):
    id: str
    url: str
    events: list[WebhookEvent]
    created_at: float
    #: the signing secret (``whsec_...``): only in the answer that registers the hook
    secret: NotRequired[str]


class DeadLetter(TypedDict):
    id: str
    hook: str
    url: str
    type: str
    attempts: int
    last_error: str | None
    first_at: float
    dead_at: float
    body: dict[str, Any]


class DeadLettersDoc(TypedDict):
    dead_letters: list[DeadLetter]


#: Which TypedDict is which schema of the OpenAPI document (components/schemas).
SCHEMAS: dict[str, type] = {"Seat": Seat, "Clock": Clock, "Outcome": Outcome, "Match": MatchDoc,
                            "Events": EventsDoc, "LegalMoves": LegalMovesDoc, "Hint": Hint, "Replay": ReplayDoc,
                            "Ticket": TicketDoc, "Rating": Rating, "History": HistoryDoc, "Webhook": Webhook,
                            "DeadLetters": DeadLettersDoc}
