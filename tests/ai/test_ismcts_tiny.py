"""ISMCTS on the tiny hidden-information game: legal, reproducible, blind to hidden cards, sensible."""

from __future__ import annotations

import random
from typing import Any

import pytest

from ai.arena import EqualTime, Spec, arena, parse_spec, split_seats, wilson
from ai.bot import choose_move
from ai.ismcts import move_key, rewards, search
from tests.ai.conftest import positions, small_bot
from tests.ai.tiny_game import GAME, TinyState


@pytest.mark.parametrize("players", [2, 3, 4])
def test_bot_plays_a_whole_game_with_simultaneous_steps(players: int) -> None:
    state = GAME.new_game(players, 1)
    bot, rng = small_bot(), random.Random(1)
    while not GAME.is_over(state):
        seat = GAME.to_act(state)[-1]  # the last pending seat: the others' submissions are hidden from it
        move = bot.choose(GAME, state, seat) if seat == 0 or rng.random() < 0.5 else rng.choice(
            GAME.legal_moves(state, seat))
        assert move in GAME.legal_moves(state, seat)
        state = GAME.apply(state, seat, move)
    assert bot.stats.moves > 0 and bot.stats.iterations > 0 and len(bot.stats.think_s) == bot.stats.moves


def test_same_state_and_seed_give_the_same_move() -> None:
    for state in positions(GAME, 3, count=5):
        seat = GAME.to_act(state)[0]
        moves = {move_key(small_bot(7).choose(GAME, state, seat)) for _ in range(3)}
        assert len(moves) == 1
        assert choose_move(GAME, state, seat, "easy", seed=5, time_limit=0) == choose_move(
            GAME, state, seat, "easy", seed=5, time_limit=0)


def test_bot_cannot_tell_states_with_the_same_view_apart() -> None:
    """Same view for the seat, different hidden cards (and pending submissions): the same move."""
    differed = 0
    for i, state in enumerate(positions(GAME, 3, count=8, seed=9, p=0.5)):
        for seat in GAME.to_act(state):
            twin = GAME.determinize(state, seat, random.Random(100 + i))
            assert GAME.view(twin, seat) == GAME.view(state, seat)
            differed += GAME.encode(twin) != GAME.encode(state)
            assert small_bot(11).choose(GAME, state, seat) == small_bot(11).choose(GAME, twin, seat)
    assert differed >= 5, "the twins must really differ in hidden information"


class Spy:
    """Wraps a game and records which states the search hands to which method."""

    def __init__(self, game: Any, watched: TinyState) -> None:
        self.game, self.watched, self.touches = game, watched, []

    def __getattr__(self, name: str) -> Any:
        inner = getattr(self.game, name)
        if not callable(inner):
            return inner

        def call(*args: Any, **kwargs: Any) -> Any:
            if args and args[0] is self.watched:
                self.touches.append((name, args[1:2]))
            return inner(*args, **kwargs)
        return call


def test_search_reads_the_true_state_only_through_determinize_and_its_own_moves() -> None:
    state = positions(GAME, 3, count=3, seed=4)[-1]
    seat = GAME.to_act(state)[0]
    spy = Spy(GAME, state)
    search(spy, state, seat, iterations=30, rng=random.Random(0))  # type: ignore[arg-type]
    assert {name for name, _ in spy.touches} <= {"determinize", "legal_moves"}
    assert all(args == (seat,) for name, args in spy.touches if name == "legal_moves")


def test_search_saves_the_best_card_for_the_most_valuable_trick() -> None:
    """Tricks 2 and 3 are worth 2 and 3 and the 9 wins either: throwing the 1 now and the 9 last ties the
    game (3-3); the 9 now loses it (2-4). Any sensible search keeps the 9."""
    state = TinyState(hands=[[1, 9], [5, 6]], deck=[2, 3, 4, 7, 8], pending={}, played=[[4, 8]],
                      points=[0, 1], rng=random.Random(0))
    assert search(GAME, state, 0, iterations=200, rng=random.Random(1)).move == {"type": "play", "card": 1}


