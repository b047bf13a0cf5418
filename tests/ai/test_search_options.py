"""Search options measured in docs/bots/strength.md: decoupled simultaneous steps and rollout cutoffs."""

from __future__ import annotations

import random

import pytest

from ai.ismcts import edge_key, rewards, search
from ai.policies import (
    Tuning,
    _match_rewards,
    clash_choices,
    clash_game_end,
    margin_rewards,
    standing,
    tuning_for,
)
from tests.ai.conftest import REGISTERED, positions
from tests.ai.tiny_game import GAME, TinyState


def test_decoupled_search_keeps_the_later_seats_statistics_off_the_earlier_seats_moves() -> None:
    """Seat 0 submits first at the root; seat 1 cannot see that submission, so with ``decouple`` its choices
    are rated once at the root (shared by all of seat 0's moves) and never below a move of seat 0."""
    state = GAME.new_game(2, 5)
    root = search(GAME, state, 0, iterations=200, rng=random.Random(1), decouple=True).root  # type: ignore[arg-type]
    assert root is not None
    seat1 = {key for key in root.children if key[0] == 1}
    assert seat1 and sum(root.children[k].visits for k in seat1) > 100  # seat 1's statistics live at the root
    for key, child in root.children.items():
        if key[0] == 0:  # under seat 0's moves only joint continuations, never seat 1's own statistics
            for sub in child.children.values():
                assert sub.actor == 1 and sub.available == 0


def test_decoupled_search_plays_legal_reproducible_moves_in_simultaneous_steps() -> None:
    for state in positions(GAME, 3, count=4, seed=7, p=0.5):
        for seat in GAME.to_act(state):
            a = search(GAME, state, seat, iterations=60, rng=random.Random(3), decouple=True)  # type: ignore[arg-type]
            b = search(GAME, state, seat, iterations=60, rng=random.Random(3), decouple=True)  # type: ignore[arg-type]
            assert a.move == b.move and a.move in GAME.legal_moves(state, seat)


def test_the_search_still_keeps_the_nine_for_the_last_trick_when_decoupled() -> None:
    state = TinyState(hands=[[1, 9], [5, 6]], deck=[2, 3, 4, 7, 8], pending={}, played=[[4, 8]],
                      points=[0, 1], rng=random.Random(0))
    assert search(GAME, state, 0, iterations=300, rng=random.Random(1),  # type: ignore[arg-type]
                  decouple=True).move == {"type": "play", "card": 1}


def test_a_best_of_three_is_worth_the_chance_to_win_it_from_the_score() -> None:
    assert _match_rewards([1, 0], 1) == [0.75, 0.25]
    assert _match_rewards([0, 1], 1) == [0.25, 0.75]
    assert _match_rewards([1, 1], 2) == [0.5, 0.5]
    assert _match_rewards([2, 0], 2) == [1.0, 0.0]
    assert _match_rewards([1, 1], 3) == [0.375, 0.375]  # two wins each impossible: a drawn third game, shared


@pytest.mark.skipif("clash" not in REGISTERED, reason="CLASH engine not registered")
def test_clash_rollouts_stop_when_a_game_of_the_match_ends() -> None:
    game = REGISTERED["clash"]
    state, rng = game.new_game(2, 1, {}), random.Random(1)
    while state.phase != "choose_first":
        assert clash_game_end(game, state) is None
        seat = game.to_act(state)[0]
        game.apply_in_place(state, seat, game.sample_move(state, seat, rng))
    value = clash_game_end(game, state)
    assert value is not None and value[state.games[-1]["winner"]] > 0.5 if state.games[-1]["winner"] is not None \
        else value == [0.5, 0.5]
    single = game.new_game(2, 1, {"match": "single"})
    assert clash_game_end(game, single) is None


def test_tunings_name_their_settings_and_refuse_unknown_ones() -> None:
    assert Tuning().with_overrides({"policy": "uniform", "c": "0.4", "decouple": "1"}) == Tuning(c=0.4, decouple=True)
    for bad in ({"policy": "psychic"}, {"cutoff": "never"}, {"depth": "3"}, {"decouple": "yes"}):
        with pytest.raises(ValueError):
            Tuning().with_overrides(bad)
    assert tuning_for("no-such-game") == Tuning()


