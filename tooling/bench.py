"""``meeple bench engines``: random playouts per game and player count, on one core, compiled and pure Python.

Each build runs in a process of its own (the compiled one as installed, the Python one with
``MEEPLE_PURE_PYTHON=1``), the two taking turns game by game and player count by player count in the same run,
so a drift of the machine's speed hits both alike; ``x`` is the compiled build's games/s over the Python one's.
Without a compiled build (no C compiler at install) only the Python figures are printed.

Figures: full games per CPU second and moves per CPU second on the search's fast path (clone once, then
``legal_moves`` + ``apply_in_place``; ``services.rules.playout.timed_playouts``), the largest number of legal
moves seen in one position during those playouts (``max_branching``: what a search must be ready to expand),
and the mean cost in microseconds of ``legal_moves``, of ``apply_in_place`` and of the immutable ``apply`` the
rules service uses.
For games whose final scoring is a real computation and that expose it as ``score_seat(state, seat)``
(Sideboards: exact pattern packing), ``scoring_us`` is the mean cost of scoring one seat of a finished
game from scratch.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from typing import Any

import orjson

import services.rules
from services.rules.games import GAMES, get_game
from services.rules.games.base import Game
from services.rules.playout import timed_playouts

#: The configurations the issues' speed targets name (Fierce Women with action cards, CLASH single
#: games); override with --option GAME:KEY=JSON.
TARGET_OPTIONS: dict[str, dict[str, Any]] = {
    "fierce-women": {"action_cards": True},
    "clash": {"match": "single"},
}


def playout_rate(game: Game[Any], players: int, options: dict[str, Any], seconds: float) -> dict[str, float]:
    """Games and moves per CPU second of uniformly random playouts (fast path), and the widest position seen."""
    return timed_playouts(game, players, options, seconds)


def call_costs(game: Game[Any], players: int, options: dict[str, Any], seconds: float) -> dict[str, float]:
    """Mean µs of legal_moves, apply_in_place and immutable apply, timed call by call."""
    rng = random.Random(1)
    perf = time.perf_counter
    legal_t = inplace_t = apply_t = 0.0
    calls = 0
    seed = 10_000
    deadline = perf() + seconds
    while perf() < deadline or calls == 0:
        state = game.new_game(players, seed, options)
        seed += 1
        while not game.is_over(state):
            to_act = game.to_act(state)
            seat = to_act[rng.randrange(len(to_act))]
            t0 = perf()
            legal = game.legal_moves(state, seat)
            t1 = perf()
            move = legal[rng.randrange(len(legal))]
            nxt = game.apply(state, seat, move)
            t2 = perf()
            game.apply_in_place(state, seat, move)
            t3 = perf()
            legal_t += t1 - t0
            apply_t += t2 - t1
            inplace_t += t3 - t2
            calls += 1
            state = nxt if calls % 2 else state
    return {"legal_us": legal_t / calls * 1e6, "apply_in_place_us": inplace_t / calls * 1e6,
            "apply_us": apply_t / calls * 1e6}


def scoring_cost(game: Game[Any], players: int, options: dict[str, Any], seconds: float) -> dict[str, float]:
    """Mean µs of ``game.score_seat`` over the seats of finished random games ({} if the game has none)."""
    score_seat = getattr(game, "score_seat", None)
    if score_seat is None:
        return {}
    rng = random.Random(2)
    finals = []
    for seed in range(20_000, 20_030):
        state = game.new_game(players, seed, options)
        while not game.is_over(state):
            seat = rng.choice(game.to_act(state))
            legal = game.legal_moves(state, seat)
            game.apply_in_place(state, seat, legal[rng.randrange(len(legal))])
        finals.append(state)
    perf = time.perf_counter
    calls = 0
    total = 0.0
    deadline = perf() + seconds
    while perf() < deadline or calls == 0:
        for state in finals:
            for seat in range(game.seat_count(state)):
                t0 = perf()
                score_seat(state, seat)
                total += perf() - t0
                calls += 1
    return {"scoring_us": total / calls * 1e6}


def figures_for(gid: str, players: int, options: dict[str, Any], seconds: float) -> dict[str, Any]:
    """Every figure of one game and player count, in this process (whatever build it runs)."""
    game = get_game(gid)
    figures: dict[str, Any] = dict(playout_rate(game, players, options, seconds))
    figures.update(call_costs(game, players, options, seconds / 2))
    figures.update(scoring_cost(game, players, options, seconds / 4))
    return {k: round(v, 2) for k, v in figures.items()}


BUILDS = ("compiled", "python")


def measure_in(build: str, gid: str, players: int, options: dict[str, Any], seconds: float) -> dict[str, Any]:
    """:func:`figures_for` in a fresh process running ``build`` (``python``: ``MEEPLE_PURE_PYTHON=1``)."""
    env = dict(os.environ)
    env.pop(services.rules.PURE_ENV, None)
    if build == "python":
        env[services.rules.PURE_ENV] = "1"
    job = orjson.dumps({"game": gid, "players": players, "options": options, "seconds": seconds}).decode()
    out = subprocess.run([sys.executable, "-m", "tooling.bench", "--figures", job], env=env, check=True,
                         capture_output=True, text=True).stdout
    doc = orjson.loads(out)
    if doc["build"] != build:
        raise RuntimeError(f"asked for the {build} build, the worker ran {doc['build']}")
    figures: dict[str, Any] = doc["figures"]
    return figures


def run_bench(game_ids: list[str], seconds: float, overrides: dict[str, dict[str, Any]],
              builds: tuple[str, ...] = BUILDS) -> dict[str, Any]:
    """``{game: {players: {"options", "compiled", "python", "speedup"}}}``; a build not measured is ``None``.

    Several builds: each in its own process, taking turns per player count. One build equal to this
    process's own: measured in-process (no subprocess).
    """
    report: dict[str, Any] = {}
    for gid in game_ids:
        game = get_game(gid)
        options = {**TARGET_OPTIONS.get(gid, {}), **overrides.get(gid, {})}
        per_players: dict[str, Any] = {}
        for players in range(game.min_players, game.max_players + 1):
            row: dict[str, Any] = {"options": options, **dict.fromkeys(BUILDS)}
            for build in builds:
                if builds == (services.rules.build(),):
                    row[build] = figures_for(gid, players, options, seconds)
                else:
                    row[build] = measure_in(build, gid, players, options, seconds)
            compiled, python = row["compiled"], row["python"]
            row["speedup"] = round(compiled["games_per_s"] / python["games_per_s"], 2) if compiled and python else None
            per_players[str(players)] = row
            print(f"  {gid} {players}p done", file=sys.stderr)
        report[gid] = per_players
    return report


def speedups(report: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per game: the smallest speedup over its player counts and their geometric mean (compiled / Python)."""
    out: dict[str, dict[str, float]] = {}
    for gid, per_players in report.items():
        ratios = [row["speedup"] for row in per_players.values() if row["speedup"]]
        if ratios:
            mean = 1.0
            for r in ratios:
                mean *= r
            out[gid] = {"min": min(ratios), "geomean": round(mean ** (1 / len(ratios)), 2)}
    return out


