"""CLASH: Jihad vs. McWorld — the spec's test scenarios T1-T16, one or more tests each."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from services.rules.games.base import IllegalMove, InvalidOptions, InvalidState
from services.rules.games.clash import GAME, ClashState
from services.rules.games.clash.match import start_game
from tests.games.fixtures.clash import position

G = GAME


def place(tile: str, frm: str, field: list[int], sup: str, effect: Any = None) -> dict[str, Any]:
    return {"type": "place", "tile": tile, "from": frm, "field": field, "supports": sup, "effect": effect}


def code(state: ClashState, seat: int, move: dict[str, Any]) -> str:
    with pytest.raises(IllegalMove) as err:
        G.apply(state, seat, move)
    return err.value.code


def cell(state: ClashState, r: int, c: int) -> Any:
    return G.view(state, None)["board"][r][c]


def sups(state: ClashState) -> list[str | None]:
    return [None if c is None else c["supports"] for row in G.view(state, None)["board"] for c in row]


# -- T1 -------------------------------------------------------------------------------------------------


def test_t1_setup_seed_1_reference_rng() -> None:
    s = G.new_game(2, 1, {})
    assert s.first_player == 0 and s.neutral == ["N02", "N03", "N08", "N09", "N13"]
    assert len(s.pool) == 12 and s.phase == "play" and G.to_act(s) == [0]
    moves = G.legal_moves(s, 0)
    assert len(moves) == 18 and all(m["tile"] == "M0" and m["from"] == "start" and m["effect"] is None for m in moves)


def test_t1_second_move_has_287_moves_with_breakdown() -> None:
    s = G.apply(G.new_game(2, 1, {}), 0, place("M0", "start", [1, 1], "green"))
    assert G.to_act(s) == [1]
    moves = G.legal_moves(s, 1)
    assert len(moves) == 287
    assert Counter(m["tile"] for m in moves) == {"G1": 32, "G2": 24, "G3": 32, "G4": 32, "G5": 24, "G6": 24,
                                                  "G7": 16, "N02": 24, "N03": 24, "N08": 32, "N09": 22, "N13": 1}
    assert [m for m in moves if m["tile"] == "N13"] == [place("N13", "neutral", [1, 1], "green")]


def test_t1_other_seeds_and_variants() -> None:
    s = G.new_game(2, 7, {})
    assert s.first_player == 1 and s.neutral == ["N01", "N02", "N05", "N11", "N13"]
    assert G.new_game(2, 1, {"first_player": 0}).neutral == ["N02", "N03", "N05", "N08", "N17"]
    r = G.new_game(2, 1, {"random_support": True})
    assert r.open[0][-2:] == ["N03", "N09"] and r.open[1][-2:] == ["N02", "N10"]
    assert len(r.pool) == 13 and r.neutral == []
    b = G.new_game(2, 1, {"beginner": True})
    assert b.neutral == [] and b.pool == []


# -- T2 -------------------------------------------------------------------------------------------------


def test_t2_first_move_and_basic_errors() -> None:
    s = G.new_game(2, 1, {})
    assert code(s, 1, place("M0", "start", [1, 1], "blue")) == "not_your_turn"
    assert code(s, 0, place("B1", "own", [0, 0], "blue")) == "start_tile_required"
    assert code(s, 0, place("M0", "start", [1, 1], "blue", {})) == "no_effect_to_use"
    s = G.apply(s, 0, place("M0", "start", [1, 1], "blue"))
    assert G.to_act(s) == [1]
    assert code(s, 1, place("M0", "start", [0, 0], "green")) == "tile_not_available"
    assert code(s, 1, place("G1", "own", [1, 1], "green")) == "field_occupied"
    assert code(s, 1, {"type": "choose_first", "seat": 0}) == "wrong_phase"
    assert code(s, 1, place("G1", "own", [0, 3], "green")) == "malformed_move"
    assert code(s, 1, place("G1", "own", [0, 0], "green", {"target": [1, 1], "x": 1})) == "malformed_move"


# -- T3 -------------------------------------------------------------------------------------------------


def test_t3_destroyed_tile_stays_face_down_until_after_opponents_move() -> None:
    s = position(".. G4=g .. / .. M0=g .. / .. .. ..", 0, blue="B1 B2 B3 B4 B5 B6 B7", green="G1 G2 G3 G5 G6 G7")
    s = G.apply(s, 0, place("B1", "own", [0, 0], "blue", {"target": [1, 1]}))
    assert cell(s, 1, 1)["face"] == "down" and cell(s, 1, 1)["destroyed_by"] == 0 and s.removed == []
    assert code(s, 1, place("G5", "own", [1, 1], "green")) == "field_occupied"
    assert code(s, 1, place("G5", "own", [1, 0], "green", {"target": [1, 1]})) == "bad_effect"
    s = G.apply(s, 1, place("G5", "own", [1, 0], "green", {"target": [0, 0]}))
    assert cell(s, 0, 0)["face"] == "down" and cell(s, 0, 0)["destroyed_by"] == 1
    assert s.removed == ["M0"] and cell(s, 1, 1) is None
    assert code(s, 0, place("B4", "own", [1, 1], "blue", {"target": [0, 0]})) == "bad_effect"
    s = G.apply(s, 0, place("B4", "own", [1, 1], "blue", {"target": [0, 1]}))
    assert s.removed == ["M0", "B1"]
    assert sups(s) == [None, "blue", None, "green", "blue", None, None, None, None]
    assert s.tile[:6] == [None, "G4", None, "G5", "B4", None]


# -- T4 -------------------------------------------------------------------------------------------------

T4 = "B2=b G1=g B3=b / G2=g M0=b G3=g / B4=b G5=b .."


def t4(board: str = T4, blue: str = "B1 B5 B6 B7") -> ClashState:
    return position(board, 0, blue=blue, green="G4 G6 G7", neutral="N04 N10")


def test_t4_last_field_forbids_destruction() -> None:
    assert code(t4(), 0, place("B1", "own", [2, 2], "blue", {"target": [1, 1]})) == "last_field_no_destroy"
    bad = place("N04", "neutral", [2, 2], "blue", {"target": [2, 1], "effect": {"target": [1, 1]}})
    assert code(t4(), 0, bad) == "last_field_no_destroy"
    assert all(m["effect"] is None for m in G.legal_moves(t4(), 0) if m["tile"] == "B1")


def test_t4_victory_example_board_full() -> None:
    s = G.apply(t4(), 0, place("B1", "own", [2, 2], "blue"))
    rec = s.games[-1]
    assert rec["reason"] == "board_full" and rec["tiles"] == [6, 3] and rec["winner"] == 0 and rec["points"] == [6, 3]
    assert s.phase == "choose_first" and G.to_act(s) == [1]


def test_t4_repeated_sheikh_flips_the_television_itself() -> None:
    mv = place("N04", "neutral", [2, 2], "blue", {"target": [1, 2], "effect": {"pattern": "orthogonal"}})
    s = G.apply(t4(), 0, mv)
    rec = s.games[-1]
    assert rec["tiles"] == [3, 6] and rec["winner"] == 1
    assert rec["final_board"][0][2]["supports"] == "green" and rec["final_board"][2][2]["supports"] == "green"


def test_t4_face_down_tile_means_destruction_allowed_on_last_empty_field() -> None:
    s = t4("B2=b G1=g B3=b / G2=g M0=b G3=g / B4=b B5=x1 ..", "B1 B6 B7")
    s = G.apply(s, 0, place("B1", "own", [2, 2], "blue", {"target": [1, 2]}))
    assert cell(s, 1, 2)["face"] == "down" and cell(s, 1, 2)["destroyed_by"] == 0
    assert s.removed == ["B5"] and cell(s, 2, 1) is None and s.phase == "play" and G.to_act(s) == [1]


# -- T5 -------------------------------------------------------------------------------------------------


def test_t5_kaboom_supporter_loses() -> None:
    s = position("B1=b B2=b N17=b / B3=b G1=g B4=b / G2=g G3=g ..", 1, blue="B5 B6 B7", green="G4 G5 G6 G7")
    s = G.apply(s, 1, place("G7", "own", [2, 2], "green"))
    rec = s.games[-1]
    assert (rec["reason"], rec["tiles"], rec["kaboom"], rec["winner"], rec["points"]) == (
        "board_full", [5, 4], 0, 1, [0, 4])


def test_t5_nobel_cover_neutralises_kaboom() -> None:
    s = position("B1=b B2=b N17=b / B3=b G1=g B4=b / G2=g .. ..", 0, blue="B5 B6 B7", green="G4 G5 G6 G7",
                 neutral="N13")
    s = G.apply(s, 0, place("N13", "neutral", [0, 2], "blue"))
    assert cell(s, 0, 2)["tile"] == "N13" and cell(s, 0, 2)["covered"] == "N17"
    s = G.apply(s, 1, place("G7", "own", [2, 2], "green"))
    s = G.apply(s, 0, place("B7", "own", [2, 1], "blue"))
    rec = s.games[-1]
    assert (rec["reason"], rec["tiles"], rec["kaboom"], rec["winner"]) == ("board_full", [6, 3], None, 0)


# -- T6 -------------------------------------------------------------------------------------------------


def t6() -> ClashState:
    return position("B7=b .. .. / B4=b G2=g .. / .. .. ..", 0, blue="B1 B2 B3 B5 B6",
                    green="G1 G3 G4 G5 G6 G7", neutral="N13 N01")


def test_t6_nobel_prize_cover_rules() -> None:
    for f in ([2, 2], [1, 1], [0, 0]):
        assert code(t6(), 0, place("N13", "neutral", f, "blue")) == "bad_cover"
    assert code(t6(), 0, place("N13", "neutral", [1, 0], "green")) == "bad_support"
    assert code(t6(), 0, place("N13", "neutral", [1, 0], "blue", {})) == "no_effect_to_use"


def test_t6_nobel_stack_has_security_and_is_removed_whole() -> None:
    s = G.apply(t6(), 0, place("N13", "neutral", [1, 0], "blue"))
    c = cell(s, 1, 0)
    assert c["tile"] == "N13" and c["covered"] == "B4" and c["supports"] == "blue" and c["security"] is True
    assert code(s, 1, place("G1", "own", [2, 0], "green", {"target": [1, 0]})) == "bad_effect"
    assert code(s, 1, place("G4", "own", [2, 0], "green", {"target": [1, 0]})) == "bad_effect"
    s = G.apply(s, 1, place("N01", "neutral", [2, 1], "green", {"target": [1, 0]}))
    assert cell(s, 1, 0)["face"] == "down" and cell(s, 1, 0)["destroyed_by"] == 1
    s = G.apply(s, 0, place("B2", "own", [0, 2], "blue"))
    assert s.removed == ["B4", "N13"] and cell(s, 1, 0) is None


# -- T7 -------------------------------------------------------------------------------------------------


def t7() -> ClashState:
    return position(".. .. .. / G4=g B7=b B3=b / .. .. ..", 1, blue="B1 B2 B4 B5 B6",
                    green="G1 G2 G3 G5 G6 G7", neutral="N01 N04")


def test_t7_security_blocks_everything_but_missile_strike() -> None:
    assert code(t7(), 1, place("G1", "own", [0, 1], "green", {"target": [1, 1]})) == "bad_effect"
    s = G.apply(t7(), 1, place("G1", "own", [0, 1], "green", {"target": [1, 2]}))
    assert cell(s, 1, 2)["face"] == "down"
    assert code(t7(), 1, place("N01", "neutral", [2, 2], "green", {"target": [1, 2]})) == "bad_effect"
    s = G.apply(t7(), 1, place("N01", "neutral", [2, 2], "green", {"target": [1, 1]}))
    assert cell(s, 1, 1)["face"] == "down" and cell(s, 1, 1)["tile"] == "B7"


def test_t7_banker_patterns_and_repeat_of_permanent_tile() -> None:
    assert code(t7(), 1, place("G3", "own", [2, 1], "green", {"pattern": "orthogonal"})) == "bad_effect"
    s = G.apply(t7(), 1, place("G3", "own", [2, 1], "green", {"pattern": "diagonal"}))
    assert cell(s, 1, 0)["supports"] == "blue" and cell(s, 1, 2)["supports"] == "green"
    assert code(t7(), 1, place("N04", "neutral", [0, 1], "green", {"target": [1, 1], "effect": {}})) == "bad_effect"
    s = G.apply(t7(), 1, place("N04", "neutral", [0, 2], "green",
                               {"target": [1, 2], "effect": {"pattern": "orthogonal"}}))
    assert cell(s, 0, 2)["supports"] == "blue" and cell(s, 1, 1)["supports"] == "blue"
    assert cell(s, 1, 0)["supports"] == "green"


# -- T8 -------------------------------------------------------------------------------------------------


def t8() -> ClashState:
    return position("N12=b .. .. / .. N14=b .. / .. .. B4=b", 1, blue="B1 B2 B3 B5 B6 B7",
                    green="G1 G2 G3 G4 G5 G6 G7")


def test_t8_stabilisation_beats_blockade() -> None:
    v = G.view(t8(), None)
    assert v["blocked"] == [[0, 1], [1, 0], [1, 2], [2, 1]] and v["stabilised"] == [[0, 1]]
    s = G.apply(t8(), 1, place("G4", "own", [0, 1], "green", {"target": [1, 1]}))
    assert cell(s, 1, 1)["supports"] == "green" and cell(s, 0, 1)["security"] is True
    assert code(s, 0, place("B1", "own", [0, 2], "blue", {"target": [0, 1]})) == "bad_effect"
    s = G.apply(s, 0, place("B1", "own", [0, 2], "blue", {"target": [1, 1]}))
    assert cell(s, 1, 1)["face"] == "down"


def test_t8_blockade_cancels_effects_of_placed_tile_only() -> None:
    assert code(t8(), 1, place("G4", "own", [1, 0], "green", {"target": [0, 0]})) == "effect_blocked"
    G.apply(t8(), 1, place("G4", "own", [1, 0], "green"))
    assert code(t8(), 1, place("G4", "own", [2, 1], "green", {"target": [2, 2]})) == "effect_blocked"
    s = G.apply(t8(), 1, place("G4", "own", [2, 0], "green", {"target": [1, 1]}))
    assert cell(s, 1, 1)["supports"] == "green"
    s = G.apply(t8(), 1, place("G7", "own", [1, 2], "green"))
    assert cell(s, 1, 2)["security"] is True


# -- T9 -------------------------------------------------------------------------------------------------


def t9() -> ClashState:
    return position("G1=g .. N12=g / .. G7=g .. / N14=b .. ..", 0, blue="B1 B2 B3 B4 B5 B6 B7",
                    green="G2 G3 G4 G5 G6", neutral="N11")


def bribe(target: list[int], to: list[int], field: list[int] | None = None) -> dict[str, Any]:
    return place("N11", "neutral", field or [1, 2], "blue", {"target": target, "to": to})


def test_t9_bribe_rejections() -> None:
    assert code(t9(), 0, bribe([1, 1], [0, 1])) == "bad_effect"
    assert code(t9(), 0, bribe([1, 2], [0, 1])) == "bad_effect"
    assert code(t9(), 0, bribe([0, 0], [1, 1])) == "bad_effect"
    assert code(t9(), 0, bribe([0, 0], [0, 1], [1, 0])) == "effect_blocked"


def test_t9_bribe_moves_permanent_effects_with_the_tile() -> None:
    s = G.apply(t9(), 0, bribe([0, 0], [0, 1]))
    assert code(s, 1, place("G4", "own", [0, 0], "green", {"target": [0, 1]})) == "bad_effect"
    s = G.apply(t9(), 0, bribe([0, 2], [1, 0]))
    assert G.view(s, None)["stabilised"] == [[1, 1]]
    s = G.apply(t9(), 0, bribe([2, 0], [2, 2]))
    assert code(s, 1, place("G4", "own", [2, 1], "green", {"target": [1, 2]})) == "effect_blocked"
    s = G.apply(s, 1, place("G4", "own", [1, 0], "green", {"target": [0, 0]}))
    assert cell(s, 0, 0)["supports"] == "blue"


# -- T10 ------------------------------------------------------------------------------------------------


def t10() -> ClashState:
    return position(".. G2=g N05=b / N12=b B1=b .. / .. G3=g ..", 1, blue="B2 B3 B4 B5 B6 B7",
                    green="G1 G4 G5 G6 G7", neutral="N04")


def tv(effect: Any) -> dict[str, Any]:
    return place("N04", "neutral", [1, 2], "green", effect)


def test_t10_repeat_reads_security_tiles_and_chains() -> None:
    assert code(t10(), 1, place("G1", "own", [1, 2], "green", {"target": [1, 1]})) == "bad_effect"
    for eff in ({"target": [1, 1], "effect": {"target": [1, 0]}},
                {"target": [0, 2], "effect": {"target": [1, 1], "effect": {"target": [1, 0]}}}):
        s = G.apply(t10(), 1, tv(eff))
        assert cell(s, 1, 0)["face"] == "down" and cell(s, 1, 1)["security"] is False
    s = G.apply(t10(), 1, tv({"target": [1, 1], "effect": {"target": [1, 2]}}))
    assert cell(s, 1, 2)["tile"] == "N04" and cell(s, 1, 2)["face"] == "down"


def test_t10_bad_repeats() -> None:
    assert code(t10(), 1, tv({"target": [0, 2], "effect": {"target": [1, 1]}})) == "bad_effect"
    assert code(t10(), 1, tv({"target": [2, 2], "effect": {"target": [1, 1]}})) == "bad_effect"
    assert code(t10(), 1, tv({"target": [1, 1], "effect": {"target": [1, 1]}})) == "bad_effect"
    assert code(t10(), 1, tv({"target": [0, 2], "effect": None})) == "malformed_move"


def test_t10_legal_repeat_list_has_11_effects_in_order() -> None:
    effs = [m["effect"] for m in G.legal_moves(t10(), 1)
            if m["tile"] == "N04" and m["field"] == [1, 2] and m["supports"] == "green"]
    targets = [[0, 1], [0, 2], [1, 0], [1, 2], [2, 1]]
    assert effs == [None,
                    *({"target": [0, 2], "effect": {"target": [1, 1], "effect": {"target": t}}} for t in targets),
                    *({"target": [1, 1], "effect": {"target": t}} for t in targets)]


# -- T11 ------------------------------------------------------------------------------------------------


def t11(pool: str = "N01 N10 N17") -> ClashState:
    return position(".. M0=g .. / G4=g B4=b .. / .. .. ..", 0, blue="B1 B2 B3 B5 B6 B7",
                    green="G1 G3 G5 G6 G7", neutral="N06 N07 N08 N16", removed="G2", pool=pool)


def zt(tile: str, effect: Any, sup: str = "blue") -> dict[str, Any]:
    return place(tile, "neutral", [2, 2], sup, effect)


def test_t11_agent() -> None:
    s = G.apply(t11(), 0, zt("N06", {"tile": "G3"}))
    assert s.open[1] == ["G1", "G5", "G6", "G7"] and s.removed == ["G2", "G3"]
    assert code(t11(), 0, zt("N06", {"tile": "B1"})) == "bad_effect"
    assert code(t11(), 0, zt("N06", {"hidden": 0})) == "bad_effect"


def test_t11_hacker() -> None:
    s = G.apply(t11(), 0, zt("N07", {"tile": "G2"}))
    assert s.open[0] == ["B1", "B2", "B3", "B5", "B6", "B7", "G2"] and s.removed == []
    assert any(m["tile"] == "G2" and m["supports"] == "blue" for m in G.legal_moves(G.apply(
        s, 1, place("G1", "own", [0, 0], "green")), 0))
    assert code(t11(), 0, zt("N07", {"tile": "G1"})) == "bad_effect"


def test_t11_financial_crisis() -> None:
    for sup in ("blue", "green"):
        s = G.apply(t11(), 0, zt("N08", {"target": [1, 1]}, sup))
        assert "B4" in s.open[0] and cell(s, 1, 1) is None
    assert code(t11(), 0, zt("N08", {"target": [0, 1]})) == "bad_effect"
    assert code(t11(), 0, zt("N08", {"target": [2, 2]})) == "bad_effect"


def test_t11_elections_draw_from_the_state_rng() -> None:
    s = t11()
    s.rng = random.Random(99)
    s = G.apply(s, 0, zt("N16", {}))
    assert "N10" in s.open[0] and s.pool == ["N01", "N17"]
    assert any(e.get("event") == "elections" and e["tile"] == "N10" for e in G.view(s, 1)["log"])
    assert code(t11(""), 0, zt("N16", {})) == "bad_effect"


# -- T12 ------------------------------------------------------------------------------------------------


def test_t12_no_placement_beginner() -> None:
    s = position("G1=g G2=g B2=b / G3=g M0=b G4=g / B3=b .. ..", 0, blue="B7", options={"beginner": True})
    s = G.apply(s, 0, place("B7", "own", [2, 1], "blue"))
    rec = s.games[-1]
    assert (rec["reason"], rec["stuck"], rec["tiles"], rec["winner"]) == ("no_placement", 1, [4, 4], 0)


def test_t12_stuck_seat_wins_by_kaboom() -> None:
    s = position("G1=g G2=g B2=b / G3=g M0=b N17=b / B3=b .. ..", 0, blue="B7")
    s = G.apply(s, 0, place("B7", "own", [2, 1], "blue"))
    rec = s.games[-1]
    assert (rec["tiles"], rec["kaboom"], rec["winner"], rec["points"]) == ([5, 3], 0, 1, [0, 3])


def test_t12_only_nobel_without_cover_is_stuck() -> None:
    s = position("B1=b B2=b G7=g / B3=b M0=b B4=b / B5=b .. ..", 0, blue="B6 B7", green="N13")
    s = G.apply(s, 0, place("B6", "own", [2, 1], "blue"))
    assert s.games[-1]["reason"] == "no_placement" and s.games[-1]["winner"] == 0
    s = position("B1=b B2=b G1=g / B3=b M0=b B4=b / B5=b .. ..", 0, blue="B6 B7", green="N13")
    s = G.apply(s, 0, place("B6", "own", [2, 1], "blue"))
    assert s.phase == "play" and G.legal_moves(s, 1) == [place("N13", "own", [0, 2], "green")]


# -- T13 ------------------------------------------------------------------------------------------------


def t13() -> ClashState:
    return position("G1=g .. G5=g / G7=g .. N17=g / .. G3=g ..", 0, blue="B1 B2 B3 B4 B5 B6 B7",
                    green="G2 G4 G6", neutral="N09 N10")


def flipped(move: dict[str, Any]) -> set[str | None]:
    before = t13()
    after = G.apply(before, 0, move)
    return {before.tile[i] for i in range(9) if before.tile[i] and before.tile[i] != move["tile"]
            and after.sup[i] != before.sup[i]}


def test_t13_rays() -> None:
    assert flipped(place("B2", "own", [2, 0], "blue", {"direction": "north"})) == {"G1"}
    assert flipped(place("B2", "own", [2, 0], "blue", {"direction": "east"})) == {"G3"}
    assert code(t13(), 0, place("B2", "own", [2, 0], "blue", {"direction": "west"})) == "bad_effect"
    assert flipped(place("B2", "own", [2, 2], "blue", {"direction": "north"})) == {"N17", "G5"}


def test_t13_social_network_depends_on_orientation() -> None:
    assert flipped(place("N09", "neutral", [1, 1], "blue", {})) == {"G3"}
    assert flipped(place("N09", "neutral", [1, 1], "green", {})) == {"G1", "G5"}
    assert code(t13(), 0, place("N09", "neutral", [2, 2], "blue", {})) == "bad_effect"
    assert flipped(place("N09", "neutral", [2, 2], "green", {})) == {"N17"}


def test_t13_coup_and_banker() -> None:
    assert flipped(place("N10", "neutral", [1, 1], "blue", {})) == {"G1", "G5", "N17", "G3"}
    assert flipped(place("B3", "own", [1, 1], "blue", {"pattern": "diagonal"})) == {"G1", "G5"}
    assert flipped(place("B3", "own", [1, 1], "blue", {"pattern": "orthogonal"})) == {"N17", "G3"}


# -- T14 ------------------------------------------------------------------------------------------------


def finish(s: ClashState, winner: int) -> ClashState:
    """End the current game by a constructed last placement won by ``winner`` (no RNG use)."""
    me = s.current
    col = "blue" if winner == 0 else "green"
    s.tile = ["B1", "B2", "B3", "G1", "G2", "G3", "M0", "B4", None]
    s.cov, s.down = [None] * 9, [-1] * 9
    s.sup = [winner] * 4 + [1 - winner] * 4 + [0]
    s.start_placed = True
    s.open[me] = ["B7"] if me == 0 else ["G7"]
    return G.apply(s, me, place(s.open[me][0], "own", [2, 2], col))


def test_t14_best_of_three_match_flow() -> None:
    s = G.new_game(2, 1, {})
    assert s.neutral == ["N02", "N03", "N08", "N09", "N13"]
    s = finish(s, 1)
    assert s.phase == "choose_first" and G.to_act(s) == [0]
    assert s.set_aside == ["N02", "N03", "N08", "N09", "N13"] and len(s.pool) == 12
    assert code(s, 1, {"type": "choose_first", "seat": 1}) == "not_your_turn"
    s = G.apply(s, 0, {"type": "choose_first", "seat": 1})
    assert s.first_player == 1 and G.to_act(s) == [1] and s.neutral == ["N04", "N06", "N11", "N12", "N17"]
    assert s.tile == [None] * 9 and not s.start_placed and s.open[0] == ["B1", "B2", "B3", "B4", "B5", "B6", "B7"]
    s = finish(s, 0)
    assert s.wins == [1, 1] and G.to_act(s) == [1]
    s = G.apply(s, 1, {"type": "choose_first", "seat": 0})
    assert s.neutral == ["N01", "N07", "N10", "N14", "N16"] and s.pool == ["N05", "N15"]
    s = finish(s, 0)
    assert s.phase == "match_over" and s.wins == [2, 1] and G.outcome(s).winners == [0]
    assert (G.result(s) or {}).get("finished") is True
    assert code(s, 0, place("B1", "own", [0, 0], "blue")) == "game_over"


def test_t14_single_match_ends_after_one_game() -> None:
    s = finish(G.new_game(2, 1, {"match": "single"}), 1)
    assert s.phase == "match_over" and G.outcome(s).winners == [1] and G.outcome(s).scores == [0.0, 1.0]


# -- T15 ------------------------------------------------------------------------------------------------


def test_t15_open_draft() -> None:
    s = G.new_game(2, 1, {"draft": True})
    assert s.phase == "draft" and G.to_act(s) == [0] and s.neutral == ["N02", "N03", "N08", "N09", "N13"]
    assert code(s, 1, {"type": "pick", "tile": "N13"}) == "not_your_turn"
    assert code(s, 0, {"type": "pick", "tile": "N01"}) == "tile_not_offered"
    assert code(s, 0, place("M0", "start", [1, 1], "blue")) == "wrong_phase"
    for seat, t in ((0, "N13"), (1, "N08"), (0, "N02")):
        s = G.apply(s, seat, {"type": "pick", "tile": t})
    assert s.phase == "play" and G.to_act(s) == [0] and s.neutral == []
    assert s.open[0] == ["B1", "B2", "B3", "B4", "B5", "B6", "B7", "N02", "N13"]
    assert s.open[1] == ["G1", "G2", "G3", "G4", "G5", "G6", "G7", "N03", "N08", "N09"]


def secret() -> ClashState:
    s = G.new_game(2, 1, {"secret_draft": True})
    assert s.draft is not None and s.draft["offer"] == ["N02", "N03", "N08", "N09"]
    assert G.view(s, 1)["draft"]["offer"] is None and G.view(s, 1)["draft"]["offer_size"] == 4
    s = G.apply(s, 0, {"type": "pick", "tile": "N08"})
    assert G.view(s, 0)["draft"]["offer"] == ["N02", "N03", "N09"] == G.view(s, 1)["draft"]["offer"]
    s = G.apply(s, 1, {"type": "pick", "tile": "N09"})
    assert s.draft is not None and s.draft["returned"] == ["N02", "N03"]
    assert s.draft["offer"] == ["N11", "N12", "N16", "N17"]
    s = G.apply(s, 1, {"type": "pick", "tile": "N17"})
    assert s.draft is not None and s.draft["offer"] == ["N11", "N12", "N16"]
    return G.apply(s, 0, {"type": "pick", "tile": "N12"})


def test_t15_secret_draft_steps_and_knowledge() -> None:
    s = secret()
    assert s.phase == "play" and G.to_act(s) == [0]
    assert s.hidden == [["N08", "N12"], ["N09", "N17"]]
    assert s.pool == ["N01", "N02", "N03", "N04", "N05", "N06", "N07", "N10", "N11", "N13", "N14", "N15", "N16"]
    v0, v1 = G.view(s, 0), G.view(s, 1)
    assert v0["zones"][1]["hidden_slots"] == [{"candidates": ["N02", "N03", "N09"]}, {"candidates": None}]
    assert v0["known_in_pool"] == ["N11", "N16"]
    assert v1["zones"][0]["hidden_slots"] == [{"candidates": None}, {"candidates": ["N11", "N12", "N16"]}]
    assert v1["known_in_pool"] == ["N02", "N03"]
    never = {"N01", "N04", "N05", "N06", "N07", "N10", "N13", "N14", "N15", "N17"}
    for k in range(30):
        d = G.determinize(s, 0, random.Random(k))
        assert d.hidden[1][0] in {"N02", "N03", "N09"} and d.hidden[1][1] in never
        assert G.view(d, 0) == v0


def test_t15_hidden_support_agent_by_slot() -> None:
    s = position(".. M0=b .. / .. .. .. / .. .. ..", 0, blue="", green="",
                 options={"random_support": True, "hidden_support": True})
    s.hidden = [["N06"], ["N02", "N10"]]
    s.know = [{"slots": [None, None], "in_pool": []}, {"slots": [None], "in_pool": []}]
    s.pool = [t for t in s.pool if t not in ("N06", "N02", "N10")]
    assert code(s, 0, place("N06", "own", [0, 0], "blue", {"hidden": 2})) == "bad_effect"
    s = G.apply(s, 0, place("N06", "own", [0, 0], "blue", {"hidden": 1}))
    assert s.removed == ["N10"] and s.hidden[1] == ["N02"] and s.know[0]["slots"] == [None]
    assert "N02" in G.secrets(s, 0) and "N02" not in str(G.view(s, 0))


def test_t15_long_game_refill() -> None:
    s = G.new_game(2, 1, {"long_game": True})
    s = G.apply(s, 0, place("M0", "start", [1, 1], "blue"))
    s = G.apply(s, 1, place("N02", "neutral", [0, 0], "green"))
    assert s.neutral == ["N03", "N08", "N09", "N12", "N13"] and len(s.pool) == 11


# -- T16 ------------------------------------------------------------------------------------------------


def test_t16_points_mode_and_drawn_match() -> None:
    s = G.new_game(2, 1, {"match": "points", "games": 3})
    s.points = [13, 7]
    s.games = [{}, {}, {}]
    s.phase = "match_over"
    assert G.outcome(s).scores == [13.0, 7.0] and G.outcome(s).winners == [0]
    s.points = [10, 10]
    assert G.outcome(s).winners == [0, 1]


def test_t16_points_record_with_kaboom() -> None:
    s = position("B1=b B2=b N17=g / B3=b G1=g B4=g / G2=g G3=g ..", 1, blue="B5 B6 B7", green="G4 G5 G6 G7",
                 options={"match": "points"})
    s = G.apply(s, 1, place("G7", "own", [2, 2], "green"))
    assert s.games[-1]["tiles"] == [3, 6] and s.games[-1]["kaboom"] == 1 and s.points == [3, 0]


def test_t16_move_limit_draw_and_chooser() -> None:
    s = position("B1=b G1=g G2=g / .. .. .. / .. .. ..", 0, blue="B7", options={"max_moves": 20}, move_no=19)
    s = G.apply(s, 0, place("B7", "own", [2, 2], "blue"))
    rec = s.games[-1]
    assert (rec["reason"], rec["tiles"], rec["winner"]) == ("move_limit", [2, 2], None)
    assert s.phase == "choose_first" and G.to_act(s) == [1]


@pytest.mark.parametrize("options", [{"hidden_support": True}, {"draft": True, "secret_draft": True},
                                     {"long_game": True, "beginner": True}, {"max_moves": 5}, {"colour": 1}])
def test_t16_invalid_options(options: dict[str, Any]) -> None:
    with pytest.raises(InvalidOptions):
        G.new_game(2, 1, options)


def test_player_count_must_be_two() -> None:
    with pytest.raises(InvalidOptions):
        G.new_game(3, 1, {})


# -- protocol ---------------------------------------------------------------------------------------------


def test_random_play_round_trips_and_views_hide_secrets() -> None:
    for seed, opts in enumerate([{}, {"hidden_support": True, "random_support": True}, {"secret_draft": True},
                                 {"draft": True}, {"long_game": True}, {"beginner": True}]):
        s = G.new_game(2, seed, opts)
        rng = random.Random(seed)
        while not G.is_over(s):
            seat = G.to_act(s)[0]
            d = G.decode(G.encode(s))
            assert G.legal_moves(d, seat) == G.legal_moves(s, seat)
            for v in (None, 0, 1):
                assert G.view(d, v) == G.view(s, v)
                assert not G.secrets(s, v) & set(str_tokens(G.view(s, v)))
            s = G.apply(s, seat, rng.choice(G.legal_moves(s, seat)))


def str_tokens(doc: Any) -> list[str]:
    out: list[str] = []
    stack = [doc]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return out


def test_decode_rejects_duplicate_tiles() -> None:
    s = G.new_game(2, 1, {})
    s.open[0].append("G1")
    with pytest.raises(InvalidState):
        G.decode(G.encode(s))


def test_view_matches_spec_example_for_hidden_support() -> None:
    s = G.new_game(2, 1, {"random_support": True, "hidden_support": True})
    s = G.apply(s, 0, place("M0", "start", [1, 1], "blue"))
    v = G.view(s, 1)
    assert v["zones"] == [
        {"open": ["B1", "B2", "B3", "B4", "B5", "B6", "B7"], "hidden_count": 2,
         "hidden_slots": [{"candidates": None}, {"candidates": None}]},
        {"open": ["G1", "G2", "G3", "G4", "G5", "G6", "G7"], "hidden_count": 2, "hidden": ["N02", "N10"]}]
    assert v["board"][1][1] == {"tile": "M0", "covered": None, "supports": "blue", "face": "up",
                                "destroyed_by": None, "security": False}
    assert v["pool_count"] == 13 and v["known_in_pool"] == [] and v["result"] is None
    assert v["log"][-1] == {"event": "place", "game": 1, "move": 1, "seat": 0, "tile": "M0", "from": "start",
                            "field": [1, 1], "supports": "blue", "covered": None}
    spectator = G.view(s, None)
    assert "known_in_pool" not in spectator and all("hidden" not in z and "hidden_slots" not in z
                                                    for z in spectator["zones"])
    assert G.secrets(s, 1) >= set(s.hidden[0]) and not G.secrets(s, 1) & {"N02", "N10"}


def test_determinize_resamples_hidden_tiles_and_replaces_rng() -> None:
    s = G.new_game(2, 1, {"random_support": True, "hidden_support": True})
    seen = set()
    for k in range(20):
        d = G.determinize(s, 1, random.Random(k))
        assert G.view(d, 1) == G.view(s, 1) and d.hidden[1] == s.hidden[1]
        assert sorted(d.hidden[0] + d.pool) == sorted(s.hidden[0] + s.pool)
        assert d.rng.getstate() != s.rng.getstate()
        seen.add(tuple(d.hidden[0]))
    assert len(seen) > 1


FIELDS9 = [[r, c] for r in range(3) for c in range(3)]


def candidate_effects(s: ClashState) -> list[Any]:
    """A superset of every effect object shape, for the legal_moves == accepted-moves check."""
    out: list[Any] = [None, {}, *({"target": f} for f in FIELDS9)]
    out += [{"direction": d} for d in ("north", "east", "south", "west")]
    out += [{"pattern": p} for p in ("orthogonal", "diagonal")]
    out += [{"target": a, "to": b} for a in FIELDS9 for b in FIELDS9]
    out += [{"tile": t} for t in sorted({*s.removed, *s.open[0], *s.open[1]})] + [{"hidden": k} for k in range(2)]
    return out


def move_key(move: dict[str, Any]) -> str:
    return repr(sorted(move.items()))


def test_legal_moves_are_exactly_the_accepted_moves() -> None:
    rng = random.Random(3)
    checked = 0
    for seed in range(40):
        s = G.new_game(2, seed, {"match": "single"})
        while not G.is_over(s) and checked < 4:
            seat = G.to_act(s)[0]
            legal = G.legal_moves(s, seat)
            if s.start_placed and s.move_no >= 3 and rng.random() < 0.3:
                before = G.encode(s)
                effs = candidate_effects(s)
                effs += [{"target": f, "effect": e} for f in FIELDS9 for e in effs if e is not None]
                accepted = []
                for t in sorted({*s.open[seat], *s.neutral}):
                    frm = "own" if t in s.open[seat] else "neutral"
                    for f in FIELDS9:
                        for sup in ("blue", "green"):
                            for e in effs if t in ("N04", "N05") else effs[: len(candidate_effects(s))]:
                                mv = place(t, frm, f, sup, e)
                                try:
                                    G.apply(s, seat, mv)
                                except IllegalMove:
                                    continue
                                accepted.append(mv)
                assert sorted(map(move_key, accepted)) == sorted(map(move_key, legal))
                assert G.encode(s) == before
                checked += 1
            s = G.apply(s, seat, rng.choice(legal))
    assert checked == 4


# -- Validation: messages name tiles, fields and the reason ----------------------------------------------


def message(state: ClashState, seat: int, move: dict[str, Any]) -> str:
    with pytest.raises(IllegalMove) as err:
        G.apply(state, seat, move)
    return err.value.message


def test_messages_say_why_a_target_cannot_be_affected() -> None:
    assert message(t7(), 1, place("G1", "own", [0, 1], "green", {"target": [1, 1]})) == \
        "G1 cannot destroy Tourist zone (B7) on [1,1]: it has Security"
    assert message(t7(), 1, place("G1", "own", [0, 1], "green", {"target": [0, 0]})) == \
        "G1 cannot destroy the empty field [0,0]: it is empty"
    assert message(t7(), 1, place("N01", "neutral", [2, 2], "green", {"target": [1, 2]})) == \
        "N01 cannot destroy Banker (B3) on [1,2]: it has no Security"
    s = G.apply(t7(), 1, place("G1", "own", [0, 1], "green", {"target": [1, 2]}))
    assert message(s, 0, place("B4", "own", [0, 2], "blue", {"target": [1, 2]})) == \
        "B4 cannot flip Banker (B3) on [1,2]: it is face down"


def test_messages_say_why_nobel_cannot_cover() -> None:
    assert message(t6(), 0, place("N13", "neutral", [1, 1], "blue")) == \
        "Nobel prize must cover a face-up tile that supports you; Imam (G2) on [1,1] supports green"
    assert message(t6(), 0, place("N13", "neutral", [2, 2], "blue")) == \
        "Nobel prize must cover a face-up tile that supports you; the field [2,2] is empty"
    assert message(t6(), 0, place("N13", "neutral", [0, 0], "blue")) == \
        "Nobel prize must cover a tile without Security; Tourist zone (B7) on [0,0] has Security"


# -- Validation step 1: malformed regardless of state ------------------------------------------------------

DEEP = {"target": [0, 0], "effect": {"target": [0, 1], "effect": {"target": [0, 2], "effect": {"target": [1, 0]}}}}


@pytest.mark.parametrize("move", [
    "place", ["place"], {"type": "fly"}, {"tile": "G1"},
    {"type": "place", "tile": "G1", "from": "own", "field": [0, 0], "supports": "green"},
    {**place("G1", "own", [0, 0], "green"), "x": 1},
    place("N99", "neutral", [0, 0], "green"), place("G1", "hand", [0, 0], "green"),
    place("G1", "own", [0, 0], "red"), place("G1", "own", [0, 3], "green"), place("G1", "own", [0], "green"),
    place("G1", "own", "00", "green"), place("G1", "own", [True, 0], "green"), place("G1", "own", [0, 0.0], "green"),
    place("G1", "own", [0, 0], "green", {"target": [3, 0]}), place("G2", "own", [0, 0], "green", {"direction": "up"}),
    place("G3", "own", [0, 0], "green", {"pattern": "square"}),
    place("N06", "neutral", [0, 0], "green", {"hidden": -1}),
    place("N06", "neutral", [0, 0], "green", {"hidden": "0"}), place("N07", "neutral", [0, 0], "green", {"tile": "X"}),
    place("G1", "own", [0, 0], "green", "target"), place("G1", "own", [0, 0], "green", []),
    place("G1", "own", [0, 0], "green", {"target": [1, 1], "x": 1}),
    place("N04", "neutral", [0, 0], "green", DEEP), place("N04", "neutral", [0, 0], "green", {"target": [1, 1],
                                                                                              "effect": None}),
    {"type": "pick"}, {"type": "pick", "tile": "N99"}, {"type": "pick", "tile": "N01", "seat": 0},
    {"type": "choose_first", "seat": 2}, {"type": "choose_first", "seat": "0"}, {"type": "choose_first"},
])
def test_validation_step_1_malformed_moves(move: Any) -> None:
    over = finish(G.new_game(2, 1, {"match": "single"}), 0)
    for state, seat in ((t7(), 1), (t7(), 0), (over, 0)):
        assert code(state, seat, move) == "malformed_move"


def test_validation_order_game_over_before_turn_and_phase() -> None:
    over = finish(G.new_game(2, 1, {"match": "single"}), 0)
    assert over.phase == "match_over" and code(over, 1, {"type": "choose_first", "seat": 0}) == "game_over"
    assert code(t7(), 0, {"type": "pick", "tile": "N01"}) == "not_your_turn"
    assert code(t7(), 1, {"type": "pick", "tile": "N01"}) == "wrong_phase"


# -- E8/E9/E10 details -------------------------------------------------------------------------------------


def test_e8_repeated_financial_crisis_takes_the_television_itself() -> None:
    s = position(".. N08=b .. / .. .. .. / G1=g .. ..", 0, blue="B1 B2", green="G2", neutral="N04")
    s = G.apply(s, 0, place("N04", "neutral", [1, 1], "blue", {"target": [0, 1], "effect": {"target": [1, 1]}}))
    assert cell(s, 1, 1) is None and s.open[0] == ["B1", "B2", "N04"] and cell(s, 0, 1)["tile"] == "N08"


def test_e8_repeated_coup_flips_the_television() -> None:
    s = position(".. N10=b .. / .. .. .. / G1=g .. ..", 0, blue="B1 B2", green="G2", neutral="N04")
    s = G.apply(s, 0, place("N04", "neutral", [1, 1], "blue", {"target": [0, 1], "effect": {}}))
    assert cell(s, 1, 1)["supports"] == "green" and cell(s, 0, 1)["supports"] == "blue"


def test_e9_a_discard_on_the_last_field_lets_the_game_go_on() -> None:
    s = position("B2=b G1=g B3=b / G2=g M0=b G3=g / B4=b G5=b ..", 0, blue="B1 B5 B6 B7", green="G4 G6 G7",
                 neutral="N02 N11")
    s2 = G.apply(s, 0, place("N02", "neutral", [2, 2], "blue", {"target": [1, 2]}))
    assert cell(s2, 1, 2) is None and s2.removed == ["G3"] and s2.phase == "play" and G.to_act(s2) == [1]
    bribes = [m["effect"] for m in G.legal_moves(s, 0) if m["tile"] == "N11" and m["field"] == [2, 2]]
    assert bribes == [None, None]  # blue, green: no empty field is left to move a tile to


def test_e10_hacked_tile_may_be_placed_either_way() -> None:
    s = G.apply(t11(), 0, zt("N07", {"tile": "G2"}))
    s = G.apply(s, 1, place("G1", "own", [0, 0], "green"))
    assert {m["supports"] for m in G.legal_moves(s, 0) if m["tile"] == "G2" and m["field"] == [2, 0]} == \
        {"blue", "green"}


# -- End and scoring: whole matches ------------------------------------------------------------------------


def last_move(s: ClashState, board: str, mover: int, tile: str, field: list[int], moves: int) -> ClashState:
    """Set the current game's board (spec notation) and play its last placement ``tile`` from ``mover``'s zone."""
    built = position(board, mover)
    s.tile, s.cov, s.sup, s.down = built.tile, built.cov, built.sup, built.down
    s.start_placed, s.current, s.to_act, s.move_no = True, mover, [mover], moves - 1
    s.open, s.hidden, s.neutral = [[], []], [[], []], []
    s.open[mover] = [tile]
    s.know = [{"slots": [], "in_pool": []}, {"slots": [], "in_pool": []}]
    return G.apply(s, mover, place(tile, "own", field, COLOURS[mover]))


COLOURS = ("blue", "green")
RECORD_KEYS = ("game", "first_player", "reason", "stuck", "tiles", "kaboom", "winner", "points", "moves")


def spec_example_match(options: dict[str, Any]) -> ClashState:
    """The three games of the spec's result example."""
    s = G.new_game(2, 1, {"first_player": 0, **options})
    s = last_move(s, "B1=b B2=b B3=b / B4=b B5=b G1=g / G2=g G3=g ..", 0, "B7", [2, 2], 11)
    s = G.apply(s, 1, {"type": "choose_first", "seat": 1})
    s = last_move(s, "B1=b B2=b B3=b / B4=b N17=b G1=g / G2=g G3=g ..", 1, "G4", [2, 2], 12)
    s = G.apply(s, 0, {"type": "choose_first", "seat": 0})
    return last_move(s, "B1=b B2=b B3=b / B4=b G1=g G2=g / .. .. ..", 1, "G3", [2, 0], 14)


