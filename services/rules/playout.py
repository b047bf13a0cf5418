"""Random playouts over the engine protocol: shared by the conformance suite and the benchmarks."""

from __future__ import annotations

import random
from typing import Any

from services.rules.games.base import Game

#: No game of ours needs more decisions than this; hitting it means a game does not terminate.
MAX_DECISIONS = 20_000


def random_playout(game: Game[Any], state: Any, rng: random.Random, in_place: bool = True) -> tuple[Any, int]:
    """Play uniformly random legal moves to the end; returns (final state, number of moves).

    ``in_place`` uses the search's fast path (one clone, then ``apply_in_place``); otherwise every
    move goes through the immutable ``apply``, as the rules service does.
    """
    if in_place:
        state = game.clone(state)
    moves = 0
    while not game.is_over(state):
        to_act = game.to_act(state)
        if not to_act:
            raise RuntimeError(f"{game.id}: no seat to act in a running game")
        seat = to_act[0] if len(to_act) == 1 else rng.choice(to_act)
        legal = game.legal_moves(state, seat)
        if not legal:
            raise RuntimeError(f"{game.id}: seat {seat} is to act but has no legal move")
        move = legal[rng.randrange(len(legal))]
        if in_place:
            game.apply_in_place(state, seat, move)
        else:
            state = game.apply(state, seat, move)
        moves += 1
        if moves > MAX_DECISIONS:
            raise RuntimeError(f"{game.id}: no end after {MAX_DECISIONS} moves")
    return state, moves
