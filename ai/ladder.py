"""``meeple arena --ladder --game G``: rate the bot levels on the players' scale, with 95% intervals.

The rungs are the uniformly random player (the anchor, rated 0) and the levels of ``ai/bot.py``, weakest
first. Every pair of rungs at most ``--reach`` apart (default 2) plays ``--games`` games, round by round so
that no pair's games all come last, seats rotated (with more seats than two the pair alternates around
the table). Bots play their game's calibrated budget (``ai/budgets.json``) with no time cap, so a ladder is
reproducible from its seed and describes what the bots play, not how fast the machine was.

The ratings are a Bradley-Terry fit (``ai/rating.py``) on the scale the gateway rates players with: random
play is 0 in every game, so a level's rating says the same thing in every game. Each rung's ``sigma`` and
95% interval are its place among the levels (their mean held); the distance to random has its own, wider
interval (``anchored_ci95``). The report also gives each adjacent pair's difference with its interval and
each level's think time per move (CPU seconds of this process, mean and p95).

The result goes to Redis (``rating:{bots}``, field ``<game>:<level>``), where the gateway reads it, or with
``--out FILE`` into the JSON file the server ships (``services/core/competition/bot_ratings.json``: the gateway's
fallback while Redis holds no ladder for a game), with the command, seed, games per pair and date.
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import itertools
import os
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import orjson

from services import redisconn

from . import rating
from .arena import make_player, p95
from .bot import LEVELS, budget_of

#: The same hash the gateway reads (``services.core.competition.ratings.BOT_RATINGS_KEY``; a test checks they agree).
BOT_RATINGS_KEY = "rating:{bots}"
ANCHOR = "random"


def rung_spec(rung: str, game_id: str, scale: float = 1.0) -> str:
    """The arena seat spec of a rung: ``random``, a level (its calibrated budget, scaled) or a spec as is."""
    if rung in LEVELS:
        return f"mcts:{rung}@it={max(1, int(budget_of(game_id, rung) * scale))}"
    return rung


def play(game: Any, players: int, specs: list[str], seed: int, think: dict[str, list[float]] | None = None) -> Any:
    """One game with ``specs[seat]`` in each seat, bots uncapped (iteration-bound); the engine's outcome.
    Each seat's think times (CPU seconds) go to ``think[spec]``."""
    state = game.new_game(players, seed, {})
    actors = {seat: make_player(spec, seed * 1009 + seat, time.process_time, uncapped=True)
              for seat, spec in enumerate(specs)}
    while not game.is_over(state):
        seat = min(game.to_act(state))
        start = time.process_time()
        move = actors[seat].choose(game, state, seat)
        if think is not None and len(game.legal_moves(state, seat)) > 1:
            think.setdefault(specs[seat], []).append(time.process_time() - start)
        state = game.apply(state, seat, move)
    return game.outcome(state)


def pairings(levels: list[str], reach: int | None = None) -> list[tuple[str, str]]:
    """Every pair of ``levels`` at most ``reach`` rungs apart (None: every pair), nearest rungs first."""
    span = len(levels) - 1 if reach is None else min(reach, len(levels) - 1)
    return [(levels[i], levels[i + d]) for d in range(1, span + 1) for i in range(len(levels) - d)]


def ladder(game: Any, players: int, levels: list[str], games: int, seed: int = 0, scale: float = 1.0,
           progress: bool = False, reach: int | None = None, anchor: str | None = None,
           detail: dict[str, Any] | None = None,
           each_round: Callable[[dict[str, dict[str, Any]], dict[str, Any]], None] | None = None,
           ) -> dict[str, dict[str, Any]]:
    """``games`` rounds of the pairings of the rungs (``anchor`` first if given, then ``levels``); the levels'
    ratings: ``mu``, ``sigma`` (centred standard error), ``ci95``, ``anchored_ci95`` and ``matches``.

    ``detail`` (a dict) receives the pairs' scores, adjacent differences, think times and the think samples
    (what :func:`merge` needs); ``each_round`` is called with the ratings and detail so far after every round
    (long runs report as they go).
    """
    rungs = ([anchor] if anchor else []) + levels
    specs = {r: rung_spec(r, game.id, scale) for r in rungs}
    pairs = pairings(rungs, reach)
    score: dict[tuple[int, int], tuple[float, int]] = {}
    think: dict[str, list[float]] = {}
    n = 0
    for _ in range(games):
        for a, b in pairs:
            seating = [(a, b)[(seat + n) % 2] for seat in range(players)]  # rotate who starts
            outcome = play(game, players, [specs[r] for r in seating], seed + n, think)
            # A rung's result: did it win, then its best score (Fierce Women's automa may beat both rungs; the
            # scores still say which of the two played better).
            key = {r: (any(s in outcome.winners for s, rr in enumerate(seating) if rr == r),
                       max(outcome.scores[s] for s, rr in enumerate(seating) if rr == r)) for r in (a, b)}
            i, j = rungs.index(a), rungs.index(b)
            w, m = score.get((i, j), (0.0, 0))
            score[(i, j)] = (w + (1.0 if key[a] > key[b] else 0.0 if key[b] > key[a] else 0.5), m + 1)
            n += 1
            if progress:
                print(f"\r{n}/{len(pairs) * games} games", end="", file=sys.stderr, flush=True)
        if each_round is not None:
            so_far: dict[str, Any] = {}
            each_round(rate(rungs, levels, anchor, specs, score, think, so_far), so_far)
    if progress:
        print(file=sys.stderr)
    return rate(rungs, levels, anchor, specs, score, think, detail)