def test_result_document_best_of_three_is_the_spec_example() -> None:
    s = spec_example_match({})
    doc = G.result(s)
    assert doc is not None and s.phase == "match_over"
    assert [tuple(g[k] for k in RECORD_KEYS) for g in doc["games"]] == [
        (1, 0, "board_full", None, [6, 3], None, 0, [6, 3], 11),
        (2, 1, "board_full", None, [5, 4], 0, 1, [0, 4], 12),
        (3, 0, "no_placement", 0, [4, 3], None, 1, [4, 3], 14)]
    assert {k: v for k, v in doc.items() if k != "games"} == {
        "finished": True, "match": "best_of_3", "wins": [1, 2], "points": [10, 10], "scores": [1, 2],
        "ranking": [{"seat": 1, "score": 2, "rank": 1}, {"seat": 0, "score": 1, "rank": 2}], "winners": [1]}


def test_result_document_same_games_in_points_mode_are_a_drawn_match() -> None:
    doc = G.result(spec_example_match({"match": "points", "games": 3}))
    assert doc is not None and doc["finished"] and doc["scores"] == [10, 10] and doc["winners"] == [0, 1]
    assert [r["rank"] for r in doc["ranking"]] == [1, 1]


def test_t16_points_series_of_three_games() -> None:
    def series(game_1: str) -> ClashState:
        s = G.new_game(2, 1, {"match": "points", "games": 3, "first_player": 0})
        s = last_move(s, game_1, 0, "B7", [2, 2], 9)
        s = G.apply(s, G.to_act(s)[0], {"type": "choose_first", "seat": 0})
        s = last_move(s, "B1=b B2=b B3=b / G1=g G2=g G3=g / N17=g G4=g ..", 0, "B7", [2, 2], 9)
        assert s.games[-1]["tiles"] == [4, 5] and s.games[-1]["points"] == [4, 0] and s.games[-1]["winner"] == 0
        s = G.apply(s, 1, {"type": "choose_first", "seat": 1})
        s = last_move(s, "B1=b B2=b B3=b / G1=g G2=g G3=g / .. .. ..", 1, "G4", [2, 0], 9)
        assert (s.games[-1]["reason"], s.games[-1]["stuck"], s.games[-1]["winner"]) == ("no_placement", 0, 1)
        return s
    s = series("B1=b B2=b B3=b / B4=b B5=b G1=g / G2=g G3=g ..")
    assert s.phase == "match_over" and s.points == [13, 7] and G.outcome(s).winners == [0]
    s = series("B1=b B2=b G4=g / G5=g G6=g G1=g / G2=g G3=g ..")
    assert s.points == [10, 10] and G.outcome(s).winners == [0, 1] and G.outcome(s).scores == [10.0, 10.0]


