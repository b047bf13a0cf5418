"""The API's error contract: every error is ``{"error": {"code", "message"}}``; each code has a *kind*, and each
kind one HTTP status. The match core raises errors with a code and a kind (never a status); the gateway's one
table from kind to status is :data:`KIND_STATUS`. The OpenAPI document and docs/api.md's "Errors" table are
generated from :data:`KINDS`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    name: str
    status: int
    meaning: str
    codes: tuple[str, ...]


KINDS: tuple[Kind, ...] = (
    Kind("invalid", 400, "the request can never succeed as sent", (
        "malformed_json", "too_deep", "unknown_field", "missing_field", "wrong_type", "malformed_move",
        "unknown_game", "invalid_options", "bad_seats", "bad_clock", "bad_parameter", "no_such_seat",
        "bad_idempotency_key", "malformed_request", "bad_handshake", "bad_player", "player_needs_api_key",
        "bad_webhook", "webhook_address_refused", "webhook_unresolvable", "bad_message")),
    Kind("unauthenticated", 401, "no usable credential (with `WWW-Authenticate: Bearer`)", (
        "missing_token", "bad_authorization", "wrong_token", "invalid_api_key", "api_key_required")),
    Kind("forbidden", 403, "the token is valid but holds another seat", ("not_your_seat", "forbidden")),
    Kind("not_found", 404, "unknown or expired (or another tenant's match, asked with an API key)", (
        "match_not_found", "ticket_not_found", "not_found", "webhook_not_found", "game_not_found")),
    Kind("method_not_allowed", 405, "the path exists, the method does not; `Allow` lists the methods",
         ("method_not_allowed",)),
    Kind("conflict", 409, "your picture of the match is out of date, or the match's state forbids it", (
        "stale_version", "not_your_turn", "already_submitted", "match_not_started", "seat_taken", "match_full",
        "match_closed", "seat_under_bot_control", "seat_reclaimed", "seat_forfeited", "match_not_finished",
        "ticket_matched", "busy", "player_seated", "webhook_limit", "idempotency_key_in_use")),
    Kind("too_large", 413, "the body is over `MEEPLE_MAX_BODY_BYTES` (64 KiB by default), chunked ones too",
         ("body_too_large",)),
    Kind("uri_too_long", 414, "the request line is over 4094 bytes", ("uri_too_long",)),
    Kind("unsupported_media_type", 415, "a non-empty body not sent as `Content-Type: application/json`",
         ("unsupported_media_type",)),
    Kind("expectation_failed", 417, "an `Expect` header other than `100-continue`", ("expectation_failed",)),
    Kind("illegal", 422, "illegal in this state: the game's own codes (`card_not_in_hand`, `game_over`, ...; "
         "`illegal_move` when the game names none), or an `Idempotency-Key` reused with another body",
         ("illegal_move", "idempotency_key_reused")),
    Kind("upgrade_required", 426, "`/ws` asked for without `Upgrade: websocket`", ("upgrade_required",)),
    Kind("limited", 429, "too many requests, a quota reached, or too many waiting requests of this client; "
         "retry after `Retry-After` seconds (the message names the limit)", (
             "rate_limited", "quota_exceeded", "hint_limited", "too_many_waiters")),
    Kind("headers_too_large", 431, "more than 100 header fields, or one over 8190 bytes", ("headers_too_large",)),
    Kind("internal", 500, "a bug on our side (logged); the match is not changed", ("internal_error", "corrupt_state")),
    Kind("not_implemented", 501, "a transfer coding the server does not support, or a gateway that cannot hold "
         "WebSockets", ("not_implemented", "websocket_unsupported")),
    Kind("upstream", 502, "the rules service failed in an unexpected way; retry", ("rules_error",)),
    Kind("unavailable", 503, "a dependency is down, the store is full, no bot worker answered a hint, or this "
         "process holds its most waiting requests; the match is intact, retry after `Retry-After`", (
             "rules_unavailable", "store_unavailable", "store_full", "hint_unavailable", "not_ready",
             "too_many_waiters")),
)

#: The gateway's one table: a domain error's kind -> its HTTP status.
KIND_STATUS: dict[str, int] = {kind.name: kind.status for kind in KINDS}
BY_STATUS: dict[int, Kind] = {kind.status: kind for kind in KINDS}

#: What each 429 code means: the per-minute request quota is ``rate_limited`` (docs/api.md "Limits").
LIMITED_CODES: dict[str, str] = {
    "rate_limited": "`MEEPLE_RATE_LIMIT_PER_MINUTE` (or a tenant's `rpm`) requests a minute",
    "quota_exceeded": "active matches, bot seats or hard bots per client IP or tenant",
    "hint_limited": "hints a minute per seat, or per tenant",
    "too_many_waiters": "`MEEPLE_WAITERS_PER_CLIENT` waiting requests of this token or address",
}


def codes_of(status: int) -> tuple[str, ...]:
    return BY_STATUS[status].codes


class ContractError(Exception):
    """A request the contract refuses: ``code`` (one of :data:`KINDS`' codes) and its ``kind``; no status."""

    def __init__(self, code: str, message: str, kind: str = "invalid") -> None:
        super().__init__(message)
        self.code, self.message, self.kind = code, message, kind

    @property
    def status(self) -> int:
        return KIND_STATUS[self.kind]
