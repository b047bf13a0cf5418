"""The HTTP contract's tables of statuses, without Flask: a domain error's kind -> its status (:data:`STATUS`),
and the codes of the requests the HTTP layer answers itself, before a view runs (:data:`HTTP_CODES`: Flask's
routing and body limit; :data:`GUNICORN_CODES`: the gunicorn worker's parser).

The gateway's ``errors.py`` (Flask, the WebSocket's ``reply``) and ``gunicorn_worker.py`` answer with these
tables, and ``errors.py`` here reads them to list every code of every status in the OpenAPI document and
docs/api.md: what the server answers and what it documents are one table.
"""

from __future__ import annotations

from services.core.errors import Kind

#: Every kind of refusal and its HTTP status.
STATUS: dict[Kind, int] = {
    Kind.MALFORMED: 400, Kind.UNAUTHENTICATED: 401, Kind.FORBIDDEN: 403, Kind.NOT_FOUND: 404, Kind.CONFLICT: 409,
    Kind.TOO_LARGE: 413, Kind.UNSUPPORTED_MEDIA: 415, Kind.ILLEGAL: 422, Kind.UPGRADE_REQUIRED: 426,
    Kind.LIMITED: 429, Kind.INTERNAL: 500, Kind.NOT_SUPPORTED: 501, Kind.DEPENDENCY_FAILED: 502,
    Kind.UNAVAILABLE: 503,
}

#: Werkzeug's own refusals (routing, the body limit) keep their status; these codes go with them.
HTTP_CODES: dict[int, str] = {400: "malformed_request", 404: "not_found", 405: "method_not_allowed",
                              413: "body_too_large", 415: "unsupported_media_type"}

#: Error codes of the requests gunicorn answers itself (before the app), by status.
GUNICORN_CODES: dict[int, str] = {400: "malformed_request", 403: "forbidden", 414: "uri_too_long",
                                  417: "expectation_failed", 431: "headers_too_large", 500: "internal_error",
                                  501: "not_implemented"}

#: What the transport's own codes mean, where the core's catalogue does not say (``services.core.errors``).
TRANSPORT_MEANINGS: dict[str, str] = {
    "method_not_allowed": "the path exists, the method does not; `Allow` lists the methods",
    "forbidden": "a proxy header (`X-Forwarded-*`) from an address not allowed to send one",
    "uri_too_long": "the request line is over 4094 bytes",
    "expectation_failed": "an `Expect` header other than `100-continue`",
    "headers_too_large": "more than 100 header fields, or one over 8190 bytes",
    "not_implemented": "a transfer coding other than `chunked` (`gzip, chunked` too: bodies are read as sent)",
}
