"""The API's error contract, derived — never written a second time: every error is ``{"error": {"code",
"message"}}``, and which codes each HTTP status carries comes from the tables the server answers with:

* the match core's catalogue of refusals (``services.core.errors.CATALOG``: each code's kind and meaning) and
  the one table from kind to status (``services.contract.statuses.STATUS``, which the gateway answers with);
* the codes of the requests the HTTP layer answers itself, before a view runs (``HTTP_CODES``: routing, the
  body limit; ``GUNICORN_CODES``: the gunicorn worker's parser);
* the codes a game names for a move that came too late (``services.rule_codes.CONFLICT_CODES``, passed on
  by the rules service as conflicts); illegal moves carry each game's own codes (422).

The OpenAPI document's error responses and docs/api.md's "Errors" table are generated from :data:`CODES`.
What stays here is prose about a status as a whole (:data:`STATUS_MEANING`) and the settings behind some codes
(:data:`DETAILS`); a test holds both to the derived codes.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.core.errors import CATALOG, Kind
from services.rule_codes import CONFLICT_CODES

from .statuses import GUNICORN_CODES, HTTP_CODES, STATUS, TRANSPORT_MEANINGS


@dataclass(frozen=True)
class Code:
    status: int
    code: str
    meaning: str
    #: who answers it: ``core`` (a domain refusal), ``http`` (the HTTP layer, before a view) or ``game``
    source: str


def _derive() -> tuple[Code, ...]:
    found: dict[tuple[int, str], Code] = {}
    for (kind, code), meaning in CATALOG.items():
        found.setdefault((STATUS[kind], code), Code(STATUS[kind], code, meaning, "core"))
    for table in (HTTP_CODES, GUNICORN_CODES):
        for status, code in table.items():
            meaning = TRANSPORT_MEANINGS.get(code) or next(
                c.meaning for c in found.values() if c.code == code)
            found.setdefault((status, code), Code(status, code, meaning, "http"))
    conflict = STATUS[Kind.CONFLICT]
    for code in sorted(CONFLICT_CODES):
        found.setdefault((conflict, code), Code(conflict, code, "the game's own: this decision was made already",
                                                "game"))
    return tuple(sorted(found.values(), key=lambda c: c.status))


#: Every code the server answers, with its status and meaning (a code may have two statuses:
#: ``too_many_waiters`` is 429 for one client and 503 for the whole process).
CODES: tuple[Code, ...] = _derive()
STATUSES: tuple[int, ...] = tuple(sorted({c.status for c in CODES}))

#: Statuses the HTTP server answers to any request, whatever its route, before the app runs (a request line over
#: 4094 bytes, too many or too large headers, a malformed request, an ``Expect`` or a transfer coding it does not
#: take): every operation of the OpenAPI document lists them. 500 is left out: it is a bug wherever it comes from.
HTTP_LAYER: tuple[int, ...] = tuple(sorted(status for status in GUNICORN_CODES if status != 500))

#: Each status in a line, for the OpenAPI document's responses and the docs' table.
STATUS_MEANING: dict[int, str] = {
    400: "the request can never succeed as sent",
    401: "no usable credential (with `WWW-Authenticate: Bearer`)",
    403: "the credential is valid but not for this",
    404: "unknown or expired, or not the caller's to see (another tenant's match or ticket)",
    405: "the path exists, the method does not (`Allow` lists the methods)",
    409: "your picture of the match is out of date, or its state forbids the call",
    413: "the body is over `MEEPLE_MAX_BODY_BYTES` (64 KiB by default), chunked ones too",
    414: "the request line is over 4094 bytes",
    415: "a non-empty body not sent as `Content-Type: application/json`, or sent with a `Content-Encoding`",
    417: "an `Expect` header other than `100-continue`",
    422: "illegal in this state (each game names its refusals: `card_not_in_hand`, `no_common_category`, "
         "`game_over`, ...; `illegal_move` when it names none), or an `Idempotency-Key` reused with another request",
    426: "`/ws` asked for without `Upgrade: websocket`",
    429: "too many requests, a quota reached, or too many waiting requests of this client; retry after "
         "`Retry-After` seconds (the message names the limit)",
    431: "more than 100 header fields, or one over 8190 bytes",
    500: "a bug on our side (logged); the match is not changed",
    501: "a transfer coding other than `chunked` (`gzip`, `deflate`, ...), or a gateway process that cannot hold "
         "WebSockets",
    502: "the rules service failed in an unexpected way; retry",
    503: "a dependency is down or full, or this process holds its most waiting requests; the match is intact, "
         "retry after `Retry-After`",
}

#: The setting behind a code, where a client needs it (docs/api.md "Limits and quotas" has the rest).
DETAILS: dict[str, str] = {
    "rate_limited": "`MEEPLE_RATE_LIMIT_PER_MINUTE` (or a tenant's `rpm`) requests a minute",
    "quota_exceeded": "active matches, bot seats or hard bots per client IP (`MEEPLE_MAX_*_PER_IP`) or tenant",
    "hint_limited": "`MEEPLE_HINTS_PER_SEAT_MINUTE` hints a minute per seat, or the tenant's `hints`",
    "too_many_waiters": "`MEEPLE_WAITERS_PER_CLIENT` waiting requests of this token or address (429), "
                        "`MEEPLE_WAITERS_MAX` of this process (503)",
    "body_too_large": "`MEEPLE_MAX_BODY_BYTES`, 65536 by default",
}


def codes_of(status: int) -> tuple[str, ...]:
    """The codes a response of ``status`` may carry (422 also carries each game's own codes)."""
    return tuple(c.code for c in CODES if c.status == status)


def describe(code: Code) -> str:
    """A code's meaning, with the setting behind it."""
    detail = DETAILS.get(code.code)
    return f"{code.meaning} ({detail})" if detail else code.meaning
