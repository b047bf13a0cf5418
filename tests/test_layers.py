"""The house's layers point one way (issues 27, 48). Which package may import which is declared as import-linter
contracts in pyproject.toml and checked by ``lint-imports`` (``make test``); here is what those contracts cannot
say: the core never speaks HTTP (no status in a raise), nothing builds a fake HTTP request to reach its own code,
every refusal is a catalogued code, the games' import lines name nothing outside their package, and importing the
gateway loads no engine.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.core.errors import CATALOG, DomainError, Kind

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ("services", "ai", "loadtests", "tooling")


def module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def imports_of(path: Path, name: str) -> Iterator[str]:
    """Every module ``path`` (module ``name``) imports, relative imports resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            yield module
            for alias in node.names:  # ``from pkg import module``
                if module_file(f"{module}.{alias.name}") is not None:
                    yield f"{module}.{alias.name}"


def test_the_games_import_nothing_outside_their_package() -> None:
    """The contract "The games import nothing of the project" lists the project's packages; this also catches an
    import of ``services`` or ``services.rules`` themselves (the packages above the games)."""
    games = ROOT / "services" / "rules" / "games"
    found = []
    for path in games.rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found += [f"{name}: {module}" for module in imports_of(path, name)
                  if module.split(".")[0] in PROJECT and not module.startswith("services.rules.games")]
    assert found == []


def test_the_gateway_takes_from_the_store_only_the_match_type() -> None:
    """The store's key layout (keys, channel names, how a wake-up or a token is written) stays behind the store: the
    hub and the views hear events through ``services.core.match.events``. From the store itself the gateway takes only
    the ``Match`` type it annotates with."""
    found = []
    for path in (ROOT / "services" / "gateway").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "services.core.record.store":
                found += [f"{path.name}: {a.name}" for a in node.names if a.name != "Match"]
            elif isinstance(node, ast.ImportFrom) and node.module == "services.core":
                found += [f"{path.name}: {a.name}" for a in node.names if a.name == "store"]
    assert found == []


#: What reads a match's record (``Match.meta``, a ``services.core.meta.MatchMeta``): the core, the workers, the gateway.
RECORD_READERS = ("services/core", "services/bots", "services/timekeeper", "services/webhooks", "services/gateway")


def _is_record(node: ast.expr) -> bool:
    """``meta``, ``<anything>.meta``, its ``<anything>.outcome`` or ``<anything>.clock`` (a ``Clock``), or one of its
    seats or seat clocks (``<anything>.seats[i]``)."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Attribute) and node.value.attr == "seats"
    return (isinstance(node, ast.Name) and node.id == "meta") or (
        isinstance(node, ast.Attribute) and node.attr in ("meta", "outcome", "clock"))


def record_reads_by_key(source: str) -> list[str]:
    """Where ``source`` reads a match's record (or a seat of it) by a string key: ``meta["status"]``,
    ``match.meta.get("tenant")``, ``meta.seats[i]["kind"]``, ``meta.outcome["ended_by"]``, ``meta.clock["on_timeout"]``,
    ``meta.clock.seats[i]["turn"]``, as when the record was a dict."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Subscript) and _is_record(node.value) and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, str)):
            found.append(f"{node.lineno}: [{node.slice.value!r}]")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("get", "pop", "setdefault", "update", "items", "keys")
              and _is_record(node.func.value)):
            found.append(f"{node.lineno}: .{node.func.attr}(...)")
        elif isinstance(node, ast.Dict) and any(
                k is None and _is_record(v) for k, v in zip(node.keys, node.values, strict=True)):
            found.append(f"{node.lineno}: {{**...}}")
    return found


