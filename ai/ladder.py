"""``meeple arena --ladder --game G``: rate the bot levels on the players' scale.

The levels play round-robin (every pair, seats rotated, ``--games`` games per pair; with more seats than two
the pair alternates around the table), each finished game updates openskill Plackett-Luce ratings — the
model and defaults the gateway rates players with (``services/gateway/ratings.py``) — and the result is
stored in Redis (``rating:{bots}``, field ``<game>:<level>``), where the gateway reads it: a bot seat plays at
its level's rating, and skill matchmaking fills a seat with the level closest to the table's humans.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from typing import Any

import orjson
from openskill.models import PlackettLuce

from services import redisconn

from .bot import LEVELS, Bot

#: The same hash the gateway reads (``services.gateway.ratings.BOT_RATINGS_KEY``; a test checks they agree).
BOT_RATINGS_KEY = "rating:{bots}"


def play(game: Any, players: int, levels: list[str], seed: int, scale: float = 1.0) -> Any:
    """One game with ``levels[seat]`` in each seat; the engine's outcome. ``scale`` shrinks every budget."""
    state = game.new_game(players, seed, {})
    bots = {seat: Bot(level, seed=seed * 1009 + seat, iterations=max(1, int(LEVELS[level].iterations * scale)),
                      seconds=LEVELS[level].seconds * scale) for seat, level in enumerate(levels)}
    while not game.is_over(state):
        seat = min(game.to_act(state))
        state = game.apply(state, seat, bots[seat].choose(game, state, seat))
    return game.outcome(state)


def ladder(game: Any, players: int, levels: list[str], games: int, seed: int = 0, scale: float = 1.0,
           progress: bool = False) -> dict[str, dict[str, Any]]:
    """Round-robin between ``levels``; their ratings (mu, sigma, matches) after every game."""
    model = PlackettLuce()
    ratings = {level: model.rating(name=level) for level in levels}
    played = dict.fromkeys(levels, 0)
    pairs = list(itertools.combinations(levels, 2))
    for n, (a, b) in enumerate(p for p in pairs for _ in range(games)):
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


def store(client: Any, game_id: str, ratings: dict[str, dict[str, Any]]) -> None:
    client.hset(BOT_RATINGS_KEY, mapping={f"{game_id}:{level}": orjson.dumps({**doc, "updated_at": time.time()})
                                          for level, doc in ratings.items()})


def hook(parser: argparse.ArgumentParser) -> None:
    """Add ``--ladder`` (and its options) to the arena's parser: ``--players``/``--seats`` become optional."""
    for action in parser._actions:
        if action.dest in ("players", "seats"):
            action.required = False
    parser.add_argument("--ladder", action="store_true", help="rate the bot levels round-robin and store the "
                                                               "ratings in Redis (REDIS_URL) for matchmaking")
    parser.add_argument("--levels", default=",".join(LEVELS), help="ladder: the levels to rate")
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
    players = args.players or game.min_players
    ratings = ladder(game, players, levels, args.games, args.seed, args.scale, progress=not args.json)
    store(redisconn.connect(args.redis_url), game.id, ratings)
    if args.json:
        print(orjson.dumps({"game": game.id, "players": players, "ratings": ratings}).decode())
    else:
        for level, doc in ratings.items():
            print(f"{level:<8} rating {doc['mu'] - 3 * doc['sigma']:7.2f}  mu {doc['mu']:6.2f}  "
                  f"sigma {doc['sigma']:5.2f}  games {doc['matches']}")
    return 0
