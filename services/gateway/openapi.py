"""The OpenAPI 3.1 document of the REST API (served at /v1/openapi.json, rendered at /docs).

Tests validate the document and check every JSON response they receive against its schemas.
"""

from __future__ import annotations

from typing import Any

from services.core.config import Config
from services.core.matches import BOT_LEVELS, MAX_PLAYERS
from services.core.webhooks import EVENTS, MAX_HOOKS, MAX_URL

from .api.common import IDEMPOTENCY_KEY_MAX, MAX_JSON_DEPTH

#: The event stream's ``limit`` (seconds) at most, as ``api/events.py`` enforces it.
STREAM_LIMIT_MAX_S = 3600
LONG_POLL_MAX_S = Config.long_poll_max_s

#: Create, join, enqueue and moves: a retry with the same key answers the first answer (see docs/api.md).
_IDEMPOTENCY = {"name": "Idempotency-Key", "in": "header", "required": False,
                "schema": {"type": "string", "minLength": 1, "maxLength": IDEMPOTENCY_KEY_MAX},
                "description": "a retry with the same key and the same request answers the first answer (kept "
                               "24 h; the same key with another request: 422 idempotency_key_reused; while the "
                               "first is still being answered: 409 idempotency_key_in_use)"}

_ERROR = {"type": "object", "required": ["error"], "additionalProperties": False,
          "description": "every error; `code` is one of the codes in docs/api.md's error table",
          "properties": {
    "error": {"type": "object", "required": ["code", "message"], "additionalProperties": False,
              "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}}

_SEAT = {"type": "object", "required": ["seat", "kind", "level", "taken", "control", "connected", "forfeited", "left"],
         "properties": {
    "seat": {"type": "integer"}, "kind": {"enum": ["human", "bot"]},
    "level": {"type": ["string", "null"]}, "taken": {"type": "boolean"},
    "control": {"enum": ["human", "bot"], "description": "who plays the seat now: a bot after a timeout "
                                                         "(until reclaimed), a forfeit or a leave"},
    "connected": {"type": "boolean", "description": "a human seat with a live long-poll/stream or a recent request"},
    "forfeited": {"type": "boolean"}, "left": {"type": "boolean"},
    "player": {"type": ["string", "null"], "description": "the tenant's user id in this human seat: only in "
                                                          "answers to the match's own tenant (its API key)"}}}

_CLOCK = {"type": "object", "required": ["mode", "on_timeout", "seats"], "properties": {
    "mode": {"enum": ["none", "per_move", "fischer", "correspondence"]},
    "on_timeout": {"enum": ["bot", "forfeit"]},
    "seconds": {"type": "number"}, "base_s": {"type": "number"}, "increment_s": {"type": "number"},
    "hours": {"type": "number"},
    "seats": {"type": "array", "items": {"type": "object", "required": ["seat", "running", "remaining_s", "deadline"],
                                         "properties": {"seat": {"type": "integer"}, "running": {"type": "boolean"},
                                                        "remaining_s": {"type": ["number", "null"]},
                                                        "deadline": {"type": ["number", "null"],
                                                                     "description": "Unix time"}}}}}}

_OUTCOME = {"type": ["object", "null"], "required": ["ended_by", "winners", "forfeited", "scores"],
            "description": "game: the engine's winners (a forfeited side excluded); forfeit: the side left; "
                           "abandoned: no human action for MEEPLE_IDLE_MATCH_TTL (winners [], scores null)",
            "properties": {
    "ended_by": {"enum": ["game", "forfeit", "abandoned"]}, "winners": {"type": "array", "items": {"type": "integer"}},
    "forfeited": {"type": "array", "items": {"type": "integer"}},
    "scores": {"type": ["array", "null"], "items": {"type": "number"}},
    "ratings": {"type": ["array", "null"],
                "description": "a tenant's rated match (2-6 sides, ended by the game or a forfeit, players named): "
                               "each named player's rating before and after (`player` for the tenant's key "
                               "only); null for an unrated match (solo matches are never rated)",
                "items": {"type": "object", "required": ["seat", "before", "after", "change"],
                          "properties": {"seat": {"type": "integer"}, "player": {"type": "string"},
                                         "before": {"$ref": "#/components/schemas/Rating"},
                                         "after": {"$ref": "#/components/schemas/Rating"},
                                         "change": {"type": "number"}}}}}}

_RATING = {"type": "object", "required": ["rating", "mu", "sigma", "matches"], "properties": {
    "rating": {"type": "number", "description": "mu - 3 sigma: the conservative rating (openskill Plackett-Luce)"},
    "mu": {"type": "number"}, "sigma": {"type": "number"}, "matches": {"type": "integer"}}}

_MATCH = {"type": "object", "required": ["id", "game", "players", "options", "status", "version", "seats", "to_act",
                                         "you", "view", "result", "outcome", "clock", "takeover_level", "rematch"],
          "properties": {
    "id": {"type": "string"}, "game": {"type": "string"}, "players": {"type": "integer"},
    "options": {"type": "object"},
    "status": {"enum": ["waiting", "active", "finished"]},
    "outcome": {"$ref": "#/components/schemas/Outcome"},
    "clock": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Clock"}]},
    "takeover_level": {"enum": list(BOT_LEVELS)},
    "rematch": {"type": ["string", "null"], "description": "id of the rematch once someone asked for it"},
    "legal_moves": {"type": ["array", "null"], "items": {"type": "object"},
                    "description": "with ?include=legal_moves: the caller's legal moves ([] with nothing to decide, "
                                   "null for a spectator)"},
    "version": {"type": "integer", "minimum": 0},
    "seats": {"type": "array", "items": {"$ref": "#/components/schemas/Seat"}},
    "to_act": {"type": "array", "items": {"type": "integer"}},
    "you": {"type": ["integer", "null"], "description": "the caller's seat, null for a spectator"},
    "view": {"type": ["object", "null"], "description": "the caller's view (the game's document)"},
    "result": {"type": ["object", "null"]},
    "token": {"type": "string", "description": "the seat's secret token; shown once"},
    "seat": {"type": "integer"}}}

#: Issue 33: every log entry in words, for the reader's own seat (or a spectator) only.
_WORDS_PROPS = {
    "text": {"type": "string", "description": "the entry in words for the caller's seat (or a spectator): a move "
                                              "as the game's engine tells it to that viewer, never more than it may "
                                              "know; other entries (joined, left, timeout...) in the server's words"},
    "summary": {"type": "object", "description": "the same as data: `seat`, `type` (a move's type) and the game's "
                                                 "`events` as that viewer sees them; `kind` for entries that are not "
                                                 "moves"}}

_EVENTS = {"type": "object", "required": ["version", "status", "to_act", "events", "view", "result"], "properties": {
    "version": {"type": "integer"}, "status": {"type": "string"},
    "to_act": {"type": "array", "items": {"type": "integer"}},
    "events": {"type": "array", "items": {"type": "object", "required": ["version", "kind", "seat", "to_act"],
                                          "properties": {"version": {"type": "integer"}, "kind": {"type": "string"},
                                                         "by": {"enum": ["human", "bot"]},
                                                         "seat": {"type": ["integer", "null"]},
                                                         "to_act": {"type": "array"}, "move": {"type": "object"},
                                                         **_WORDS_PROPS}}},
    "view": {"type": ["object", "null"]}, "result": {"type": ["object", "null"]},
    "legal_moves": {"type": ["array", "null"], "items": {"type": "object"},
                    "description": "with ?include=legal_moves: the caller's legal moves ([] with nothing to "
                                   "decide, null for a spectator)"}}}

_LEGAL = {"type": "object", "required": ["version", "seat", "moves"], "properties": {
    "version": {"type": "integer"}, "seat": {"type": "integer"},
    "moves": {"type": "array", "items": {"type": "object", "required": ["type"]}}}}

_REPLAY = {"type": "object", "required": ["id", "game", "players", "options", "seed", "status", "version", "log",
                                          "result"], "properties": {
    "id": {"type": "string"}, "game": {"type": "string"}, "players": {"type": "integer"},
    "options": {"type": "object"}, "status": {"type": "string"},
    "seed": {"type": ["string", "null"], "pattern": "^[0-9]{1,19}$",
             "description": "the seed as a decimal string (a 63-bit integer is more than a JavaScript number holds "
                            "exactly); null until the match is over"},
    "version": {"type": "integer"},
    "result": {"type": ["object", "null"], "description": "the game's result document plus `explanation`: "
                                                          "`end_reason`, `headline`, `winners`, `seats` (label, score, "
                                                          "rank, `breakdown` of {label, value}), `teams` (They Who "
                                                          "Were 8), `games` (CLASH: each game's winner and reason), "
                                                          "the automa labelled (Fierce Women, 2 players)"},
    "log": {"type": "array", "description": "one entry per version: `created` (version 0), then `joined`, `move` "
                                            "(with `by`), `timeout`, `reclaimed`, `left`, `resigned`, `rematch`, "
                                            "`abandoned`",
            "items": {"type": "object", "required": ["version", "kind", "seat"], "properties": {
                "version": {"type": "integer", "minimum": 0},
                "kind": {"enum": ["created", "joined", "move", "timeout", "reclaimed", "left", "resigned", "rematch",
                                  "abandoned"]},
                "seat": {"type": ["integer", "null"]}, "by": {"enum": ["human", "bot"]},
                "move": {"type": "object"}, **_WORDS_PROPS,
                "view": {"description": "with include=views: the caller's view (its seat's, or a spectator's) "
                                        "after this version"}}}}}}

_GAME = {"type": "object", "required": ["id", "title", "min_players", "max_players", "simultaneous", "options",
                                        "components"], "properties": {
    "id": {"type": "string"}, "title": {"type": "string"}, "min_players": {"type": "integer"},
    "max_players": {"type": "integer"}, "simultaneous": {"type": "boolean"}, "options": {"type": "array"},
    "components": {"type": "object", "description": "every card, tile, god and goal by kind (clash: `tiles`, "
                                                    "`factions`; sideboards: `cards` with 5 `drawers` {colour, "
                                                    "handle}, `goals`, `exchange_cards`, `colours`; fierce-women: "
                                                    "`women`, `actions`, `categories` with colours, `automa`; "
                                                    "they-who-were-8: `gods`, `actions`, `teams`), each entry with "
                                                    "`id`, `kind`, `name` and its rules `text` from the spec",
                   "additionalProperties": {"type": ["array", "object", "integer"]}}}}

_TICKET = {"type": "object",
           "required": ["ticket", "status", "game", "players", "options", "match_id", "seat", "token",
                        "token_issued"],
           "properties": {"ticket": {"type": "string"},
                          "status": {"enum": ["waiting", "matched", "cancelled"]},
                          "game": {"type": "string"}, "players": {"type": "integer"}, "options": {"type": "object"},
                          "match_id": {"type": ["string", "null"]}, "seat": {"type": ["integer", "null"]},
                          "token": {"type": ["string", "null"],
                                    "description": "the seat token: only in the first response that finds the "
                                                   "ticket matched (null before and after; the server keeps only "
                                                   "its hash)"},
                          "token_issued": {"type": "boolean",
                                           "description": "the seat token has been handed out (it is not shown "
                                                          "again)"}}}

_GAMES = {"type": "object", "required": ["games"], "properties": {"games": {"type": "array", "items": {
    "type": "object", "required": ["id", "title", "min_players", "max_players", "simultaneous", "options"],
    "properties": {"id": {"type": "string"}, "title": {"type": "string"}, "min_players": {"type": "integer"},
                   "max_players": {"type": "integer"}, "simultaneous": {"type": "boolean"},
                   "options": {"type": "array"}}}}}}


_PLAYER_ID = {"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}$",
              "description": "the tenant's own user id (API key only); namespaced by tenant, never shown to "
                             "another tenant"}

_HISTORY = {"type": "object", "required": ["player", "matches", "next"], "properties": {
    "player": {"type": ["string", "null"]},
    "next": {"type": ["number", "null"], "description": "pass as `before` for the next (older) page; null at "
                                                        "the end"},
    "matches": {"type": "array", "items": {"type": "object", "required": [
        "id", "game", "players", "status", "created_at", "seat", "seats", "result", "outcome"], "properties": {
        "id": {"type": "string"}, "game": {"type": "string"}, "players": {"type": "integer"},
        "status": {"enum": ["waiting", "active", "finished"]}, "created_at": {"type": "number"},
        "seat": {"type": ["integer", "null"], "description": "the player's seat (null in the tenant's list)"},
        "seats": {"type": "array", "items": {"type": "object", "required": ["seat", "kind", "player"],
                                             "properties": {"seat": {"type": "integer"},
                                                            "kind": {"enum": ["human", "bot"]},
                                                            "player": {"type": ["string", "null"]}}}},
        "result": {"type": ["object", "null"]}, "outcome": {"$ref": "#/components/schemas/Outcome"}}}}}}


_WEBHOOK = {"type": "object", "required": ["id", "url", "events", "created_at"], "properties": {
    "id": {"type": "string"}, "url": {"type": "string"}, "created_at": {"type": "number"},
    "events": {"type": "array", "items": {"enum": list(EVENTS)}},
    "secret": {"type": "string", "description": "the signing secret: only in the answer that registers the hook"}}}

_DEAD = {"type": "object", "required": ["dead_letters"], "properties": {"dead_letters": {"type": "array", "items": {
    "type": "object", "required": ["id", "hook", "url", "type", "attempts", "last_error", "first_at", "dead_at",
                                   "body"],
    "properties": {"id": {"type": "string"}, "hook": {"type": "string"}, "url": {"type": "string"},
                   "type": {"type": "string"}, "attempts": {"type": "integer"},
                   "last_error": {"type": ["string", "null"]}, "first_at": {"type": "number"},
                   "dead_at": {"type": "number"}, "body": {"type": "object"}}}}}}


def _json(schema: str, description: str) -> dict[str, Any]:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}}}


