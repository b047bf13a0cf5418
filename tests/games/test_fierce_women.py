"""Fierce Women: the spec's test scenarios T1-T15, each named after the rule it checks."""

from __future__ import annotations

import random
from typing import Any

import pytest

from services.rules.games import fierce_women as fw
from services.rules.games.base import IllegalMove
from tests.games.fixtures.fierce_women import position

GAME = fw.GAME


def code_of(state: Any, seat: int, move: dict[str, Any]) -> str:
    with pytest.raises(IllegalMove) as err:
        GAME.apply(state, seat, move)
    assert err.value.message
    return err.value.code


def identity_setup(players: int, action_cards: bool = False) -> Any:
    deck = fw.WOMAN_IDS + (fw.ACTION_IDS if action_cards else [])
    return fw.setup(players, {"action_cards": action_cards}, list(deck), random.Random(0))


# -- T1 Setup ---------------------------------------------------------------------------------------


def test_t1_setup_deals_round_robin_and_builds_piles_from_the_deck() -> None:
    s = identity_setup(3)
    assert s.hands == [["W01", "W04", "W07"], ["W02", "W05", "W08"], ["W03", "W06", "W09"]]
    assert s.piles[0][0] == "W10" and len(s.piles[0]) == 10 and s.piles[2][-1] == "W39"
    assert s.out_of_game == [f"W{i:02d}" for i in range(40, 57)]
    assert (s.phase, s.current, GAME.to_act(s), s.turn) == ("draw", 0, [0], 1)


def test_t1_four_players_get_40_pile_cards_14_13_13() -> None:
    s = identity_setup(4)
    assert s.hands[1] == ["W02", "W06", "W10"]
    assert [len(p) for p in s.piles] == [14, 13, 13]
    assert s.piles[0][0] == "W13" and s.piles[1][0] == "W27" and s.piles[2][0] == "W40"
    assert s.out_of_game == ["W53", "W54", "W55", "W56"]


def test_t1_two_players_deal_only_the_real_seats_and_keep_30_pile_cards() -> None:
    s = identity_setup(2, action_cards=True)
    assert s.hands[:2] == [["W01", "W03", "W05"], ["W02", "W04", "W06"]] and s.hands[2] == []
    assert [p[0] for p in s.piles] == ["W07", "W17", "W27"]
    assert len(s.out_of_game) == 28 and GAME.to_act(s) == [0]


def test_t1_reference_procedure_with_seed_1() -> None:
    s = GAME.new_game(3, 1, {})
    assert s.hands == [["W26", "W10", "W39"], ["W56", "W03", "W46"], ["W23", "W06", "W24"]]
    assert [p[0] for p in s.piles] == ["W40", "W50", "W47"] and len(s.out_of_game) == 17
    s2 = GAME.new_game(2, 1, {"action_cards": True})
    assert s2.hands[:2] == [["W23", "W53", "W20"], ["W13", "W04", "W06"]]
    assert [p[0] for p in s2.piles] == ["A5", "W45", "W33"]


# -- T2 Seed worked example -------------------------------------------------------------------------


def test_t2_rulebook_worked_example_scores_17_13_9() -> None:
    s = position(3, phase="game_over", action_cards=False, piles=[[], [], []], tables=[
        [["W04", "W16", "W17", "W10"], ["W46", "W18"], ["W20"], ["W11"]],
        [["W48", "W49", "W03", "W27"], ["W43", "W44"], ["W51"]],
        [["W23", "W26", "W29"], ["W06", "W40"], ["W19"]],
    ])
    result = GAME.result(s)
    assert result is not None
    assert result["scores"] == [17, 13, 9]
    assert result["category_values"] == {"art": 1, "culture": 0, "feminism": 3, "human_rights": 0, "politics": 2,
                                         "science": 1}
    assert [r["rank"] for r in result["ranking"]] == [1, 2, 3] and result["winners"] == [0]
    assert result["breakdown"][0][0] == {"column": 0, "category": "feminism", "women": 4, "value": 3,
                                         "doubled": False, "bonus": 0, "points": 12}


def test_the_view_shows_points_now_the_ends_scoring_of_the_tables_as_they_are() -> None:
    """Issue 50: a live score, as the other games have, from the engine's own scoring (all of it public)."""
    s = position(3, phase="play", action_cards=False, tables=[
        [["W04", "W16", "W17", "W10"], ["W46", "W18"], ["W20"], ["W11"]],
        [["W48", "W49", "W03", "W27"], ["W43", "W44"], ["W51"]],
        [["W23", "W26", "W29"], ["W06", "W40"], ["W19"]],
    ])
    for seat in (0, 1, None):
        view = GAME.view(s, seat)
        assert view["points_now"] == [17, 13, 9] and view["result"] is None
        assert [col["points"] for col in view["tables"][0]] == [12, 4, 0, 1]


# -- T3 Column rule ---------------------------------------------------------------------------------


def t3() -> Any:
    return position(3, hands=[["W05", "W48", "W15", "W03"], [], []], tables=[
        [["W04", "W16", "W17", "W10"], ["W46", "W18"], ["W20"], ["W11"]], [], []], action_cards=False)


def test_t3_column_rule_allows_a_card_sharing_the_category() -> None:
    s = GAME.apply(t3(), 0, {"type": "place", "card": "W05", "column": 2})
    assert s.tables[0][2] == ["W20", "W05"]


