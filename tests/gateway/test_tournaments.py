"""Tournaments end to end, over real HTTP and a real Redis (one server and a cluster: ``own_redis_url``), with the
real rules service, a real bot worker, the timekeeper driving the tournaments and the real webhook worker.

The players are played by the test as an app's users would be: the backend (the tenant's key) takes each
player's seat with ``POST /v1/matches/{id}/join {"player"}``, and the player plays with the seat's token. Time is
moved with the timekeeper's ``run_once(now=...)`` (a no-show's clock, an arena's window), never slept out; no
assertion is about how long anything took.

Games: one CLASH game (``match: single``, beginner tiles, 20 placements at most: about a dozen moves); a bye's
bot is the rung closest to a new player's rating on the shipped ladder, a no-show's the takeover level set here
(``novice``).
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from loadtests.audit import audit_match
from services import redisconn
from services.bots.worker import Worker
from services.core.competition import ratings, skill
from services.core.config import Config
from services.core.tenancy import quotas, tenants
from services.core.tournaments import machine, store
from services.core.tournaments.matches import TournamentMatches
from services.core.tournaments.runner import TournamentRunner
from services.timekeeper.keeper import Timekeeper
from services.webhooks.worker import WebhookWorker
from tests.core.test_tournament_logic import repeats_before_due
from tooling.stack import ROOT

from .conftest import Api, GatewayServer, RulesProcess, bot_worker_thread, gunicorn_gateway, start_gateway
from .test_backends import as_key, new_key
from .test_webhooks import ALLOW, LOCAL, Receiver

GAME = "clash"
OPTIONS = {"match": "single", "beginner": True, "max_moves": 20}
#: A human's move is never slept out: this clock runs out only when the test moves time past it.
PER_MOVE_S = 120
CLOCK = {"mode": "per_move", "seconds": PER_MOVE_S, "on_timeout": "bot"}
TOURNAMENT_EVENTS = ["tournament.started", "round.started", "round.finished", "tournament.finished"]


@dataclass
class Site:
    """A tenant's backend and its players on one gateway, with the workers a deployment runs."""

    api: Api
    key: str
    redis_url: str
    keeper: Timekeeper | None = None
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    tokens: dict[tuple[str, str], str] = field(default_factory=dict)

    @property
    def headers(self) -> dict[str, str]:
        return as_key(self.key)

    def create(self, **settings: Any) -> dict[str, Any]:
        body = {"name": "Friday CLASH", "game": GAME, "players_per_table": 2, "options": OPTIONS, "clock": CLOCK,
                "takeover_level": "novice", "rated": True, "starts_at": time.time(), **settings}
        made = self.api.post("/v1/tournaments", headers=self.headers, json=body)
        assert made.status_code == 201, made.text
        return dict(made.json())

    def register(self, tournament_id: str, players: list[str]) -> None:
        for player in players:
            reply = self.api.post(f"/v1/tournaments/{tournament_id}/players", headers=self.headers,
                                  json={"player": player})
            assert reply.status_code == 201, reply.text

    def view(self, tournament_id: str) -> dict[str, Any]:
        reply = self.api.get(f"/v1/tournaments/{tournament_id}", headers=self.headers)
        assert reply.status_code == 200, reply.text
        return dict(reply.json())

    def token(self, match_id: str, player: str) -> str:
        """The player's seat token: the backend takes the seat kept for them with its key, once (a table is shown
        only once its match is made: the join never answers 404)."""
        if (match_id, player) not in self.tokens:
            joined = self.api.post(f"/v1/matches/{match_id}/join", headers=self.headers, json={"player": player})
            assert joined.status_code == 200, joined.text
            self.tokens[(match_id, player)] = joined.json()["token"]
        return self.tokens[(match_id, player)]

    def play(self, match_id: str, player: str) -> bool:
        """One move of ``player`` in their match if they have a decision (a random legal one); whether they did.
        A seat a bot took over is reclaimed first (it never is here: the clocks only run out when moved)."""
        token = self.token(match_id, player)
        status = self.api.get(f"/v1/matches/{match_id}?include=legal_moves", token).json()
        seat = status["you"]
        if status["status"] != "active" or seat not in status["to_act"] or not status["legal_moves"]:
            return False
        moved = self.api.post(f"/v1/matches/{match_id}/moves", token,
                              json={"move": self.rng.choice(status["legal_moves"]), "version": status["version"]})
        assert moved.status_code in (200, 409), moved.text  # 409: a bot or a clock moved the match meanwhile
        return True

    def play_round(self, tournament_id: str, absent: set[str], drive: Callable[[], None],
                   until: Callable[[dict[str, Any]], bool], limit: int = 3000) -> dict[str, Any]:
        """Play every present player's decisions, driving the tournament between passes, until ``until(view)``.
        A table waiting only on an absent player (all else quiet) gets the no-show's clock run out."""
        for _ in range(limit):
            drive()
            view = self.view(tournament_id)
            if until(view):
                return view
            moved = False
            waiting_on_absent = []
            for table in view["tables"]:
                if table["status"] != "running" or not table["match_id"]:
                    continue
                for seat in table["seats"]:
                    player = seat.get("player")
                    if player is None:
                        continue
                    if player in absent:
                        waiting_on_absent.append(table["match_id"])
                    elif self.play(table["match_id"], player):
                        moved = True
            running = [t for t in view["tables"] if t["status"] == "running"]
            if not moved and waiting_on_absent and len(running) == len(set(waiting_on_absent)):
                # only the no-shows' tables are left, and nobody else has a decision: their clocks run out
                assert self.keeper is not None
                self.keeper.run_once(now=time.time() + PER_MOVE_S + 1)
            elif not moved:
                time.sleep(0.05)  # a bot is thinking
        raise AssertionError(f"the tournament did not get there: {self.view(tournament_id)}")


