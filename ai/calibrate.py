"""``meeple arena --calibrate --game G``: find each level's iteration budget in one game, write ``ai/budgets.json``.

A level is a target rating (``ai/bot.py`` LEVELS): its distance from uniformly random play on the players'
scale. Calibration measures the game's strength curve: random play and the search at a ladder of
iteration budgets (``--budgets``, default 4, 12, 36, ... 2916) play each other, pairs at most ``--reach``
rungs apart, ``--games`` games a pair, and a Bradley-Terry fit (``ai/rating.py``) rates every budget with
random play at 0. Each level then gets the budget whose rating meets its target, interpolated on the
curve (log budget against rating, made non-decreasing first), unless that budget's think time would
pass the level's cap: the p95 think time per move grows linearly with the budget, at the slope measured
in this run (CPU seconds of this process, so other work on the machine does not inflate it), and a
budget that would pass the cap is cut to fit it (``cap_bound``). A target above the whole measured
curve cannot be placed on it (extrapolating a flat, noisy top says nothing), so that level keeps its
floor (``beyond_curve``). A budget never goes below the level's budget from before levels were strengths
(``Level.iterations``; ``floor_bound``: the level is then above its target in this game), nor below the
level below it. ``--floor hard=6000`` raises a level's floor in this game (kept in the entry and by
``--reuse-curve``): for a level whose target lies beyond a flat top of the curve, where only head-to-head games
(``meeple arena --seats mcts:hard@it=6000,mcts:normal``) can tell what more search buys. ``--place strong=480``
puts a level at a budget in this game even below its old floor, never below the level under it (kept like
floors; ``--place none`` clears them): for a rung that head-to-head games found level with its neighbour. Only
the in-between rungs people do not pick (``novice``, ``casual``, ``strong``; bot fill goes by their rating) can
be placed. Tried on Fierce Women's ``strong`` (at 480 and 400) and not kept: see docs/bots/strength.md.

The file keeps one entry per game (other games' entries are kept), with the curve, the command and the
date; ``ai.bot`` reads it at run time.
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import math
import shlex
import sys
import time
from collections.abc import Collection
from typing import Any

import orjson

from .bot import BUDGETS_PATH, LEVELS

DEFAULT_BUDGETS = "4,12,36,108,324,972,2916"


def hook(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--calibrate", action="store_true",
                        help="measure the game's strength curve and write each level's budget into --budgets-file")
    parser.add_argument("--budgets", default=DEFAULT_BUDGETS,
                        help=f"calibrate: the iteration budgets of the curve (default {DEFAULT_BUDGETS})")
    parser.add_argument("--budgets-file", default=str(BUDGETS_PATH),
                        help="calibrate: the JSON file to write (default: the shipped ai/budgets.json)")
    parser.add_argument("--reuse-curve", action="store_true",
                        help="calibrate: choose the budgets again from the curve already in --budgets-file (after "
                             "the levels' targets or caps changed), without playing")
    parser.add_argument("--floor", default="",
                        help="calibrate: raise levels' floors in this game, e.g. hard=6000 (comma-separated; kept in "
                             "the file's entry, and by --reuse-curve unless given again)")
    parser.add_argument("--place", default="",
                        help="calibrate: put in-between levels (novice, casual, strong) at a budget in this game, "
                             "e.g. strong=480, even below their old floor (kept like --floor; none: clear them)")
    previous = parser.get_default("func")
    parser.set_defaults(func=lambda args: run(args) if args.calibrate else previous(args))


def spec_of(iterations: int) -> str:
    return f"mcts:normal@it={iterations}"


def curve(game: Any, players: int, budgets: list[int], games: int, seed: int, reach: int | None,
          progress: bool) -> list[dict[str, Any]]:
    """Rating (random play at 0), its intervals and the p95 think time of each budget."""
    from .ladder import ANCHOR, ladder

    detail: dict[str, Any] = {}
    specs = [spec_of(n) for n in budgets]
    found = ladder(game, players, specs, games, seed, progress=progress, reach=reach, anchor=ANCHOR, detail=detail)
    think = detail["think_ms"]
    return [{"iterations": n, "rating": found[s]["mu"], "ci95": found[s]["ci95"],
             "anchored_ci95": found[s]["anchored_ci95"], "think_ms_mean": think.get(s, {}).get("mean", 0.0),
             "think_ms_p95": think.get(s, {}).get("p95", 0.0)} for n, s in zip(budgets, specs, strict=True)]


def level_budgets(text: str, option: str, allowed: Collection[str]) -> dict[str, int]:
    """``hard=6000,strong=2000`` -> {"hard": 6000, "strong": 2000}: the ``LEVEL=ITERATIONS`` list of ``--floor``
    and ``--place``; raises ValueError for a level not in ``allowed`` or a budget that is not a positive integer."""
    found: dict[str, int] = {}
    for part in filter(None, (x.strip() for x in text.split(","))):
        level, _, value = part.partition("=")
        if level not in allowed or not value.isdigit() or int(value) < 1:
            raise ValueError(f"bad {option} {part!r}: use LEVEL=ITERATIONS with a level of {', '.join(allowed)}")
        found[level] = int(value)
    return found


def parse_floors(text: str) -> dict[str, int]:
    """``hard=6000`` -> {"hard": 6000}; raises ValueError for an unknown level or a floor below the level's own
    (``Level.iterations``)."""
    floors = level_budgets(text, "--floor", LEVELS)
    for level, value in floors.items():
        if value < LEVELS[level].iterations:
            raise ValueError(f"--floor {level}={value}: below {level}'s own floor of {LEVELS[level].iterations}")
    return floors


#: The rungs people do not pick (docs/api.md): they exist for bot fill, which goes by their measured rating, so
#: ``--place`` may move them below their old budget to sit between the levels around them.
PLACEABLE = ("novice", "casual", "strong")


def parse_places(text: str) -> dict[str, int]:
    """``strong=480`` -> {"strong": 480}; ``none`` -> {} (the game's places are cleared); raises ValueError for a
    level people pick or a bad budget."""
    return {} if text.strip() == "none" else level_budgets(text, "--place", PLACEABLE)


def choose(points: list[dict[str, Any]], floors: dict[str, int] | None = None,
           places: dict[str, int] | None = None) -> dict[str, dict[str, Any]]:
    """Each level's budget on a measured curve (see the module docstring); ``floors`` raise levels' floors,
    ``places`` put in-between levels at a budget (never below the level under them)."""
    budgets = [p["iterations"] for p in points]
    ratings: list[float] = []
    for p in points:  # non-decreasing: a bigger budget is never rated below a smaller one
        ratings.append(max([p["rating"], *ratings[-1:]]))
    slopes = [p["think_ms_p95"] / p["iterations"] for p in points if p["iterations"] >= 100 and p["think_ms_p95"]]
    ms_per_iteration = max(slopes) if slopes else max(p["think_ms_p95"] / p["iterations"] for p in points)
    out: dict[str, dict[str, Any]] = {}
    floor = 1
    for level, spec in LEVELS.items():
        least = (floors or {}).get(level, spec.iterations)
        # A target the measured curve never reaches cannot be placed on it: the level keeps its floor (below).
        beyond = spec.target > ratings[-1]
        budget = least if beyond else _interpolate(budgets, ratings, spec.target)
        fits = max(1, math.floor(spec.seconds * 1000 / ms_per_iteration)) if ms_per_iteration > 0 else budget
        # Never below the level's budget before levels were strengths (``Level.iterations``): the search only
        # gained strength per iteration since, so no level is weaker than it was (issue 32).
        placed = (places or {}).get(level)
        chosen = max(floor, min(max(budget, least) if placed is None else placed, fits))
        floor = chosen
        out[level] = {"iterations": chosen, "target": spec.target, "target_iterations": budget,
                      "expected_rating": round(_rating_at(budgets, ratings, chosen), 2),
                      "expected_p95_ms": round(chosen * ms_per_iteration, 1), "cap_ms": spec.seconds * 1000,
                      "cap_bound": fits < max(budget, least), "floor_bound": least > budget,
                      "beyond_curve": beyond, **({"floor_set": least} if least != spec.iterations else {}),
                      **({"placed": placed} if placed is not None else {})}
    return out


def _interpolate(budgets: list[int], ratings: list[float], target: float) -> int:
    """The budget at which the (non-decreasing) curve reaches ``target``, linear in log budget between
    points; past the last point the curve is extended with its last slope (at most 4x the last budget)."""
    if target <= ratings[0]:
        return max(1, round(budgets[0] * 2 ** ((target - ratings[0]) / 4)))  # below the curve: fewer iterations
    for k in range(1, len(budgets)):
        if ratings[k] >= target:
            lo, hi = math.log(budgets[k - 1]), math.log(budgets[k])
            span = ratings[k] - ratings[k - 1]
            t = (target - ratings[k - 1]) / span if span > 0 else 1.0
            return max(1, round(math.exp(lo + t * (hi - lo))))
    slope = (ratings[-1] - ratings[-2]) / (math.log(budgets[-1]) - math.log(budgets[-2])) if len(budgets) > 1 else 0
    if slope <= 0:
        return 4 * budgets[-1]
    return min(4 * budgets[-1], round(math.exp(math.log(budgets[-1]) + (target - ratings[-1]) / slope)))


def _rating_at(budgets: list[int], ratings: list[float], n: int) -> float:
    if n <= budgets[0]:
        return ratings[0]
    for k in range(1, len(budgets)):
        if n <= budgets[k]:
            t = (math.log(n) - math.log(budgets[k - 1])) / (math.log(budgets[k]) - math.log(budgets[k - 1]))
            return ratings[k - 1] + t * (ratings[k] - ratings[k - 1])
    return ratings[-1]


def write(path: str, game_id: str, entry: dict[str, Any]) -> None:
    """Put one game's entry into the budgets file (other games' entries are kept; calibrations of several games
    may run at once, so the read-modify-write holds a lock on a side file)."""
    with open(path + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            _write(path, game_id, entry)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write(path: str, game_id: str, entry: dict[str, Any]) -> None:
    try:
        with open(path, "rb") as f:
            doc = orjson.loads(f.read())
    except FileNotFoundError:
        doc = {}
    doc["about"] = ("Per-game iteration budgets of the bot levels, written by meeple arena --calibrate "
                    "(ai/calibrate.py): each level's budget reaches its target rating (ai/bot.py LEVELS: distance "
                    "from uniformly random play on the players' scale) within its think-time cap.")
    doc["targets"] = {level: {"rating": spec.target, "cap_s": spec.seconds} for level, spec in LEVELS.items()}
    doc.setdefault("games", {})[game_id] = entry
    with open(path, "wb") as f:
        f.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")


def run(args: argparse.Namespace) -> int:
    from services.rules.games import get_game

    try:
        game = get_game(args.game)
        floors = parse_floors(args.floor)
        places = parse_places(args.place)
        budgets = sorted({int(x) for x in args.budgets.split(",") if x})
        if len(budgets) < 2 or budgets[0] < 1:
            raise ValueError("--budgets needs two or more budgets >= 1")
    except (KeyError, ValueError) as exc:
        print(f"meeple arena: {exc}", file=sys.stderr)
        return 2
    players = args.players or max(2, game.min_players)
    started = time.time()
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if args.reuse_curve:
        with open(args.budgets_file, "rb") as f:
            entry = orjson.loads(f.read())["games"][game.id]
        points = entry["curve"]
        floors = floors or entry.get("floors", {})
        places = places if args.place else entry.get("places", {})
        levels = choose(points, floors, places)
        entry = {**entry, "levels": levels, "chosen_again": {"command": "meeple " + shlex.join(sys.argv[1:]),
                                                             "date": now}}
    else:
        points = curve(game, players, budgets, args.games, args.seed, args.reach or None, progress=not args.json)
        levels = choose(points, floors, places)
        entry = {"command": "meeple " + shlex.join(sys.argv[1:]), "date": now,
                 "players": players, "seed": args.seed, "games_per_pair": args.games, "reach": args.reach,
                 "seconds": round(time.time() - started, 1),
                 "think_time": "CPU seconds of the arena process, p95 per move",
                 "curve": [{k: (round(v, 3) if isinstance(v, float) else [round(x, 3) for x in v]
                               if isinstance(v, list) else v) for k, v in p.items()} for p in points],
                 "levels": levels}
    entry.pop("floors", None)
    if floors:  # only where a floor was raised: the other games' entries keep their shape
        entry["floors"] = floors
    entry.pop("places", None)
    if places:
        entry["places"] = places
    write(args.budgets_file, game.id, entry)
    if args.json:
        print(orjson.dumps({"game": game.id, **entry}).decode())
    else:
        for p in points:
            print(f"{p['iterations']:>6} iterations  rating {p['rating']:6.2f}  95% [{p['ci95'][0]:6.2f}, "
                  f"{p['ci95'][1]:6.2f}]  p95 {p['think_ms_p95']:7.1f} ms")
        for level, doc in levels.items():
            print(f"{level:<8} target {doc['target']:5.1f}  {doc['iterations']:>6} iterations  expected "
                  f"{doc['expected_rating']:6.2f}  p95 {doc['expected_p95_ms']:7.1f} ms"
                  f"{'  (cap-bound)' if doc['cap_bound'] else ''}")
    return 0
