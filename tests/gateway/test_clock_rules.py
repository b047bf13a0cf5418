"""Seat clocks and forfeits as pure rules (services/core/match/clocks.py, control.py): no Redis needed."""

from __future__ import annotations

import msgspec
import pytest

from services.core.errors import DomainError, Kind
from services.core.match import clocks
from services.core.meta import Clock, MatchMeta, Outcome, Seat, SeatClock
from services.core.record import control
from services.timekeeper.keeper import timed_out


def fischer(base: float = 10.0, inc: float = 2.0, seats: int = 2) -> Clock:
    return clocks.initial(clocks.parse({"mode": "fischer", "base_s": base, "increment_s": inc}), seats)


def test_clock_settings_are_validated_with_precise_errors() -> None:
    assert clocks.parse(None) == Clock(mode="none", on_timeout="bot")
    assert clocks.parse({"mode": "per_move", "seconds": 1, "on_timeout": "forfeit"}) == Clock(
        mode="per_move", on_timeout="forfeit", seconds=1.0)
    assert clocks.parse({"mode": "per_move", "seconds": 1}).settings() == {
        "mode": "per_move", "on_timeout": "bot", "seconds": 1.0}
    for bad, words in [({"mode": "blitz"}, "clock.mode"), ({"mode": "per_move"}, "clock.seconds"),
                       ({"mode": "per_move", "seconds": 0.1}, "between"), ({"mode": "per_move", "seconds": True},
                                                                            "number"),
                       ({"mode": "fischer", "base_s": 60}, "increment_s"), ({"mode": "none", "seconds": 5}, "not a"),
                       ({"mode": "per_move", "seconds": 5, "on_timeout": "pause"}, "on_timeout"), ([], "object")]:
        with pytest.raises(DomainError) as err:
            clocks.parse(bad)
        assert err.value.kind is Kind.MALFORMED and err.value.code == "bad_clock" and words in err.value.message


def test_a_clock_starts_when_a_human_seat_is_to_act_and_names_the_decision_by_version() -> None:
    clock = clocks.initial(clocks.parse({"mode": "per_move", "seconds": 5}), 3)
    clock = clocks.advance(clock, timed=[True, True, False], to_act=[0, 2], mover=None, version=4, now=100.0)
    assert clocks.started(clock, 4) == [(0, 105.0)]  # seat 2 is a bot: no clock
    assert clocks.deadline(clock, 1) is None


def test_per_move_gives_every_decision_the_full_time_again() -> None:
    clock = clocks.initial(clocks.parse({"mode": "per_move", "seconds": 5}), 2)
    clock = clocks.advance(clock, timed=[True, True], to_act=[0], mover=None, version=1, now=100.0)
    clock = clocks.advance(clock, timed=[True, True], to_act=[0], mover=0, version=2, now=104.0)
    assert clocks.deadline(clock, 0) == 109.0 and clocks.started(clock, 2) == [(0, 109.0)]


def test_fischer_charges_the_time_used_and_adds_the_increment_after_each_decision() -> None:
    clock = clocks.advance(fischer(), timed=[True, True], to_act=[0], mover=None, version=1, now=100.0)
    clock = clocks.advance(clock, timed=[True, True], to_act=[1], mover=0, version=2, now=103.0)
    assert clock.seats[0].bank_s == pytest.approx(9.0)  # 10 - 3 + 2
    assert clocks.deadline(clock, 1) == pytest.approx(113.0)
    assert clocks.public(clock, 105.0)["seats"][1]["remaining_s"] == pytest.approx(8.0)


def test_others_acting_in_a_simultaneous_step_do_not_reset_a_pending_seat() -> None:
    clock = clocks.initial(clocks.parse({"mode": "per_move", "seconds": 5}), 3)
    clock = clocks.advance(clock, timed=[True] * 3, to_act=[0, 1, 2], mover=None, version=1, now=100.0)
    clock = clocks.advance(clock, timed=[True] * 3, to_act=[1, 2], mover=0, version=2, now=102.0)
    assert clocks.deadline(clock, 1) == 105.0 and clocks.started(clock, 2) == []


