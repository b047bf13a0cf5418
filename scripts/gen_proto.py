"""Generate the Python gRPC code from proto/ into services/pb (``make proto``).

Run with ``--check`` to fail when the committed code differs from what the .proto files generate (CI).
The generated grpc module imports its sibling absolutely; we rewrite that one line to a relative import
so the package works from any install location.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto" / "meeple" / "v1"
OUT_DIR = ROOT / "services" / "pb"
HEADER = '"""Generated from proto/meeple/v1 by `make proto`. Do not edit."""\n'


def generate(out: Path) -> list[Path]:
    protos = sorted(PROTO_DIR.glob("*.proto"))
    include = str(Path(protoc.__file__).parent / "_proto")
    args = ["protoc", f"-I{PROTO_DIR}", f"-I{include}", f"--python_out={out}", f"--pyi_out={out}",
            f"--grpc_python_out={out}", *map(str, protos)]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    files = sorted(p for p in out.iterdir() if p.suffix in {".py", ".pyi"} and p.name != "__init__.py")
    for path in files:
        text = path.read_text()
        for proto in protos:
            mod = proto.stem + "_pb2"
            text = text.replace(f"import {mod} as ", f"from . import {mod} as ")
        path.write_text(text)
    (out / "__init__.py").write_text(HEADER)
    return [*files, out / "__init__.py"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if services/pb is stale")
    args = parser.parse_args()
    if not args.check:
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        generate(OUT_DIR)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(Path(tmp))
        stale = []
        for path in fresh:
            committed = OUT_DIR / path.name
            new = path.read_text()
            old = committed.read_text() if committed.exists() else ""
            if new != old:
                stale.append(path.name)
                sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                           f"committed/{path.name}", f"generated/{path.name}"))
        if stale:
            print(f"stale generated code: {', '.join(stale)}; run `make proto`", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
