"""ISMCTS bots: legal, reproducible, and provably blind to hidden information."""

from __future__ import annotations

import random
from typing import Any

import pytest

from ai.arena import run_arena, wilson
from ai.bot import Bot
from ai.ismcts import move_key, rewards
from services.rules.games import GAMES
from services.rules.playout import random_playout


def positions(gid: str, count: int = 4, seed: int = 2) -> list[Any]:
    """States along a seeded random game, where someone is to act."""
    game = GAMES[gid]
    rng = random.Random(seed)
    state = game.new_game(max(game.min_players, 2), seed, {})
    found = []
    while not game.is_over(state) and len(found) < count:
        if rng.random() < 0.3:
            found.append(state)
        seat = rng.choice(game.to_act(state))
        state = game.apply(state, seat, rng.choice(game.legal_moves(state, seat)))
    return found


def small_bot(seed: int = 3) -> Bot:
    return Bot("easy", seed=seed, iterations=25, seconds=0)  # no time limit: fully reproducible


@pytest.mark.parametrize("gid", list(GAMES))
def test_bot_plays_legal_moves_for_every_seat_to_act(gid: str) -> None:
    game = GAMES[gid]
    for state in positions(gid):
        for seat in game.to_act(state):
            move = small_bot().choose(game, state, seat)
            assert move_key(move) in {move_key(m) for m in game.legal_moves(state, seat)}


@pytest.mark.parametrize("gid", list(GAMES))
def test_same_state_and_seed_give_the_same_move(gid: str) -> None:
    game = GAMES[gid]
    for state in positions(gid, count=2):
        seat = game.to_act(state)[0]
        assert small_bot(7).choose(game, state, seat) == small_bot(7).choose(game, state, seat)


@pytest.mark.parametrize("gid", list(GAMES))
def test_bot_cannot_tell_states_with_the_same_view_apart(gid: str) -> None:
    """Two states identical for the bot's seat but with different hidden cards: the same move."""
    game = GAMES[gid]
    compared = 0
    for i, state in enumerate(positions(gid, count=4, seed=5)):
        seat = game.to_act(state)[0]
        twin = game.determinize(state, seat, random.Random(100 + i))
        assert game.view(twin, seat) == game.view(state, seat)
        if game.encode(twin) != game.encode(state):
            compared += 1
        assert small_bot(11).choose(game, state, seat) == small_bot(11).choose(game, twin, seat)
    if any(game.secrets(s, game.to_act(s)[0]) for s in positions(gid, count=4, seed=5)):
        assert compared, "no position with hidden information differed: the test proved nothing"


@pytest.mark.parametrize("gid", list(GAMES))
def test_rewards_are_in_unit_range_and_favour_winners(gid: str) -> None:
    game = GAMES[gid]
    final, _ = random_playout(game, game.new_game(max(game.min_players, 2), 4, {}), random.Random(4))
    reward = rewards(game, final)
    assert all(0.0 <= r <= 1.0 for r in reward)
    winners = game.outcome(final).winners
    losers = [s for s in range(len(reward)) if s not in winners]
    if losers:
        assert min(reward[w] for w in winners) > max(reward[s] for s in losers)


def test_wilson_interval_contains_the_rate() -> None:
    lo, hi = wilson(9, 10)
    assert 0.5 < lo < 0.9 < hi < 1.0
    assert wilson(0, 0) == (0.0, 1.0)


def test_arena_report_has_one_entry_per_seat_spec() -> None:
    gid = next(iter(GAMES))
    players = max(GAMES[gid].min_players, 2)
    report = run_arena(gid, players, ["random"] * players, games=3, progress=False)
    assert report["game"] == gid and report["games"] == 3
    assert [r["seats"] for r in report["results"]] == ["random"]
    entry = report["results"][0]
    assert 0 <= entry["ci95"][0] <= entry["win_rate"] <= entry["ci95"][1] <= 1
