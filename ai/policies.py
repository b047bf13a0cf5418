"""Light rollout policies, per game, where uniform random play is too weak to guide the search.

A policy only ranks the legal moves it is given; it never looks at hidden information (the rollout
state is already a determinization).
"""

from __future__ import annotations

import random
from typing import Any

from services.rules.games.base import Game, Move

from .ismcts import Policy, uniform


def prefer_existing_columns(game: Game[Any], state: Any, seat: int, legal: list[Move], rng: random.Random) -> Move:
    """Fierce Women: growing a column scores more than opening new ones, so favour it 3:1."""
    grow = [m for m in legal if m.get("type") == "place" and m.get("column") != "new"]
    if grow and rng.random() < 0.75:
        return grow[rng.randrange(len(grow))]
    return legal[rng.randrange(len(legal))]


POLICIES: dict[str, Policy] = {
    "fierce-women": prefer_existing_columns,
}


def policy_for(game_id: str) -> Policy:
    return POLICIES.get(game_id, uniform)