def _errors(*statuses: int) -> dict[str, Any]:
    texts = {400: "malformed request (bad JSON, a field or parameter out of range, a body nested deeper than "
                  f"{MAX_JSON_DEPTH} levels)",
             401: "missing, malformed or wrong bearer token or API key (WWW-Authenticate: Bearer); "
                  "api_key_required when anonymous access is off (MEEPLE_ANONYMOUS=0)",
             403: "the token holds another seat", 404: "no such match or ticket (or another tenant's match)",
             409: "stale version, not your turn, or match state", 413: "body too large (MEEPLE_MAX_BODY_BYTES, "
                                                                       "64 KiB by default, chunked bodies too)",
             415: "a body not sent as Content-Type: application/json", 422: "illegal move",
             426: "not a WebSocket upgrade", 501: "this server cannot hold WebSockets",
             429: "rate limited (Retry-After), a per-client or per-tenant quota or hint limit reached (the limit "
                  "is in the message), or too many waiting requests of this client (too_many_waiters)",
             503: "a dependency is down, the store is full (store_full: no new matches), no bot worker "
                  "answered a hint in time, or this process holds its most waiting requests (too_many_waiters, "
                  "Retry-After)"}
    return {str(s): _json("Error", texts[s]) for s in statuses}


_COMMON = (400, 429, 503)
_BODY = (413, 415)
_MATCH_ID = {"name": "match_id", "in": "path", "required": True, "schema": {"type": "string", "maxLength": 64}}
_INCLUDE = {"name": "include", "in": "query", "required": False, "schema": {"enum": ["legal_moves"]},
            "description": "legal_moves: add the caller's legal moves to the response (one request fewer per turn)"}