def test_t3_column_rule_rejects_no_common_category_and_a_second_politics_column() -> None:
    assert code_of(t3(), 0, {"type": "place", "card": "W48", "column": 2}) == "no_common_category"
    assert code_of(t3(), 0, {"type": "place", "card": "W48", "column": "new"}) == "category_already_collected"
    GAME.apply(t3(), 0, {"type": "place", "card": "W48", "column": 1})
    assert code_of(t3(), 0, {"type": "place", "card": "W15", "column": 0}) == "no_common_category"
    GAME.apply(t3(), 0, {"type": "place", "card": "W15", "column": 3})
    assert code_of(t3(), 0, {"type": "place", "card": "W43", "column": 0}) == "card_not_in_hand"


def test_t3_undefined_column_may_not_become_a_collected_category() -> None:
    s = GAME.apply(t3(), 0, {"type": "place", "card": "W03", "column": "new"})
    assert s.tables[0][4] == ["W03"]
    for card, code in (("W12", "category_already_collected"), ("W46", "category_already_collected"),
                       ("W23", "category_already_collected")):
        s2 = position(3, hands=[[card, "W01", "W02", "W07"], [], []], tables=[s.tables[0], [], []],
                         action_cards=False)
        assert code_of(s2, 0, {"type": "place", "card": card, "column": 4}) == code
    s3 = position(3, hands=[["W33", "W01", "W02", "W07"], [], []], tables=[s.tables[0], [], []], action_cards=False)
    assert GAME.apply(s3, 0, {"type": "place", "card": "W33", "column": 4}).tables[0][4] == ["W03", "W33"]


# -- T4 Draw and turn errors ------------------------------------------------------------------------


def test_t4_turn_order_and_phase_errors() -> None:
    s = identity_setup(3)
    assert code_of(s, 1, {"type": "draw", "pile": 0}) == "not_your_turn"
    assert code_of(s, 0, {"type": "place", "card": "W01", "column": "new"}) == "wrong_phase"
    assert code_of(s, 0, {"type": "draw", "pile": 3}) == "malformed_move"


def test_t4_drawn_card_is_public_and_the_turn_passes() -> None:
    s = GAME.apply(identity_setup(3), 0, {"type": "draw", "pile": 1})
    assert s.hands[0] == ["W01", "W04", "W07", "W20"] and s.piles[1][0] == "W21" and s.phase == "play"
    view = GAME.view(s, 1)
    assert view["hands"][0] == {"size": 4, "known": ["W20"]}
    assert view["hands"][1] == {"size": 3, "known": [], "cards": ["W02", "W05", "W08"]}
    assert view["piles"][1] == {"size": 9, "top": "W21"}
    s = GAME.apply(s, 0, {"type": "place", "card": "W07", "column": "new"})
    assert s.tables[0] == [["W07"]] and (s.current, s.phase, s.turn) == (1, "draw", 2)


def test_t4_empty_pile_cannot_be_drawn() -> None:
    s = position(3, phase="draw", piles=[["W10"], ["W11"], []], hands=[["W01", "W02", "W03"], [], []])
    assert code_of(s, 0, {"type": "draw", "pile": 2}) == "empty_pile"


# -- T5/T6 Any -> min and Solo -> max ----------------------------------------------------------------


def t5() -> Any:
    return position(3, hands=[["A2", "A1", "W14", "W42"], [], []],
                       tables=[[["W11", "W12"], ["W43"]], [["W13"], ["W46"]], [["W05"]]])


def test_t5_solo_max_needs_a_category_no_one_else_collects() -> None:
    assert code_of(t5(), 0, {"type": "play_action", "card": "A2", "column": 0}) == "category_not_solo"
    s = GAME.apply(t5(), 0, {"type": "play_action", "card": "A2", "column": 1})
    assert s.tables[0][1] == ["W43", "A2"] and s.overrides == {"art": {"value": 3, "card": "A2", "seat": 0}}
    assert "A2" not in s.discard


def test_t5_later_any_min_replaces_the_override_and_it_survives_removal() -> None:
    s = position(3, phase="game_over", piles=[[], [], []],
                    tables=[[["W11", "W12"], ["W43", "A2"]], [["W13"], ["W46"]], [["W05"]]],
                    overrides={"art": {"value": 1, "card": "A1", "seat": 1}}, discard=["A1", "W44"])
    assert GAME.result(s)["scores"] == [5, 3, 1]  # type: ignore[index]
    s.overrides = {"art": {"value": 3, "card": "A2", "seat": 0}}
    assert GAME.result(s)["scores"][0] == 7  # type: ignore[index]


def test_t6_solo_max_counts_the_automa() -> None:
    s = position(2, hands=[["A2", "W55", "W01", "W02"], [], []],
                    tables=[[["W47"], ["W50"]], [["W46"]], [["W11", "W12"]]])
    assert code_of(s, 0, {"type": "play_action", "card": "A2", "column": 0}) == "category_not_solo"
    s = GAME.apply(s, 0, {"type": "play_action", "card": "A2", "column": 1})
    assert s.overrides["art"]["value"] == 3
    end = position(2, phase="game_over", piles=[[], [], []], overrides=s.overrides,
                      tables=[[["W47"], ["W50", "A2", "W55"]], [["W46"]], [["W11", "W12"]]])
    result = GAME.result(end)
    assert result is not None and result["scores"] == [8, 1, 4] and result["winners"] == [0]


# -- T7 2x by number --------------------------------------------------------------------------------


