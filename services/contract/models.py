"""Every request and response body of the REST API as a typed model (msgspec ``Struct``), in one module.

These models are the contract's one source: :func:`services.contract.validation.parse` validates request bodies
with them (the API's error codes), :func:`services.contract.validation.dump` serialises responses, and
:mod:`services.contract.openapi` generates the OpenAPI 3.1 document from them, from which both SDKs' types are
generated (``scripts/gen_contract.py``). A field's ``Meta(description=...)`` is its documentation; ``code`` in
``Meta(extra=...)`` is the error code a request gets when that field (or anything inside it) is invalid
(default ``wrong_type``).

Why msgspec and not pydantic: measured, see docs/benchmarks.md ("The contract's cost per request").

Conventions:

* Requests subclass :class:`Request` (unknown fields are refused); responses subclass :class:`Response`.
* A response field that is sometimes absent has the default ``UNSET`` (omitted from the JSON, not required in
  the schema); every other response field is always present (required), ``None`` shown as ``null``.
* Documents that are each game's own JSON (views, moves, results, options) are :data:`Doc` / :data:`Move` /
  :data:`Moves`: objects (arrays of moves) in the schema, and at run time either decoded JSON or pre-encoded
  bytes (:func:`fragment`, or the core's ``orjson.Fragment``), which the encoder copies as they are (a view read
  from Redis is never decoded and encoded again).
* Adding a response field is one line here: the gateway serialises every answer through its model
  (``validation.answer``), and ``make contract`` carries the field into the OpenAPI document, the Python SDK's
  TypedDicts and the TypeScript types (tests/contract/test_one_source.py shows it).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from . import limits as L


def meta(description: str | None = None, code: str | None = None, **constraints: Any) -> Meta:
    """A field's documentation, error code and constraints."""
    return Meta(description=description, extra={"code": code} if code else None, **constraints)


def fragment(encoded: bytes) -> Any:
    """Bytes that already hold JSON (a view, legal moves), to put in a response as they are."""
    return msgspec.Raw(encoded)


#: A game's own JSON document (a view, a result, options): an object.
Doc = Annotated[Any, Meta(extra_json_schema={"type": "object"})]
#: A move: the game's JSON object, ``{"type": ..., ...}`` as in docs/games/*.md.
Move = Annotated[Any, Meta(extra_json_schema={"type": "object", "required": ["type"]})]
_MOVE_SCHEMA = {"type": "object", "required": ["type"], "additionalProperties": True}
#: A seat's legal moves: an array of moves (stored JSON, copied as it is).
Moves = Annotated[Any, Meta(extra_json_schema={"type": "array", "items": _MOVE_SCHEMA})]
#: The caller's legal moves, or null for a spectator.
MaybeMoves = Annotated[Any, Meta(extra_json_schema={"type": ["array", "null"], "items": _MOVE_SCHEMA})]
BotLevel = Literal["novice", "easy", "casual", "normal", "strong", "hard"]
SeatKind = Literal["human", "bot"]
MatchStatus = Literal["waiting", "active", "finished"]
ClockMode = Literal["none", "per_move", "fischer", "correspondence"]
TimeoutPolicy = Literal["bot", "forfeit"]
EndedBy = Literal["game", "forfeit", "abandoned", "aborted"]
TicketStatus = Literal["waiting", "matched", "cancelled"]
Until = Literal["change", "turn"]
WebhookEvent = Literal["match.created", "match.started", "match.finished", "seat.timeout", "seat.taken_over",
                       "seat.reclaimed", "turn", "chat.message", "chat.redacted", "tournament.started",
                       "round.started", "round.finished", "tournament.finished"]
PlayerId = Annotated[str, meta("the tenant's own user id (API key only); namespaced by tenant, never shown to "
                               "another tenant", "bad_player", min_length=1, max_length=L.PLAYER_ID_MAX,
                               pattern=L.PLAYER_ID_PATTERN)]
Version = Annotated[int, Meta(ge=0)]


class Request(Struct, forbid_unknown_fields=True, kw_only=True):
    """A request body: a JSON object whose unknown fields are refused (400 ``unknown_field``)."""


class Response(Struct, kw_only=True):
    """A response body."""


# -- requests --------------------------------------------------------------------------------------------------
class SeatSpec(Request, kw_only=True):
    kind: SeatKind
    level: Annotated[BotLevel, meta("a bot seat's level (default normal)")] | UnsetType = UNSET
    player: PlayerId | UnsetType = UNSET


class ClockSpec(Request, kw_only=True):
    """Seat clocks: ``{mode: per_move, seconds}`` | ``{mode: fischer, base_s, increment_s}`` |
    ``{mode: correspondence, hours}``, plus ``on_timeout``: ``bot`` (default) | ``forfeit``."""

    mode: ClockMode = "none"
    on_timeout: TimeoutPolicy = "bot"
    seconds: Annotated[float, Meta(ge=L.CLOCK_MIN_S, le=L.CLOCK_MAX_S)] | UnsetType = UNSET
    base_s: Annotated[float, Meta(ge=L.CLOCK_MIN_S, le=L.CLOCK_MAX_S)] | UnsetType = UNSET
    increment_s: Annotated[float, Meta(ge=0, le=L.CLOCK_MAX_S)] | UnsetType = UNSET
    hours: Annotated[float, Meta(ge=L.CLOCK_MIN_S / 3600, le=L.CLOCK_MAX_S / 3600)] | UnsetType = UNSET


