"""``meeple bench bots``: a bot's CPU time per move at each level, compiled vs pure Python.

The same positions (decisions of seeded random games, spread over the game) are searched by a seeded bot of
each level with its iteration budget and no time cap, so both builds do exactly the same search (the
compiled ISMCTS and engines, or ``MEEPLE_PURE_PYTHON=1``), each build in a process of its own, the two
taking turns game by game. ``cpu_ms``: CPU time per move (mean); ``p95_ms``: its 95th percentile over the
positions (issue 32: ``normal``'s p95 think time is at most 0.5 s; the level's cap is off here, so this is
the time its calibrated budget needs, not the cap); ``iters_per_s``: ISMCTS iterations per CPU second.
``meeple bench bots --level normal --build compiled --positions 40`` prints ``normal``'s p95 in every game.
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

#: A typical table per game (the bots' most common match size).
PLAYERS = {"fierce-women": 3, "sideboards": 3, "they-who-were-8": 4, "clash": 2}
LEVELS = ("novice", "easy", "casual", "normal")
BUILDS = ("compiled", "python")


def positions(gid: str, count: int) -> list[tuple[Any, int]]:
    """``count`` decisions (state, seat) of seeded random games, spread over the whole game."""
    game = get_game(gid)
    found: list[tuple[Any, int]] = []
    seed = 0
    while len(found) < count:
        rng = random.Random(seed)
        state = game.new_game(PLAYERS.get(gid, game.min_players), seed, {})
        decisions = []
        while not game.is_over(state):
            seat = rng.choice(game.to_act(state))
            if len(game.legal_moves(state, seat)) > 1:
                decisions.append((game.clone(state), seat))
            game.apply_in_place(state, seat, game.sample_move(state, seat, rng))
        step = max(1, len(decisions) // 4)
        found.extend(decisions[step // 2::step][:count - len(found)])
        seed += 1
    return found


def figures_for(gid: str, level: str, count: int) -> dict[str, float]:
    """CPU ms per move (mean and p95) and iterations per CPU second of ``level`` over ``count`` positions of
    ``gid``."""
    from ai.arena import p95
    from ai.bot import Bot

    game = get_game(gid)
    spots = positions(gid, count)
    iterations = 0
    each: list[float] = []
    for i, (state, seat) in enumerate(spots):
        bot = Bot(level, seed=i, seconds=0)
        start = time.process_time()
        bot.choose(game, state, seat)
        each.append(time.process_time() - start)
        iterations += bot.stats.iterations
    cpu = sum(each)
    return {"cpu_ms": round(cpu / len(spots) * 1000, 2), "p95_ms": round(p95(each) * 1000, 2),
            "iters_per_s": round(iterations / cpu, 1) if cpu else 0.0, "moves": len(spots),
            "iterations": iterations // len(spots)}


def measure_in(build: str, gid: str, level: str, count: int) -> dict[str, float]:
    env = dict(os.environ)
    env.pop(services.rules.PURE_ENV, None)
    if build == "python":
        env[services.rules.PURE_ENV] = "1"
    job = orjson.dumps({"game": gid, "level": level, "count": count}).decode()
    out = subprocess.run([sys.executable, "-m", "tooling.bench_bots", "--figures", job], env=env, check=True,
                         capture_output=True, text=True).stdout
    doc = orjson.loads(out)
    if doc["build"] != build:
        raise RuntimeError(f"asked for the {build} build, the worker ran {doc['build']}")
    figures: dict[str, float] = doc["figures"]
    return figures


def run_bench(game_ids: list[str], levels: list[str], count: int, builds: tuple[str, ...]) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for gid in game_ids:
        report[gid] = {}
        for level in levels:
            row: dict[str, Any] = dict.fromkeys(BUILDS)
            for build in builds:
                row[build] = measure_in(build, gid, level, count)
            compiled, python = row["compiled"], row["python"]
            row["speedup"] = round(python["cpu_ms"] / compiled["cpu_ms"], 2) if compiled and python else None
            report[gid][level] = row
            print(f"  {gid} {level} done", file=sys.stderr)
    return report


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("bots", help="bot CPU per move at each level, compiled vs pure Python",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", action="append", choices=list(GAMES), help="only these games (repeatable)")
    parser.add_argument("--level", action="append", choices=["novice", "easy", "casual", "normal", "strong", "hard"],
                        help=f"only these levels (repeatable; default {', '.join(LEVELS)})")
    parser.add_argument("--positions", type=int, default=6, help="positions searched per game and level")
    parser.add_argument("--build", choices=("both", *BUILDS), default="both")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    builds: tuple[str, ...] = BUILDS if args.build == "both" else (args.build,)
    if "compiled" in builds and services.rules.build() != "compiled":
        print("no compiled build here: pure Python figures only", file=sys.stderr)
        builds = ("python",)
    report = run_bench(args.game or list(GAMES), args.level or list(LEVELS), args.positions, builds)
    if args.json:
        print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
        return 0
    print(f"{'game':<16} {'level':<8} {'budget':>7} {'cpu ms':>9} {'p95 ms':>8} {'iters/s':>9} {'py cpu ms':>10} "
          f"{'py p95 ms':>10} {'py iters/s':>10} {'x':>6}")
    for gid, per_level in report.items():
        for level, row in per_level.items():
            c, p = row["compiled"], row["python"]
            budget = (c or p)["iterations"]
            cells = (f"{c['cpu_ms']:>9.1f} {c['p95_ms']:>8.1f} {c['iters_per_s']:>9.0f}" if c
                     else f"{'-':>9} {'-':>8} {'-':>9}") + " " + \
                (f"{p['cpu_ms']:>10.1f} {p['p95_ms']:>10.1f} {p['iters_per_s']:>10.0f}" if p
                 else f"{'-':>10} {'-':>10} {'-':>10}")
            ratio = f"{row['speedup']:>6.2f}" if row["speedup"] else f"{'-':>6}"
            print(f"{gid:<16} {level:<8} {budget:>7} {cells} {ratio}")
    print("budget: iterations per move (ai/budgets.json); cpu ms: mean CPU per bot move at that budget (no time cap); "
          "p95 ms: its 95th percentile; py: pure Python; x: their ratio")
    return 0


def _figures_main(job_json: str) -> int:
    job = orjson.loads(job_json)
    figures = figures_for(job["game"], job["level"], job["count"])
    print(orjson.dumps({"build": services.rules.build(), "figures": figures}).decode())
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--figures":
        raise SystemExit(_figures_main(sys.argv[2]))
    raise SystemExit("usage: python -m tooling.bench_bots --figures JOB_JSON (meeple bench bots runs it)")
