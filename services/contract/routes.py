"""Every operation of the REST API: its path, its Flask endpoint, its parameters, bodies and errors, declared once.

:mod:`services.contract.openapi` turns this table into the OpenAPI document; the SDK generator reads that
document. Who may call an operation is not written here: it is the access action the gateway declares for the
endpoint (``access.ACCESS``), whose security requirements are :data:`SECURITY`.

Adding a route is one :class:`Route` here (and its models in ``models.py``); the gateway's view parses with
``body(m.X)`` / ``query(m.Y)`` / ``headers(m.Z)`` and answers with ``answer(doc)`` (``services/gateway/api/common.py``),
which check that the view and this table name the same models and serialise through the route's response model.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from services.core.access import Action

from . import limits as L
from . import models as m
from .access import ACCESS

#: Each access action's security requirements (who may call): the OpenAPI document lists these per operation, the
#: action being the one the contract declares for the route's endpoint (``access.ACCESS``). ``{}``:
#: no credential (anonymous access, ``MEEPLE_ANONYMOUS=1``); a public route lists none (no lock in Swagger UI).
SECURITY: dict[Action | None, list[dict[str, list[str]]]] = {
    None: [],
    Action.CATALOGUE: [],  # anyone; a key that is sent counts against its tenant (x-meeple-api-key)
    Action.CREATE: [{}, {"apiKey": []}, {"apiKeyBearer": []}],
    Action.JOIN: [{}, {"apiKey": []}, {"apiKeyBearer": []}],
    Action.READ: [{}, {"seatToken": []}, {"watchToken": []}, {"apiKey": []}, {"apiKeyBearer": []}],
    Action.ACT: [{"seatToken": []}],
    Action.TICKET: [{}, {"apiKey": []}, {"apiKeyBearer": []}],
    Action.TENANT: [{"apiKey": []}, {"apiKeyBearer": []}],
    Action.TOURNAMENT: [{"apiKey": []}, {"apiKeyBearer": []}],
    Action.SHARE: [{"apiKey": []}, {"apiKeyBearer": []}],
    Action.WATCH_TOKEN: [{"apiKey": []}, {"apiKeyBearer": []}],
    Action.CHAT: [{"seatToken": []}, {"watchToken": []}, {}, {"apiKey": []}, {"apiKeyBearer": []}],
    Action.MODERATE: [{"apiKey": []}, {"apiKeyBearer": []}],
}

#: The areas of the API (Swagger UI's sections), in order, with a line each.
TAGS: dict[str, str] = {
    "games": "The catalogue of games and their options",
    "matches": "Create a match, read its status and your view, play moves, replay it",
    "seats": "Take, leave, reclaim a seat; rematch",
    "events": "What happened after a version: long-poll, Server-Sent Events, WebSocket",
    "chat": "Short plain-text messages in a match, delivered on every events channel and in the replay",
    "matchmaking": "Queue for a game; humans grouped by rating, bots fill after a wait",
    "backends": "For an app's backend (API key): its matches, its players' history and ratings",
    "webhooks": "Signed deliveries of match and tournament events to a tenant's URL (API key)",
    "leaderboards": "A tenant's players ranked per game by rating: top N, around a player, seasons (API key)",
    "watch": "Watch links: read-only spectator tokens for a tenant's match or tournament, for its app's users "
             "(API key)",
    "tournaments": "Swiss and arena events of a tenant's players, bots in the byes and the no-shows' seats (API key)",
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
    #: cacheable: the answer carries an ``ETag``; ``If-None-Match`` naming it gets 304 without a body
    conditional: bool = False
    #: a write that may be sent again as it is (the same request changes nothing more): clients may retry it
    idempotent: bool = False

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


#: Statuses any API call may answer: a malformed request, a rate limit, a dependency failing (502) or down (503).
COMMON_ERRORS = (400, 429, 502, 503)
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
    "/v1/matches/{id}/moves (same versions, idempotency keys, errors, rate limit). Chat: the server pushes "
    "`{\"type\": \"chat\", \"message\": {...ChatMessage}}` for every new chat message and `{\"type\": "
    "\"chat_redacted\", \"id\": n}` for every redaction (the hello's `chat_after`: <message id>? first sends "
    "the messages past it; without it only new ones); `{\"type\": \"chat\", \"id\": <any>, \"text\": "
    "\"...\"}` (or `\"preset\"`) posts one and is answered by a `reply` with exactly the status and body of "
    "POST /v1/matches/{id}/chat. Other problems: `{\"type\": "
    f"\"error\", \"error\": {{\"code\", \"message\"}}}}`. Pings every {L.HEARTBEAT_S} s; messages up to "
    "MEEPLE_MAX_BODY_BYTES (else 1009). " + WAITING)

WATCH = (
    "The token (w_<id>.<secret>, sent as 'Authorization: Bearer w_...' or in the WebSocket hello) reads the "
    "spectator view on every read of the matches it covers (GET the match, its events, its stream, its WebSocket, "
    "its replay): no seat's view, no legal moves, player ids only if minted with player_ids. Everything else is "
    "refused: acting for a seat 401 wrong_token, another match 404 match_not_found, creating, joining, tickets "
    "and the tenant's own data 401 api_key_required; expired 401 watch_token_expired, revoked 401 "
    f"watch_token_revoked. ttl_s: {L.WATCH_TTL_MIN_S}-{L.WATCH_TTL_MAX_S} s (default {L.WATCH_TTL_DEFAULT_S}).")
CHAT = (
    "Caller: one of the match's seat tokens (it speaks as that seat), or, only in a match created with "
    "`spectator_chat: true`, whoever may read it as a spectator (the tenant's key, anyone on an anonymous match): "
    "`seat` null (else 403 chat_spectators_off). Chat never changes the match's `version`. `text` is plain text, "
    f"1-{L.CHAT_TEXT_MAX} characters once surrounding whitespace is stripped, with no control characters (400 "
    "bad_chat, as for an unknown preset or both fields, or neither); a preset is stored with its phrase as `text`. "
    f"Each seat (each spectator: its key, else its address) posts at most MEEPLE_CHAT_RATE ({L.CHAT_RATE}) "
    f"messages in any MEEPLE_CHAT_RATE_WINDOW_S ({L.CHAT_RATE_WINDOW_S}) seconds (429 chat_rate_limited with "
    f"Retry-After); a match holds MEEPLE_CHAT_MAX_MESSAGES ({L.CHAT_MAX_MESSAGES}) messages (409 chat_full); a "
    f"finished match takes chat for MEEPLE_CHAT_AFTER_FINISH_S ({L.CHAT_AFTER_FINISH_S}) seconds (409 chat_closed). "
    "Bots never chat. A tenant's match makes a `chat.message` webhook. The message reaches every reader: long-polls "
    "with `chat_after`, SSE `event: chat`, WebSocket `chat` frames, the replay's `chat`.")

_LB = "/v1/leaderboards/{game}"
_T = "/v1/tournaments/{tournament_id}"
BOARDS = ("A board lists the tenant's players of a game by rating (mu - 3 sigma, as the ratings show it), equal "
          "ratings sharing a rank; a player is listed once they played `min_matches` rated matches on it (a season "
          "counts its own). `season`: `all` (the all-time board, default), `current` (the season live now: 404 "
          "no_live_season without one) or a season's name. Bots are never on a board. An unknown game: 404 "
          "game_not_found.")
SEASONS = ("A season is a window [starts_at, ends_at) of server time; a game's seasons never overlap. Rated matches "
           "finishing inside it write its board too, which is frozen at its end. Then its `policy` applies to the "
           "ratings themselves: keep, reset (to the default) or decay (move the fraction `decay` of the way back).")
TOURNAMENTS = (
    "From starts_at the server runs it (the timekeeper): Swiss rounds paired by score then rating, no repeat "
    "pairings while avoidable; an arena's waves of waiting players during its window. Each table is a tenant match "
    "created active, each human seat kept for its player (POST /v1/matches/{id}/join {\"player\"} with the key "
    "takes it); a bye's or table's spare seats are bots of the rung closest to the table's ratings; a player who "
    "never comes times out and a bot plays on. A round ends when its last match does, or at its deadline "
    "(unfinished tables are drawn and ended). A bot's result never counts as a human's win over a human. Events: "
    "tournament.started, round.started, round.finished, tournament.finished (webhooks). Settings that only the "
    "rules service can judge (game, options, players_per_table) are checked here: 400 unknown_game, "
    "invalid_options. A tournament holds one of the tenant's `matches` quota for each table of a round "
    "(ceil(max_players / players_per_table)) from its creation until it ends, so its tables never fail for the "
    "quota and are charged nothing more: 429 quota_exceeded when the quota lacks that room.")

ROUTES: tuple[Route, ...] = (
    Route("GET", "/v1/games", "games", "games.list_games", "games", "The game catalogue", m.Games, answer="games",
          errors=(401,)),
    Route("GET", "/v1/games/{game}", "game", "games.game_components", "games",
          "One game with its components: every card, tile, god and goal with its rules text", m.GameComponents,
          answer="the game and its components", path_params=m.GamePath, errors=(401, 404), conditional=True,
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
          description="Computed by a bot worker (the normal bot's search, named in level; MEEPLE_HINT_BUDGET_S caps "
                      "its think time); the gateway waits MEEPLE_HINT_WAIT_S for it (else 503 hint_unavailable); "
                      "MEEPLE_HINTS_PER_SEAT_MINUTE hints a minute per seat (429 hint_limited)."),
    Route("POST", _M + "/moves", "move", "matches.submit_move", "matches", "Submit a move", m.Match,
          answer="applied", body=m.SubmitMove, path_params=m.MatchPath, query=m.MoveQuery,
          headers=m.IdempotencyHeaders, errors=(401, 404, 409, 422),
          description="With `wait` > 0 the move is applied at once and the answer waits (up to `wait` seconds) "
                      "until the caller must act again or the match is finished: the status document then, with "
                      "`events`, what happened after the move's version. A client plays one request per turn. The "
                      "answer comes at once (still with `events`) when the caller is to act anyway, and when this "
                      "server holds as many waiting requests as it may (for the process or the token, as for "
                      "long-polls): the move is applied either way. A retry with the same Idempotency-Key waits "
                      "the same way from the first answer's version."),
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
          headers=m.IdempotencyHeaders, errors=(401, 404, 409, 422)),
    Route("GET", _M + "/events", "events", "events.long_poll", "events",
          "Long-poll for what happened after a version", m.Events, answer="events", path_params=m.MatchPath,
          query=m.EventsQuery, errors=(401, 404), description=WAITING),
    Route("GET", _M + "/events/stream", "events_stream", "events.stream", "events",
          "Server-Sent Events: one 'update' event (an Events document) per version", m.Events,
          answer="text/event-stream: `event: update` (id = the version) whose data is an Events document, "
                 "`event: chat` (no id) whose data is a ChatMessage, `event: chat_redacted` whose data is "
                 f"`{{\"id\": n}}`, and comment heartbeats (every {L.HEARTBEAT_S} s at most)",
          media="text/event-stream",
          path_params=m.MatchPath, query=m.StreamQuery, headers=m.StreamHeaders, errors=(401, 404),
          description=WAITING),
    Route("GET", _M + "/ws", "ws", "ws.websocket", "events",
          "WebSocket: the seat's events pushed, moves taken (one socket per match)", None, 101,
          "switching to WebSocket (RFC 6455)", path_params=m.MatchPath, errors=(401, 404, 426, 501),
          description=WEBSOCKET),
    Route("POST", _M + "/chat", "post_chat", "chat.post_chat", "chat",
          "Post a chat message (text or a preset) to the match: every reader receives it on every channel",
          m.ChatMessage, 201, "posted: the message as readers receive it", body=m.PostChat, path_params=m.MatchPath,
          errors=(401, 403, 404, 409, *BODY_ERRORS), description=CHAT),
    Route("DELETE", _M + "/chat/{message_id}", "redact_chat", "chat.redact_chat", "chat",
          "Redact a chat message (the match's tenant): replaced by a redacted one on every channel and in the "
          "replay", None, 204, "redacted (or it was already)", path_params=m.ChatMessagePath, errors=(401, 404),
          idempotent=True),
    Route("POST", "/v1/matchmaking", "matchmaking", "matchmaking.enqueue", "matchmaking",
          "Queue for a game; humans are grouped closest rating first, bot fill seats the level closest in rating",
          m.Ticket, 201, "queued or matched at once", body=m.Enqueue, headers=m.IdempotencyHeaders,
          errors=(401, 409, 422),
          description="The window of ratings a group may span widens with waiting: MEEPLE_MM_WINDOW + "
                      "MEEPLE_MM_WIDEN_PER_S x seconds. With MEEPLE_BOT_FILL_S > 0 (seconds; 0, the default, waits "
                      "for humans forever), a ticket waiting that long is seated with the closest-rated waiting "
                      "tickets and bots of the rung closest to the table's mean rating. A `party` queues 1 to "
                      "`players` friends as one ticket: seated together in one match (They Who Were 8: a party of "
                      "two on one team; of three or four, one whole team and the rest on the other), matched by "
                      "their mean mu with the window widened by half their spread (highest minus lowest mu), each "
                      "member's seat token once in `party`, and one active match charged per member."),
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
    # -- leaderboards (docs/guides/leaderboards-tournaments.md)
    Route("GET", _LB, "leaderboard", "leaderboards.leaderboard", "leaderboards",
          "A board: listed players best first, from a position", m.Leaderboard, answer="a page of the board",
          path_params=m.GamePath, query=m.LeaderboardQuery, errors=(401, 404),
          description=BOARDS),
    Route("GET", _LB + "/players/{player}", "leaderboard_player", "leaderboards.leaderboard_player", "leaderboards",
          "A player's rank on a board", m.BoardRank, answer="the player's entry (rank null while below min_matches)",
          path_params=m.GamePlayerPath, query=m.SeasonQuery, errors=(401, 404)),
    Route("GET", _LB + "/players/{player}/around", "leaderboard_around", "leaderboards.leaderboard_around",
          "leaderboards", "A player and their neighbours on a board", m.BoardAround,
          answer="2 x span + 1 entries with the player as central as the board's ends allow",
          path_params=m.GamePlayerPath, query=m.AroundQuery, errors=(401, 404)),
    Route("GET", _LB + "/settings", "leaderboard_settings", "leaderboards.leaderboard_settings", "leaderboards",
          "The board settings of a game", m.BoardSettings, answer="settings", path_params=m.GamePath,
          errors=(401, 404)),
    Route("PUT", _LB + "/settings", "set_leaderboard_settings", "leaderboards.set_leaderboard_settings",
          "leaderboards", "Set the rated matches a player needs to be listed", m.BoardSettings,
          answer="settings (the all-time and live boards are relisted before the answer)", body=m.BoardSettingsBody,
          path_params=m.GamePath, errors=(401, 404, 409, *BODY_ERRORS)),
    Route("GET", _LB + "/seasons", "seasons", "leaderboards.seasons", "leaderboards", "A game's seasons", m.Seasons,
          answer="seasons, by start", path_params=m.GamePath, errors=(401, 404)),
    Route("POST", _LB + "/seasons", "create_season", "leaderboards.create_season", "leaderboards",
          f"A new season: a window with a board of its own (at most {L.SEASONS_MAX} per game)", m.Season, 201,
          "created", body=m.CreateSeason, path_params=m.GamePath, errors=(401, 404, 409, *BODY_ERRORS),
          description=SEASONS),
    Route("GET", _LB + "/seasons/{name}", "season", "leaderboards.season", "leaderboards", "A season", m.Season,
          answer="the season", path_params=m.SeasonPath, errors=(401, 404)),
    Route("PATCH", _LB + "/seasons/{name}", "update_season", "leaderboards.update_season", "leaderboards",
          "Change a season that has not ended (its end may be now: it ends at once)", m.Season, answer="the season",
          body=m.UpdateSeason, path_params=m.SeasonPath, errors=(401, 404, 409, *BODY_ERRORS)),
    Route("DELETE", _LB + "/seasons/{name}", "delete_season", "leaderboards.delete_season", "leaderboards",
          "Delete a scheduled season, or a closed one with its frozen board", m.Deleted, answer="deleted",
          path_params=m.SeasonPath, errors=(401, 404, 409)),
    # -- tournaments
    Route("POST", "/v1/tournaments", "create_tournament", "tournaments.create_tournament", "tournaments",
          "A new tournament of the tenant's players", m.Tournament, 201, "created: registering until starts_at",
          body=m.CreateTournament, errors=(401, *BODY_ERRORS), description=TOURNAMENTS),
    Route("GET", "/v1/tournaments", "tournaments", "tournaments.list_tournaments", "tournaments",
          "The tenant's tournaments, newest first", m.Tournaments, answer="a page of tournaments",
          query=m.TournamentsQuery, errors=(401,)),
    Route("GET", _T, "tournament", "tournaments.get_tournament", "tournaments",
          "A tournament: settings, the current round's tables (with their matches) and the standings", m.Tournament,
          answer="the tournament", path_params=m.TournamentPath, errors=(401, 404)),
    Route("GET", _T + "/rounds", "tournament_rounds", "tournaments.tournament_rounds", "tournaments",
          "The tournament's history: its rounds (an arena's waves), oldest first, each with every table, its match "
          "and result", m.TournamentRounds, answer="a page of rounds", query=m.RoundsQuery,
          path_params=m.TournamentPath, errors=(401, 404)),
    Route("POST", _T + "/players", "register", "tournaments.register", "tournaments",
          "Register a player (again: brings back an absent or withdrawn one)", m.Registration, 201, "registered",
          body=m.RegisterPlayer, path_params=m.TournamentPath, errors=(401, 404, 409, *BODY_ERRORS), idempotent=True,
          description="Swiss: until it starts; arena: until its window ends. Registering a player who is "
                      "registered (not withdrawn, not absent) changes nothing and answers their registration "
                      "as it is (201, the same `registered_at`): a retry is safe. Registering a withdrawn or "
                      "absent player again brings them back (a new `registered_at`)."),
    Route("GET", _T + "/players/{player}", "tournament_player", "tournaments.tournament_player", "tournaments",
          "A player's standing and the table they play at now (its match: the way into theirs)", m.TournamentPlayer,
          answer="the player's standing and table", path_params=m.TournamentPlayerPath, errors=(401, 404)),
    Route("DELETE", _T + "/players/{player}", "unregister", "tournaments.unregister", "tournaments",
          "Unregister a player: removed before the start, withdrawn after it (points kept, not paired again)",
          m.Unregistered, answer="removed or withdrawn", path_params=m.TournamentPlayerPath, errors=(401, 404, 409)),
    Route("POST", _T + "/cancel", "cancel_tournament", "tournaments.cancel", "tournaments",
          "Cancel: the standings so far are final; running matches are ended without a result", m.Tournament,
          answer="the tournament, cancelled", body=m.Empty, path_params=m.TournamentPath,
          errors=(401, 404, 409, *BODY_ERRORS)),
    # -- watch links (docs/api.md "Watch links")
    Route("POST", _M + "/watch-tokens", "mint_watch_token", "watch.mint_for_match", "watch",
          "A read-only spectator token for one of the tenant's matches (the token is in this answer only)",
          m.WatchToken, 201, "minted", body=m.MintWatchToken, path_params=m.MatchPath,
          errors=(401, 404, *BODY_ERRORS), description=WATCH),
    Route("POST", _T + "/watch-tokens", "mint_tournament_watch_token", "watch.mint_for_tournament", "watch",
          "A read-only spectator token for every match of one of the tenant's tournaments, current and future",
          m.WatchToken, 201, "minted", body=m.MintWatchToken, path_params=m.TournamentPath,
          errors=(401, 404, *BODY_ERRORS), description=WATCH),
    Route("GET", "/v1/watch-tokens/{token_id}", "watch_token", "watch.describe", "watch",
          "A watch token the tenant minted (never the token itself)", m.WatchToken, answer="the token's description",
          path_params=m.WatchTokenPath, errors=(401, 404)),
    Route("DELETE", "/v1/watch-tokens/{token_id}", "revoke_watch_token", "watch.revoke", "watch",
          "Revoke a watch token: its next request is 401 watch_token_revoked, its open streams end now", None, 204,
          "revoked (again: still 204)", path_params=m.WatchTokenPath, errors=(401, 404), idempotent=True),
    Route("GET", "/healthz", "healthz", "ops.healthz", "operations", "Liveness", m.Health, answer="alive"),
    Route("GET", "/readyz", "readyz", "ops.readyz", "operations", "Readiness (Redis and rules service)", m.Ready,
          answer="ready", errors=(503,)),
    Route("GET", "/metrics", "metrics", "ops.metrics", "operations", "Prometheus metrics, without any series that "
          "names a tenant; 404 when the gateway serves its metrics on a port of their own (MEEPLE_METRICS_PORT, "
          "the deploy setting)", None, answer="the Prometheus text format", media="text/plain", errors=(404,)),
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
