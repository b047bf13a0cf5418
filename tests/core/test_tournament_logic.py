"""Tournament logic as pure functions: pairing, table points, bot fairness, standings, the state machine.

The matches here are results the test writes (the stronger player wins), fed to :func:`machine.advance` as the
runner would feed the core's; what is tested is the machine's own logic, not any core."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import pytest

from services.core.competition import ratings, skill
from services.core.errors import Kind
from services.core.tournaments import machine, pairing, scoring
from services.core.tournaments.port import MatchResult, SeatResult

LADDER = ratings.shipped()["fierce-women"]["ratings"]
CLOCK = {"mode": "fischer", "base_s": 300, "increment_s": 5, "on_timeout": "bot"}
T0 = 1_000_000.0


def tournament(fmt: dict[str, Any], per_table: int = 2, **extra: Any) -> dict[str, Any]:
    body = {"name": "Friday", "game": "fierce-women", "players_per_table": per_table, "clock": CLOCK,
            "starts_at": T0, "format": fmt, **extra}
    return machine.new("tid", "acme", machine.settings(body, T0 - 10), T0 - 10)


def registered(names: list[str], at: float = T0 - 5) -> dict[str, dict[str, Any]]:
    return {n: {"registered_at": at, "withdrawn": False} for n in names}


MU = {f"p{i}": 20.0 + 2 * i for i in range(12)}


def ratings_of(names: list[str]) -> Mapping[str, float]:
    return {n: MU.get(n, 25.0) for n in names}


def strength(seat: Mapping[str, Any]) -> float:
    return MU[seat["player"]] if seat.get("player") else float(LADDER[seat["bot"]]["mu"])


def result_of(table: Mapping[str, Any], no_shows: set[str] = frozenset(), bot_wins: bool = False) -> MatchResult:  # type: ignore[assignment]
    """The stronger seat wins (a no-show's seat is played by a bot: as strong as that bot, or the winner if
    ``bot_wins``)."""
    seats = table["seats"]

    def power(seat: Mapping[str, Any]) -> float:
        if seat.get("player") in no_shows:
            return 1e9 if bot_wins else float(LADDER["normal"]["mu"])
        return strength(seat)

    order = sorted(range(len(seats)), key=lambda s: -power(seats[s]))
    ranks = [0] * len(seats)
    for place, s in enumerate(order, 1):
        ranks[s] = place
    return MatchResult(table["match_id"], "finished", "game", tuple(ranks), tuple(
        SeatResult(s.get("player"), bot=not s.get("player"), bot_played=s.get("player") in no_shows,
                   acted=s.get("player") not in no_shows) for s in seats))


def created(doc: dict[str, Any]) -> dict[str, Any]:
    """What the runner does with new tables: each gets a match (its id made from its key)."""
    return machine.with_matches(doc, {t["key"]: f"m-{t['key']}" for t in machine.pending_creates(doc)})


def step(doc: dict[str, Any], players: dict[str, dict[str, Any]], now: float,
         results: dict[str, MatchResult] | None = None) -> machine.Step:
    out = machine.advance(doc, players, results or {}, ratings_of, LADDER, now)
    out.doc = created(out.doc)
    return out


def finish_round(doc: dict[str, Any], no_shows: set[str] = frozenset(), bot_wins: bool = False  # type: ignore[assignment]
                 ) -> dict[str, MatchResult]:
    return {t["match_id"]: result_of(t, no_shows, bot_wins) for t in machine.tables(doc) if not t.get("result")}


# -- table points ----------------------------------------------------------------------------------------------
def test_tied_seats_share_the_mean_of_the_places_they_span() -> None:
    assert scoring.places((1, 2, 2, 3)) == [1.0, 2.5, 2.5, 4.0]
    assert scoring.places((2, 1)) == [2.0, 1.0]
    assert scoring.places((1, 1)) == [1.5, 1.5]


def _seats(*players: str | None, bot_played: tuple[str, ...] = (),
           idle: tuple[str, ...] = ()) -> tuple[SeatResult, ...]:
    return tuple(SeatResult(p, p is None, p in bot_played, p not in idle) for p in players)


def test_table_points_are_a_match_worth_one_whatever_the_table_size() -> None:
    two = scoring.table_result(MatchResult("m", "finished", "game", (1, 2), _seats("a", "b")))
    assert two["points"] == {"a": 1.0, "b": 0.0}
    draw = scoring.table_result(MatchResult("m", "finished", "game", (1, 1), _seats("a", "b")))
    assert draw["points"] == {"a": 0.5, "b": 0.5}
    four = scoring.table_result(MatchResult("m", "finished", "game", (1, 2, 3, 4), _seats("a", "b", "c", "d")))
    assert four["points"] == pytest.approx({"a": 1.0, "b": 2 / 3, "c": 1 / 3, "d": 0.0}, abs=1e-6)
    tied = scoring.table_result(MatchResult("m", "finished", "game", (1, 1, 2, 3), _seats("a", "b", "c", "d")))
    assert tied["points"] == pytest.approx({"a": 5 / 6, "b": 5 / 6, "c": 1 / 3, "d": 0.0}, abs=1e-6)


def test_a_bots_win_is_never_a_humans_win_over_a_human() -> None:
    """b never came: the bot playing b's seat won. b gets nothing (and is a no-show), a lost to a bot."""
    res = scoring.table_result(MatchResult("m", "finished", "game", (2, 1), _seats("a", "b", bot_played=("b",),
                                                                                  idle=("b",))))
    assert res["points"] == {"a": 0.0, "b": 0.0} and res["no_shows"] == ["b"]
    # c played, timed out near the end and never came back: the bot finished first for them; still 0, not absent
    res = scoring.table_result(MatchResult("m", "finished", "game", (1, 2, 3), _seats("c", "d", None,
                                                                                     bot_played=("c",))))
    assert res["points"] == {"c": 0.0, "d": 0.5} and res["no_shows"] == [] and res["bot_played"] == ["c"]
    # a bye bot (a bot seat) beaten by its human: the human earns the win
    res = scoring.table_result(MatchResult("m", "finished", "game", (1, 2), _seats("e", None)))
    assert res["points"] == {"e": 1.0}


