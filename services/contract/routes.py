"""Every operation of the REST API: its path, its Flask endpoint, its parameters, bodies and errors, declared once.

:mod:`services.contract.openapi` turns this table into the OpenAPI document; the SDK generator reads that
document. Who may call an operation is not written here: it is the access action the gateway declares for the
endpoint (``services.gateway.api.ACCESS``), whose security requirements are :data:`SECURITY`.

Adding a route is one :class:`Route` here (and its models in ``models.py``); the gateway's view parses with
``body(m.X)`` / ``query(m.Y)`` / ``headers(m.Z)`` and answers with ``answer(doc)`` (``services/gateway/api/common.py``),
which check that the view and this table name the same models and serialise through the route's response model.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from services.core.access import Action
from services.gateway.api import ACCESS

from . import limits as L
from . import models as m

#: Each access action's security requirements (who may call): the OpenAPI document lists these per operation, the
#: action being the one the gateway declares for the route's endpoint (``services.gateway.api.ACCESS``). ``{}``:
#: no credential (anonymous access, ``MEEPLE_ANONYMOUS=1``); a public route lists none (no lock in Swagger UI).
SECURITY: dict[Action | None, list[dict[str, list[str]]]] = {
    None: [],
    Action.CATALOGUE: [],  # anyone; a key that is sent counts against its tenant (x-meeple-api-key)
    Action.CREATE: [{}, {"apiKey": []}, {"apiKeyBearer": []}],
    Action.JOIN: [{}, {"apiKey": []}, {"apiKeyBearer": []}],
    Action.READ: [{}, {"seatToken": []}, {"apiKey": []}, {"apiKeyBearer": []}],
    Action.ACT: [{"seatToken": []}],
    Action.TICKET: [{}, {"apiKey": []}, {"apiKeyBearer": []}],
    Action.TENANT: [{"apiKey": []}, {"apiKeyBearer": []}],
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
    #: the Flask endpoint that serves it (``blueprint.view``): its access action is ``ACCESS[endpoint]``
    endpoint: str
    tag: str
    summary: str
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

    @property
    def action(self) -> Action | None:
        return ACCESS[self.endpoint]

    @property
    def security(self) -> list[dict[str, list[str]]]:
        return SECURITY[self.action]

    @property
    def key_counts(self) -> bool:
        """A public call that reads an API key all the same: a key sent counts against its tenant's quotas."""
        return self.action is Action.CATALOGUE


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
    Route("GET", "/v1/games", "games", "games.list_games", "games", "The game catalogue", m.Games, answer="games",
          errors=(401,)),
    Route("GET", "/v1/games/{game}", "game", "games.game_components", "games",
          "One game with its components: every card, tile, god and goal with its rules text", m.GameComponents,
          answer="the game and its components", path_params=m.GamePath, errors=(401, 404),
          description="Cacheable: `Cache-Control: public, max-age=3600` and an `ETag`; a request with "
                      "`If-None-Match` naming it gets 304 without a body."),
    Route("POST", "/v1/matches", "create_match", "matches.create_match", "matches",
          "Create a match (with an API key: for the tenant, naming its players)", m.Match, 201,
          "created (with `join`: seat 0's token, once)", body=m.CreateMatch, headers=m.IdempotencyHeaders,
          errors=(401, 409, 422)),
    Route("GET", _M, "get_match", "matches.get_match", "matches", "Status and the caller's view", m.Match,
          answer="status", path_params=m.MatchPath, query=m.IncludeQuery, errors=(401, 404)),
    Route("GET", _M + "/legal-moves", "legal_moves", "matches.legal_moves", "matches", "The caller's legal moves",
          m.LegalMoves, answer="moves", path_params=m.MatchPath, errors=(401, 404)),
    Route("GET", _M + "/hint", "hint", "matches.hint", "matches", "The bot's suggested move for the caller's own seat",
          m.Hint, answer="a legal move", path_params=m.MatchPath, errors=(401, 404, 409),
          description="Computed by a bot worker (the easy bot, MEEPLE_HINT_BUDGET_S of search); the gateway waits "
                      "MEEPLE_HINT_WAIT_S for it (else 503 hint_unavailable); MEEPLE_HINTS_PER_SEAT_MINUTE hints a "
                      "minute per seat (429 hint_limited)."),
    Route("POST", _M + "/moves", "move", "matches.submit_move", "matches", "Submit a move", m.Match,
          answer="applied", body=m.SubmitMove, path_params=m.MatchPath, query=m.IncludeQuery,
          headers=m.IdempotencyHeaders, errors=(401, 404, 409, 422)),
    Route("GET", _M + "/replay", "replay", "matches.replay", "matches", "The move log; the seed once the match is over",
          m.Replay, answer="log (a seat's token adds its own moves before the end)", path_params=m.MatchPath,
          query=m.ReplayQuery, errors=(401, 404, 409)),
    Route("POST", _M + "/join", "join", "matches.join", "seats", "Take a free seat (the token is shown once)",
          m.Match, answer="joined: the seat's token (once) and view", body=m.JoinMatch, path_params=m.MatchPath,
          headers=m.IdempotencyHeaders, errors=(401, 404, 409, 422)),
    Route("POST", _M + "/leave", "leave", "seats.leave", "seats",
          "Leave the match (a running one: a bot takes the seat for good)", m.Match, answer="left", body=m.Empty,
          path_params=m.MatchPath, errors=(401, 404, 409)),
    Route("POST", _M + "/resign", "resign", "seats.resign", "seats",
          "Resign: your seat forfeits (its side cannot win; an easy bot plays it on, and the match ends at once "
          "when one side is left)", m.Match, answer="resigned", body=m.Empty, path_params=m.MatchPath,
          errors=(401, 404, 409)),
    Route("POST", _M + "/seats/{seat}/reclaim", "reclaim", "seats.reclaim", "seats",
          "Take your seat back from the bot that played it since your clock ran out", m.Match,
          answer="reclaimed (or already yours)", body=m.Empty, path_params=m.SeatPath, errors=(401, 403, 404, 409)),
    Route("POST", _M + "/rematch", "rematch", "seats.rematch", "seats",
          "The next match with the same seats: each human takes theirs (and a new token) here", m.Match,
          answer="your seat in the rematch, with its token", body=m.Empty, path_params=m.MatchPath,
          errors=(401, 404, 409)),
    Route("GET", _M + "/events", "events", "events.long_poll", "events",
          "Long-poll for what happened after a version", m.Events, answer="events", path_params=m.MatchPath,
          query=m.EventsQuery, errors=(401, 404), description=WAITING),
    Route("GET", _M + "/events/stream", "events_stream", "events.stream", "events",
          "Server-Sent Events: one 'update' event (an Events document) per version", m.Events,
          answer="text/event-stream: `event: update` (id = the version) whose data is an Events document, and "
                 f"comment heartbeats (every {L.HEARTBEAT_S} s at most)", media="text/event-stream",
          path_params=m.MatchPath, query=m.StreamQuery, headers=m.StreamHeaders, errors=(401, 404),
          description=WAITING),
    Route("GET", _M + "/ws", "ws", "ws.websocket", "events",
          "WebSocket: the seat's events pushed, moves taken (one socket per match)", None, 101,
          "switching to WebSocket (RFC 6455)", path_params=m.MatchPath, errors=(401, 404, 426, 501),
          description=WEBSOCKET),
    Route("POST", "/v1/matchmaking", "matchmaking", "matchmaking.enqueue", "matchmaking",
          "Queue for a game; humans are grouped closest rating first, bot fill seats the level closest in rating",
          m.Ticket, 201, "queued or matched at once", body=m.Enqueue, headers=m.IdempotencyHeaders,
          errors=(401, 409, 422),
          description="The window of ratings a group may span widens with waiting: MEEPLE_MM_WINDOW + "
                      "MEEPLE_MM_WIDEN_PER_S x seconds. With MEEPLE_BOT_FILL_S > 0 (seconds; 0, the default, waits "
                      "for humans forever), a ticket waiting that long is seated with the closest-rated waiting "
                      "tickets and bots of the rung closest to the table's mean rating."),
    Route("GET", "/v1/matchmaking/{ticket}", "ticket", "matchmaking.poll", "matchmaking",
          "Poll a ticket (the seat token appears once, in the first answer that finds it matched)", m.Ticket,
          answer="ticket", path_params=m.TicketPath, query=m.TicketQuery, errors=(401, 404),
          description="A tenant's ticket is read with its key only; an anonymous one by anyone holding its id "
                      "(while anonymous access is on). " + WAITING),
    Route("DELETE", "/v1/matchmaking/{ticket}", "cancel_ticket", "matchmaking.cancel", "matchmaking",
          "Leave the queue", m.Ticket, answer="cancelled", path_params=m.TicketPath, errors=(401, 404, 409),
          description="A tenant's ticket is cancelled with its key only."),
    Route("GET", "/v1/matches", "tenant_matches", "backends.tenant_matches", "backends",
          "The tenant's matches, newest first", m.History, answer="a page of matches", query=m.PageQuery,
          errors=(401,)),
    Route("GET", "/v1/players/{player}/matches", "player_matches", "backends.player_matches", "backends",
          "The matches the tenant's player sat in, newest first", m.History,
          answer="a page of the player's matches", path_params=m.PlayerPath, query=m.PageQuery, errors=(401,)),
    Route("GET", "/v1/players/{player}/ratings", "ratings", "backends.player_ratings", "backends",
          "The tenant's player's rating per game", m.Ratings,
          answer="ratings (rounded: rating to 3 decimals, mu and sigma to 4)", path_params=m.PlayerPath,
          query=m.RatingsQuery, errors=(401,)),
    Route("POST", "/v1/webhooks", "add_webhook", "backends.add_webhook", "webhooks",
          f"Register a URL for events (at most {L.MAX_HOOKS} per tenant); the signing secret is in this answer only",
          m.Webhook, 201, "registered (with its secret)", body=m.AddWebhook, errors=(401, 409)),
    Route("GET", "/v1/webhooks", "webhooks", "backends.list_webhooks", "webhooks", "The tenant's webhooks",
          m.Webhooks, answer="webhooks", errors=(401,)),
    Route("GET", "/v1/webhooks/dead-letters", "dead_letters", "backends.dead_letters", "webhooks",
          "Deliveries given up on after a day of retries (MEEPLE_WEBHOOKS_RETRY_FOR_S), newest first",
          m.DeadLetters, answer="dead letters", query=m.DeadLettersQuery, errors=(401,)),
    Route("DELETE", "/v1/webhooks/dead-letters", "clear_dead_letters", "backends.clear_dead_letters", "webhooks",
          "Empty the tenant's dead letters", m.Cleared, answer="how many were dropped", errors=(401,)),
    Route("DELETE", "/v1/webhooks/{hook_id}", "delete_webhook", "backends.delete_webhook", "webhooks",
          "Stop a webhook (its pending deliveries are dropped)", m.Deleted, answer="deleted",
          path_params=m.HookPath, errors=(401, 404)),
    Route("GET", "/healthz", "healthz", "ops.healthz", "operations", "Liveness", m.Health, answer="alive"),
    Route("GET", "/readyz", "readyz", "ops.readyz", "operations", "Readiness (Redis and rules service)", m.Ready,
          answer="ready", errors=(503,)),
    Route("GET", "/metrics", "metrics", "ops.metrics", "operations", "Prometheus metrics", None,
          answer="the Prometheus text format", media="text/plain"),
    Route("GET", "/v1/openapi.json", "openapi", "ops.openapi", "operations", "This document", None,
          answer="OpenAPI 3.1", media="application/json"),
    Route("GET", "/docs", "docs", "play.docs", "operations", "Interactive docs: Swagger UI, served locally", None,
          answer="HTML", media="text/html"),
    Route("GET", "/play", "play", "play.play", "operations", "The browser client (lobby and boards)", None,
          answer="HTML", media="text/html"),
)

#: Routes that are not API calls: they answer no rate limit and meet no 400 (ops, pages).
PLAIN = frozenset({"healthz", "readyz", "metrics", "openapi", "docs", "play"})

#: A route by its operation id, and by the Flask endpoint that serves it (what a view's ``body``/``answer`` look up).
BY_OPERATION: dict[str, Route] = {route.operation_id: route for route in ROUTES}
BY_ENDPOINT: dict[str, Route] = {route.endpoint: route for route in ROUTES}