@pytest.fixture()
def gateway(own_redis_url: str, rules: RulesProcess) -> Iterator[GatewayServer]:
    server = start_gateway(own_redis_url, rules.port, anonymous=False, webhook_allow_private=LOCAL)
    yield server
    server.stop()


@pytest.fixture()
def bots(own_redis_url: str, rules: RulesProcess) -> Iterator[Worker]:
    with bot_worker_thread(own_redis_url, rules.port, "tournament-bots") as worker:
        yield worker


def keeper_of(redis_url: str, rules: RulesProcess) -> Timekeeper:
    """A timekeeper that drives the tournaments at every ``run_once`` (no pause between looks)."""
    return Timekeeper(redis_url, lease_s=5, competitions_every_s=0,
                      config=Config(redis_url=redis_url, rules_addr=f"127.0.0.1:{rules.port}"))


def deliver_until(redis_url: str, receiver: Receiver, done: Callable[[dict[str, dict[str, Any]]], bool],
                  now: float | None = None) -> list[dict[str, Any]]:
    """Run the webhook worker (at ``now``) until the receiver holds what ``done`` asks for, at most 100 rounds; the
    deliveries in the order of their event ids (``<tournament>:<n>``)."""
    worker = WebhookWorker(redis_url, allow=ALLOW, backoff_s=0.1)
    for _ in range(100):
        worker.run_once(now)
        if done(receiver.delivered()):
            break
        time.sleep(0.05)
    return sorted(receiver.delivered().values(), key=lambda d: int(d["body"]["id"].split(":")[1]))


@pytest.fixture()
def receiver() -> Iterator[Receiver]:
    from tooling.stack import free_port

    rec = Receiver(free_port())
    rec.start()
    yield rec
    rec.stop()


def test_a_wall_clock_stepped_back_does_not_pause_the_tournaments_or_the_idle_sweep(
        own_redis_url: str, rules: RulesProcess) -> None:
    """The timekeeper's cadences were kept in wall-clock time: once it had run at a ``now`` later than the clock
    (an NTP step back; this file's no-show test moves time on), tournaments were not driven again until the
    clock caught up. The swiss test below sat 120 s on a round whose matches had all finished."""
    keeper = Timekeeper(own_redis_url, config=Config(redis_url=own_redis_url, rules_addr=f"127.0.0.1:{rules.port}"))
    ran: list[tuple[str, float]] = []
    keeper.run_competitions = lambda now: ran.append(("competitions", now))  # type: ignore[method-assign]
    keeper.sweep_idle = lambda now: ran.append(("idle", now)) or 0  # type: ignore[method-assign]
    now = time.time()
    keeper.run_once(now=now + PER_MOVE_S + 1)
    keeper.run_once(now=now)  # the clock is back where it was
    keeper.run_once(now=now + 0.01)  # and the usual cadence holds from there
    assert ran == [("idle", now + PER_MOVE_S + 1), ("competitions", now + PER_MOVE_S + 1),
                   ("idle", now), ("competitions", now)]


