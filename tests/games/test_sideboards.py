"""Sideboards: the spec's test scenarios 1-15 and its worked examples, each named after the rule it checks."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from typing import Any

import orjson
import pytest

from services.rules.games import sideboards as sb
from services.rules.games.base import IllegalMove, InvalidOptions, InvalidState
from services.rules.games.sideboards.components import (
    CARD_IDS,
    COLOURS,
    DATA,
    GOALS,
    HANDLES,
    PLACEMENTS,
    matchable,
    variants,
)
from services.rules.games.sideboards.scoring import (
    columns_of,
    dresser_counts,
    max_packing,
    pattern_count,
    rank_bonuses,
    row_drawers,
)
from services.rules.playout import random_playout
from tests.games.fixtures import leaked_secrets
from tests.games.fixtures.sideboards import position

GAME = sb.GAME


def parse(text: str) -> list[tuple[str, int]]:
    """A dresser in the spec's notation, ``S01:0 S50:180 ...`` left to right."""
    return [(tok.split(":")[0], int(tok.split(":")[1])) for tok in text.split()]


def code_of(state: Any, seat: int, move: Any) -> str:
    with pytest.raises(IllegalMove) as err:
        GAME.apply(state, seat, move)
    assert len(err.value.message) > 5
    return err.value.code


def place(card: str, side: str = "right", orientation: int = 0) -> dict[str, Any]:
    return {"type": "place", "card": card, "side": side, "orientation": orientation}


def submit_all(s: Any, moves: dict[int, Any]) -> Any:
    for seat, move in moves.items():
        s = GAME.apply(s, seat, move)
    return s


def first_moves(s: Any) -> Any:
    """Every pending seat submits its first legal start/place move (never an exchange)."""
    for seat in GAME.to_act(s):
        s = GAME.apply(s, seat, next(m for m in GAME.legal_moves(s, seat) if m["type"] != "exchange"))
    return s


LIDKA = parse("S01:0 S50:180 S29:0 S43:0 S45:0 S41:180 S57:0 S18:180")
HENIEK = parse("S59:0 S48:0 S53:180 S47:180 S31:180 S40:180 S17:0 S14:180")
PIOTREK = parse("S02:180 S03:180 S09:180 S19:180 S20:180 S06:180 S08:180 S56:0")
X = parse("S31:0 S36:0 S18:180 S09:180 S06:0 S48:180 S59:0 S19:180")


def final(dressers: list[list[tuple[str, int]]], goals: tuple[int, int, int] = (2, 9, 19),
          exchange: list[str] | None = None, four_card_hand: bool = False) -> Any:
    s = position(len(dressers), phase="game_over", step=6, goals=goals, dressers=dressers,
                    four_card_hand=four_card_hand)
    if exchange is not None:
        s.exchange = exchange
    s.result = sb.scoring.result_doc(s.dressers, s.exchange, s.goals)
    return s


# -- Components ---------------------------------------------------------------------------------------


def test_cards_are_the_60_reversal_classes_in_lexicographic_order() -> None:
    orders = []
    for card in DATA["cards"]:
        order = [COLOURS.index(d["colour"]) for d in card["drawers"]]
        assert order < order[::-1], f"{card['id']} is not stored in its smaller orientation"
        orders.append(tuple(order))
    assert orders == sorted(orders) and len(set(orders)) == 60
    assert {frozenset((o, o[::-1])) for o in orders} == {
        frozenset((p, p[::-1])) for p in itertools.permutations(range(5))}
    assert [f"S{i:02d}" for i in range(1, 61)] == CARD_IDS and orders[0] == (0, 1, 2, 3, 4)


def test_handle_assignment_is_exactly_balanced() -> None:
    by_position, shape_colour, shape_position, empty_pairs = Counter(), Counter(), Counter(), Counter()
    for card in DATA["cards"]:
        shapes = [d["handle"] for d in card["drawers"]]
        assert sorted(h for h in shapes if h) == sorted(HANDLES)
        empty_pairs[tuple(i for i, h in enumerate(shapes) if h is None)] += 1
        for i, d in enumerate(card["drawers"]):
            if d["handle"]:
                by_position[i] += 1
                shape_colour[d["handle"], d["colour"]] += 1
                shape_position[d["handle"], i] += 1
    assert set(by_position.values()) == {36} and len(by_position) == 5
    assert set(shape_colour.values()) == {12} and len(shape_colour) == 15
    assert set(shape_position.values()) == {12} and len(shape_position) == 15
    assert set(empty_pairs.values()) == {6} and len(empty_pairs) == 10


def test_orientation_180_reverses_the_drawers_and_keeps_the_shapes() -> None:
    up, down = columns_of([("S01", 0), ("S01", 180)])
    assert up.colours == (0, 1, 2, 3, 4) and down.colours == (4, 3, 2, 1, 0)
    assert down.handles == up.handles[::-1] and up.handles == (2, -1, 0, -1, 1)


@pytest.mark.parametrize(("goal", "orientations", "usable"), [
    (1, 8, 4), (2, 4, 4), (3, 8, 4), (4, 4, 2), (5, 2, 2), (6, 4, 2), (7, 2, 1),
    (8, 4, 4), (9, 2, 2), (10, 2, 1), (11, 8, 4), (12, 4, 4), (13, 4, 2), (14, 2, 2)])
