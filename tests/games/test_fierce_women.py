"""Fierce Women: the spec's test scenarios T1-T15, each named after the rule it checks."""

from __future__ import annotations

import random
from typing import Any

import pytest

from services.rules.games import fierce_women as fw
from services.rules.games.base import IllegalMove

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
    s = fw.position(3, phase="game_over", action_cards=False, piles=[[], [], []], tables=[
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


# -- T3 Column rule ---------------------------------------------------------------------------------


def t3() -> Any:
    return fw.position(3, hands=[["W05", "W48", "W15", "W03"], [], []], tables=[
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
        s2 = fw.position(3, hands=[[card, "W01", "W02", "W07"], [], []], tables=[s.tables[0], [], []],
                         action_cards=False)
        assert code_of(s2, 0, {"type": "place", "card": card, "column": 4}) == code
    s3 = fw.position(3, hands=[["W33", "W01", "W02", "W07"], [], []], tables=[s.tables[0], [], []], action_cards=False)
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
    s = fw.position(3, phase="draw", piles=[["W10"], ["W11"], []], hands=[["W01", "W02", "W03"], [], []])
    assert code_of(s, 0, {"type": "draw", "pile": 2}) == "empty_pile"


# -- T5/T6 Any -> min and Solo -> max ----------------------------------------------------------------


def t5() -> Any:
    return fw.position(3, hands=[["A2", "A1", "W14", "W42"], [], []],
                       tables=[[["W11", "W12"], ["W43"]], [["W13"], ["W46"]], [["W05"]]])


def test_t5_solo_max_needs_a_category_no_one_else_collects() -> None:
    assert code_of(t5(), 0, {"type": "play_action", "card": "A2", "column": 0}) == "category_not_solo"
    s = GAME.apply(t5(), 0, {"type": "play_action", "card": "A2", "column": 1})
    assert s.tables[0][1] == ["W43", "A2"] and s.overrides == {"art": {"value": 3, "card": "A2", "seat": 0}}
    assert "A2" not in s.discard


def test_t5_later_any_min_replaces_the_override_and_it_survives_removal() -> None:
    s = fw.position(3, phase="game_over", piles=[[], [], []],
                    tables=[[["W11", "W12"], ["W43", "A2"]], [["W13"], ["W46"]], [["W05"]]],
                    overrides={"art": {"value": 1, "card": "A1", "seat": 1}}, discard=["A1", "W44"])
    assert GAME.result(s)["scores"] == [5, 3, 1]  # type: ignore[index]
    s.overrides = {"art": {"value": 3, "card": "A2", "seat": 0}}
    assert GAME.result(s)["scores"][0] == 7  # type: ignore[index]


def test_t6_solo_max_counts_the_automa() -> None:
    s = fw.position(2, hands=[["A2", "W55", "W01", "W02"], [], []],
                    tables=[[["W47"], ["W50"]], [["W46"]], [["W11", "W12"]]])
    assert code_of(s, 0, {"type": "play_action", "card": "A2", "column": 0}) == "category_not_solo"
    s = GAME.apply(s, 0, {"type": "play_action", "card": "A2", "column": 1})
    assert s.overrides["art"]["value"] == 3
    end = fw.position(2, phase="game_over", piles=[[], [], []], overrides=s.overrides,
                      tables=[[["W47"], ["W50", "A2", "W55"]], [["W46"]], [["W11", "W12"]]])
    result = GAME.result(end)
    assert result is not None and result["scores"] == [8, 1, 4] and result["winners"] == [0]


# -- T7 2x by number --------------------------------------------------------------------------------


def test_t7_double_by_count_doubles_every_column_of_that_size() -> None:
    s = fw.position(3, phase="game_over", piles=[[], [], []], tables=[
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
    return fw.position(2, current=1, hands=[["W01", "W02", "W03"], ["A4", "W07", "W12", "W53"], []],
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
    return fw.position(3, hands=[["A5", "W01", "W02", "W03"], [], []],
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
    s = fw.position(2, hands=[["A5", "W01", "W02", "W03"], [], []], tables=[[["W44"]], [], [["W13", "W14"], ["W20"]]],
                    automa_placed=["W13", "W20", "W14"])
    s = GAME.apply(s, 0, {"type": "play_action", "card": "A5"})
    s = GAME.apply(s, 0, {"type": "remove_cards", "cards": ["W44"]})
    assert s.tables[2] == [["W13"]] and s.discard[:3] == ["A5", "W44", "W14"]


# -- T10/T11 scoring modifiers -----------------------------------------------------------------------


def test_t10_popular_min_lowers_categories_everyone_collects_but_not_overrides() -> None:
    tables = [[["W46", "W48"], ["W11", "W12", "A2"]], [["W49"], ["W13"]], [["W25", "W26"], ["W14"]]]
    s = fw.position(3, phase="game_over", piles=[[], [], []], tables=tables, popular_min=True,
                    overrides={"science": {"value": 3, "card": "A2", "seat": 0}})
    result = GAME.result(s)
    assert result is not None and result["scores"] == [8, 4, 5] and result["winners"] == [0]
    s.popular_min = False
    assert GAME.result(s)["scores"] == [12, 6, 9]  # type: ignore[index]


def test_t11_collect_five_plus_one_adds_after_doubling() -> None:
    tables = [[["W43", "W44"], ["W42"], ["W51"], ["W05", "W53"], ["W46"], ["W01", "W04"]],
              [["W11", "W12", "A3"], ["W54"]], [["W45"]]]
    s = fw.position(3, phase="game_over", piles=[[], [], []], tables=tables, collect_five_plus_one=0)
    assert GAME.result(s)["scores"] == [26, 6, 2]  # type: ignore[index]
    s.tables[0] = [col for col in tables[0] if col != ["W46"]]
    assert GAME.result(s)["scores"][0] == 18  # type: ignore[index]


# -- T12 Reshuffling --------------------------------------------------------------------------------


def t12(extra: list[list[str]] | None = None) -> Any:
    table = [["W11", "A3"], ["W17", "W26"], ["W27"], ["W04"]] + (extra or [])
    s = fw.position(3, hands=[["A8", "W01", "W02", "W03"], [], []], tables=[table, [], []])
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
    s = fw.position(3, hands=[["A8", "W01", "W02", "W03"], [], []], tables=[[["W11", "A3"]], [], []])
    s = GAME.apply(s, 0, {"type": "play_action", "card": "A8"})
    assert (s.phase, s.current) == ("draw", 1)


# -- T13 Automa turns -------------------------------------------------------------------------------


def test_t13_automa_draws_leftmost_and_places_first_fit() -> None:
    s = fw.position(2, tables=[[], [], [["W05"]]], piles=[[], ["W20", "A6", "W43"], ["W11"]])
    fw.automa_turn(s)
    assert s.tables[2] == [["W05", "W20"]]
    fw.automa_turn(s)
    assert "A6" in s.discard and not s.popular_min and s.automa_last["column"] is None  # type: ignore[index]
    fw.automa_turn(s)
    assert s.tables[2] == [["W05", "W20"], ["W43"]]
    fw.automa_turn(s)
    assert s.tables[2] == [["W05", "W20"], ["W43"], ["W11"]]
    s2 = fw.position(2, tables=[[], [], [["W30"], ["W44"]]], piles=[["W43"], [], []])
    fw.automa_turn(s2)
    assert s2.tables[2] == [["W30"], ["W44", "W43"]]
    s3 = fw.position(2, phase="draw", hands=[["W01", "W02", "W03"], [], []])
    assert GAME.legal_moves(s3, 2) == [] and code_of(s3, 2, {"type": "draw", "pile": 0}) == "not_your_turn"


# -- T14 End of game --------------------------------------------------------------------------------


def test_t14_game_ends_when_a_turn_would_begin_with_empty_piles() -> None:
    s = fw.position(3, phase="draw", current=2, piles=[[], [], ["W40"]],
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
    s = fw.position(3, phase="game_over", piles=[[], [], []], tables=[[["W11"]], [["W12"]], [["W46"]]])
    result = GAME.result(s)
    assert result is not None and result["scores"] == [2, 2, 1] and result["winners"] == [0, 1]
    assert [r["rank"] for r in result["ranking"]] == [1, 1, 3]
    s2 = fw.position(2, phase="game_over", piles=[[], [], []], tables=[[["W43"]], [["W04"]], [["W11", "W12"]]])
    result = GAME.result(s2)
    assert result is not None and result["scores"] == [1, 0, 2] and result["winners"] == [2]


def test_t15_action_card_errors() -> None:
    s = fw.position(3, hands=[["A1", "A3", "A6", "W07"], [], []], tables=[[["W04"], ["W46"]], [], []])
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
    s = fw.position(3, action_cards=False, hands=[["W01", "W02", "W03", "W05"], [], []])
    assert code_of(s, 0, {"type": "play_action", "card": "A1", "column": 0}) == "card_not_in_hand"


def test_view_matches_the_spec_shape_and_spectators_see_no_cards() -> None:
    s = GAME.apply(identity_setup(3), 0, {"type": "draw", "pile": 1})
    view = GAME.view(s, 1)
    assert list(view) == ["game", "viewer", "players", "seats", "automa_seat", "options", "phase", "current",
                          "to_act", "turn", "piles", "out_of_game_count", "hands", "tables", "discard", "overrides",
                          "popular_min", "collect_five_plus_one", "pending", "automa_placed", "automa_last",
                          "result"]
    assert all("cards" not in h for h in GAME.view(s, None)["hands"])


# -- Moves: messages name the card, the column and the category (C7) ---------------------------------


def message_of(state: Any, seat: int, move: dict[str, Any]) -> str:
    with pytest.raises(IllegalMove) as err:
        GAME.apply(state, seat, move)
    return err.value.message


def test_c7_column_rule_messages_name_card_column_and_category() -> None:
    assert message_of(t3(), 0, {"type": "place", "card": "W48", "column": "new"}) == \
        "W48 cannot start a new column: you already collect politics in column 1"
    s = fw.position(3, hands=[["W12", "W01", "W02", "W07"], [], []], action_cards=False,
                    tables=[[["W04", "W16", "W17", "W10"], ["W46", "W18"], ["W20"], ["W11"], ["W03"]], [], []])
    assert message_of(s, 0, {"type": "place", "card": "W12", "column": 4}) == \
        "W12 cannot go in column 4: it would collect science, which you already collect in column 3"
    message = message_of(t3(), 0, {"type": "place", "card": "W48", "column": 2})
    assert all(word in message for word in ("W48", "column 2", "politics", "art", "human_rights"))


def test_c7_action_messages_name_card_column_and_category() -> None:
    message = message_of(t5(), 0, {"type": "play_action", "card": "A2", "column": 0})
    assert all(word in message for word in ("A2", "column 0", "science", "seat 1"))
    s = fw.position(3, hands=[["A1", "A3", "A6", "W07"], [], []], tables=[[["W04"], ["W46"]], [], []])
    message = message_of(s, 0, {"type": "play_action", "card": "A1", "column": 0})
    assert all(word in message for word in ("A1", "column 0", "culture", "feminism"))
