"""They Who Were 8: the spec's test scenarios T1-T16, each named after the rule it checks, plus the
RNG reference procedure, card knowledge in determinize and decoding."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from services.rules.games.base import IllegalMove, InvalidOptions, InvalidState
from services.rules.games.they_who_were_8 import GAME, State, flow
from services.rules.games.they_who_were_8.model import DATA
from tests.games.fixtures.they_who_were_8 import position

G = GAME
F2 = {0: ["G1", "G2"], 1: ["G3", "G4"], 2: ["G5", "G8"], 3: ["G6", "G7"]}


def code(state: State, seat: int, move: Any) -> str:
    with pytest.raises(IllegalMove) as err:
        G.apply(state, seat, move)
    assert len(err.value.message) > 10
    return err.value.code


def gods(state: State) -> dict[str, tuple[int, int]]:
    return {g["id"]: (g["glory"], g["infamy"]) for g in G.view(state, None)["gods"]}


def supply(state: State) -> tuple[int, int]:
    v = G.view(state, None)["supply"]
    return v["glory"], v["infamy"]


def used(state: State) -> list[str]:
    return [g["id"] for g in G.view(state, None)["gods"] if g["used"]]


def ref(g: str) -> dict[str, str]:
    return {"god": g}


def play(card: str, target: str, **second: str) -> dict[str, Any]:
    return {"type": "play", "card": card, "target": ref(target), **{k: ref(v) for k, v in second.items()}}


def power(god: str, **params: Any) -> dict[str, Any]:
    return {"type": "use_power", "god": god, **params}


DECLINE = {"type": "decline"}


# -- T1 Every action card -------------------------------------------------------------------------------


def t1_state(card: str, tokens: dict[str, tuple[int, int]] | None = None) -> State:
    others = [c for c in flow.CARD_IDS if c != card]
    hands = [[card, others[0]], others[1:3], others[3:5], others[5:7]]
    return position(tokens=tokens, hands=hands, phase="play", turn_seat=0)


T1_ROWS = [
    ("A01", {}, play("A01", "G3"), {"G3": (1, 0)}, (14, 15)),
    ("A02", {}, play("A02", "G4"), {"G4": (0, 1)}, (15, 14)),
    ("A03", {}, play("A03", "G5"), {"G5": (2, 0)}, (13, 15)),
    ("A04", {"G3": (2, 0)}, play("A04", "G3"), {"G3": (1, 0)}, (14, 15)),
    ("A05", {"G6": (0, 3)}, play("A05", "G6"), {"G6": (0, 2)}, (15, 13)),
    ("A06", {"G3": (2, 0)}, play("A06", "G3", to="G5"), {"G3": (1, 0), "G5": (1, 0)}, (13, 15)),
    ("A07", {"G4": (0, 2)}, play("A07", "G4", to="G6"), {"G4": (0, 1), "G6": (0, 1)}, (15, 13)),
    ("A08", {"G3": (2, 0), "G6": (0, 1)}, play("A08", "G3", swap_with="G6"), {"G3": (1, 1), "G6": (1, 0)}, (13, 14)),
    ("A09", {}, play("A09", "G4"), {"G4": (0, 2)}, (15, 13)),
    ("A10", {}, play("A10", "G6"), {"G6": (1, 1)}, (14, 14)),
]


@pytest.mark.parametrize(("card", "before", "move", "after", "supply_after"), T1_ROWS, ids=[r[0] for r in T1_ROWS])
def test_t1_every_action_card_acts_on_other_players_gods_then_the_next_turn_starts(
        card: str, before: dict[str, tuple[int, int]], move: dict[str, Any], after: dict[str, tuple[int, int]],
        supply_after: tuple[int, int]) -> None:
    s = t1_state(card, before)
    assert G.to_act(s) == [0] and move in G.legal_moves(s, 0)
    pile_before = len(s.pile)
    t = G.apply(s, 0, move)
    expected = {**{f"G{i}": (0, 0) for i in range(1, 9)}, **before, **after}
    assert gods(t) == expected and supply(t) == supply_after
    assert card in t.pile and len(t.pile) == pile_before + 1 and len(t.hands[0]) == 1
    assert (t.plays, t.phase, t.turn_seat, G.to_act(t)) == (1, "turn_start", 1, [3])


def test_t1_a_card_never_names_its_players_own_gods() -> None:
    assert code(t1_state("A01"), 0, play("A01", "G2")) == "invalid_target"
    assert code(t1_state("A06", {"G3": (2, 0)}), 0, play("A06", "G3", to="G1")) == "invalid_target"


def test_t1_token_minimums_and_card_playability() -> None:
    assert code(t1_state("A04", {"G3": (2, 0)}), 0, play("A04", "G4")) == "invalid_target"
    assert code(t1_state("A04", {"G1": (3, 0)}), 0, play("A04", "G3")) == "card_not_playable"


def test_t1_two_god_cards_need_two_different_other_players() -> None:
    s = t1_state("A06", {"G3": (2, 0)})
    assert code(s, 0, play("A06", "G3", to="G4")) == "invalid_target"
    a08 = t1_state("A08", {"G3": (2, 0), "G4": (0, 1), "G6": (0, 1)})
    assert code(a08, 0, play("A08", "G3", swap_with="G4")) == "invalid_target"


def test_t1_card_fields_are_strict() -> None:
    s = t1_state("A06", {"G3": (2, 0)})
    assert code(s, 0, play("A06", "G3")) == "malformed_move"
    assert code(t1_state("A01"), 0, play("A01", "G3", to="G5")) == "malformed_move"
    assert code(t1_state("A01"), 0, {"type": "play", "card": "A01", "target": "G3"}) == "malformed_move"
    assert code(t1_state("A01"), 0, {"type": "play", "card": "A99", "target": ref("G3")}) == "malformed_move"


def test_t1_the_partner_is_a_legal_target() -> None:
    targets = {m["target"]["god"] for m in G.legal_moves(t1_state("A03"), 0) if m["card"] == "A03"}
    assert targets == {"G3", "G4", "G5", "G6", "G7", "G8"}


# -- T2 Rymon redirect -----------------------------------------------------------------------------------


def t2_targeted() -> State:
    s = position(hands=[["A02", "A05"], ["A01", "A03"], ["A04", "A06"], ["A07", "A08"]], phase="play")
    t = G.apply(s, 0, play("A02", "G7"))
    assert (t.phase, G.to_act(t)) == ("targeted", [3])
    return t


def test_t2_rymon_redirects_a_card_played_against_its_owner() -> None:
    t = t2_targeted()
    legal = G.legal_moves(t, 3)
    expected = [power("G7", **{"as": "G8"}, target=ref(f"G{i}")) for i in range(1, 7)] + \
        [power("G8", target=ref(f"G{i}")) for i in range(1, 7)] + [DECLINE]
    assert len(legal) == 13 and sorted(map(orjson.dumps, legal)) == sorted(map(orjson.dumps, expected))
    r = G.apply(t, 3, power("G8", target=ref("G2")))
    assert used(r) == ["G8"]
    assert gods(r)["G2"] == (0, 1) and gods(r)["G7"] == (0, 0) and supply(r) == (15, 14)
    assert (r.phase, r.turn_seat, r.plays) == ("turn_start", 1, 1)
    resolve = next(e for e in reversed(r.log) if e["event"] == "resolve")
    assert resolve["changes"] == [{"god": "G2", "glory": 0, "infamy": 1}]


def test_t2_rymon_cannot_redirect_to_its_own_god_and_only_the_pending_seat_acts() -> None:
    t = t2_targeted()
    assert code(t, 3, power("G8", target=ref("G7"))) == "invalid_power_params"
    assert code(t, 1, DECLINE) == "not_your_turn"


def test_t2_declining_lets_the_card_resolve_on_its_target() -> None:
    r = G.apply(t2_targeted(), 3, DECLINE)
    assert gods(r)["G7"] == (0, 1) and used(r) == []


# -- T3 Piton copying Rymon, then Rymon --------------------------------------------------------------------


def t3_targeted() -> State:
    s = position(F2, hands=[["A02"], ["A01", "A09"], ["A03", "A04"], ["A05", "A06"]], phase="play",
                 turn_seat=1, plays=1)
    t = G.apply(s, 1, play("A09", "G7"))
    assert (t.phase, G.to_act(t)) == ("targeted", [3])
    return t


def test_t3_piton_copies_rymon_then_rymon_redirects_again() -> None:
    t = G.apply(t3_targeted(), 3, power("G7", **{"as": "G8"}, target=ref("G5")))
    assert used(t) == ["G7"] and t.current_play is not None and t.current_play["target"] == "G5"
    assert G.to_act(t) == [2]
    r = G.apply(t, 2, power("G8", target=ref("G3")))
    assert used(r) == ["G7", "G8"]
    assert gods(r)["G3"] == (0, 2) and supply(r) == (15, 13)
    teams = G.result(r)["teams"]  # type: ignore[index]
    assert [teams[0]["powers_used"], teams[1]["powers_used"]] == [1, 1]
    play_log = [e for e in r.log if e["event"] == "power"]
    assert [(e["god"], e["as"], e["old"], e["new"]) for e in play_log] == [("G7", "G8", "G7", "G5"),
                                                                         ("G8", None, "G5", "G3")]


def test_t3_piton_never_copies_itself_nor_a_used_god() -> None:
    t = t3_targeted()
    assert code(t, 3, power("G7", **{"as": "G7"}, target=ref("G5"))) == "power_not_available"
    # Rymon used (by its owner, say), Piton still unused: a Piton copy of Rymon is no longer possible.
    t.used |= 1 << 7
    assert G.legal_moves(t, 3) == [DECLINE] and not flow.eligible(t, 3)
    assert code(t, 3, power("G7", **{"as": "G8"}, target=ref("G5"))) == "power_not_available"


# -- T4 Nanos passing --------------------------------------------------------------------------------------


def t4_passing() -> State:
    s = position(hands=[["A01"], ["A02"], ["A03"], ["A04"]], phase="passing", plays=4)
    assert (s.phase, G.to_act(s)) == ("passing", [2])
    return s


def test_t4a_nanos_keeps_its_card_and_the_others_pass_around_it() -> None:
    t = G.apply(t4_passing(), 2, power("G6"))
    assert t.hands == [["A04"], ["A01"], ["A03"], ["A02"]]
    assert (t.phase, t.first_player, t.active, G.to_act(t)) == ("dealing", 1, 1, [1])
    passes = [(e["from"], e["to"], e["card"]) for e in t.log if e["event"] == "pass"]
    assert passes == [(0, 1, "A01"), (1, 3, "A02"), (3, 0, "A04")]


def test_t4b_piton_as_nanos_and_the_window_asks_again_after_a_use() -> None:
    t = G.apply(t4_passing(), 2, DECLINE)
    assert G.to_act(t) == [3]
    t = G.apply(t, 3, power("G7", **{"as": "G6"}))
    assert t.keeping == 1 << 3 and t.declined == 0 and G.to_act(t) == [2]
    t = G.apply(t, 2, DECLINE)
    assert t.hands == [["A03"], ["A01"], ["A02"], ["A04"]]


def test_t4_the_passed_card_is_seen_only_by_giver_and_receiver() -> None:
    t = G.apply(t4_passing(), 2, power("G6"))
    for viewer in (None, 0, 1, 2, 3):
        for e in G.view(t, viewer)["log"]:
            if e["event"] == "pass":
                assert (e["card"] is not None) == (viewer in (e["from"], e["to"]))


# -- T5 Kymele dealing -------------------------------------------------------------------------------------


def t5_dealing(target_offer: list[str] | None = None) -> State:
    """T4(a) continued, with an RNG seed whose R5 sample offers ``target_offer``."""
    for seed in range(500):
        s = position(hands=[["A01"], ["A02"], ["A03"], ["A04"]], phase="passing", plays=4, seed=seed)
        t = G.apply(s, 2, power("G6"))
        probe = random.Random()
        probe.setstate(t.rng.getstate())
        if target_offer is None or sorted(probe.sample(sorted(t.pile), 4)) == target_offer:
            return t
    raise AssertionError("no seed gives that offer")


def test_t5_kymele_looks_at_four_cards_and_takes_one_as_its_dealt_card() -> None:
    t = t5_dealing(["A05", "A07", "A08", "A10"])
    assert len(t.pile) == 6 and G.legal_moves(t, 1) == [power("G4"), DECLINE]
    k = G.apply(t, 1, power("G4"))
    assert (k.phase, G.to_act(k), k.offer, len(k.pile)) == ("kymele_take", [1], ["A05", "A07", "A08", "A10"], 2)
    assert G.view(k, 1)["offer"] == ["A05", "A07", "A08", "A10"]
    for seat in (0, 2, 3):
        v = G.view(k, seat)
        assert (v["offer"], v["offer_size"]) == (None, 4)
        assert all(c is None for e in v["log"] if e["event"] == "offer" for c in e["cards"])
    assert G.legal_moves(k, 1) == [{"type": "kymele_take", "card": c} for c in ["A05", "A07", "A08", "A10"]]
    assert code(k, 1, {"type": "kymele_take", "card": "A06"}) == "card_not_in_hand"
    r = G.apply(k, 1, {"type": "kymele_take", "card": "A10"})
    take = next(e for e in r.log if e["event"] == "take")
    assert take == {"event": "take", "seat": 1, "card": "A10"}
    assert r.hands[1][:2] == ["A01", "A10"] and len(r.hands[1]) == 2
    deals = [e["seat"] for e in r.log if e["event"] == "deal"]
    assert deals == [2, 3, 0]
    assert len(r.pile) == 2 and [len(h) for h in r.hands] == [2, 2, 2, 2]
    assert (r.round, r.first_player, r.turn_seat, r.plays) == (2, 1, 1, 0)
    assert next(e for e in G.view(r, 0)["log"] if e["event"] == "take")["card"] is None


def test_t5_declined_kymele_passes_the_dealing_window_to_piton() -> None:
    t = G.apply(t5_dealing(), 1, DECLINE)
    assert G.to_act(t) == [3] and G.legal_moves(t, 3) == [power("G7", **{"as": "G4"}), DECLINE]


# -- T6 Anatok redeal and window order ---------------------------------------------------------------------


def t6_state() -> State:
    s = position(hands=[["A01"], ["A02"], ["A03", "A04"], ["A05", "A06"]], pile=["A07", "A08", "A09", "A10"],
                 phase="turn_start", turn_seat=2, plays=2)
    assert G.to_act(s) == [2]
    return s


def test_t6_anatok_redeals_held_cards_and_the_window_goes_round_in_order() -> None:
    s = t6_state()
    assert code(s, 0, power("G1")) == "not_your_turn"
    s = G.apply(s, 2, DECLINE)
    assert G.to_act(s) == [3]
    s = G.apply(s, 3, DECLINE)
    assert G.to_act(s) == [0] and G.legal_moves(s, 0) == [power("G1"), DECLINE]
    r = G.apply(s, 0, power("G1"))
    assert sorted(c for h in r.hands for c in h) == ["A01", "A02", "A03", "A04", "A05", "A06"]
    assert [len(h) for h in r.hands] == [1, 1, 2, 2] and r.pile == ["A07", "A08", "A09", "A10"]
    assert used(r) == ["G1"] and G.to_act(r) == [2]
    for viewer in range(4):
        redeal = next(e for e in G.view(r, viewer)["log"] if e["event"] == "redeal")
        assert redeal == {"event": "redeal", "seat": 0, "hand": r.hands[viewer]}
    assert next(e for e in G.view(r, None)["log"] if e["event"] == "redeal")["hand"] is None
    r = G.apply(r, 2, DECLINE)
    assert (r.phase, G.to_act(r)) == ("play", [2])


def test_t6_a_used_power_cannot_be_used_again() -> None:
    s = position(phase="turn_start", used=["G1"], tokens={"G3": (1, 0)})
    assert G.to_act(s) == [0]
    assert code(s, 0, power("G1")) == "power_used"


# -- T7 Kasana condition -----------------------------------------------------------------------------------


def test_t7a_kasana_is_skipped_while_no_god_has_five_glory() -> None:
    s = position(phase="turn_start", tokens={"G5": (4, 0), "G6": (4, 0)})
    assert G.to_act(s) == [0]
    s = G.apply(s, 0, DECLINE)
    assert G.to_act(s) == [3]
    s = G.apply(s, 3, DECLINE)
    assert (s.phase, G.to_act(s)) == ("play", [0])


def test_t7b_kasana_puts_a_glory_from_the_supply_on_any_god() -> None:
    s = G.apply(position(phase="turn_start", tokens={"G5": (5, 0)}), 0, DECLINE)
    assert supply(s) == (10, 15) and G.to_act(s) == [1]
    assert G.legal_moves(s, 1) == [power("G3", target=ref(f"G{i}")) for i in range(1, 9)] + [DECLINE]
    r = G.apply(s, 1, power("G3", target=ref("G4")))
    assert gods(r)["G4"] == (1, 0) and supply(r) == (9, 15) and used(r) == ["G3"]


def test_t7c_kasana_taking_the_last_glory_ends_the_game_before_the_turn() -> None:
    s = position(phase="turn_start", tokens={"G5": (5, 0), "G6": (5, 0), "G7": (4, 0)})
    s = G.apply(s, 0, DECLINE)
    r = G.apply(s, 1, power("G3", target=ref("G3")))
    assert gods(r)["G3"] == (1, 0) and supply(r) == (0, 15)
    assert (r.phase, r.end_reason, G.to_act(r)) == ("game_over", "glory_exhausted", [])
    assert not any(e["event"] == "play" for e in r.log)
    res = G.result(r)
    assert res is not None and res["finished"]
    assert [(t["glory"], t["infamy"], t["powers_used"], t["points"]) for t in res["teams"]] == [(10, 0, 0, 20),
                                                                                              (5, 0, 1, 8)]
    assert res["winner_team"] == 0 and res["ranking"] == [1, 2, 1, 2]


# -- T8 Arystyfan swap -------------------------------------------------------------------------------------


def t8_state() -> State:
    s = position(phase="turn_start", tokens={"G3": (3, 1), "G5": (0, 2)})
    assert supply(s) == (12, 12) and G.to_act(s) == [0]
    return s


def test_t8_arystyfan_swaps_all_tokens_of_two_gods() -> None:
    r = G.apply(t8_state(), 0, power("G2", gods=["G5", "G3"]))
    assert gods(r)["G3"] == (0, 2) and gods(r)["G5"] == (3, 1) and supply(r) == (12, 12)
    event = next(e for e in r.log if e["event"] == "power")
    assert event == {"event": "power", "seat": 0, "god": "G2", "as": None, "gods": ["G3", "G5"]}


def test_t8_arystyfan_needs_two_different_gods_with_different_tokens() -> None:
    s = t8_state()
    assert code(s, 0, power("G2", gods=["G1", "G4"])) == "invalid_power_params"
    assert code(s, 0, power("G2", gods=["G3", "G3"])) == "invalid_power_params"
    assert code(s, 0, power("G2", gods=["G3"])) == "malformed_move"
    assert G.canonical_move(power("G2", gods=["G5", "G3"])) in G.legal_moves(s, 0)


# -- T9 Endymina -------------------------------------------------------------------------------------------


def test_t9_endymina_draws_two_then_discards_two() -> None:
    s = G.apply(t6_state(), 2, power("G5"))
    drawn = [c for c in s.hands[2] if c not in ("A03", "A04")]
    assert len(s.hands[2]) == 4 and set(drawn) <= {"A07", "A08", "A09", "A10"} and len(drawn) == 2
    assert (len(s.pile), s.phase, G.to_act(s), len(G.legal_moves(s, 2))) == (2, "endymina_discard", [2], 6)
    assert G.view(s, 0)["hand_sizes"][2] == 4
    assert code(s, 2, {"type": "endymina_discard", "cards": ["A03"]}) == "malformed_move"
    assert code(s, 2, {"type": "endymina_discard", "cards": ["A03", "A03"]}) == "invalid_power_params"
    missing = next(c for c in ("A07", "A08", "A09", "A10") if c not in drawn)
    assert code(s, 2, {"type": "endymina_discard", "cards": ["A03", missing]}) == "card_not_in_hand"
    r = G.apply(s, 2, {"type": "endymina_discard", "cards": ["A04", "A03"]})
    assert r.hands[2] == sorted(drawn) and len(r.pile) == 4 and {"A03", "A04"} <= set(r.pile)
    for viewer in (None, 0, 1, 3):
        v = G.view(r, viewer)
        assert v["hand_sizes"][2] == 2
        moves = [e for e in v["log"] if e["event"] in ("draw", "discard")]
        assert [e["cards"] for e in moves] == [[None, None], [None, None]]
    mine = [e["cards"] for e in G.view(r, 2)["log"] if e["event"] in ("draw", "discard")]
    assert [sorted(c) for c in mine] == [drawn, ["A03", "A04"]]
    assert G.to_act(r) == [3]


def test_t9_endymina_only_on_its_users_own_turn() -> None:
    s = G.apply(t6_state(), 2, DECLINE)
    assert G.to_act(s) == [3]
    assert code(s, 3, power("G7", **{"as": "G5"})) == "power_not_available"
    other_turn = position(phase="turn_start", turn_seat=3, plays=3,
                          hands=[["A01"], ["A02"], ["A03"], ["A04", "A05"]], used=["G1", "G7"])
    assert (other_turn.phase, G.to_act(other_turn)) == ("play", [3])  # seat 2 was not asked
    assert code(other_turn, 2, power("G5")) == "not_your_turn"


# -- T10 Partial effect ends the game ----------------------------------------------------------------------


def test_t10_a_partial_add_takes_the_last_glory_and_ends_the_game() -> None:
    s = position(hands=[["A03", "A05"], ["A01", "A02"], ["A04", "A06"], ["A07", "A08"]],
                 tokens={"G1": (4, 0), "G2": (3, 0), "G3": (4, 0), "G4": (3, 0)})
    assert supply(s) == (1, 15)
    r = G.apply(s, 0, play("A03", "G5"))
    assert gods(r)["G5"] == (1, 0) and supply(r) == (0, 15)
    assert (r.phase, r.end_reason, G.to_act(r), r.window) == ("game_over", "glory_exhausted", [], None)
    res = G.result(r)
    assert res is not None and [t["points"] for t in res["teams"]] == [16, 14] and res["winner_team"] == 0
    assert r.log[-1]["event"] == "game_end"


def test_t10_infamy_exhausted_and_both_exhausted() -> None:
    hands = [["A05", "A10"], ["A01", "A02"], ["A04", "A06"], ["A07", "A08"]]
    r = G.apply(position(hands=hands, tokens={"G3": (0, 14)}), 0, play("A10", "G6"))
    assert gods(r)["G6"] == (1, 1) and supply(r) == (14, 0) and r.end_reason == "infamy_exhausted"
    assert [t["points"] for t in G.result(r)["teams"]] == [1, -14]  # type: ignore[index]
    r = G.apply(position(hands=hands, tokens={"G3": (7, 7), "G4": (7, 7)}), 0, play("A10", "G6"))
    assert supply(r) == (0, 0) and r.end_reason == "both_exhausted"
    assert [t["points"] for t in G.result(r)["teams"]] == [1, 14]  # type: ignore[index]


# -- T11 No playable card ----------------------------------------------------------------------------------


def t11_state(s1: list[str] | None = None, pile: list[str] | None = None) -> State:
    return position(hands=[["A04", "A05"], s1 or ["A01", "A02"], ["A03", "A06"], ["A09", "A10"]],
                    pile=pile or ["A07", "A08"])


def test_t11_without_a_playable_card_the_seat_redraws_then_discards() -> None:
    s = t11_state()
    assert G.legal_moves(s, 0) == [{"type": "discard_and_draw", "card": "A04"},
                                   {"type": "discard_and_draw", "card": "A05"}]
    assert code(s, 0, play("A04", "G3")) == "card_not_playable"
    assert code(s, 0, {"type": "discard", "card": "A04"}) == "wrong_phase"
    r = G.apply(s, 0, {"type": "discard_and_draw", "card": "A04"})
    drawn = next(c for c in r.hands[0] if c != "A05")
    assert drawn in ("A07", "A08") and "A04" in r.pile and r.phase == "play_after_redraw"
    assert G.legal_moves(r, 0) == [{"type": "discard", "card": c} for c in r.hands[0]]
    r = G.apply(r, 0, {"type": "discard", "card": "A05"})
    assert r.hands[0] == [drawn] and len(r.pile) == 3 and supply(r) == (15, 15) and r.turn_seat == 1
    for viewer in (None, 1, 2, 3):
        events = [e for e in G.view(r, viewer)["log"] if e["event"] in ("draw", "discard")]
        assert [e["cards"] for e in events] == [[None], [None], [None]]


def test_t11_a_playable_redraw_must_be_played() -> None:
    s = t11_state(["A07", "A08"], ["A01", "A02"])
    r = G.apply(s, 0, {"type": "discard_and_draw", "card": "A04"})
    drawn = next(c for c in r.hands[0] if c != "A05")
    legal = G.legal_moves(r, 0)
    assert len(legal) == 6 and all(m["type"] == "play" and m["card"] == drawn for m in legal)
    assert code(r, 0, {"type": "discard", "card": "A05"}) == "must_play"


def test_t11_a_seat_with_a_playable_card_cannot_redraw() -> None:
    s = position(hands=[["A01", "A05"], ["A02", "A03"], ["A04", "A06"], ["A07", "A08"]])
    assert code(s, 0, {"type": "discard_and_draw", "card": "A05"}) == "must_play"


# -- T12 Scoring and tie-break -----------------------------------------------------------------------------


def test_t12_e1_equal_points_more_glory_wins() -> None:
    s = position(phase="game_over", end_reason="glory_exhausted", used=["G1", "G7"],
                 tokens={"G1": (5, 2), "G3": (3, 1), "G5": (3, 3), "G7": (4, 2)})
    res = G.result(s)
    assert res is not None
    assert (res["winner_team"], res["decided_by"], res["scores"], res["ranking"]) == (0, "glory", [9, 9, 9, 9],
                                                                                      [1, 2, 1, 2])
    assert res["seats"][0] == {"seat": 0, "glory": 5, "infamy": 2, "powers_used": 1}
    assert G.outcome(s).winners == [0, 2]


def test_t12_e2_equal_points_and_glory_is_a_draw() -> None:
    s = position(phase="game_over", end_reason="round_limit", plays=4, max_rounds=1,
                 tokens={"G1": (4, 2), "G3": (4, 2)})
    res = G.result(s)
    assert res is not None
    assert (res["winner_team"], res["draw"], res["decided_by"], res["ranking"]) == (None, True, "draw", [1, 1, 1, 1])
    assert G.outcome(s).winners == [0, 1, 2, 3]


def test_t12_e3_used_powers_cost_two_points_each() -> None:
    s = position(phase="game_over", end_reason="round_limit", plays=4, max_rounds=1, used=["G1", "G2"],
                 tokens={"G1": (5, 2), "G3": (3, 0)})
    res = G.result(s)
    assert res is not None
    assert [t["points"] for t in res["teams"]] == [4, 6] and res["winner_team"] == 1 and res["decided_by"] == "points"


def test_t12_result_is_provisional_while_the_game_runs() -> None:
    res = G.result(G.new_game(4, 1, {}))
    assert res is not None and not res["finished"] and res["end_reason"] is None
    assert G.view(G.new_game(4, 1, {}), 0)["result"] is None


# -- T13 Round limit ---------------------------------------------------------------------------------------


def test_t13_the_round_limit_ends_the_game_without_passing() -> None:
    s = position(hands=[["A02"], ["A03"], ["A04"], ["A01", "A05"]], phase="play", turn_seat=3, plays=3,
                 max_rounds=1)
    r = G.apply(s, 3, play("A01", "G1"))
    assert (r.phase, r.end_reason, G.to_act(r)) == ("game_over", "round_limit", [])
    assert not any(e["event"] in ("keep", "pass") for e in r.log)


# -- T14 Rymon on a two-god card ---------------------------------------------------------------------------


def test_t14_rymon_redirects_its_own_role_on_a_two_god_card() -> None:
    s = position(tokens={"G7": (2, 0)}, hands=[["A06", "A01"], ["A02", "A03"], ["A04", "A05"], ["A07", "A08"]])
    t = G.apply(s, 0, play("A06", "G7", to="G3"))
    assert G.to_act(t) == [3]
    rymon = {m["target"]["god"] for m in G.legal_moves(t, 3) if m.get("god") == "G8"}
    assert rymon == {"G1", "G2", "G5", "G6"}
    assert code(t, 3, power("G8", target=ref("G4"))) == "invalid_power_params"
    r = G.apply(t, 3, power("G8", target=ref("G1")))
    assert gods(r)["G7"] == (2, 0) and gods(r)["G1"] == (0, 0) and gods(r)["G3"] == (0, 0)
    resolve = next(e for e in r.log if e["event"] == "resolve")
    assert resolve["changes"] == []


# -- T15 Setup invariants and the RNG reference procedure --------------------------------------------------


@pytest.mark.parametrize("seed", range(25))
def test_t15_setup_invariants(seed: int) -> None:
    s = G.new_game(4, seed, {})
    assert sorted(s.owner) == [0, 0, 1, 1, 2, 2, 3, 3] and [len(h) for h in s.hands] == [2, 2, 2, 2]
    assert len(s.pile) == 2 and supply(s) == (15, 15)
    assert (s.round, s.first_player, s.turn_seat, s.phase) == (1, 0, 0, "turn_start")
    owner = {g: s.owner[i] for i, g in enumerate(flow.GOD_IDS)}
    eligible = {owner["G1"], owner["G7"]} | ({0} if owner["G5"] == 0 else set())
    assert G.to_act(s) == [min(eligible)]
    assert G.encode(G.new_game(4, seed, {})) == G.encode(s)


def test_t15_first_window_asks_the_first_eligible_seat_clockwise() -> None:
    s = flow.setup(40, random.Random(0), ["G2", "G4", "G1", "G3", "G5", "G6", "G7", "G8"], list(flow.CARD_IDS))
    assert G.to_act(s) == [1]


def test_t15_rng_reference_procedure_r0_r2() -> None:
    for seed in (0, 1, 77):
        rng = random.Random(seed)
        g = [f"G{i}" for i in range(1, 9)]
        rng.shuffle(g)
        a = [f"A{i:02d}" for i in range(1, 11)]
        rng.shuffle(a)
        s = G.new_game(4, seed, {})
        assert all(s.owner[int(g[i][1:]) - 1] == i // 2 for i in range(8))
        assert s.hands == [sorted(a[2 * i:2 * i + 2]) for i in range(4)] and s.pile == sorted(a[8:])


def test_d1_the_sides_are_the_two_teams_of_partners() -> None:
    assert G.sides(G.new_game(4, 1, {})) == [[0, 2], [1, 3]]


def test_t15_only_four_players_and_known_options() -> None:
    for players in (2, 3, 5):
        with pytest.raises(InvalidOptions):
            G.new_game(players, 1, {})
    with pytest.raises(InvalidOptions):
        G.new_game(4, 1, {"max_rounds": 0})
    with pytest.raises(InvalidOptions):
        G.new_game(4, 1, {"teams": 2})
    assert G.new_game(4, 1, {"max_rounds": 200}).max_rounds == 200


# -- T16 Views ---------------------------------------------------------------------------------------------


def random_states(seed: int) -> list[State]:
    rng = random.Random(seed)
    s = G.new_game(4, seed, {})
    out = [s]
    while not G.is_over(s):
        seat = G.to_act(s)[0]
        s = G.apply(s, seat, rng.choice(G.legal_moves(s, seat)))
        out.append(s)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_t16_views_show_only_what_the_spec_allows(seed: int) -> None:
    for s in random_states(seed):
        for viewer in (None, 0, 1, 2, 3):
            v = G.view(s, viewer)
            text = orjson.dumps(v)
            assert b"rng" not in text
            assert ("hand" in v) == (viewer is not None)
            if viewer is not None:
                assert v["hand"] == s.hands[viewer]
                for other in range(4):
                    if other != viewer:
                        assert not set(s.hands[other]) & set(v["hand"])
            assert v["offer"] == (s.offer if viewer is not None and viewer == s.offer_seat else None)
            assert v["offer_size"] == len(s.offer) and v["pile_size"] == len(s.pile)
            for e in v["log"]:
                kind = e["event"]
                if kind in ("draw", "discard", "offer"):
                    assert all((c is not None) == (viewer == e["seat"]) for c in e["cards"])
                elif kind in ("take", "deal"):
                    assert (e["card"] is not None) == (viewer == e["seat"])
                elif kind == "pass":
                    assert (e["card"] is not None) == (viewer in (e["from"], e["to"]))
                elif kind == "play":
                    assert e["card"] is not None


# -- determinize: what the seat has seen stays true ---------------------------------------------------------


def test_determinize_keeps_the_card_a_seat_passed_with_its_receiver() -> None:
    t = G.apply(t4_passing(), 2, power("G6"))  # 0 gave A01 to 1
    t = G.apply(t, 1, DECLINE) if G.to_act(t) == [1] else t
    while t.phase != "turn_start" and t.phase != "play":
        t = G.apply(t, G.to_act(t)[0], G.legal_moves(t, G.to_act(t)[0])[-1])
    assert "A01" in t.hands[1]
    for seed in range(30):
        d = G.determinize(t, 0, random.Random(seed))
        assert "A01" in d.hands[1] and d.hands[0] == t.hands[0]
        assert [len(h) for h in d.hands] == [len(h) for h in t.hands] and len(d.pile) == len(t.pile)


def test_determinize_keeps_played_cards_in_the_pile_until_someone_draws() -> None:
    s = position(hands=[["A01", "A02"], ["A03", "A04"], ["A05", "A06"], ["A07", "A08"]], used=["G1", "G7"])
    r = G.apply(s, 0, play("A01", "G3"))  # A01 is public and in the pile
    changed = False
    for seed in range(30):
        d = G.determinize(r, 2, random.Random(seed))
        assert "A01" in d.pile and d.hands[2] == r.hands[2]
        changed |= d.hands != r.hands
    assert changed


def test_determinize_keeps_a_seats_own_kymele_offer() -> None:
    k = G.apply(t5_dealing(), 1, power("G4"))
    for seed in range(10):
        d = G.determinize(k, 1, random.Random(seed))
        assert d.offer == k.offer and d.hands[1] == k.hands[1]
        other = G.determinize(k, 2, random.Random(seed))
        assert len(other.offer) == 4 and other.offer_seat == 1 and G.legal_moves(other, 1)


# -- transport --------------------------------------------------------------------------------------------


def test_decode_rejects_knowledge_that_contradicts_the_cards() -> None:
    s = G.new_game(4, 3, {})
    doc = orjson.loads(G.encode(s))
    seat = 0
    card_of_1 = s.hands[1][0]
    bit = 1 << flow.CARD_IDS.index(card_of_1)
    doc["knowledge"][seat][1] &= ~bit  # seat 0 would "know" that seat 1 does not hold that card
    with pytest.raises(InvalidState):
        G.decode(orjson.dumps(doc))


def test_decode_rejects_a_window_pending_on_a_seat_that_cannot_act() -> None:
    s = position(phase="turn_start")
    doc = orjson.loads(G.encode(s))
    doc["window"]["pending"] = 1
    with pytest.raises(InvalidState):
        G.decode(orjson.dumps(doc))


def test_state_round_trips_mid_window_and_mid_follow_up() -> None:
    for s in (t2_targeted(), G.apply(t6_state(), 2, power("G5")), G.apply(t5_dealing(), 1, power("G4"))):
        back = G.decode(G.encode(s))
        assert G.encode(back) == G.encode(s)
        assert G.legal_moves(back, G.to_act(s)[0]) == G.legal_moves(s, G.to_act(s)[0])


# -- Piton and several powers in one window (D7, D15) -------------------------------------------------------


def test_piton_copies_a_power_of_any_owner_and_only_piton_is_turned() -> None:
    # seat 3 owns G7: Piton as Anatok (seat 0's god) in the first window of the game
    s = position(phase="turn_start", tokens={"G1": (1, 0)})
    s = G.apply(s, 0, DECLINE)
    assert G.to_act(s) == [3]
    assert {m["as"] for m in G.legal_moves(s, 3) if m.get("god") == "G7"} == {"G1", "G2"}
    r = G.apply(s, 3, power("G7", **{"as": "G2"}, gods=["G1", "G8"]))
    assert used(r) == ["G7"] and gods(r)["G8"] == (1, 0) and gods(r)["G1"] == (0, 0)
    event = next(e for e in r.log if e["event"] == "power")
    assert event == {"event": "power", "seat": 3, "god": "G7", "as": "G2", "gods": ["G1", "G8"]}
    # the window asks seat 3 again first, then goes on; seat 0 may still use the copied god itself
    assert G.to_act(r) == [0] and power("G2", gods=["G1", "G8"]) in G.legal_moves(r, 0)


def test_one_seat_may_use_several_powers_in_one_window() -> None:
    owners = {0: ["G5", "G7"], 1: ["G1", "G2"], 2: ["G3", "G4"], 3: ["G6", "G8"]}
    s = position(owners, phase="turn_start")
    assert G.to_act(s) == [0] and len(s.pile) == 2
    t = G.apply(s, 0, power("G7", **{"as": "G5"}))
    assert t.phase == "endymina_discard" and len(t.hands[0]) == 4 and used(t) == ["G7"]
    t = G.apply(t, 0, G.legal_moves(t, 0)[0])
    assert G.to_act(t) == [0] and G.legal_moves(t, 0) == [power("G5"), DECLINE]
    t = G.apply(t, 0, power("G5"))
    assert t.phase == "endymina_discard" and used(t) == ["G5", "G7"]


def test_piton_as_kasana_needs_the_kasana_condition() -> None:
    s = position(phase="turn_start", tokens={"G1": (5, 0)}, used=["G1", "G2"])
    assert G.to_act(s) == [1]  # seat 0 has nothing left to use; Kasana's owner is next
    s = G.apply(s, 1, DECLINE)
    assert G.to_act(s) == [3]
    assert {m["as"] for m in G.legal_moves(s, 3) if m.get("god") == "G7"} == {"G3"}
    r = G.apply(s, 3, power("G7", **{"as": "G3"}, target=ref("G8")))
    assert gods(r)["G8"] == (1, 0) and used(r) == ["G1", "G2", "G7"]


# -- D14 several keepers --------------------------------------------------------------------------------


def test_d14_with_two_keepers_the_other_two_swap_and_with_three_nobody_passes() -> None:
    assert flow.PASSES[0b0101] == [(1, 3), (3, 1)]
    assert flow.PASSES[0b0111] == [] and flow.PASSES[0] == [(0, 1), (1, 2), (2, 3), (3, 0)]
    s = position(hands=[["A01"], ["A02"], ["A03"], ["A04"]], phase="passing", plays=4, keeping=[0])
    t = G.apply(s, 2, power("G6"))  # seats 0 and 2 keep: 1 and 3 swap
    assert t.hands == [["A01"], ["A04"], ["A03"], ["A02"]]


# -- RNG reference procedure R3, R5, R6, R7 -------------------------------------------------------------


def test_r6_anatok_shuffles_the_sorted_hand_cards_and_deals_them_back_by_seat() -> None:
    s = t6_state()
    s = G.apply(G.apply(s, 2, DECLINE), 3, DECLINE)
    probe = random.Random()
    probe.setstate(s.rng.getstate())
    h = sorted(c for hand in s.hands for c in hand)
    probe.shuffle(h)
    r = G.apply(s, 0, power("G1"))
    assert r.hands == [sorted(h[0:1]), sorted(h[1:2]), sorted(h[2:4]), sorted(h[4:6])]


def test_r7_the_deal_starts_at_the_new_first_player_and_draws_from_the_sorted_pile() -> None:
    t = G.apply(t5_dealing(), 1, DECLINE)
    t = G.apply(t, 3, DECLINE)
    probe = random.Random()
    pile = ["A05", "A06", "A07", "A08", "A09", "A10"]
    dealt = [e for e in t.log if e["event"] == "deal"]
    assert [e["seat"] for e in dealt] == [1, 2, 3, 0]
    # replay R3 four times from the generator state before the deal
    s = t5_dealing()
    probe.setstate(s.rng.getstate())
    expected = []
    for _ in range(4):
        expected.append(pile.pop(probe.randrange(len(pile))))
    assert [e["card"] for e in dealt] == expected


# -- malformed input never crashes ----------------------------------------------------------------------

JUNK: list[Any] = [None, 1, True, "G1", "A01", "ZZ", [], ["G1"], ["G1", "G2"], {}, {"god": "G1"}, {"god": ["G1"]},
                   {"god": "G1", "x": 1}, {"god": None}, 2.5]


@pytest.mark.parametrize("kind", ["play", "discard_and_draw", "discard", "use_power", "decline",
                                  "endymina_discard", "kymele_take"])
def test_any_junk_in_a_move_field_is_a_clean_refusal(kind: str) -> None:
    states = [t1_state("A06", {"G3": (2, 0)}), t2_targeted(), t6_state(), t4_passing()]
    fields = ["card", "cards", "target", "to", "swap_with", "god", "as", "gods"]
    rng = random.Random(1)
    for _ in range(400):
        move: dict[str, Any] = {"type": kind}
        for f in rng.sample(fields, rng.randrange(4)):
            move[f] = rng.choice(JUNK)
        for s in states:
            for seat in range(4):
                try:
                    G.apply(s, seat, move)
                except IllegalMove as err:
                    assert err.code in DATA["error_codes"] and err.message