def test_d24_best_of_three_ends_after_three_games_even_without_two_wins() -> None:
    s = G.new_game(2, 1, {"first_player": 0, "max_moves": 20})
    s = last_move(s, "B1=b G1=g G2=g / .. .. .. / .. .. ..", 0, "B7", [2, 2], 20)  # move limit, 2:2
    assert s.games[-1]["winner"] is None and G.to_act(s) == [1]  # the seat that moved second chooses
    s = G.apply(s, 1, {"type": "choose_first", "seat": 0})
    s = last_move(s, "B1=b B2=b B3=b / B4=b B5=b G1=g / G2=g G3=g ..", 0, "B7", [2, 2], 11)
    s = G.apply(s, 1, {"type": "choose_first", "seat": 1})
    s = last_move(s, "G1=g G2=g G3=g / G4=g G5=g B1=b / B2=b B3=b ..", 1, "G7", [2, 2], 11)
    assert s.phase == "match_over" and s.wins == [1, 1] and G.outcome(s).winners == [0, 1]


def test_end_of_game_reveals_hidden_tiles_in_final_zones() -> None:
    s = secret()
    assert "N17" in G.secrets(s, 0) and "N17" not in str(G.view(s, 0))  # N09 is one of seat 0's candidates
    s = finish(s, 1)
    assert s.games[-1]["final_zones"][1]["hidden"] == ["N09", "N17"] and s.phase == "choose_first"
    assert not {"N09", "N17", "N08", "N12"} & G.secrets(s, 0)
    assert s.set_aside == ["N08", "N09", "N12", "N17"]  # secret-draft returns went back to the pool