def test_a_swiss_of_nine_runs_three_rounds_with_a_bot_in_the_bye_and_a_no_show_taken_over(
        gateway: GatewayServer, own_redis_url: str, rules: RulesProcess, bots: Worker, receiver: Receiver) -> None:
    site = Site(Api(gateway.url), new_key(own_redis_url, "acme")["key"], own_redis_url)
    site.keeper = keeper_of(own_redis_url, rules)
    hook = site.api.post("/v1/webhooks", headers=site.headers, json={
        "url": f"http://127.0.0.1:{receiver.port}/", "events": TOURNAMENT_EVENTS}).json()
    receiver.secret = hook["secret"]
    tournament = site.create(format={"kind": "swiss", "rounds": 3, "round_s": 3600})
    tid = tournament["id"]
    players = [f"u{i}" for i in range(1, 10)]
    site.register(tid, players)
    held = redisconn.connect(own_redis_url).zcard(quotas.keys(tenants.owner_of("acme"))[0])
    assert held == -(-256 // 2)  # the tournament holds one of the tenant's matches a table (max_players 256)

    site.keeper.run_once()
    first = site.view(tid)
    assert first["status"] == "running" and first["round"]["n"] == 1 and len(first["tables"]) == 5
    byes = [t for t in first["tables"] if any("bot" in s for s in t["seats"])]
    # one bot fills the odd seat: the rung whose ladder rating is closest to its player's (new players: 25)
    rung = skill.closest_level(ratings.shipped()[GAME]["ratings"], 25.0)
    assert len(byes) == 1 and byes[0]["seats"][1] == {"bot": rung}
    # the no-show: a player of a table of two humans
    pair = next(t for t in first["tables"] if all("player" in s for s in t["seats"]))
    no_show = pair["seats"][0]["player"]
    no_show_match = pair["match_id"]

    def drive() -> None:
        assert site.keeper is not None
        site.keeper.run_once()

    final = site.play_round(tid, {no_show}, drive, lambda v: v["status"] == "finished")
    assert final["rounds_played"] == 3 and final["round"]["n"] == 3
    assert redisconn.connect(own_redis_url).zcard(quotas.keys(tenants.owner_of("acme"))[0]) == 0  # given back
    rows = {s["player"]: s for s in final["standings"]}
    assert sorted(rows) == players
    assert rows[no_show]["absent"] and rows[no_show]["points"] == 0 and rows[no_show]["played"] == 1
    assert all(rows[p]["played"] == 3 and not rows[p]["absent"] for p in players if p != no_show)
    ranked = [(s["points"], s["tiebreak"]) for s in final["standings"]]
    assert ranked == sorted(ranked, reverse=True) and final["standings"][0]["rank"] == 1

    # the no-show's seat: timed out and played by a bot to the end; the match was rated, the no-show was not
    match = site.api.get(f"/v1/matches/{no_show_match}", headers=site.headers).json()
    seat = next(s for s in match["seats"] if s.get("player") == no_show)
    assert match["status"] == "finished" and seat["control"] == "bot"
    replay = site.api.get(f"/v1/matches/{no_show_match}/replay", headers=site.headers).json()
    assert any(e["kind"] == "timeout" and e["seat"] == seat["seat"] for e in replay["log"])
    assert [r["player"] for r in match["outcome"]["ratings"]] != [] and no_show not in {
        r["player"] for r in match["outcome"]["ratings"]}
    assert site.api.get(f"/v1/players/{no_show}/ratings", headers=site.headers).json()["ratings"] == {}
    board = site.api.get(f"/v1/leaderboards/{GAME}", headers=site.headers, params={"limit": 20}).json()
    assert sorted(e["player"] for e in board["entries"]) == sorted(p for p in players if p != no_show)

    # the tournament's webhooks, delivered by the webhook worker, signed, in order
    got = deliver_until(own_redis_url, receiver, lambda delivered: len(delivered) >= 8)
    assert [d["event"] for d in got] == ["tournament.started", "round.started", "round.finished", "round.started",
                                         "round.finished", "round.started", "round.finished", "tournament.finished"]
    assert {d["body"]["data"]["tournament_id"] for d in got} == {tid}
    # event ids as the guide says: <tournament>:<n>, in order; the delivery (one a hook) adds the hook's id
    assert [d["body"]["id"] for d in got] == [f"{tid}:{n}" for n in range(1, 9)]
    assert [d["id"] for d in got] == [f"{tid}:{n}-{hook['id']}" for n in range(1, 9)]
    assert got[-1]["body"]["data"]["standings"] == final["standings"]
    assert [t["match_id"] for t in got[1]["body"]["data"]["tables"]] == [t["match_id"] for t in first["tables"]]

    # the history (GET /rounds, two pages): every round's tables as round.started named them, each scored, and
    # the standings' points are the sum of the tables' points
    pages = [site.api.get(f"/v1/tournaments/{tid}/rounds", headers=site.headers, params={"limit": 2}).json()]
    assert pages[0]["next"] == 2
    pages.append(site.api.get(f"/v1/tournaments/{tid}/rounds", headers=site.headers,
                              params={"after": 2, "limit": 2}).json())
    assert pages[1]["next"] is None
    history = [r for page in pages for r in page["rounds"]]
    announced = [d["body"]["data"] for d in got if d["event"] == "round.started"]
    assert [r["n"] for r in history] == [a["round"] for a in announced] == [1, 2, 3]
    for past, said in zip(history, announced, strict=True):
        assert [(t["table"], t["match_id"], t["seats"]) for t in past["tables"]] == [
            (t["table"], t["match_id"], t["seats"]) for t in said["tables"]]
        assert past["finished_at"] is not None
        assert all(t["status"] == "finished" and t["result"] and t["finished_at"] for t in past["tables"])
    scored: dict[str, float] = {}
    for past in history:
        for table in past["tables"]:
            for player, points in table["result"]["points"].items():
                scored[player] = scored.get(player, 0.0) + points
    assert scored == pytest.approx({s["player"]: s["points"] for s in final["standings"]})

    # the pairings (round.started names each round's tables): no two humans met twice; one bye in round 1 (9
    # players), none after the no-show was marked absent (8 left); the no-show was never paired again
    rounds = [d["body"]["data"]["tables"] for d in got if d["event"] == "round.started"]
    met = [frozenset(s["player"] for s in t["seats"] if "player" in s) for r in rounds for t in r]
    assert len([m for m in met if len(m) == 2]) == len({m for m in met if len(m) == 2})
    assert [sum(any("bot" in s for s in t["seats"]) for t in r) for r in rounds] == [1, 0, 0]
    assert all(no_show not in m for m in met[len(rounds[0]):])
    # the tie-break is Buchholz as the guide says: per round, the mean final points of the player's human
    # opponents, or (a round against bots only: the bye) the player's own final points
    final_points = {s["player"]: s["points"] for s in final["standings"]}
    for player in players:
        buchholz = 0.0
        for tables in rounds:
            table = next((t for t in tables if any(s.get("player") == player for s in t["seats"])), None)
            if table is None:
                continue
            others = [s["player"] for s in table["seats"] if s.get("player") not in (None, player)]
            buchholz += sum(final_points[o] for o in others) / len(others) if others else final_points[player]
        assert rows[player]["tiebreak"] == pytest.approx(buchholz), player

    # another tenant's key sees none of it: its board of the game is its own (empty), acme's players unranked
    rival = as_key(new_key(own_redis_url, "rival")["key"])
    assert site.api.get(f"/v1/leaderboards/{GAME}", headers=rival).json()["entries"] == []
    ranked_player = board["entries"][0]["player"]
    for path in (f"/v1/leaderboards/{GAME}/players/{ranked_player}", f"/v1/tournaments/{tid}",
                 f"/v1/tournaments/{tid}/players/{ranked_player}"):
        assert site.api.get(path, headers=rival).status_code == 404, path
    assert site.api.get(f"/v1/leaderboards/{GAME}/players/{ranked_player}/around",
                        headers=rival).json()["entries"] == []
    assert site.api.get(f"/v1/players/{ranked_player}/ratings", headers=rival).json()["ratings"] == {}


class JoinEveryTableShown(TournamentMatches):
    """The match core as a runner uses it, looking first at the tournament as a backend does: before each match the
    runner makes (the moment a table whose match is not made yet could be shown), every table the tournament shows
    is joined by its players with the tenant's key, as the guide says to."""

    def __init__(self, core: Any, site: Site, tournament_id: str) -> None:
        super().__init__(core)
        self.site, self.tournament_id, self.made = site, tournament_id, 0

    def create_match(self, spec: Any) -> str:
        join_every_table_shown(self.site, self.tournament_id)
        # the round's webhook is not handed over either while a table of it has no match yet
        TournamentRunner(self.client, self).forward(self.tournament_id)
        waiting = [event["type"] for _, _, event in store.outbox(self.client, self.tournament_id)]
        assert "round.started" in waiting, waiting
        self.made += 1
        return super().create_match(spec)


def join_every_table_shown(site: Site, tournament_id: str, join: bool = True) -> int:
    """Join every human seat of every table the tournament shows (and its players' own views show), or (``join``
    False: a seat is joined once) read its match; how many tables."""
    tables = site.view(tournament_id)["tables"]
    for table in tables:
        read = site.api.get(f"/v1/matches/{table['match_id']}", headers=site.headers)
        assert read.status_code == 200, read.text
        for seat in table["seats"]:
            if "player" in seat:
                mine = site.api.get(f"/v1/tournaments/{tournament_id}/players/{seat['player']}", headers=site.headers)
                assert mine.json()["table"]["match_id"] == table["match_id"], mine.text
                if join:
                    assert site.token(table["match_id"], seat["player"])  # 200, never 404 match_not_found
    return len(tables)


@pytest.mark.parametrize("fmt", [{"kind": "swiss", "rounds": 2, "round_s": 3600},
                                 {"kind": "arena", "duration_s": 600, "grace_s": 0, "bot_after_s": 60}],
                         ids=["swiss", "arena"])
def test_a_table_is_shown_only_once_its_match_can_be_joined(gateway: GatewayServer, own_redis_url: str,
                                                              rules: RulesProcess, fmt: dict[str, Any]) -> None:
    """Issue 49: as soon as a tournament showed a running table, joining its match could answer 404
    ``match_not_found`` (a round was saved with its tables, then their matches made): a backend that did not retry
    left its player a no-show. Now a table is shown (the tournament, the player's view, ``round.started``) once its
    match is made: looked at before every match the runner makes, and by backends polling meanwhile."""
    site = Site(Api(gateway.url), new_key(own_redis_url, "acme")["key"], own_redis_url)
    keeper = keeper_of(own_redis_url, rules)
    tid = site.create(format=fmt)["id"]
    players = [f"p{i}" for i in range(12)]
    site.register(tid, players)
    prober = JoinEveryTableShown(keeper.core, site, tid)
    keeper.tournaments = TournamentRunner(keeper.redis, prober, lease_s=5)
    stop, failures = threading.Event(), []

    def backend() -> None:  # another backend process, polling the tournament while its round is made
        other = Site(Api(gateway.url), site.key, own_redis_url)
        try:
            while not stop.is_set():
                join_every_table_shown(other, tid, join=False)
        except AssertionError as failed:
            failures.append(failed)

    pollers = [threading.Thread(target=backend) for _ in range(2)]
    for poller in pollers:
        poller.start()
    try:
        keeper.run_once()
    finally:
        stop.set()
        for poller in pollers:
            poller.join(60)
    assert not failures, failures[0]
    assert join_every_table_shown(site, tid) == 6  # the round (the wave) is made: 12 players, 2 a table
    assert prober.made == 6  # it looked before each of them


def test_a_tournament_holds_its_tables_quota_so_a_round_is_made_whole(gateway: GatewayServer, own_redis_url: str,
                                                                         rules: RulesProcess) -> None:
    """Found probing as a backend near its quota: a round's second table was refused by the tenant's `matches`
    quota, which its own matches had filled meanwhile. The tournament listed the table as running under an id
    that was no match (404 to its players) and the runner failed on it every 15 s. Now the tournament holds one
    match of the quota per table from its creation (429 when there is no room), its tables take nothing more,
    and its end gives the room back."""
    site = Site(Api(gateway.url), new_key(own_redis_url, "small", "matches=3")["key"], own_redis_url)
    keeper = keeper_of(own_redis_url, rules)
    tid = site.create(max_players=4, format={"kind": "swiss", "rounds": 1, "round_s": 3600})["id"]  # holds 2
    second = site.api.post("/v1/tournaments", headers=site.headers, json={
        "name": "two", "game": GAME, "players_per_table": 2, "options": OPTIONS, "clock": CLOCK,
        "starts_at": time.time(), "max_players": 4, "format": {"kind": "swiss", "rounds": 1}})
    assert second.status_code == 429 and second.json()["error"]["code"] == "quota_exceeded", second.text

    def own_match() -> int:
        return site.api.post("/v1/matches", headers=site.headers, json={"game": GAME, "players": 2}).status_code

    assert own_match() == 201  # the third of three
    assert own_match() == 429
    site.register(tid, ["ann", "ben", "cat", "dan"])
    for _ in range(20):
        keeper.run_once()
        view = site.view(tid)
        if view["tables"] and all(t["match_id"] for t in view["tables"]):
            break
    assert len(view["tables"]) == 2
    for table in view["tables"]:  # each table is a real match its players can join
        assert site.api.get(f"/v1/matches/{table['match_id']}", headers=site.headers).status_code == 200
        assert site.token(table["match_id"], table["seats"][0]["player"])
    assert own_match() == 429  # still full: the tournament's room is its own
    assert site.api.post(f"/v1/tournaments/{tid}/cancel", headers=site.headers, json={}).status_code == 200
    assert own_match() == 201  # the cancel gave the room back


def test_a_cancelled_tournament_aborts_its_running_tables_and_rates_nothing(
        gateway: GatewayServer, own_redis_url: str, rules: RulesProcess, bots: Worker, receiver: Receiver) -> None:
    site = Site(Api(gateway.url), new_key(own_redis_url, "acme")["key"], own_redis_url)
    keeper = site.keeper = keeper_of(own_redis_url, rules)
    hook = site.api.post("/v1/webhooks", headers=site.headers, json={
        "url": f"http://127.0.0.1:{receiver.port}/", "events": ["tournament.finished"]}).json()
    receiver.secret = hook["secret"]
    tid = site.create(format={"kind": "swiss", "rounds": 3, "round_s": 3600})["id"]
    players = ["ann", "ben", "cat", "dan", "eve"]
    site.register(tid, players)
    keeper.run_once()
    paired = site.play_round(tid, set(), keeper.run_once, lambda v: all(t["match_id"] for t in v["tables"]), limit=200)
    # a move or so by each present player, the matches still running
    for table in paired["tables"]:
        for seat in table["seats"]:
            if "player" in seat:
                site.play(table["match_id"], seat["player"])
    matches = [t["match_id"] for t in paired["tables"]]
    assert len(matches) == 3  # two tables of two and the bye

    cancelled = site.api.post(f"/v1/tournaments/{tid}/cancel", headers=site.headers, json={})
    assert cancelled.status_code == 200, cancelled.text
    view = cancelled.json()
    assert view["status"] == "cancelled" and view["reason"] and view["ended_at"] is not None
    again = site.api.post(f"/v1/tournaments/{tid}/cancel", headers=site.headers, json={})
    assert again.status_code == 409 and again.json()["error"]["code"] == "tournament_over"
    keeper.run_once()  # nothing more happens to a cancelled tournament
    assert site.view(tid)["status"] == "cancelled" and site.view(tid)["rounds_played"] <= 1

    for match_id in matches:  # each table's match ended without a result, never rated
        match = site.api.get(f"/v1/matches/{match_id}", headers=site.headers).json()
        assert match["status"] == "finished" and match["outcome"]["ended_by"] == "aborted", match
        assert match["outcome"]["ratings"] is None and match["outcome"]["winners"] == []
    # the unfinished tables are drawn: 0.5 to each player playing their own seat
    assert {s["player"]: s["points"] for s in view["standings"]} == dict.fromkeys(players, 0.5)
    for player in players:
        assert site.api.get(f"/v1/players/{player}/ratings", headers=site.headers).json()["ratings"] == {}
    assert site.api.get(f"/v1/leaderboards/{GAME}", headers=site.headers).json()["entries"] == []
    # a cancelled tournament takes no registration either
    late = site.api.post(f"/v1/tournaments/{tid}/players", headers=site.headers, json={"player": "fay"})
    assert late.status_code == 409, late.text

    [finished] = deliver_until(own_redis_url, receiver, bool)
    assert finished["event"] == "tournament.finished" and finished["body"]["data"]["cancelled"] is True


def test_an_arena_pairs_waves_during_its_window_and_ends_the_tables_still_playing_after_it(
        gateway: GatewayServer, own_redis_url: str, rules: RulesProcess, bots: Worker) -> None:
    site = Site(Api(gateway.url), new_key(own_redis_url, "acme")["key"], own_redis_url)
    keeper = site.keeper = keeper_of(own_redis_url, rules)
    start = time.time()
    tid = site.create(format={"kind": "arena", "duration_s": 600, "grace_s": 0, "bot_after_s": 60})["id"]
    players = ["ann", "ben", "cat", "dan"]
    site.register(tid, players)
    now = [start]

    def drive() -> None:
        now[0] = max(now[0], time.time())
        keeper.run_once(now=now[0])

    first = site.play_round(tid, set(), drive, lambda v: v["round"] is not None and len(v["tables"]) == 2)
    first_tables = {frozenset(s["player"] for s in t["seats"]) for t in first["tables"]}
    first_matches = [t["match_id"] for t in first["tables"]]

    def first_wave_over(_: dict[str, Any]) -> bool:
        return all(site.api.get(f"/v1/matches/{m}", headers=site.headers).json()["status"] == "finished"
                   for m in first_matches)

    # every table of the first wave finishes (nobody drives the arena meanwhile, so all four wait together) ...
    site.play_round(tid, set(), lambda: None, first_wave_over)
    # ... and the next wave pairs them again at once, none against the opponent of their last table
    second = site.play_round(tid, set(), drive, lambda v: v["round"]["n"] >= 2 and v["tables"]
                             and all(t["match_id"] for t in v["tables"]))
    again = {frozenset(s["player"] for s in t["seats"]) for t in second["tables"] if t["status"] == "running"}
    assert again and not again & first_tables  # never straight back against the last table
    running = [t["match_id"] for t in second["tables"] if t["status"] == "running"]

    now[0] = start + 601  # the window is over (no grace): tables still playing are ended, the arena is over
    drive()
    final = site.view(tid)
    assert final["status"] == "finished" and final["tables"] == []
    assert {s["player"] for s in final["standings"]} == set(players)
    assert all(s["played"] >= 1 for s in final["standings"])
    for match_id in running:  # ended without a result: unrated, a draw for the players playing their seats
        match = site.api.get(f"/v1/matches/{match_id}", headers=site.headers).json()
        assert match["status"] == "finished" and match["outcome"]["ended_by"] == "aborted", match
        assert match["outcome"]["ratings"] is None


def test_an_arena_run_by_two_timekeepers_pairs_no_table_straight_back(
        gateway: GatewayServer, own_redis_url: str, rules: RulesProcess, bots: Worker) -> None:
    """Issue 49's arena (4 players, ``bot_after_s`` 4): the pair that finished first was paired again at once while
    the other table still played. Here two timekeepers drive it at once (time moved on half a second a pass), one
    table's players answer slowly so tables finish at different times, and every table the arena made is held to
    the guide's rule: a repeat only once another table finished since, or after ``REPEAT_WAIT_S``."""
    site = Site(Api(gateway.url), new_key(own_redis_url, "acme")["key"], own_redis_url)
    keepers = [keeper_of(own_redis_url, rules) for _ in range(2)]
    tid = site.create(format={"kind": "arena", "duration_s": 600, "grace_s": 20, "bot_after_s": 4})["id"]
    site.register(tid, ["ar1", "ar2", "ar3", "ar4"])
    offset, slow = [0.0], "ar4"

    def drive() -> None:
        offset[0] += 0.5
        at = time.time() + offset[0]
        both = [threading.Thread(target=k.run_once, kwargs={"now": at}) for k in keepers]
        for thread in both:
            thread.start()
        for thread in both:
            thread.join(60)

    for tick in range(400):
        drive()
        view = site.view(tid)
        for table in view["tables"]:
            for seat in table["seats"]:
                player = seat.get("player")
                if player is not None and (player != slow or tick % 6 == 0):
                    site.play(table["match_id"], player)
        made = machine.tables(store.load(redisconn.connect(own_redis_url), tid)[1])  # type: ignore[index]
        if sum(1 for t in made if t.get("result")) >= 12:
            break
    doc = store.load(redisconn.connect(own_redis_url), tid)[1]  # type: ignore[index]
    assert sum(1 for t in machine.tables(doc) if t.get("result")) >= 12
    assert repeats_before_due(doc) == []


def test_a_timekeeper_killed_mid_round_loses_nothing(
        gateway: GatewayServer, own_redis_url: str, rules: RulesProcess, bots: Worker) -> None:
    site = Site(Api(gateway.url), new_key(own_redis_url, "acme")["key"], own_redis_url)

    def timekeeper() -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "services.timekeeper.keeper", "--metrics-port", "0",
                                 "--lease-s", "1", "--poll-s", "0.05"], cwd=ROOT,
                                env={**os.environ, "REDIS_URL": own_redis_url,
                                     "MEEPLE_RULES_ADDR": f"127.0.0.1:{rules.port}"},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    tid = site.create(format={"kind": "swiss", "rounds": 2, "round_s": 3600})["id"]
    players = ["ann", "ben", "cat", "dan"]
    site.register(tid, players)
    first = timekeeper()
    try:
        for _ in range(600):  # the running timekeeper pairs round 1
            paired = site.view(tid)
            # both tables: each is shown once its match is made (issue 49), and the other process makes them in turn
            tables = paired["tables"]
            if paired["round"] is not None and len(tables) == 2 and all(t["match_id"] for t in tables):
                break
            time.sleep(0.05)
        # one table is played to its end while the other's players hold (so round 1 cannot end meanwhile)
        held = {s["player"] for s in paired["tables"][1]["seats"]}
        mid_round = site.play_round(tid, held, lambda: None, lambda v: any(
            t["status"] == "finished" for t in v["tables"]))
        first.send_signal(signal.SIGKILL)  # mid-round: one table finished, the other still playing
        first.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
    assert mid_round["round"]["n"] == 1
    # the rest of round 1 is played with no timekeeper at all: the finished match wakes nobody yet
    site.play_round(tid, set(), lambda: None, lambda v: all(
        site.api.get(f"/v1/matches/{t['match_id']}", headers=site.headers).json()["status"] == "finished"
        for t in v["tables"]))
    second = timekeeper()
    try:
        final = site.play_round(tid, set(), lambda: None, lambda v: v["status"] == "finished")
    finally:
        second.terminate()
        second.wait(10)
    assert final["rounds_played"] == 2
    assert sorted(s["player"] for s in final["standings"]) == players
    assert all(s["played"] == 2 for s in final["standings"])
    assert sum(s["points"] for s in final["standings"]) == 4  # 2 tables x 2 rounds, a point each: nothing lost
    # no match was made twice: the tenant's matches are exactly the four tables'
    made = site.api.get("/v1/matches", headers=site.headers, params={"limit": 100}).json()["matches"]
    assert len(made) == 4


