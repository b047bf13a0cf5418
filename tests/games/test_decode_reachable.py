"""``decode`` refuses state bytes that no sequence of legal moves reaches (issue 19, item 8).

Each test starts from a state that ``new_game`` + random legal moves reached, changes one thing the way a
hostile client would (keeping every card in exactly one place, so only the rule under test breaks), and
requires ``InvalidState`` with the message of that rule. The unchanged state must still decode.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from services.rules.games import get_game
from services.rules.games.base import Game, InvalidOptions, InvalidState, NoSuchSeat
from services.rules.games.clash import _history_digest as clash_digest
from services.rules.games.fierce_women import ACTIONS, CATEGORIES, WOMEN, common, single
from services.rules.games.sideboards import _history_digest as sb_digest

FW = get_game("fierce-women")
SB = get_game("sideboards")
CLASH = get_game("clash")
TW8 = get_game("they-who-were-8")


def reach(game: Game[Any], players: int, options: dict[str, Any], found: Callable[[Any], bool],
          seeds: int = 400) -> Any:
    """The first state of random legal play (seeds 0, 1, ...) for which ``found`` holds."""
    for seed in range(seeds):
        rng = random.Random(seed)
        state = game.new_game(players, seed, options)
        while True:
            if found(state):
                return state
            if game.is_over(state):
                break
            seat = rng.choice(game.to_act(state))
            state = game.apply(state, seat, rng.choice(game.legal_moves(state, seat)))
    raise AssertionError("no state found")


def doc_of(game: Game[Any], state: Any) -> dict[str, Any]:
    data = game.encode(state)
    game.decode(data)  # the starting point itself is accepted
    return dict(orjson.loads(data))


def refused(game: Game[Any], doc: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidState, match=match):
        game.decode(orjson.dumps(doc))


def swap_in(doc: dict[str, Any], where: list[str], index: int, card: str) -> None:
    """Put ``card`` at ``where[index]`` and the card it replaces where ``card`` was (cards stay unique)."""
    old = where[index]
    for place in [doc["out_of_game"], doc["discard"], *doc["piles"]]:
        if card in place:
            place[place.index(card)] = old
            break
    else:
        raise AssertionError(f"{card} not found")
    where[index] = card


def fw_spare(doc: dict[str, Any], fits: Callable[[str], bool]) -> str:
    return next(c for c in doc["out_of_game"] if fits(c))


# -- Fierce Women ------------------------------------------------------------------------------------


def _second_column_of(table: list[list[str]], spare_cards: list[str]) -> tuple[int, str] | None:
    """(index of a one-card column, a spare single-category woman whose category another column collects)."""
    masks = [common(c) for c in table]
    for spare in spare_cards:
        w = WOMEN.get(spare)
        if w is None or not single(w) or w not in masks:
            continue
        target = next((i for i, c in enumerate(table) if len(c) == 1 and masks[i] != w), None)
        if target is not None:
            return target, spare
    return None


def test_fw_two_defined_columns_of_one_category_are_refused() -> None:
    s = reach(FW, 3, {"action_cards": False},
              lambda s: s.phase == "draw" and _second_column_of(s.tables[s.current], s.out_of_game) is not None)
    doc = doc_of(FW, s)
    table = doc["tables"][s.current]
    found = _second_column_of(table, doc["out_of_game"])
    assert found is not None
    swap_in(doc, table[found[0]], 0, found[1])
    refused(FW, doc, "in two columns")


def test_fw_a_column_with_no_common_category_is_refused() -> None:
    def found(s: Any) -> bool:
        return s.phase == "draw" and any(len(c) >= 2 for t in s.tables for c in t)

    s = reach(FW, 3, {"action_cards": False}, found)
    doc = doc_of(FW, s)
    col = next(c for t in doc["tables"] for c in t if len(c) >= 2)
    spare = fw_spare(doc, lambda c: c in WOMEN and not WOMEN[c] & WOMEN[col[0]])
    swap_in(doc, col, 1, spare)
    refused(FW, doc, "no common category")


@pytest.mark.parametrize("position", [0, 1])
def test_fw_a_one_shot_action_card_in_a_column_is_refused(position: int) -> None:
    """A4-A8 go to the discard pile when played; a column may not hold one, first or later."""
    def found(s: Any) -> bool:
        return s.phase == "draw" and any(len(c) >= 2 for t in s.tables for c in t) and \
            any(c in ACTIONS and ACTIONS[c] not in ("any_min", "solo_max", "double_by_count")
                for c in s.out_of_game + s.discard)

    s = reach(FW, 3, {"action_cards": True}, found)
    doc = doc_of(FW, s)
    col = next(c for t in doc["tables"] for c in t if len(c) >= 2)
    spare = next(c for c in doc["out_of_game"] + doc["discard"]
                 if c in ACTIONS and ACTIONS[c] not in ("any_min", "solo_max", "double_by_count"))
    swap_in(doc, col, position, spare)
    refused(FW, doc, "only A1-A3 stay in a column")


def test_fw_a_column_opened_by_an_action_card_without_a5_is_refused() -> None:
    """E3 appends A1-A3 to a column that already holds a woman card (issue 30: ['A3', 'W01', 'W31'])."""
    def found(s: Any) -> bool:
        return s.phase == "draw" and "A5" not in s.discard and "A3" in s.out_of_game + s.discard and \
            any(len(c) >= 2 for t in s.tables for c in t)

    s = reach(FW, 3, {"action_cards": True}, found)
    doc = doc_of(FW, s)
    col = next(c for t in doc["tables"] for c in t if len(c) >= 2)
    swap_in(doc, col, 0, "A3")  # its first woman goes where A3 was: a column of A3 and women, A3 first
    refused(FW, doc, "starts with A3")


def test_fw_a_column_that_a5_left_opening_with_an_action_card_still_decodes() -> None:
    """The other side of the rule above: A5 (E4) takes women out of a column and keeps the column while a
    woman is left, so a column may open with an action card once A5 was played; decode must accept it."""
    s = reach(FW, 3, {"action_cards": True},
              lambda s: any(c[0] in ACTIONS for t in s.tables for c in t), seeds=1000)
    assert "A5" in s.discard
    assert FW.encode(FW.decode(FW.encode(s))) == FW.encode(s)


@pytest.mark.parametrize("entry", [
    {"card": "A3"}, True, {"value": 3, "card": "A1", "seat": 0}, {"value": True, "card": "A1", "seat": 0},
    {"value": 1, "card": "A3", "seat": 0}, {"value": 1, "card": "A2", "seat": 0},
])
def test_fw_bad_override_entries_are_refused(entry: Any) -> None:
    s = reach(FW, 3, {"action_cards": True}, lambda s: s.phase == "draw" and "A1" in s.discard and "A2" in s.discard)
    doc = doc_of(FW, s)
    doc["overrides"] = {CATEGORIES[0]: entry}
    refused(FW, doc, "bad override")


def test_fw_override_by_a_card_still_in_play_is_refused() -> None:
    s = reach(FW, 3, {"action_cards": True}, lambda s: s.phase == "draw" and "A1" in s.out_of_game)
    doc = doc_of(FW, s)
    doc["overrides"] = {CATEGORIES[0]: {"value": 1, "card": "A1", "seat": 0}}
    refused(FW, doc, "override by A1")


def _removal(s: Any) -> bool:
    return s.phase in ("remove_column", "remove_cards")


def test_fw_removal_queue_with_repeated_seats_is_refused() -> None:
    s = reach(FW, 4, {"action_cards": True}, _removal, seeds=2000)
    doc = doc_of(FW, s)
    queue = doc["pending"]["queue"]
    doc["pending"]["queue"] = [queue[0], queue[0], *queue[1:]]
    refused(FW, doc, "remaining seats in turn order")


def test_fw_removal_pending_on_a_seat_with_nothing_to_remove_is_refused() -> None:
    """The match could never move again: the head of the queue has no legal move."""
    s = reach(FW, 4, {"action_cards": True}, _removal, seeds=2000)
    doc = doc_of(FW, s)
    head = doc["pending"]["queue"][0]
    for col in doc["tables"][head]:
        doc["discard"].extend(col)
    doc["tables"][head] = []
    refused(FW, doc, "has nothing to remove")


def test_fw_a_waiting_seat_holding_two_cards_is_refused() -> None:
    s = reach(FW, 3, {"action_cards": False}, lambda s: s.phase == "draw" and s.turn > 3)
    doc = doc_of(FW, s)
    waiting = (s.current + 1) % 3
    other = (s.current + 2) % 3
    hand = doc["hands"][waiting]
    card = next(c for c in hand if c not in doc["known"][waiting])
    hand.remove(card)
    doc["hands"][other].insert(0, card)
    refused(FW, doc, "must hold 3 cards")


@pytest.mark.parametrize("change", [
    {"column": {"x": 1}}, {"pile": "junk"}, {"turn": "<script>"}, {"column": -5}, {"card": "A1", "column": 0},
])
def test_fw_garbage_in_automa_last_is_refused(change: dict[str, Any]) -> None:
    s = reach(FW, 2, {"action_cards": True}, lambda s: s.phase == "draw" and s.automa_last is not None
              and s.automa_last["column"] is not None)
    doc = doc_of(FW, s)
    doc["automa_last"] = {**doc["automa_last"], **change}
    refused(FW, doc, "bad automa_last")


def test_fw_automa_last_for_a_turn_the_automa_did_not_play_is_refused() -> None:
    s = reach(FW, 2, {"action_cards": False}, lambda s: s.phase == "draw" and s.turn > 4)
    doc = doc_of(FW, s)
    doc["automa_last"]["turn"] = 1
    refused(FW, doc, "automa_last does not fit the turn")


# -- Sideboards --------------------------------------------------------------------------------------


def test_sb_exchange_card_used_with_nothing_discarded_is_refused() -> None:
    s = reach(SB, 3, {}, lambda s: s.phase == "place" and not s.discard)
    doc = doc_of(SB, s)
    doc["exchange"][0] = "used"
    refused(SB, doc, "discard pile must hold 2 cards")


@pytest.mark.parametrize("cut", ["emptied", "last step dropped"])
def test_sb_a_place_step_whose_pass_log_lost_hand_offs_is_refused(cut: str) -> None:
    """Each hand-off logs one pass per seat (H - 1 >= 1 cards each), so at place step k the log holds n * k
    entries, even when the history digest was recomputed to match the cut log (issue 30)."""
    s = reach(SB, 3, {}, lambda s: s.phase == "place" and s.step >= 2)
    doc = doc_of(SB, s)
    log = doc["pass_log"]
    doc["pass_log"] = [] if cut == "emptied" else [e for e in log if e["step"] < s.step - 1]
    doc["history_digest"] = sb_digest(doc["pass_log"])
    doc["tracked"] = [[] for _ in doc["tracked"]]  # a tracked card must be one its seat passed: keep that true
    refused(SB, doc, "one hand-off per seat for every step")


# -- CLASH -------------------------------------------------------------------------------------------


def test_clash_hidden_support_without_random_support_is_refused() -> None:
    doc = doc_of(CLASH, CLASH.new_game(2, 1, {}))
    doc["options"]["hidden_support"] = True
    refused(CLASH, doc, "hidden_support requires random_support")


def test_clash_wins_that_contradict_the_game_records_are_refused() -> None:
    s = reach(CLASH, 2, {"match": "best_of_3", "max_moves": 20},
              lambda s: s.phase == "choose_first" and s.games[-1]["winner"] is not None, seeds=50)
    doc = doc_of(CLASH, s)
    doc["wins"] = doc["wins"][::-1]
    refused(CLASH, doc, "wins do not match the game records")


def test_clash_a_record_whose_winner_does_not_follow_from_its_tiles_is_refused() -> None:
    s = reach(CLASH, 2, {"match": "best_of_3", "max_moves": 20},
              lambda s: s.phase == "choose_first" and s.games[-1]["winner"] is not None, seeds=50)
    doc = doc_of(CLASH, s)
    record = doc["games"][-1]
    record["winner"] = 1 - record["winner"]
    doc["history_digest"] = clash_digest(doc["games"], doc["log"], doc["result"])  # unkeyed: anyone can
    refused(CLASH, doc, "do not follow from its tiles")


@pytest.mark.parametrize("players", [2.0, True, "2"])
def test_clash_new_game_takes_only_the_integer_2(players: Any) -> None:
    with pytest.raises(InvalidOptions):
        CLASH.new_game(players, 1, {})


# -- They Who Were 8 ---------------------------------------------------------------------------------


def test_tw8_a_used_god_without_a_power_event_is_refused() -> None:
    doc = doc_of(TW8, TW8.new_game(4, 1, {}))
    doc["gods"][0]["used"] = True
    refused(TW8, doc, "log records its power")


# -- seats -------------------------------------------------------------------------------------------


GAMES_AND_PLAYERS = [(FW, 3), (SB, 3), (CLASH, 2), (TW8, 4)]


@pytest.mark.parametrize(("game", "players"), GAMES_AND_PLAYERS, ids=lambda v: getattr(v, "id", str(v)))
@pytest.mark.parametrize("seat", [True, False, -1, 1.0, "0", 99])
def test_engines_refuse_a_seat_that_is_not_an_int_in_range(game: Game[Any], players: int, seat: Any) -> None:
    state = game.new_game(players, 3, {})
    actor = game.to_act(state)[0]
    move = game.legal_moves(state, actor)[0]
    for call in (lambda: game.legal_moves(state, seat), lambda: game.apply(state, seat, move),
                 lambda: game.apply_in_place(game.clone(state), seat, move), lambda: game.view(state, seat),
                 lambda: game.secrets(state, seat), lambda: game.sample_move(state, seat, random.Random(0))):
        with pytest.raises(NoSuchSeat):
            call()
    assert isinstance(game.view(state, None), dict)  # a spectator is still welcome


@pytest.mark.parametrize(("game", "players"), GAMES_AND_PLAYERS, ids=lambda v: getattr(v, "id", str(v)))
def test_decode_trusted_reads_every_state_of_play_as_decode_does(game: Game[Any], players: int) -> None:
    """The sealed path skips checks, never meaning: both decoders give states that encode identically."""
    rng = random.Random(4)
    state = game.new_game(players, 4, {})
    for _ in range(300):
        data = game.encode(state)
        assert game.encode(game.decode_trusted(data)) == game.encode(game.decode(data)) == data
        if game.is_over(state):
            break
        seat = rng.choice(game.to_act(state))
        state = game.apply(state, seat, game.sample_move(state, seat, rng))
