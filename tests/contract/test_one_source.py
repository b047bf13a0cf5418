"""The contract is written once (issue 29): a response field added to ONE model, and nothing else edited by hand,
changes what the server sends, the OpenAPI document it serves, the Python SDK's types and the TypeScript types.

The test works on a copy of the project (the code, the generator, the SDKs and the docs), edits only
``services/contract/models.py`` there (a ``note`` on each replay log entry, the kind of field the play page adds
to log entries), and then, as a developer would:

1. ``scripts/gen_contract.py --check`` (what ``make contract-check`` and ``make test`` run) fails, naming the
   generated files that are now stale: the Python SDK's types and the TypeScript client's document;
2. ``scripts/gen_contract.py`` and ``openapi-typescript`` (what ``make contract`` runs) regenerate them, and the
   field is in the served document (``document_bytes()``: what ``GET /v1/openapi.json`` sends), the SDK's
   ``LogEntry`` TypedDict and the TypeScript ``LogEntry``;
3. an answer serialised through the model carries the field, while the unedited project leaves it out (and, in
   the strict mode the test suite runs the gateways in, refuses it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from services.contract import models as m
from services.contract import validation
from tooling.stack import ROOT

TS = ROOT / "clients" / "typescript"
FIELD = '    note: Annotated[str, meta("a line about this entry, for people")] | UnsetType = UNSET\n'
ENTRY = {"version": 1, "kind": "joined", "seat": 0, "note": "Ann sat down"}


def _copy(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "node_modules", "*.egg-info", "dist", ".pytest_cache")
    for part in ("services", "ai", "scripts", "docs", "clients"):
        shutil.copytree(ROOT / part, dest / part, ignore=ignore)
    (dest / "clients" / "typescript" / "node_modules").symlink_to(TS / "node_modules")
    return dest


def _run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}  # the copy's packages, not the installed project's
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not (TS / "node_modules" / ".bin" / "openapi-typescript").exists(),
                    reason="the TypeScript client's packages are installed by `make ts-install` (make test does)")
def test_a_field_added_to_one_model_reaches_the_server_its_document_and_both_sdks(tmp_path: Path) -> None:
    copy = _copy(tmp_path / "meeple")
    models = copy / "services" / "contract" / "models.py"
    source = models.read_text()
    anchor = "class LogEntry(Response, kw_only=True):\n"
    assert anchor in source
    models.write_text(source.replace(anchor, anchor + FIELD))  # the one edit

    stale = _run(copy, sys.executable, "scripts/gen_contract.py", "--check")
    assert stale.returncode != 0
    for path in ("clients/python/meeple_client/models.py", "clients/typescript/openapi.json"):
        assert path in stale.stderr + stale.stdout, path

    made = _run(copy, sys.executable, "scripts/gen_contract.py")
    assert made.returncode == 0, made.stderr
    typescript = _run(copy / "clients" / "typescript", "node_modules/.bin/openapi-typescript", "openapi.json",
                      "-o", "src/schema.ts")
    assert typescript.returncode == 0, typescript.stderr
    assert _run(copy, sys.executable, "scripts/gen_contract.py", "--check").returncode == 0

    served = _run(copy, sys.executable, "-c", "import sys; from services.contract.openapi import document_bytes; "
                                              "sys.stdout.write(document_bytes().decode())")
    entry = json.loads(served.stdout)["components"]["schemas"]["LogEntry"]
    assert entry["properties"]["note"]["type"] == "string" and "note" not in entry["required"]

    sdk = (copy / "clients" / "python" / "meeple_client" / "models.py").read_text()
    log_entry = sdk.split("class LogEntry(TypedDict):", 1)[1].split("\nclass ", 1)[0]
    assert "    note: NotRequired[str]" in log_entry

    ts = (copy / "clients" / "typescript" / "src" / "schema.ts").read_text()
    ts_entry = ts.split("        LogEntry: {", 1)[1].split("\n        };", 1)[0]
    assert "note?: string;" in ts_entry

    sent = _run(copy, sys.executable, "-c", "import sys; from services.contract import models as m; "
                                            "from services.contract.validation import answer; "
                                            f"sys.stdout.write(answer(m.LogEntry, {ENTRY!r}).decode())")
    assert json.loads(sent.stdout)["note"] == "Ann sat down"


def test_without_the_field_in_the_model_the_server_never_sends_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validation, "STRICT", False)
    assert "note" not in json.loads(validation.answer(m.LogEntry, ENTRY))
    monkeypatch.setattr(validation, "STRICT", True)
    with pytest.raises(validation.Undeclared, match="note"):
        validation.answer(m.LogEntry, ENTRY)
