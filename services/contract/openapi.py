"""The OpenAPI 3.1 document, generated from the models (``models.py``), the routes (``routes.py``, each one's
security from the gateway's access table), the error codes (``errors.py``, derived from the core's catalogue and
the gateway's status tables) and the limits (``limits.py``). :func:`document` is what ``GET /v1/openapi.json`` serves;
:func:`document_bytes` the same, encoded once per process."""

from __future__ import annotations

from functools import cache
from typing import Any, Literal, get_args, get_origin

import msgspec

from . import errors as E
from . import limits as L
from . import models as m
from .routes import BODY_ERRORS, COMMON_ERRORS, PLAIN, ROUTES, TAGS, Route

REF = "#/components/schemas/{name}"
#: An error response is the same for every operation that may answer its status: written once, under
#: ``components.responses``, and referred to.
ERROR_REF = "#/components/responses/Error{status}"
TITLE = "Meeple REST API"
VERSION = "1.0.0"

INTRO = f"""Play tabletop games against people and bots over HTTP: create or join a match, read your seat's view,
submit moves at the version you decided on, and follow what happens by long-poll, Server-Sent Events or WebSocket.
The guide for client authors is `docs/api.md`; SDKs for Python and TypeScript live in `clients/`.

**Credentials.** A *seat token* (`Authorization: Bearer <token>`) acts for one seat: create with `join`, join,
a rematch or a matched ticket returns it once. A tenant's *API key* (`X-API-Key: mk_...`, or
`Authorization: Bearer mk_...`) acts for an app's backend. Routes without a lock need neither.

**Errors** are `{{"error": {{"code", "message"}}}}`; each response below lists its codes.
**Limits**: JSON bodies up to {L.MAX_BODY_BYTES // 1024} KiB nested at most {L.MAX_JSON_DEPTH} levels, integers in them
within signed 64 bits (x-limits INT_MIN, INT_MAX); the others are
in each parameter's schema and in `docs/api.md` ("Limits and quotas")."""


