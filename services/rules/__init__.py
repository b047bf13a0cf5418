"""The rules: the engines (``games/``), the stateless gRPC service (``server.py``), random playouts.

Compiled hot path (issue 30, ``docs/engines/compiled.md``): ``make install`` compiles the engines, the
playouts and the search (``ai/ismcts.py``, ``ai/policies.py``) with mypyc into C extensions that sit beside
their ``.py`` sources, and Python's import system prefers an extension to a source. The ``.py`` files stay
the one source of the rules: without a C compiler nothing is built and the same modules run as Python.

``MEEPLE_PURE_PYTHON=1`` in the environment, before the first import of ``services.rules`` (or ``ai``),
forces the Python sources even where extensions were built: the test suite runs the engine tests both
ways, and ``meeple bench engines`` runs each build in a process of its own.

An extension older than its source (the source was edited, merged or checked out after the build) would run
old rules: then the sources run instead, with a warning, until ``make install`` builds again.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
from collections.abc import Sequence
from types import ModuleType

#: Set to 1 (anything but empty or 0) to run the Python sources of the compiled modules.
PURE_ENV = "MEEPLE_PURE_PYTHON"
#: The packages whose modules may be compiled (see setup.py); the switch applies to their submodules only.
_PREFIXES = ("services.rules.", "ai.")


class SourceFirst(importlib.abc.MetaPathFinder):
    """Finds the ``.py`` source of a module of :data:`_PREFIXES` before any compiled extension beside it."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if path is None or not fullname.startswith(_PREFIXES):
            return None
        leaf = fullname.rpartition(".")[2]
        for base in path:
            stem = os.path.join(base, leaf)
            if os.path.isfile(stem + ".py"):
                return importlib.util.spec_from_file_location(fullname, stem + ".py")
            if os.path.isfile(os.path.join(stem, "__init__.py")):
                return importlib.util.spec_from_file_location(fullname, os.path.join(stem, "__init__.py"),
                                                              submodule_search_locations=[stem])
        return None


def pure_forced() -> bool:
    """True if :data:`PURE_ENV` asks for the Python sources."""
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def build() -> str:
    """``compiled`` or ``python``: what the engines of this process run as (ask after importing them)."""
    from services.rules.games import base

    return "python" if (base.__file__ or "").endswith(".py") else "compiled"


def stale_extensions() -> list[str]:
    """The compiled modules' sources that changed after the build (relative paths).

    Compared with the shared library that holds the compiled code (the per-module stubs beside each
    source are only relinked when their own tiny stub changes).
    """
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        built = os.path.getmtime(os.path.join(root, "services", "rules", "hotpath__mypyc" + suffix))
    except OSError:
        return []
    stale = []
    for folder in ("services/rules", "services/rules/games", "services/rules/games/clash",
                   "services/rules/games/fierce_women", "services/rules/games/sideboards",
                   "services/rules/games/they_who_were_8", "ai"):
        path = os.path.join(root, folder)
        try:
            names = os.listdir(path)
        except OSError:
            continue
        for name in names:
            source = os.path.join(path, name[:-len(suffix)] + ".py")
            if name.endswith(suffix) and os.path.exists(source) and os.path.getmtime(source) > built:
                stale.append(os.path.join(folder, name[:-len(suffix)] + ".py"))
    return sorted(stale)


def _use_sources() -> None:
    if not any(isinstance(f, SourceFirst) for f in sys.meta_path):
        sys.meta_path.insert(0, SourceFirst())


if pure_forced():
    _use_sources()
elif _stale := stale_extensions():
    print(f"meeple: the compiled engines are older than {', '.join(_stale[:3])}"
          f"{' ...' if len(_stale) > 3 else ''}: running the Python sources (`make install` compiles them again)",
          file=sys.stderr)
    _use_sources()