def test_pattern_orientations_and_matchable_variants_as_in_the_goal_table(
        goal: int, orientations: int, usable: int) -> None:
    found = variants(GOALS[goal]["cells"])
    assert len(found) == orientations
    assert sum(1 for v in found if matchable(v)) == usable
    assert all(max(y for _, y in v) < 4 for v in found)  # at most 4 rows tall: fits the 5-row grid


# -- Scoring: exact packing, row runs, bonuses ------------------------------------------------------


def naive_pattern_count(dresser: list[tuple[str, int]], goal: int) -> int:
    """An independent reference: occurrences as drawer sets from the grid, then brute-force packing."""
    cols = columns_of(dresser)
    colour = goal <= 7
    occurrences: set[frozenset[tuple[int, int]]] = set()
    for variant in variants(GOALS[goal]["cells"]):
        w, h = max(x for x, _ in variant) + 1, max(y for _, y in variant) + 1
        for c0 in range(len(cols) - w + 1):
            for r0 in range(5 - h + 1):
                cells = [(c0 + x, r0 + y) for x, y in variant]
                values = {cols[c].colours[r] if colour else cols[c].handles[r] for c, r in cells}
                if len(values) == 1 and -1 not in values:
                    occurrences.add(frozenset(cells))
    occ = sorted(occurrences, key=sorted)

    def best(i: int, used: frozenset[tuple[int, int]]) -> int:
        if i == len(occ):
            return 0
        skip = best(i + 1, used)
        if occ[i] & used:
            return skip
        return max(skip, 1 + best(i + 1, used | occ[i]))

    return best(0, frozenset())


def naive_row_drawers(dresser: list[tuple[str, int]], goal: int) -> int:
    rule = GOALS[goal]["row_rule"]
    cols = columns_of(dresser)
    names = HANDLES if rule["attribute"] == "handle" else COLOURS
    per_row: dict[int, list[int]] = {}
    for r in rule["rows"]:
        seq = [(c.handles if rule["attribute"] == "handle" else c.colours)[r - 1] for c in cols]
        per_row[r] = [len(list(g)) for v, g in itertools.groupby(seq)
                      if v != -1 and (rule["value"] is None or names[v] == rule["value"])]
    if rule["mode"] == "longest":
        return max((x for runs in per_row.values() for x in runs), default=0)
    if rule["mode"] == "longest_per_row":
        return sum(max(runs, default=0) for runs in per_row.values())
    return sum(sorted((x for runs in per_row.values() for x in runs), reverse=True)[:2])


def greedy_pattern_count(dresser: list[tuple[str, int]], goal: int) -> int:
    """First-found: take each matching placement (in enumeration order) if it is still free. Wrong."""
    cols = columns_of(dresser)
    total = 0
    for v in range(5 if goal <= 7 else 3):
        used = 0
        for mask, first, rest in PLACEMENTS[goal][len(cols)]:
            pos = [c.cpos if goal <= 7 else c.hpos for c in cols]
            if all(pos[c][v] - pos[first][v] == k - 4 for c, k in rest) and not used & mask:
                used |= mask
                total += 1
    return total


def random_dresser(rng: random.Random, width: int) -> list[tuple[str, int]]:
    return [(c, rng.choice((0, 180))) for c in rng.sample(CARD_IDS, width)]


def test_exact_packing_worked_example_counts_3_where_greedy_counts_2() -> None:
    dresser = parse("S05:0 S06:0 S14:180 S38:180")
    assert pattern_count(columns_of(dresser), 9) == 3  # flower 2 + line 1
    assert naive_pattern_count(dresser, 9) == 3
    assert max_packing([0b0011, 0b0110, 0b1100]) == 2  # the flower masks c1+c2, c2+c3, c3+c4
    assert max_packing([0b0110]) == 1


def test_exact_packing_beats_first_found_on_real_dressers() -> None:
    rng = random.Random(7)
    beaten = 0
    for _ in range(400):
        dresser = random_dresser(rng, 8)
        for goal in range(1, 15):
            exact = pattern_count(columns_of(dresser), goal)
            greedy = greedy_pattern_count(dresser, goal)
            assert greedy <= exact
            beaten += greedy < exact
    assert beaten > 10, "random dressers where first-found is wrong exist; the exact search must find more"


def test_pattern_counts_equal_a_brute_force_reference_at_every_width() -> None:
    rng = random.Random(11)
    for trial in range(150):
        dresser = random_dresser(rng, trial % 9)
        for goal in range(1, 15):
            assert pattern_count(columns_of(dresser), goal) == naive_pattern_count(dresser, goal), (dresser, goal)


def test_max_packing_equals_brute_force_on_random_mask_sets() -> None:
    rng = random.Random(3)
    for _ in range(300):
        masks = [rng.randrange(1, 256) for _ in range(rng.randrange(0, 9))]
        brute = max((len(sub) for k in range(len(masks) + 1) for sub in itertools.combinations(masks, k)
                     if sum(sub) == _union(sub) and len(set(sub)) == len(sub)), default=0)
        assert max_packing(masks) == brute


def _union(masks: tuple[int, ...]) -> int:
    out = 0
    for m in masks:
        out |= m
    return out