def print_table(report: dict[str, Any]) -> None:
    header = f"{'game':<16} {'players':>7} {'games/s':>10} {'py games/s':>10} {'x':>6} {'moves/s':>10} " \
             f"{'legal µs':>9} {'apply µs':>9} {'in-place µs':>11} {'max_branching':>13} {'scoring µs':>10}  options"
    print(header)
    print("-" * len(header))
    for gid, per_players in report.items():
        for players, row in per_players.items():
            f = row["compiled"] or row["python"]
            py = row["python"]
            scoring = f"{f['scoring_us']:>10.1f}" if "scoring_us" in f else f"{'-':>10}"
            games = f"{row['compiled']['games_per_s']:>10.1f}" if row["compiled"] else f"{'-':>10}"
            pygames = f"{py['games_per_s']:>10.1f}" if py else f"{'-':>10}"
            ratio = f"{row['speedup']:>6.2f}" if row["speedup"] else f"{'-':>6}"
            print(f"{gid:<16} {players:>7} {games} {pygames} {ratio} {f['moves_per_s']:>10.0f} "
                  f"{f['legal_us']:>9.1f} {f['apply_us']:>9.1f} {f['apply_in_place_us']:>11.1f} "
                  f"{f['max_branching']:>13} {scoring}  "
                  f"{orjson.dumps(row['options']).decode()}")
    print("games/s: compiled build; py games/s: pure Python (MEEPLE_PURE_PYTHON=1); x: their ratio, same run. "
          "Games and moves per CPU second; the µs columns are of the compiled build where there is one.")
    for gid, s in speedups(report).items():
        print(f"{gid}: compiled / Python games/s, smallest over player counts {s['min']:.2f}x, "
              f"geometric mean {s['geomean']:.2f}x")
    if any("scoring_us" in (row["compiled"] or row["python"]) for per_players in report.values()
           for row in per_players.values()):
        print("scoring µs: final scoring of one seat (a full 8-card dresser in Sideboards), from scratch")


def parse_option(text: str) -> tuple[str, str, Any]:
    try:
        gid, rest = text.split(":", 1)
        key, value = rest.split("=", 1)
        return gid, key, orjson.loads(value)
    except (ValueError, orjson.JSONDecodeError):
        raise argparse.ArgumentTypeError(f"expected GAME:KEY=JSON, got {text!r}") from None


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("engines", help="random-playout speed of every engine",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="playout time per game and player count")
    parser.add_argument("--game", action="append", choices=list(GAMES), help="only these games (repeatable)")
    parser.add_argument("--option", action="append", type=parse_option, default=[],
                        help="GAME:KEY=JSON option override, e.g. fierce-women:action_cards=false")
    parser.add_argument("--build", choices=("both", *BUILDS), default="both",
                        help="which builds to measure (default both, side by side, each in its own process)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.set_defaults(func=run)
    from tooling import bench_rules  # imported here: it pulls in the gRPC server

    bench_rules.add_parser(sub)
    bench_rules.add_cpu_parser(sub)
    from tooling import bench_bots

    bench_bots.add_parser(sub)


def run(args: argparse.Namespace) -> int:
    overrides: dict[str, dict[str, Any]] = {}
    for gid, key, value in args.option:
        overrides.setdefault(gid, {})[key] = value
    builds = BUILDS if args.build == "both" else (args.build,)
    if services.rules.build() == "python" and "compiled" in builds:
        print("no compiled build here (see `make install`'s output): pure Python figures only", file=sys.stderr)
        builds = ("python",)
    report = run_bench(args.game or list(GAMES), args.seconds, overrides, builds)
    if args.json:
        print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
    else:
        print_table(report)
    return 0


def _figures_main(job_json: str) -> int:
    """Worker of :func:`measure_in`: one job's figures as JSON on stdout, with the build that ran them."""
    job = orjson.loads(job_json)
    figures = figures_for(job["game"], job["players"], job["options"], job["seconds"])
    print(orjson.dumps({"build": services.rules.build(), "figures": figures}).decode())
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--figures":
        raise SystemExit(_figures_main(sys.argv[2]))
    raise SystemExit("usage: python -m tooling.bench --figures JOB_JSON (meeple bench engines runs it)")
