"""Levels are strengths: targets on the ladder, per-game budgets from the calibration file, ratings with intervals."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import orjson
import pytest

from ai import calibrate, rating
from ai.bot import BUDGETS_PATH, LEVELS, Bot, budget_of
from ai.ladder import adjacent, ladder, merge
from tests.ai.conftest import REGISTERED
from tests.ai.tiny_game import GAME


def test_levels_climb_the_ladder_and_their_caps() -> None:
    """Weakest first: each level aims higher than the one below and may think at least as long."""
    levels = list(LEVELS.values())
    assert all(a.target < b.target and a.seconds <= b.seconds for a, b in itertools.pairwise(levels))
    assert LEVELS["normal"].seconds <= 0.5  # issue 32: normal's p95 think time is at most half a second


#: The shipped budgets, and the calibration this branch measured and kept as a record (docs/bots/strength.md).
CALIBRATIONS = [path for path in (BUDGETS_PATH, Path(__file__).parents[2] / "docs/bots/calibration-2026-11-25.json")
                if path.exists()]


@pytest.mark.parametrize("path", CALIBRATIONS, ids=[p.name for p in CALIBRATIONS])
def test_a_calibration_covers_every_game_and_level_with_its_command_and_date(path: Path) -> None:
    doc = orjson.loads(path.read_bytes())
    assert set(doc["games"]) == set(REGISTERED)
    for gid, entry in doc["games"].items():
        assert entry["command"].startswith(f"meeple arena --calibrate --game {gid}")
        assert entry["date"][:4] >= "2026"
        assert set(entry["levels"]) == set(LEVELS)
        budgets = [entry["levels"][level]["iterations"] for level in LEVELS]
        assert all(b >= 1 for b in budgets) and budgets == sorted(budgets), gid  # stronger levels search more
        assert [budget_of(gid, level, doc) for level in LEVELS] == budgets
        for level, doc_level in entry["levels"].items():
            assert doc_level["expected_p95_ms"] <= doc_level["cap_ms"] + 1e-6, (gid, level)
            # Never below the level's old budget, unless its cap binds or it is an in-between rung placed
            # between its neighbours (``--place``, kept in the entry's ``places``).
            placed = entry.get("places", {}).get(level)
            assert placed is None or (level in calibrate.PLACEABLE and doc_level["iterations"] == placed), gid
            assert (doc_level["iterations"] >= LEVELS[level].iterations or doc_level["cap_bound"]
                    or placed is not None), (gid, level)


def test_a_bot_plays_its_games_calibrated_budget() -> None:
    """The budget comes from the file by game; a game the file does not list falls back to the level's own."""
    table = {"games": {"tiny-tricks": {"levels": {"normal": {"iterations": 17}}}}}
    assert budget_of("tiny-tricks", "normal", table) == 17
    assert budget_of("tiny-tricks", "hard", table) == LEVELS["hard"].iterations
    assert budget_of("no-such-game", "easy") == LEVELS["easy"].iterations
    player = Bot("easy", seed=1, seconds=0)
    player.choose(GAME, GAME.new_game(2, 3), 0)  # type: ignore[arg-type]
    assert player.stats.last_iterations == player.budget("tiny-tricks") == budget_of("tiny-tricks", "easy")


def test_rating_fit_recovers_known_strengths_with_random_play_at_zero() -> None:
    true = [0.0, 6.0, 12.0, 20.0]
    rng = random.Random(4)
    games = {}
    for i in range(4):
        for j in range(i + 1, min(i + 3, 4)):
            n = 400
            wins = sum(rng.random() < rating.win_probability(true[j] - true[i]) for _ in range(n))
            games[(j, i)] = (float(wins), n)
    found = rating.fit(4, games, anchor=0)
    assert found.ratings[0] == 0.0
    for k in range(1, 4):
        lo, hi = found.ratings[k] - 2.6 * found.anchored_se[k], found.ratings[k] + 2.6 * found.anchored_se[k]
        assert lo < true[k] < hi, (k, found.ratings[k])
    assert found.centred_se[3] < found.anchored_se[3]  # the top rung's place among its peers is surer than its
    # distance from random play, which is reached through every rung below it


def test_a_pair_one_rung_always_won_still_gets_a_finite_distance() -> None:
    found = rating.fit(2, {(1, 0): (50.0, 50)}, anchor=0)
    assert 15 < found.ratings[1] < 40 and found.anchored_se[1] > 0