def test_row_goals_equal_a_reference_run_count_at_every_width() -> None:
    rng = random.Random(5)
    for trial in range(200):
        dresser = random_dresser(rng, trial % 9)
        for goal in range(15, 31):
            assert row_drawers(columns_of(dresser), goal) == naive_row_drawers(dresser, goal), (dresser, goal)


# -- Scenario 1: seed scoring example ------------------------------------------------------------------


def test_s1_seed_scoring_example_lidka_38_heniek_35_piotrek_52() -> None:
    result = GAME.result(final([LIDKA, HENIEK, PIOTREK], exchange=["unused", "unused", "used"]))
    assert result is not None
    rows = [(e["colour_points"], e["handle_points"], e["row_points"], e["row_bonus"], e["exchange_bonus"],
             e["total"]) for e in result["scores"]]
    assert rows == [(12, 15, 10, 0, 1, 38), (0, 18, 12, 4, 1, 35), (12, 18, 14, 8, 0, 52)]
    assert [(e["colour_count"], e["handle_count"], e["row_drawers"]) for e in result["scores"]] == [
        (3, 5, 5), (0, 6, 6), (3, 6, 7)]
    assert result["ranking"] == [{"seat": 2, "rank": 1}, {"seat": 0, "rank": 2}, {"seat": 1, "rank": 3}]
    assert result["winners"] == [2] and result["solo_rating"] is None
    assert len({c for d in (LIDKA, HENIEK, PIOTREK) for c, _ in d}) == 24
    assert GAME.outcome(final([LIDKA, HENIEK, PIOTREK], exchange=["unused", "unused", "used"])).scores == [
        38.0, 35.0, 52.0]


# -- Scenario 2: seed placement example ----------------------------------------------------------------


def test_s2_placement_example_knight_diagonal_pairs_and_red_run_through_real_moves() -> None:
    s = position(1, phase="start", step=0, hands=[["S27", "S25", "S01"]], deck=["S52", "S03", "S02", "S04"])
    s = GAME.apply(s, 0, {"type": "start", "cards": ["S27", "S25"], "orientations": [0, 0]})
    assert s.hands[0] == ["S52", "S03"] and s.discard == ["S01"]
    s = GAME.apply(s, 0, place("S52", "right", 180))
    assert s.dressers[0] == parse("S27:0 S25:0 S52:180")
    assert GAME.view(s, 0)["provisional"][0] == {"colour_count": 1, "handle_count": 3, "row_drawers": 3}
    assert s.hands[0] == ["S02", "S04"]
    s = GAME.apply(s, 0, place("S02", "left", 180))
    assert s.dressers[0][0] == ("S02", 180)
    assert GAME.view(s, 0)["provisional"][0]["handle_count"] == 4
    assert GAME.view(s, 0)["provisional"][0]["row_drawers"] == 3  # red now c2-c4 of row 2


# -- Scenario 3 and 4: exact packing, the full goal table ----------------------------------------------

GOAL_TABLE = {
    "L": (LIDKA, "3 3 1 1 2 0 1 5 5 7 2 1 0 0", "7 6 5 4 5 1 2 2 2 4 2 2 4 3 6 4"),
    "H": (HENIEK, "4 0 1 0 2 0 3 7 6 3 3 2 1 1", "10 5 6 3 6 2 2 4 2 2 2 3 4 2 6 5"),
    "P": (PIOTREK, "5 3 2 1 1 1 2 9 6 5 4 2 1 1", "9 4 7 2 7 2 2 2 2 2 2 2 9 4 4 3"),
    "X": (X, "3 2 3 1 1 2 2 5 5 2 0 1 1 1", "6 4 3 2 2 3 2 3 1 1 2 2 5 3 4 2"),
}


def test_s3_exact_packing_s05_s06_s14_s38_goal_9_is_3() -> None:
    assert dresser_counts(parse("S05:0 S06:0 S14:180 S38:180"), (1, 9, 15))[1] == 3


@pytest.mark.parametrize("who", list(GOAL_TABLE))
def test_s4_full_goal_table_counts_and_row_drawers(who: str) -> None:
    dresser, counts, rs = GOAL_TABLE[who]
    cols = columns_of(dresser)
    assert [pattern_count(cols, g) for g in range(1, 15)] == [int(x) for x in counts.split()]
    assert [row_drawers(cols, g) for g in range(15, 31)] == [int(x) for x in rs.split()]


def test_s4_spot_checks_runs_broken_by_handleless_drawers() -> None:
    from services.rules.games.sideboards.components import ROW_RULES
    from services.rules.games.sideboards.scoring import run_lengths
    x = columns_of(X)
    assert sorted(run_lengths(x, 0, ROW_RULES[15]), reverse=True)[:2] == [3, 3]  # both in row 1
    assert row_drawers(columns_of(LIDKA), 24) == 4
    lidka = columns_of(LIDKA)
    assert max(run_lengths(lidka, 0, ROW_RULES[28])) == 1 and max(run_lengths(lidka, 4, ROW_RULES[28])) == 2
    heniek = columns_of(HENIEK)
    assert sorted(run_lengths(heniek, 2, ROW_RULES[15]) + run_lengths(heniek, 1, ROW_RULES[15]))[-2:] == [4, 6]


# -- Scenario 5 and 6: bonuses --------------------------------------------------------------------------