def test_a_match_that_ended_without_a_result_is_a_draw_for_those_playing_their_own_seat() -> None:
    for result in (MatchResult("m", "gone", seats=_seats("a", "b")),
                   MatchResult("m", "finished", "abandoned", None, _seats("a", "b", bot_played=("b",)))):
        out = scoring.table_result(result)
        assert out["points"]["a"] == 0.5 and out["points"]["b"] == (0.0 if result.status == "finished" else 0.5)


def test_buchholz_sums_the_opponents_points_and_counts_a_bye_as_ones_own() -> None:
    tables = [
        {"seats": [{"player": "a"}, {"player": "b"}], "result": {"points": {"a": 1.0, "b": 0.0}}},
        {"seats": [{"player": "c"}, {"bot": "easy"}], "result": {"points": {"c": 1.0}}},
        {"seats": [{"player": "a"}, {"player": "c"}], "result": {"points": {"a": 0.5, "c": 0.5}}},
        {"seats": [{"player": "b"}, {"bot": "easy"}], "result": {"points": {"b": 1.0}}},
    ]
    rows = {s.player: s for s in scoring.standings("swiss", registered(["a", "b", "c"]), tables, {})}
    assert (rows["a"].points, rows["a"].tiebreak) == (1.5, 1.0 + 1.5)  # b's 1 + c's 1.5
    assert (rows["c"].points, rows["c"].tiebreak) == (1.5, 1.5 + 1.5)  # a bye: its own 1.5, then a's 1.5
    assert (rows["b"].points, rows["b"].tiebreak) == (1.0, 1.5 + 1.0)  # a's 1.5, then a bye: its own 1.0
    assert [s.player for s in scoring.standings("swiss", registered(["a", "b", "c"]), tables, {})] == ["c", "a", "b"]


# -- pairing ------------------------------------------------------------------------------------------------------
def entrants(names: list[str], score: Mapping[str, float] | None = None,
             met: Mapping[str, Mapping[str, int]] | None = None, byes: Mapping[str, int] | None = None
             ) -> list[pairing.Entrant]:
    return [pairing.Entrant(n, (score or {}).get(n, 0.0), MU.get(n, 25.0), (met or {}).get(n, {}),
                            (byes or {}).get(n, 0)) for n in names]


