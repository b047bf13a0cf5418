"""The ``meeple`` command: one entry point for every process and tool of the project."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any


def _serve_rules(args: argparse.Namespace) -> int:
    from services.rules import server

    return server.run(args)


def _add_serve(sub: Any) -> None:
    serve = sub.add_parser("serve", help="run one service process")
    kinds = serve.add_subparsers(dest="service", required=True)
    from services.rules import server

    rules = kinds.add_parser("rules", help="the stateless gRPC rules service")
    server.add_arguments(rules)
    rules.set_defaults(func=_serve_rules)
    for name, module in (("gateway", "services.gateway.serve"), ("bots", "services.bots.worker"),
                         ("timekeeper", "services.timekeeper.keeper"), ("webhooks", "services.webhooks.worker")):
        _optional(kinds, name, module)


def _optional(sub: Any, name: str, module: str) -> None:
    """Subcommand ``name`` implemented in ``module``, which adds itself with ``add_parser(sub)``.

    Skipped while the module does not exist, so each process's code can land on its own.
    """
    import importlib

    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            return
        raise
    mod.add_parser(sub)


def _add_games(sub: Any) -> None:
    def run(_: argparse.Namespace) -> int:
        import orjson

        from services.rules.games import GAMES

        print(orjson.dumps([g.catalogue() for g in GAMES.values()], option=orjson.OPT_INDENT_2).decode())
        return 0

    sub.add_parser("games", help="print the game catalogue as JSON").set_defaults(func=run)


BUILDERS: tuple[Callable[[Any], None], ...] = (_add_serve, _add_games)
#: Tools, named rather than imported: the product's packages import no tool (the import-linter contracts in
#: pyproject.toml), and an install without them (the deploy image) has no such subcommand.
OPTIONAL: tuple[tuple[str, str], ...] = (
    ("run", "tooling.stack"),
    ("bench", "tooling.benches"),
    ("arena", "ai.command"),
    ("loadtest", "loadtests.runner"),
    ("play", "meeple_client.tui"),  # the SDK's terminal client (clients/python), when installed
    ("keys", "services.keys"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="meeple", description="Meeple game server: services and tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    for build in BUILDERS:
        build(sub)
    for name, module in OPTIONAL:
        _optional(sub, name, module)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["play"]:  # a player's terminal: straight to the client, without loading every server command
        try:
            from meeple_client import tui
        except ModuleNotFoundError:
            pass  # no SDK installed: the full parser says so
        else:
            return tui.main(argv[1:], prog="meeple play")
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
