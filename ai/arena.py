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
from collections.abc import Callable
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
        "Seat specs: random; mcts:easy|normal|hard, optionally with an exploration constant "
        "override such as mcts:normal@c=0.5; ospiel:ismcts[@sims=N,rollout=sample|random,c=X], OpenSpiel's "
        "ISMCTS (needs the openspiel extra) with the project's playout policy (sample) or uniform playouts "
        "over legal_actions (random).")


class Player(Protocol):
    def choose(self, game: Game[Any], state: Any, seat: int) -> Move: ...


class RandomPlayer:
    """Uniformly random legal moves (the baseline)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def choose(self, game: Game[Any], state: Any, seat: int) -> Move:
        legal = game.legal_moves(state, seat)
        return legal[self.rng.randrange(len(legal))]


@dataclass(frozen=True)
class Spec:
    """A parsed seat spec: ``random``, ``mcts:<level>[@c=X,it=N,ms=T,<tuning>=V]`` or
    ``ospiel:ismcts[@sims=N,rollout=R,c=X]``."""

    kind: str
    level: str | None = None
    c: float | None = None
    sims: int = 300
    rollout: str = "sample"
    #: mcts: an iteration budget (``it``) or a time budget per move in ms (``ms``, iterations unbounded)
    #: instead of the level's, and search settings replaced by name (``ai.policies.Tuning``).
    iterations: int | None = None
    ms: float | None = None
    overrides: tuple[tuple[str, str], ...] = ()


#: Search settings an mcts seat may replace (``ai.policies.Tuning``'s fields).
TUNING_KEYS = frozenset({"policy", "split", "cutoff", "decouple", "reward", "horizon", "evaluate"})
SPEC_HELP = (f"random, mcts:{{{'|'.join(LEVELS)}}}[@c=0.7,it=N,ms=T,policy=P,split=S,cutoff=X,decouple=0|1,"
             "reward=win|margin,horizon=N,evaluate=none|standing], "
             "ospiel:ismcts[@sims=300,rollout=sample|random,c=0.7]")


def parse_spec(spec: str) -> Spec:
    """``random``; ``mcts:normal@c=0.5``; ``mcts:normal@ms=200,policy=uniform`` (a time budget and a search
    setting replaced); ``ospiel:ismcts@sims=500,rollout=random`` (OpenSpiel's ISMCTS)."""
    if spec == "random":
        return Spec("random")
    kind, _, rest = spec.partition(":")
    name, _, extra = rest.partition("@")
    fields: dict[str, str] = {}
    for item in filter(None, extra.split(",")):
        key, eq, value = item.partition("=")
        if not eq or key in fields:
            raise ValueError(f"bad override {item!r} in {spec!r}: use key=value")
        fields[key] = value
    allowed = {"mcts": {"c", "it", "ms", *TUNING_KEYS}, "ospiel": {"c", "sims", "rollout"}}.get(kind)
    if allowed is None or (kind == "mcts" and name not in LEVELS) or (kind == "ospiel" and name != "ismcts"):
        raise ValueError(f"unknown seat spec {spec!r}: use {SPEC_HELP}")
    if set(fields) - allowed:
        raise ValueError(f"bad override in {spec!r}: {kind} takes {', '.join(sorted(allowed))}")
    try:
        c = float(fields["c"]) if "c" in fields else None
        sims = int(fields.get("sims", "300"))
        iterations = int(fields["it"]) if "it" in fields else None
        ms = float(fields["ms"]) if "ms" in fields else None
    except ValueError:
        raise ValueError(f"bad number in {spec!r}") from None
    rollout = fields.get("rollout", "sample")
    if (c is not None and c < 0) or sims < 1 or rollout not in ("sample", "random") or (
            iterations is not None and iterations < 1) or (ms is not None and ms <= 0):
        raise ValueError(f"bad override in {spec!r}: c >= 0, sims >= 1, it >= 1, ms > 0, rollout sample or random")
    if kind == "mcts":
        overrides = tuple((k, v) for k, v in fields.items() if k in TUNING_KEYS)
        try:
            from .policies import Tuning

            Tuning().with_overrides(dict(overrides))
        except ValueError as exc:
            raise ValueError(f"{exc} in {spec!r}") from None
        return Spec("mcts", name, c, iterations=iterations, ms=ms, overrides=overrides)
    return Spec("ospiel", name, c, sims, rollout)


def split_seats(text: str) -> list[str]:
    """``--seats``: specs separated by commas; a comma inside a spec's overrides (``@sims=9,rollout=random``)
    continues that spec, since a new spec always starts with ``random``, ``mcts:`` or ``ospiel:``."""
    specs: list[str] = []
    for part in text.split(","):
        if specs and "@" in specs[-1] and not part.startswith(("random", "mcts:", "ospiel:")):
            specs[-1] += "," + part
        else:
            specs.append(part)
    return specs


def make_player(spec: str, seed: int, clock: Callable[[], float] = time.perf_counter,
                uncapped: bool = False) -> Player:
    """The player of a seat spec; an mcts bot's time cap counts on ``clock`` (``uncapped``: no time cap, the
    iteration budget alone decides, as in the ladder)."""
    parsed = parse_spec(spec)
    if parsed.kind == "random":
        return RandomPlayer(seed)
    if parsed.kind == "ospiel":
        try:
            from .openspiel import OpenSpielPlayer
        except ImportError as exc:
            raise ValueError(f"{spec} needs OpenSpiel: pip install -e '.[openspiel]' ({exc})") from None
        return OpenSpielPlayer(seed, sims=parsed.sims, rollout=parsed.rollout,
                               c=0.7 if parsed.c is None else parsed.c)
    assert parsed.level is not None
    if parsed.ms is not None:  # a time budget: as many iterations as fit
        bot = Bot(parsed.level, seed=seed, c=parsed.c, iterations=parsed.iterations or 10**9,
                  seconds=parsed.ms / 1000, overrides=dict(parsed.overrides))
    else:
        bot = Bot(parsed.level, seed=seed, c=parsed.c, iterations=parsed.iterations,
                  seconds=0 if uncapped else None, overrides=dict(parsed.overrides))
    bot.clock = clock
    return bot


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
    sims: list[int] = field(default_factory=list)


class EqualTime:
    """``--equal-time``: before each move of an OpenSpiel seat, its simulation budget is set so that its
    mean think time per move tracks the mean think time of the project's bots (the ``mcts`` seats) in the
    same run: the budget is the time that brings its running total to (moves + 1) x the bots' mean,
    within a third and three times that mean, converted with its own measured time per simulation.
    Measured in the same run, so a busy machine slows both sides alike."""

    def __init__(self, start_ms: float = 150.0) -> None:
        self.start_ms = start_ms
        self.ref_ms, self.ref_moves = 0.0, 0
        self.own: dict[str, tuple[float, int]] = {}
        self.ms_per_sim: dict[str, float] = {}

    def target_ms(self) -> float:
        return self.ref_ms / self.ref_moves if self.ref_moves else self.start_ms

    def budget(self, spec: str) -> int:
        total, moves = self.own.get(spec, (0.0, 0))
        target = self.target_ms()
        want = min(max(target * (moves + 1) - total, target / 3), 3 * target)
        per = self.ms_per_sim.get(spec)
        return 30 if per is None else max(1, round(want / per))

    def record(self, spec: str, kind: str, ms: float, sims: int) -> None:
        if kind == "mcts":
            self.ref_ms += ms
            self.ref_moves += 1
        elif kind == "ospiel":
            total, moves = self.own.get(spec, (0.0, 0))
            self.own[spec] = (total + ms, moves + 1)
            if sims > 0:  # a forced move searches nothing and says nothing about the cost of a simulation
                old = self.ms_per_sim.get(spec)
                self.ms_per_sim[spec] = ms / sims if old is None else 0.8 * old + 0.2 * ms / sims


def play_one(game: Game[Any], players: int, options: dict[str, Any], seat_specs: list[str], seed: int,
             tallies: dict[str, Tally], clock: EqualTime | None = None,
             timer: Callable[[], float] = time.perf_counter) -> None:
    """One game; every pending seat (simultaneous steps included) is asked in seat order. Think times are
    measured on ``timer`` (wall clock, or the process's CPU time with ``--cpu-time``)."""
    state = game.new_game(players, seed, options)
    actors = {seat: make_player(spec, seed * 1009 + seat, timer) for seat, spec in enumerate(seat_specs)}
    while not game.is_over(state):
        seat = min(game.to_act(state))
        if seat not in actors:
            raise RuntimeError(f"{game.id}: seat {seat} is to act but only {players} seats have players")
        spec, actor = seat_specs[seat], actors[seat]
        kind = parse_spec(spec).kind
        if clock is not None and kind == "ospiel":
            actor.sims = clock.budget(spec)  # type: ignore[attr-defined]
        start = timer()
        move = actor.choose(game, state, seat)
        ms = (timer() - start) * 1000
        tallies[spec].think_ms.append(ms)
        sims = getattr(actor, "last_sims", 0)
        if kind == "ospiel":
            tallies[spec].sims.append(sims)
        if clock is not None:
            clock.record(spec, kind, ms, sims)
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
          options: dict[str, Any] | None = None, progress: bool = True, equal_time: bool = False,
          cpu_time: bool = False, partial: str | None = None) -> dict[str, Any]:
    """Play ``games`` games and return the report (the ``--json`` document). ``cpu_time``: think times,
    time budgets and equal time count the process's CPU seconds instead of the wall clock, so that other
    work on a shared machine slows neither side's search. ``partial``: a file that holds the report of the
    games played so far, rewritten after each game (long runs)."""
    if len(specs) != players:
        raise ValueError(f"--seats needs {players} specs (one per player), got {len(specs)}")
    kinds = {parse_spec(spec).kind for spec in specs}
    if equal_time and not {"mcts", "ospiel"} <= kinds:
        raise ValueError("--equal-time needs an mcts seat (the reference) and an ospiel seat (calibrated)")
    clock = EqualTime() if equal_time else None
    tallies: dict[str, Tally] = defaultdict(Tally)
    for i in range(games):
        shift = i % players  # rotate who sits where, so no spec keeps an advantageous seat
        seating = specs[shift:] + specs[:shift]
        play_one(game, players, options or {}, seating, seed + i, tallies, clock,
                 time.process_time if cpu_time else time.perf_counter)
        if progress:
            done = int(30 * (i + 1) / games)
            print(f"\r[{'#' * done}{'.' * (30 - done)}] {i + 1}/{games} games", end="", file=sys.stderr, flush=True)
        if partial:
            with open(partial, "wb") as f:
                f.write(orjson.dumps(_report(game, players, i + 1, options, equal_time, cpu_time, specs, tallies)))
    if progress:
        print(file=sys.stderr)
    return _report(game, players, games, options, equal_time, cpu_time, specs, tallies)