class CreateMatch(Request, kw_only=True):
    game: Annotated[str, meta("a game id of GET /v1/games", "unknown_game")]
    players: Annotated[int, meta("within the game's own range (GET /v1/games)", "invalid_options",
                                 ge=1, le=L.MAX_PLAYERS)]
    options: Annotated[dict[str, Any], meta("the game's options (GET /v1/games lists them)")] = {}
    seed: Annotated[int, meta("the match's random seed (default: random)", ge=0, le=L.SEED_MAX)] | UnsetType = UNSET
    seats: Annotated[list[SeatSpec], meta(
        "one per player (default: all human); bot seats count against the client's quotas "
        "(MEEPLE_MAX_BOT_SEATS_PER_IP, MEEPLE_MAX_HARD_BOTS_PER_IP)", "bad_seats",
        max_length=L.MAX_PLAYERS)] | UnsetType = UNSET
    join: Annotated[bool, meta("take seat 0 at once (a `joined` entry at version 1); the response carries its "
                               "token")] = False
    clock: Annotated[ClockSpec, meta("seat clocks (default none)", "bad_clock")] | UnsetType = UNSET
    takeover_level: Annotated[BotLevel, meta("the bot that plays a seat after a timeout or a leave",
                                             "bad_seats")] = "normal"
    spectator_chat: Annotated[bool, meta("spectators (whoever may read the match without a seat) may post to its "
                                         "chat too; default: seats only")] = False


ChatText = Annotated[str, meta(
    f"plain text, 1-{L.CHAT_TEXT_MAX} characters once surrounding whitespace is stripped, no control characters "
    "(Unicode Cc); clients render it as text, never as markup", "bad_chat", max_length=4 * L.CHAT_TEXT_MAX)]
PresetId = Annotated[str, meta("a quick-chat preset of the match's game (GET /v1/games: chat_presets)", "bad_chat",
                               max_length=L.ID_MAX)]


class PostChat(Request, kw_only=True):
    """A chat message: ``text`` or a ``preset`` (exactly one of them)."""

    text: ChatText | UnsetType = UNSET
    preset: PresetId | UnsetType = UNSET


class JoinMatch(Request, kw_only=True):
    seat: Annotated[int, meta("the seat to take (default: the first free one)", "no_such_seat", ge=0,
                              le=L.MAX_PLAYERS - 1)] | UnsetType = UNSET
    player: PlayerId | UnsetType = UNSET


class SubmitMove(Request, kw_only=True):
    move: Annotated[dict[str, Any], meta("one of the caller's legal moves", "malformed_move",
                                         extra_json_schema={"required": ["type"]})]
    version: Annotated[int, meta("the version the decision was based on", ge=0, le=L.VERSION_MAX)]


IdempotencyKey = Annotated[str, meta(
    f"a retry with the same key and the same request answers the first answer (kept "
    f"{L.IDEMPOTENCY_TTL_S // 3600} h; the same key with another request: 422 idempotency_key_reused; while the "
    "first is still being answered: 409 idempotency_key_in_use)", "bad_idempotency_key",
    min_length=1, max_length=L.IDEMPOTENCY_KEY_MAX)]
IncludeLegal = Annotated[Literal["legal_moves", ""], meta(
    "legal_moves: add the caller's legal moves to the response (one request fewer per turn); empty: nothing",
    "bad_parameter")]


class MoveOptions(Request, kw_only=True):
    """A WebSocket ``move`` message's fields beyond the REST body (:class:`SubmitMove`): what REST sends as the
    ``Idempotency-Key`` header and the ``include`` query parameter."""

    idempotency_key: IdempotencyKey | UnsetType = UNSET
    include: IncludeLegal | UnsetType = UNSET


class PartyMemberSpec(Request, kw_only=True):
    """One member of a party: a tenant's player (API key only), or anonymous; a display name for the others."""

    player: PlayerId | UnsetType = UNSET
    name: Annotated[str, meta("a display name shown on the ticket", "bad_party", min_length=1,
                              max_length=L.PARTY_NAME_MAX, pattern=L.PARTY_NAME_PATTERN)] | UnsetType = UNSET


class Enqueue(Request, kw_only=True):
    game: Annotated[str, meta("a game id of GET /v1/games", "unknown_game")]
    players: Annotated[int, meta("within the game's own range", "invalid_options", ge=1, le=L.MAX_PLAYERS)]
    options: dict[str, Any] = {}
    player: PlayerId | UnsetType = UNSET
    party: Annotated[list[PartyMemberSpec], meta(
        "players queued together as one ticket (1 to `players` members, each player at most once; not with "
        "`player`): seated in one match, in a team game on one team when it fits (a party larger than a team "
        "fills whole teams, the rest sit together on one other team); matched by its members' mean rating, its "
        "window widened by half its spread; each member gets a seat token, once; it counts one active match "
        "per member", "bad_party", min_length=1, max_length=L.MAX_PLAYERS)] | UnsetType = UNSET


class AddWebhook(Request, kw_only=True):
    url: Annotated[str, meta(
        "http(s) URL with a host (a DNS name of letters, digits, - and _ labels, IDN allowed, or an IP address), a "
        "port 1-65535 if given and no whitespace or control characters (else 400 bad_webhook), "
        "whose host resolves to public addresses only: loopback, private, shared, link-local, "
        "multicast, reserved and unspecified addresses (IPv4, IPv6, and IPv4 inside IPv6) are refused with 400 "
        "webhook_address_refused, a host that does not resolve with 400 webhook_unresolvable, and every delivery "
        "checks again and connects to the checked address; MEEPLE_WEBHOOK_ALLOW_PRIVATE (CIDR list, or all) "
        "lets the operator allow networks", "bad_webhook", max_length=L.MAX_URL)]
    events: Annotated[list[WebhookEvent], meta("the events to deliver", "bad_webhook", min_length=1)]


