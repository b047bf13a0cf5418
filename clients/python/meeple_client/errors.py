"""Typed errors: every server error carries its status and the API's error code (docs/api.md, "Errors")."""

from __future__ import annotations

from typing import Any


class MeepleError(Exception):
    """Base of everything the SDK raises."""


class TransportError(MeepleError):
    """The server could not be reached (after the safe retries)."""


class TransportUnavailable(TransportError):
    """The server (or a proxy in front of it) does not offer this event transport (a WebSocket upgrade refused
    with 426/501, a stream answered by something else); ``events(transport="auto")`` then tries the next one."""


class ApiError(MeepleError):
    """A ``{"error": {"code", "message"}}`` answer. ``code`` is for code, ``message`` for people."""

    def __init__(self, status: int, code: str, message: str, body: Any = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body


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
    """429 ``rate_limited``; ``retry_after`` is the server's Retry-After in seconds."""

    retry_after: float = 1.0


class Unavailable(ApiError):
    """503: a dependency is down; the match is intact. Raised once the safe retries are spent."""


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
    exc = cls(status, code, message, body)
    if isinstance(exc, RateLimited) and headers:
        try:
            exc.retry_after = float(headers.get("retry-after", "1"))
        except ValueError:
            exc.retry_after = 1.0
    return exc
