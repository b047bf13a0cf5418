"""What two OpenAPI documents say differently about the same API: operations, parameters, security, response
statuses and the shape of request and response bodies (types, enums, constraints, properties, required)."""

from __future__ import annotations

from typing import Any


def _resolve(doc: dict[str, Any], node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        node = doc["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def shape(doc: dict[str, Any], schema: Any, depth: int = 0) -> dict[str, Any]:
    """A schema reduced to what a client relies on, written the same way whatever its spelling (``type: [x,
    "null"]`` and ``anyOf`` alike)."""
    schema = _resolve(doc, schema)
    if not isinstance(schema, dict):
        return {}
    out: dict[str, Any] = {}
    members = schema.get("anyOf") or schema.get("oneOf")
    if members:
        for member in members:
            for key, value in shape(doc, member, depth).items():
                if key == "types":
                    out["types"] = out.get("types", frozenset()) | value
                else:
                    out.setdefault(key, value)
    t = schema.get("type")
    if t is not None:
        out["types"] = out.get("types", frozenset()) | frozenset(t if isinstance(t, list) else [t])
    if "enum" in schema:
        out["enum"] = tuple(sorted(map(str, schema["enum"])))
    for key in ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern"):
        if key in schema:
            out[key] = schema[key]
    if "properties" in schema and depth < 4:
        out["properties"] = {k: shape(doc, v, depth + 1) for k, v in schema["properties"].items()}
        out["required"] = tuple(sorted(schema.get("required", [])))
    if "items" in schema and depth < 4:
        out["items"] = shape(doc, schema["items"], depth + 1)
    if isinstance(schema.get("additionalProperties"), dict) and depth < 4:
        out["values"] = shape(doc, schema["additionalProperties"], depth + 1)
    return out


def _diff(where: str, old: Any, new: Any, out: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            if key not in new:
                out.append(f"{where}.{key}: removed")
            elif key not in old:
                out.append(f"{where}.{key}: added")
            else:
                _diff(f"{where}.{key}", old[key], new[key], out)
    elif old != new:
        out.append(f"{where}: {_show(old)} -> {_show(new)}")


def _show(value: Any) -> str:
    if isinstance(value, frozenset):
        return "|".join(sorted(value))
    return repr(value)


def _security(op: dict[str, Any]) -> list[str]:
    return sorted("+".join(sorted(req)) or "none" for req in op.get("security", []))


def _params(doc: dict[str, Any], op: dict[str, Any]) -> dict[str, Any]:
    return {f"{p['in']}:{p['name']}": {**shape(doc, p.get("schema", {})), "required": p.get("required", False)}
            for p in op.get("parameters", [])}


def _body(doc: dict[str, Any], part: dict[str, Any] | None) -> dict[str, Any]:
    if not part:
        return {}
    return {media: shape(doc, content.get("schema", {})) for media, content in part.get("content", {}).items()}


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Every difference, one line each: ``METHOD PATH <what>: <old> -> <new>``."""
    out: list[str] = []
    ops = {(method.upper(), path) for doc in (old, new) for path, item in doc["paths"].items() for method in item}
    for method, path in sorted(ops):
        a = old["paths"].get(path, {}).get(method.lower())
        b = new["paths"].get(path, {}).get(method.lower())
        name = f"{method} {path}"
        if a is None or b is None:
            out.append(f"{name}: {'added' if a is None else 'removed'}")
            continue
        if _security(a) != _security(b):
            out.append(f"{name} security: {_security(a)} -> {_security(b)}")
        _diff(f"{name} parameters", _params(old, a), _params(new, b), out)
        _diff(f"{name} request", _body(old, a.get("requestBody")), _body(new, b.get("requestBody")), out)
        if set(a["responses"]) != set(b["responses"]):
            out.append(f"{name} statuses: {sorted(a['responses'])} -> {sorted(b['responses'])}")
        for status in sorted(set(a["responses"]) & set(b["responses"])):
            if not status.startswith("2") and status != "101":
                continue
            _diff(f"{name} {status}", _body(old, a["responses"][status]), _body(new, b["responses"][status]), out)
    return out