class MintWatchToken(Request, kw_only=True):
    ttl_s: Annotated[int, meta("seconds the token reads for (it expires then: 401 watch_token_expired)",
                               ge=L.WATCH_TTL_MIN_S, le=L.WATCH_TTL_MAX_S)] = L.WATCH_TTL_DEFAULT_S
    player_ids: Annotated[bool, meta("show the tenant's player ids (seats[].player, outcome.ratings[].player) to "
                                     "the token's holders")] = False


class Empty(Request, kw_only=True):
    """No fields: an empty body, or ``{}``."""


# -- responses -------------------------------------------------------------------------------------------------
class ErrorDetail(Response, kw_only=True):
    code: Annotated[str, meta("one of the codes of docs/api.md's \"Errors\" (each error response "
                              "lists its own)")]
    message: Annotated[str, meta("for people")]


class Error(Response, kw_only=True):
    error: ErrorDetail


class ChatPreset(Response, kw_only=True):
    id: Annotated[str, meta("what POST /v1/matches/{id}/chat takes as `preset`")]
    text: Annotated[str, meta("the phrase, as the message will show it")]


class Game(Response, kw_only=True):
    id: str
    title: str
    min_players: int
    max_players: int
    simultaneous: bool
    options: Annotated[list[Doc], meta("the game's options: name, type, default, choices")]
    chat_presets: Annotated[list[ChatPreset], meta("quick-chat phrases for this game's matches (one tap on a "
                                                   "phone)")]


class Games(Response, kw_only=True):
    games: list[Game]


class RulesSection(Response, kw_only=True):
    title: Annotated[str, meta("How to win, A turn, Components, Scoring or Example")]
    paragraphs: list[str]


class GameRules(Response, kw_only=True):
    """How to play the game, for people (written from the spec; the engine decides)."""

    goal: Annotated[str, meta("how to win, in one line")]
    sections: Annotated[list[RulesSection], meta("the goal, the turn, the components and the scoring, with a "
                                                 "worked example")]


class GameComponents(Game, kw_only=True):
    """``GET /v1/games/{game}``: the catalogue entry plus every component of the game and its rules."""

    components: Annotated[Doc, meta("every card, tile, god and goal: id, name, categories or colours (Sideboards: "
                                    "its drawers and handles) and its rules text from the spec")]
    rules: Annotated[GameRules | None, meta("how to play, for people: the goal in one line, then the turn, the "
                                            "components and the scoring with an example (null for a game without "
                                            "a written guide)")]


class Seat(Response, kw_only=True):
    seat: int
    kind: SeatKind
    level: str | None
    taken: bool
    control: Annotated[SeatKind, meta("who plays the seat now: a bot after a timeout (until reclaimed), a "
                                      "forfeit or a leave")]
    connected: Annotated[bool, meta("a human seat with a live long-poll/stream or a recent request "
                                    "(MEEPLE_PRESENCE_S)")]
    forfeited: bool
    left: bool
    player: Annotated[str | None, meta("the tenant's user id in this human seat: only in answers to the "
                                       "match's own tenant (its API key)")] | UnsetType = UNSET


class ClockSeat(Response, kw_only=True):
    seat: int
    running: bool
    remaining_s: Annotated[float | None, meta("seconds left, rounded to milliseconds")]
    deadline: Annotated[float | None, meta("Unix time")]


class Clock(Response, kw_only=True):
    mode: ClockMode
    on_timeout: TimeoutPolicy
    seconds: float | UnsetType = UNSET
    base_s: float | UnsetType = UNSET
    increment_s: float | UnsetType = UNSET
    hours: float | UnsetType = UNSET
    seats: list[ClockSeat]


class Rating(Response, kw_only=True):
    """A rating as the API shows it, rounded: ``rating`` to 3 decimals, ``mu`` and ``sigma`` to 4."""

    rating: Annotated[float, meta("mu - 3 sigma: the conservative rating (openskill Plackett-Luce), 0 for a new "
                                  "player; rounded to 3 decimals")]
    mu: Annotated[float, meta("rounded to 4 decimals")]
    sigma: Annotated[float, meta("rounded to 4 decimals")]
    matches: int


class RatingChange(Response, kw_only=True):
    seat: int
    player: Annotated[str, meta("the tenant's user id: only in answers to the match's own tenant (its API key)")] \
        | UnsetType = UNSET
    before: Rating
    after: Rating
    change: Annotated[float, meta("after.rating - before.rating")]


class Outcome(Response, kw_only=True):
    """game: the engine's winners (a forfeited side excluded); forfeit: the side left; abandoned: no human
    action for MEEPLE_IDLE_MATCH_TTL (winners [], scores null); aborted: ended without a result by its
    tournament (a round's deadline, a cancel; winners [], scores null, never rated)."""

    ended_by: EndedBy
    winners: list[int]
    forfeited: list[int]
    scores: list[float] | None
    ratings: Annotated[list[RatingChange] | None, meta(
        "a tenant's rated match (2-6 sides, ended by the game or a forfeit, players named, not created unrated): "
        "each named player's rating before and after (a seat a bot played to the end: see docs/api.md "
        "\"Ratings\"); null for an unrated match (solo matches are never rated)")] = None
    reason: Annotated[str, meta("aborted: why (the tournament's words)")] | UnsetType = UNSET


