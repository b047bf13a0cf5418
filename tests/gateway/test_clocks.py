"""Seat clocks, bot takeover, reclaim, leave, presence and rematch, end to end.

Real HTTP, a real redis-server of the test's own, a real gRPC rules server, real bot workers and real
timekeepers (threads, or processes where a test kills one), with clocks of about a second.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest

from services import redisconn
from services.bots.worker import Worker
from services.core.record.store import MatchStore, deadline_keys
from services.timekeeper.keeper import Timekeeper

from .conftest import Api, GatewayServer, RulesProcess, start_gateway

CLASH_SINGLE = {"game": "clash", "players": 2, "options": {"match": "single"}}


def wait_until(predicate: Callable[[], Any], timeout: float = 60.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what} not reached within {timeout:.0f} s")


@dataclass
class Table:
    """One isolated deployment: gateway, bot workers and timekeepers on a Redis of the test's own."""

    redis_url: str
    rules: RulesProcess
    gateway: GatewayServer
    api: Api
    threads: list[tuple[Any, threading.Thread]] = field(default_factory=list)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def _thread(self, runner: Any) -> Any:
        thread = threading.Thread(target=runner.run, daemon=True)
        thread.start()
        self.threads.append((runner, thread))
        return runner

    def bot_worker(self) -> Worker:
        return self._thread(Worker(self.redis_url, f"127.0.0.1:{self.rules.port}", name=f"w{len(self.threads)}",
                                   claim_idle_ms=5_000))

    def timekeeper(self) -> Timekeeper:
        return self._thread(Timekeeper(self.redis_url, lease_s=2.0, poll_s=0.05))

    def timekeeper_process(self) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, "-m", "services.timekeeper.keeper", "--metrics-port", "0",
                                 "--poll-s", "0.02", "--lease-s", "2"], env={**os.environ, "REDIS_URL": self.redis_url})
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        for runner, _ in self.threads:
            runner.stopping.set()
        for _, thread in self.threads:
            thread.join(15)
        self.gateway.stop()

    # -- client helpers ----------------------------------------------------------------------------
    def create(self, seats: list[dict[str, Any]], clock: dict[str, Any] | None = None,
               game: dict[str, Any] | None = None, **extra: Any) -> tuple[str, list[str | None]]:
        """A match whose human seats are all joined; returns the id and the tokens (None for bots)."""
        body = {**(game or CLASH_SINGLE), "seats": seats, "join": seats[0]["kind"] == "human", **extra}
        if clock is not None:
            body["clock"] = clock
        created = self.api.post("/v1/matches", json=body)
        assert created.status_code == 201, created.text
        doc = created.json()
        tokens: list[str | None] = [doc.get("token")] + [None] * (len(seats) - 1)
        for seat in range(1, len(seats)):
            if seats[seat]["kind"] == "human":
                joined = self.api.post(f"/v1/matches/{doc['id']}/join", json={"seat": seat})
                assert joined.status_code == 200, joined.text
                tokens[seat] = joined.json()["token"]
        return doc["id"], tokens

    def status(self, match_id: str, token: str | None = None) -> dict[str, Any]:
        reply = self.api.get(f"/v1/matches/{match_id}", token)
        assert reply.status_code == 200, reply.text
        doc: dict[str, Any] = reply.json()
        return doc

    def log(self, match_id: str) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = self.api.get(f"/v1/matches/{match_id}/replay").json()["log"]
        return entries

    def finished(self, match_id: str, timeout: float = 120.0) -> dict[str, Any]:
        doc: dict[str, Any] = wait_until(lambda: (s := self.status(match_id))["status"] == "finished" and s,
                                         timeout, "the end of the match")
        return doc


@pytest.fixture()
def table(own_redis_url: str, rules: RulesProcess) -> Iterator[Table]:
    gateway = start_gateway(own_redis_url, rules.port, presence_s=1.0)
    t = Table(own_redis_url, rules, gateway, Api(gateway.url))
    yield t
    t.stop()


def timeouts(log: list[dict[str, Any]], seat: int | None = None) -> list[dict[str, Any]]:
    return [e for e in log if e["kind"] == "timeout" and (seat is None or e["seat"] == seat)]


# -- takeover on timeout ---------------------------------------------------------------------------


def test_a_silent_human_is_replaced_by_a_bot_and_the_match_finishes(table: Table) -> None:
    table.bot_worker()
    table.timekeeper()
    match_id, _ = table.create([{"kind": "human"}, {"kind": "bot", "level": "easy"}],
                               {"mode": "per_move", "seconds": 1}, takeover_level="easy")
    end = table.finished(match_id)
    log = table.log(match_id)
    assert len(timeouts(log)) == 1 and timeouts(log)[0]["seat"] == 0
    assert any(e["kind"] == "move" and e["seat"] == 0 and e["by"] == "bot" for e in log)
    assert end["seats"][0]["control"] == "bot" and not end["seats"][0]["forfeited"]
    assert end["outcome"]["ended_by"] == "game" and end["result"] is not None