def test_calibration_picks_each_levels_budget_on_the_curve_within_its_cap() -> None:
    points = [{"iterations": n, "rating": r, "think_ms_p95": n * 0.5}
              for n, r in [(4, 5.0), (12, 12.0), (36, 20.0), (108, 27.0), (324, 33.0), (972, 38.0)]]
    chosen = calibrate.choose(points)
    budgets = [chosen[level]["iterations"] for level in LEVELS]
    assert budgets == sorted(budgets)
    for level, doc in chosen.items():
        assert doc["expected_p95_ms"] <= LEVELS[level].seconds * 1000 + 1e-6
        if not doc["cap_bound"] and not doc["beyond_curve"] and not doc["floor_bound"]:
            assert abs(doc["expected_rating"] - LEVELS[level].target) < 0.6, level
        if not doc["cap_bound"]:  # never below the level's budget from before levels were strengths
            assert doc["iterations"] >= LEVELS[level].iterations, level
    # 0.5 ms per iteration: a 0.5 s cap allows 1000 iterations, and a 0.1 s cap 200
    assert chosen["normal"]["iterations"] <= 1000 and chosen["novice"]["iterations"] <= 200


def test_a_floor_set_for_a_game_raises_a_level_beyond_a_flat_curve_but_never_past_its_cap() -> None:
    """Sideboards' and Fierce Women's curves flatten below hard's target: --floor hard=N places hard where
    head-to-head games measured it, and the level's cap still bounds it."""
    flat = [{"iterations": n, "rating": r, "think_ms_p95": n * 0.07}
            for n, r in [(3, 7.0), (9, 14.0), (27, 20.0), (81, 24.0), (243, 26.0), (729, 26.5)]]
    plain = calibrate.choose(flat)
    assert plain["hard"]["beyond_curve"] and plain["hard"]["iterations"] == LEVELS["hard"].iterations
    raised = calibrate.choose(flat, calibrate.parse_floors("hard=6000"))
    assert raised["hard"]["iterations"] == 6000 and raised["hard"]["floor_set"] == 6000
    assert {k: v for k, v in raised.items() if k != "hard"} == {k: v for k, v in plain.items() if k != "hard"}
    slow = [{**p, "think_ms_p95": p["iterations"] * 2.0} for p in flat]  # 2 ms an iteration: 5 s fit 2500
    assert calibrate.choose(slow, {"hard": 6000})["hard"]["iterations"] == 2500
    with pytest.raises(ValueError):
        calibrate.parse_floors("hard=100")  # below hard's own floor
    with pytest.raises(ValueError):
        calibrate.parse_floors("expert=9000")


def test_an_in_between_rung_is_placed_below_its_old_budget_but_never_below_the_rung_under_it() -> None:
    """``--place`` moves a rung people do not pick (tried on Fierce Women's ``strong``, whose 800 iterations had
    looked as strong as ``hard``'s 6000); the levels people pick cannot be placed."""
    flat = [{"iterations": n, "rating": r, "think_ms_p95": n * 0.07}
            for n, r in [(3, 7.0), (9, 14.0), (27, 20.0), (81, 24.0), (243, 26.0), (729, 26.5)]]
    plain = calibrate.choose(flat, {"hard": 6000})
    placed = calibrate.choose(flat, {"hard": 6000}, calibrate.parse_places("strong=480"))
    assert placed["strong"]["iterations"] == 480 and placed["strong"]["placed"] == 480
    assert {k: v for k, v in placed.items() if k != "strong"} == {k: v for k, v in plain.items() if k != "strong"}
    low = calibrate.choose(flat, None, {"strong": 5})
    assert low["strong"]["iterations"] == low["normal"]["iterations"]  # never below the rung under it
    assert calibrate.parse_places("none") == {}  # clears the game's places: every level back on its floor
    for bad in ("hard=100", "normal=200", "strong=0", "strong=x"):
        with pytest.raises(ValueError):
            calibrate.parse_places(bad)


def test_ladder_rates_rungs_against_random_play_and_reports_intervals() -> None:
    detail: dict[str, object] = {}
    found = ladder(GAME, 2, ["mcts:easy@it=2", "mcts:easy@it=40"], games=3, seed=2, anchor="random", detail=detail)
    assert set(found) == {"mcts:easy@it=2", "mcts:easy@it=40"}
    for doc in found.values():
        assert doc["ci95"][0] < doc["mu"] < doc["ci95"][1]
        assert doc["anchored_ci95"][0] < doc["mu"] < doc["anchored_ci95"][1]
    assert detail["anchor"] == "random" and len(detail["adjacent"]) == 1  # type: ignore[arg-type]
    assert adjacent(found, ["mcts:easy@it=2", "mcts:easy@it=40"])[0]["pair"] == ["mcts:easy@it=2", "mcts:easy@it=40"]