class Match(Response, kw_only=True):
    """A match's status with the caller's view (the status document)."""

    id: str
    game: str
    players: int
    options: Doc
    status: MatchStatus
    version: Version
    seats: list[Seat]
    to_act: list[int]
    you: Annotated[int | None, meta("the caller's seat, null for a spectator")]
    view: Annotated[Doc | None, meta("the caller's view (the game's document)")]
    result: Doc | None
    outcome: Outcome | None
    clock: Clock | None
    takeover_level: BotLevel
    rematch: Annotated[str | None, meta("id of the rematch once someone asked for it")]
    spectator_chat: Annotated[bool, meta("whether spectators may post to the match's chat (seats always may)")]
    legal_moves: Annotated[MaybeMoves, meta(
        "with ?include=legal_moves: the caller's legal moves ([] with nothing to decide, null for a "
        "spectator)")] | UnsetType = UNSET
    token: Annotated[str, meta("the seat's secret token; shown once")] | UnsetType = UNSET
    seat: Annotated[int, meta("the seat taken (join, rematch)")] | UnsetType = UNSET
    events: Annotated[list[Event], meta(
        "a move with ?wait: what happened after the move's own version until this answer (others' moves as you may "
        "see them)")] | UnsetType = UNSET


EventKind = Literal["created", "joined", "move", "timeout", "reclaimed", "left", "resigned", "rematch", "abandoned",
                   "aborted"]


class ChatMessage(Response, kw_only=True):
    """One chat message, as every reader of the match receives it (plain text: render it as text)."""

    id: Annotated[int, meta("1, 2, ... in the match's order", ge=1)]
    seat: Annotated[int | None, meta("the seat that spoke; null: a spectator")]
    text: Annotated[str | None, meta("plain text (a preset's phrase for a preset); null once redacted")]
    preset: Annotated[str | None, meta("the preset's id when one was sent; null otherwise and once redacted")]
    at: Annotated[float, meta("when it was posted (Unix time, server clock)")]
    redacted: Annotated[bool, meta("the match's tenant redacted it: text and preset are null")]


class Event(Response, kw_only=True):
    version: int
    kind: EventKind
    seat: int | None
    to_act: list[int]
    by: SeatKind | UnsetType = UNSET
    move: Annotated[Move, meta("the move: your own while the game runs, everyone's once it is over")] \
        | UnsetType = UNSET
    text: Annotated[str, meta("the entry in words, written for this reader (never more than its view shows)")] \
        | UnsetType = UNSET
    summary: Annotated[Doc, meta("the entry as structured data, for this reader")] | UnsetType = UNSET


class Events(Response, kw_only=True):
    """What happened after a version (long-poll, each SSE ``update``, each WebSocket ``update``)."""

    version: int
    status: MatchStatus
    to_act: list[int]
    events: list[Event]
    view: Annotated[Doc | None, meta("the caller's view when anything happened, else null")]
    result: Doc | None
    legal_moves: Annotated[MaybeMoves, meta(
        "with ?include=legal_moves: the caller's legal moves ([] with nothing to decide, null for a "
        "spectator)")] | UnsetType = UNSET
    chat: Annotated[list[ChatMessage], meta(
        "with ?chat_after=C (long-poll only): the chat messages with an id past C, oldest first")] | UnsetType = UNSET
    chat_redacted: Annotated[list[int], meta(
        "with ?chat_after=C (long-poll only): the ids of every redacted message of the match")] | UnsetType = UNSET


class LegalMoves(Response, kw_only=True):
    version: int
    seat: int
    moves: Moves


class Hint(Response, kw_only=True):
    version: int
    seat: int
    move: Move
    level: Annotated[str, meta("the bot level whose search gave the move (the move that level would play here)")]


class LogEntry(Response, kw_only=True):
    version: Version
    kind: EventKind
    seat: int | None
    by: SeatKind | UnsetType = UNSET
    move: Move | UnsetType = UNSET
    text: Annotated[str, meta("the entry in words, written for this reader (never more than its view shows)")] \
        | UnsetType = UNSET
    summary: Annotated[Doc, meta("the entry as structured data, for this reader")] | UnsetType = UNSET
    view: Annotated[Doc, meta("with include=views: the caller's view (its seat's, or a spectator's) after this "
                              "version")] | UnsetType = UNSET


class Replay(Response, kw_only=True):
    id: str
    game: str
    players: int
    options: Doc
    seed: Annotated[Annotated[str, Meta(pattern="^[0-9]{1,19}$")] | None, meta(
        "the seed as a decimal string (a 63-bit integer is more than a JavaScript number holds exactly); null "
        "until the match is over")]
    status: MatchStatus
    version: int
    log: Annotated[list[LogEntry], meta("one entry per version: `created` (version 0), then `joined`, `move` (with "
                                        "`by`), `timeout`, `reclaimed`, `left`, `resigned`, `rematch`, "
                                        "`abandoned`")]
    result: Doc | None
    chat: Annotated[list[ChatMessage], meta("the match's chat, oldest first (redacted messages redacted)")]


class PartyMember(Response, kw_only=True):
    player: Annotated[str | None, meta("the tenant's player (null: anonymous)")]
    name: Annotated[str | None, meta("the display name the ticket was given")]
    seat: Annotated[int | None, meta("the member's seat once matched")]
    team: Annotated[int | None, meta("the member's team (the index of its side) once matched; null in a game "
                                     "without teams")]
    token: Annotated[str | None, meta("the member's seat token: only in the first response that finds the "
                                      "ticket matched (null before and after)")]
    token_issued: Annotated[bool, meta("the member's seat token has been handed out")]


class Ticket(Response, kw_only=True):
    ticket: str
    status: TicketStatus
    game: str
    players: int
    options: Doc
    match_id: str | None
    seat: Annotated[int | None, meta("the first member's seat")]
    token: Annotated[str | None, meta("the first member's seat token: only in the first response that finds the "
                                      "ticket matched (null before and after; the server keeps only its hash)")]
    token_issued: Annotated[bool, meta("the seat token has been handed out (it is not shown again)")]
    party: Annotated[list[PartyMember], meta("every member, in the order queued (a ticket without `party`: its one "
                                             "player); each member's token once, in the same response as `token`")]