def test_no_core_worker_or_gateway_module_reads_a_match_record_by_key() -> None:
    """Issue 48: ``Match.meta`` is typed (``services/core/meta.py``): its fields are read by name, and a change is a
    ``msgspec.structs.replace``, never a dict's key; so is its seat clock (``meta.clock``, a ``Clock``)."""
    assert record_reads_by_key("meta['status']; m.meta.get('tenant'); x.meta.seats[0]['kind']; {**meta, 'a': 1}; "
                               "meta.outcome['winners']") \
        == ["1: ['status']", "1: .get(...)", "1: ['kind']", "1: {**...}", "1: ['winners']"]  # what it looks for
    assert record_reads_by_key("meta.clock['on_timeout']\nm.meta.clock.get('mode')\nm.meta.clock.seats[0]['turn']\n"
                               "{**match.meta.clock}\nm.meta.clock.items()") \
        == ["1: ['on_timeout']", "2: .get(...)", "3: ['turn']", "4: {**...}", "5: .items(...)"]
    assert record_reads_by_key("meta.status; m.meta.seats[0].kind; doc['status']; clock['seats']; "
                               "meta.clock.seats[0].turn; meta.clock.on_timeout; body['clock']") == []
    found = []
    for folder in RECORD_READERS:
        for path in (ROOT / folder).rglob("*.py"):
            found += [f"{path.relative_to(ROOT)}:{where}" for where in record_reads_by_key(path.read_text())]
    assert found == []


def _raises(path: Path) -> Iterator[ast.Call]:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            yield node.exc


def test_no_domain_module_raises_an_http_status() -> None:
    for path in (ROOT / "services" / "core").rglob("*.py"):
        for call in _raises(path):
            numbers = [a.value for a in ast.walk(call) if isinstance(a, ast.Constant) and isinstance(a.value, int)]
            assert not [n for n in numbers if 400 <= n < 600], f"{path.name}: a raise with an HTTP status"
    assert "status" not in DomainError.__init__.__code__.co_varnames  # an error has a kind, not a status


def test_no_fake_http_request_is_built_anywhere() -> None:
    for path in (ROOT / "services").rglob("*.py"):
        for module in imports_of(path, ".".join(path.relative_to(ROOT).with_suffix("").parts)):
            assert not module.startswith("werkzeug.test"), f"{path}: builds requests with werkzeug.test"
        assert "EnvironBuilder" not in path.read_text() and ".test_client(" not in path.read_text(), path


def refusal_classes() -> set[str]:
    """``DomainError`` and every class of the project's own that subclasses it (``LeaderboardError``, ...)."""
    names = {"DomainError"}
    for path in (ROOT / "services").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(getattr(b, "id", None) in names for b in node.bases):
                names.add(node.name)
    return names


def test_every_refusal_the_server_builds_is_a_catalogued_code_of_its_kind() -> None:
    """docs/api.md and the OpenAPI document list codes from the catalog: a code raised but not catalogued (or
    under another kind) would be a code clients were never told about. Subclasses of ``DomainError`` count."""
    classes = refusal_classes()
    assert {"LeaderboardError", "TournamentError"} <= classes
    seen = 0
    for path in (ROOT / "services").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) in classes
                    and len(node.args) >= 2):
                continue
            kind, code = node.args[0], node.args[1]
            if not (isinstance(kind, ast.Attribute) and isinstance(code, ast.Constant)):
                continue  # a code passed on (the rules service's, a refused webhook address's)
            assert (Kind[kind.attr], code.value) in CATALOG, f"{path.name}: {kind.attr} {code.value!r}"
            seen += 1
    assert seen > 80


@pytest.mark.parametrize("module", ["services.gateway.app", "services.gateway.wsgi", "services.contract.openapi"])
def test_importing_the_gateway_loads_no_engine_and_no_compiled_build_switch(module: str) -> None:
    """The gateway reaches the games only through the rules service: importing it loads no engine module, and not
    ``services.rules`` either, whose import installs the switch between the compiled and the pure-Python engines.
    Run in a fresh interpreter with ``MEEPLE_PURE_PYTHON=1``, where that import would install the switch."""
    probe = (f"import sys, {module}\n"
             "print(sorted(m for m in sys.modules if m.startswith(('services.rules', 'ai.')) or m == 'ai'))\n"
             "print(sorted(type(f).__name__ for f in sys.meta_path if type(f).__name__ == 'SourceFirst'))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True,
                         env={**os.environ, "MEEPLE_PURE_PYTHON": "1"}).stdout.splitlines()
    assert out == ["[]", "[]"], f"{module} loads {out[0]}; import hooks: {out[1]}"
