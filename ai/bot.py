"""Bots by level: what a seat of kind ``bot`` plays.

A level is a strength, not an iteration count: its place on the ladder (``target``, a rating on the
players' scale with uniformly random play at 0, see ``ai/rating.py``) and a think-time cap. Each game
reaches a target with its own iteration budget, found by ``meeple arena --calibrate`` and shipped in
``ai/budgets.json`` (with the command and date that measured it): a player who picks ``normal`` meets the
same distance from random play, and so about the same difficulty, in every game. The budget is an
iteration count (the same moves on any machine); the cap, on the wall clock, only guards a slow or busy
machine.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from .ismcts import Move, search
from .policies import CUTOFFS, EVALUATORS, POLICIES, REWARDS, SPLITS, tuning_for

if TYPE_CHECKING:
    from services.rules.games.base import Game

BUDGETS_PATH = Path(__file__).with_name("budgets.json")


@dataclass(frozen=True)
class Level:
    """``target``: rating above random play that the level's budget is calibrated to reach in every game;
    ``seconds``: the think-time cap per move; ``iterations``: the budget of a game ``ai/budgets.json`` does not
    list (a game added since the last calibration)."""

    target: float
    seconds: float
    iterations: int


#: Weakest first. ``easy``/``normal``/``hard`` are the levels people pick; ``novice``, ``casual`` and ``strong``
#: are rungs between and below them so that skill matchmaking's bot fill can match a player's strength more
#: closely (their ratings ship in ``services/core/competition/bot_ratings.json``, measured by
#: ``meeple arena --ladder``).
LEVELS: dict[str, Level] = {
    "novice": Level(target=6.0, seconds=0.1, iterations=10),
    "easy": Level(target=18.0, seconds=0.25, iterations=40),
    "casual": Level(target=26.0, seconds=0.4, iterations=100),
    "normal": Level(target=32.0, seconds=0.5, iterations=300),
    "strong": Level(target=38.0, seconds=2.0, iterations=800),
    "hard": Level(target=44.0, seconds=5.0, iterations=2000),
}


@functools.cache
def budgets() -> dict[str, Any]:
    """The shipped calibration (``ai/budgets.json``); empty when the file is absent."""
    try:
        doc: dict[str, Any] = orjson.loads(BUDGETS_PATH.read_bytes())
    except FileNotFoundError:
        return {}
    return doc


def budget_of(game_id: str, level: str, table: dict[str, Any] | None = None) -> int:
    """The iteration budget with which ``level`` reaches its target in ``game_id`` (its fallback if uncalibrated),
    from ``table`` (default: the shipped ``ai/budgets.json``)."""
    entry = (budgets() if table is None else table).get("games", {}).get(game_id, {}).get("levels", {}).get(level)
    return int(entry["iterations"]) if entry else LEVELS[level].iterations


@dataclass
class BotStats:
    moves: int = 0
    iterations: int = 0
    last_iterations: int = 0
    think_s: list[float] = field(default_factory=list)


class Bot:
    """A seeded ISMCTS player: the same state, seat and seed give the same move (iteration-bound search).

    Each call draws its search seed from the bot's own generator, so a bot playing a whole game is
    reproducible from its seed too. ``iterations`` replaces the game's calibrated budget, ``seconds`` the
    level's cap (0: no cap).
    """

    def __init__(self, level: str = "normal", seed: int = 0, c: float | None = None,
                 iterations: int | None = None, seconds: float | None = None,
                 overrides: dict[str, str] | None = None) -> None:
        if level not in LEVELS:
            raise ValueError(f"unknown level {level!r}; choose from {', '.join(LEVELS)}")
        self.level_name = level
        self.level = LEVELS[level]
        self.iterations = iterations
        self.seconds = self.level.seconds if seconds is None else seconds
        self.c = c
        #: Search settings replaced by name for experiments (``ai.policies.Tuning.with_overrides``).
        self.overrides = dict(overrides or {})
        tuning_for("").with_overrides(self.overrides)  # an unknown name fails here, not at the first move
        self.rng = random.Random(seed)
        self.stats = BotStats()
        #: What the time cap counts: wall-clock seconds, or the process's CPU seconds (experiments on a
        #: shared machine, see ``meeple arena --cpu-time``).
        self.clock: Callable[[], float] = time.perf_counter

    def budget(self, game_id: str) -> int:
        return self.iterations or budget_of(game_id, self.level_name)

    def choose(self, game: Game[Any], state: Any, seat: int) -> Move:
        start = self.clock()
        tuning = tuning_for(game.id).with_overrides(self.overrides)
        result = search(game, state, seat, iterations=self.budget(game.id), seconds=self.seconds or None,
                        c=tuning.c if self.c is None else self.c, rng=random.Random(self.rng.getrandbits(64)),
                        policy=POLICIES[tuning.policy], split=SPLITS[tuning.split], cutoff=CUTOFFS[tuning.cutoff],
                        decouple=tuning.decouple, clock=self.clock, reward_of=REWARDS[tuning.reward],
                        max_rollout=tuning.horizon, evaluate=EVALUATORS[tuning.evaluate])
        self.stats.moves += 1
        self.stats.iterations += result.iterations
        self.stats.last_iterations = result.iterations
        self.stats.think_s.append(self.clock() - start)
        return result.move


def choose_move(game: Game[Any], state: Any, seat: int, level: str = "normal", seed: int = 0,
                time_limit: float | None = None, seconds: float | None = None) -> Move:
    """One move for ``seat`` from a fresh seeded bot (workers and the hint endpoint call this).

    ``time_limit`` (alias ``seconds``) overrides the level's time cap; 0 means no cap (fully reproducible).
    """
    cap = time_limit if time_limit is not None else seconds
    return Bot(level, seed=seed, seconds=cap).choose(game, state, seat)