def _kill_hard(proc: subprocess.Popen[bytes]) -> None:
    """``kill -9`` of a process and its children (a gunicorn master's workers die with it, not after it)."""
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    for pid in [int(c) for c in children] + [proc.pid]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    proc.wait(10)


def test_a_gateway_and_a_bot_worker_killed_mid_round_lose_nothing(own_redis_url: str, rules: RulesProcess) -> None:
    """A tournament survives a restart of any process: the timekeeper's is above; here the gateway (gunicorn, as
    deployed) and the bot worker playing the bye die by ``kill -9`` mid-round, and a new gateway and a new worker
    finish the tournament with the same seat tokens: every table played to its end once, none made twice."""
    key = new_key(own_redis_url, "acme")["key"]
    keeper = keeper_of(own_redis_url, rules)
    env = {**os.environ, "REDIS_URL": own_redis_url, "MEEPLE_RULES_ADDR": f"127.0.0.1:{rules.port}"}

    def bot_worker(name: str, claim_idle_ms: int) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "services.bots.worker", "--metrics-port", "0", "--name", name,
                                 "--claim-idle-ms", str(claim_idle_ms)], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    players = ["ann", "ben", "cat"]  # three: a table of two and a bye against a bot each round
    doomed = bot_worker("doomed", 600_000)
    try:
        with gunicorn_gateway(own_redis_url, rules.port, MEEPLE_ANONYMOUS="0") as first:
            site = Site(Api(first.url), key, own_redis_url, keeper=keeper)
            tid = site.create(format={"kind": "swiss", "rounds": 2, "round_s": 3600})["id"]
            site.register(tid, players)
            paired = site.play_round(tid, set(), keeper.run_once, lambda v: v["round"] is not None and all(
                t["match_id"] for t in v["tables"]))
            bye = next(t for t in paired["tables"] if any("bot" in seat for seat in t["seats"]))
            held = {seat["player"] for seat in bye["seats"] if "player" in seat}  # the bye's table waits on them
            mid_round = site.play_round(tid, held, keeper.run_once, lambda v: any(
                t["status"] == "finished" for t in v["tables"]))
            assert mid_round["round"]["n"] == 1 and any(t["status"] == "running" for t in mid_round["tables"])
            _kill_hard(first.proc)
            _kill_hard(doomed)
        with gunicorn_gateway(own_redis_url, rules.port, MEEPLE_ANONYMOUS="0") as second:
            site.api = Api(second.url)  # the players come back through another gateway, with the same tokens
            rescuer = bot_worker("rescuer", 500)  # takes over the dead worker's unfinished job
            try:
                final = site.play_round(tid, set(), keeper.run_once, lambda v: v["status"] == "finished")
            finally:
                rescuer.terminate()
                rescuer.wait(10)
            made = site.api.get("/v1/matches", headers=site.headers, params={"limit": 100}).json()["matches"]
    finally:
        if doomed.poll() is None:
            doomed.kill()
    assert final["rounds_played"] == 2
    assert sorted(s["player"] for s in final["standings"]) == players
    assert all(s["played"] == 2 for s in final["standings"])
    assert len(made) == 4 and all(m["status"] == "finished" for m in made)  # 2 tables x 2 rounds, each once
    client = redisconn.connect(own_redis_url)
    assert all(audit_match(client, m["id"]).ok for m in made)  # each replays from its seed and log to what is stored