def test_edge_keys_tell_seats_apart() -> None:
    assert edge_key(0, {"type": "play", "card": 1}) != edge_key(1, {"type": "play", "card": 1})


@pytest.mark.skipif("clash" not in REGISTERED, reason="CLASH engine not registered")
def test_a_small_budget_does_not_fall_back_to_the_first_listed_side() -> None:
    """Regression: on a small budget the decomposed tree never reaches the side level, and the final choice
    used to take the first listed side (blue) there, so a green CLASH bot placed every tile for its
    opponent. The moves the iterations actually played decide such a level now."""
    game = REGISTERED["clash"]
    own = 0
    for gs in range(4):
        state, rng = game.new_game(2, gs, {}), random.Random(gs)
        while game.to_act(state)[0] != 1 or not state.start_placed:
            seat = game.to_act(state)[0]
            game.apply_in_place(state, seat, game.sample_move(state, seat, rng))
        for k in range(6):
            move = search(game, state, 1, iterations=9, rng=random.Random(k), split=clash_choices).move
            own += move["supports"] == "green"
    assert own >= 6, "a green bot on 9 iterations should place for itself at least sometimes"


class _Scored:
    """A finished game with given scores and winners, for the reward functions."""

    id = "sideboards"

    def __init__(self, scores: list[float], winners: list[int]) -> None:
        self.scores, self.winners = scores, winners

    def outcome(self, state: object) -> _Scored:
        return self


def test_the_margin_reward_pays_a_wider_win_more_and_never_a_loser_more_than_a_winner() -> None:
    """reward=margin: with two seats the default reward says only who won; this one says by how much too."""
    by_one, by_twenty = margin_rewards(_Scored([31, 30], [0]), None), margin_rewards(_Scored([50, 30], [0]), None)
    assert rewards(_Scored([31, 30], [0]), None) == rewards(_Scored([50, 30], [0]), None) == [1.0, 0.0]
    assert by_twenty[0] > by_one[0] > 0.75 > 0.25 > by_one[1] > by_twenty[1] >= 0.0
    assert margin_rewards(_Scored([30, 30], [0, 1]), None) == [0.5, 0.5]
    assert Tuning().with_overrides({"reward": "margin"}).reward == "margin"
    with pytest.raises(ValueError):
        Tuning().with_overrides({"reward": "score"})


def test_a_rollout_stopped_at_the_horizon_is_worth_the_standing_not_a_coin_flip() -> None:
    """evaluate=standing (docs/bots/strength.md e13): the seat ahead now is likelier to win, by the score gap."""
    ahead, level = standing(_Scored([40, 30], []), None), standing(_Scored([30, 30], []), None)
    assert ahead is not None and level == [0.5, 0.5]
    assert ahead[0] > 0.5 > ahead[1] and abs(ahead[0] + ahead[1] - 1.0) < 1e-9
    tuned = Tuning().with_overrides({"horizon": "4", "evaluate": "standing"})
    assert (tuned.horizon, tuned.evaluate) == (4, "standing")
    for bad in ({"horizon": "-1"}, {"evaluate": "oracle"}):
        with pytest.raises(ValueError):
            Tuning().with_overrides(bad)


def test_the_search_values_unfinished_rollouts_with_its_evaluate() -> None:
    """With no rollout moves at all (``max_rollout=0``) the tree's leaves are valued only by ``evaluate``: an
    evaluation that always favours seat 1 makes every one of seat 0's moves a loss."""
    state = GAME.new_game(2, 5)
    seat = GAME.to_act(state)[0]
    found = search(GAME, state, seat, iterations=50, rng=random.Random(1), max_rollout=0,  # type: ignore[arg-type]
                   evaluate=lambda game, s: [0.0, 1.0] if seat == 0 else [1.0, 0.0])
    assert found.root is not None
    mine = [c for k, c in found.root.children.items() if k[0] == seat]
    assert mine and all(c.total == 0.0 for c in mine)


def test_clash_searches_with_the_game_end_cutoff_it_was_measured_with() -> None:
    """docs/bots/strength.md e1: kept because it won at equal CPU time; the shipped tuning must be that one."""
    assert tuning_for("clash") == Tuning(split="clash", cutoff="game-end")
