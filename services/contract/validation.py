"""Requests in, responses out: :func:`parse` a body into its model, :func:`parse_value` an already decoded one (a
WebSocket message), :func:`parse_params` a query string or headers, :func:`answer` a response document through
its model to JSON bytes. A request the contract refuses raises the core's
``DomainError(Kind.MALFORMED, code, message)``, which every door answers alike.

The rules are the API's (docs/api.md "Errors"), the ones ``json_body`` enforced by hand before:

* an empty body reads as ``{}``; anything else must be a JSON object (``malformed_json``);
* nesting deeper than :data:`~services.contract.limits.MAX_JSON_DEPTH` levels is ``too_deep``;
* an integer outside signed 64 bits (:data:`~services.contract.limits.INT_MIN`..``INT_MAX``) anywhere in
  free-form JSON (a move, options) is its field's code (``malformed_move``, ``invalid_options``); the typed
  integer fields have bounds of their own;
* the first unknown field (sorted) is ``unknown_field``; then the first missing one, in declared order,
  ``missing_field``; then, in the body's order, a top-level field of the wrong JSON type ``wrong_type``;
* JSON has one number type: ``2.0`` is the integer ``2`` (as JSON Schema reads it); ``true`` is never a number;
* anything else (a constraint, a nested field) is the error code its field declares (``meta(code=...)`` in
  ``models.py``: the innermost one on the error's path), else ``wrong_type``.

The fast path is one typed decode (msgspec, C); only a body that fails it is decoded again, slowly, to say
precisely what is wrong.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import cache
from typing import Any, Protocol, TypeVar

import msgspec
import orjson
from msgspec import inspect as mi

from services.core.errors import DomainError, Kind

from .limits import INT_MAX, INT_MIN, MAX_JSON_DEPTH

T = TypeVar("T", bound=msgspec.Struct)


def _stored_json(value: Any) -> Any:
    """JSON the core hands over already encoded (``orjson.Fragment``: a view or legal moves read from Redis),
    copied into the answer as it is."""
    if isinstance(value, orjson.Fragment):
        return msgspec.Raw(orjson.dumps(value))
    raise NotImplementedError(f"cannot encode {type(value).__name__}")


_ENCODER = msgspec.json.Encoder(enc_hook=_stored_json)
_PATH = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_TOKEN = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """Is ``value`` nested deeper than ``limit`` levels? Iterative: a hostile body cannot blow the stack."""
    return _out_of_bounds(value, limit) == "depth"


def _out_of_bounds(value: Any, limit: int) -> str | None:
    """"depth" if ``value`` nests deeper than ``limit`` levels, "int" if it holds an integer past signed 64 bits
    (msgspec decodes any size; orjson, which the store and the rules service encode with, stops there), else
    None. Iterative: a hostile body cannot blow the stack."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        elif not isinstance(item, list):
            if type(item) is int and not INT_MIN <= item <= INT_MAX:
                return "int"
            continue
        if depth > limit:
            return "depth"
        stack.extend((child, depth + 1) for child in item)
    return None


def malformed(code: str, message: str) -> DomainError:
    return DomainError(Kind.MALFORMED, code, message)


def dump(doc: Any) -> bytes:
    """A response model (or any JSON-able value, :func:`~services.contract.models.fragment` bytes and the core's
    ``orjson.Fragment`` included) as JSON bytes."""
    return _ENCODER.encode(doc)


#: ``MEEPLE_CONTRACT_STRICT=1`` (the test suite's gateways): a document with a key its model does not declare is
#: refused (500) instead of sent without it, so a field added to the core but not to the contract fails loudly.
STRICT = os.environ.get("MEEPLE_CONTRACT_STRICT", "") == "1"


class Undeclared(ValueError):
    """A response document carries a field its model does not declare (only checked in :data:`STRICT` mode)."""