def _report(game: Game[Any], players: int, games: int, options: dict[str, Any] | None, equal_time: bool,
            cpu_time: bool, specs: list[str], tallies: dict[str, Tally]) -> dict[str, Any]:
    results = []
    for spec in dict.fromkeys(specs):
        tally = tallies[spec]
        lo, hi = wilson(tally.wins, tally.games)
        results.append({"seats": spec, "win_rate": tally.wins / max(tally.games, 1), "ci95": [lo, hi],
                        "mean_score": statistics.fmean(tally.scores) if tally.scores else 0.0,
                        "think_ms_mean": statistics.fmean(tally.think_ms) if tally.think_ms else 0.0,
                        "think_ms_p95": p95(tally.think_ms),
                        **({"sims_mean": statistics.fmean(tally.sims)} if tally.sims else {})})
    return {"game": game.id, "players": players, "games": games, "options": options or {},
            "equal_time": equal_time, "cpu_time": cpu_time, "results": results}


def add_arena_parser(sub: Any) -> argparse.ArgumentParser:
    """Add ``arena`` to a subparsers object (``meeple arena``)."""
    parser: argparse.ArgumentParser = sub.add_parser("arena", help="play bots against each other",
                                                     description=HELP)
    configure(parser)
    return parser


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--game", required=True, help="game id, e.g. clash")
    parser.add_argument("--players", type=int, required=True)
    parser.add_argument("--seats", required=True,
                        help=f"comma-separated seat specs, one per player: {SPEC_HELP}")
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--options", type=orjson.loads, default={}, help="game options as a JSON object")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--equal-time", action="store_true",
                        help="set each ospiel seat's simulations before every move so that its mean think time "
                             "per move tracks the mcts seats' mean in this run")
    parser.add_argument("--cpu-time", action="store_true",
                        help="think times, ms= budgets and --equal-time count this process's CPU seconds, not "
                             "the wall clock (fair comparisons on a machine shared with other work)")
    parser.add_argument("--partial", default=None,
                        help="rewrite this file with the report of the games played so far after every game")
    parser.set_defaults(func=run_arena)


def run_arena(args: argparse.Namespace) -> int:
    from services.rules.games import get_game

    try:
        game = get_game(args.game)
        report = arena(game, args.players, split_seats(args.seats), args.games, args.seed, args.options,
                       equal_time=args.equal_time, cpu_time=args.cpu_time, partial=args.partial)
    except (KeyError, ValueError) as exc:
        print(f"meeple arena: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(orjson.dumps(report).decode())
        return 0
    print(f"{report['game']}, {report['players']} players, {report['games']} games")
    print(f"{'seats':<40} {'win rate':>8} {'95% CI':>13} {'mean score':>10} {'think ms':>9} {'p95 ms':>8}")
    for r in report["results"]:
        ci = f"{r['ci95'][0]:.2f}-{r['ci95'][1]:.2f}"
        print(f"{r['seats']:<40} {r['win_rate']:>8.2f} {ci:>13} {r['mean_score']:>10.2f} "
              f"{r['think_ms_mean']:>9.1f} {r['think_ms_p95']:>8.1f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ai.arena", description=HELP)
    configure(parser)
    return run_arena(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
