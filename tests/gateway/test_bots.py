"""Bot seats end to end: gateway -> Redis Stream -> worker -> the same compare-and-set path as humans."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import orjson
import pytest
import redis

from loadtests.audit import audit_match
from services import redisconn
from services.bots.worker import GROUP, Worker
from services.core.config import Config
from services.core.match.bots_seam import bot_jobs_stream
from services.core.match.moves import apply_move
from services.core.metrics import CoreMetrics
from services.core.record.store import MatchStore, keys
from services.core.rules_client import RulesClient
from services.core.service import Core
from services.rules.games import GAMES

from .conftest import Api, RulesProcess, bot_worker_thread, start_gateway

GAME = "clash" if "clash" in GAMES else next(iter(GAMES))


@pytest.fixture()
def worker(redis_url: str, rules: RulesProcess) -> Iterator[Worker]:
    with bot_worker_thread(redis_url, rules.port, "test-worker") as bot:
        yield bot


def wait_for(predicate: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def test_a_human_plays_a_whole_game_against_a_bot(api: Api, worker: Worker) -> None:
    players = max(GAMES[GAME].min_players, 2)
    seats = [{"kind": "human"}] + [{"kind": "bot", "level": "easy"}] * (players - 1)
    created = api.post("/v1/matches", json={"game": GAME, "players": players, "seats": seats, "join": True,
                                            "options": {"match": "single"} if GAME == "clash" else {}})
    assert created.status_code == 201, created.text
    match_id, token = created.json()["id"], created.json()["token"]
    rng = random.Random(2)
    status = created.json()
    while status["status"] == "active" or status["status"] == "waiting":
        if 0 in status["to_act"]:
            moves = api.get(f"/v1/matches/{match_id}/legal-moves", token).json()["moves"]
            reply = api.post(f"/v1/matches/{match_id}/moves", token,
                             json={"move": rng.choice(moves), "version": status["version"]})
            assert reply.status_code == 200, reply.text
            status = reply.json()
        else:
            status = api.get(f"/v1/matches/{match_id}/events?after={status['version']}&wait=20", token).json()
    assert status["status"] == "finished"
    log = api.get(f"/v1/matches/{match_id}/replay").json()["log"]
    assert any(e["kind"] == "move" and e["seat"] == 1 for e in log)
    assert worker.metrics.jobs.labels("played")._value.get() > 0


def test_a_bots_own_seat_gets_no_cached_view_legal_moves_or_words(api: Api, worker: Worker, redis_url: str) -> None:
    """No one holds a bot seat's token, so a move makes nothing for it (ApplyMove's ``quiet_seats``): the cache
    beside the state holds the person's and the spectator's views only, the log's words skip the bot's seat, the
    person reads everything as before, and the audit still proves the cache is the engine's."""
    seats = [{"kind": "human"}, {"kind": "bot", "level": "novice"}]
    created = api.post("/v1/matches", json={"game": GAME, "players": 2, "seats": seats, "join": True,
                                            "options": {"match": "single"} if GAME == "clash" else {}})
    assert created.status_code == 201, created.text
    match_id, token = created.json()["id"], created.json()["token"]
    client = redisconn.connect(redis_url)
    rng, status, human_moves = random.Random(4), created.json(), 0
    while status["status"] == "active" and human_moves < 4:
        if 0 not in status["to_act"]:
            status = api.get(f"/v1/matches/{match_id}/events?after={status['version']}&wait=20", token).json()
            continue
        moves = api.get(f"/v1/matches/{match_id}/legal-moves", token).json()["moves"]
        reply = api.post(f"/v1/matches/{match_id}/moves", token,
                         json={"move": rng.choice(moves), "version": status["version"]})
        assert reply.status_code == 200, reply.text
        status, human_moves = reply.json(), human_moves + 1
        assert status["view"] is not None
        cached = set(client.hgetall(keys(match_id)[5]))
        assert {b"view:-1", b"view:0"} <= cached and not {b"view:1", b"legal:1"} & cached
    assert human_moves > 0
    log = [orjson.loads(raw) for raw in client.lrange(keys(match_id)[3], 0, -1)]
    words = [set(e["words"]) for e in log if e["kind"] == "move"]
    assert words and all(w == {"-1", "0"} for w in words)
    assert audit_match(client, match_id).ok


