"""Our games as OpenSpiel games, checked by OpenSpiel's own tools (skipped without the openspiel extra).

``pyspiel.random_sim_test`` is OpenSpiel's C++ conformance run (legal actions sorted, in range and empty for
the other players, clones equal, history, returns within the utility bounds, game length bound); OpenSpiel's
ISMCTS asserts on every simulation that the resampled world gives the searching player the same
information state, so searching is itself a check of ``resample_from_infostate``.
"""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

pyspiel = pytest.importorskip("pyspiel")

from ai import openspiel  # noqa: E402
from services.rules.games import GAMES  # noqa: E402
from tests.games.fixtures import sample_configs  # noqa: E402

#: One configuration per player count and option value, capped per game to keep the run short.
CONFIGS = [(gid, p, o) for gid in GAMES for p, o in sample_configs(GAMES[gid])[:6]]
IDS = [f"{gid}-{p}p-{orjson.dumps(o).decode()}" for gid, p, o in CONFIGS]


def test_every_game_is_registered_under_its_short_name() -> None:
    names = openspiel.register_all()
    assert set(names) == {openspiel.short_name(gid) for gid in GAMES}
    assert set(names) <= set(pyspiel.registered_names())
    game = pyspiel.load_game("meeple_clash", {"players": 2, "seed": 3, "options": '{"match": "single"}'})
    assert game.get_type().information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    assert game.num_players() == 2


@pytest.mark.parametrize(("gid", "players", "options"), CONFIGS, ids=IDS)
def test_openspiel_random_simulation_checks_pass(gid: str, players: int, options: dict[str, Any]) -> None:
    game = openspiel.load(gid, players, options, seed=5)
    pyspiel.random_sim_test(game, num_sims=2, serialize=False, verbose=False)


def walk(game: Any, seed: int) -> list[Any]:
    """OpenSpiel states along one seeded random game."""
    rng = random.Random(seed)
    state, out = game.new_initial_state(), []
    while not state.is_terminal():
        out.append(state.clone())
        state.apply_action(rng.choice(state.legal_actions()))
    return out


@pytest.mark.parametrize("gid", list(GAMES))
def test_resampling_keeps_the_information_state_and_legal_actions(gid: str) -> None:
    engine = GAMES[gid]
    players = 4 if gid == "they-who-were-8" else 2
    game = openspiel.load(gid, players, seed=7)
    sampler = pyspiel.UniformProbabilitySampler(0.0, 1.0)
    for state in walk(game, 7)[::3]:
        player = state.current_player()
        for _ in range(3):
            world = state.resample_from_infostate(player, sampler)
            assert world.current_player() == player
            assert world.information_state_string(player) == state.information_state_string(player)
            assert world.legal_actions() == state.legal_actions()
            assert engine.encode(engine.decode(engine.encode(world.state))) == engine.encode(world.state)


def test_sideboards_simultaneous_steps_are_sequentialised_without_showing_the_choice() -> None:
    """Seat 1 acts after seat 0 has submitted, and cannot tell which of seat 0's choices it was."""
    game = openspiel.load("sideboards", 2, seed=2)
    state = game.new_initial_state()
    assert state.current_player() == 0
    seen = set()
    for action in state.legal_actions():
        child = state.child(action)
        if child.current_player() == 1:
            seen.add(child.information_state_string(1))
    assert len(seen) == 1, "seat 1's information state reveals seat 0's hidden submission"
    child = state.child(state.legal_actions()[0])
    world = child.resample_from_infostate(1, pyspiel.UniformProbabilitySampler(0.0, 1.0))
    assert world.current_player() == 1 and world.information_state_string(1) == child.information_state_string(1)


@pytest.mark.parametrize("rollout", ["sample", "random"])
@pytest.mark.parametrize("gid", list(GAMES))
def test_openspiel_ismcts_plays_legal_moves(gid: str, rollout: str) -> None:
    engine = GAMES[gid]
    players = 4 if gid == "they-who-were-8" else 2
    state = engine.new_game(players, 11, {})
    player = openspiel.OpenSpielPlayer(seed=3, sims=12, rollout=rollout)
    for _ in range(4):
        if engine.is_over(state):
            break
        seat = min(engine.to_act(state))
        move = player.choose(engine, state, seat)
        assert move in engine.legal_moves(state, seat)
        state = engine.apply(state, seat, move)


def test_a_budget_of_one_simulation_still_searches() -> None:
    """OpenSpiel's ISMCTS spends its first simulation creating the root (no visit): --equal-time can ask for
    1 simulation when playouts are slow, and the player must still answer (at least 2)."""
    engine = GAMES["clash"]
    state = engine.new_game(2, 4, {"match": "single"})
    seat = min(engine.to_act(state))
    player = openspiel.OpenSpielPlayer(seed=1, sims=1, rollout="random")
    assert player.choose(engine, state, seat) in engine.legal_moves(state, seat)
    assert player.last_sims == 2