class HistorySeat(Response, kw_only=True):
    seat: int
    kind: SeatKind
    player: str | None


class HistoryMatch(Response, kw_only=True):
    id: str
    game: str
    players: int
    status: MatchStatus
    created_at: Annotated[float, meta("Unix time")]
    seat: Annotated[int | None, meta("the player's seat (null in the tenant's list)")]
    seats: list[HistorySeat]
    result: Doc | None
    outcome: Outcome | None


class History(Response, kw_only=True):
    player: str | None
    matches: list[HistoryMatch]
    next: Annotated[float | None, meta("pass as `before` for the next (older) page; null at the end")]


class Ratings(Response, kw_only=True):
    player: str
    ratings: Annotated[dict[str, Rating], meta("by game id")]


class Webhook(Response, kw_only=True):
    id: str
    url: str
    events: list[WebhookEvent]
    created_at: Annotated[float, meta("Unix time")]
    secret: Annotated[str, meta("the signing secret (whsec_...): only in the answer that registers the hook")] \
        | UnsetType = UNSET


class WatchToken(Response, kw_only=True):
    id: Annotated[str, meta("the token's id (GET / DELETE /v1/watch-tokens/{token_id})")]
    token: Annotated[str, meta("w_<id>.<secret>: send it as 'Authorization: Bearer w_...' or in the WebSocket "
                               "hello; only in the answer that mints it (only its hash is stored)")] | UnsetType = UNSET
    match_id: Annotated[str | None, meta("the match it reads (null: a tournament's token)")]
    tournament_id: Annotated[str | None, meta("the tournament whose matches it reads, current and future (null: "
                                              "a match's token)")]
    player_ids: Annotated[bool, meta("whether its holders see the tenant's player ids")]
    created_at: Annotated[float, meta("Unix time")]
    expires_at: Annotated[float, meta("Unix time: from then on 401 watch_token_expired")]
    revoked_at: Annotated[float | None, meta("Unix time it was revoked (401 watch_token_revoked), or null")]


class Webhooks(Response, kw_only=True):
    webhooks: list[Webhook]


class DeadLetter(Response, kw_only=True):
    id: str
    hook: str
    url: str
    type: str
    attempts: int
    last_error: str | None
    first_at: float
    dead_at: float
    body: Doc


class DeadLetters(Response, kw_only=True):
    dead_letters: list[DeadLetter]


class Cleared(Response, kw_only=True):
    cleared: Annotated[int, meta("how many dead letters were dropped")]


class Deleted(Response, kw_only=True):
    deleted: Annotated[str, meta("what was deleted: the webhook's id (`DELETE /v1/webhooks/{hook_id}`) or the "
                                 "season's name (`DELETE /v1/leaderboards/{game}/seasons/{name}`)")]


class Health(Response, kw_only=True):
    status: Literal["ok"]


class Ready(Response, kw_only=True):
    status: Literal["ready"]
    checks: dict[str, bool]


# -- parameters (path, query, header) ------------------------------------------------------------------------
# -- leaderboards and tournaments (a tenant's; services/core/competitions.py) -------------------------------------
SeasonPolicy = Literal["keep", "reset", "decay"]
SeasonState = Literal["scheduled", "live", "ending", "closed"]
SeasonName = Annotated[str, meta(f"1-{L.SEASON_NAME_MAX} letters, digits and . _ - (not first), other than `all` and "
                                 "`current`", "bad_season", min_length=1, max_length=L.SEASON_NAME_MAX,
                                 pattern=L.SEASON_NAME_PATTERN)]
UnixTime = Annotated[float, meta("a Unix time (seconds, server clock)", ge=0, le=2.0**53)]
Decay = Annotated[float, meta("with policy `decay` only (with `keep` or `reset`: 400 `bad_season`): the fraction of "
                              "the way back to the default rating a rating moves at the season's end (0 < decay < 1)",
                              "bad_season", gt=0, lt=1)]
TournamentStatus = Literal["registering", "running", "finished", "cancelled"]
FormatKind = Literal["swiss", "arena"]
TakeoverLevel = Literal["auto", "novice", "easy", "casual", "normal", "strong", "hard"]


class BoardSettingsBody(Request, kw_only=True):
    min_matches: Annotated[int, meta("rated matches a player needs on a board to be listed", "bad_min_matches",
                                     ge=0, le=L.MIN_MATCHES_MAX)]


class CreateSeason(Request, kw_only=True):
    name: SeasonName
    starts_at: UnixTime
    ends_at: Annotated[UnixTime, meta("after starts_at, in the future; a game's seasons never overlap")]
    policy: Annotated[SeasonPolicy, meta("what the season's end does to the ratings: keep them, reset them to the "
                                         "default, or decay them toward it", "bad_season")] = "keep"
    decay: Decay | UnsetType = UNSET


class UpdateSeason(Request, kw_only=True):
    """Any of the fields: a live season's start cannot move; ``ends_at`` may be now (the season ends at once)."""

    starts_at: UnixTime | UnsetType = UNSET
    ends_at: UnixTime | UnsetType = UNSET
    policy: Annotated[SeasonPolicy, meta(code="bad_season")] | UnsetType = UNSET
    decay: Decay | UnsetType = UNSET