def test_t7_double_by_count_doubles_every_column_of_that_size() -> None:
    s = position(3, phase="game_over", piles=[[], [], []], tables=[
        [["W11", "W12", "W13", "A3"], ["W46"]], [["W48", "W49", "W27"], ["W04", "W07"]],
        [["W14"], ["W43", "W44", "W45"]]])
    result = GAME.result(s)
    assert result is not None and result["scores"] == [14, 12, 8] and result["double_count"] == 3
    s.tables[0] = [["W46"]]
    s.discard = ["W11", "W12", "W13", "A3"]
    result = GAME.result(s)
    assert result is not None and result["scores"] == [2, 6, 4] and result["double_count"] is None


# -- T8 Removing columns, 2 players -----------------------------------------------------------------


def t8() -> Any:
    return position(2, current=1, hands=[["W01", "W02", "W03"], ["A4", "W07", "W12", "W53"], []],
                       tables=[[["W11"], ["W44", "W45"]], [["W46"], ["W04"]], [["W05"], ["W43"], ["W15"]]],
                       piles=[["W35"], [], []], automa_placed=["W05", "W43", "W15"])


def test_t8_remove_columns_goes_round_the_table_from_the_actor() -> None:
    s = GAME.apply(t8(), 1, {"type": "play_action", "card": "A4"})
    assert s.discard == ["A4"] and s.phase == "remove_column" and GAME.to_act(s) == [1]
    assert s.pending == {"action": "remove_column", "actor": 1, "queue": [1, 2, 0]}
    assert code_of(s, 0, {"type": "remove_column", "column": 0}) == "not_your_turn"
    assert code_of(s, 1, {"type": "remove_column", "column": 2}) == "no_such_column"
    s = GAME.apply(s, 1, {"type": "remove_column", "column": 0})
    assert s.tables[1] == [["W04"]] and s.tables[2] == [["W05"], ["W43"]]
    assert s.discard == ["A4", "W46", "W15"] and GAME.to_act(s) == [0]
    s = GAME.apply(s, 0, {"type": "remove_column", "column": 1})
    assert s.tables[0] == [["W11"]] and s.discard == ["A4", "W46", "W15", "W44", "W45"]
    assert s.tables[2] == [["W05", "W35"], ["W43"]]
    assert s.automa_last == {"turn": 2, "pile": 0, "card": "W35", "column": 0}
    assert (s.current, s.phase) == (0, "draw") or not any(s.piles)


# -- T9 Removing cards ------------------------------------------------------------------------------


def t9() -> Any:
    return position(3, hands=[["A5", "W01", "W02", "W03"], [], []],
                       tables=[[["W11", "W12", "A1"], ["W20", "W05"]], [["W46"]], []],
                       overrides={"science": {"value": 1, "card": "A1", "seat": 0}})


def test_t9_remove_cards_needs_two_women_of_your_own() -> None:
    s = GAME.apply(t9(), 0, {"type": "play_action", "card": "A5"})
    assert s.discard == ["A5"] and GAME.to_act(s) == [0]
    assert code_of(s, 0, {"type": "remove_cards", "cards": ["W11"]}) == "bad_removal"
    assert code_of(s, 0, {"type": "remove_cards", "cards": ["W11", "A1"]}) == "bad_removal"
    assert code_of(s, 0, {"type": "remove_cards", "cards": ["W11", "W11"]}) == "malformed_move"


def test_t9_a_column_left_without_women_is_deleted_with_its_action_cards() -> None:
    s = GAME.apply(GAME.apply(t9(), 0, {"type": "play_action", "card": "A5"}), 0,
                   {"type": "remove_cards", "cards": ["W12", "W11"]})
    assert s.tables[0] == [["W20", "W05"]] and s.discard == ["A5", "W12", "W11", "A1"]
    assert s.overrides["science"]["value"] == 1
    assert code_of(s, 1, {"type": "remove_cards", "cards": ["W46", "W48"]}) == "bad_removal"
    s = GAME.apply(s, 1, {"type": "remove_cards", "cards": ["W46"]})
    assert s.tables[1] == [] and (s.current, s.phase) == (1, "draw")


def test_t9_automa_removes_her_most_recent_cards() -> None:
    s = position(2, hands=[["A5", "W01", "W02", "W03"], [], []], tables=[[["W44"]], [], [["W13", "W14"], ["W20"]]],
                    automa_placed=["W13", "W20", "W14"])
    s = GAME.apply(s, 0, {"type": "play_action", "card": "A5"})
    s = GAME.apply(s, 0, {"type": "remove_cards", "cards": ["W44"]})
    assert s.tables[2] == [["W13"]] and s.discard[:3] == ["A5", "W44", "W14"]


# -- T10/T11 scoring modifiers -----------------------------------------------------------------------


def test_t10_popular_min_lowers_categories_everyone_collects_but_not_overrides() -> None:
    tables = [[["W46", "W48"], ["W11", "W12", "A2"]], [["W49"], ["W13"]], [["W25", "W26"], ["W14"]]]
    s = position(3, phase="game_over", piles=[[], [], []], tables=tables, popular_min=True,
                    overrides={"science": {"value": 3, "card": "A2", "seat": 0}})
    result = GAME.result(s)
    assert result is not None and result["scores"] == [8, 4, 5] and result["winners"] == [0]
    s.popular_min = False
    assert GAME.result(s)["scores"] == [12, 6, 9]  # type: ignore[index]


def test_t11_collect_five_plus_one_adds_after_doubling() -> None:
    tables = [[["W43", "W44"], ["W42"], ["W51"], ["W05", "W53"], ["W46"], ["W01", "W04"]],
              [["W11", "W12", "A3"], ["W54"]], [["W45"]]]
    s = position(3, phase="game_over", piles=[[], [], []], tables=tables, collect_five_plus_one=0)
    assert GAME.result(s)["scores"] == [26, 6, 2]  # type: ignore[index]
    s.tables[0] = [col for col in tables[0] if col != ["W46"]]
    assert GAME.result(s)["scores"][0] == 18  # type: ignore[index]


