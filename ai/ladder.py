"""``meeple arena --ladder --game G``: rate the bot levels on the players' scale.

The levels (rungs, weakest first as in ``ai/bot.py``) play each other — every pair up to ``--reach`` rungs
apart (default: all pairs, a round robin), ``--games`` games per pair, played round by round so that no
pair's games all come last, seats rotated; with more seats than two the pair alternates around the table.
Each finished game updates openskill Plackett-Luce ratings — the model and defaults the gateway rates
players with (``services/core/ratings.py``). Budgets are iteration-bound (no time cap), so a ladder is
reproducible from its seed and describes what the bots play, not how fast the machine was.

The result goes to Redis (``rating:{bots}``, field ``<game>:<level>``), where the gateway reads it, or with
``--out FILE`` into the JSON file the server ships (``services/core/bot_ratings.json``: the gateway's
fallback while Redis holds no ladder for a game), with the command, seed, games per pair and date.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import sys
import time
from typing import Any

import orjson
from openskill.models import PlackettLuce

from services import redisconn

from .bot import LEVELS, Bot

#: The same hash the gateway reads (``services.core.ratings.BOT_RATINGS_KEY``; a test checks they agree).
BOT_RATINGS_KEY = "rating:{bots}"


def play(game: Any, players: int, levels: list[str], seed: int, scale: float = 1.0) -> Any:
    """One game with ``levels[seat]`` in each seat; the engine's outcome. ``scale`` shrinks every budget."""
    state = game.new_game(players, seed, {})
    bots = {seat: Bot(level, seed=seed * 1009 + seat, iterations=max(1, int(LEVELS[level].iterations * scale)),
                      seconds=0) for seat, level in enumerate(levels)}
    while not game.is_over(state):
        seat = min(game.to_act(state))
        state = game.apply(state, seat, bots[seat].choose(game, state, seat))
    return game.outcome(state)


def pairings(levels: list[str], reach: int | None = None) -> list[tuple[str, str]]:
    """Every pair of ``levels`` at most ``reach`` rungs apart (None: every pair), nearest rungs first."""
    span = len(levels) - 1 if reach is None else min(reach, len(levels) - 1)
    return [(levels[i], levels[i + d]) for d in range(1, span + 1) for i in range(len(levels) - d)]


def ladder(game: Any, players: int, levels: list[str], games: int, seed: int = 0, scale: float = 1.0,
           progress: bool = False, reach: int | None = None) -> dict[str, dict[str, Any]]:
    """``games`` rounds of the pairings of ``levels``; their ratings (mu, sigma, matches) after every game."""
    model = PlackettLuce()
    ratings = {level: model.rating(name=level) for level in levels}
    played = dict.fromkeys(levels, 0)
    pairs = pairings(levels, reach)
    for n, (a, b) in enumerate(p for _ in range(games) for p in pairs):
        seating = [(a, b)[(seat + n) % 2] for seat in range(players)]  # rotate who starts
        outcome = play(game, players, seating, seed + n, scale)
        # A level on several seats counts once, at its best: did it win, then its best score.
        key = {level: (any(s in outcome.winners for s, lv in enumerate(seating) if lv == level),
                       max(outcome.scores[s] for s, lv in enumerate(seating) if lv == level)) for level in (a, b)}
        ranks = [1.0 if key[a] >= key[b] else 2.0, 1.0 if key[b] >= key[a] else 2.0]
        (ratings[a],), (ratings[b],) = model.rate([[ratings[a]], [ratings[b]]], ranks=ranks)
        played[a] += 1
        played[b] += 1
        if progress:
            print(f"\r{n + 1}/{len(pairs) * games} games", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    return {level: {"mu": r.mu, "sigma": r.sigma, "matches": played[level]} for level, r in ratings.items()}


def write(path: str, game_id: str, players: int, ratings: dict[str, dict[str, Any]], **run: Any) -> None:
    """Put one game's ladder into the shipped JSON file (other games' entries are kept)."""
    try:
        with open(path, "rb") as f:
            doc = orjson.loads(f.read())
    except FileNotFoundError:
        doc = {}
    doc.setdefault("about", "Bot level ratings measured by meeple arena --ladder (ai/ladder.py); the gateway "
                            "uses them while Redis holds no ladder for the game.")
    doc.setdefault("games", {})[game_id] = {
        **run, "players": players, "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "iterations": {level: max(1, int(LEVELS[level].iterations * run.get("scale", 1.0))) for level in ratings},
        "ratings": {level: {"mu": round(r["mu"], 4), "sigma": round(r["sigma"], 4), "matches": r["matches"]}
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


def hook(parser: argparse.ArgumentParser) -> None:
    """Add ``--ladder`` (and its options) to the arena's parser: ``--players``/``--seats`` become optional."""
    for action in parser._actions:
        if action.dest in ("players", "seats"):
            action.required = False
    parser.add_argument("--ladder", action="store_true", help="rate the bot levels against each other and store "
                                                               "the ratings in Redis (REDIS_URL), or --out FILE")
    parser.add_argument("--levels", default=",".join(LEVELS), help="ladder: the levels to rate")
    parser.add_argument("--reach", type=int, default=None,
                        help="ladder: pair only rungs at most this many apart (default: every pair)")
    parser.add_argument("--out", default=None, help="ladder: write the ratings into this JSON file (merged by "
                                                    "game) instead of Redis, e.g. services/core/bot_ratings.json")
    parser.add_argument("--scale", type=float, default=1.0, help="ladder: multiply every level's budget (quick runs)")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
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
    started = time.time()
    ratings = ladder(game, players, levels, args.games, args.seed, args.scale, progress=not args.json,
                     reach=args.reach)
    if args.out:
        write(args.out, game.id, players, ratings, command="meeple " + shlex.join(sys.argv[1:]), seed=args.seed,
              games_per_pair=args.games, pairs=[list(p) for p in pairings(levels, args.reach)], scale=args.scale,
              seconds=round(time.time() - started, 1))
    else:
        store(redisconn.connect(args.redis_url), game.id, ratings)
    if args.json:
        print(orjson.dumps({"game": game.id, "players": players, "ratings": ratings}).decode())
    else:
        for level, doc in ratings.items():
            print(f"{level:<8} rating {doc['mu'] - 3 * doc['sigma']:7.2f}  mu {doc['mu']:6.2f}  "
                  f"sigma {doc['sigma']:5.2f}  games {doc['matches']}")
    return 0