class TournamentFormatSpec(Request, kw_only=True):
    """``{"kind": "swiss", "rounds", "round_s"}`` or ``{"kind": "arena", "duration_s", "grace_s", "bot_after_s"}``
    (the other kind's fields are refused: 400 ``bad_tournament``)."""

    kind: Annotated[FormatKind, meta(code="bad_tournament")]
    rounds: Annotated[int, meta("Swiss: rounds to play", "bad_tournament", ge=1, le=L.TOURNAMENT_ROUNDS_MAX)] \
        | UnsetType = UNSET
    round_s: Annotated[float, meta("Swiss: a round's deadline, seconds after it starts (unfinished tables are then "
                                   "scored as draws and their matches ended); default "
                                   f"{L.TOURNAMENT_ROUND_S_DEFAULT:g}", "bad_tournament",
                                   ge=L.TOURNAMENT_ROUND_S[0], le=L.TOURNAMENT_ROUND_S[1])] | UnsetType = UNSET
    duration_s: Annotated[float, meta("arena: the window, seconds from starts_at", "bad_tournament",
                                      ge=L.TOURNAMENT_DURATION_S[0], le=L.TOURNAMENT_DURATION_S[1])] \
        | UnsetType = UNSET
    grace_s: Annotated[float, meta("arena: matches still running at the window's end count until this long after "
                                   "it (then drawn and ended); default "
                                   f"{L.TOURNAMENT_GRACE_S_DEFAULT:g}", "bad_tournament",
                                   ge=0, le=L.TOURNAMENT_GRACE_S_MAX)] | UnsetType = UNSET
    bot_after_s: Annotated[float, meta("arena: a player who waited this long is paired with bots; default "
                                       f"{L.TOURNAMENT_BOT_AFTER_S_DEFAULT:g}",
                                       "bad_tournament", ge=0, le=L.TOURNAMENT_BOT_AFTER_S_MAX)] | UnsetType = UNSET


class CreateTournament(Request, kw_only=True):
    name: Annotated[str, meta("shown to players", "bad_tournament", min_length=1, max_length=L.TOURNAMENT_NAME_MAX)]
    game: Annotated[str, meta("a game id of GET /v1/games", "unknown_game")]
    players_per_table: Annotated[int, meta("seats per table, within the game's own range", "bad_tournament",
                                           ge=L.TOURNAMENT_TABLE[0], le=L.TOURNAMENT_TABLE[1])]
    options: Annotated[dict[str, Any], meta("the game's options for every match")] = {}
    clock: Annotated[ClockSpec, meta("every match's seat clock (required: a no-show must time out so a bot can "
                                     "take the seat)", "bad_clock")]
    takeover_level: Annotated[TakeoverLevel, meta(
        "the bot that plays a timed-out seat: `auto` (the rung closest to the table's ratings, as for byes) or a "
        "level", "bad_tournament")] = "auto"
    rated: Annotated[bool, meta("whether its matches change ratings")] = True
    starts_at: Annotated[UnixTime, meta(f"from {L.TOURNAMENT_STARTS_PAST_S:g} s ago to "
                                        f"{L.TOURNAMENT_STARTS_AHEAD_S / 86400:g} days ahead")]
    max_players: Annotated[int, meta("registrations at most (then 409 tournament_full)", "bad_tournament", ge=2,
                                     le=L.TOURNAMENT_PLAYERS_MAX)] = L.TOURNAMENT_PLAYERS_DEFAULT
    format: Annotated[TournamentFormatSpec, meta(code="bad_tournament")]


class RegisterPlayer(Request, kw_only=True):
    player: PlayerId


class BoardEntry(Response, kw_only=True):
    rank: Annotated[int | None, meta("1 the best, equal ratings share a rank; null while below min_matches")]
    player: str
    rating: Annotated[float, meta("as the ratings show it: mu - 3 sigma, rounded to 3 decimals")]
    matches: Annotated[int, meta("rated matches on this board")]


class Leaderboard(Response, kw_only=True):
    game: str
    season: Annotated[str, meta("the board read: `all` or a season's name (`current` resolved)")]
    listed: Annotated[int, meta("players listed on the board")]
    entries: list[BoardEntry]


class BoardRank(Response, kw_only=True):
    game: str
    season: str
    listed: int
    entry: BoardEntry


class BoardAround(Response, kw_only=True):
    game: str
    season: str
    entries: Annotated[list[BoardEntry], meta("the player and up to `span` neighbours each side, best first; "
                                              "empty while the player is unlisted")]


class BoardSettings(Response, kw_only=True):
    game: str
    min_matches: int


class Season(Response, kw_only=True):
    name: str
    starts_at: float
    ends_at: float
    policy: SeasonPolicy
    decay: Annotated[float, meta("0 for keep, 1 for reset")]
    state: Annotated[SeasonState, meta("ending: over, its ratings policy being applied")]
    closed_at: float | None


class Seasons(Response, kw_only=True):
    game: str
    seasons: list[Season]


class ClockSettings(Response, kw_only=True):
    mode: ClockMode
    on_timeout: TimeoutPolicy
    seconds: float | UnsetType = UNSET
    base_s: float | UnsetType = UNSET
    increment_s: float | UnsetType = UNSET
    hours: float | UnsetType = UNSET


class TournamentFormat(Response, kw_only=True):
    kind: FormatKind
    rounds: int | UnsetType = UNSET
    round_s: float | UnsetType = UNSET
    duration_s: float | UnsetType = UNSET
    grace_s: float | UnsetType = UNSET
    bot_after_s: float | UnsetType = UNSET


class TableSeat(Response, kw_only=True):
    player: Annotated[str, meta("a registered player")] | UnsetType = UNSET
    bot: Annotated[BotLevel, meta("a bot of this level (a bye, or the odd seats of a table)")] | UnsetType = UNSET


