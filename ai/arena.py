"""``meeple arena``: bots against each other, seats rotated fairly, win rates with 95% Wilson intervals.

Only seats that are ever in ``to_act`` need a player (Fierce Women's 2-player automa is seat 2 and is
played by the engine), so ``--seats`` lists exactly ``--players`` specs and results list only those.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from .bot import LEVELS, Bot
from .ismcts import Move

if TYPE_CHECKING:
    from services.rules.games.base import Game

HELP = ("Play bots against each other with seat assignment rotated across games. Prints, per distinct "
        "seat spec, the win rate with a 95%% Wilson interval, the mean score and think time per move "
        "(mean, p95). A shared win counts as a win for each winner, so the rates can add up to more "
        "than 1. A spec on several seats of one game (partners, or two random seats) counts that game once "
        "and wins it when any of its seats wins: the interval counts games, not correlated seats. "
        "Seat specs: random, mcts:easy|normal|hard, optionally with an exploration constant "
        "override such as mcts:normal@c=0.5.")


class Player(Protocol):
    def choose(self, game: Game[Any], state: Any, seat: int) -> Move: ...


class RandomPlayer:
    """Uniformly random legal moves (the baseline)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def choose(self, game: Game[Any], state: Any, seat: int) -> Move:
        legal = game.legal_moves(state, seat)
        return legal[self.rng.randrange(len(legal))]


def parse_spec(spec: str) -> tuple[str, str | None, float | None]:
    """``random`` -> ("random", None, None); ``mcts:normal@c=0.5`` -> ("mcts", "normal", 0.5)."""
    if spec == "random":
        return ("random", None, None)
    kind, _, rest = spec.partition(":")
    level, _, extra = rest.partition("@")
    c: float | None = None
    if extra:
        name, _, value = extra.partition("=")
        try:
            c = float(value)
        except ValueError:
            c = None
        if name != "c" or c is None or c < 0:
            raise ValueError(f"bad override {extra!r} in {spec!r}: use @c=<number>")
    if kind != "mcts" or level not in LEVELS:
        raise ValueError(f"unknown seat spec {spec!r}: use random or mcts:{'|'.join(LEVELS)}[@c=0.7]")
    return ("mcts", level, c)


def make_player(spec: str, seed: int) -> Player:
    kind, level, c = parse_spec(spec)
    if kind == "random":
        return RandomPlayer(seed)
    assert level is not None
    return Bot(level, seed=seed, c=c)


def wilson(wins: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval: sensible at rates near 0 or 1 and for small n (unlike p +- 2 sd)."""
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
    """One game; every pending seat (simultaneous steps included) is asked in seat order."""
    state = game.new_game(players, seed, options)
    actors = {seat: make_player(spec, seed * 1009 + seat) for seat, spec in enumerate(seat_specs)}
    while not game.is_over(state):
        seat = min(game.to_act(state))
        if seat not in actors:
            raise RuntimeError(f"{game.id}: seat {seat} is to act but only {players} seats have players")
        start = time.perf_counter()
        move = actors[seat].choose(game, state, seat)
        tallies[seat_specs[seat]].think_ms.append((time.perf_counter() - start) * 1000)
        state = game.apply(state, seat, move)
    outcome = game.outcome(state)
    for seat, spec in enumerate(seat_specs):
        tallies[spec].scores.append(outcome.scores[seat])
    # One observation per spec and game: partners win or lose together, so counting their seats apart
    # would double the sample and narrow the interval without any new evidence.
    for spec in dict.fromkeys(seat_specs):
        tallies[spec].games += 1
        tallies[spec].wins += any(seat in outcome.winners for seat, s in enumerate(seat_specs) if s == spec)


def p95(values: list[float]) -> float:
    ordered = sorted(values) or [0.0]
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def arena(game: Game[Any], players: int, specs: list[str], games: int, seed: int = 0,
          options: dict[str, Any] | None = None, progress: bool = True) -> dict[str, Any]:
    """Play ``games`` games and return the report (the ``--json`` document)."""
    if len(specs) != players:
        raise ValueError(f"--seats needs {players} specs (one per player), got {len(specs)}")
    for spec in specs:
        parse_spec(spec)
    tallies: dict[str, Tally] = defaultdict(Tally)
    for i in range(games):
        shift = i % players  # rotate who sits where, so no spec keeps an advantageous seat
        seating = specs[shift:] + specs[:shift]
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
        results.append({"seats": spec, "win_rate": tally.wins / max(tally.games, 1), "ci95": [lo, hi],
                        "mean_score": statistics.fmean(tally.scores) if tally.scores else 0.0,
                        "think_ms_mean": statistics.fmean(tally.think_ms) if tally.think_ms else 0.0,
                        "think_ms_p95": p95(tally.think_ms)})
    return {"game": game.id, "players": players, "games": games, "results": results}


def add_arena_parser(sub: Any) -> argparse.ArgumentParser:
    """Add ``arena`` to a subparsers object (``meeple arena``)."""
    parser: argparse.ArgumentParser = sub.add_parser("arena", help="play bots against each other",
                                                     description=HELP)
    configure(parser)
    from .ladder import hook  # issue 20: ``--ladder`` rates the bot levels (ai/ladder.py)

    hook(parser)
    return parser


#: services/cli.py adds optional subcommands through ``add_parser(sub)``.
add_parser = add_arena_parser


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--game", required=True, help="game id, e.g. clash")
    parser.add_argument("--players", type=int, required=True)
    parser.add_argument("--seats", required=True,
                        help="comma-separated seat specs, one per player: random, mcts:normal, mcts:hard@c=0.5")
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--options", type=orjson.loads, default={}, help="game options as a JSON object")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.set_defaults(func=run_arena)


def run_arena(args: argparse.Namespace) -> int:
    from services.rules.games import get_game

    try:
        game = get_game(args.game)
        report = arena(game, args.players, args.seats.split(","), args.games, args.seed, args.options)
    except (KeyError, ValueError) as exc:
        print(f"meeple arena: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(orjson.dumps(report).decode())
        return 0
    print(f"{report['game']}, {report['players']} players, {report['games']} games")
    print(f"{'seats':<20} {'win rate':>8} {'95% CI':>13} {'mean score':>10} {'think ms':>9} {'p95 ms':>8}")
    for r in report["results"]:
        ci = f"{r['ci95'][0]:.2f}-{r['ci95'][1]:.2f}"
        print(f"{r['seats']:<20} {r['win_rate']:>8.2f} {ci:>13} {r['mean_score']:>10.2f} "
              f"{r['think_ms_mean']:>9.1f} {r['think_ms_p95']:>8.1f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ai.arena", description=HELP)
    configure(parser)
    return run_arena(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