def test_swiss_pairs_by_score_then_by_rating() -> None:
    names = [f"p{i}" for i in range(8)]
    score = {"p0": 1, "p2": 1, "p5": 1, "p7": 1}
    tables = pairing.swiss(entrants(names, score), 2, LADDER)
    pairs = {frozenset(t.players) for t in tables}
    assert pairs == {frozenset({"p7", "p5"}), frozenset({"p2", "p0"}), frozenset({"p6", "p4"}),
                     frozenset({"p3", "p1"})}


def test_swiss_avoids_a_repeat_even_across_score_groups() -> None:
    names = ["p0", "p1", "p2", "p3"]
    met = {"p3": {"p2": 1}, "p2": {"p3": 1}}
    tables = pairing.swiss(entrants(names, {"p3": 1, "p2": 1}, met), 2, LADDER)
    assert {frozenset(t.players) for t in tables} == {frozenset({"p3", "p1"}), frozenset({"p2", "p0"})}


def test_an_odd_player_out_gets_a_bot_of_the_nearest_rung_and_byes_rotate() -> None:
    names = [f"p{i}" for i in range(5)]
    (bye,) = [t for t in pairing.swiss(entrants(names), 2, LADDER) if t.bots]
    assert bye.players == ("p0",)  # the lowest ranked
    assert bye.bots == (skill.closest_level(LADDER, MU["p0"]),)
    (again,) = [t for t in pairing.swiss(entrants(names, byes={"p0": 1}), 2, LADDER) if t.bots]
    assert again.players == ("p1",)  # p0 had one already


def test_four_seat_tables_of_nine_players_get_one_bot_each() -> None:
    names = [f"p{i}" for i in range(9)]
    tables = pairing.swiss(entrants(names), 4, LADDER)
    assert sorted(len(t.players) for t in tables) == [3, 3, 3]
    assert all(len(t.bots) == 1 for t in tables)
    for t in tables:
        mean = sum(MU[p] for p in t.players) / 3
        assert t.bots == (skill.closest_level(LADDER, mean),)
    assert sorted(p for t in tables for p in t.players) == sorted(names)


def test_arena_waits_for_a_full_table_until_bot_after_s() -> None:
    waiting = entrants(["p0", "p1", "p2"])
    tables = pairing.arena(waiting, 2, LADDER, {"p0": 5, "p1": 5, "p2": 5}, bot_after_s=30)
    assert len(tables) == 1 and not tables[0].bots
    tables = pairing.arena(waiting, 2, LADDER, {"p0": 40, "p1": 5, "p2": 5}, bot_after_s=30)
    seated = [p for t in tables for p in t.players]
    assert sorted(seated) == ["p0", "p1", "p2"] and sum(len(t.bots) for t in tables) == 1


# -- the state machine -------------------------------------------------------------------------------------------
def met_pairs(doc: Mapping[str, Any]) -> list[frozenset[str]]:
    out = []
    for t in machine.tables(doc):
        humans = [s["player"] for s in t["seats"] if s.get("player")]
        out += [frozenset(p) for p in itertools.combinations(humans, 2)]
    return out


def test_a_nine_player_swiss_runs_three_rounds_with_a_bot_bye_and_a_no_show_taken_over() -> None:
    """The issue's scenario, as the machine sees it: 9 players, 2 per table, 3 rounds; p4 never shows up, so a
    bot plays their seat in round 1; they are then absent and not paired again."""
    doc = tournament({"kind": "swiss", "rounds": 3, "round_s": 3600})
    players = registered([f"p{i}" for i in range(9)])
    first = step(doc, players, T0 - 1)
    assert first.doc["status"] == "registering" and first.due == T0 and not first.events
    s = step(doc, players, T0)
    kinds = [e["type"] for _, e in s.events]
    assert kinds == ["tournament.started", "round.started"]
    doc, events, now = s.doc, list(s.events), T0
    byes = []
    for rnd in range(1, 4):
        current = doc["rounds"][-1]
        humans = sorted(p["player"] for t in current["tables"] for p in t["seats"] if p.get("player"))
        byes += [t["seats"][0]["player"] for t in current["tables"] if any(s.get("bot") for s in t["seats"])]
        assert ("p4" in humans) == (rnd == 1)
        now += 600
        s = step(doc, players, now, finish_round(doc, no_shows={"p4"}))
        doc = s.doc
        events += s.events
    assert doc["status"] == "finished" and s.due is None
    assert [e["type"] for _, e in events] == [
        "tournament.started", "round.started", "round.finished", "round.started", "round.finished",
        "round.started", "round.finished", "tournament.finished"]
    assert [i for i, _ in events] == [f"tid:{n}" for n in range(1, 9)]
    assert byes == ["p0"]  # round 1: 9 players, the lowest ranked gets the bot; rounds 2-3: 8 (p4 absent), none
    pairs = met_pairs(doc)
    assert len(pairs) == len(set(pairs))  # nobody met twice
    final = events[-1][1]["standings"]
    assert final[0]["player"] == "p8"  # the strongest won everything
    row = {r["player"]: r for r in final}
    assert row["p4"]["points"] == 0 and row["p4"]["absent"] and row["p4"]["played"] == 1
    assert row["p8"]["points"] == 3 and [r["rank"] for r in final] == sorted(r["rank"] for r in final)


