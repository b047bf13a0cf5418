"""Why a request is refused: a code for code, a message for people, and a kind — never an HTTP status.

Every door reports a refusal the same way. The gateway turns a kind into its HTTP status with one table
(``services/gateway/errors.py``); the WebSocket puts that status in its ``reply``; the workers read the kind
(``UNAVAILABLE``: try again later). Every code the server itself uses is in :data:`CATALOG` with its kind and
what it means, which is where docs/api.md's error table and the OpenAPI document take them from; a test
checks that every ``DomainError`` built in the code names a catalogued code of its kind. Games name their own
codes for illegal moves (``card_not_in_hand``, ...), which the rules service passes on as ``ILLEGAL`` (or
``CONFLICT`` when the move came too late).
"""

from __future__ import annotations

import enum


class Kind(enum.Enum):
    MALFORMED = "malformed"              # can never succeed as sent
    UNAUTHENTICATED = "unauthenticated"  # no usable credential
    FORBIDDEN = "forbidden"              # a valid credential, but not for this
    NOT_FOUND = "not_found"              # unknown, expired, or not the caller's to see
    CONFLICT = "conflict"                # the caller's picture of the match is out of date
    TOO_LARGE = "too_large"
    UNSUPPORTED_MEDIA = "unsupported_media"
    ILLEGAL = "illegal"                  # well formed, but not allowed in this state
    UPGRADE_REQUIRED = "upgrade_required"
    LIMITED = "limited"                  # too many: rate limits, quotas, caps on waiting
    INTERNAL = "internal"                # our bug; nothing was changed
    NOT_SUPPORTED = "not_supported"      # this server cannot do that
    DEPENDENCY_FAILED = "dependency_failed"  # a dependency answered something unexpected
    UNAVAILABLE = "unavailable"          # a dependency is down or full: retry later, the match is intact