# -- T12 Reshuffling --------------------------------------------------------------------------------


def t12(extra: list[list[str]] | None = None) -> Any:
    table = [["W11", "A3"], ["W17", "W26"], ["W27"], ["W04"]] + (extra or [])
    s = position(3, hands=[["A8", "W01", "W02", "W03"], [], []], tables=[table, [], []])
    return GAME.apply(s, 0, {"type": "play_action", "card": "A8"})


def test_t12_rearrange_offers_keep_and_best() -> None:
    s = t12()
    assert s.discard == ["A8"] and s.phase == "rearrange" and GAME.to_act(s) == [0]
    assert GAME.legal_moves(s, 0) == [{"type": "rearrange", "columns": [["W17", "W26"], ["W27"], ["W04"]]},
                                      {"type": "rearrange", "columns": [["W04", "W17"], ["W26", "W27"]]}]
    done = GAME.apply(s, 0, GAME.legal_moves(s, 0)[1])
    assert done.tables[0] == [["W11", "A3"], ["W04", "W17"], ["W26", "W27"]]


def test_t12_rearrange_is_validated_as_a_whole() -> None:
    s = t12()
    GAME.apply(s, 0, {"type": "rearrange", "columns": [["W04", "W27"], ["W17", "W26"]]})
    for columns in ([["W04", "W17", "W26", "W27"]], [["W04", "W17"], ["W26"]],
                    [["W04", "W17"], ["W26", "W27"], ["W11"]]):
        assert code_of(s, 0, {"type": "rearrange", "columns": columns}) == "bad_arrangement"


def test_t12_best_arrangement_tie_break_and_duplicate_categories() -> None:
    s = t12([["W51"]])
    assert code_of(s, 0, {"type": "rearrange", "columns": [["W04", "W17"], ["W51"], ["W26", "W27"]]}) == \
        "bad_arrangement"
    assert GAME.legal_moves(s, 0)[1]["columns"] == [["W04", "W27"], ["W17", "W26", "W51"]]


def test_t12_nothing_to_rearrange_ends_the_turn_at_once() -> None:
    s = position(3, hands=[["A8", "W01", "W02", "W03"], [], []], tables=[[["W11", "A3"]], [], []])
    s = GAME.apply(s, 0, {"type": "play_action", "card": "A8"})
    assert (s.phase, s.current) == ("draw", 1)


# -- T13 Automa turns -------------------------------------------------------------------------------


def test_t13_automa_draws_leftmost_and_places_first_fit() -> None:
    s = position(2, tables=[[], [], [["W05"]]], piles=[[], ["W20", "A6", "W43"], ["W11"]])
    fw.automa_turn(s)
    assert s.tables[2] == [["W05", "W20"]]
    fw.automa_turn(s)
    assert "A6" in s.discard and not s.popular_min and s.automa_last["column"] is None  # type: ignore[index]
    fw.automa_turn(s)
    assert s.tables[2] == [["W05", "W20"], ["W43"]]
    fw.automa_turn(s)
    assert s.tables[2] == [["W05", "W20"], ["W43"], ["W11"]]
    s2 = position(2, tables=[[], [], [["W30"], ["W44"]]], piles=[["W43"], [], []])
    fw.automa_turn(s2)
    assert s2.tables[2] == [["W30"], ["W44", "W43"]]
    s3 = position(2, phase="draw", hands=[["W01", "W02", "W03"], [], []])
    assert GAME.legal_moves(s3, 2) == [] and code_of(s3, 2, {"type": "draw", "pile": 0}) == "not_your_turn"


# -- T14 End of game --------------------------------------------------------------------------------


def test_t14_game_ends_when_a_turn_would_begin_with_empty_piles() -> None:
    s = position(3, phase="draw", current=2, piles=[[], [], ["W40"]],
                    hands=[["W01", "W02", "W03"], ["W04", "W05", "W06"], ["W07", "W08", "W09"]])
    s.turn = 30
    assert code_of(s, 2, {"type": "draw", "pile": 0}) == "empty_pile"
    s = GAME.apply(s, 2, {"type": "draw", "pile": 2})
    s = GAME.apply(s, 2, GAME.legal_moves(s, 2)[0])
    assert s.phase == "game_over" and GAME.to_act(s) == [] and GAME.result(s) is not None
    view = GAME.view(s, 0)
    assert all("cards" in h for h in view["hands"]) and "out_of_game" in view
    assert code_of(s, 0, {"type": "draw", "pile": 0}) == "game_over"


@pytest.mark.parametrize(("players", "turns"), [(2, 30), (3, 30), (4, 40), (5, 40)])
def test_t14_every_seat_gets_the_same_number_of_turns(players: int, turns: int) -> None:
    s = GAME.new_game(players, 3, {"action_cards": False})
    rng = random.Random(3)
    while not GAME.is_over(s):
        seat = GAME.to_act(s)[0]
        s = GAME.apply(s, seat, rng.choice(GAME.legal_moves(s, seat)))
    assert s.turn == turns


# -- T15 Ties and action errors ---------------------------------------------------------------------


def test_t15_ties_share_the_win() -> None:
    s = position(3, phase="game_over", piles=[[], [], []], tables=[[["W11"]], [["W12"]], [["W46"]]])
    result = GAME.result(s)
    assert result is not None and result["scores"] == [2, 2, 1] and result["winners"] == [0, 1]
    assert [r["rank"] for r in result["ranking"]] == [1, 1, 3]
    s2 = position(2, phase="game_over", piles=[[], [], []], tables=[[["W43"]], [["W04"]], [["W11", "W12"]]])
    result = GAME.result(s2)
    assert result is not None and result["scores"] == [1, 0, 2] and result["winners"] == [2]