def test_the_owner_reclaims_mid_game_and_plays_on(table: Table) -> None:
    bots = table.bot_worker()
    table.timekeeper()
    match_id, tokens = table.create([{"kind": "human"}, {"kind": "bot", "level": "easy"}],
                                    {"mode": "per_move", "seconds": 1.5}, {"game": "fierce-women", "players": 2},
                                    takeover_level="easy")  # (a long game: a single CLASH can end in a few moves)
    token = tokens[0]
    # Silent until the bot has played at least once for the seat; then the bots pause, or on a busy machine
    # they could play the whole match (both seats are theirs) before the owner is back.
    wait_until(lambda: any(e["kind"] == "move" and e["seat"] == 0 and e["by"] == "bot" for e in table.log(match_id)),
               60, "a bot move for the silent seat")
    bots.stopping.set()
    moved = table.api.post(f"/v1/matches/{match_id}/moves", token, json={"move": {"type": "x"}, "version": 0})
    assert moved.status_code == 409 and moved.json()["error"]["code"] == "seat_under_bot_control"
    reclaimed = table.api.post(f"/v1/matches/{match_id}/seats/0/reclaim", token, json={})
    assert reclaimed.status_code == 200, reclaimed.text
    assert reclaimed.json()["seats"][0]["control"] == "human" and reclaimed.json()["view"] is not None
    assert reclaimed.json()["status"] == "active"
    table.bot_worker()  # the other seat's bot plays on
    reclaim_version = reclaimed.json()["version"]
    status, human_moves = reclaimed.json(), 0
    while status["status"] == "active":
        if 0 in status["to_act"]:
            legal = table.api.get(f"/v1/matches/{match_id}/legal-moves", token).json()
            reply = table.api.post(f"/v1/matches/{match_id}/moves", token,
                                   json={"move": legal["moves"][0], "version": legal["version"]})
            assert reply.status_code == 200, reply.text
            status, human_moves = reply.json(), human_moves + 1
        else:
            status = table.api.get(f"/v1/matches/{match_id}/events?after={status['version']}&wait=10", token).json()
    later = [e for e in table.log(match_id) if e["version"] > reclaim_version]
    assert human_moves > 0
    assert not [e for e in later if e["kind"] == "move" and e["seat"] == 0 and e["by"] == "bot"]
    assert len(timeouts(table.log(match_id), 0)) == 1  # the one before the reclaim


def test_reclaim_is_for_the_owner_only(table: Table) -> None:
    match_id, tokens = table.create([{"kind": "human"}, {"kind": "human"}])
    other = table.api.post(f"/v1/matches/{match_id}/seats/0/reclaim", tokens[1], json={})
    assert other.status_code == 403 and other.json()["error"]["code"] == "not_your_seat"
    own = table.api.post(f"/v1/matches/{match_id}/seats/0/reclaim", tokens[0], json={})
    assert own.status_code == 200 and own.json()["seats"][0]["control"] == "human"  # nothing to take back
    assert table.api.post(f"/v1/matches/{match_id}/seats/0/reclaim", json={}).status_code == 401


# -- the timekeeper --------------------------------------------------------------------------------


def test_a_killed_and_restarted_timekeeper_still_fires_the_pending_deadline_exactly_once(table: Table) -> None:
    client = redisconn.connect(table.redis_url)
    keeper = table.timekeeper_process()
    match_id, _ = table.create([{"kind": "human"}, {"kind": "human"}], {"mode": "per_move", "seconds": 2})
    assert client.zcard(deadline_keys(match_id)[0]) == 1
    keeper.send_signal(signal.SIGKILL)
    keeper.wait(10)
    time.sleep(2.5)  # the deadline passes while no timekeeper runs
    assert timeouts(table.log(match_id)) == []
    table.timekeeper_process()
    wait_until(lambda: timeouts(table.log(match_id)), 30, "the timeout")
    time.sleep(1.0)
    assert len(timeouts(table.log(match_id))) == 1


def test_a_deadline_leased_by_a_timekeeper_that_died_fires_when_the_lease_runs_out(table: Table) -> None:
    store = MatchStore(redisconn.connect(table.redis_url), 60, 60)
    match_id, _ = table.create([{"kind": "human"}, {"kind": "human"}], {"mode": "per_move", "seconds": 1})
    # A timekeeper takes the deadline (as if it were due) and dies before acting on it.
    assert len(store.claim_due(time.time() + 5, lease_s=1.5)) == 1
    table.timekeeper()
    wait_until(lambda: timeouts(table.log(match_id)), 30, "the timeout")
    time.sleep(0.5)
    assert len(timeouts(table.log(match_id))) == 1


