"""Light rollout policies, chosen by game id, where uniform random play is too weak to guide the search.

A policy picks a legal move and must stay cheap (it runs at every rollout step). It never sees hidden
information: the rollout state is already a determinization. Without a heuristic, a game's own
``sample_move`` is the policy.
"""

from __future__ import annotations

import random
from typing import Any

import orjson

from services.rules.games.base import below

from .ismcts import Game, Move, Policy, Split, uniform, whole


def prefer_existing_columns(game: Game, state: Any, seat: int, rng: random.Random) -> Move:
    """Fierce Women: growing a column toward a defined one beats opening new columns, so favour it 3:1.

    Moves are matched by their spec shape ({"type": "place", "column": int | "new"}); any other move
    set falls back to uniform choice.
    """
    legal = game.legal_moves(state, seat)
    grow = [m for m in legal if m.get("type") == "place" and m.get("column") != "new"]
    if grow and rng.random() < 0.75:
        return grow[below(rng, len(grow))]
    return legal[below(rng, len(legal))]


def clash_choices(move: Move) -> tuple[bytes, ...]:
    """CLASH: a placement is chosen as tile (with its source), then field, then side, then effect; other
    moves are one choice. Hundreds of placements become about a dozen tiles at the root."""
    if move.get("type") != "place":
        return (orjson.dumps(move, option=orjson.OPT_SORT_KEYS),)
    r, c = move["field"]
    return (f"{move['tile']}/{move['from']}".encode(), bytes((r * 3 + c,)), move["supports"].encode(),
            orjson.dumps(move["effect"], option=orjson.OPT_SORT_KEYS))


SPLITS: dict[str, Split] = {
    "clash": clash_choices,
}


def split_for(game_id: str) -> Split:
    """How the search decomposes ``game_id``'s moves into successive choices (whole moves by default)."""
    return SPLITS.get(game_id, whole)


POLICIES: dict[str, Policy] = {
    "fierce-women": prefer_existing_columns,
}


def policy_for(game_id: str) -> Policy:
    """The rollout policy of ``game_id``; uniform random for games without a heuristic."""
    return POLICIES.get(game_id, uniform)