def test_t15_action_card_errors() -> None:
    s = position(3, hands=[["A1", "A3", "A6", "W07"], [], []], tables=[[["W04"], ["W46"]], [], []])
    assert code_of(s, 0, {"type": "play_action", "card": "A1", "column": 0}) == "column_not_defined"
    assert code_of(s, 0, {"type": "play_action", "card": "A3"}) == "malformed_move"
    assert code_of(s, 0, {"type": "play_action", "card": "A6", "column": 0}) == "malformed_move"
    assert code_of(s, 0, {"type": "play_action", "card": "W07"}) == "not_an_action_card"
    assert code_of(s, 0, {"type": "place", "card": "A1", "column": 0}) == "not_a_woman_card"
    assert code_of(s, 0, {"type": "discard", "card": "A1"}) == "discard_not_allowed"
    done = GAME.apply(s, 0, {"type": "play_action", "card": "A3", "column": 1})
    assert done.tables[0] == [["W04"], ["W46", "A3"]]
    actions = [m for m in GAME.legal_moves(s, 0) if m["type"] == "play_action" and m["card"] == "A1"]
    assert actions == [{"type": "play_action", "card": "A1", "column": 1}]


def test_c2_action_id_without_action_cards_is_not_in_hand() -> None:
    s = position(3, action_cards=False, hands=[["W01", "W02", "W03", "W05"], [], []])
    assert code_of(s, 0, {"type": "play_action", "card": "A1", "column": 0}) == "card_not_in_hand"


def test_view_matches_the_spec_shape_and_spectators_see_no_cards() -> None:
    s = GAME.apply(identity_setup(3), 0, {"type": "draw", "pile": 1})
    view = GAME.view(s, 1)
    assert list(view) == ["game", "viewer", "players", "seats", "automa_seat", "options", "phase", "current",
                          "to_act", "turn", "piles", "out_of_game_count", "hands", "tables", "discard", "overrides",
                          "popular_min", "collect_five_plus_one", "pending", "automa_placed", "automa_last",
                          "points_now", "result"]
    assert all("cards" not in h for h in GAME.view(s, None)["hands"])


# -- Moves: messages name the card, the column and the category (C7) ---------------------------------


def message_of(state: Any, seat: int, move: dict[str, Any]) -> str:
    with pytest.raises(IllegalMove) as err:
        GAME.apply(state, seat, move)
    return err.value.message


def test_c7_column_rule_messages_name_card_column_and_category() -> None:
    assert message_of(t3(), 0, {"type": "place", "card": "W48", "column": "new"}) == \
        "W48 cannot start a new column: you already collect politics in column 1"
    s = position(3, hands=[["W12", "W01", "W02", "W07"], [], []], action_cards=False,
                    tables=[[["W04", "W16", "W17", "W10"], ["W46", "W18"], ["W20"], ["W11"], ["W03"]], [], []])
    assert message_of(s, 0, {"type": "place", "card": "W12", "column": 4}) == \
        "W12 cannot go in column 4: it would collect science, which you already collect in column 3"
    message = message_of(t3(), 0, {"type": "place", "card": "W48", "column": 2})
    assert all(word in message for word in ("W48", "column 2", "politics", "art", "human_rights"))


def test_c7_action_messages_name_card_column_and_category() -> None:
    message = message_of(t5(), 0, {"type": "play_action", "card": "A2", "column": 0})
    assert all(word in message for word in ("A2", "column 0", "science", "seat 1"))
    s = position(3, hands=[["A1", "A3", "A6", "W07"], [], []], tables=[[["W04"], ["W46"]], [], []])
    message = message_of(s, 0, {"type": "play_action", "card": "A1", "column": 0})
    assert all(word in message for word in ("A1", "column 0", "culture", "feminism"))


# -- Setup table: every player count, with and without action cards ---------------------------------


