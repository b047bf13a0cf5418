"""Each level as it plays now against the same level as it played before levels were strengths (issue 32:
"no level is weaker than today").

The old bots are the search, policies and budgets of commit ``add3269`` (iteration budgets novice 10, easy 40,
casual 100, normal 300, strong 800, hard 2000), read from git into a temporary package, so nothing of them is
kept in the tree. Both sides play without a time cap (iteration-bound: the result does not depend on the
machine's load and is reproducible from the seed); the new side plays its game's calibrated budget
(``ai/budgets.json``). Seats are rotated every game (They Who Were 8: new, old, new, old, then shifted).

A game goes to the side that won it; if both or neither did (Fierce Women's automa may beat both), to the
better score; an equal result counts half (the ladder's rule, ``ai/ladder.py``). The report gives the new side's
share with its 95% Wilson interval, and the plain win rates (``ai/arena.py``'s rule) of both sides.

    python scripts/levels_vs_old.py --game sideboards --levels novice,easy --games 100 --seed 6000
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ai.arena import wilson  # noqa: E402
from ai.bot import Bot, budget_of  # noqa: E402

OLD_COMMIT = "add3269"
OLD_FILES = ("__init__.py", "ismcts.py", "policies.py", "bot.py")


def old_package(where: Path) -> Any:
    """``add3269``'s ``ai`` package, importable as ``ai_old`` (its modules import each other relatively)."""
    package = where / "ai_old"
    package.mkdir()
    for name in OLD_FILES:
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{OLD_COMMIT}:ai/{name}"], check=True,
                              capture_output=True, text=True).stdout
        (package / name).write_text(text)
    sys.path.insert(0, str(where))
    return importlib.import_module("ai_old.bot")


def play(game: Any, players: int, sides: list[str], seed: int, level: str, old: Any,
         think: dict[str, list[float]]) -> Any:
    state = game.new_game(players, seed, {})
    actors = {seat: (Bot(level, seed=seed * 1009 + seat, seconds=0) if side == "new"
                     else old.Bot(level, seed=seed * 1009 + seat, seconds=0)) for seat, side in enumerate(sides)}
    while not game.is_over(state):
        seat = min(game.to_act(state))
        start = time.process_time()
        move = actors[seat].choose(game, state, seat)
        think.setdefault(sides[seat], []).append(time.process_time() - start)
        state = game.apply(state, seat, move)
    return game.outcome(state)


def main() -> int:
    from services.rules.games import get_game

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", required=True)
    parser.add_argument("--levels", default="novice,easy,casual,normal,strong,hard")
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--seed", type=int, default=6000)
    parser.add_argument("--out", default=None, help="rewrite this JSON file with the figures after every game")
    args = parser.parse_args()
    game = get_game(args.game)
    players = max(2, game.min_players)
    report: dict[str, Any] = {"game": game.id, "players": players, "old": OLD_COMMIT, "seed": args.seed,
                              "command": "python " + " ".join(sys.argv), "levels": {}}
    with tempfile.TemporaryDirectory() as tmp:
        old = old_package(Path(tmp))
        for level in [lv for lv in args.levels.split(",") if lv]:
            score, wins, think = 0.0, {"new": 0, "old": 0}, {}  # type: ignore[var-annotated]
            for n in range(args.games):
                sides = [("new", "old")[(seat + n) % 2] for seat in range(players)]
                outcome = play(game, players, sides, args.seed + n, level, old, think)
                key = {side: (any(s in outcome.winners for s, x in enumerate(sides) if x == side),
                              max(outcome.scores[s] for s, x in enumerate(sides) if x == side)) for side in wins}
                for side in wins:
                    wins[side] += key[side][0]
                score += 1.0 if key["new"] > key["old"] else 0.0 if key["old"] > key["new"] else 0.5
                lo, hi = wilson(score, n + 1)
                report["levels"][level] = {
                    "new_iterations": budget_of(game.id, level), "old_iterations": old.LEVELS[level].iterations,
                    "games": n + 1, "new_share": score / (n + 1), "ci95": [lo, hi],
                    "new_win_rate": wins["new"] / (n + 1), "old_win_rate": wins["old"] / (n + 1),
                    "think_ms_mean": {s: 1000 * sum(v) / len(v) for s, v in think.items()}}
                if args.out:
                    Path(args.out).write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
            doc = report["levels"][level]
            print(f"{game.id} {level}: new ({doc['new_iterations']} it) vs old ({doc['old_iterations']} it) "
                  f"{doc['new_share']:.3f} [{doc['ci95'][0]:.3f}, {doc['ci95'][1]:.3f}] over {doc['games']} games; "
                  f"wins new {doc['new_win_rate']:.3f} old {doc['old_win_rate']:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
