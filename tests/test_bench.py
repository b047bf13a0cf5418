"""``meeple bench engines``: the max_branching figure is the widest position of the timed playouts."""

from __future__ import annotations

import random

import orjson
import pytest

import services.rules
from services.rules.games import get_game
from tooling import bench


def widest_position(game_id: str, players: int, options: dict[str, object], games: int) -> int:
    """Replays the bench's playouts (seeds 0.., one rng seeded 0) and returns the largest legal-move list."""
    game = get_game(game_id)
    rng = random.Random(0)
    widest = 0
    for seed in range(games):
        state = game.new_game(players, seed, options)
        while not game.is_over(state):
            to_act = game.to_act(state)
            seat = to_act[0] if len(to_act) == 1 else to_act[rng.randrange(len(to_act))]
            legal = game.legal_moves(state, seat)
            widest = max(widest, len(legal))
            game.apply_in_place(state, seat, legal[rng.randrange(len(legal))])
    return widest


@pytest.mark.parametrize(("game_id", "players", "options"), [
    ("fierce-women", 4, {"action_cards": True}),
    ("clash", 2, {"match": "single"}),
])
def test_max_branching_is_measured_on_the_playouts_themselves(game_id: str, players: int,
                                                              options: dict[str, object]) -> None:
    figures = bench.playout_rate(get_game(game_id), players, options, 0.05)
    assert figures["max_branching"] == widest_position(game_id, players, options, int(figures["games"]))
    assert figures["max_branching"] > 1


def test_max_branching_is_a_table_column_and_a_json_key(capsys: pytest.CaptureFixture[str]) -> None:
    build = services.rules.build()
    report = bench.run_bench(["fierce-women"], 0.02, {}, (build,))  # this process's build, in-process
    assert all(isinstance(row[build]["max_branching"], int) for row in report["fierce-women"].values())
    bench.print_table(report)
    header, _, *rows = capsys.readouterr().out.splitlines()
    assert header.split()[13] == "max_branching"  # after "py games/s" and three two-word "µs" headings
    rows = rows[:4]
    assert [int(r.split()[9]) for r in rows] == [row[build]["max_branching"] for row in report["fierce-women"].values()]
    assert "max_branching" in orjson.loads(orjson.dumps(report))["fierce-women"]["4"][build]


def test_bench_engines_puts_the_compiled_and_the_python_build_side_by_side(capsys: pytest.CaptureFixture[str]) -> None:
    """``meeple bench engines --json``: each build measured in a process of its own, in the same run; the
    compiled column only where this install has a compiled build (the ratio then too)."""
    from services.cli import main

    assert main(["bench", "engines", "--json", "--seconds", "0.02", "--game", "they-who-were-8"]) == 0
    row = orjson.loads(capsys.readouterr().out)["they-who-were-8"]["4"]
    assert row["python"]["games_per_s"] > 0
    if services.rules.build() == "compiled":
        assert row["compiled"]["games_per_s"] > 0
        assert row["speedup"] == round(row["compiled"]["games_per_s"] / row["python"]["games_per_s"], 2)
    else:
        assert row["compiled"] is None and row["speedup"] is None


def test_bench_rules_replays_the_same_games_through_a_sealing_and_a_validating_server(
        capsys: pytest.CaptureFixture[str]) -> None:
    """``meeple bench rules --json``: both modes served every move; sealed states carry the seal's bytes."""
    from services.cli import main
    from services.rules.seal import MAC_BYTES, MAGIC

    assert main(["bench", "rules", "--json", "--rounds", "1", "--games", "1", "--max-moves", "6",
                 "--game", "clash"]) == 0
    report = orjson.loads(capsys.readouterr().out)["clash"]
    assert report["moves"] == 6
    for mode in ("sealed", "validated"):
        assert report[mode]["apply_us"] > 0 and report[mode]["state_us"] > 0
    # "bench" is the key id: magic, its length byte, the id, the MAC
    assert report["sealed"]["bytes"] - report["validated"]["bytes"] == len(MAGIC) + 1 + len("bench") + MAC_BYTES
    assert set(report["sealed_vs_validated"]) == {"apply", "state"}


def test_bench_idle_reads_every_process_of_a_stack_nobody_plays_on(capsys: pytest.CaptureFixture[str]) -> None:
    from services import cli

    assert cli.main(["bench", "idle", "--seconds", "2", "--warmup", "1", "--json"]) == 0
    report = orjson.loads(capsys.readouterr().out)
    spent = report["cpu_pct_of_one_core"]
    assert set(spent) == {"redis", "rules-0", "gateway", "bots-0", "timekeeper", "webhooks"}
    assert all(pct >= 0 for pct in spent.values())
    assert report["total_cpu_pct_of_one_core"] == pytest.approx(sum(spent.values()), abs=0.05)