class TableResult(Response, kw_only=True):
    points: Annotated[dict[str, float], meta("per player: (n - place) / (n - 1) for n seats; a seat a bot played "
                                             "to the end 0; a table ended without a result 0.5 each")]
    no_shows: Annotated[list[str], meta("players who never came (marked absent, not paired again)")]
    bot_played: Annotated[list[str], meta("players whose seat a bot played to the end")]
    ended_by: Annotated[str, meta("game, forfeit, aborted, abandoned, deadline, cancelled, gone")]


class TournamentTable(Response, kw_only=True):
    table: Annotated[str, meta("r<round>t<table>")]
    match_id: Annotated[str | None, meta("the table's match: a tenant match, joined by each player with the "
                                         "tenant's key and their player id (a table is shown once its match "
                                         "exists)")]
    seats: list[TableSeat]
    status: Literal["running", "finished"]
    result: TableResult | None
    started_at: Annotated[float, meta("when the table was paired")]
    finished_at: Annotated[float | None, meta("when it was scored (its match ended, or a deadline or a cancel "
                                              "ended it)")]


class Standing(Response, kw_only=True):
    rank: int
    player: str
    points: float
    played: int
    tiebreak: Annotated[float, meta("Swiss: Buchholz; arena: points per match, rounded to 4 decimals (as points)")]
    mu: Annotated[float, meta("the player's openskill mu in the game at their last pairing (25.0 for a new player; "
                              "not the rating mu - 3 sigma of the boards), rounded to 3 decimals: the last "
                              "tie-break")]
    absent: bool
    withdrawn: bool


class TournamentRound(Response, kw_only=True):
    n: int
    started_at: float
    deadline: Annotated[float | None, meta("Swiss: when unfinished tables are ended; arena: null")]
    finished_at: float | None


class Tournament(Response, kw_only=True):
    id: str
    name: str
    game: str
    players_per_table: int
    options: Doc
    clock: ClockSettings
    takeover_level: TakeoverLevel
    rated: bool
    starts_at: float
    max_players: int
    format: TournamentFormat
    status: TournamentStatus
    created_at: float
    started_at: float | None
    ended_at: float | None
    reason: Annotated[str | None, meta("why it was cancelled")]
    registered: int
    rounds_played: int
    round: Annotated[TournamentRound | None, meta("the current round (an arena: its latest wave)")]
    tables: Annotated[list[TournamentTable], meta("Swiss: the current round's; arena: those still playing")]
    standings: list[Standing]


class RoundTables(TournamentRound, kw_only=True):
    tables: Annotated[list[TournamentTable], meta("every table of the round (an arena's wave), in order, with its "
                                                  "match and, once scored, its result")]


class TournamentRounds(Response, kw_only=True):
    rounds: Annotated[list[RoundTables], meta("the rounds after `after`, oldest first")]
    next: Annotated[int | None, meta("the `after` of the next page; null on the last (the rounds so far: more "
                                     "may come while the tournament runs)")]


class TournamentSummary(Response, kw_only=True):
    id: str
    name: str
    game: str
    format: FormatKind
    status: TournamentStatus
    starts_at: float
    registered: int
    created_at: float


class Tournaments(Response, kw_only=True):
    tournaments: list[TournamentSummary]
    next: Annotated[float | None, meta("the `before` of the next (older) page; null on the last")]


class Registration(Response, kw_only=True):
    player: str
    registered_at: float
    withdrawn: bool


class Unregistered(Response, kw_only=True):
    player: str
    status: Annotated[Literal["removed", "withdrawn"], meta(
        "removed before the start; withdrawn after it (points kept, not paired again)")]


class TournamentPlayer(Response, kw_only=True):
    player: str
    standing: Standing
    table: Annotated[TournamentTable | None, meta("the table the player is at now (its match_id: the way into "
                                                  "their own match), null between matches")]


MatchId = Annotated[str, Meta(max_length=L.ID_MAX)]
#: The bound is the operator's (``MEEPLE_LONG_POLL_MAX_S``: the gateway checks it); the schema states the default.
Wait = Annotated[int, meta(f"long-poll up to this many seconds (at most MEEPLE_LONG_POLL_MAX_S, "
                           f"{L.LONG_POLL_MAX_S} by default)", "bad_parameter", ge=0,
                           extra_json_schema={"maximum": L.LONG_POLL_MAX_S})]
MoveWait = Annotated[int, meta(
    "after the move is applied, answer once the caller must act again or the match is finished, waiting up to this "
    f"many seconds (at most MEEPLE_LONG_POLL_MAX_S, {L.LONG_POLL_MAX_S} by default): a move and the long-poll "
    "`until=turn` in one request; 0: answer at once", "bad_parameter", ge=0,
    extra_json_schema={"maximum": L.LONG_POLL_MAX_S})]
After = Annotated[int, Meta(ge=0, le=L.VERSION_MAX)]
ChatAfter = Annotated[int, meta("a chat message id the caller has seen (0: none)", "bad_parameter", ge=0,
                                le=L.VERSION_MAX)]


class Params(Struct, forbid_unknown_fields=False, kw_only=True):
    """Parameters of one place (path, query or header) of an operation; a field per parameter."""


class MatchPath(Params, kw_only=True):
    match_id: MatchId


class SeatPath(Params, kw_only=True):
    match_id: MatchId
    seat: Annotated[int, Meta(ge=0)]


class GamePath(Params, kw_only=True):
    game: Annotated[str, Meta(max_length=L.ID_MAX)]


class TicketPath(Params, kw_only=True):
    ticket: Annotated[str, Meta(max_length=L.ID_MAX)]


class PlayerPath(Params, kw_only=True):
    player: PlayerId


class ChatMessagePath(Params, kw_only=True):
    match_id: MatchId
    message_id: Annotated[int, Meta(ge=1, le=L.VERSION_MAX)]