@pytest.mark.parametrize(("values", "bonuses"), [
    ([7, 7, 5, 3], [8, 8, 4, 2]), ([6, 5, 5, 4, 3], [8, 4, 4, 2, 0]), ([5, 5], [4, 4]), ([6, 5], [4, 0]),
    ([5, 6, 7], [0, 4, 8]), ([3, 0, 0, 0], [8, 0, 0, 0])])
def test_s5_rank_bonus_uses_dense_ranking_and_zero_earns_nothing(values: list[int], bonuses: list[int]) -> None:
    assert rank_bonuses(values) == bonuses


def test_s6_solo_scoring_threshold_bonus_and_rating_band() -> None:
    result = GAME.result(final([PIOTREK]))
    assert result is not None
    assert result["scores"][0]["total"] == 12 + 18 + 14 + 4 + 1 == 49
    assert result["solo_rating"] == {"band": "hard_to_pigeonhole", "text": "You don't get pigeonholed easily!"}
    assert result["winners"] == [0] and result["ranking"] == [{"seat": 0, "rank": 1}]
    result = GAME.result(final([PIOTREK], goals=(2, 9, 27)))
    assert result is not None and result["scores"][0]["row_drawers"] == 9
    assert result["scores"][0]["total"] == 12 + 18 + 18 + 4 + 1 == 53
    result = GAME.result(final([PIOTREK], four_card_hand=True, exchange=["none"]))
    assert result is not None and result["scores"][0]["total"] == 48
    assert result["solo_rating"] is not None and result["solo_rating"]["band"] == "hard_to_pigeonhole"


def test_s6_solo_rating_band_edges() -> None:
    from services.rules.games.sideboards.scoring import solo_rating
    assert [solo_rating(t)["band"] for t in (0, 24, 25, 34, 35, 44, 45, 54, 55, 90)] == [
        "try_again", "try_again", "keep_it_up", "keep_it_up", "good", "good", "hard_to_pigeonhole",
        "hard_to_pigeonhole", "master", "master"]


# -- Scenario 7: start legality and hidden submissions -------------------------------------------------


def s7() -> Any:
    return position(3, phase="start", step=0, hands=[["S10", "S11", "S12"], ["S20", "S21", "S22"],
                                                        ["S30", "S31", "S32"]])


def test_s7_start_legality_error_codes() -> None:
    s = s7()
    assert code_of(s, 0, {"type": "start", "cards": ["S10", "S10"], "orientations": [0, 0]}) == "duplicate_card"
    assert code_of(s, 0, {"type": "start", "cards": ["S10", "S13"], "orientations": [0, 0]}) == "not_in_hand"
    assert code_of(s, 0, {"type": "start", "cards": ["S10", "S11"], "orientations": [0, 90]}) == "bad_orientation"
    assert code_of(s, 0, {"type": "exchange"}) == "wrong_phase"
    assert code_of(s, 0, place("S10")) == "wrong_phase"
    assert len(GAME.legal_moves(s, 0)) == 24
    assert GAME.legal_moves(s, 0)[:3] == [
        {"type": "start", "cards": ["S10", "S11"], "orientations": [0, 0]},
        {"type": "start", "cards": ["S10", "S11"], "orientations": [0, 180]},
        {"type": "start", "cards": ["S10", "S11"], "orientations": [180, 0]}]


def test_s7_a_submitted_start_is_hidden_until_the_step_resolves() -> None:
    move = {"type": "start", "cards": ["S12", "S10"], "orientations": [180, 0]}
    s = GAME.apply(s7(), 0, move)
    assert GAME.to_act(s) == [1, 2] and GAME.legal_moves(s, 0) == []
    other = GAME.view(s, 1)
    assert other["submitted"] == [True, False, False] and other["dressers"][0] == []
    assert other["hand_counts"][0] == 3 and other["my_submission"] is None
    assert GAME.view(s, 0)["my_submission"] == move and GAME.view(s, 0)["hand"] == ["S10", "S11", "S12"]
    for seat in (None, 1, 2):
        view = GAME.view(s, seat)
        assert "S12" not in orjson.dumps(view).decode() and leaked_secrets(GAME, s, seat, view) == set()
    assert "S12" in GAME.secrets(s, 1) and "S12" not in GAME.secrets(s, 0)
    s = submit_all(s, {1: {"type": "start", "cards": ["S20", "S21"], "orientations": [0, 0]},
                       2: {"type": "start", "cards": ["S30", "S31"], "orientations": [0, 0]}})
    assert s.dressers[0] == [("S12", 180), ("S10", 0)] and s.phase == "place" and s.step == 1


