"""``meeple arena``: bots against each other, seats rotated fairly, win rates with 95% intervals."""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from services.rules.games import GAMES, get_game
from services.rules.games.base import Game, Move

from .bot import LEVELS, Bot


class Player(Protocol):
    def choose(self, game: Game[Any], state: Any, seat: int) -> Move: ...


class RandomPlayer:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def choose(self, game: Game[Any], state: Any, seat: int) -> Move:
        legal = game.legal_moves(state, seat)
        return legal[self.rng.randrange(len(legal))]


def make_player(spec: str, seed: int) -> Player:
    """``random`` or ``mcts:<level>[@c=<float>]``."""
    if spec == "random":
        return RandomPlayer(seed)
    kind, _, rest = spec.partition(":")
    level, _, extra = rest.partition("@")
    if kind != "mcts" or level not in LEVELS:
        raise argparse.ArgumentTypeError(f"unknown seat spec {spec!r}: use random or mcts:{'|'.join(LEVELS)}")
    c = float(extra.split("=", 1)[1]) if extra.startswith("c=") else None
    return Bot(level, seed=seed, c=c)


def wilson(wins: float, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = wins / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass
class Tally:
    games: int = 0
    wins: int = 0
    scores: list[float] = field(default_factory=list)
    think_ms: list[float] = field(default_factory=list)


def play_one(game: Game[Any], players: int, options: dict[str, Any], seat_specs: list[str], seed: int,
             tallies: dict[str, Tally]) -> None:
    state = game.new_game(players, seed, options)
    actors = {seat: make_player(spec, seed * 31 + seat) for seat, spec in enumerate(seat_specs)}
    while not game.is_over(state):
        seat = game.to_act(state)[0]
        start = time.perf_counter()
        move = actors[seat].choose(game, state, seat)
        tallies[seat_specs[seat]].think_ms.append((time.perf_counter() - start) * 1000)
        state = game.apply(state, seat, move)
    outcome = game.outcome(state)
    for seat, spec in enumerate(seat_specs):
        tally = tallies[spec]
        tally.games += 1
        tally.wins += seat in outcome.winners
        tally.scores.append(outcome.scores[seat])


def run_arena(game_id: str, players: int, specs: list[str], games: int, seed: int = 0,
              options: dict[str, Any] | None = None, progress: bool = True) -> dict[str, Any]:
    game = get_game(game_id)
    if len(specs) != players:
        raise SystemExit(f"--seats needs {players} specs, got {len(specs)}")
    tallies: dict[str, Tally] = defaultdict(Tally)
    for i in range(games):
        shift = i % players  # rotate who sits where, so no spec keeps an advantageous seat
        seating = specs[-shift:] + specs[:-shift] if shift else list(specs)
        play_one(game, players, options or {}, seating, seed + i, tallies)
        if progress:
            done = int(30 * (i + 1) / games)
            print(f"\r[{'#' * done}{'.' * (30 - done)}] {i + 1}/{games} games", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    results = []
    for spec in dict.fromkeys(specs):
        tally = tallies[spec]
        lo, hi = wilson(tally.wins, tally.games)
        think = sorted(tally.think_ms) or [0.0]
        results.append({"seats": spec, "win_rate": tally.wins / max(tally.games, 1), "ci95": [lo, hi],
                        "mean_score": statistics.fmean(tally.scores) if tally.scores else 0.0,
                        "think_ms_mean": statistics.fmean(think),
                        "think_ms_p95": think[min(len(think) - 1, int(0.95 * len(think)))]})
    return {"game": game_id, "players": players, "games": games, "results": results}


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "arena", help="play bots against each other",
        description="Play bots against each other with seats rotated fairly. Win rates are per seat spec, "
                    "with 95%% Wilson intervals; a shared win counts as a win for each winner (so rates of "
                    "all specs can add up to more than 1). Seat specs: random, mcts:easy|normal|hard, "
                    "optionally mcts:normal@c=0.5.")
    parser.add_argument("--game", required=True, choices=list(GAMES))
    parser.add_argument("--players", type=int, required=True)
    parser.add_argument("--seats", required=True, help="comma-separated seat specs, one per player")
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--options", type=orjson.loads, default={}, help="game options as JSON")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    report = run_arena(args.game, args.players, args.seats.split(","), args.games, args.seed, args.options)
    if args.json:
        print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
        return 0
    print(f"{report['game']}, {report['players']} players, {report['games']} games")
    print(f"{'seats':<16} {'win rate':>8} {'95% CI':>15} {'mean score':>10} {'think ms':>9} {'p95 ms':>8}")
    for r in report["results"]:
        print(f"{r['seats']:<16} {r['win_rate']:>8.2f} {r['ci95'][0]:>7.2f}-{r['ci95'][1]:<7.2f} "
              f"{r['mean_score']:>10.2f} {r['think_ms_mean']:>9.1f} {r['think_ms_p95']:>8.1f}")
    return 0
