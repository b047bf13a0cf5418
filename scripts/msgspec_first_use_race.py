"""msgspec builds a struct type's information on its first use; two threads doing that at once can crash the
process (SIGSEGV, msgspec 0.22). This shows it without Meeple: it makes ``--types`` fresh struct types (string
annotations, as ``services/contract/models.py`` has) and has ``--threads`` threads convert into each at once.
With ``--warm`` each type is built first, in one thread, as the gateway now does for its contract
(``services.contract.validation.warm_up``).

    .venv/bin/python -X faulthandler scripts/msgspec_first_use_race.py            # crashed 7 runs in 15 here
    .venv/bin/python -X faulthandler scripts/msgspec_first_use_race.py --warm     # 0 in 11

Exit status 139 (or -11) is the crash; "no crash" is printed otherwise.
"""

from __future__ import annotations

import argparse
import sys
import threading
import types
from typing import Any

import msgspec

SOURCE = '''
from __future__ import annotations
import msgspec
from typing import Annotated, Literal
class Inner(msgspec.Struct, kw_only=True):
    a: Annotated[int, msgspec.Meta(ge=0)] = 0
    b: list[str] | None = None
    c: Literal["x", "y"] = "x"
class Outer(msgspec.Struct, kw_only=True):
    id: str
    inner: list[Inner] = []
    more: dict[str, Inner] = {}
    maybe: Inner | None = None
'''
DOC = {"id": "m", "inner": [{"a": 1, "b": ["q"], "c": "y"}] * 3, "more": {"k": {"a": 2}}, "maybe": {"a": 3}}


def fresh_type(i: int) -> Any:
    module = types.ModuleType(f"race_{i}")
    sys.modules[module.__name__] = module  # string annotations are resolved in the type's module
    exec(SOURCE, module.__dict__)  # our own constant source
    return module.Outer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--types", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--warm", action="store_true", help="build each type's information first, in one thread")
    args = parser.parse_args()
    for i in range(args.types):
        model = fresh_type(i)
        if args.warm:
            msgspec.json.Decoder(model)
        barrier = threading.Barrier(args.threads)

        def convert(model: Any = model, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            for _ in range(3):
                msgspec.convert(DOC, model)

        threads = [threading.Thread(target=convert) for _ in range(args.threads)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    print("no crash")
    return 0


if __name__ == "__main__":
    sys.exit(main())