def test_error_validation_order_malformed_then_game_over_then_phase_then_submitted() -> None:
    s = s7()
    for junk in ({"type": "start", "cards": ["S10"], "orientations": [0, 0]},
                 {"type": "start", "cards": ["S10", "Z1"], "orientations": [0, 0]},
                 {"type": "start", "cards": ["S10", "S11"], "orientations": [0, "0"]},
                 {"type": "start", "cards": ["S10", "S11"], "orientations": [0, True]},
                 {"type": "place", "card": "S10", "side": "left"},
                 {"type": "place", "card": "S10", "side": 1, "orientation": 0},
                 {"type": "exchange", "card": "S10"}, {"type": "pass"}, ["start"]):
        assert code_of(s, 0, junk) == "malformed_move"
    s = GAME.apply(s, 0, {"type": "start", "cards": ["S10", "S11"], "orientations": [0, 0]})
    assert code_of(s, 0, {"type": "start", "cards": ["S10", "S11"], "orientations": [0, 0]}) == "already_submitted"
    assert code_of(s, 0, {"type": "start", "cards": ["S10", "S10"], "orientations": [0, 90]}) == "already_submitted"
    assert code_of(s, 0, {"type": "exchange"}) == "wrong_phase"
    p = position(2, hands=[["S10", "S11"], ["S20", "S21"]])
    assert code_of(p, 0, place("S12", "up", 90)) == "bad_orientation"
    assert code_of(p, 0, place("S12", "up", 0)) == "bad_side"
    assert code_of(p, 0, place("S12", "left", 0)) == "not_in_hand"
    over = final([LIDKA, HENIEK])
    assert code_of(over, 0, {"type": "exchange"}) == "game_over"
    assert code_of(over, 0, {"type": "exchange", "x": 1}) == "malformed_move"


def test_already_submitted_message_names_the_seats_still_deciding() -> None:
    s = GAME.apply(position(4, hands=[["S10", "S11"], ["S20", "S21"], ["S30", "S31"], ["S40", "S41"]]),
                   0, place("S10"))
    s = GAME.apply(s, 2, place("S30"))
    with pytest.raises(IllegalMove) as err:
        GAME.apply(s, 0, place("S11"))
    assert err.value.code == "already_submitted" and "seats 1, 3" in err.value.message


# -- Scenario 8: simultaneous place, pass left, draw order ---------------------------------------------


def s8() -> Any:
    return position(3, hands=[["S10", "S11"], ["S20", "S21"], ["S30", "S31"]],
                       dressers=[parse("S01:0 S02:0"), parse("S03:0 S04:0"), parse("S05:0 S06:0")],
                       deck=["S40", "S41", "S42"])


def test_s8_simultaneous_place_resolves_on_the_last_submission_then_passes_left_and_draws() -> None:
    s = GAME.apply(s8(), 0, place("S10", "right", 0))
    assert code_of(s, 0, place("S11")) == "already_submitted"
    s = GAME.apply(s, 1, place("S21", "left", 180))
    assert s.step == 1 and s.hands[1] == ["S20", "S21"]  # not resolved yet
    s = GAME.apply(s, 2, place("S31", "right", 0))
    assert s.hands == [["S30", "S40"], ["S11", "S41"], ["S20", "S42"]] and s.step == 2
    assert s.dressers[1][0] == ("S21", 180) and s.dressers[0][-1] == ("S10", 0)
    assert GAME.to_act(s) == [0, 1, 2]
    view = GAME.view(s, 0)
    assert view["known_in_hands"] == [{"card": "S11", "seat": 1}]
    assert view["my_passes"] == [{"step": 1, "from": 0, "to": 1, "cards": ["S11"]}]
    assert view["my_received"] == [{"step": 1, "from": 2, "to": 0, "cards": ["S30"]}]
    assert GAME.view(s, 1)["known_in_hands"] == [{"card": "S20", "seat": 2}]
    moved = submit_all(s, {0: place("S40"), 1: place("S41"), 2: place("S42")})
    assert GAME.view(moved, 0)["known_in_hands"] == [{"card": "S11", "seat": 2}, {"card": "S30", "seat": 1}]
    placed = submit_all(s, {0: place("S40"), 1: place("S11"), 2: place("S42")})
    assert GAME.view(placed, 0)["known_in_hands"] == [{"card": "S30", "seat": 1}]


def test_s8_outcome_does_not_depend_on_the_submission_order() -> None:
    moves = {0: place("S10", "right", 0), 1: place("S21", "left", 180), 2: place("S31", "right", 0)}
    encodings = {GAME.encode(submit_all(s8(), dict(order)))
                 for order in itertools.permutations(moves.items())}
    assert len(encodings) == 1


def test_a_card_passed_all_the_way_round_is_no_longer_tracked() -> None:
    s = position(2, hands=[["S10", "S11"], ["S20", "S21"]], deck=["S40", "S41", "S42", "S43"])
    s = submit_all(s, {0: place("S10"), 1: place("S20")})
    assert GAME.view(s, 0)["known_in_hands"] == [{"card": "S11", "seat": 1}]
    s = submit_all(s, {0: place("S21"), 1: place("S41")})
    assert s.hands[0] == ["S11", "S42"]
    assert GAME.view(s, 0)["known_in_hands"] == [{"card": "S40", "seat": 1}]  # S11 is back, S21 placed
    assert GAME.view(s, 1)["known_in_hands"] == [{"card": "S11", "seat": 0}]


# -- Scenario 9: exchange --------------------------------------------------------------------------------


def s9(four: bool = False) -> Any:
    hands = [["S01", "S02", "S03"], ["S05", "S06", "S20"]] if four else [["S01", "S02"], ["S05", "S06"]]
    return position(2, step=3, hands=hands, deck=["S07", "S08", "S09", "S10"],
                       dressers=[parse("S11:0 S12:0 S13:0 S14:0"), parse("S15:0 S16:0 S17:0 S18:0")],
                       four_card_hand=four)