def test_registering_twice_answers_the_same_registration_and_brings_back_only_the_absent(
        gateway: GatewayServer, own_redis_url: str, rules: RulesProcess) -> None:
    """Issue 49: registering a registered player answered 201 with a new registration, and the docs did not say what
    that meant. A registered player's registration comes back unchanged (a retry is safe, even after a Swiss
    started); an absent player registering again is brought back with a new one."""
    site = Site(Api(gateway.url), new_key(own_redis_url, "acme")["key"], own_redis_url)
    tid = site.create(starts_at=time.time() + 3600,
                      format={"kind": "arena", "duration_s": 600, "grace_s": 0, "bot_after_s": 60})["id"]

    def register(player: str) -> dict[str, Any]:
        reply = site.api.post(f"/v1/tournaments/{tid}/players", headers=site.headers, json={"player": player})
        assert reply.status_code == 201, reply.text
        return dict(reply.json())

    first = register("ann")
    assert register("ann") == first and site.view(tid)["registered"] == 1
    swiss = site.create(starts_at=time.time(), format={"kind": "swiss", "rounds": 1, "round_s": 3600})["id"]
    site.register(swiss, ["ann", "ben"])
    keeper_of(own_redis_url, rules).run_once()
    assert site.view(swiss)["status"] == "running"
    again = site.api.post(f"/v1/tournaments/{swiss}/players", headers=site.headers, json={"player": "ann"})
    assert again.status_code == 201 and again.json()["player"] == "ann"  # a late retry: the same registration
    late = site.api.post(f"/v1/tournaments/{swiss}/players", headers=site.headers, json={"player": "cat"})
    assert late.status_code == 409 and late.json()["error"]["code"] == "registration_closed"
    # an absent player (a no-show) registering again comes back with a new registration
    client = redisconn.connect(own_redis_url)
    version, doc, _ = store.load(client, tid)  # type: ignore[misc]
    store.save(client, tid, version, {**doc, "absent": {"ann": time.time()}}, [])
    back = register("ann")
    assert back["registered_at"] > first["registered_at"] and register("ann") == back


