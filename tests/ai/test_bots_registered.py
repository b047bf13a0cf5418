"""The same guarantees on every registered engine (the list grows as engines land)."""

from __future__ import annotations

import random

import pytest

from ai.arena import main as arena_main
from ai.arena import wilson
from ai.ismcts import move_key, rewards
from tests.ai.conftest import REGISTERED, positions, small_bot

GIDS = sorted(REGISTERED)


def players_of(gid: str) -> int:
    return max(REGISTERED[gid].min_players, 2)


@pytest.mark.parametrize("gid", GIDS)
def test_bot_plays_legal_moves_for_every_seat_to_act(gid: str) -> None:
    game = REGISTERED[gid]
    for state in positions(game, players_of(gid), count=3):
        for seat in game.to_act(state):
            move = small_bot(iterations=8).choose(game, state, seat)
            assert move_key(move) in {move_key(m) for m in game.legal_moves(state, seat)}


@pytest.mark.parametrize("gid", GIDS)
def test_same_state_and_seed_give_the_same_move(gid: str) -> None:
    game = REGISTERED[gid]
    for state in positions(game, players_of(gid), count=2):
        seat = game.to_act(state)[0]
        assert small_bot(7, 8).choose(game, state, seat) == small_bot(7, 8).choose(game, state, seat)


@pytest.mark.parametrize("gid", GIDS)
def test_bot_cannot_tell_states_with_the_same_view_apart(gid: str) -> None:
    """A real state and a determinization of it for the bot's own seat: equal views, so the same move."""
    game = REGISTERED[gid]
    states = positions(game, players_of(gid), count=4, seed=5)
    differed = 0
    for i, state in enumerate(states):
        for seat in game.to_act(state):
            twin = game.determinize(state, seat, random.Random(100 + i))
            assert game.view(twin, seat) == game.view(game.without_others_submissions(state, seat), seat)
            differed += game.encode(twin) != game.encode(state)
            assert small_bot(11, 8).choose(game, state, seat) == small_bot(11, 8).choose(game, twin, seat)
    if any(game.secrets(s, seat) for s in states for seat in game.to_act(s)):
        assert differed, "no twin differed in hidden information: the test proved nothing"


@pytest.mark.parametrize("gid", GIDS)
def test_rewards_are_in_unit_range(gid: str) -> None:
    game = REGISTERED[gid]
    state, rng = game.new_game(players_of(gid), 4, {}), random.Random(4)
    while not game.is_over(state):
        seat = min(game.to_act(state))
        game.apply_in_place(state, seat, rng.choice(game.legal_moves(state, seat)))
    assert all(0.0 <= r <= 1.0 for r in rewards(game, state))


@pytest.mark.parametrize("gid", GIDS[:1])
def test_arena_cli_json(gid: str, capsys: pytest.CaptureFixture[str]) -> None:
    import orjson

    n = players_of(gid)
    assert arena_main(["--game", gid, "--players", str(n), "--seats", ",".join(["random"] * n),
                       "--games", "2", "--json"]) == 0
    report = orjson.loads(capsys.readouterr().out)
    assert report["games"] == 2 and [r["seats"] for r in report["results"]] == ["random"]


def test_arena_counts_a_team_of_partners_once_per_game(capsys: pytest.CaptureFixture[str]) -> None:
    """They Who Were 8: partners win together, so a spec on both seats of a team is one sample per game."""
    import orjson

    assert arena_main(["--game", "they-who-were-8", "--players", "4", "--seats",
                       "random,mcts:easy,random,mcts:easy", "--games", "3", "--json"]) == 0
    report = orjson.loads(capsys.readouterr().out)
    for result in report["results"]:
        wins = round(result["win_rate"] * 3)
        assert result["ci95"] == pytest.approx(list(wilson(wins, 3)))  # n = 3 games, not 6 seats


@pytest.mark.skipif("clash" not in REGISTERED, reason="CLASH engine not registered")
def test_clash_search_chooses_tile_then_field_then_side_then_effect() -> None:
    """The decomposed tree: the root's children are the available tiles, not hundreds of placements, and the
    chosen placement is one of the legal moves."""
    from ai.ismcts import Node, _choose, search
    from ai.policies import clash_choices

    game = REGISTERED["clash"]
    state = next(s for s in positions(game, 2, count=8, seed=3, p=0.5) if len(game.legal_moves(s, s.to_act[0])) > 40)
    seat = game.to_act(state)[0]
    legal = game.legal_moves(state, seat)
    options = [(clash_choices(m), m) for m in legal]
    root, path = Node(), []  # type: ignore[var-annotated]
    rng = random.Random(1)
    for _ in range(200):
        path.clear()
        _choose(root, seat, options, 0.7, rng, path)
        for node in path:
            node.visits += 1
    tiles = {(m["tile"], m["from"]) for m in legal}
    assert len(root.children) == len(tiles) < len(legal)
    result = search(game, state, seat, iterations=60, rng=random.Random(2), split=clash_choices)
    assert move_key(result.move) in {move_key(m) for m in legal}
    assert sum(result.visits.values()) <= 60
