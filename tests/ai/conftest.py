"""Shared helpers: registered engines (if the registry imports) plus the tiny hidden-information game."""

from __future__ import annotations

import random
from typing import Any

from ai.bot import Bot

try:  # the registry fills up as engines land; the tiny game keeps the core tests independent of it
    from services.rules.games import GAMES as REGISTERED
except ImportError:  # pragma: no cover - only while an engine listed in the registry is missing
    REGISTERED = {}


def positions(game: Any, players: int, count: int = 4, seed: int = 2, p: float = 0.3) -> list[Any]:
    """States along a seeded random game where someone is to act."""
    rng = random.Random(seed)
    state = game.new_game(players, seed, {})
    found: list[Any] = []
    while not game.is_over(state) and len(found) < count:
        if rng.random() < p:
            found.append(state)
        seat = rng.choice(game.to_act(state))
        state = game.apply(state, seat, rng.choice(game.legal_moves(state, seat)))
    return found


def small_bot(seed: int = 3, iterations: int = 25) -> Bot:
    """No time cap, so the iteration budget alone decides: fully reproducible."""
    return Bot("easy", seed=seed, iterations=iterations, seconds=0)