def test_another_tenant_sees_none_of_it(gateway: GatewayServer, own_redis_url: str, rules: RulesProcess) -> None:
    site = Site(Api(gateway.url), new_key(own_redis_url, "acme")["key"], own_redis_url)
    other = as_key(new_key(own_redis_url, "rival")["key"])
    tid = site.create(starts_at=time.time() + 3600, format={"kind": "swiss", "rounds": 3, "round_s": 3600})["id"]
    site.register(tid, ["ann", "ben"])
    for method, path, body in (("GET", f"/v1/tournaments/{tid}", None),
                               ("POST", f"/v1/tournaments/{tid}/players", {"player": "eve"}),
                               ("DELETE", f"/v1/tournaments/{tid}/players/ann", None),
                               ("GET", f"/v1/tournaments/{tid}/players/ann", None),
                               ("POST", f"/v1/tournaments/{tid}/cancel", None)):
        reply = site.api.call(method, path, headers=other, **({"json": body} if body is not None else {}))
        assert reply.status_code == 404 and reply.json()["error"]["code"] == "tournament_not_found", (path, reply.text)
    assert site.api.get("/v1/tournaments", headers=other).json()["tournaments"] == []
    # the owner's tournament is untouched by all that
    view = site.view(tid)
    assert view["status"] == "registering" and view["registered"] == 2
    # a board is the tenant's own: the rival's season and settings change nothing of acme's
    created = site.api.post(f"/v1/leaderboards/{GAME}/seasons", headers=other, json={
        "name": "s1", "starts_at": time.time(), "ends_at": time.time() + 3600})
    assert created.status_code == 201, created.text
    assert site.api.get(f"/v1/leaderboards/{GAME}/seasons", headers=site.headers).json()["seasons"] == []
    assert site.api.get(f"/v1/leaderboards/{GAME}/seasons/s1", headers=site.headers).status_code == 404