def test_two_timekeepers_never_act_twice_on_one_deadline(table: Table) -> None:
    table.timekeeper_process()
    table.timekeeper_process()
    matches = [table.create([{"kind": "human"}, {"kind": "human"}], {"mode": "per_move", "seconds": 1})[0]
               for _ in range(8)]
    for match_id in matches:
        wait_until(lambda m=match_id: timeouts(table.log(m)), 30, "a timeout")  # type: ignore[misc]
    time.sleep(1.0)
    for match_id in matches:
        assert len(timeouts(table.log(match_id))) == 1


# -- forfeit ---------------------------------------------------------------------------------------


def test_forfeit_in_a_two_sided_game_ends_it_and_the_opponent_wins(table: Table) -> None:
    table.timekeeper()
    match_id, _ = table.create([{"kind": "human"}, {"kind": "human"}],
                               {"mode": "per_move", "seconds": 1, "on_timeout": "forfeit"})
    loser = table.status(match_id)["to_act"][0]
    end = table.finished(match_id, 30)
    assert end["outcome"] == {"ended_by": "forfeit", "winners": [1 - loser], "forfeited": [loser], "scores": None,
                              "ratings": None}
    assert end["seats"][loser]["forfeited"] and end["result"] is None and end["to_act"] == []


def test_forfeit_with_three_players_plays_on_and_the_forfeited_seat_cannot_win(table: Table) -> None:
    table.bot_worker()
    table.timekeeper()
    fierce = {"game": "fierce-women", "players": 3, "options": {"action_cards": True}}
    match_id, tokens = table.create([{"kind": "human"}, {"kind": "bot", "level": "easy"},
                                     {"kind": "bot", "level": "easy"}],
                                    {"mode": "per_move", "seconds": 1, "on_timeout": "forfeit"}, game=fierce)
    wait_until(lambda: timeouts(table.log(match_id)), 30, "the timeout")
    refused = table.api.post(f"/v1/matches/{match_id}/seats/0/reclaim", tokens[0], json={})
    assert refused.status_code in (409,) and refused.json()["error"]["code"] in ("seat_forfeited", "match_closed")
    end = table.finished(match_id, 180)
    assert end["outcome"]["ended_by"] == "game" and end["outcome"]["forfeited"] == [0]
    assert 0 not in end["outcome"]["winners"] and end["outcome"]["winners"]


# -- presence, leave, rematch ----------------------------------------------------------------------


def test_presence_follows_requests_and_held_long_polls(table: Table) -> None:
    match_id, tokens = table.create([{"kind": "human"}, {"kind": "human"}])
    seats = table.status(match_id, tokens[0])["seats"]
    assert seats[0]["connected"] and not seats[1]["connected"]
    poll = threading.Thread(target=lambda: table.api.get(f"/v1/matches/{match_id}/events?wait=3", tokens[1]))
    poll.start()
    time.sleep(1.5)  # seat 0's request is older than the 1 s window; seat 1 holds a long-poll
    seats = table.api.get(f"/v1/matches/{match_id}").json()["seats"]
    assert seats[1]["connected"] and not seats[0]["connected"]
    poll.join()


def test_a_human_who_leaves_a_running_match_is_replaced_by_a_bot_for_good(table: Table) -> None:
    table.bot_worker()
    match_id, tokens = table.create([{"kind": "human"}, {"kind": "human"}], takeover_level="easy")
    left = table.api.post(f"/v1/matches/{match_id}/leave", tokens[0], json={})
    assert left.status_code == 200
    seat = left.json()["seats"][0]
    assert seat["control"] == "bot" and seat["left"] and left.json()["status"] == "active"
    assert table.api.get(f"/v1/matches/{match_id}", tokens[0]).status_code == 401  # the token is revoked
    status = table.status(match_id, tokens[1])
    while status["status"] == "active":  # the other human plays on against the bot
        if 1 in status["to_act"]:
            legal = table.api.get(f"/v1/matches/{match_id}/legal-moves", tokens[1]).json()
            status = table.api.post(f"/v1/matches/{match_id}/moves", tokens[1],
                                    json={"move": legal["moves"][-1], "version": legal["version"]}).json()
        else:
            status = table.api.get(f"/v1/matches/{match_id}/events?after={status['version']}&wait=10",
                                   tokens[1]).json()
    assert status["status"] == "finished"
    assert any(e["kind"] == "move" and e["seat"] == 0 and e["by"] == "bot" for e in table.log(match_id))