def answer(model: type[msgspec.Struct] | None, doc: Any) -> bytes:
    """A response document (the core's dict) through its ``model`` to JSON bytes: exactly the model's fields go
    out (a key the model does not declare is left out; one it requires and the document lacks, or of another
    type, is a ``msgspec.ValidationError``: a bug, answered 500). Stored views and legal moves are copied as
    they are (the model types them as free-form JSON), so this costs a walk of the document's small fields."""
    if model is None:
        return _ENCODER.encode(doc)
    if STRICT:
        where = undeclared(mi.type_info(model), doc, "")
        if where is not None:
            raise Undeclared(f"{model.__name__}: the document has {where!r}, which the contract does not declare "
                             "(services/contract/models.py)")
    return _ENCODER.encode(msgspec.convert(doc, model))


def undeclared(t: mi.Type, value: Any, path: str) -> str | None:
    """The path of the first key in ``value`` that the type ``t`` does not declare, if any."""
    while isinstance(t, mi.Metadata):
        t = t.type
    if isinstance(t, mi.UnionType):
        for member in t.types:
            found = undeclared(member, value, path)
            if found is not None:
                return found
        return None
    if isinstance(t, mi.StructType) and isinstance(value, dict):
        fields = {f.encode_name: f.type for f in t.fields}
        for key, item in value.items():
            if key not in fields:
                return f"{path}.{key}".lstrip(".")
            found = undeclared(fields[key], item, f"{path}.{key}")
            if found is not None:
                return found
    elif isinstance(t, mi.ListType | mi.VarTupleType) and isinstance(value, list):
        for i, item in enumerate(value):
            found = undeclared(t.item_type, item, f"{path}[{i}]")
            if found is not None:
                return found
    elif isinstance(t, mi.DictType) and isinstance(value, dict):
        for key, item in value.items():
            found = undeclared(t.value_type, item, f"{path}.{key}")
            if found is not None:
                return found
    return None


class _Plan:
    """What :func:`parse` needs to know about one model, worked out once."""

    def __init__(self, model: type[msgspec.Struct]) -> None:
        self.model = model
        self.decoder = msgspec.json.Decoder(model)
        info = mi.type_info(model)
        assert isinstance(info, mi.StructType)
        self.info = info
        self.names = tuple(f.encode_name for f in info.fields)
        self.required = tuple(f.encode_name for f in info.fields if f.required)
        self.kinds = {f.encode_name: _json_kinds(f.type) for f in info.fields}
        #: fields that hold free-form JSON, whose nesting only a walk can bound (the typed ones are shallow)
        self.free = tuple(f.name for f in info.fields if _holds_any(f.type))


@cache
def _plan(model: type[msgspec.Struct]) -> _Plan:
    return _Plan(model)


def parse(model: type[T], raw: bytes) -> T:
    """The request body ``raw`` as a ``model`` instance, or ``DomainError(MALFORMED, code, message)``."""
    plan = _plan(model)
    raw = raw or b"{}"  # an empty body reads as {}
    try:
        body: T = plan.decoder.decode(raw)  # type: ignore[assignment]
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        return _explain(plan, raw)
    _bound_free(plan, body)
    return body


def parse_value(model: type[T], value: Any) -> T:
    """A decoded JSON value (a WebSocket message's fields) as ``model``: the same checks, codes and messages as
    :func:`parse` gives the same body sent as bytes."""
    plan = _plan(model)
    try:
        body: T = msgspec.convert(value, model)
    except msgspec.ValidationError:
        return _checked(plan, value)  # type: ignore[no-any-return]
    _bound_free(plan, body)
    return body


def _bound_free(plan: _Plan, body: Any) -> None:
    for name in plan.free:
        found = _out_of_bounds(getattr(body, name), MAX_JSON_DEPTH - 1)
        if found == "depth":
            raise _too_deep()
        if found == "int":
            raise _too_big(plan, name)