def test_s9_exchange_resolves_at_once_and_publicly_and_only_once() -> None:
    s = GAME.apply(s9(), 1, {"type": "exchange"})
    assert s.hands[1] == ["S07", "S08"] and s.discard == ["S05", "S06"] and s.exchange[1] == "used"
    assert GAME.to_act(s) == [0, 1]
    view = GAME.view(s, 0)
    assert view["exchange"] == ["unused", "used"] and view["discard"] == ["S05", "S06"]
    assert "S07" not in orjson.dumps(view).decode()
    assert code_of(s, 1, {"type": "exchange"}) == "exchange_used"
    assert {"type": "exchange"} not in GAME.legal_moves(s, 1)
    assert GAME.legal_moves(s, 0)[-1] == {"type": "exchange"} and len(GAME.legal_moves(s, 0)) == 9
    s = GAME.apply(s, 1, place("S07"))
    assert code_of(s, 1, {"type": "exchange"}) == "already_submitted"
    while not GAME.is_over(s):
        s = first_moves(s)
    result = GAME.result(s)
    assert result is not None and [e["exchange_bonus"] for e in result["scores"]] == [1, 0]


def test_s9_four_card_hand_has_no_exchange_cards() -> None:
    s = s9(four=True)
    assert code_of(s, 1, {"type": "exchange"}) == "exchange_disabled"
    assert all(m["type"] == "place" for m in GAME.legal_moves(s, 1)) and len(GAME.legal_moves(s, 1)) == 12
    s = GAME.new_game(2, 1, {"four_card_hand": True})
    while not GAME.is_over(s):
        s = first_moves(s)
    result = GAME.result(s)
    assert result is not None and [e["exchange_bonus"] for e in result["scores"]] == [0, 0]
    assert s.exchange == ["none", "none"]


# -- Scenario 10 and 11: reshuffle ---------------------------------------------------------------------


def test_s10_reshuffle_of_the_discard_after_six_exchanges() -> None:
    s = GAME.new_game(6, 3, {})
    assert len(s.deck) == 42 and all(len(h) == 3 for h in s.hands)
    s = first_moves(s)
    assert len(s.deck) == 36 and s.step == 1
    for seat in range(6):
        s = GAME.apply(s, seat, {"type": "exchange"})
    assert len(s.deck) == 24 and len(s.discard) == 12
    discarded = sorted(s.discard)
    decks = []
    for _ in range(4):
        s = first_moves(s)
        decks.append(len(s.deck))
    assert decks == [18, 12, 6, 0] and s.last_reshuffle is None
    s = first_moves(s)
    assert s.last_reshuffle == discarded and len(s.deck) == 6 and s.discard == []
    assert GAME.view(s, None)["last_reshuffle"] == discarded
    s = first_moves(s)
    assert s.phase == "game_over" and len(s.discard) == 6 and len(s.deck) == 6
    assert all(len(d) == 8 for d in s.dressers) and GAME.to_act(s) == []


def test_s11_exchange_into_an_empty_deck_reshuffles_the_just_discarded_cards() -> None:
    s = position(2, step=5, hands=[["S02", "S03"], ["S04", "S05"]], deck=["S60"], discard=["S01"], rest="out")
    s = GAME.apply(s, 0, {"type": "exchange"})
    assert s.hands[0][0] == "S60" and s.hands[0][1] in ("S01", "S02", "S03") and len(s.hands[0]) == 2
    assert len(s.deck) == 2 and s.discard == [] and s.last_reshuffle == ["S01", "S02", "S03"]
    assert set(s.deck) | {s.hands[0][1]} == {"S01", "S02", "S03"}


def test_an_empty_deck_and_discard_skip_the_draw() -> None:
    s = position(2, step=2, hands=[["S02", "S03"], ["S04", "S05"]], rest="out")
    s = submit_all(s, {0: place("S02"), 1: place("S04")})
    assert s.hands == [["S05"], ["S03"]] and s.deck == [] and s.last_reshuffle is None
    assert [len(m) for m in (GAME.legal_moves(s, 0), GAME.legal_moves(s, 1))] == [5, 5]


def test_reshuffle_does_not_advance_the_rng_of_the_state_it_was_cloned_from() -> None:
    s = position(2, step=5, hands=[["S02", "S03"], ["S04", "S05"]], deck=[], discard=["S01"], rest="out")
    before = GAME.encode(s)
    GAME.apply(s, 0, {"type": "exchange"})
    assert GAME.encode(s) == before


# -- Scenario 12 and 13: four-card hand, solo -----------------------------------------------------------


def test_s12_four_card_hand_flow_with_six_players() -> None:
    s = GAME.new_game(6, 2, {"four_card_hand": True})
    assert len(s.deck) == 36 and all(len(h) == 4 for h in s.hands)
    assert len(GAME.legal_moves(s, 0)) == 48
    s = first_moves(s)
    assert all(len(h) == 3 for h in s.hands) and len(s.deck) == 30
    assert all(len(e["cards"]) == 2 for e in s.pass_log) and len(s.pass_log) == 6
    decks = []
    for _ in range(5):
        assert len(GAME.legal_moves(s, 0)) == 12
        s = first_moves(s)
        assert all(len(h) == 3 for h in s.hands)
        decks.append(len(s.deck))
    assert decks == [24, 18, 12, 6, 0]
    s = first_moves(s)
    assert s.phase == "game_over" and len(s.discard) == 12 and s.deck == [] and s.last_reshuffle is None