def test_rewards_are_in_unit_range_and_favour_winners() -> None:
    for seed in range(5):
        state = GAME.new_game(3, seed)
        rng = random.Random(seed)
        while not GAME.is_over(state):
            seat = GAME.to_act(state)[0]
            GAME.apply_in_place(state, seat, rng.choice(GAME.legal_moves(state, seat)))
        reward = rewards(GAME, state)
        winners = GAME.outcome(state).winners
        assert all(0.0 <= r <= 1.0 for r in reward)
        losers = [s for s in range(3) if s not in winners]
        if losers:
            assert min(reward[w] for w in winners) > max(reward[s] for s in losers)


def test_single_legal_move_needs_no_search() -> None:
    state = TinyState(hands=[[9], [5]], deck=[], pending={}, played=[], points=[0, 0], rng=random.Random(0))
    result = search(GAME, state, 0, iterations=100)
    assert result.move == {"type": "play", "card": 9} and result.iterations == 0


def test_wilson_interval() -> None:
    lo, hi = wilson(9, 10)
    assert 0.5 < lo < 0.9 < hi < 1.0
    assert wilson(0, 0) == (0.0, 1.0)
    assert wilson(0, 20)[0] == 0.0 and wilson(20, 20)[1] == 1.0


def test_seat_specs() -> None:
    assert parse_spec("random") == Spec("random")
    assert parse_spec("mcts:hard@c=0.5") == Spec("mcts", "hard", 0.5)
    assert parse_spec("ospiel:ismcts@sims=40,rollout=random") == Spec("ospiel", "ismcts", None, 40, "random")
    assert parse_spec("ospiel:ismcts") == Spec("ospiel", "ismcts", None, 300, "sample")
    assert split_seats("mcts:normal,ospiel:ismcts@sims=9,rollout=random,random") == [
        "mcts:normal", "ospiel:ismcts@sims=9,rollout=random", "random"]
    for bad in ("mcts:insane", "alphazero", "mcts:normal@k=1", "mcts:normal@sims=3", "ospiel:mcts",
                "ospiel:ismcts@rollout=greedy", "ospiel:ismcts@sims=0", "ospiel:ismcts@sims=x"):
        with pytest.raises(ValueError):
            parse_spec(bad)


def test_arena_rotates_seats_and_reports_each_spec_once() -> None:
    report = arena(GAME, 3, ["random", "random", "mcts:easy"], games=3, progress=False)  # type: ignore[arg-type]
    assert report["game"] == "tiny-tricks" and report["players"] == 3 and report["games"] == 3
    assert [r["seats"] for r in report["results"]] == ["random", "mcts:easy"]
    for entry in report["results"]:
        assert 0 <= entry["ci95"][0] <= entry["win_rate"] <= entry["ci95"][1] <= 1
        assert entry["think_ms_p95"] >= 0


def test_equal_time_budget_tracks_the_reference_mean_think_time() -> None:
    """The calibrated seat's budget brings its running mean to the reference seats' mean (synthetic times)."""
    clock = EqualTime()
    assert clock.budget("o") == 30  # a probe until a simulation has been timed
    for _ in range(10):
        clock.record("m", "mcts", 200.0, 0)
    clock.record("o", "ospiel", 30.0, 30)  # 1 ms per simulation, 30 ms spent
    assert clock.budget("o") == 370  # 2 x 200 ms target minus 30 ms spent, at 1 ms per simulation
    clock.record("o", "ospiel", 0.5, 0)  # a forced move: counted, but says nothing about simulation cost
    assert clock.ms_per_sim["o"] == 1.0
    clock.record("o", "ospiel", 2000.0, 1000)  # far over: the next budget is the floor, a third of the mean
    assert clock.budget("o") == round(200 / 3 / (0.8 + 0.2 * 2.0))


def test_arena_equal_time_needs_a_reference_and_a_calibrated_seat() -> None:
    with pytest.raises(ValueError, match="equal-time"):
        arena(GAME, 3, ["random", "random", "mcts:easy"], games=1, progress=False, equal_time=True)  # type: ignore[arg-type]
