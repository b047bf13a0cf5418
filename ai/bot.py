"""Bots by level: what a seat of kind ``bot`` plays. Levels are iteration budgets with a time cap."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .ismcts import Move, search
from .policies import CUTOFFS, POLICIES, SPLITS, tuning_for

if TYPE_CHECKING:
    from services.rules.games.base import Game


@dataclass(frozen=True)
class Level:
    """``iterations`` decides the move (reproducible); ``seconds`` caps the think time on slow positions."""

    iterations: int
    seconds: float
    c: float = 0.7


#: Weakest first. ``easy``/``normal``/``hard`` are the levels people pick; ``novice``, ``casual`` and ``strong``
#: are rungs between and below them so that skill matchmaking's bot fill can match a player's strength more
#: closely (their ratings ship in ``services/gateway/bot_ratings.json``, measured by ``meeple arena --ladder``).
LEVELS: dict[str, Level] = {
    "novice": Level(iterations=10, seconds=0.1),
    "easy": Level(iterations=40, seconds=0.25),
    "casual": Level(iterations=100, seconds=0.5),
    "normal": Level(iterations=300, seconds=0.9),
    "strong": Level(iterations=800, seconds=2.5),
    "hard": Level(iterations=2000, seconds=5.0),
}


@dataclass
class BotStats:
    moves: int = 0
    iterations: int = 0
    last_iterations: int = 0
    think_s: list[float] = field(default_factory=list)


class Bot:
    """A seeded ISMCTS player: the same state, seat and seed give the same move (iteration-bound search).

    Each call draws its search seed from the bot's own generator, so a bot playing a whole game is
    reproducible from its seed too.
    """

    def __init__(self, level: str = "normal", seed: int = 0, c: float | None = None,
                 iterations: int | None = None, seconds: float | None = None,
                 overrides: dict[str, str] | None = None) -> None:
        if level not in LEVELS:
            raise ValueError(f"unknown level {level!r}; choose from {', '.join(LEVELS)}")
        base = LEVELS[level]
        self.level_name = level
        self.level = Level(iterations or base.iterations, base.seconds if seconds is None else seconds,
                           base.c if c is None else c)
        self.c = c
        #: Search settings replaced by name for experiments (``ai.policies.Tuning.with_overrides``).
        self.overrides = dict(overrides or {})
        tuning_for("").with_overrides(self.overrides)  # an unknown name fails here, not at the first move
        self.rng = random.Random(seed)
        self.stats = BotStats()
        #: What the time cap counts: wall-clock seconds, or the process's CPU seconds (experiments on a
        #: shared machine, see ``meeple arena --cpu-time``).
        self.clock: Callable[[], float] = time.perf_counter

    def choose(self, game: Game[Any], state: Any, seat: int) -> Move:
        start = self.clock()
        tuning = tuning_for(game.id).with_overrides(self.overrides)
        result = search(game, state, seat, iterations=self.level.iterations, seconds=self.level.seconds or None,
                        c=tuning.c if self.c is None else self.c, rng=random.Random(self.rng.getrandbits(64)),
                        policy=POLICIES[tuning.policy], split=SPLITS[tuning.split], cutoff=CUTOFFS[tuning.cutoff],
                        decouple=tuning.decouple, clock=self.clock)
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