def test_s13_solo_flow_discards_leftovers_and_draws_two() -> None:
    s = GAME.new_game(1, 4, {})
    assert len(s.hands[0]) == 3 and GAME.to_act(s) == [0]
    s = first_moves(s)
    assert len(s.discard) == 1 and len(s.hands[0]) == 2 and s.pass_log == []
    while not GAME.is_over(s):
        assert GAME.to_act(s) == [0]
        s = first_moves(s)
    assert len(s.dressers[0]) == 8 and len(s.discard) == 7 and len(s.deck) == 60 - 3 - 12 == 45
    result = GAME.result(s)
    assert result is not None and result["solo_rating"] is not None and result["winners"] == [0]


def test_solo_four_card_hand_draws_three() -> None:
    s = first_moves(GAME.new_game(1, 4, {"four_card_hand": True}))
    assert len(s.discard) == 2 and len(s.hands[0]) == 3
    s = first_moves(s)
    assert len(s.discard) == 4 and len(s.hands[0]) == 3


# -- Scenario 14: game end -------------------------------------------------------------------------------


def test_s14_game_end_discards_leftovers_in_seat_order_and_scores() -> None:
    widths = [parse(" ".join(f"S{i:02d}:0" for i in range(1 + 7 * k, 8 + 7 * k))) for k in range(3)]
    s = position(3, step=6, hands=[["S30", "S31"], ["S32", "S33"], ["S34", "S35"]], dressers=widths)
    s = submit_all(s, {2: place("S34"), 0: place("S31", "left"), 1: place("S32")})
    assert s.phase == "game_over" and s.discard == ["S30", "S33", "S35"]
    assert GAME.to_act(s) == [] and all(GAME.legal_moves(s, seat) == [] for seat in range(3))
    assert code_of(s, 0, place("S30")) == "game_over"
    assert GAME.result(s) == sb.scoring.result_doc(s.dressers, s.exchange, s.goals)
    assert GAME.view(s, None)["result"] == GAME.result(s)


# -- Scenario 15: determinize ------------------------------------------------------------------------------


def test_s15_determinize_keeps_passed_cards_with_their_holder_and_clears_others_submissions() -> None:
    s = submit_all(s8(), {0: place("S10"), 1: place("S21", "left", 180), 2: place("S31")})
    s = GAME.apply(s, 1, place("S41"))
    s = GAME.apply(s, 0, place("S30"))
    samples = set()
    for i in range(40):
        det = GAME.determinize(s, 0, random.Random(i))
        assert "S11" in det.hands[1] and det.hands[0] == s.hands[0] and det.dressers == s.dressers
        assert det.submitted == [s.submitted[0], None, None] and GAME.to_act(det) == [1, 2]
        assert [len(h) for h in det.hands] == [len(h) for h in s.hands] and len(det.deck) == len(s.deck)
        assert GAME.view(det, 0) == GAME.view(GAME.without_others_submissions(s, 0), 0)
        samples.add((tuple(det.hands[2]), tuple(det.deck)))
        final_state, _ = random_playout(GAME, det, random.Random(i))
        assert GAME.is_over(final_state)
    assert len(samples) > 5


def test_s15_after_a_reshuffle_the_sampled_deck_comes_from_the_reshuffled_cards() -> None:
    s = first_moves(GAME.new_game(6, 3, {}))
    for seat in range(6):
        s = GAME.apply(s, seat, {"type": "exchange"})
    for _ in range(5):
        s = first_moves(s)
    assert s.last_reshuffle is not None and s.step == 6
    pool = set(s.last_reshuffle)
    for i in range(30):
        det = GAME.determinize(s, 2, random.Random(i))
        assert set(det.deck) <= pool and len(det.deck) == 6
        assert GAME.view(det, 2) == GAME.view(s, 2)


def test_determinize_depends_only_on_the_view_even_when_hidden_hands_differ() -> None:
    s = submit_all(s8(), {0: place("S10"), 1: place("S21", "left", 180), 2: place("S31")})
    assert s.hands[2] == ["S20", "S42"]  # seat 0 has seen neither
    twin = GAME.clone(s)
    twin.hands[2][1], twin.deck[0] = s.deck[0], s.hands[2][1]
    assert GAME.view(twin, 0) == GAME.view(s, 0) and GAME.encode(twin) != GAME.encode(s)
    assert GAME.encode(GAME.determinize(s, 0, random.Random(4))) == GAME.encode(
        GAME.determinize(twin, 0, random.Random(4)))


# -- Setup and options ------------------------------------------------------------------------------------


def test_setup_draws_random_goals_colour_handle_row_then_deals_round_robin() -> None:
    s = GAME.new_game(3, 9, {})
    rng = random.Random(9)
    goals = (rng.choice(range(1, 8)), rng.choice(range(8, 15)), rng.choice(range(15, 31)))
    deck = list(CARD_IDS)
    rng.shuffle(deck)
    assert s.goals == goals
    assert s.hands == [[deck[0], deck[3], deck[6]], [deck[1], deck[4], deck[7]], [deck[2], deck[5], deck[8]]]
    assert s.deck == deck[9:] and s.phase == "start" and s.step == 0 and GAME.to_act(s) == [0, 1, 2]
    assert GAME.view(s, None)["goals"] == {"colour": goals[0], "handle": goals[1], "row": goals[2]}