_TICKET_ID = {"name": "ticket", "in": "path", "required": True, "schema": {"type": "string", "maxLength": 64}}
_WAIT = {"name": "wait", "in": "query", "schema": {"type": "integer", "minimum": 0, "maximum": LONG_POLL_MAX_S,
                                                   "default": 0},
         "description": f"long-poll up to this many seconds (at most {LONG_POLL_MAX_S}, MEEPLE_LONG_POLL_MAX_S)"}
_AUTH: list[dict[str, list[str]]] = [{"bearer": []}]
#: Calls a tenant's API key makes (X-API-Key, or the key as the bearer token).
_KEY: list[dict[str, list[str]]] = [{"apiKey": []}, {"bearer": []}]
_PAGE = [{"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
          "description": "matches per page"},
         {"name": "before", "in": "query", "schema": {"type": "number", "minimum": 0},
          "description": "the `next` of the previous page: older matches only"}]


_WAITING = ("A request that has to wait (wait > 0 with nothing new yet, a stream, a WebSocket) is held without a "
            "thread. Each gateway process holds at most MEEPLE_WAITERS_MAX (20000) of them, each token (or "
            "address without one) at most MEEPLE_WAITERS_PER_CLIENT (50): past them that request only gets "
            "503 / 429 `too_many_waiters` with Retry-After.")