# -- Drafts with a short pool ----------------------------------------------------------------------------


@pytest.mark.parametrize(("pool", "picks", "blue", "green"), [
    (["N01", "N02", "N03"], [(0, "N02"), (1, "N01")], ["N02", "N03"], ["N01"]),
    (["N01", "N02", "N03", "N04"], [(0, "N04"), (1, "N01"), (0, "N02")], ["N02", "N04"], ["N01", "N03"]),
    (["N01", "N02"], [(0, "N02")], ["N02"], ["N01"]),
    (["N01"], [], ["N01"], []),
    ([], [], [], []),
])
def test_open_draft_with_fewer_tiles_gives_the_rest_automatically(pool: list[str], picks: list[tuple[int, str]],
                                                                   blue: list[str], green: list[str]) -> None:
    s = G.new_game(2, 1, {"draft": True, "first_player": 0})
    s.pool = list(pool)
    start_game(s, 0)
    for seat, tile in picks:
        assert G.to_act(s) == [seat] and s.phase == "draft"
        s = G.apply(s, seat, {"type": "pick", "tile": tile})
    assert s.phase == "play" and G.to_act(s) == [0] and s.neutral == []
    assert s.open[0][7:] == blue and s.open[1][7:] == green


def test_secret_draft_with_a_short_pool_skips_empty_offers_and_keeps_single_ones() -> None:
    s = G.new_game(2, 1, {"secret_draft": True, "first_player": 0})
    s.pool = ["N01", "N02", "N03", "N04", "N05"]
    start_game(s, 0)
    assert s.draft is not None and s.draft["step"] == 1 and len(s.draft["offer"]) == 4
    offer = list(s.draft["offer"])
    s = G.apply(s, 0, {"type": "pick", "tile": offer[0]})
    s = G.apply(s, 1, {"type": "pick", "tile": offer[1]})  # step 3 offers the last pool tile: kept at once
    assert s.phase == "play" and G.to_act(s) == [0] and s.draft is None
    last = ({"N01", "N02", "N03", "N04", "N05"} - set(offer)).pop()
    assert s.hidden == [[offer[0]], [offer[1], last]] and s.pool == offer[2:]
    assert G.view(s, 0)["zones"][1]["hidden_slots"] == [{"candidates": offer[1:]}, {"candidates": None}]
    assert G.view(s, 1)["zones"][0]["hidden_slots"] == [{"candidates": None}] and \
        G.view(s, 1)["known_in_pool"] == offer[2:]
    s2 = G.new_game(2, 1, {"secret_draft": True, "first_player": 0})
    s2.pool = []
    start_game(s2, 0)
    assert s2.phase == "play" and s2.hidden == [[], []]


