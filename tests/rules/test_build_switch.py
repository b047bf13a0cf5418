"""``MEEPLE_PURE_PYTHON=1`` runs the Python sources of every compiled module, compiled build or not (issue 30)."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson

import services.rules

PROBE = """
import sys
import orjson, services.rules, ai.ismcts, ai.policies, services.rules.playout
from services.rules.games import GAMES
import services.rules.games.clash.match, services.rules.games.sideboards.scoring
mods = [ai.ismcts, ai.policies, services.rules.playout, services.rules.games.clash.match,
        services.rules.games.sideboards.scoring, *(sys.modules[type(g).__module__] for g in GAMES.values())]
print(orjson.dumps({"build": services.rules.build(), "files": [m.__file__ for m in mods]}).decode())
"""


def probe(pure: bool) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != services.rules.PURE_ENV}
    if pure:
        env[services.rules.PURE_ENV] = "1"
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, check=True, capture_output=True, text=True).stdout
    doc: dict[str, object] = orjson.loads(out)
    return doc


def test_the_switch_loads_every_compiled_module_from_its_source() -> None:
    doc = probe(pure=True)
    assert doc["build"] == "python"
    files = doc["files"]
    assert isinstance(files, list) and files and all(f.endswith(".py") for f in files)


def test_without_the_switch_the_install_decides_and_says_which() -> None:
    """Compiled where ``make install`` built the extensions (then every engine module is one), else Python."""
    doc = probe(pure=False)
    files = doc["files"]
    assert isinstance(files, list)
    if doc["build"] == "compiled":
        assert not any(f.endswith(".py") for f in files)
    else:
        assert all(f.endswith(".py") for f in files)