def test_a_rounds_deadline_scores_unfinished_tables_as_draws_and_ends_their_matches() -> None:
    doc = tournament({"kind": "swiss", "rounds": 2, "round_s": 600})
    players = registered(["p0", "p1", "p2", "p3"])
    doc = step(doc, players, T0).doc
    tables = doc["rounds"][0]["tables"]
    done = {tables[0]["match_id"]: result_of(tables[0])}
    doc = step(doc, players, T0 + 100, done).doc
    assert doc["rounds"][0]["finished_at"] is None  # one table still playing
    s = step(doc, players, T0 + 600)
    late = s.doc["rounds"][0]["tables"][1]
    assert late["result"]["ended_by"] == "deadline" and set(late["result"]["points"].values()) == {0.5}
    assert [t["key"] for t in machine.pending_aborts(s.doc)] == [late["key"]]
    assert len(s.doc["rounds"]) == 2  # round 2 paired at once
    assert not machine.pending_aborts(machine.with_aborted(s.doc, {late["key"]}))


def test_a_no_show_plays_again_once_registered_again() -> None:
    doc = tournament({"kind": "swiss", "rounds": 3, "round_s": 3600})
    players = registered(["p0", "p1", "p2", "p3"])
    doc = step(doc, players, T0).doc
    doc = step(doc, players, T0 + 10, finish_round(doc, no_shows={"p1"})).doc
    assert "p1" not in [s.get("player") for t in doc["rounds"][1]["tables"] for s in t["seats"]]
    players["p1"] = {"registered_at": T0 + 20, "withdrawn": False}
    doc = step(doc, players, T0 + 30, finish_round(doc)).doc
    assert "p1" in [s.get("player") for t in doc["rounds"][2]["tables"] for s in t["seats"]]


def test_too_few_players_cancel_the_tournament_at_its_start() -> None:
    s = step(tournament({"kind": "swiss", "rounds": 3}), registered(["p0"]), T0)
    assert s.doc["status"] == "cancelled" and s.due is None
    assert [e["type"] for _, e in s.events] == ["tournament.finished"] and s.events[0][1]["cancelled"]


def test_an_arena_requeues_players_after_each_match_and_stops_pairing_at_its_end() -> None:
    doc = tournament({"kind": "arena", "duration_s": 600, "grace_s": 120, "bot_after_s": 30})
    players = registered(["p0", "p1", "p2", "p3", "p4"])
    s = step(doc, players, T0)
    doc = s.doc
    assert len(machine.tables(doc)) == 2 and s.due == T0 + machine.ARENA_WAVE_S  # p0 waits (odd one out)
    doc = step(doc, players, T0 + 31).doc  # p0 waited past bot_after_s: a bot plays them
    bot_table = machine.tables(doc)[-1]
    assert [s.get("player") for s in bot_table["seats"]] == ["p0", None]
    first = machine.tables(doc)[0]
    doc = step(doc, players, T0 + 100, {first["match_id"]: result_of(first)}).doc
    assert len(doc["rounds"]) == 2  # the two who finished are held apart: nobody else is free
    doc = step(doc, players, T0 + 100 + machine.REPEAT_WAIT_S).doc
    waves = doc["rounds"]
    assert len(waves) == 3  # the repeat is due: they play again
    assert sorted(s["player"] for s in waves[-1]["tables"][0]["seats"]) == sorted(
        s["player"] for s in first["seats"])
    s = step(doc, players, T0 + 600, finish_round(doc))  # the window closes as the last matches finish
    assert s.doc["status"] == "finished" and len(s.doc["rounds"]) == 3
    assert s.events[-1][1]["type"] == "tournament.finished"
    assert sum(r["points"] for r in s.events[-1][1]["standings"]) > 0