_WEBSOCKET = (
    "Upgrade with `Connection: Upgrade`, `Upgrade: websocket`, `Sec-WebSocket-Version: 13`; every message is a "
    "JSON text message. First send `{\"type\": \"hello\", \"token\": \"<seat token>\" | null, \"after\": "
    "<version>?, \"include\": \"legal_moves\"?}` within 10 s (or the socket closes with 1008); the token may "
    "come in an `Authorization: Bearer` header of the upgrade instead (browsers cannot set one: use the hello). "
    "The server answers `{\"type\": \"ready\", \"seat\", \"version\"}`, then pushes `{\"type\": "
    "\"update\", ...Events document}` for every new version (the seat's view only) and closes with 1000 after "
    "the update that finishes the match. Moves: `{\"type\": \"move\", \"id\": <any>, \"move\": {...}, "
    "\"version\": n, \"idempotency_key\": \"...\"?, \"include\": \"legal_moves\"?}` is answered by "
    "`{\"type\": \"reply\", \"id\", \"status\", \"body\"}` with exactly the status and body of POST "
    "/v1/matches/{id}/moves (same versions, idempotency keys, errors, rate limit). Other problems: `{\"type\": "
    "\"error\", \"error\": {\"code\", \"message\"}}`. Pings every 15 s; messages up to "
    "MEEPLE_MAX_BODY_BYTES (else 1009). " + _WAITING)


def _body(schema: dict[str, Any], required: bool = True) -> dict[str, Any]:
    return {"required": required, "description": f"JSON (Content-Type: application/json), nested at most "
                                                 f"{MAX_JSON_DEPTH} levels deep",
            "content": {"application/json": {"schema": schema}}}


_EMPTY = _body({"type": "object", "additionalProperties": False, "properties": {}}, required=False)


