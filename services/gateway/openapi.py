"""The OpenAPI 3.1 document of the REST API (served at /v1/openapi.json, rendered at /docs).

Tests validate the document and check every JSON response they receive against its schemas.
"""

from __future__ import annotations

from typing import Any

_ERROR = {"type": "object", "required": ["error"], "additionalProperties": False, "properties": {
    "error": {"type": "object", "required": ["code", "message"], "additionalProperties": False,
              "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}}

_SEAT = {"type": "object", "required": ["seat", "kind", "level", "taken", "control", "connected", "forfeited", "left"],
         "properties": {
    "seat": {"type": "integer"}, "kind": {"enum": ["human", "bot"]},
    "level": {"type": ["string", "null"]}, "taken": {"type": "boolean"},
    "control": {"enum": ["human", "bot"], "description": "who plays the seat now: a bot after a timeout "
                                                         "(until reclaimed), a forfeit or a leave"},
    "connected": {"type": "boolean", "description": "a human seat with a live long-poll/stream or a recent request"},
    "forfeited": {"type": "boolean"}, "left": {"type": "boolean"}}}

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

_OUTCOME = {"type": ["object", "null"], "required": ["ended_by", "winners", "forfeited", "scores"], "properties": {
    "ended_by": {"enum": ["game", "forfeit"]}, "winners": {"type": "array", "items": {"type": "integer"}},
    "forfeited": {"type": "array", "items": {"type": "integer"}},
    "scores": {"type": ["array", "null"], "items": {"type": "number"}}}}

_MATCH = {"type": "object", "required": ["id", "game", "players", "options", "status", "version", "seats", "to_act",
                                         "you", "view", "result", "outcome", "clock", "takeover_level", "rematch"],
          "properties": {
    "id": {"type": "string"}, "game": {"type": "string"}, "players": {"type": "integer"},
    "options": {"type": "object"},
    "status": {"enum": ["waiting", "active", "finished"]},
    "outcome": {"$ref": "#/components/schemas/Outcome"},
    "clock": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Clock"}]},
    "takeover_level": {"enum": ["easy", "normal", "hard"]},
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

_EVENTS = {"type": "object", "required": ["version", "status", "to_act", "events", "view", "result"], "properties": {
    "version": {"type": "integer"}, "status": {"type": "string"},
    "to_act": {"type": "array", "items": {"type": "integer"}},
    "events": {"type": "array", "items": {"type": "object", "required": ["version", "kind", "seat", "to_act"],
                                          "properties": {"version": {"type": "integer"}, "kind": {"type": "string"},
                                                         "by": {"enum": ["human", "bot"]},
                                                         "seat": {"type": ["integer", "null"]},
                                                         "to_act": {"type": "array"}, "move": {"type": "object"}}}},
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
    "options": {"type": "object"}, "seed": {"type": ["integer", "null"]}, "status": {"type": "string"},
    "version": {"type": "integer"}, "result": {"type": ["object", "null"]},
    "log": {"type": "array", "items": {"type": "object", "required": ["version", "kind", "seat"]}}}}

_TICKET = {"type": "object",
           "required": ["ticket", "status", "game", "players", "options", "match_id", "seat", "token"],
           "properties": {"ticket": {"type": "string"},
                          "status": {"enum": ["waiting", "matched", "cancelled"]},
                          "game": {"type": "string"}, "players": {"type": "integer"}, "options": {"type": "object"},
                          "match_id": {"type": ["string", "null"]}, "seat": {"type": ["integer", "null"]},
                          "token": {"type": ["string", "null"], "description": "the seat token once matched"}}}

_GAMES = {"type": "object", "required": ["games"], "properties": {"games": {"type": "array", "items": {
    "type": "object", "required": ["id", "title", "min_players", "max_players", "simultaneous", "options"],
    "properties": {"id": {"type": "string"}, "title": {"type": "string"}, "min_players": {"type": "integer"},
                   "max_players": {"type": "integer"}, "simultaneous": {"type": "boolean"},
                   "options": {"type": "array"}}}}}}


def _json(schema: str, description: str) -> dict[str, Any]:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}}}


def _errors(*statuses: int) -> dict[str, Any]:
    texts = {400: "malformed request", 401: "missing token", 403: "wrong token", 404: "no such match",
             409: "stale version, not your turn, or match state", 413: "body too large", 422: "illegal move",
             429: "rate limited", 503: "a dependency is down", 426: "not a WebSocket upgrade",
             501: "this server cannot hold WebSockets"}
    return {str(s): _json("Error", texts[s]) for s in statuses}


_COMMON = (400, 429, 503)
_MATCH_ID = {"name": "match_id", "in": "path", "required": True, "schema": {"type": "string"}}
_INCLUDE = {"name": "include", "in": "query", "required": False, "schema": {"enum": ["legal_moves"]},
            "description": "legal_moves: add the caller's legal moves to the response (one request fewer per turn)"}
_TICKET_ID = {"name": "ticket", "in": "path", "required": True, "schema": {"type": "string"}}
_AUTH: list[dict[str, list[str]]] = [{"bearer": []}]


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


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def document() -> dict[str, Any]:
    create = {"type": "object", "required": ["game", "players"], "additionalProperties": False, "properties": {
        "game": {"type": "string"}, "players": {"type": "integer"}, "options": {"type": "object"},
        "seed": {"type": "integer", "minimum": 0},
        "seats": {"type": "array", "items": {"type": "object", "properties": {
            "kind": {"enum": ["human", "bot"]}, "level": {"enum": ["easy", "normal", "hard"]}}}},
        "join": {"type": "boolean", "description": "take seat 0 at once; the response carries its token"},
        "clock": {"type": "object", "description": "seat clocks (default none): {mode: per_move, seconds} | "
                                                   "{mode: fischer, base_s, increment_s} | {mode: correspondence, "
                                                   "hours}, plus on_timeout: bot (default) | forfeit",
                  "properties": {"mode": {"enum": ["none", "per_move", "fischer", "correspondence"]},
                                 "on_timeout": {"enum": ["bot", "forfeit"]}, "seconds": {"type": "number"},
                                 "base_s": {"type": "number"}, "increment_s": {"type": "number"},
                                 "hours": {"type": "number"}}},
        "takeover_level": {"enum": ["easy", "normal", "hard"],
                           "description": "the bot that plays a seat after a timeout or a leave (default normal)"}}}
    move = {"type": "object", "required": ["move", "version"], "additionalProperties": False, "properties": {
        "move": {"type": "object", "required": ["type"]}, "version": {"type": "integer"}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Meeple REST API", "version": "1.0.0",
                 "description": "Play tabletop games against people and bots. See docs/api.md."},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "the seat token returned once by create/join"}},
            "schemas": {"Error": _ERROR, "Seat": _SEAT, "Match": _MATCH, "Events": _EVENTS, "LegalMoves": _LEGAL,
                        "Replay": _REPLAY, "Games": _GAMES, "Ticket": _TICKET,
                        "Clock": _CLOCK, "Outcome": _OUTCOME,
                        "Hint": {"type": "object", "required": ["version", "seat", "move"], "properties": {
                            "version": {"type": "integer"}, "seat": {"type": "integer"},
                            "move": {"type": "object", "required": ["type"]}}}},
        },
        "paths": {
            "/v1/games": {"get": {"summary": "The game catalogue", "responses": {
                "200": _json("Games", "games"), **_errors(429, 503)}}},
            "/v1/matches": {"post": {"summary": "Create a match", "requestBody": _body(create), "responses": {
                "201": _json("Match", "created"), **_errors(*_COMMON, 413)}}},
            "/v1/matches/{match_id}": {"get": {
                "summary": "Status and the caller's view", "parameters": [_MATCH_ID, _INCLUDE],
                "security": [{}, *_AUTH],
                "responses": {"200": _json("Match", "status"), **_errors(401, 403, 404, *_COMMON)}}},
            "/v1/matches/{match_id}/join": {"post": {
                "summary": "Take a free seat (the token is shown once)", "parameters": [_MATCH_ID],
                "requestBody": {"content": {"application/json": {"schema": {
                    "type": "object", "additionalProperties": False, "properties": {"seat": {"type": "integer"}}}}}},
                "responses": {"200": _json("Match", "joined"), **_errors(404, 409, *_COMMON)}}},
            "/v1/matches/{match_id}/legal-moves": {"get": {
                "summary": "The caller's legal moves", "parameters": [_MATCH_ID], "security": _AUTH,
                "responses": {"200": _json("LegalMoves", "moves"), **_errors(401, 403, 404, *_COMMON)}}},
            "/v1/matches/{match_id}/hint": {"get": {
                "summary": "The bot's suggested move for the caller's own seat", "parameters": [_MATCH_ID],
                "security": _AUTH, "responses": {"200": _json("Hint", "a legal move"),
                                                 **_errors(401, 403, 404, 409, *_COMMON)}}},
            "/v1/matches/{match_id}/moves": {"post": {
                "summary": "Submit a move", "parameters": [_MATCH_ID, _INCLUDE, {
                    "name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string"}}],
                "security": _AUTH, "requestBody": _body(move),
                "responses": {"200": _json("Match", "applied"),
                              **_errors(401, 403, 404, 409, 413, 422, *_COMMON)}}},
            "/v1/matches/{match_id}/events": {"get": {
                "summary": "Long-poll for what happened after a version", "parameters": [
                    _MATCH_ID, _INCLUDE, {"name": "after", "in": "query", "schema": {"type": "integer"}},
                    {"name": "wait", "in": "query", "schema": {"type": "integer", "maximum": 30}},
                    {"name": "until", "in": "query", "schema": {"enum": ["change", "turn"], "default": "change"},
                     "description": "change: answer at the first new version; turn (a seat token is required): "
                                    "sleep through other seats' moves and answer once the caller must act or "
                                    "the match is finished (all events since `after` included)"}],
                "security": [{}, *_AUTH], "description": _WAITING,
                "responses": {"200": _json("Events", "events"), **_errors(401, 403, 404, *_COMMON)}}},
            "/v1/matches/{match_id}/events/stream": {"get": {
                "summary": "Server-Sent Events: one 'update' event (an Events document) per version",
                "parameters": [_MATCH_ID, {"name": "after", "in": "query", "schema": {"type": "integer"},
                                           "description": "resume after this version (default: the "
                                                          "Last-Event-ID header, else the current version)"},
                               {"name": "Last-Event-ID", "in": "header", "required": False,
                                "schema": {"type": "integer"}}],
                "security": [{}, *_AUTH], "description": _WAITING,
                "responses": {"200": {"description": "text/event-stream",
                                      "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                              **_errors(401, 403, 404, *_COMMON)}}},
            "/v1/matches/{match_id}/ws": {"get": {
                "summary": "WebSocket: the seat's events pushed, moves taken (one socket per match)",
                "parameters": [_MATCH_ID], "security": [{}, *_AUTH], "description": _WEBSOCKET,
                "responses": {"101": {"description": "switching to WebSocket (RFC 6455)"},
                              **_errors(401, 403, 404, 426, 501, *_COMMON)}}},
            "/v1/matches/{match_id}/replay": {"get": {
                "summary": "The move log; the seed once the match is over", "parameters": [_MATCH_ID],
                "responses": {"200": _json("Replay", "log"), **_errors(401, 403, 404, *_COMMON)}}},
            "/v1/matches/{match_id}/leave": {"post": {
                "summary": "Leave the match (a running one: a bot takes the seat for good)", "parameters": [_MATCH_ID],
                "security": _AUTH,
                "responses": {"200": _json("Match", "left"), **_errors(401, 403, 404, 409, *_COMMON)}}},
            "/v1/matches/{match_id}/seats/{seat}/reclaim": {"post": {
                "summary": "Take your seat back from the bot that played it since your clock ran out",
                "parameters": [_MATCH_ID, {"name": "seat", "in": "path", "required": True,
                                           "schema": {"type": "integer"}}],
                "security": _AUTH,
                "responses": {"200": _json("Match", "reclaimed (or already yours)"),
                              **_errors(401, 403, 404, 409, *_COMMON)}}},
            "/v1/matches/{match_id}/rematch": {"post": {
                "summary": "The next match with the same seats: each human takes theirs (and a new token) here",
                "parameters": [_MATCH_ID], "security": _AUTH,
                "responses": {"200": _json("Match", "your seat in the rematch, with its token"),
                              **_errors(401, 403, 404, 409, *_COMMON)}}},
            "/v1/matchmaking": {"post": {
                "summary": "Queue for a game; humans are grouped as they arrive", "requestBody": _body({
                    "type": "object", "required": ["game", "players"], "additionalProperties": False,
                    "properties": {"game": {"type": "string"}, "players": {"type": "integer"},
                                   "options": {"type": "object"}}}),
                "responses": {"201": _json("Ticket", "queued or matched at once"), **_errors(*_COMMON, 413)}}},
            "/v1/matchmaking/{ticket}": {
                "get": {"summary": "Poll a ticket (the seat token appears once matched)", "parameters": [
                    _TICKET_ID, {"name": "wait", "in": "query", "schema": {"type": "integer", "maximum": 30},
                                 "description": "long-poll: answer once the ticket is matched or cancelled"}],
                        "description": _WAITING,
                        "responses": {"200": _json("Ticket", "ticket"), **_errors(404, *_COMMON)}},
                "delete": {"summary": "Leave the queue", "parameters": [_TICKET_ID],
                           "responses": {"200": _json("Ticket", "cancelled"), **_errors(404, 409, *_COMMON)}}},
            "/healthz": {"get": {"summary": "Liveness", "responses": {"200": {"description": "alive"}}}},
            "/readyz": {"get": {"summary": "Readiness (Redis and rules service)", "responses": {
                "200": {"description": "ready"}, **_errors(503)}}},
            "/metrics": {"get": {"summary": "Prometheus metrics", "responses": {"200": {"description": "text"}}}},
            "/v1/openapi.json": {"get": {"summary": "This document",
                                         "responses": {"200": {"description": "OpenAPI 3.1"}}}},
            "/docs": {"get": {"summary": "Interactive docs (served locally)",
                              "responses": {"200": {"description": "HTML"}}}},
        },
    }