class HookPath(Params, kw_only=True):
    hook_id: Annotated[str, Meta(max_length=L.ID_MAX)]


class WatchTokenPath(Params, kw_only=True):
    token_id: Annotated[str, Meta(max_length=L.ID_MAX)]


class IncludeQuery(Params, kw_only=True):
    include: IncludeLegal | UnsetType = UNSET


class MoveQuery(Params, kw_only=True):
    include: IncludeLegal | UnsetType = UNSET
    wait: MoveWait = 0


class EventsQuery(Params, kw_only=True):
    include: IncludeLegal | UnsetType = UNSET
    after: Annotated[After, meta("the version the caller has seen (default: the current one)")] | UnsetType = UNSET
    wait: Wait = 0
    until: Annotated[Until, meta(
        "change: answer at the first new version; turn (a seat token is required): sleep through other seats' "
        "moves and answer once the caller must act or the match is finished (all events since `after` "
        "included)")] = "change"
    chat_after: Annotated[ChatAfter, meta(
        "also deliver chat: the answer carries `chat` (messages with an id past this one) and `chat_redacted`, and "
        "a new chat message or a redaction answers the long-poll too (with until=turn as well); without it the "
        "answer has neither field")] | UnsetType = UNSET


class StreamQuery(Params, kw_only=True):
    after: Annotated[After, meta("send the versions after this one (default: the Last-Event-ID header, else "
                                 "the current one)")] | UnsetType = UNSET
    limit: Annotated[int, meta("close the stream after this many seconds (reconnect with after=<last id>)",
                               ge=1, le=L.STREAM_LIMIT_MAX_S)] = L.STREAM_LIMIT_MAX_S
    chat_after: Annotated[ChatAfter, meta(
        "first send the chat messages with an id past this one (default: none of the past ones, only new ones)")] \
        | UnsetType = UNSET


class StreamHeaders(Params, kw_only=True):
    last_event_id: Annotated[After, meta(
        "the last version received (what browsers' EventSource sends on reconnecting); `after` wins if both are "
        "given")] | UnsetType = msgspec.field(default=UNSET, name="Last-Event-ID")


class ReplayQuery(Params, kw_only=True):
    include: Annotated[Literal["views"], meta(
        "views: each entry also carries the caller's view after it (its seat's with a token, else a "
        "spectator's), for a finished match only (else 409 match_not_finished)")] | UnsetType = UNSET


class IdempotencyHeaders(Params, kw_only=True):
    """Moves, creates, joins and matchmaking enqueues: a retry with the same key is answered once."""

    idempotency_key: IdempotencyKey | UnsetType = msgspec.field(default=UNSET, name="Idempotency-Key")


class TicketQuery(Params, kw_only=True):
    wait: Wait = 0


class PageQuery(Params, kw_only=True):
    limit: Annotated[int, meta("matches per page", ge=1, le=L.PAGE_MAX)] = L.PAGE_DEFAULT
    before: Annotated[float, meta("the `next` of the previous page (a Unix time): older matches only", ge=0,
                                  le=2.0**53)] | UnsetType = UNSET


class DeadLettersQuery(Params, kw_only=True):
    limit: Annotated[int, meta(f"dead letters per page, newest first (the newest {L.DEAD_LETTERS_KEEP} are kept)",
                               ge=1, le=L.PAGE_MAX)] = L.PAGE_DEFAULT


class RatingsQuery(Params, kw_only=True):
    game: Annotated[str, meta("only this game")] | UnsetType = UNSET


BoardName = Annotated[str, meta("the board: `all` (default), `current` (the season live now) or a season's name")]


class GamePlayerPath(Params, kw_only=True):
    game: Annotated[str, Meta(max_length=L.ID_MAX)]
    player: PlayerId


class SeasonPath(Params, kw_only=True):
    game: Annotated[str, Meta(max_length=L.ID_MAX)]
    name: str


class TournamentPath(Params, kw_only=True):
    tournament_id: MatchId


class TournamentPlayerPath(Params, kw_only=True):
    tournament_id: MatchId
    player: PlayerId


class SeasonQuery(Params, kw_only=True):
    season: BoardName | UnsetType = UNSET


class LeaderboardQuery(Params, kw_only=True):
    season: BoardName | UnsetType = UNSET
    limit: Annotated[int, meta("players per page", ge=1, le=L.BOARD_LIMIT_MAX)] = L.BOARD_LIMIT_DEFAULT
    offset: Annotated[int, meta("from this board position (0: the best); deeper pages cost more: read around a "
                                "player instead", ge=0, le=L.BOARD_OFFSET_MAX)] = 0


class AroundQuery(Params, kw_only=True):
    season: BoardName | UnsetType = UNSET
    span: Annotated[int, meta("neighbours on each side", ge=1, le=L.BOARD_SPAN_MAX)] = L.BOARD_SPAN_DEFAULT


class RoundsQuery(Params, kw_only=True):
    after: Annotated[int, meta("only the rounds after this round number (the `next` of the previous page)", ge=0,
                               le=L.TOURNAMENT_ROUND_N_MAX)] = 0
    limit: Annotated[int, meta("rounds per page", ge=1, le=L.TOURNAMENT_ROUNDS_PAGE_MAX)] = \
        L.TOURNAMENT_ROUNDS_PAGE_DEFAULT


class TournamentsQuery(Params, kw_only=True):
    limit: Annotated[int, meta("tournaments per page", ge=1, le=L.PAGE_MAX)] = L.PAGE_DEFAULT
    before: Annotated[float, meta("the `next` of the previous page: older ones only", ge=0, le=2.0**53)] \
        | UnsetType = UNSET