def test_rematch_keeps_the_seats_and_each_human_takes_a_new_token(table: Table) -> None:
    table.timekeeper()
    match_id, tokens = table.create([{"kind": "human"}, {"kind": "human"}],
                                    {"mode": "per_move", "seconds": 1, "on_timeout": "forfeit"})
    assert table.api.post(f"/v1/matches/{match_id}/rematch", tokens[0], json={}).status_code == 409  # not over
    table.finished(match_id, 30)
    first = table.api.post(f"/v1/matches/{match_id}/rematch", tokens[0], json={})
    assert first.status_code == 200, first.text
    nxt = first.json()
    assert nxt["seat"] == 0 and nxt["status"] == "waiting" and nxt["token"] not in tokens
    assert nxt["clock"]["mode"] == "per_move" and nxt["game"] == "clash" and nxt["options"] == {"match": "single"}
    assert table.status(match_id)["rematch"] == nxt["id"]
    second = table.api.post(f"/v1/matches/{match_id}/rematch", tokens[1], json={})
    assert second.status_code == 200 and second.json()["id"] == nxt["id"] and second.json()["seat"] == 1
    assert second.json()["status"] == "active"
    again = table.api.post(f"/v1/matches/{match_id}/rematch", tokens[0], json={})
    assert again.status_code == 409 and again.json()["error"]["code"] == "seat_taken"
    assert table.status(nxt["id"], nxt["token"])["you"] == 0


def test_in_a_rematch_bots_stay_bots(table: Table) -> None:
    table.bot_worker()
    table.timekeeper()
    match_id, tokens = table.create([{"kind": "human"}, {"kind": "bot", "level": "easy"}],
                                    {"mode": "per_move", "seconds": 1, "on_timeout": "forfeit"})
    table.finished(match_id, 60)  # the human stays silent and forfeits
    nxt = table.api.post(f"/v1/matches/{match_id}/rematch", tokens[0], json={}).json()
    assert [(s["kind"], s["level"]) for s in nxt["seats"]] == [("human", None), ("bot", "easy")]
    assert nxt["status"] == "active"


def test_an_upgrade_moves_legacy_deadlines_jobs_and_counters_into_the_shards(own_redis_url: str) -> None:
    """A store written before sharding kept them in single keys that nobody reads now: a deadline or a bot
    turn left there would never fire or be played. The first worker or timekeeper to start moves them."""
    from services.core.match import legacy
    from services.core.match.bots_seam import bot_jobs_stream
    from services.core.record.store import MATCH_STATS_KEYS

    client = redisconn.connect(own_redis_url)
    if redisconn.is_cluster(client):
        assert legacy.migrate(MatchStore(client, 60, 60)) == {"deadlines": 0, "counters": 0, "bot_jobs": 0}
        return  # a cluster could never hold the old layout
    client.zadd("{clock}:deadlines", {"lgA|0|3": 100.0})
    client.zadd("{clock}:leases", {"lgB|1|4": 200.0})
    client.hset("stats:matches", mapping={"created:legacy-game": 5})
    for n in range(3):
        job = {"match_id": f"lgJ{n}", "game": "clash", "version": n, "seat": 1}
        client.xadd("bots:jobs", {"job": orjson.dumps(job)})
    client.xgroup_create("bots:jobs", "bots", id="0")
    client.xreadgroup("bots", "old", {"bots:jobs": ">"}, count=2)  # job 0 and 1 taken
    done = client.xrange("bots:jobs", count=1)[0][0]
    client.xack("bots:jobs", "bots", done)  # job 0 finished; job 1 pending; job 2 never taken
    moved = legacy.migrate(MatchStore(client, 60, 60))
    assert moved == {"deadlines": 2, "counters": 1, "bot_jobs": 2}
    assert client.zscore(deadline_keys("lgA")[0], "lgA|0|3") == 100.0
    assert client.zscore(deadline_keys("lgB")[0], "lgB|1|4") == 200.0
    assert int(client.hget(MATCH_STATS_KEYS[0], "created:legacy-game")) == 5
    jobs = [orjson.loads(f[b"job"])["match_id"] for n in (1, 2) for _, f in client.xrange(bot_jobs_stream(f"lgJ{n}"))]
    assert sorted(set(jobs)) == ["lgJ1", "lgJ2"]
    assert not client.exists("{clock}:deadlines", "{clock}:leases", "stats:matches", "bots:jobs")
    assert legacy.migrate(MatchStore(client, 60, 60)) == {"deadlines": 0, "counters": 0, "bot_jobs": 0}
