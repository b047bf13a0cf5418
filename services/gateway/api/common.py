"""Request parsing shared by the blueprints: strict JSON bodies, query parameters, the Idempotency-Key header.

What may be done, and by whom, is the core's business (``services/core``): a view parses, calls the core with
the request's caller (``context.caller``), and returns what the core answers; errors are mapped in one place
(``errors.py``).
"""

from __future__ import annotations

from typing import Any

from flask import request

from services.core.errors import DomainError, Kind

from ..context import gateway

#: Deepest nesting of arrays and objects a JSON body may have (the body itself is level 1). Far above any
#: real move or options document, far below what the JSON encoder refuses (about 255).
MAX_JSON_DEPTH = 32
#: An ``Idempotency-Key`` is 1 to this many characters.
IDEMPOTENCY_KEY_MAX = 128

Fields = dict[str, type | tuple[type, ...]]


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """Is ``value`` nested deeper than ``limit`` levels? Iterative: a hostile body cannot blow the stack."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        elif not isinstance(item, list):
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in item if isinstance(child, dict | list))
    return False


def malformed(code: str, message: str) -> DomainError:
    return DomainError(Kind.MALFORMED, code, message)


def checked(body: Any, allowed: Fields, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """``body`` as a JSON object of the ``allowed`` fields with their types (400 otherwise); a REST body and a
    WebSocket message are checked alike."""
    if not isinstance(body, dict):
        raise malformed("malformed_json", "the request body must be a JSON object")
    if json_depth_exceeds(body, MAX_JSON_DEPTH):
        raise malformed("too_deep", f"the request body nests deeper than {MAX_JSON_DEPTH} levels")
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise malformed("unknown_field", f"unknown field {unknown[0]!r}; allowed: {', '.join(allowed)}")
    for name in required:
        if name not in body:
            raise malformed("missing_field", f"field {name!r} is required")
    for name, value in list(body.items()):
        spec = allowed[name]
        kinds: tuple[type, ...] = spec if isinstance(spec, tuple) else (spec,)
        if isinstance(value, bool) and bool not in kinds:
            raise malformed("wrong_type", f"field {name!r} has the wrong type")
        if isinstance(value, float) and int in kinds and value.is_integer():
            body[name] = int(value)  # JSON has one number type: 2.0 is the integer 2 (as JSON Schema reads it)
        elif not isinstance(value, kinds):
            raise malformed("wrong_type", f"field {name!r} has the wrong type")
    return body


def json_body(allowed: Fields, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The request's JSON object, rejecting unknown fields, missing fields and wrong types (400).

    An empty body reads as ``{}``; a non-empty one must be sent as ``application/json`` (415 otherwise, not a
    silent empty body) and nest at most :data:`MAX_JSON_DEPTH` levels (400 ``too_deep``).
    """
    raw = request.get_data(cache=True)  # read up to one byte past the limit (see ``create_app``)
    limit = gateway().config.max_body_bytes
    if len(raw) > limit:
        raise DomainError(Kind.TOO_LARGE, "body_too_large", f"request body too large (limit {limit} bytes)")
    if not raw:
        body: Any = {}
    else:
        if request.mimetype != "application/json":
            raise DomainError(Kind.UNSUPPORTED_MEDIA, "unsupported_media_type",
                              "send the body as JSON with 'Content-Type: application/json' "
                              f"(got {request.mimetype or 'no Content-Type'!r})")
        body = request.get_json(silent=True, force=True)
        if body is None:
            raise malformed("malformed_json", "the request body is not valid JSON")
    return checked(body, allowed, required)


def idempotency_key() -> str | None:
    """The request's ``Idempotency-Key`` header, if any."""
    return checked_key(request.headers.get("Idempotency-Key"))


def checked_key(key: str | None) -> str | None:
    """An ``Idempotency-Key`` (the header, or a WebSocket message's ``idempotency_key``): 1-128 characters."""
    if key is not None and not 1 <= len(key) <= IDEMPOTENCY_KEY_MAX:
        raise malformed("bad_idempotency_key", f"Idempotency-Key must be 1 to {IDEMPOTENCY_KEY_MAX} characters")
    return key


def wants_legal_moves() -> bool:
    """``?include=legal_moves``: the response also carries the caller's legal moves (saves a request)."""
    include = request.args.get("include", "")
    parts = {part.strip() for part in include.split(",") if part.strip()}
    if parts - {"legal_moves"}:
        raise malformed("bad_parameter", "include takes: legal_moves")
    return "legal_moves" in parts


def int_arg(name: str, default: int, low: int, high: int) -> int:
    """An integer query parameter in [low, high]; 400 ``bad_parameter`` otherwise."""
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise malformed("bad_parameter", f"{name} must be an integer") from None
    if not low <= value <= high:
        raise malformed("bad_parameter", f"{name} must be between {low} and {high}")
    return value