def test_a_seat_leaving_to_act_without_moving_stops_without_increment() -> None:
    """A decision window that closes because another seat acted: seat 1 is charged, but earns nothing."""
    clock = clocks.advance(fischer(), timed=[True, True], to_act=[0, 1], mover=None, version=1, now=100.0)
    clock = clocks.advance(clock, timed=[True, True], to_act=[0], mover=0, version=2, now=103.0)
    assert clock.seats[1].bank_s == pytest.approx(7.0) and clock.seats[1].since is None and clock.seats[1].turn is None
    assert clock.seats[0].bank_s == pytest.approx(9.0) and (clock.seats[0].since, clock.seats[0].turn) == (103.0, 2)


def test_a_seat_a_bot_took_over_has_no_clock() -> None:
    clock = clocks.initial(clocks.parse({"mode": "per_move", "seconds": 5}), 2)
    clock = clocks.advance(clock, timed=[True, True], to_act=[0], mover=None, version=1, now=100.0)
    clock = clocks.advance(clock, timed=[False, True], to_act=[0], mover=None, version=2, now=101.0)
    assert clocks.deadline(clock, 0) is None and clocks.public(clock, 101.0)["seats"][0]["running"] is False


def test_timeout_empties_a_fischer_bank_and_reclaim_gives_back_a_quarter_of_the_base() -> None:
    clock = clocks.advance(fischer(base=8), timed=[True, True], to_act=[0], mover=None, version=1, now=100.0)
    clock = clocks.expire(clock, 0)
    assert clock.seats[0] == SeatClock(bank_s=0.0, since=None, turn=None)
    assert clocks.restore(clock, 0).seats[0].bank_s == pytest.approx(2.0)


def test_a_forfeit_ends_a_two_sided_game_and_the_other_side_wins() -> None:
    assert control.forfeit_ends([[0], [1]], [1]) == Outcome(ended_by="forfeit", winners=[0], forfeited=[1],
                                                            scores=None, ratings=None)
    assert control.forfeit_ends([[0, 2], [1, 3]], [3]) == Outcome(ended_by="forfeit", winners=[0, 2], forfeited=[3],
                                                                  scores=None, ratings=None)
    solo = control.forfeit_ends([[0]], [0])
    assert solo is not None and solo.winners == []  # solo: nobody wins


def test_with_three_sides_a_forfeit_plays_on_and_the_forfeited_seat_cannot_win() -> None:
    sides = [[0], [1], [2]]
    assert control.forfeit_ends(sides, [1]) is None
    assert control.final(sides, [1], [3.0, 9.0, 5.0], [1]).winners == [2]  # the best seat still in
    assert control.final(sides, [1], [7.0, 9.0, 7.0], [1]).winners == [0, 2]  # tie among those still in
    assert control.final(sides, [1], [9.0, 2.0, 5.0], [0]).winners == [0]


def test_timekeeper_applies_the_match_policy() -> None:
    meta = MatchMeta(game="clash", status="active", to_act=[0], sides=[[0], [1]], takeover_level="hard",
                     seats=[Seat(kind="human", token_hash="x"), Seat(kind="human", token_hash="y")],
                     clock=clocks.advance(clocks.initial(clocks.parse({"mode": "per_move", "seconds": 1}), 2),
                                          timed=[True, True], to_act=[0], mover=None, version=0, now=1.0))
    taken = timed_out(meta, 0)
    assert taken.status == "active" and control.bot_plays(taken.seats[0])
    assert control.bot_level(taken, 0) == "hard"
    assert taken.clock is not None and taken.clock.seats[0].since is None
    assert meta.clock is not None
    meta = msgspec.structs.replace(meta, clock=msgspec.structs.replace(meta.clock, on_timeout="forfeit"))
    lost = timed_out(meta, 0)
    assert lost.status == "finished" and lost.to_act == []
    assert lost.outcome == Outcome(ended_by="forfeit", winners=[1], forfeited=[0], scores=None, ratings=None)
    assert control.bot_level(lost, 0) == control.FORFEIT_LEVEL