def _too_deep() -> DomainError:
    return malformed("too_deep", f"the request body nests deeper than {MAX_JSON_DEPTH} levels")


def _too_big(plan: _Plan, name: str) -> DomainError:
    return malformed(_code_on_path(plan.info, [name]) or "wrong_type",
                     f"{name}: integers must be between -2**63 and 2**63-1")


def _explain(plan: _Plan, raw: bytes) -> Any:
    """The slow path: the precise error of a body the typed decode refused (or the body, after ``2.0`` -> ``2``)."""
    try:
        body = msgspec.json.decode(raw)
    except RecursionError:
        raise _too_deep() from None
    except msgspec.DecodeError:
        raise malformed("malformed_json", "the request body is not valid JSON") from None
    return _checked(plan, body)


def _checked(plan: _Plan, body: Any) -> Any:
    if not isinstance(body, dict):
        raise malformed("malformed_json", "the request body must be a JSON object")
    if json_depth_exceeds(body, MAX_JSON_DEPTH):
        raise _too_deep()
    unknown = sorted(set(body) - set(plan.names))
    if unknown:
        allowed = ", ".join(plan.names) or "none"
        raise malformed("unknown_field", f"unknown field {unknown[0]!r}; allowed: {allowed}")
    for name in plan.required:
        if name not in body:
            raise malformed("missing_field", f"field {name!r} is required")
    body = dict(body)
    for name, value in list(body.items()):
        kinds = plan.kinds[name]
        if kinds is None:
            continue
        if isinstance(value, bool) and bool not in kinds:
            raise malformed("wrong_type", f"field {name!r} has the wrong type")
        if isinstance(value, float) and int in kinds and float not in kinds and value.is_integer():
            body[name] = int(value)  # JSON has one number type: 2.0 is the integer 2
        elif not isinstance(value, kinds):
            raise malformed("wrong_type", f"field {name!r} has the wrong type")
    try:
        checked = msgspec.convert(body, plan.model)
    except msgspec.ValidationError as err:
        raise _located(plan.info, str(err)) from None
    _bound_free(plan, checked)
    return checked


def _located(info: mi.StructType, message: str, default: str = "wrong_type") -> DomainError:
    """A validation error as the code its path declares, with a message naming the field."""
    found = _PATH.search(message)
    path = found.group("path") if found else ""
    reason = message[:found.start()] if found else message
    tokens = [m.group(1) if m.group(1) is not None else int(m.group(2)) for m in _TOKEN.finditer(path)]
    code = _code_on_path(info, tokens) or default
    where = path.lstrip(".") or "body"
    return malformed(code, f"{where}: {reason}")


def _code_on_path(info: mi.Type, tokens: list[str | int]) -> str | None:
    """The innermost ``code`` declared on the fields along ``tokens``."""
    code: str | None = None
    current: mi.Type | None = info
    for token in tokens:
        if current is None:
            break
        code = _code_of(current) or code
        current = _unwrap(current)
        if isinstance(current, mi.StructType) and isinstance(token, str):
            field = next((f for f in current.fields if f.encode_name == token), None)
            current = field.type if field is not None else None
        elif isinstance(current, mi.ListType | mi.VarTupleType) and isinstance(token, int):
            current = current.item_type
        elif isinstance(current, mi.DictType):
            current = current.value_type
        else:
            current = None
    if current is not None:
        code = _code_of(current) or code
    return code


def _code_of(t: mi.Type) -> str | None:
    """A code declared on ``t`` itself or on a member of its union (``PlayerId | UnsetType``)."""
    if isinstance(t, mi.Metadata):
        declared = (t.extra or {}).get("code")
        return str(declared) if declared else _code_of(t.type)
    if isinstance(t, mi.UnionType):
        return next((c for c in map(_code_of, t.types) if c), None)
    return None