def test_a_job_of_a_worker_killed_mid_think_is_reclaimed(own_redis_url: str, rules: RulesProcess) -> None:
    redis_url = own_redis_url  # no other test's bot jobs: the doomed worker's first job is ours
    gateway = start_gateway(redis_url, rules.port)
    api = Api(gateway.url)
    env = {**os.environ, "REDIS_URL": redis_url, "MEEPLE_RULES_ADDR": f"127.0.0.1:{rules.port}"}
    doomed = subprocess.Popen([sys.executable, "-m", "services.bots.worker", "--metrics-port", "0",
                               "--name", "doomed", "--claim-idle-ms", "600000"], env=env)
    client = redisconn.connect(redis_url)
    try:
        seats = [{"kind": "bot", "level": "hard"}, {"kind": "human"}]
        created = api.post("/v1/matches", json={"game": GAME, "players": 2, "seats": seats})
        assert created.status_code == 201, created.text
        match_id = created.json()["id"]
        joined = api.post(f"/v1/matches/{match_id}/join", json={}).json()
        if joined["to_act"] == [1]:  # the human starts (who starts is the seed's): play once to give the bot a turn
            move = api.get(f"/v1/matches/{match_id}/legal-moves", joined["token"]).json()["moves"][0]
            api.post(f"/v1/matches/{match_id}/moves", joined["token"],
                     json={"move": move, "version": joined["version"]})
        before = api.get(f"/v1/matches/{match_id}").json()
        assert before["to_act"] == [0]
        # The doomed worker takes the job and starts thinking (hard bots think for seconds). The job is in the
        # stream the core chose (on a cluster: one on the match's own primary, not always its shard's stream).
        stream = bot_jobs_stream(match_id, client)

        def doomed_holds_the_job() -> bool:
            try:
                return bool(client.xpending_range(stream, GROUP, "-", "+", 10,
                                                  consumername="doomed"))
            except redis.ResponseError:  # the worker has not created the group yet
                return False

        wait_for(doomed_holds_the_job, 60)
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(10)
        rescuer = Worker(redis_url, f"127.0.0.1:{rules.port}", name="rescuer", claim_idle_ms=200)
        time.sleep(0.3)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and api.get(f"/v1/matches/{match_id}").json()["version"] == before["version"]:
            rescuer.run_once(block_ms=200)
        log = api.get(f"/v1/matches/{match_id}/replay").json()["log"]
        assert [e["seat"] for e in log if e["kind"] == "move"][-1] == 0  # the bot's move landed
        assert rescuer.metrics.claimed._value.get() >= 1
    finally:
        if doomed.poll() is None:
            doomed.kill()
        gateway.stop()


def test_hint_suggests_a_legal_move_for_the_callers_own_seat(api: Api, worker: Worker) -> None:
    """A bot worker computes the hint (the gateway imports no engine); the gateway only waits for it."""
    players = max(GAMES[GAME].min_players, 2)
    created = api.post("/v1/matches", json={"game": GAME, "players": players, "join": True}).json()
    tokens = [created["token"]] + [api.post(f"/v1/matches/{created['id']}/join", json={}).json()["token"]
                                   for _ in range(players - 1)]
    status = api.get(f"/v1/matches/{created['id']}").json()
    seat = status["to_act"][0]
    hint = api.get(f"/v1/matches/{created['id']}/hint", tokens[seat])
    assert hint.status_code == 200, hint.text
    legal = api.get(f"/v1/matches/{created['id']}/legal-moves", tokens[seat]).json()["moves"]
    assert hint.json()["move"] in legal
    idle = [s for s in range(players) if s not in status["to_act"]]
    if idle:
        assert api.get(f"/v1/matches/{created['id']}/hint", tokens[idle[0]]).status_code == 409