def humans_of(table: Mapping[str, Any]) -> frozenset[str]:
    return frozenset(s["player"] for s in table["seats"] if s.get("player"))


def repeats_before_due(doc: Mapping[str, Any]) -> list[str]:
    """Every arena table that seats two players of one earlier table before their repeat was due (the guide's rule:
    another table, neither of theirs, finished since both were freed, or both waited ``REPEAT_WAIT_S``)."""
    found = []
    done = [t for t in machine.tables(doc) if t.get("result")]
    for table in machine.tables(doc):
        made = table["created_at"]
        for a, b in itertools.combinations(sorted(humans_of(table)), 2):
            last = {p: max((t for t in done if p in humans_of(t) and t["finished_at"] <= made),
                           key=lambda t: t["finished_at"], default=None) for p in (a, b)}
            if last[a] is None or last[a] is not last[b]:
                continue  # their last tables were not one table
            freed = max(t["finished_at"] for t in last.values() if t is not None)
            moved_on = any(freed <= t["finished_at"] <= made and not {a, b} & humans_of(t) for t in done)
            if not moved_on and made - freed < machine.REPEAT_WAIT_S:
                found.append(f"{table['key']}: {a} and {b} straight back")
    return found


def test_an_arena_never_pairs_a_table_straight_back_until_the_repeat_is_due() -> None:
    """Issue 49: the pair that finished first was paired again at once while the other table still played (ar1 met
    ar3 four times in a row). Now a repeat waits until another table finishes (then everyone is paired afresh) or
    both waited REPEAT_WAIT_S; bots, once due, are new opponents."""
    fmt = {"kind": "arena", "duration_s": 600, "grace_s": 120, "bot_after_s": 60}
    players = registered(["p0", "p1", "p2", "p3"])
    doc = step(tournament(fmt), players, T0).doc
    first, second = machine.tables(doc)
    held = step(doc, players, T0 + 20, {first["match_id"]: result_of(first)}).doc
    for later in (1, 5, machine.REPEAT_WAIT_S - 1):
        assert len(step(held, players, T0 + 20 + later).doc["rounds"]) == 1  # the first pair waits
    # the other table finishes: all four are paired, none against their last opponent
    mixed = step(held, players, T0 + 23, {second["match_id"]: result_of(second)}).doc
    new = [humans_of(t) for t in mixed["rounds"][-1]["tables"]]
    assert len(new) == 2 and not set(new) & {humans_of(first), humans_of(second)}
    # nobody else comes: the repeat is due after REPEAT_WAIT_S
    again = step(held, players, T0 + 20 + machine.REPEAT_WAIT_S).doc
    assert [humans_of(t) for t in again["rounds"][-1]["tables"]] == [humans_of(first)]
    assert repeats_before_due(mixed) == repeats_before_due(again) == []
    # bots after bot_after_s are new opponents: each of the pair at a table of their own
    quick = step(tournament({**fmt, "bot_after_s": 4}), players, T0).doc
    first = machine.tables(quick)[0]
    quick = step(quick, players, T0 + 20, {first["match_id"]: result_of(first)}).doc
    bots = step(quick, players, T0 + 24).doc["rounds"][-1]["tables"]
    assert len(bots) == 2 and {humans_of(t) for t in bots} == {frozenset([p]) for p in humans_of(first)}
    assert all(any("bot" in s for s in t["seats"]) for t in bots)


def test_a_long_arena_of_uneven_tables_never_repeats_before_due() -> None:
    """Many waves of five players, tables finishing at staggered times: no table breaks the rule."""
    fmt = {"kind": "arena", "duration_s": 600, "grace_s": 120, "bot_after_s": 30}
    players = registered(["p0", "p1", "p2", "p3", "p4"])
    doc, now = tournament(fmt), T0
    for tick in range(200):
        running = [t for t in machine.tables(doc) if not t.get("result")]
        done = {t["match_id"]: result_of(t) for i, t in enumerate(running) if (tick + i) % 3 == 0}
        doc = step(doc, players, now, done).doc
        now += 2.5
    assert len(machine.tables(doc)) > 40
    assert repeats_before_due(doc) == []