def rate(rungs: list[str], levels: list[str], anchor: str | None, specs: dict[str, str],
         score: dict[tuple[int, int], tuple[float, int]], think: dict[str, list[float]],
         detail: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """The Bradley-Terry fit of the pairs' scores (``score[(i, j)]``: rung ``i``'s score against rung ``j`` and
    the games they played), and the report's detail."""
    played = dict.fromkeys(rungs, 0)
    for (i, j), (_, m) in score.items():
        played[rungs[i]] += m
        played[rungs[j]] += m
    found = rating.fit(len(rungs), score, anchor=0 if anchor else None,
                       rated=[rungs.index(lv) for lv in levels])
    out: dict[str, dict[str, Any]] = {}
    for k, rung in enumerate(rungs):
        if rung == anchor:
            continue
        mu, se = found.ratings[k], found.centred_se[k]
        out[rung] = {"mu": mu, "sigma": se, "matches": played[rung],
                     "ci95": [mu - rating.Z95 * se, mu + rating.Z95 * se],
                     "anchored_ci95": [mu - rating.Z95 * found.anchored_se[k], mu + rating.Z95 * found.anchored_se[k]]}
    if detail is not None:
        detail["anchor"] = anchor
        detail["levels"] = levels
        detail["specs"] = specs
        detail["pairs"] = [{"pair": [rungs[i], rungs[j]], "score": w, "games": m} for (i, j), (w, m) in score.items()]
        detail["adjacent"] = adjacent(out, levels)
        detail["think_ms"] = {r: {"mean": 1000 * statistics.fmean(think[specs[r]]),
                                  "p95": 1000 * p95(think[specs[r]]), "moves": len(think[specs[r]])}
                              for r in rungs if think.get(specs[r])}
        detail["think_samples_ms"] = {spec: [round(1000 * t, 2) for t in values] for spec, values in think.items()}
    return out


def merge(reports: list[dict[str, Any]], game_id: str, scale: float = 1.0,
          detail: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """The ladder of several runs' reports (``--report`` files of one game, run with different seeds, e.g. in
    parallel): their pairs' scores and think samples are added up and fitted together. Every report must
    have the same rungs, and each rung the spec it plays now (its current calibrated budget), so that the
    ladder rates the levels at the budgets they play. A later report may play some of the first one's rungs
    only (``--levels strong,hard --no-anchor``: more games where two rungs are hard to tell apart); every game
    played between two rungs counts in their pair. A report whose rung played another spec than it plays now
    (its budget was moved since, ``--place``) counts only its pairs of unchanged rungs; the games it leaves out
    are listed in ``detail["left_out"]``, and a report with no pair left is refused."""
    if not reports:
        raise ValueError("nothing to merge")
    first = reports[0]
    anchor, levels = first["anchor"], first["levels"]
    rungs = ([anchor] if anchor else []) + levels
    specs = {r: rung_spec(r, game_id, scale) for r in rungs}
    score: dict[tuple[int, int], tuple[float, int]] = {}
    think: dict[str, list[float]] = {}
    left_out: list[dict[str, Any]] = []
    for doc in reports:
        own = ([doc["anchor"]] if doc["anchor"] else []) + doc["levels"]
        if doc.get("game") != game_id or not set(own) <= set(rungs):
            raise ValueError(f"the reports are not one ladder of {game_id}: the game must agree, and each report's "
                             f"rungs must be among the first one's ({', '.join(rungs)})")
        moved = {r for r in own if doc["specs"].get(r) != specs[r]}
        kept: list[dict[str, Any]] = []
        dropped: list[dict[str, Any]] = []
        for item in doc["pairs"]:
            (dropped if moved & set(item["pair"]) else kept).append(item)
        if not kept:
            raise ValueError(f"a report played {doc['specs']}, but the rungs play {specs} now: no pair of it is "
                             "still played at the same specs")
        left_out.extend({"seed": doc.get("seed"), "pair": item["pair"], "games": item["games"],
                         "specs": [doc["specs"][r] for r in item["pair"]]} for item in dropped)
        for item in kept:
            key = (rungs.index(item["pair"][0]), rungs.index(item["pair"][1]))
            w, m = score.get(key, (0.0, 0))
            score[key] = (w + item["score"], m + item["games"])
        for spec, values in doc["think_samples_ms"].items():
            if spec in specs.values():
                think.setdefault(spec, []).extend(v / 1000 for v in values)
    found = rate(rungs, levels, anchor, specs, score, think, detail)
    if detail is not None and left_out:
        detail["left_out"] = left_out
    return found


def adjacent(ratings: dict[str, dict[str, Any]], levels: list[str]) -> list[dict[str, Any]]:
    """Each adjacent pair of levels: the rating difference and whether their 95% intervals are apart."""
    out = []
    for low, high in itertools.pairwise(levels):
        a, b = ratings[low], ratings[high]
        out.append({"pair": [low, high], "difference": b["mu"] - a["mu"],
                    "separated": a["ci95"][1] < b["ci95"][0],
                    "win_probability": rating.win_probability(b["mu"] - a["mu"])})
    return out


def write(path: str, game_id: str, players: int, ratings: dict[str, dict[str, Any]], **run: Any) -> None:
    """Put one game's ladder into the shipped JSON file (other games' entries are kept; ladders of several games
    may run at once, so the read-modify-write holds a lock on a side file)."""
    with open(path + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            _write(path, game_id, players, ratings, **run)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write(path: str, game_id: str, players: int, ratings: dict[str, dict[str, Any]], **run: Any) -> None:
    try:
        with open(path, "rb") as f:
            doc = orjson.loads(f.read())
    except FileNotFoundError:
        doc = {}
    doc["about"] = ("Bot level ratings measured by meeple arena --ladder (ai/ladder.py): a Bradley-Terry fit on the "
                    "players' scale with the uniformly random player at 0; sigma and ci95 are each level's place "
                    "among the levels, anchored_ci95 its distance from random play. The gateway uses them while "
                    "Redis holds no ladder for the game.")
    doc.setdefault("games", {})[game_id] = {
        **run, "players": players, "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "iterations": {level: max(1, int(budget_of(game_id, level) * run.get("scale", 1.0))) for level in ratings},
        "ratings": {level: {"mu": round(r["mu"], 4), "sigma": round(r["sigma"], 4), "matches": r["matches"],
                            "ci95": [round(v, 3) for v in r["ci95"]],
                            "anchored_ci95": [round(v, 3) for v in r["anchored_ci95"]]}
                    for level, r in ratings.items()}}
    with open(path, "wb") as f:
        f.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")


def store(client: Any, game_id: str, ratings: dict[str, dict[str, Any]]) -> None:
    """Replace ``game_id``'s ladder in Redis (fields of levels this run did not rate are dropped)."""
    old = [f for f in client.hkeys(BOT_RATINGS_KEY) if (f.decode() if isinstance(f, bytes) else f)
           .partition(":")[0] == game_id]
    if old:
        client.hdel(BOT_RATINGS_KEY, *old)
    client.hset(BOT_RATINGS_KEY, mapping={f"{game_id}:{level}": orjson.dumps({**doc, "updated_at": time.time()})
                                          for level, doc in ratings.items()})


def add_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--ladder`` and its options to the arena's parser: ``--players``/``--seats`` become optional."""
    for action in parser._actions:
        if action.dest in ("players", "seats"):
            action.required = False
    parser.add_argument("--ladder", action="store_true", help="rate the bot levels against each other and store "
                                                               "the ratings in Redis (REDIS_URL), or --out FILE")
    parser.add_argument("--levels", default=",".join(LEVELS), help="ladder: the levels to rate")
    parser.add_argument("--reach", type=int, default=2,
                        help="ladder: pair only rungs at most this many apart (default 2; 0: every pair)")
    parser.add_argument("--no-anchor", action="store_true",
                        help="ladder: no random rung; ratings centred on 25 instead of random play at 0")
    parser.add_argument("--out", default=None, help="ladder: write the ratings into this JSON file (merged by "
                                                    "game) instead of Redis, e.g. "
                                                    "services/core/competition/bot_ratings.json")
    parser.add_argument("--report", default=None, help="ladder: also write the full report (pairs, adjacent "
                                                       "differences, think times) as JSON to this file, rewritten "
                                                       "after every round")
    parser.add_argument("--merge", default=None,
                        help="ladder: fit the reports of several runs of one game (comma-separated --report files, "
                             "run with different seeds, e.g. in parallel) instead of playing")
    parser.add_argument("--scale", type=float, default=1.0, help="ladder: multiply every level's budget (quick runs)")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))


def route(parser: argparse.ArgumentParser) -> None:
    """``--ladder`` runs the ladder; without it, the parser's command until now (the arena, or a calibration)."""
    arena_run = parser.get_default("func")
    parser.set_defaults(func=lambda args: run(args) if args.ladder else arena_run(args))


def run(args: argparse.Namespace) -> int:

    from services.rules.games import get_game

    try:
        game = get_game(args.game)
    except KeyError as exc:
        print(f"meeple arena: {exc}", file=sys.stderr)
        return 2
    levels = [lv for lv in args.levels.split(",") if lv]
    if len(levels) < 2 or any(lv not in LEVELS for lv in levels):
        print(f"meeple arena: --levels needs two or more of {', '.join(LEVELS)}", file=sys.stderr)
        return 2
    players = args.players or max(2, game.min_players)
    anchor = None if args.no_anchor else ANCHOR
    reach = args.reach or None
    started = time.time()
    detail: dict[str, Any] = {}
    rungs = ([anchor] if anchor else []) + levels
    pairs = pairings(rungs, reach)
    run_info: dict[str, Any] = {"seed": args.seed, "games_per_pair": args.games, "pairs": [list(p) for p in pairs],
                                "games_by_pair": [[*p, args.games] for p in pairs]}

    command = "meeple " + shlex.join(sys.argv[1:])

    def report(ratings: dict[str, dict[str, Any]], found: dict[str, Any]) -> None:
        with open(args.report, "wb") as f:
            f.write(orjson.dumps({"game": game.id, "players": players, "command": command, "seed": args.seed,
                                  "ratings": ratings, **found}, option=orjson.OPT_INDENT_2))

    if args.merge:
        try:
            reports = []
            for path in [p for p in args.merge.split(",") if p]:
                with open(path, "rb") as f:
                    reports.append(orjson.loads(f.read()))
            ratings = merge(reports, game.id, args.scale, detail)
        except (OSError, ValueError, KeyError) as exc:
            print(f"meeple arena: --merge: {exc}", file=sys.stderr)
            return 2
        players = reports[0]["players"]
        rungs = ([detail["anchor"]] if detail["anchor"] else []) + detail["levels"]
        games = {tuple(item["pair"]): item["games"] for item in detail["pairs"]}
        # ``seed``: the first run's (the shipped file's readers expect one); every run's is in ``merged``.
        # ``games_per_pair``: the fewest; a pair with a run of its own has more (``games_by_pair``).
        run_info = {"merged": [{"seed": r.get("seed"), "command": r.get("command")} for r in reports],
                    "seed": reports[0].get("seed"), "games_per_pair": min(games.values()),
                    "pairs": [list(p) for p in games], "games_by_pair": [[*p, n] for p, n in games.items()],
                    **({"left_out": detail["left_out"]} if detail.get("left_out") else {})}
    else:
        ratings = ladder(game, players, levels, args.games, args.seed, args.scale, progress=not args.json,
                         reach=reach, anchor=anchor, detail=detail,
                         each_round=report if args.report else None)
    if args.out:
        write(args.out, game.id, players, ratings, command=command, **run_info, scale=args.scale,
              anchor=detail["anchor"], seconds=round(time.time() - started, 1),
              think_ms={r: {k: round(v, 1) for k, v in doc.items()} for r, doc in detail["think_ms"].items()})
    elif not args.report:
        store(redisconn.connect(args.redis_url), game.id, ratings)
    if args.report:
        report(ratings, detail)
    detail.pop("think_samples_ms", None)
    if args.json:
        print(orjson.dumps({"game": game.id, "players": players, "ratings": ratings, **detail}).decode())
    else:
        for level, doc in ratings.items():
            lo, hi = doc["ci95"]
            print(f"{level:<8} mu {doc['mu']:6.2f}  95% [{lo:6.2f}, {hi:6.2f}]  sigma {doc['sigma']:5.2f}  "
                  f"games {doc['matches']}")
        for item in detail.get("left_out", []):
            print(f"left out (a rung played another budget then): {item['games']} games of {item['pair']} "
                  f"(seed {item['seed']}, {' vs '.join(item['specs'])})")
        for item in detail["adjacent"]:
            print(f"{item['pair'][1]} - {item['pair'][0]}: {item['difference']:+.2f} "
                  f"({item['win_probability']:.2f} to win){'' if item['separated'] else '  intervals overlap'}")
    return 0

