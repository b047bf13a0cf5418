"""Build of the compiled hot path (issue 30, docs/engines/compiled.md); everything else is in pyproject.toml.

mypyc compiles the engines (services/rules/games), the random playouts and the ISMCTS search from the same
typed Python that mypy checks, into C extension modules beside the sources (one shared library,
``services/rules/hotpath__mypyc``). The build is optional: without a C compiler, without mypyc, or if the
compilation fails, the install goes on and says so, and the same ``.py`` files run as Python.
``MEEPLE_PURE_PYTHON=1`` at install time skips the compilation; at run time it forces the Python sources.
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
import sysconfig
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

PURE_ENV = "MEEPLE_PURE_PYTHON"
#: One shared library for all compiled modules, so that calls between them are direct C calls.
GROUP = "services.rules.hotpath"
#: The compiled modules. The registry (games/__init__.py) and the seal stay Python: they are not hot.
SOURCES = [
    *sorted(p for p in glob.glob("services/rules/games/**/*.py", recursive=True)
            if p != os.path.join("services", "rules", "games", "__init__.py")),
    "services/rules/playout.py",
    "ai/ismcts.py",
    "ai/policies.py",
]


def say(message: str) -> None:
    # pip hides a build's stdout unless it fails or runs with -v; stderr lines of a successful build too,
    # so the Makefile checks the outcome itself (services.rules.build()) and prints it.
    print(f"meeple build: {message}", file=sys.stderr)


def have_compiler() -> bool:
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]  # CC overrides, as for setuptools
    return shutil.which(cc) is not None


def extensions() -> list[Any]:
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        say(f"{PURE_ENV} is set: not compiling, the engines and the search run as pure Python")
        return []
    if not have_compiler():
        say("no C compiler found: not compiling, the engines and the search run as pure Python")
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        say("mypyc is not installed: not compiling, the engines and the search run as pure Python")
        return []
    try:
        return list(mypycify(SOURCES, group_name=GROUP, opt_level="3", debug_level="0"))
    except (Exception, SystemExit) as exc:  # mypyc exits on a type error; a failed build is not fatal
        say(f"mypyc could not translate the sources ({exc!r}): the engines run as pure Python")
        return []


class OptionalBuildExt(build_ext):
    """``build_ext`` that never fails the install: a failed compilation leaves no extension behind."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # CCompilerError, a missing Python.h, a linker error ...
            self._remove_outputs()
            say(f"compiling failed ({exc}): the engines and the search run as pure Python")

    def _remove_outputs(self) -> None:
        """A shim without its shared library (or the reverse) would not import: remove every output."""
        for ext in self.extensions:
            for path in (self.get_ext_fullpath(ext.name),
                         os.path.join(*ext.name.split(".")) + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")):
                if os.path.exists(path):
                    os.remove(path)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
