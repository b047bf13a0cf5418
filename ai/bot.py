"""Bots by level: what a seat of kind ``bot`` plays. Levels are iteration and time budgets."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

from services.rules.games.base import Game, Move

from .ismcts import search
from .policies import policy_for


@dataclass(frozen=True)
class Level:
    iterations: int
    seconds: float
    c: float = 0.7


LEVELS: dict[str, Level] = {
    "easy": Level(iterations=40, seconds=0.15),
    "normal": Level(iterations=400, seconds=0.9),
    "hard": Level(iterations=2500, seconds=4.0),
}


@dataclass
class BotStats:
    moves: int = 0
    iterations: int = 0
    think_s: list[float] = field(default_factory=list)


class Bot:
    """A seeded ISMCTS player: the same state, seat and seed always give the same move."""

    def __init__(self, level: str = "normal", seed: int = 0, c: float | None = None,
                 iterations: int | None = None, seconds: float | None = None) -> None:
        if level not in LEVELS:
            raise ValueError(f"unknown level {level!r}; choose from {', '.join(LEVELS)}")
        base = LEVELS[level]
        self.level = Level(iterations or base.iterations, seconds if seconds is not None else base.seconds,
                           base.c if c is None else c)
        self.rng = random.Random(seed)
        self.stats = BotStats()

    def choose(self, game: Game[Any], state: Any, seat: int) -> Move:
        start = time.perf_counter()
        result = search(game, state, seat, iterations=self.level.iterations, seconds=self.level.seconds,
                        c=self.level.c, rng=random.Random(self.rng.getrandbits(64)), policy=policy_for(game.id))
        self.stats.moves += 1
        self.stats.iterations += result.iterations
        self.stats.think_s.append(time.perf_counter() - start)
        return result.move


def choose_move(game: Game[Any], state: Any, seat: int, level: str = "normal", seed: int = 0,
                seconds: float | None = None) -> Move:
    """One move for ``seat`` from a fresh seeded bot (what workers and the hint endpoint call)."""
    return Bot(level, seed=seed, seconds=seconds).choose(game, state, seat)
