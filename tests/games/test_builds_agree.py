"""The compiled build plays exactly the games the Python sources play (issue 30).

Seeded games of every configuration of every game are traced move by move in this process (the compiled
build, where ``make install`` built one) and in a subprocess forced onto the Python sources
(``MEEPLE_PURE_PYTHON=1``): the state bytes, every seat's view, the legal moves, a determinization, the
result and outcome, and a few bot moves (the compiled ISMCTS) must be identical. The trace is a list of
per-move digests, so a difference names the game and the first move where the builds part.
"""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
from typing import Any

import orjson
import pytest

import services.rules
from ai.bot import Bot
from services.rules.games import GAMES
from tests.games.fixtures import sample_configs

#: Every player count and option value of every game (the conformance suite's configurations), two seeds each.
JOBS = [(gid, players, options, seed) for gid, game in GAMES.items() for players, options in sample_configs(game)
        for seed in (1, 2)]


def _digest(*parts: Any) -> str:
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)).hexdigest()[:16]


def trace(gid: str, players: int, options: dict[str, Any], seed: int) -> list[str]:
    """One digest per move of a seeded random game: what every public entry point answered before it."""
    game = GAMES[gid]
    rng = random.Random(seed)
    state = game.new_game(players, seed, options)
    out = []
    moves = 0
    while not game.is_over(state):
        seats = game.to_act(state)
        seat = seats[rng.randrange(len(seats))]
        legal = game.legal_moves(state, seat)
        views = [game.view(state, s) for s in (None, *range(game.seat_count(state)))]
        det = game.encode(game.determinize(state, seat, random.Random(seed * 7 + moves))).hex()
        if moves % 9 == 4:  # a bot move now and then: the search loop is compiled too
            move = Bot("novice", seed=moves, seconds=0).choose(game, state, seat)
        elif moves % 2:
            move = game.sample_move(state, seat, rng)
        else:
            move = legal[rng.randrange(len(legal))]
        out.append(_digest(game.encode(state).hex(), views, legal, det, seat, move))
        state = game.apply(state, seat, move) if moves % 3 else _in_place(game, state, seat, move)
        moves += 1
    out.append(_digest(game.encode(state).hex(), game.result(state), game.outcome(state).scores,
                       game.outcome(state).winners, game.view(state, None)))
    return out


def _in_place(game: Any, state: Any, seat: int, move: Any) -> Any:
    copy = game.clone(state)
    game.apply_in_place(copy, seat, move)
    return copy


def traces() -> list[list[str]]:
    return [trace(*job) for job in JOBS]


def test_seeded_games_trace_the_same_on_the_compiled_and_the_python_build() -> None:
    if services.rules.build() != "compiled":
        pytest.skip("no compiled build in this process (MEEPLE_PURE_PYTHON=1, or no C compiler at install)")
    env = {**os.environ, services.rules.PURE_ENV: "1"}
    out = subprocess.run([sys.executable, "-m", "tests.games.test_builds_agree"], env=env, check=True,
                         capture_output=True, text=True).stdout
    doc = orjson.loads(out)
    assert doc["build"] == "python"
    compiled = traces()
    for job, ours, theirs in zip(JOBS, compiled, doc["traces"], strict=True):
        first = next((i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b), None)
        assert first is None and len(ours) == len(theirs), (
            f"{job}: the builds part at move {first} (compiled {len(ours)} digests, Python {len(theirs)})")


if __name__ == "__main__":
    print(orjson.dumps({"build": services.rules.build(), "traces": traces()}).decode())