def test_secret_draft_pick_must_be_offered() -> None:
    s = G.new_game(2, 1, {"secret_draft": True})
    assert code(s, 0, {"type": "pick", "tile": "N01"}) == "tile_not_offered"
    assert code(s, 1, {"type": "pick", "tile": "N02"}) == "not_your_turn"


# -- Knowledge maintenance ---------------------------------------------------------------------------------


def test_knowledge_forgets_placed_hidden_tiles_and_public_pool_tiles() -> None:
    s = secret()
    s = G.apply(s, 0, place("M0", "start", [1, 1], "blue"))
    s = G.apply(s, 1, place("N09", "own", [0, 0], "green"))  # slot 0 of Green's hidden zone
    assert G.view(s, 0)["zones"][1]["hidden_slots"] == [{"candidates": None}] and s.hidden[1] == ["N17"]
    assert G.view(s, 1)["known_in_pool"] == ["N02", "N03"]
    s.open[0].append("N16")  # constructed: Blue holds Elections
    s.pool.remove("N16")
    s.know[0]["in_pool"].remove("N16")
    seed = next(k for k in range(1000) if random.Random(k).sample(s.pool, 1) == ["N02"])
    s.rng = random.Random(seed)
    s = G.apply(s, 0, place("N16", "own", [2, 2], "blue", {}))
    assert "N02" in s.open[0] and G.view(s, 1)["known_in_pool"] == ["N03"]


def test_log_setup_event_comes_first_in_every_variant() -> None:
    for options in ({}, {"draft": True}, {"secret_draft": True}, {"random_support": True, "hidden_support": True}):
        s = G.new_game(2, 1, options)
        events = [e["event"] for e in G.view(s, 0)["log"]]
        assert events[0] == "setup" and events.count("setup") == 1, (options, events)
