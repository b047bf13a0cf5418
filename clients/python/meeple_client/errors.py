"""Typed errors: every server error carries its status and the API's error code (docs/api.md, "Errors")."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any


class MeepleError(Exception):
    """Base of everything the SDK raises."""


class TransportError(MeepleError):
    """The server could not be reached (after the safe retries)."""


class TransportUnavailable(TransportError):
    """The server (or a proxy in front of it) does not offer this event transport (a WebSocket upgrade refused
    with 426/501, a stream answered by something else); ``events(transport="auto")`` then tries the next one."""


class ApiError(MeepleError):
    """A ``{"error": {"code", "message"}}`` answer. ``code`` is for code, ``message`` for people.

    ``retry_after``: the seconds the server asked to wait before trying again (its ``Retry-After`` header, a
    socket reply's ``retry_after``), None when the answer carried none."""

    retry_after: float | None = None

    def __init__(self, status: int, code: str, message: str, body: Any = None,
                 retry_after: float | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body
        if retry_after is not None:
            self.retry_after = retry_after


class BadRequest(ApiError):
    """400: the request can never succeed as sent."""


class Unauthorized(ApiError):
    """401: no usable bearer token."""


class Forbidden(ApiError):
    """403: the token holds no seat in this match."""


class NotFound(ApiError):
    """404: unknown or expired match or ticket."""


class Conflict(ApiError):
    """409: the caller's picture of the match is out of date."""


class StaleVersion(Conflict):
    """409 ``stale_version``: the decision was based on an old version; reload and decide again.

    The SDK never rebases a move onto a newer version by itself: the move may no longer make sense.
    """


class NotYourTurn(Conflict):
    """409 ``not_your_turn``."""


class IllegalMove(ApiError):
    """422: the game's own rule codes (``card_not_in_hand``, ``bad_effect`` ...)."""


class RateLimited(ApiError):
    """429 ``rate_limited`` (and every other 429); ``retry_after`` is the server's Retry-After in seconds, 1.0 when
    the answer carried none (a 429 always says to wait)."""

    retry_after: float = 1.0


class Unavailable(ApiError):
    """503: a dependency is down; the match is intact. Raised once the safe retries are spent; ``retry_after`` as
    the server sent it (``too_many_waiters`` 2 s, ``store_full`` 60 s ...), None without one."""


_BY_STATUS: dict[int, type[ApiError]] = {400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound,
                                         409: Conflict, 413: BadRequest, 415: BadRequest, 422: IllegalMove,
                                         429: RateLimited, 503: Unavailable}
_BY_CODE: dict[str, type[ApiError]] = {"stale_version": StaleVersion, "not_your_turn": NotYourTurn}


def error_for(status: int, body: Any, headers: dict[str, str] | None = None) -> ApiError:
    """The typed error of a non-2xx answer (a body that is not the documented shape still gets a code)."""
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict) and isinstance(err.get("code"), str):
        code, message = err["code"], str(err.get("message", ""))
    else:
        code, message = f"http_{status}", str(body)[:200]
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status) or ApiError
    return cls(status, code, message, body, retry_after_of(headers))


def retry_after_of(headers: dict[str, str] | None) -> float | None:
    """The ``Retry-After`` header in seconds (RFC 9110: delay-seconds, or an HTTP date), None if absent or
    unreadable. Header names are matched in any case (httpx and websockets spell them differently)."""
    value = next((v for k, v in (headers or {}).items() if k.lower() == "retry-after"), None)
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