def test_an_arena_ends_matches_still_running_after_its_grace() -> None:
    doc = tournament({"kind": "arena", "duration_s": 600, "grace_s": 120, "bot_after_s": 30})
    players = registered(["p0", "p1"])
    doc = step(doc, players, T0).doc
    s = step(doc, players, T0 + 650)
    assert s.doc["status"] == "running" and s.due == T0 + 650 + machine.POLL_S
    s = step(s.doc, players, T0 + 720)
    assert s.doc["status"] == "finished" and machine.pending_aborts(s.doc)


def test_cancel_keeps_the_standings_so_far_and_ends_running_matches() -> None:
    doc = tournament({"kind": "swiss", "rounds": 3, "round_s": 3600})
    players = registered(["p0", "p1", "p2", "p3"])
    doc = step(doc, players, T0).doc
    doc = step(doc, players, T0 + 10, finish_round(doc)).doc
    s = machine.cancel(doc, players, {}, T0 + 20)
    assert s.doc["status"] == "cancelled" and len(machine.pending_aborts(s.doc)) == 2
    assert s.events[-1][1]["type"] == "tournament.finished" and s.events[-1][1]["cancelled"]
    with pytest.raises(machine.TournamentError):
        machine.cancel(s.doc, players, {}, T0 + 30)


def test_each_new_table_asks_the_core_for_one_match_with_its_key_clock_and_bot_rung() -> None:
    doc = tournament({"kind": "swiss", "rounds": 1, "round_s": 3600}, per_table=4)
    out = machine.advance(doc, registered([f"p{i}" for i in range(6)]), {}, ratings_of, LADDER, T0)
    specs = [machine.spec(out.doc, t) for t in machine.pending_creates(out.doc)]
    assert [s.key for s in specs] == ["tid:r1t1", "tid:r1t2"]
    for spec, table in zip(specs, machine.pending_creates(out.doc), strict=True):
        assert spec.clock == CLOCK and spec.rated and spec.tag == "tournament:tid"
        assert spec.takeover_level == table["level"]  # auto: the rung closest to the table
        assert [s.bot_level for s in spec.seats if s.bot_level] == [table["level"]]
        assert len(spec.seats) == 4


@pytest.mark.parametrize(("change", "needle"), [
    ({"clock": None}, "clock"), ({"clock": {"mode": "none"}}, "clock"), ({"players_per_table": 7}, "players"),
    ({"format": {"kind": "swiss", "rounds": 0}}, "rounds"), ({"format": {"kind": "knockout"}}, "format"),
    ({"takeover_level": "godlike"}, "takeover"), ({"surprise": 1}, "unknown"), ({"starts_at": T0 - 3600}, "starts"),
])
def test_settings_refuse_what_cannot_run(change: dict[str, Any], needle: str) -> None:
    body = {"name": "x", "game": "clash", "players_per_table": 2, "clock": CLOCK, "starts_at": T0,
            "format": {"kind": "swiss", "rounds": 3}, **change}
    with pytest.raises(machine.TournamentError) as err:
        machine.settings(body, T0)
    assert err.value.kind is Kind.MALFORMED and needle in err.value.message


def test_a_players_view_links_to_their_own_current_match() -> None:
    doc = tournament({"kind": "swiss", "rounds": 2, "round_s": 3600})
    players = registered(["p0", "p1", "p2"])
    doc = step(doc, players, T0).doc
    mine = machine.player_view(doc, players, "p2")
    assert mine["table"]["match_id"].startswith("m-r1t") and mine["standing"]["points"] == 0
    assert "p2" in [s.get("player") for s in mine["table"]["seats"]]
    with pytest.raises(machine.TournamentError) as err:
        machine.player_view(doc, players, "stranger")
    assert err.value.code == "player_not_registered"
    view = machine.view(doc, players)
    assert view["round"]["n"] == 1 and len(view["tables"]) == 2 and len(view["standings"]) == 3