def _unwrap(t: mi.Type) -> mi.Type:
    """The container type inside metadata and optional unions (the member that is not UNSET or None)."""
    while True:
        if isinstance(t, mi.Metadata):
            t = t.type
        elif isinstance(t, mi.UnionType):
            members = [m for m in t.types if not isinstance(m, mi.NoneType)]  # (inspect leaves UNSET out)
            if len(members) != 1:
                return t
            t = members[0]
        else:
            return t


def _json_kinds(t: mi.Type) -> tuple[type, ...] | None:
    """The Python types of the decoded JSON values a field takes (None: any)."""
    if isinstance(t, mi.Metadata):
        return _json_kinds(t.type)
    if isinstance(t, mi.AnyType | mi.RawType):
        return None
    if isinstance(t, mi.UnionType):
        kinds: list[type] = []
        for member in t.types:
            got = _json_kinds(member)
            if got is None:
                return None
            kinds.extend(got)
        return tuple(kinds)
    simple: list[tuple[type[mi.Type], tuple[type, ...]]] = [
        (mi.BoolType, (bool,)), (mi.IntType, (int,)), (mi.FloatType, (int, float)), (mi.StrType, (str,)),
        (mi.NoneType, (type(None),)), (mi.DictType, (dict,)), (mi.StructType, (dict,)),
        (mi.ListType, (list,)), (mi.VarTupleType, (list,)), (mi.TupleType, (list,))]
    for kind, types in simple:
        if isinstance(t, kind):
            return types
    if isinstance(t, mi.LiteralType):
        return tuple({type(v) for v in t.values})
    return None


def _holds_any(t: mi.Type) -> bool:
    if isinstance(t, mi.Metadata):
        return _holds_any(t.type)
    if isinstance(t, mi.AnyType | mi.RawType):
        return True
    if isinstance(t, mi.UnionType):
        return any(map(_holds_any, t.types))
    if isinstance(t, mi.DictType):
        return _holds_any(t.value_type)
    if isinstance(t, mi.ListType | mi.VarTupleType):
        return _holds_any(t.item_type)
    if isinstance(t, mi.StructType):
        assert not any(_holds_any(f.type) for f in t.fields), "free-form JSON nested in a struct: walk it too"
    return False


def warm_up() -> tuple[type[msgspec.Struct], ...]:
    """Build msgspec's information about every model of the contract now, in this one thread, and return them.

    msgspec (0.22) works out a struct type's information the first time the type is used and is not safe when
    two threads do that for one type at once: a gateway worker whose first requests ran on several threads
    died of a segmentation fault (``convert`` in one answer racing another's). A process that serves from
    threads calls this before it serves; the request models' parse plans are made here too."""
    from . import models

    found = tuple(value for value in vars(models).values()
                  if isinstance(value, type) and issubclass(value, msgspec.Struct) and value is not msgspec.Struct)
    for model in found:
        if issubclass(model, models.Request | models.Params):
            _plan(model)  # its decoder builds the type's information
        else:
            msgspec.json.Decoder(model)  # the type's information, and its fields' types', built and kept by msgspec
    return found


class _Lookup(Protocol):
    """A query string or headers: anything with ``get`` (a dict, Werkzeug's MultiDict, or its Headers, whose
    ``get`` ignores the case of a name)."""

    def get(self, key: str, /) -> str | None: ...


def parse_params(model: type[T], values: Mapping[str, str] | _Lookup) -> T:
    """Query parameters or headers (strings) as ``model``: numbers from their text, the field's own code (or
    ``bad_parameter``) when one is out of range. Only the model's names are looked up (the others are ignored),
    one ``get`` each: reading a request's every header would cost more than the rest of the parse."""
    plan = _plan(model)
    picked = {name: value for name in plan.names if (value := values.get(name)) is not None}
    if not picked:
        return model()  # every parameter left out: the defaults
    try:
        return msgspec.convert(picked, model, strict=False)
    except msgspec.ValidationError as err:
        raise _located(plan.info, str(err), "bad_parameter") from None
