"""``meeple bench engines``: in-process random playouts per game and player count, on one core.

Figures: full games per second and moves per second on the search's fast path (clone once, then
``legal_moves`` + ``apply_in_place``), the largest number of legal moves seen in one position during
those playouts (``max_branching``: what a search must be ready to expand), and the mean cost in
microseconds of ``legal_moves``, of ``apply_in_place`` and of the immutable ``apply`` the rules service uses.
For games whose final scoring is a real computation and that expose it as ``score_seat(state, seat)``
(Sideboards: exact pattern packing), ``scoring_us`` is the mean cost of scoring one seat of a finished
game from scratch.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any

import orjson

from services.rules.games import GAMES, get_game
from services.rules.games.base import Game

#: The configurations the issues' speed targets name (Fierce Women with action cards, CLASH single
#: games); override with --option GAME:KEY=JSON.
TARGET_OPTIONS: dict[str, dict[str, Any]] = {
    "fierce-women": {"action_cards": True},
    "clash": {"match": "single"},
}


def playout_rate(game: Game[Any], players: int, options: dict[str, Any], seconds: float) -> dict[str, float]:
    """Games and moves per second of uniformly random playouts (fast path), and the widest position seen."""
    rng = random.Random(0)
    games = moves = branching = 0
    seed = 0
    deadline = time.perf_counter() + seconds
    start = time.perf_counter()
    while time.perf_counter() < deadline or games == 0:
        state = game.new_game(players, seed, options)
        seed += 1
        while not game.is_over(state):
            to_act = game.to_act(state)
            seat = to_act[0] if len(to_act) == 1 else to_act[rng.randrange(len(to_act))]
            legal = game.legal_moves(state, seat)
            width = len(legal)
            if width > branching:
                branching = width
            game.apply_in_place(state, seat, legal[rng.randrange(width)])
            moves += 1
        games += 1
    elapsed = time.perf_counter() - start
    return {"games_per_s": games / elapsed, "moves_per_s": moves / elapsed, "games": games,
            "max_branching": branching}


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


def run_bench(game_ids: list[str], seconds: float, overrides: dict[str, dict[str, Any]]) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for gid in game_ids:
        game = get_game(gid)
        options = {**TARGET_OPTIONS.get(gid, {}), **overrides.get(gid, {})}
        per_players: dict[str, Any] = {}
        for players in range(game.min_players, game.max_players + 1):
            figures = playout_rate(game, players, options, seconds)
            figures.update(call_costs(game, players, options, seconds / 2))
            figures.update(scoring_cost(game, players, options, seconds / 4))
            per_players[str(players)] = {**{k: round(v, 2) for k, v in figures.items()}, "options": options}
            print(f"  {gid} {players}p done", file=sys.stderr)
        report[gid] = per_players
    return report


def print_table(report: dict[str, Any]) -> None:
    header = f"{'game':<16} {'players':>7} {'games/s':>10} {'moves/s':>10} {'legal µs':>9} {'apply µs':>9} " \
             f"{'in-place µs':>11} {'max_branching':>13} {'scoring µs':>10}  options"
    print(header)
    print("-" * len(header))
    for gid, per_players in report.items():
        for players, f in per_players.items():
            scoring = f"{f['scoring_us']:>10.1f}" if "scoring_us" in f else f"{'-':>10}"
            print(f"{gid:<16} {players:>7} {f['games_per_s']:>10.1f} {f['moves_per_s']:>10.0f} "
                  f"{f['legal_us']:>9.1f} {f['apply_us']:>9.1f} {f['apply_in_place_us']:>11.1f} "
                  f"{f['max_branching']:>13} {scoring}  "
                  f"{orjson.dumps(f['options']).decode()}")
    if any("scoring_us" in f for per_players in report.values() for f in per_players.values()):
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
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.set_defaults(func=run)
    from services import bench_rules  # imported here: it pulls in the gRPC server

    bench_rules.add_parser(sub)


def run(args: argparse.Namespace) -> int:
    overrides: dict[str, dict[str, Any]] = {}
    for gid, key, value in args.option:
        overrides.setdefault(gid, {})[key] = value
    report = run_bench(args.game or list(GAMES), args.seconds, overrides)
    if args.json:
        print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
    else:
        print_table(report)
    return 0
