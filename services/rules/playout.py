"""Random playouts over the engine protocol: shared by the conformance suite and the benchmarks.

Compiled with the engines (setup.py), so that ``meeple bench engines`` times the engines and not an
interpreted loop around them.
"""

from __future__ import annotations

import random
import time
from typing import Any, Final

from services.rules.games.base import Game, below, unguarded

#: No game of ours needs more decisions than this; hitting it means a game does not terminate.
MAX_DECISIONS: Final = 20_000


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
        seat = to_act[0] if len(to_act) == 1 else to_act[below(rng, len(to_act))]
        legal = game.legal_moves(state, seat)
        if not legal:
            raise RuntimeError(f"{game.id}: seat {seat} is to act but has no legal move")
        move = legal[below(rng, len(legal))]
        if in_place:
            game.apply_in_place(state, seat, move)
        else:
            state = game.apply(state, seat, move)
        moves += 1
        if moves > MAX_DECISIONS:
            raise RuntimeError(f"{game.id}: no end after {MAX_DECISIONS} moves")
    return state, moves


def timed_playouts(game: Game[Any], players: int, options: dict[str, Any], seconds: float) -> dict[str, float]:
    """Whole random games (seeds 0, 1, ...; moves drawn from one generator seeded 0) on the search's fast
    path (``apply_in_place``, the protocol methods bound without their argument checks, as in
    ``ai.ismcts.search``) for ``seconds`` of this process's CPU time, at least one game.

    Games and moves per CPU second, and the widest position seen (``max_branching``). CPU time, not wall
    time: on a shared machine the wall clock also counts the time other processes hold the core.
    """
    rng = random.Random(0)
    games = moves = branching = 0
    seed = 0
    # The engine's methods, bound once and without the argument checks, as the search holds them (every seat
    # comes from to_act and every move from legal_moves: see base.Unguarded); new_game keeps its checks.
    engine = unguarded(game)
    is_over, to_act_of, legal_moves, apply_in_place = engine.is_over, engine.to_act, engine.legal_moves, \
        engine.apply_in_place
    clock = time.process_time
    start = clock()
    deadline = start + seconds
    while clock() < deadline or games == 0:
        state = game.new_game(players, seed, options)
        seed += 1
        while not is_over(state):
            to_act = to_act_of(state)
            seat = to_act[0] if len(to_act) == 1 else to_act[below(rng, len(to_act))]
            legal = legal_moves(state, seat)
            width = len(legal)
            if width > branching:
                branching = width
            apply_in_place(state, seat, legal[below(rng, width)])
            moves += 1
        games += 1
    elapsed = clock() - start
    return {"games_per_s": games / elapsed, "moves_per_s": moves / elapsed, "games": games,
            "max_branching": branching}