def test_a_hint_names_its_level_and_is_the_move_that_level_would_play_there(api: Api, worker: Worker) -> None:
    """Issue 50: the easy bot's 40 iterations did not even look at every CLASH move, so a hint could place a Banker
    supporting the opponent. A hint is now the named level's own search (its budget, the version as its seed)."""
    from ai.bot import choose_move

    options = {"match": "single", "first_player": 0}
    created = api.post("/v1/matches", json={"game": "clash", "players": 2, "join": True, "seed": 21,
                                            "options": options}).json()
    tokens = [created["token"], api.post(f"/v1/matches/{created['id']}/join", json={}).json()["token"]]
    game = GAMES["clash"]
    state = game.new_game(2, 21, options)
    for _ in range(4):  # a few placements in, where a turn has a few hundred moves
        status = api.get(f"/v1/matches/{created['id']}?include=legal_moves", tokens[game.to_act(state)[0]]).json()
        seat = status["you"]
        move = status["legal_moves"][-1]
        assert api.post(f"/v1/matches/{created['id']}/moves", tokens[seat],
                        json={"move": move, "version": status["version"]}).status_code == 200
        state = game.apply(state, seat, move)
    seat = game.to_act(state)[0]
    hint = api.get(f"/v1/matches/{created['id']}/hint", tokens[seat])
    assert hint.status_code == 200, hint.text
    doc = hint.json()
    assert doc["level"] == "normal"
    assert doc["move"] == choose_move(game, state, seat, level=doc["level"], seed=doc["version"], seconds=0)


def test_each_bot_decision_gets_one_job_even_in_simultaneous_steps(own_redis_url: str, rules: RulesProcess) -> None:
    """Sideboards: four bots decide at once; one bot's submission must not re-queue the three still thinking."""
    gateway = start_gateway(own_redis_url, rules.port)
    try:
        api = Api(gateway.url)
        created = api.post("/v1/matches", json={"game": "sideboards", "players": 4,
                                                "seats": [{"kind": "bot", "level": "easy"}] * 4}).json()
        client = redisconn.connect(own_redis_url)
        stream = bot_jobs_stream(created["id"], client)  # the core's choice (a cluster: on the match's primary)
        jobs = [orjson.loads(f[b"job"]) for _, f in client.xrange(stream)]
        assert sorted(j["seat"] for j in jobs) == [0, 1, 2, 3]
        store = MatchStore(client, 60, 60)
        match = store.load(created["id"])
        assert match is not None
        game = GAMES["sideboards"]
        move = game.legal_moves(game.decode(match.state), 0)[0]
        core = Core(Config(), store, RulesClient(f"127.0.0.1:{rules.port}"), CoreMetrics())
        apply_move(core, match, 0, move, match.version, by_bot=True)
        assert client.xlen(stream) == 4  # seats 1-3 still have their jobs; seat 0 waits for the step
    finally:
        gateway.stop()


def test_a_niced_worker_yields_even_in_a_session_of_its_own() -> None:
    """``--nice`` lowers the process priority and, for a session leader under autogroup scheduling, the
    group's too: otherwise a worker started in its own session (as ``meeple run`` does) never yields."""
    probe = ("import os; from services.bots.worker import lower_priority; lower_priority(7); "
             "print(os.getpriority(os.PRIO_PROCESS, 0)); "
             "print(open('/proc/self/autogroup').read().strip() if os.path.exists('/proc/self/autogroup') else '')")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         start_new_session=True).stdout.splitlines()
    assert int(out[0]) >= 7
    if out[1:] and out[1]:
        assert out[1].endswith("nice 7")
