"""Every operation of the REST API: its path, who may call it, its parameters, bodies and errors, declared once.

:mod:`services.contract.openapi` turns this table into the OpenAPI document; the SDK generator reads that
document. Adding a route is one :class:`Route` here (and its models in ``models.py``); the gateway's view then
parses with ``parse(route.body, raw)`` / ``parse_params(route.query, request.args)`` and answers with
``dump(Model(...))``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import msgspec

from . import limits as L
from . import models as m


class Auth(Enum):
    """Who may call an operation: the security requirements the document lists (a lock in Swagger UI for all but
    ``PUBLIC``)."""

    #: Anyone; no credential changes the answer (an API key, if sent, counts the request against its tenant).
    PUBLIC = "public"
    #: A seat's token, for that seat's own decisions.
    SEAT = "seat"
    #: Reading a match: a seat token (its view), a tenant's key (its own matches), or nobody (a spectator's
    #: view, while anonymous access is on: ``MEEPLE_ANONYMOUS=1``).
    READ = "read"
    #: Creating, joining, queueing: a tenant's key, or nobody while anonymous access is on.
    CALLER = "caller"
    #: A tenant's backend: its API key only.
    TENANT = "tenant"


SECURITY: dict[Auth, list[dict[str, list[str]]]] = {
    Auth.PUBLIC: [],
    Auth.SEAT: [{"seatToken": []}],
    Auth.READ: [{}, {"seatToken": []}, {"apiKey": []}, {"apiKeyBearer": []}],
    Auth.CALLER: [{}, {"apiKey": []}, {"apiKeyBearer": []}],
    Auth.TENANT: [{"apiKey": []}, {"apiKeyBearer": []}],
}

#: The areas of the API (Swagger UI's sections), in order, with a line each.
TAGS: dict[str, str] = {
    "games": "The catalogue of games and their options",
    "matches": "Create a match, read its status and your view, play moves, replay it",
    "seats": "Take, leave, reclaim a seat; rematch",
    "events": "What happened after a version: long-poll, Server-Sent Events, WebSocket",
    "matchmaking": "Queue for a game; humans grouped by rating, bots fill after a wait",
    "backends": "For an app's backend (API key): its matches, its players' history and ratings",
    "webhooks": "Signed deliveries of match events to a tenant's URL (API key)",
    "operations": "Probes, metrics and this document",
}


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    operation_id: str
    tag: str
    summary: str
    auth: Auth
    #: the 2xx answer: its status, model (None: no JSON body), media type and description
    response: type[msgspec.Struct] | None
    status: int = 200
    answer: str = "OK"
    media: str = "application/json"
    body: type[m.Request] | None = None
    path_params: type[m.Params] | None = None
    query: type[m.Params] | None = None
    headers: type[m.Params] | None = None
    #: error statuses beyond the ones every call may meet (400 on parameters/bodies, 429, 503)
    errors: tuple[int, ...] = ()
    description: str = ""
    #: the call may send an API key although it needs none: it then counts against the tenant's quotas
    key_counts: bool = False


#: Statuses any API call may answer: a malformed request, a rate limit, a dependency down.
COMMON_ERRORS = (400, 429, 503)
#: Statuses of a call with a body.
BODY_ERRORS = (413, 415)

_M = "/v1/matches/{match_id}"
WAITING = ("A request that has to wait (wait > 0 with nothing new yet, a stream, a WebSocket) is held without a "
           "thread. Each gateway process holds at most MEEPLE_WAITERS_MAX (20000) of them, each token (or "
           "address without one) at most MEEPLE_WAITERS_PER_CLIENT (50): past them that request only gets "
           "503 / 429 `too_many_waiters` with Retry-After.")
WEBSOCKET = (
    "Upgrade with `Connection: Upgrade`, `Upgrade: websocket`, `Sec-WebSocket-Version: 13`; every message is a "
    "JSON text message. First send `{\"type\": \"hello\", \"token\": \"<seat token>\" | null, \"after\": "
    f"<version>?, \"include\": \"legal_moves\"?}}` within {L.WS_HELLO_S} s (or the socket closes with 1008); the "
    "token may come in an `Authorization: Bearer` header of the upgrade instead (browsers cannot set one: use the "
    "hello). The server answers `{\"type\": \"ready\", \"seat\", \"version\"}`, then pushes `{\"type\": "
    "\"update\", ...Events document}` for every new version (the seat's view only) and closes with 1000 after "
    "the update that finishes the match. Moves: `{\"type\": \"move\", \"id\": <any>, \"move\": {...}, "
    "\"version\": n, \"idempotency_key\": \"...\"?, \"include\": \"legal_moves\"?}` is answered by "
    "`{\"type\": \"reply\", \"id\", \"status\", \"body\"}` with exactly the status and body of POST "
    "/v1/matches/{id}/moves (same versions, idempotency keys, errors, rate limit). Other problems: `{\"type\": "
    f"\"error\", \"error\": {{\"code\", \"message\"}}}}`. Pings every {L.HEARTBEAT_S} s; messages up to "
    "MEEPLE_MAX_BODY_BYTES (else 1009). " + WAITING)

ROUTES: tuple[Route, ...] = (
    Route("GET", "/v1/games", "games", "games", "The game catalogue", Auth.PUBLIC, m.Games, answer="games",
          errors=(401,), key_counts=True),
    Route("GET", "/v1/games/{game}", "game", "games",
          "One game with its components: every card, tile, god and goal with its rules text", Auth.PUBLIC,
          m.GameComponents, answer="the game and its components", path_params=m.GamePath, errors=(401, 404),
          key_counts=True, description="Cacheable: `Cache-Control: public, max-age=3600` and an `ETag`; a request "
                                       "with `If-None-Match` naming it gets 304 without a body."),
    Route("POST", "/v1/matches", "create_match", "matches",
          "Create a match (with an API key: for the tenant, naming its players)", Auth.CALLER, m.Match, 201,
          "created (with `join`: seat 0's token, once)", body=m.CreateMatch, errors=(401, *BODY_ERRORS)),
    Route("GET", _M, "get_match", "matches", "Status and the caller's view", Auth.READ, m.Match, answer="status",
          path_params=m.MatchPath, query=m.IncludeQuery, errors=(401, 404)),
    Route("GET", _M + "/legal-moves", "legal_moves", "matches", "The caller's legal moves", Auth.SEAT,
          m.LegalMoves, answer="moves", path_params=m.MatchPath, errors=(401, 404)),
    Route("GET", _M + "/hint", "hint", "matches", "The bot's suggested move for the caller's own seat", Auth.SEAT,
          m.Hint, answer="a legal move", path_params=m.MatchPath, errors=(401, 404, 409),
          description="Computed by a bot worker (the easy bot, MEEPLE_HINT_BUDGET_S of search); the gateway waits "
                      "MEEPLE_HINT_WAIT_S for it (else 503 hint_unavailable); MEEPLE_HINTS_PER_SEAT_MINUTE hints a "
                      "minute per seat (429 hint_limited)."),
    Route("POST", _M + "/moves", "move", "matches", "Submit a move", Auth.SEAT, m.Match, answer="applied",
          body=m.SubmitMove, path_params=m.MatchPath, query=m.IncludeQuery, headers=m.MoveHeaders,
          errors=(401, 404, 409, 422, *BODY_ERRORS)),
    Route("GET", _M + "/replay", "replay", "matches", "The move log; the seed once the match is over", Auth.READ,
          m.Replay, answer="log (a seat's token adds its own moves before the end)", path_params=m.MatchPath,
          query=m.ReplayQuery, errors=(401, 404, 409)),
    Route("POST", _M + "/join", "join", "seats", "Take a free seat (the token is shown once)", Auth.CALLER, m.Match,
          answer="joined: the seat's token (once) and view", body=m.JoinMatch, path_params=m.MatchPath,
          errors=(401, 404, 409, *BODY_ERRORS)),
    Route("POST", _M + "/leave", "leave", "seats", "Leave the match (a running one: a bot takes the seat for good)",
          Auth.SEAT, m.Match, answer="left", body=m.Empty, path_params=m.MatchPath,
          errors=(401, 404, 409, *BODY_ERRORS)),
    Route("POST", _M + "/seats/{seat}/reclaim", "reclaim", "seats",
          "Take your seat back from the bot that played it since your clock ran out", Auth.SEAT, m.Match,
          answer="reclaimed (or already yours)", body=m.Empty, path_params=m.SeatPath,
          errors=(401, 403, 404, 409, *BODY_ERRORS)),
    Route("POST", _M + "/rematch", "rematch", "seats",
          "The next match with the same seats: each human takes theirs (and a new token) here", Auth.SEAT, m.Match,
          answer="your seat in the rematch, with its token", body=m.Empty, path_params=m.MatchPath,
          errors=(401, 404, 409, *BODY_ERRORS)),
    Route("GET", _M + "/events", "events", "events", "Long-poll for what happened after a version", Auth.READ,
          m.Events, answer="events", path_params=m.MatchPath, query=m.EventsQuery, errors=(401, 404),
          description=WAITING),
    Route("GET", _M + "/events/stream", "events_stream", "events",
          "Server-Sent Events: one 'update' event (an Events document) per version", Auth.READ, m.Events,
          answer="text/event-stream: `event: update` (id = the version) whose data is an Events document, and "
                 f"comment heartbeats (every {L.HEARTBEAT_S} s at most)", media="text/event-stream",
          path_params=m.MatchPath, query=m.StreamQuery, headers=m.StreamHeaders, errors=(401, 404),
          description=WAITING),
    Route("GET", _M + "/ws", "ws", "events", "WebSocket: the seat's events pushed, moves taken (one socket per match)",
          Auth.READ, None, 101, "switching to WebSocket (RFC 6455)", path_params=m.MatchPath,
          errors=(401, 404, 426, 501), description=WEBSOCKET),
    Route("POST", "/v1/matchmaking", "matchmaking", "matchmaking",
          "Queue for a game; humans are grouped closest rating first, bot fill seats the level closest in rating",
          Auth.CALLER, m.Ticket, 201, "queued or matched at once", body=m.Enqueue, errors=(401, *BODY_ERRORS),
          description="The window of ratings a group may span widens with waiting: MEEPLE_MM_WINDOW + "
                      "MEEPLE_MM_WIDEN_PER_S x seconds. With MEEPLE_BOT_FILL_S > 0 (seconds; 0, the default, waits "
                      "for humans forever), a ticket waiting that long is seated with the closest-rated waiting "
                      "tickets and bots of the rung closest to the table's mean rating."),
    Route("GET", "/v1/matchmaking/{ticket}", "ticket", "matchmaking",
          "Poll a ticket (the seat token appears once, in the first answer that finds it matched)", Auth.PUBLIC,
          m.Ticket, answer="ticket", path_params=m.TicketPath, query=m.TicketQuery, errors=(401, 404),
          description=WAITING, key_counts=True),
    Route("DELETE", "/v1/matchmaking/{ticket}", "cancel_ticket", "matchmaking", "Leave the queue", Auth.PUBLIC,
          m.Ticket, answer="cancelled", path_params=m.TicketPath, errors=(401, 404, 409), key_counts=True),
    Route("GET", "/v1/matches", "tenant_matches", "backends", "The tenant's matches, newest first", Auth.TENANT,
          m.History, answer="a page of matches", query=m.PageQuery, errors=(401,)),
    Route("GET", "/v1/players/{player}/matches", "player_matches", "backends",
          "The matches the tenant's player sat in, newest first", Auth.TENANT, m.History,
          answer="a page of the player's matches", path_params=m.PlayerPath, query=m.PageQuery, errors=(401,)),
    Route("GET", "/v1/players/{player}/ratings", "ratings", "backends", "The tenant's player's rating per game",
          Auth.TENANT, m.Ratings, answer="ratings (rounded: rating to 3 decimals, mu and sigma to 4)",
          path_params=m.PlayerPath, query=m.RatingsQuery, errors=(401,)),
    Route("POST", "/v1/webhooks", "add_webhook", "webhooks",
          f"Register a URL for events (at most {L.MAX_HOOKS} per tenant); the signing secret is in this answer only",
          Auth.TENANT, m.Webhook, 201, "registered (with its secret)", body=m.AddWebhook,
          errors=(401, 409, *BODY_ERRORS)),
    Route("GET", "/v1/webhooks", "webhooks", "webhooks", "The tenant's webhooks", Auth.TENANT, m.Webhooks,
          answer="webhooks", errors=(401,)),
    Route("GET", "/v1/webhooks/dead-letters", "dead_letters", "webhooks",
          "Deliveries given up on after a day of retries (MEEPLE_WEBHOOKS_RETRY_FOR_S), newest first", Auth.TENANT,
          m.DeadLetters, answer="dead letters", query=m.DeadLettersQuery, errors=(401,)),
    Route("DELETE", "/v1/webhooks/dead-letters", "clear_dead_letters", "webhooks", "Empty the tenant's dead letters",
          Auth.TENANT, m.Cleared, answer="how many were dropped", errors=(401,)),
    Route("DELETE", "/v1/webhooks/{hook_id}", "delete_webhook", "webhooks",
          "Stop a webhook (its pending deliveries are dropped)", Auth.TENANT, m.Deleted, answer="deleted",
          path_params=m.HookPath, errors=(401, 404)),
    Route("GET", "/healthz", "healthz", "operations", "Liveness", Auth.PUBLIC, m.Health, answer="alive"),
    Route("GET", "/readyz", "readyz", "operations", "Readiness (Redis and rules service)", Auth.PUBLIC, m.Ready,
          answer="ready", errors=(503,)),
    Route("GET", "/metrics", "metrics", "operations", "Prometheus metrics", Auth.PUBLIC, None,
          answer="the Prometheus text format", media="text/plain"),
    Route("GET", "/v1/openapi.json", "openapi", "operations", "This document", Auth.PUBLIC, None,
          answer="OpenAPI 3.1", media="application/json"),
    Route("GET", "/docs", "docs", "operations", "Interactive docs: Swagger UI, served locally", Auth.PUBLIC, None,
          answer="HTML", media="text/html"),
    Route("GET", "/play", "play", "operations", "The browser client (lobby and boards)", Auth.PUBLIC, None,
          answer="HTML", media="text/html"),
)

#: Routes that are not API calls: they answer no rate limit and meet no 400 (ops, pages).
PLAIN = frozenset({"healthz", "readyz", "metrics", "openapi", "docs", "play"})

#: A route by its operation id (what a thin view asks for: ``BY_OPERATION["move"].body``).
BY_OPERATION: dict[str, Route] = {route.operation_id: route for route in ROUTES}