@pytest.mark.parametrize(("players", "action_cards", "seats", "dealt", "piles", "out"), [
    (2, False, 3, 6, [10, 10, 10], 20), (2, True, 3, 6, [10, 10, 10], 28),
    (3, False, 3, 9, [10, 10, 10], 17), (3, True, 3, 9, [10, 10, 10], 25),
    (4, False, 4, 12, [14, 13, 13], 4), (4, True, 4, 12, [14, 13, 13], 12),
    (5, False, 5, 15, [14, 13, 13], 1), (5, True, 5, 15, [14, 13, 13], 9),
])
def test_setup_table_dealt_piles_and_out_of_game(players: int, action_cards: bool, seats: int, dealt: int,
                                                  piles: list[int], out: int) -> None:
    s = GAME.new_game(players, 11, {"action_cards": action_cards})
    assert s.seats == seats and GAME.seat_count(s) == seats
    assert sum(len(h) for h in s.hands) == dealt and all(len(h) == 3 for h in s.hands[:dealt // 3])
    assert [len(p) for p in s.piles] == piles and len(s.out_of_game) == out
    assert s.automa == (2 if players == 2 else None) and (s.automa_placed == []) == (players == 2)
    assert (s.phase, s.current, s.turn, s.tables, s.discard, s.overrides) == ("draw", 0, 1, [[]] * seats, [], {})
    assert (s.popular_min, s.collect_five_plus_one, s.pending) == (False, None, None)


# -- Flow: A4/A5 resolution queue --------------------------------------------------------------------


def test_t8_a_seat_with_nothing_to_remove_is_skipped_and_the_turn_ends() -> None:
    s = t8()
    s.tables[0] = []
    s.out_of_game += ["W11", "W44", "W45"]
    s.piles[1] = ["W36"]  # the game goes on after the automa's turn
    s.out_of_game.remove("W36")
    s = GAME.apply(s, 1, {"type": "play_action", "card": "A4"})
    s = GAME.apply(s, 1, {"type": "remove_column", "column": 0})
    assert s.tables == [[], [["W04"]], [["W05", "W35"], ["W43"]]]  # automa removed [W15], then took its turn
    assert s.discard == ["A4", "W46", "W15"] and (s.current, s.phase, s.pending) == (0, "draw", None)


# -- Moves: validation step 1 and the validation order ------------------------------------------------


@pytest.mark.parametrize("move", [
    "draw", ["draw"], {"type": "fly"}, {"pile": 0}, {"type": "draw"}, {"type": "draw", "pile": 0, "x": 1},
    {"type": "draw", "pile": "0"}, {"type": "draw", "pile": True}, {"type": "draw", "pile": 1.0},
    {"type": "draw", "pile": 3}, {"type": "draw", "pile": -1},
    {"type": "place", "card": "W99", "column": 0}, {"type": "place", "card": "W05", "column": -1},
    {"type": "place", "card": "W05", "column": "left"}, {"type": "place", "card": "W05", "column": 1.0},
    {"type": "place", "card": "W05"}, {"type": "place", "card": 5, "column": 0},
    {"type": "play_action", "card": "A1", "column": -1}, {"type": "play_action", "card": "A1", "column": "0"},
    {"type": "play_action", "card": "A9"}, {"type": "play_action"},
    {"type": "discard", "card": "A1", "column": 0}, {"type": "discard", "card": "Z1"},
    {"type": "remove_column", "column": -1}, {"type": "remove_column", "column": "0"},
    {"type": "remove_cards", "cards": "W05"}, {"type": "remove_cards", "cards": ["W05", 7]},
    {"type": "remove_cards", "cards": ["W05", "W05"]}, {"type": "remove_cards", "cards": ["W05", "W100"]},
    {"type": "rearrange", "columns": []}, {"type": "rearrange", "columns": [[]]},
    {"type": "rearrange", "columns": [["W04"], "W17"]}, {"type": "rearrange", "columns": [["W04"], ["W04"]]},
    {"type": "rearrange", "columns": [["W04", "X"]]},
])
def test_validation_step_1_malformed_moves(move: Any) -> None:
    """Malformed regardless of state (C3): checked before game_over, turn and phase."""
    for state, seat in ((t3(), 0), (t3(), 2), (position(3, phase="game_over", piles=[[], [], []]), 0)):
        assert code_of(state, seat, move) == "malformed_move"


def test_validation_order_game_over_then_turn_then_phase() -> None:
    over = position(3, phase="game_over", piles=[[], [], []])
    assert code_of(over, 1, {"type": "draw", "pile": 0}) == "game_over"
    s = identity_setup(3)
    assert code_of(s, 1, {"type": "place", "card": "W02", "column": "new"}) == "not_your_turn"
    assert code_of(s, 0, {"type": "remove_column", "column": 0}) == "wrong_phase"


def test_validation_order_of_the_specific_codes() -> None:
    s = t3()  # H[0] = W05 W48 W15 W03, 4 columns
    assert code_of(s, 0, {"type": "place", "card": "A1", "column": 9}) == "not_a_woman_card"
    assert code_of(s, 0, {"type": "play_action", "card": "W40", "column": 9}) == "not_an_action_card"
    assert code_of(s, 0, {"type": "discard", "card": "W40"}) == "not_an_action_card"
    assert code_of(s, 0, {"type": "place", "card": "W43", "column": 9}) == "card_not_in_hand"
    assert code_of(s, 0, {"type": "place", "card": "W48", "column": 9}) == "no_such_column"
    a = position(3, hands=[["A1", "A2", "W01", "W02"], [], []], tables=[[["W04"]], [], []])
    assert code_of(a, 0, {"type": "play_action", "card": "A5"}) == "card_not_in_hand"
    assert code_of(a, 0, {"type": "play_action", "card": "A1", "column": 9}) == "no_such_column"
    assert code_of(a, 0, {"type": "play_action", "card": "A2", "column": 0}) == "column_not_defined"


# -- Parameterised moves and legal_moves: the spec's order -------------------------------------------


def test_legal_moves_draw_lists_non_empty_piles_ascending() -> None:
    s = position(3, phase="draw", piles=[["W10"], [], ["W12"]], hands=[["W01", "W02", "W03"], [], []])
    assert GAME.legal_moves(s, 0) == [{"type": "draw", "pile": 0}, {"type": "draw", "pile": 2}]
    assert GAME.legal_moves(s, 1) == []


def test_legal_moves_play_lists_cards_ascending_then_columns_then_new() -> None:
    def place(card: str, column: int | str) -> dict[str, Any]:
        return {"type": "place", "card": card, "column": column}
    assert GAME.legal_moves(t3(), 0) == [place("W03", 1), place("W03", 3), place("W03", "new"), place("W05", 2),
                                         place("W05", "new"), place("W15", 3), place("W15", "new"), place("W48", 1)]


def test_legal_moves_play_lists_actions_after_places() -> None:
    s = position(3, hands=[["W07", "A6", "A3", "A1"], [], []], tables=[[["W04"], ["W46"]], [], []])
    assert GAME.legal_moves(s, 0) == [
        {"type": "place", "card": "W07", "column": 0}, {"type": "place", "card": "W07", "column": "new"},
        {"type": "play_action", "card": "A1", "column": 1}, {"type": "play_action", "card": "A3", "column": 1},
        {"type": "play_action", "card": "A6"}]


def test_legal_moves_removals_list_columns_and_sorted_pairs() -> None:
    s = GAME.apply(t8(), 1, {"type": "play_action", "card": "A4"})
    assert GAME.legal_moves(s, 1) == [{"type": "remove_column", "column": 0}, {"type": "remove_column", "column": 1}]
    assert GAME.legal_moves(s, 0) == []
    s = GAME.apply(t9(), 0, {"type": "play_action", "card": "A5"})
    assert [m["cards"] for m in GAME.legal_moves(s, 0)] == [
        ["W05", "W11"], ["W05", "W12"], ["W05", "W20"], ["W11", "W12"], ["W11", "W20"], ["W12", "W20"]]


def test_d12_discard_is_the_only_move_when_nothing_can_be_played() -> None:
    s = position(3, hands=[["A3", "A1", "A2"], [], []], tables=[[["W04"]], [], []])
    assert GAME.legal_moves(s, 0) == [{"type": "discard", "card": c} for c in ("A1", "A2", "A3")]
    s = GAME.apply(s, 0, {"type": "discard", "card": "A2"})
    assert s.discard == ["A2"] and s.hands[0] == ["A3", "A1"] and s.tables[0] == [["W04"]]
    assert (s.current, s.phase, s.overrides) == (1, "draw", {})


# -- E3 action cards played for real ----------------------------------------------------------------


def test_t5_any_min_played_later_replaces_solo_max_and_survives_its_column_removal() -> None:
    s = GAME.apply(t5(), 0, {"type": "play_action", "card": "A2", "column": 1})
    tables = [s.tables[0], s.tables[1], s.tables[2]]
    s = position(3, current=1, hands=[[], ["W44", "W01", "W02", "W03"], []], tables=tables, overrides=s.overrides)
    assert {"type": "place", "card": "W44", "column": "new"} in GAME.legal_moves(s, 1)
    s = GAME.apply(s, 1, {"type": "place", "card": "W44", "column": "new"})
    assert s.tables[1] == [["W13"], ["W46"], ["W44"]]
    s = position(3, current=1, hands=[[], ["A1", "W01", "W02", "W03"], []], tables=s.tables, overrides=s.overrides)
    s = GAME.apply(s, 1, {"type": "play_action", "card": "A1", "column": 2})
    assert s.overrides == {"art": {"value": 1, "card": "A1", "seat": 1}} and s.tables[1][2] == ["W44", "A1"]
    s = position(3, current=2, hands=[[], [], ["A4", "W01", "W02", "W03"]], tables=s.tables, overrides=s.overrides)
    s = GAME.apply(s, 2, {"type": "play_action", "card": "A4"})
    s = GAME.apply(s, 2, {"type": "remove_column", "column": 0})  # her only column: W05
    s = GAME.apply(s, 0, {"type": "remove_column", "column": 0})  # W11 W12
    s = GAME.apply(s, 1, {"type": "remove_column", "column": 2})  # W44 A1
    assert "A1" in s.discard and s.overrides == {"art": {"value": 1, "card": "A1", "seat": 1}}


def test_e3_popular_min_and_collect_five_are_recorded_when_played() -> None:
    s = position(3, hands=[["A6", "A7", "W01", "W02"], [], []], tables=[[["W04"]], [], []])
    a6 = GAME.apply(s, 0, {"type": "play_action", "card": "A6"})
    assert a6.popular_min is True and a6.discard == ["A6"] and (a6.current, a6.phase) == (1, "draw")
    a7 = GAME.apply(s, 0, {"type": "play_action", "card": "A7"})
    assert a7.collect_five_plus_one == 0 and a7.discard == ["A7"] and not a7.popular_min


def test_e3_column_actions_stay_in_the_column_and_lock_it() -> None:
    s = position(2, hands=[["A2", "W55", "W01", "W02"], [], []],
                    tables=[[["W47"], ["W50"]], [["W46"]], [["W11", "W12"]]])
    s = GAME.apply(s, 0, {"type": "play_action", "card": "A2", "column": 1})
    assert s.tables[0] == [["W47"], ["W50", "A2"]] and fw.locked(s.tables[0][1]) and "A2" not in s.discard
    s = position(2, hands=[["W55", "W01", "W02", "W03"], [], []], overrides=s.overrides,
                    tables=[s.tables[0], [["W46"]], [["W11", "W12"]]])
    s = GAME.apply(s, 0, {"type": "place", "card": "W55", "column": 1})  # A2 is ignored by the column rule
    assert s.tables[0] == [["W47"], ["W50", "A2", "W55"]]


def test_t9_removing_cards_can_leave_a_column_undefined() -> None:
    s = GAME.apply(GAME.apply(t9(), 0, {"type": "play_action", "card": "A5"}), 0,
                   {"type": "remove_cards", "cards": ["W05", "W12"]})
    assert s.tables[0] == [["W11", "A1"], ["W20"]] and s.discard == ["A5", "W05", "W12"]
    assert GAME.view(s, None)["tables"][0][1] == {"cards": ["W20"], "common": ["art", "human_rights"],
                                                  "category": None, "points": 0}


# -- End and scoring: the result document ------------------------------------------------------------


def test_t2_result_document_is_the_spec_example() -> None:
    s = position(3, phase="game_over", action_cards=False, piles=[[], [], []], tables=[
        [["W04", "W16", "W17", "W10"], ["W46", "W18"], ["W20"], ["W11"]],
        [["W48", "W49", "W03", "W27"], ["W43", "W44"], ["W51"]],
        [["W23", "W26", "W29"], ["W06", "W40"], ["W19"]],
    ])

    def row(column: int, category: str | None, women: int, value: int) -> dict[str, Any]:
        return {"column": column, "category": category, "women": women, "value": value, "doubled": False,
                "bonus": 0, "points": women * value}
    assert GAME.result(s) == {
        "scores": [17, 13, 9],
        "category_columns": {"art": 1, "culture": 0, "feminism": 3, "human_rights": 0, "politics": 2, "science": 1},
        "category_values": {"art": 1, "culture": 0, "feminism": 3, "human_rights": 0, "politics": 2, "science": 1},
        "double_count": None,
        "breakdown": [
            [row(0, "feminism", 4, 3), row(1, "politics", 2, 2), row(2, None, 1, 0), row(3, "science", 1, 1)],
            [row(0, "politics", 4, 2), row(1, "art", 2, 1), row(2, "feminism", 1, 3)],
            [row(0, "feminism", 3, 3), row(1, None, 2, 0), row(2, None, 1, 0)],
        ],
        "ranking": [{"seat": 0, "score": 17, "rank": 1}, {"seat": 1, "score": 13, "rank": 2},
                    {"seat": 2, "score": 9, "rank": 3}],
        "winners": [0],
    }
    assert GAME.outcome(s).scores == [17.0, 13.0, 9.0] and GAME.outcome(s).winners == [0]


def test_t11_breakdown_shows_doubling_and_bonus() -> None:
    tables = [[["W43", "W44"], ["W42"], ["W51"], ["W05", "W53"], ["W46"], ["W01", "W04"]],
              [["W11", "W12", "A3"], ["W54"]], [["W45"]]]
    result = GAME.result(position(3, phase="game_over", piles=[[], [], []], tables=tables,
                                     collect_five_plus_one=0))
    assert result is not None and result["double_count"] == 2
    assert result["breakdown"][0][0] == {"column": 0, "category": "art", "women": 2, "value": 2, "doubled": True,
                                         "bonus": 2, "points": 10}
    assert result["breakdown"][0][5] == {"column": 5, "category": None, "women": 2, "value": 0, "doubled": False,
                                         "bonus": 0, "points": 0}


# -- Hidden information ------------------------------------------------------------------------------


def test_t4_view_of_seat_1_is_the_spec_example() -> None:
    s = GAME.apply(identity_setup(3), 0, {"type": "draw", "pile": 1})
    assert GAME.view(s, 1) == {
        "game": "fierce-women", "viewer": 1, "players": 3, "seats": 3, "automa_seat": None,
        "options": {"action_cards": False},
        "phase": "play", "current": 0, "to_act": [0], "turn": 1,
        "piles": [{"size": 10, "top": "W10"}, {"size": 9, "top": "W21"}, {"size": 10, "top": "W30"}],
        "out_of_game_count": 17,
        "hands": [{"size": 4, "known": ["W20"]},
                  {"size": 3, "known": [], "cards": ["W02", "W05", "W08"]},
                  {"size": 3, "known": []}],
        "tables": [[], [], []], "discard": [], "overrides": {}, "popular_min": False,
        "collect_five_plus_one": None, "pending": None, "automa_placed": None, "automa_last": None,
        "points_now": [0, 0, 0], "result": None,
    }
    assert GAME.secrets(s, 1) >= {"W01", "W04", "W07", "W11", "W40"} and not GAME.secrets(s, 1) & {"W20", "W02"}


def test_c1_c4_automa_hand_and_current_at_game_over() -> None:
    s = GAME.new_game(2, 5, {"action_cards": True})
    rng = random.Random(5)
    while not GAME.is_over(s):
        seat = GAME.to_act(s)[0]
        assert seat != 2 and GAME.view(s, seat)["hands"][2] == {"size": 0, "known": []}
        last = seat
        s = GAME.apply(s, seat, rng.choice(GAME.legal_moves(s, seat)))
    assert s.current == last == 1 and s.turn == 30 and s.automa_last is not None and s.automa_last["turn"] == 30
    view = GAME.view(s, None)
    assert view["hands"][2] == {"size": 0, "known": []} and all("cards" in h for h in view["hands"][:2])


def test_determinize_resamples_only_what_the_seat_cannot_see() -> None:
    s = GAME.new_game(4, 2, {"action_cards": True})
    rng = random.Random(2)
    for _ in range(14):
        seat = GAME.to_act(s)[0]
        s = GAME.apply(s, seat, rng.choice(GAME.legal_moves(s, seat)))
    variants = set()
    for k in range(10):
        d = GAME.determinize(s, 1, random.Random(k))
        assert GAME.view(d, 1) == GAME.view(s, 1) and d.hands[1] == s.hands[1]
        assert [p[0] for p in d.piles] == [p[0] for p in s.piles] and [len(p) for p in d.piles] == \
            [len(p) for p in s.piles]
        assert all(h[len(h) - len(k):] == k for h, k in zip(d.hands, s.known, strict=True))
        everything = sorted(c for zone in (*d.hands, *d.piles, d.out_of_game) for c in zone)
        assert everything == sorted(c for zone in (*s.hands, *s.piles, s.out_of_game) for c in zone)
        variants.add((tuple(map(tuple, d.hands)), tuple(map(tuple, d.piles))))
    assert len(variants) > 1