def _schemas(models: list[type[Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    refs, components = msgspec.json.schema_components(models, ref_template=REF)
    return list(refs), components


def _parameters(model: type[m.Params] | None, where: str) -> list[dict[str, Any]]:
    if model is None:
        return []
    (ref,), components = _schemas([model])
    schema = components[ref["$ref"].rsplit("/", 1)[1]]
    required = set(schema.get("required", []))
    out = []
    for name, prop in schema["properties"].items():
        prop = dict(prop)
        param: dict[str, Any] = {"name": name, "in": where, "required": where == "path" or name in required}
        description = prop.pop("description", None)
        if description:
            param["description"] = description
        param["schema"] = prop
        out.append(param)
    return out


def _json(ref: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": REF.format(name=ref)}}}}


def _error(status: int) -> dict[str, Any]:
    codes = "; ".join(f"`{c.code}`: {E.describe(c)}" for c in E.CODES if c.status == status)
    text = f"{E.STATUS_MEANING[status]}. Codes: {codes}."
    response = _json("Error", text)
    headers: dict[str, Any] = {}
    if status in (429, 503):
        headers["Retry-After"] = {"description": "seconds to wait before retrying", "schema": {"type": "integer"}}
    if status == 401:
        headers["WWW-Authenticate"] = {"description": "Bearer", "schema": {"type": "string"}}
    if headers:
        response["headers"] = headers
    return response


def body_required(model: type[Any]) -> bool:
    """The gateway reads an empty body as ``{}``, so a body may be left out exactly when ``{}`` is a valid one: when
    the model has no required field (``POST .../join`` with no body joins the first free seat)."""
    return any(field.required for field in msgspec.structs.fields(model))


def _operation(route: Route) -> dict[str, Any]:
    op: dict[str, Any] = {"operationId": route.operation_id, "tags": [route.tag], "summary": route.summary}
    if route.description:
        op["description"] = route.description
    params = (_parameters(route.path_params, "path") + _parameters(route.query, "query")
              + _parameters(route.headers, "header"))
    if route.conditional:
        params.append({"name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string"},
                       "description": "an ETag this call answered before: 304 without a body while it is current"})
    if params:
        op["parameters"] = params
    if route.security:
        op["security"] = route.security
    if route.idempotent:
        op["x-meeple-idempotent"] = "sending it again changes nothing more: safe to retry"
    if route.key_counts:
        op["x-meeple-api-key"] = "optional: a tenant's key counts the request against the tenant's quotas, not the IP's"
    if route.body is not None:
        name = route.body.__name__
        op["requestBody"] = {
            "required": body_required(route.body),
            "description": f"JSON (Content-Type: application/json), uncompressed, at most MEEPLE_MAX_BODY_BYTES "
                           f"({L.MAX_BODY_BYTES} bytes by default), nested at most {L.MAX_JSON_DEPTH} levels deep, "
                           f"integers anywhere in it from {L.INT_MIN} to {L.INT_MAX}; an empty body reads as {{}}",
            "content": {"application/json": {"schema": {"$ref": REF.format(name=name)}}}}
    ok: dict[str, Any] = {"description": route.answer}
    if route.response is not None:
        ok["content"] = {route.media: {"schema": {"$ref": REF.format(name=route.response.__name__)}}}
    elif route.media != "application/json" or route.operation_id == "openapi":
        ok["content"] = {route.media: {"schema": {"type": "string" if route.media != "application/json"
                                                  else "object"}}}
    statuses = set(route.errors) | set(E.HTTP_LAYER)
    if route.operation_id not in PLAIN:
        statuses |= set(COMMON_ERRORS)
    if route.body is not None:
        statuses |= set(BODY_ERRORS)
    errors = {str(s): {"$ref": ERROR_REF.format(status=s)} for s in sorted(statuses)}
    op["responses"] = {str(route.status): ok, **errors}
    if route.conditional:
        etag = {"ETag": {"description": "the answer's version, for If-None-Match", "schema": {"type": "string"}},
                "Cache-Control": {"description": "how long caches may keep it", "schema": {"type": "string"}}}
        ok["headers"] = etag
        op["responses"]["304"] = {"description": "not modified: If-None-Match names the current ETag (no body)",
                                  "headers": etag}
    return op


#: Enums whose order means something (msgspec lists a Literal's values sorted): every ``Literal`` alias of the
#: models, in its declared order (weakest bot first, a match's statuses in the order they come, ...).
ORDERED_ENUMS: tuple[tuple[str, ...], ...] = tuple(
    get_args(alias) for alias in vars(m).values() if get_origin(alias) is Literal)


def _ordered(node: Any) -> Any:
    """``node`` with every enum listed in its meaningful order (:data:`ORDERED_ENUMS`) and typed, and every
    free-form object saying it takes any property (generators read a bare ``type: object`` as "no property")."""
    if isinstance(node, list):
        return [_ordered(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _ordered(value) for key, value in node.items()}
    values = out.get("enum")
    if isinstance(values, list):
        out["enum"] = next((list(order) for order in ORDERED_ENUMS if set(order) == set(values)), values)
        if "type" not in out and values and all(isinstance(v, str) for v in values):
            out = {"type": "string", **out}
    if out.get("type") == "object" and "properties" not in out and "additionalProperties" not in out:
        out["additionalProperties"] = True
    return out


def _components() -> dict[str, Any]:
    models: list[type[Any]] = [m.Error]
    for route in ROUTES:
        models += [t for t in (route.body, route.response) if t is not None]
    _, schemas = _schemas(list(dict.fromkeys(models)))
    return schemas


@cache
def _document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route)
    answered = sorted({int(status) for item in paths.values() for op in item.values() for status in op["responses"]
                       if int(status) >= 400})
    limits = {name: value for name, value in vars(L).items() if name.isupper() and isinstance(value, int | float)}
    return _ordered({
        "openapi": "3.1.0",
        "info": {"title": TITLE, "version": VERSION, "description": INTRO, "x-limits": limits},
        "tags": [{"name": name, "description": text} for name, text in TAGS.items()],
        "components": {
            "securitySchemes": {
                "seatToken": {"type": "http", "scheme": "bearer",
                              "description": "a seat's token, returned once by create (with join), join, rematch "
                                             "or a matched ticket; acts for that seat"},
                "watchToken": {"type": "http", "scheme": "bearer", "bearerFormat": "w_<token id>.<secret>",
                               "description": "a watch link's token, minted by a tenant's key (POST .../watch-tokens):"
                                              " reads the spectator view of the matches it covers, nothing else"},
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key",
                           "description": "a tenant's API key (mk_..., from `meeple keys create`): acts for the "
                                          "tenant (its matches, players and quotas)"},
                "apiKeyBearer": {"type": "http", "scheme": "bearer", "bearerFormat": "mk_<key id>.<secret>",
                                 "description": "the same API key sent as the bearer token "
                                                "(`Authorization: Bearer mk_...`)"}},
            "responses": {f"Error{status}": _error(status) for status in answered},
            "schemas": _components()},
        "paths": paths,
    })


def response_of(doc: dict[str, Any], op: dict[str, Any], status: int) -> dict[str, Any]:
    """An operation's response of ``status`` in ``doc``, its :data:`ERROR_REF` followed (every error response
    is one): what a reader of the document, such as a test checking an answer against it, needs."""
    found: dict[str, Any] = op["responses"][str(status)]
    if "$ref" in found:
        found = doc["components"]["responses"][found["$ref"].rsplit("/", 1)[1]]
    return found


def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document (a fresh copy: callers may not change the cached one)."""
    doc: dict[str, Any] = msgspec.json.decode(document_bytes())
    return doc


@cache
def document_bytes() -> bytes:
    """The document as JSON, what ``GET /v1/openapi.json`` sends (built once per process)."""
    return msgspec.json.encode(_document())