class DomainError(Exception):
    """A refusal. ``retry_after``: seconds after which trying again may succeed (rate limits, outages)."""

    def __init__(self, kind: Kind, code: str, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.kind, self.code, self.message, self.retry_after = kind, code, message, retry_after

    def doc(self) -> dict[str, dict[str, str]]:
        """The one error shape of the API."""
        return {"error": {"code": self.code, "message": self.message}}


K = Kind
#: Every code the server raises itself, with its kind and meaning (games add their own ILLEGAL codes).
CATALOG: dict[tuple[Kind, str], str] = {
    # malformed
    (K.MALFORMED, "malformed_json"): "the body is not a JSON object",
    (K.MALFORMED, "too_deep"): "the body nests deeper than 32 levels",
    (K.MALFORMED, "unknown_field"): "a field the call does not take",
    (K.MALFORMED, "missing_field"): "a required field is missing",
    (K.MALFORMED, "wrong_type"): "a field has the wrong type or is out of range",
    (K.MALFORMED, "malformed_move"): "the move is not a move of this game",
    (K.MALFORMED, "unknown_game"): "no such game in the catalogue",
    (K.MALFORMED, "invalid_options"): "options or player count the game does not take",
    (K.MALFORMED, "bad_seats"): "the seats list is wrong (kinds, levels, players)",
    (K.MALFORMED, "bad_clock"): "the clock settings are wrong",
    (K.MALFORMED, "bad_parameter"): "a query parameter is wrong",
    (K.MALFORMED, "no_such_seat"): "the match has no such seat",
    (K.MALFORMED, "bad_idempotency_key"): "Idempotency-Key must be 1 to 128 characters",
    (K.MALFORMED, "malformed_request"): "rejected by the HTTP layer (a request line, a header, a chunked body)",
    (K.MALFORMED, "bad_handshake"): "a WebSocket upgrade without Sec-WebSocket-Key or version 13",
    (K.MALFORMED, "bad_player"): "a player id that is not 1-64 of letters, digits and . _ : @ -",
    (K.MALFORMED, "player_needs_api_key"): "a player id sent without an API key",
    (K.MALFORMED, "bad_party"): "a matchmaking party that is empty, larger than the match, names a player twice, "
                                "comes with 'player', or has a member name that is not 1-32 characters without "
                                "control characters",
    (K.MALFORMED, "bad_webhook"): "a webhook URL or event list that is wrong",
    (K.MALFORMED, "webhook_address_refused"): "a webhook URL whose host is (or resolves to) a non-public address",
    (K.MALFORMED, "webhook_unresolvable"): "a webhook URL whose host does not resolve",
    (K.MALFORMED, "bad_message"): "a WebSocket message of an unknown type",
    (K.MALFORMED, "bad_tournament"): "tournament settings that are wrong (the message names the field)",
    (K.MALFORMED, "bad_season"): "a season's name, window, policy or decay that is wrong",
    (K.MALFORMED, "bad_chat"): "a chat message that is empty, over 200 characters, holds control characters, or "
                               "names no preset of the game (or both text and a preset)",
    (K.MALFORMED, "bad_min_matches"): "min_matches is not a whole number from 0 to 10000",
    # unauthenticated
    (K.UNAUTHENTICATED, "missing_token"): "no credential: this call needs a seat token (or the match's tenant's "
                                          "key, where it reads); with anonymous access off, a read of a match or a "
                                          "ticket without any credential",
    (K.UNAUTHENTICATED, "bad_authorization"): "an Authorization header that is not 'Bearer <token>'",
    (K.UNAUTHENTICATED, "wrong_token"): "a seat token that holds no seat in this match (unknown, revoked, or "
                                        "another match's); a watch token that is unknown, or used to act",
    (K.UNAUTHENTICATED, "watch_token_expired"): "a watch token past its expires_at",
    (K.UNAUTHENTICATED, "watch_token_revoked"): "a watch token its tenant revoked",
    (K.UNAUTHENTICATED, "invalid_api_key"): "an API key that is unknown, malformed or revoked",
    (K.UNAUTHENTICATED, "api_key_required"): "no API key where one is needed (backends' calls; creating, "
                                             "joining or queueing without one, or reading a ticket with only a "
                                             "seat token, when anonymous access is off)",
    # forbidden
    (K.FORBIDDEN, "not_your_seat"): "the token is valid but holds another seat",
    (K.FORBIDDEN, "chat_spectators_off"): "a spectator posted to a match created without spectator_chat",
    # not found
    (K.NOT_FOUND, "match_not_found"): "unknown or expired match, or one the caller may not see",
    (K.NOT_FOUND, "ticket_not_found"): "unknown or expired ticket, or one the caller may not see",
    (K.NOT_FOUND, "webhook_not_found"): "no such webhook",
    (K.NOT_FOUND, "watch_token_not_found"): "no such watch token, or another tenant's",
    (K.NOT_FOUND, "tournament_not_found"): "unknown or expired tournament, or another tenant's",
    (K.NOT_FOUND, "player_not_registered"): "the player is not registered in the tournament",
    (K.NOT_FOUND, "season_not_found"): "no season of that name for this game",
    (K.NOT_FOUND, "no_live_season"): "the board `current` was asked for and no season of the game is live",
    (K.NOT_FOUND, "player_not_ranked"): "the player is not on the board (no rated match of the game on it)",
    (K.NOT_FOUND, "game_not_found"): "no such game in the catalogue (GET /v1/games/{game}, a leaderboard's or a "
                                     "season's {game})",
    (K.NOT_FOUND, "chat_message_not_found"): "the match has no chat message with that id",
    (K.NOT_FOUND, "not_found"): "no such path",
    # conflict
    (K.CONFLICT, "stale_version"): "the match is past the version the request was decided on",
    (K.CONFLICT, "not_your_turn"): "the seat has no decision to make now",
    (K.CONFLICT, "match_not_started"): "the match still waits for players",
    (K.CONFLICT, "seat_taken"): "the seat is not free",
    (K.CONFLICT, "match_full"): "every seat is taken",
    (K.CONFLICT, "match_closed"): "the match is over",
    (K.CONFLICT, "seat_under_bot_control"): "a bot plays the seat since a timeout; reclaim it first",
    (K.CONFLICT, "seat_reclaimed"): "the seat's owner plays it again",
    (K.CONFLICT, "seat_forfeited"): "the seat forfeited; it cannot be reclaimed",
    (K.CONFLICT, "match_not_finished"): "only a finished match can do that",
    (K.CONFLICT, "ticket_matched"): "the ticket already has a match",
    (K.CONFLICT, "busy"): "the match changed too often while the server retried; retry",
    (K.CONFLICT, "player_seated"): "that player already sits in this match",
    (K.CONFLICT, "webhook_limit"): "the tenant holds the most webhooks it may",
    (K.CONFLICT, "idempotency_key_in_use"): "a request with this Idempotency-Key is still being answered; retry",
    (K.CONFLICT, "registration_closed"): "the tournament takes no registrations now (Swiss: once it started; "
                                         "arena: once it ended)",
    (K.CONFLICT, "tournament_full"): "the tournament has max_players registered",
    (K.CONFLICT, "tournament_over"): "the tournament is finished or cancelled",
    (K.CONFLICT, "season_exists"): "a season of that name exists for this game",
    (K.CONFLICT, "season_overlap"): "the season's window overlaps another season of the game",
    (K.CONFLICT, "season_limit"): "the game has the most seasons it may (delete an old one)",
    (K.CONFLICT, "season_started"): "a live season's start cannot move",
    (K.CONFLICT, "season_over"): "the season ended: its board is frozen",
    (K.CONFLICT, "chat_full"): "the match holds the most chat messages it may (MEEPLE_CHAT_MAX_MESSAGES)",
    (K.CONFLICT, "chat_closed"): "the match finished longer ago than MEEPLE_CHAT_AFTER_FINISH_S: its chat is closed",
    (K.CONFLICT, "season_live"): "a live (or ending) season cannot be deleted",
    # other client errors
    (K.TOO_LARGE, "body_too_large"): "the body is over MEEPLE_MAX_BODY_BYTES",
    (K.UNSUPPORTED_MEDIA, "unsupported_media_type"): "a non-empty body not sent as application/json, "
                                                     "or sent compressed (Content-Encoding)",
    (K.ILLEGAL, "illegal_move"): "illegal in this state (the game names most refusals itself)",
    (K.ILLEGAL, "idempotency_key_reused"): "the Idempotency-Key was used with another request",
    (K.UPGRADE_REQUIRED, "upgrade_required"): "/ws asked for without Upgrade: websocket",
    (K.LIMITED, "rate_limited"): "more requests a minute than the caller's limit",
    (K.LIMITED, "quota_exceeded"): "a per-client or per-tenant quota is reached (the message names it)",
    (K.LIMITED, "hint_limited"): "too many hints for this seat or tenant",
    (K.LIMITED, "too_many_waiters"): "too many waiting requests of this client",
    (K.LIMITED, "chat_rate_limited"): "more chat messages than MEEPLE_CHAT_RATE per MEEPLE_CHAT_RATE_WINDOW_S from "
                                      "this seat (or spectator)",
    # server side
    (K.INTERNAL, "internal_error"): "a bug on our side (logged); nothing was changed",
    (K.INTERNAL, "corrupt_state"): "the rules service rejected a stored state",
    (K.NOT_SUPPORTED, "websocket_unsupported"): "this gateway process cannot hold WebSockets",
    (K.DEPENDENCY_FAILED, "rules_error"): "the rules service failed unexpectedly; retry",
    (K.UNAVAILABLE, "rules_unavailable"): "the rules service is unavailable",
    (K.UNAVAILABLE, "store_unavailable"): "the match store is unavailable (or failing over)",
    (K.UNAVAILABLE, "store_full"): "the store is full: no new matches or tickets for now",
    (K.UNAVAILABLE, "hint_unavailable"): "no bot worker answered the hint in time",
    (K.UNAVAILABLE, "too_many_waiters"): "this gateway process holds the most waiting requests it may",
    (K.UNAVAILABLE, "not_ready"): "a dependency of this process is down",
}


def not_found(match_id: str) -> DomainError:
    return DomainError(Kind.NOT_FOUND, "match_not_found", f"no match {match_id!r} (it may have expired)")


def busy() -> DomainError:
    return DomainError(Kind.CONFLICT, "busy", "the match changed too often; retry")