def test_ladder_runs_with_different_seeds_merge_into_one_fit_of_all_their_games() -> None:
    """Long ladders run as several processes (``--merge``): the merged fit is the fit of every game played."""
    shards = []
    for seed in (10, 500):
        detail: dict[str, object] = {}
        ladder(GAME, 2, ["novice", "easy"], games=2, seed=seed, scale=0.1, anchor="random", detail=detail)
        shards.append({"game": GAME.id, **detail})
    both: dict[str, object] = {}
    merged = merge(shards, GAME.id, scale=0.1, detail=both)
    assert sum(p["games"] for p in both["pairs"]) == 2 * 3 * 2  # type: ignore[attr-defined]
    assert merged["easy"]["matches"] == 8  # two pairs, two rounds, two runs
    thinks = both["think_ms"]
    assert thinks["easy"]["moves"] == sum(s["think_ms"]["easy"]["moves"] for s in shards)  # type: ignore[index]


def test_a_run_of_two_rungs_only_adds_its_games_to_their_pair_of_the_whole_ladder() -> None:
    """Two rungs hard to tell apart get more games of their own (``--levels strong,hard --no-anchor``): merged
    with the whole ladder, those games count in that pair, and a report with a rung the ladder lacks is refused."""
    whole: dict[str, object] = {}
    ladder(GAME, 2, ["novice", "easy"], games=1, seed=4, scale=0.1, anchor="random", detail=whole)
    focused: dict[str, object] = {}
    ladder(GAME, 2, ["novice", "easy"], games=3, seed=40, scale=0.1, detail=focused)
    assert focused["anchor"] is None and len(focused["pairs"]) == 1  # type: ignore[arg-type]
    both: dict[str, object] = {}
    merged = merge([{"game": GAME.id, **whole}, {"game": GAME.id, **focused}], GAME.id, scale=0.1, detail=both)
    games = {tuple(p["pair"]): p["games"] for p in both["pairs"]}  # type: ignore[attr-defined]
    assert games == {("random", "novice"): 1, ("novice", "easy"): 1 + 3, ("random", "easy"): 1}
    assert merged["easy"]["matches"] == 1 + 1 + 3
    stranger: dict[str, object] = {}
    ladder(GAME, 2, ["easy", "casual"], games=1, seed=5, scale=0.1, detail=stranger)
    with pytest.raises(ValueError, match="among the first"):
        merge([{"game": GAME.id, **whole}, {"game": GAME.id, **stranger}], GAME.id, scale=0.1)


def test_a_report_from_before_a_rung_was_moved_counts_only_its_pairs_of_unmoved_rungs() -> None:
    """``--place strong=480`` moves one rung: the earlier runs' games between rungs that still play the same
    budgets keep counting, and every game of the moved rung's pairs is left out (and listed)."""
    before: dict[str, object] = {}
    ladder(GAME, 2, ["novice", "easy"], games=2, seed=6, scale=0.1, anchor="random", detail=before)
    before["specs"] = {**before["specs"], "easy": "mcts:easy@it=999"}  # type: ignore[dict-item]
    now: dict[str, object] = {}
    ladder(GAME, 2, ["novice", "easy"], games=1, seed=60, scale=0.1, anchor="random", detail=now)
    both: dict[str, object] = {}
    merge([{"game": GAME.id, **now}, {"game": GAME.id, "seed": 6, **before}], GAME.id, scale=0.1, detail=both)
    games = {tuple(p["pair"]): p["games"] for p in both["pairs"]}  # type: ignore[attr-defined]
    assert games == {("random", "novice"): 1 + 2, ("novice", "easy"): 1, ("random", "easy"): 1}
    assert sorted((tuple(x["pair"]), x["games"]) for x in both["left_out"]) == [  # type: ignore[attr-defined]
        (("novice", "easy"), 2), (("random", "easy"), 2)]
    assert "mcts:easy@it=999" not in both["think_samples_ms"]  # type: ignore[operator]


def test_a_ladder_report_played_at_other_budgets_is_not_merged() -> None:
    """A report whose rungs played other budgets than the levels play now would rate budgets nobody plays."""
    detail: dict[str, object] = {}
    ladder(GAME, 2, ["novice", "easy"], games=1, seed=3, scale=0.1, anchor="random", detail=detail)
    with pytest.raises(ValueError, match="play"):
        merge([{"game": GAME.id, **detail}], GAME.id, scale=0.2)