def test_explicit_goals_use_no_randomness_for_the_goals() -> None:
    s = GAME.new_game(2, 9, {"goals": [4, 11, 27]})
    deck = list(CARD_IDS)
    random.Random(9).shuffle(deck)
    assert s.goals == (4, 11, 27) and s.hands[0][0] == deck[0]
    for setup in DATA["suggested_setups"]:
        assert GAME.new_game(2, 1, {"goals": setup}).goals == tuple(setup)


@pytest.mark.parametrize(("players", "options", "fragment"), [
    (0, {}, "1 to 6 players"), (7, {}, "1 to 6 players"),
    (2, {"goals": [8, 9, 19]}, "8 is not a colour goal"), (2, {"goals": [2, 15, 19]}, "15 is not a handle goal"),
    (2, {"goals": [2, 9, 31]}, "31 is not a row goal"), (2, {"goals": [2, 9]}, "list of 3"),
    (2, {"goals": "chosen"}, "random"), (2, {"goals": [2, 9, True]}, "list of 3"),
    (2, {"goals": {"colour": 2}}, "list of 3"), (2, {"four_card_hand": 1}, "true or false"),
    (2, {"variant": True}, "unknown option")])
def test_invalid_options_are_rejected_with_a_clear_message(players: int, options: dict[str, Any],
                                                           fragment: str) -> None:
    with pytest.raises(InvalidOptions) as err:
        GAME.new_game(players, 1, options)
    assert err.value.code == "invalid_options" and fragment in err.value.message


def test_catalogue_declares_simultaneous_play_and_the_goals_option() -> None:
    doc = GAME.catalogue()
    assert doc["id"] == "sideboards" and doc["simultaneous"] is True
    assert (doc["min_players"], doc["max_players"]) == (1, 6)
    assert [(o["name"], o["type"], o["default"]) for o in doc["options"]] == [
        ("goals", "any", "random"), ("four_card_hand", "bool", False)]


# -- Views and transport ----------------------------------------------------------------------------------


def test_view_fields_for_a_seat_and_for_a_spectator() -> None:
    s = GAME.new_game(3, 2, {})
    public = {"phase", "step", "players", "options", "goals", "dressers", "hand_counts", "deck_count", "discard",
              "last_reshuffle", "exchange", "submitted", "provisional", "result"}
    assert set(GAME.view(s, None)) == public
    assert set(GAME.view(s, 1)) == public | {"hand", "my_submission", "my_passes", "my_received",
                                             "known_in_hands"}
    assert GAME.view(s, None)["provisional"] == [{"colour_count": 0, "handle_count": 0, "row_drawers": 0}] * 3


def test_decode_rejects_inconsistent_states() -> None:
    s = submit_all(s8(), {0: place("S10"), 1: place("S21", "left", 180), 2: place("S31")})
    s = GAME.apply(s, 1, place("S41"))
    doc = orjson.loads(GAME.encode(s))
    assert GAME.encode(GAME.decode(GAME.encode(s))) == GAME.encode(s)
    forgeries = []
    forged = orjson.loads(orjson.dumps(doc))
    forged["submitted"][1] = {"type": "place", "card": "S99", "side": "left", "orientation": 0}
    forgeries.append(forged)
    forged = orjson.loads(orjson.dumps(doc))
    forged["submitted"][1]["card"] = "S30"  # in seat 0's hand
    forgeries.append(forged)
    forged = orjson.loads(orjson.dumps(doc))
    forged["submitted"] = [{"type": "place", "card": h[0], "side": "left", "orientation": 0} for h in doc["hands"]]
    forgeries.append(forged)
    forged = orjson.loads(orjson.dumps(doc))
    forged["pass_log"][0]["cards"] = ["S12"]
    forgeries.append(forged)
    forged = orjson.loads(orjson.dumps(doc))
    forged["tracked"][0] = ["S20"]
    forgeries.append(forged)
    forged = orjson.loads(orjson.dumps(doc))
    forged["last_reshuffle"] = ["S01"]
    forgeries.append(forged)
    forged = orjson.loads(orjson.dumps(doc))
    forged["dressers"][0].pop()
    forged["hands"][0].append("S10")
    forgeries.append(forged)
    forged = orjson.loads(orjson.dumps(doc))
    forged["step"] = 3
    forgeries.append(forged)
    forged = orjson.loads(orjson.dumps(doc))
    forged["result"] = {"scores": []}
    forgeries.append(forged)
    for forged in forgeries:
        with pytest.raises(InvalidState):
            GAME.decode(orjson.dumps(forged))


def test_finished_game_round_trips_and_a_forged_result_is_rejected() -> None:
    s = GAME.new_game(4, 8, {"goals": [2, 9, 19]})
    final_state, _ = random_playout(GAME, s, random.Random(8))
    data = GAME.encode(final_state)
    assert GAME.result(GAME.decode(data)) == GAME.result(final_state)
    doc = orjson.loads(data)
    doc["result"]["scores"][0]["total"] += 1
    with pytest.raises(InvalidState):
        GAME.decode(orjson.dumps(doc))
