"""What every view does with the HTTP contract (``services/contract``): read the request with the contract's
models, answer through them.

* :func:`body`, :func:`query`, :func:`headers` parse the request body, the query string and the headers with the
  model the view names, and refuse with the API's codes (400, 413, 415). That each view names the models its
  route declares in ``services/contract/routes.py`` (so the served OpenAPI document and the view cannot
  disagree) is checked by ``tests/contract/test_views.py``, not on every request: the move path is hot.
* :func:`answer` serialises the core's document through the route's response model, with the route's status
  (the route of the endpoint being served: one dict lookup).

What may be done, and by whom, is the core's business (``services/core``): a view parses, calls the core with
the request's caller (``context.caller``), and answers what the core returns; errors are mapped in one place
(``errors.py``).
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from flask import Response, request

from services.contract import models as m
from services.contract.routes import BY_ENDPOINT, Route
from services.contract.validation import answer as encode
from services.contract.validation import malformed, parse, parse_params
from services.core import admission
from services.core.errors import DomainError, Kind

from ..context import caller, core, gateway
from . import ACCESS

B = TypeVar("B", bound=m.Request)
P = TypeVar("P", bound=m.Params)
JSON = "application/json"


def route() -> Route:
    """The contract's route of the endpoint being served."""
    return BY_ENDPOINT[str(request.endpoint)]


def body(model: type[B]) -> B:
    """The request body as ``model``: an empty body reads as ``{}``; a non-empty one must be sent as
    ``application/json``, uncompressed (415, not a silent empty body or compressed bytes read as JSON), and be
    at most ``MEEPLE_MAX_BODY_BYTES`` (413)."""
    raw = request.get_data(cache=True)  # read up to one byte past the limit (see ``create_app``)
    limit = gateway().config.max_body_bytes
    if len(raw) > limit:
        raise DomainError(Kind.TOO_LARGE, "body_too_large", f"request body too large (limit {limit} bytes)")
    if raw and request.mimetype != JSON:
        raise DomainError(Kind.UNSUPPORTED_MEDIA, "unsupported_media_type",
                          "send the body as JSON with 'Content-Type: application/json' "
                          f"(got {request.mimetype or 'no Content-Type'!r})")
    coding = request.headers.get("Content-Encoding", "").strip().lower()
    if raw and coding not in ("", "identity"):  # the body is read as sent: compressed bytes are not JSON
        raise DomainError(Kind.UNSUPPORTED_MEDIA, "unsupported_media_type",
                          f"send the body uncompressed (Content-Encoding {coding!r} is not supported)")
    return parse(model, raw)


def query(model: type[P]) -> P:
    """The query string as ``model`` (400 ``bad_parameter``, or the field's own code)."""
    return parse_params(model, request.args)


def headers(model: type[P]) -> P:
    """The headers the contract declares for this route, as ``model``."""
    return parse_params(model, request.headers)


def wait_s(wait: int) -> int:
    """A long-poll's ``wait`` within the operator's bound (``MEEPLE_LONG_POLL_MAX_S``; the schema states the
    default)."""
    most = gateway().config.long_poll_max_s
    if wait > most:
        raise malformed("bad_parameter", f"wait must be between 0 and {most}")
    return wait


def given(value: Any) -> Any:
    """A field the request may leave out, as the core takes it: None when it is absent."""
    return None if value is msgspec.UNSET else value


def plain(value: Any) -> Any:
    """A parsed nested model (seats, a clock) as the core takes it: plain JSON values, absent fields left out."""
    return None if value is msgspec.UNSET else msgspec.to_builtins(value)


def policy_refusal() -> DomainError | None:
    """The access policy's refusal of this request's caller for the route's call, if it refuses them (asked by the
    error handlers before a request that cannot be read is answered 400, 413 or 415)."""
    endpoint = request.endpoint
    if endpoint is None or endpoint not in ACCESS:
        return None
    return admission.refusal(core(), caller(), ACCESS[endpoint], request.view_args or {})


def answer(doc: dict[str, Any]) -> Response:
    """The core's document through the route's response model, with the route's status."""
    found = route()
    return Response(encode(found.response, doc), status=found.status, mimetype=JSON)