# -- The guide's complete example (docs/guides/leaderboards-tournaments.md), run as written ---------------------
# Its ``bash`` block is run by bash with curl and jq against the real gateway; only its first line's address and key
# and the hook's URL (the real local receiver instead of ``api.example.com``) are replaced. Then time is moved past
# ``starts_at`` as the timekeeper sees it, and what the page says happens next is checked.

GUIDE = ROOT / "docs" / "guides" / "leaderboards-tournaments.md"
EXAMPLE_HEADING = "### A complete example (Swiss, 9 players, 2 per table)"
DOC_HOOK = "https://api.example.com/meeple"


def guide_example() -> str:
    """The bash block under the example's heading, exactly as the page shows it."""
    text = GUIDE.read_text()
    after = text.split(EXAMPLE_HEADING, 1)[1]
    match = re.search(r"```bash\n(.*?)```", after, re.S)
    assert match, "the guide's example lost its bash block"
    return match.group(1)


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")), reason="the guide's example needs curl and jq")
def test_the_guides_swiss_example_runs_as_written_and_its_first_round_starts_with_a_bye_bot(
        gateway: GatewayServer, own_redis_url: str, rules: RulesProcess, receiver: Receiver) -> None:
    script = guide_example()
    first, rest = script.split("\n", 1)
    assert first.startswith("API=http://127.0.0.1:8080/v1; KEY=mk_..."), first
    assert DOC_HOOK in rest
    key = new_key(own_redis_url, "acme")["key"]
    hook_url = f"http://127.0.0.1:{receiver.port}/"
    program = (f"set -euo pipefail\nAPI={gateway.url}/v1; KEY={key}\n"
               + rest.replace(DOC_HOOK, hook_url) + '\necho "TID=$TID"\n')
    ran = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    tid = ran.stdout.strip().rsplit("TID=", 1)[1]
    assert tid and tid != "null", ran.stdout

    site = Site(Api(gateway.url), key, own_redis_url)
    hooks = site.api.get("/v1/webhooks", headers=site.headers).json()
    hook = next(h for h in hooks["webhooks"] if h["url"] == hook_url)
    assert sorted(hook["events"]) == ["round.finished", "round.started", "tournament.finished", "tournament.started"]
    view = site.view(tid)
    assert view["status"] == "registering" and view["game"] == "clash" and view["rated"] is True
    assert view["format"]["kind"] == "swiss" and view["format"]["rounds"] == 3
    assert sorted(p["player"] for p in view["standings"]) == sorted(f"u{i}" for i in range(1, 10))

    # At starts_at (ten minutes on): the timekeeper starts it, the webhook worker delivers what it announced.
    later = view["starts_at"] + 1
    keeper_of(own_redis_url, rules).run_once(now=later)
    started = site.view(tid)
    assert started["status"] == "running" and len(started["tables"]) == 5
    # the hook's signing secret, shown once: in what the example's first curl printed
    receiver.secret = re.search(r'"secret":\s*"([^"]+)"', ran.stdout).group(1)  # type: ignore[union-attr]
    got = deliver_until(own_redis_url, receiver,
                        lambda delivered: any(d["event"] == "round.started" for d in delivered.values()), now=later)
    assert [d["event"] for d in got] == ["tournament.started", "round.started"], got
    assert all(d["valid"] for d in got)
    rounds = [d for d in got if d["event"] == "round.started"]
    data = rounds[0]["body"]["data"]
    assert data["tournament_id"] == tid and data["round"] == 1 and len(data["tables"]) == 5
    byes = [t for t in data["tables"] if any("bot" in seat for seat in t["seats"])]
    assert len(byes) == 1 and all(t["match_id"] for t in data["tables"])