def document() -> dict[str, Any]:
    create = {"type": "object", "required": ["game", "players"], "additionalProperties": False, "properties": {
        "game": {"type": "string"},
        "players": {"type": "integer", "minimum": 1, "maximum": MAX_PLAYERS,
                    "description": "within the game's own range (GET /v1/games)"},
        "options": {"type": "object"},
        "seed": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
        "seats": {"type": "array", "maxItems": MAX_PLAYERS, "description": "one per player; bot seats count "
                  "against the client's quotas (MEEPLE_MAX_BOT_SEATS_PER_IP, MEEPLE_MAX_HARD_BOTS_PER_IP)",
                  "items": {"type": "object", "required": ["kind"], "additionalProperties": False, "properties": {
                      "kind": {"enum": ["human", "bot"]}, "level": {"enum": list(BOT_LEVELS)},
                      "player": _PLAYER_ID}}},
        "join": {"type": "boolean", "description": "take seat 0 at once (a `joined` entry at version 1); the "
                                                   "response carries its token"},
        "clock": {"type": "object", "description": "seat clocks (default none): {mode: per_move, seconds} | "
                                                   "{mode: fischer, base_s, increment_s} | {mode: correspondence, "
                                                   "hours}, plus on_timeout: bot (default) | forfeit",
                  "properties": {"mode": {"enum": ["none", "per_move", "fischer", "correspondence"]},
                                 "on_timeout": {"enum": ["bot", "forfeit"]}, "seconds": {"type": "number"},
                                 "base_s": {"type": "number"}, "increment_s": {"type": "number"},
                                 "hours": {"type": "number"}}},
        "takeover_level": {"enum": list(BOT_LEVELS),
                           "description": "the bot that plays a seat after a timeout or a leave (default normal)"}}}
    move = {"type": "object", "required": ["move", "version"], "additionalProperties": False, "properties": {
        "move": {"type": "object", "required": ["type"]}, "version": {"type": "integer", "minimum": 0}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Meeple REST API", "version": "1.0.0",
                 "description": "Play tabletop games against people and bots. See docs/api.md. Limits: request "
                                "bodies are JSON objects of at most MEEPLE_MAX_BODY_BYTES (64 KiB) nested at most "
                                f"{MAX_JSON_DEPTH} levels; MEEPLE_RATE_LIMIT_PER_MINUTE requests a minute per verified "
                                "seat token, else per client IP (an invalid token is 401 and counts for the IP); "
                                "per client IP at most MEEPLE_MAX_ACTIVE_MATCHES_PER_IP (20) waiting or active "
                                "matches and matchmaking tickets, MEEPLE_MAX_BOT_SEATS_PER_IP (20) bot seats in them "
                                "and MEEPLE_MAX_HARD_BOTS_PER_IP (4) hard ones; MEEPLE_HINTS_PER_SEAT_MINUTE (10) "
                                "hints a minute per seat; an active match with no human action for "
                                "MEEPLE_IDLE_MATCH_TTL (7 days) ends as abandoned. With an API key (X-API-Key: "
                                "mk_...) the tenant's own quotas apply instead of the per-IP ones (meeple keys create "
                                "--quota; defaults rpm 6000 requests a minute for all its keys, matches 1000, bots "
                                "1000, hard 100, hints 600 a minute); MEEPLE_ANONYMOUS=0 requires a key to create, "
                                "join or queue; webhooks: at most 20 per tenant, public addresses only (unless "
                                "MEEPLE_WEBHOOK_ALLOW_PRIVATE allows the network), retried for a day."},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "the seat token returned once by create/join, or a "
                                                          "tenant's API key (mk_...)"},
                                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key",
                                           "description": "a tenant's API key (meeple keys create): acts for the "
                                                          "tenant (its matches, players and quotas)"}},
            "schemas": {"Error": _ERROR, "Seat": _SEAT, "Match": _MATCH, "Events": _EVENTS, "LegalMoves": _LEGAL,
                        "Replay": _REPLAY, "Games": _GAMES, "Game": _GAME, "Ticket": _TICKET, "History": _HISTORY,
                        "Webhook": _WEBHOOK, "DeadLetters": _DEAD, "Rating": _RATING,
                        "Clock": _CLOCK, "Outcome": _OUTCOME,
                        "Hint": {"type": "object", "required": ["version", "seat", "move"], "properties": {
                            "version": {"type": "integer"}, "seat": {"type": "integer"},
                            "move": {"type": "object", "required": ["type"]}}}},
        },
        "paths": {
            "/v1/games": {"get": {"summary": "The game catalogue", "security": [{}, *_KEY], "responses": {
                "200": _json("Games", "games"), **_errors(401, 429, 503)}}},
            "/v1/games/{game}": {"get": {
                "summary": "One game with its components: every card, tile, god and goal with its rules text",
                "description": "Cacheable: `Cache-Control: public, max-age=3600` and an `ETag`; a request with "
                               "`If-None-Match` naming it gets 304 without a body.",
                "security": [{}, *_KEY],
                "parameters": [{"name": "game", "in": "path", "required": True, "schema": {"type": "string"}},
                               {"name": "If-None-Match", "in": "header", "required": False,
                                "schema": {"type": "string"}}],
                "responses": {"200": _json("Game", "the game and its components"),
                              "304": {"description": "not modified (the ETag given in If-None-Match)"},
                              **_errors(401, 404, 429, 503)}}},
            "/v1/matches": {
                "post": {"summary": "Create a match (with an API key: for the tenant, naming its players)",
                         "parameters": [_IDEMPOTENCY], "security": [{}, *_KEY], "requestBody": _body(create),
                         "responses": {"201": _json("Match", "created"), **_errors(401, 409, 422, *_COMMON, *_BODY)}},
                "get": {"summary": "The tenant's matches, newest first (API key)", "parameters": _PAGE,
                        "security": _KEY, "responses": {"200": _json("History", "a page of matches"),
                                                        **_errors(401, *_COMMON)}}},
            "/v1/players/{player}/matches": {"get": {
                "summary": "The matches the tenant's player sat in, newest first (API key)",
                "parameters": [{"name": "player", "in": "path", "required": True, "schema": _PLAYER_ID}, *_PAGE],
                "security": _KEY, "responses": {"200": _json("History", "a page of the player's matches"),
                                                **_errors(401, *_COMMON)}}},
            "/v1/matches/{match_id}": {"get": {
                "summary": "Status and the caller's view", "parameters": [_MATCH_ID, _INCLUDE],
                "security": [{}, *_AUTH],
                "responses": {"200": _json("Match", "status"), **_errors(401, 404, *_COMMON)}}},
            "/v1/matches/{match_id}/join": {"post": {
                "summary": "Take a free seat (the token is shown once)", "parameters": [_MATCH_ID, _IDEMPOTENCY],
                "security": [{}, *_KEY],
                "requestBody": _body({"type": "object", "additionalProperties": False,
                                      "properties": {"seat": {"type": "integer", "minimum": 0},
                                                     "player": _PLAYER_ID}}, required=False),
                "responses": {"200": _json("Match", "joined: the seat's token (once) and view"),
                              **_errors(401, 404, 409, 422, *_COMMON, *_BODY)}}},
            "/v1/matches/{match_id}/legal-moves": {"get": {
                "summary": "The caller's legal moves", "parameters": [_MATCH_ID], "security": _AUTH,
                "responses": {"200": _json("LegalMoves", "moves"), **_errors(401, 404, *_COMMON)}}},
            "/v1/matches/{match_id}/hint": {"get": {
                "summary": "The bot's suggested move for the caller's own seat", "parameters": [_MATCH_ID],
                "security": _AUTH, "responses": {"200": _json("Hint", "a legal move"),
                                                 **_errors(401, 404, 409, *_COMMON)}}},
            "/v1/matches/{match_id}/moves": {"post": {
                "summary": "Submit a move", "parameters": [_MATCH_ID, _INCLUDE, _IDEMPOTENCY],
                "security": _AUTH, "requestBody": _body(move),
                "responses": {"200": _json("Match", "applied"),
                              **_errors(401, 404, 409, 422, *_COMMON, *_BODY)}}},
            "/v1/matches/{match_id}/events": {"get": {
                "summary": "Long-poll for what happened after a version", "parameters": [
                    _MATCH_ID, _INCLUDE, {"name": "after", "in": "query", "description": "the version the "
                                          "caller has seen (default: the current one)",
                                          "schema": {"type": "integer", "minimum": 0, "maximum": 2**31}},
                    _WAIT,
                    {"name": "until", "in": "query", "schema": {"enum": ["change", "turn"], "default": "change"},
                     "description": "change: answer at the first new version; turn (a seat token is required): "
                                    "sleep through other seats' moves and answer once the caller must act or "
                                    "the match is finished (all events since `after` included)"}],
                "security": [{}, *_AUTH], "description": _WAITING,
                "responses": {"200": _json("Events", "events"), **_errors(401, 404, *_COMMON)}}},
            "/v1/matches/{match_id}/events/stream": {"get": {
                "summary": "Server-Sent Events: one 'update' event (an Events document) per version",
                "parameters": [_MATCH_ID,
                               {"name": "after", "in": "query", "description": "send the versions after this one "
                                "(default: the Last-Event-ID header, else the current one)",
                                "schema": {"type": "integer", "minimum": 0, "maximum": 2**31}},
                               {"name": "limit", "in": "query", "description": "close the stream after this many "
                                "seconds (reconnect with after=<last id>)",
                                "schema": {"type": "integer", "minimum": 1, "maximum": STREAM_LIMIT_MAX_S,
                                           "default": STREAM_LIMIT_MAX_S}},
                               {"name": "Last-Event-ID", "in": "header", "required": False,
                                "description": "the last version received (what browsers' EventSource sends on "
                                               "reconnecting); `after` wins if both are given",
                                "schema": {"type": "integer", "minimum": 0, "maximum": 2**31}}],
                "security": [{}, *_AUTH], "description": _WAITING,
                "responses": {"200": {"description": "text/event-stream: `event: update` (id = the version) whose "
                                                     "data is an Events document, and comment heartbeats",
                                      "content": {"text/event-stream": {
                                          "schema": {"$ref": "#/components/schemas/Events"}}}},
                              **_errors(401, 404, *_COMMON)}}},
            "/v1/matches/{match_id}/ws": {"get": {
                "summary": "WebSocket: the seat's events pushed, moves taken (one socket per match)",
                "parameters": [_MATCH_ID], "security": [{}, *_AUTH], "description": _WEBSOCKET,
                "responses": {"101": {"description": "switching to WebSocket (RFC 6455)"},
                              **_errors(401, 404, 426, 501, *_COMMON)}}},
            "/v1/matches/{match_id}/replay": {"get": {
                "summary": "The move log; the seed once the match is over", "parameters": [_MATCH_ID, {
                    "name": "include", "in": "query", "required": False, "schema": {"enum": ["views"]},
                    "description": "views: each entry also carries the caller's view after it (its seat's with "
                                   "a token, else a spectator's), for a finished match only (else 409 "
                                   "match_not_finished)"}],
                "security": [{}, *_AUTH],
                "responses": {"200": _json("Replay", "log (a seat's token adds its own moves before the end)"),
                              **_errors(400, 401, 404, 409, *_COMMON)}}},
            "/v1/matches/{match_id}/leave": {"post": {
                "summary": "Leave the match (a running one: a bot takes the seat for good)", "parameters": [_MATCH_ID],
                "security": _AUTH, "requestBody": _EMPTY,
                "responses": {"200": _json("Match", "left"), **_errors(401, 404, 409, *_COMMON, *_BODY)}}},
            "/v1/matches/{match_id}/resign": {"post": {
                "summary": "Resign: your seat forfeits (its side cannot win; an easy bot plays it on, and the match "
                           "ends at once when one side is left)", "parameters": [_MATCH_ID],
                "security": _AUTH, "requestBody": _EMPTY,
                "responses": {"200": _json("Match", "resigned"), **_errors(401, 404, 409, *_COMMON, *_BODY)}}},
            "/v1/matches/{match_id}/seats/{seat}/reclaim": {"post": {
                "summary": "Take your seat back from the bot that played it since your clock ran out",
                "parameters": [_MATCH_ID, {"name": "seat", "in": "path", "required": True,
                                           "schema": {"type": "integer", "minimum": 0}}],
                "security": _AUTH, "requestBody": _EMPTY,
                "responses": {"200": _json("Match", "reclaimed (or already yours)"),
                              **_errors(401, 403, 404, 409, *_COMMON, *_BODY)}}},
            "/v1/matches/{match_id}/rematch": {"post": {
                "summary": "The next match with the same seats: each human takes theirs (and a new token) here",
                "parameters": [_MATCH_ID], "security": _AUTH, "requestBody": _EMPTY,
                "responses": {"200": _json("Match", "your seat in the rematch, with its token"),
                              **_errors(401, 404, 409, *_COMMON, *_BODY)}}},
            "/v1/matchmaking": {"post": {
                "summary": "Queue for a game; humans are grouped closest rating first (the window widens with "
                           "waiting: MEEPLE_MM_WINDOW + MEEPLE_MM_WIDEN_PER_S x seconds); bot fill seats the level "
                           "closest in rating", "requestBody": _body({
                    "type": "object", "required": ["game", "players"], "additionalProperties": False,
                    "properties": {"game": {"type": "string"},
                                   "players": {"type": "integer", "minimum": 1, "maximum": MAX_PLAYERS},
                                   "options": {"type": "object"}, "player": _PLAYER_ID}}),
                "parameters": [_IDEMPOTENCY], "security": [{}, *_KEY],
                "responses": {"201": _json("Ticket", "queued or matched at once"),
                              **_errors(401, 409, 422, *_COMMON, *_BODY)}}},
            "/v1/matchmaking/{ticket}": {
                "get": {"summary": "Poll a ticket (the seat token appears once, in the first answer that finds "
                                   "it matched)", "parameters": [_TICKET_ID, _WAIT],
                        "description": _WAITING, "security": [{}, *_KEY],
                        "responses": {"200": _json("Ticket", "ticket"), **_errors(401, 404, *_COMMON)}},
                "delete": {"summary": "Leave the queue", "parameters": [_TICKET_ID], "security": [{}, *_KEY],
                           "responses": {"200": _json("Ticket", "cancelled"), **_errors(401, 404, 409, *_COMMON)}}},
            "/v1/players/{player}/ratings": {"get": {
                "summary": "The tenant's player's rating per game (API key)",
                "parameters": [{"name": "player", "in": "path", "required": True, "schema": _PLAYER_ID},
                               {"name": "game", "in": "query", "schema": {"type": "string"},
                                "description": "only this game"}],
                "security": _KEY, "responses": {"200": {"description": "ratings", "content": {"application/json": {
                    "schema": {"type": "object", "required": ["player", "ratings"], "properties": {
                        "player": {"type": "string"}, "ratings": {"type": "object", "additionalProperties": {
                            "$ref": "#/components/schemas/Rating"}}}}}}}, **_errors(401, *_COMMON)}}},
            "/v1/webhooks": {
                "post": {"summary": f"Register a URL for events (API key; at most {MAX_HOOKS} per tenant); the "
                                    "signing secret is in this answer only", "security": _KEY,
                         "requestBody": _body({"type": "object", "required": ["url", "events"],
                                               "additionalProperties": False, "properties": {
                             "url": {"type": "string", "maxLength": MAX_URL, "description": (
                                 "http(s) URL whose host resolves to public addresses only: loopback, private, "
                                 "shared, link-local, multicast, reserved and unspecified addresses (IPv4, IPv6, "
                                 "and IPv4 inside IPv6) are refused with 400 webhook_address_refused, a host that "
                                 "does not resolve with 400 webhook_unresolvable, and every delivery checks again "
                                 "and connects to the checked address; MEEPLE_WEBHOOK_ALLOW_PRIVATE (CIDR list, "
                                 "or all) lets the operator allow networks")},
                             "events": {"type": "array", "minItems": 1, "items": {"enum": list(EVENTS)}}}}),
                         "responses": {"201": _json("Webhook", "registered (with its secret)"),
                                       **_errors(401, 409, *_COMMON, *_BODY)}},
                "get": {"summary": "The tenant's webhooks (API key)", "security": _KEY, "responses": {
                    "200": {"description": "webhooks", "content": {"application/json": {"schema": {
                        "type": "object", "required": ["webhooks"], "properties": {"webhooks": {
                            "type": "array", "items": {"$ref": "#/components/schemas/Webhook"}}}}}}},
                    **_errors(401, *_COMMON)}}},
            "/v1/webhooks/dead-letters": {
                "get": {"summary": "Deliveries given up on after a day of retries, newest first (API key)",
                        "security": _KEY, "parameters": [_PAGE[0]],
                        "responses": {"200": _json("DeadLetters", "dead letters"), **_errors(401, *_COMMON)}},
                "delete": {"summary": "Empty the tenant's dead letters (API key)", "security": _KEY,
                           "responses": {"200": {"description": "how many were dropped", "content": {
                               "application/json": {"schema": {"type": "object", "required": ["cleared"],
                                                               "properties": {"cleared": {"type": "integer"}}}}}},
                               **_errors(401, *_COMMON)}}},
            "/v1/webhooks/{hook_id}": {"delete": {
                "summary": "Stop a webhook (its pending deliveries are dropped)", "security": _KEY,
                "parameters": [{"name": "hook_id", "in": "path", "required": True,
                                "schema": {"type": "string", "maxLength": 64}}],
                "responses": {"200": {"description": "deleted", "content": {"application/json": {"schema": {
                    "type": "object", "required": ["deleted"], "properties": {"deleted": {"type": "string"}}}}}},
                    **_errors(401, 404, *_COMMON)}}},
            "/healthz": {"get": {"summary": "Liveness", "responses": {"200": {"description": "alive"}}}},
            "/readyz": {"get": {"summary": "Readiness (Redis and rules service)", "responses": {
                "200": {"description": "ready"}, **_errors(503)}}},
            "/metrics": {"get": {"summary": "Prometheus metrics", "responses": {"200": {"description": "text"}}}},
            "/v1/openapi.json": {"get": {"summary": "This document",
                                         "responses": {"200": {"description": "OpenAPI 3.1"}}}},
            "/docs": {"get": {"summary": "Interactive docs: Swagger UI, served locally",
                              "responses": {"200": {"description": "HTML"}}}},
            "/play": {"get": {"summary": "The browser client (lobby and boards)",
                              "responses": {"200": {"description": "HTML"}}}},
        },
    }
