"""Metrics: gunicorn workers add up in one /metrics, and the move path, Redis, matches and bot queue are counted."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector

from services import redisconn
from services.bots.worker import GROUP, Worker
from services.core.match.bots_seam import BOT_JOB_STREAMS
from services.rules.games import GAMES
from tooling import promtext
from tooling.stack import GUNICORN_CONF, ROOT, free_port, http_ok, wait_until

from .conftest import Api, RulesProcess, gunicorn_gateway
from .test_backends import as_key, new_key

ANY = next(iter(GAMES))
Gunicorn = tuple[str, "subprocess.Popen[bytes]", Path]
EVENTS = "/v1/matches/<match_id>/events"


def children(pid: int) -> set[int]:
    raw = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return {int(p) for p in raw}


def route_count(samples: promtext.Samples, route: str) -> float:
    return promtext.value(samples, "meeple_gateway_request_seconds_count", {"route": route})


def per_worker(prom_dir: Path, pid: int, scratch: Path) -> promtext.Samples:
    """The samples one worker wrote, read alone (its files copied into a directory of their own)."""
    scratch.mkdir()
    for path in prom_dir.glob(f"*_{pid}.db"):
        shutil.copy(path, scratch / path.name)
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(scratch))
    from prometheus_client import generate_latest

    return promtext.parse(generate_latest(registry).decode())


@pytest.fixture()
def gunicorn(redis_url: str, rules: RulesProcess, tmp_path: Path) -> Iterator[Gunicorn]:
    """The gateway under gunicorn with two worker processes and multiprocess metrics; ``sync`` workers (one
    request at a time each, unlike production's thread per connection) so that requests can be steered."""
    port, prom_dir = free_port(), tmp_path / "prom"
    env = {**os.environ, "REDIS_URL": redis_url, "MEEPLE_RULES_ADDR": f"127.0.0.1:{rules.port}",
           "PROMETHEUS_MULTIPROC_DIR": str(prom_dir), "MEEPLE_RATE_LIMIT_PER_MINUTE": "100000",
           "MEEPLE_MAX_ACTIVE_MATCHES_PER_IP": "0", "MEEPLE_MAX_BOT_SEATS_PER_IP": "0",
           "MEEPLE_MAX_HARD_BOTS_PER_IP": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", GUNICORN_CONF, "--workers", "2", "-k", "sync",
                             "--bind", f"127.0.0.1:{port}", "--graceful-timeout", "2", "services.gateway.wsgi:app"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: http_ok(f"{url}/healthz"), "gunicorn", proc)
        # Both workers have built the app once each has created its live-gauge file.
        wait_until(lambda: len(children(proc.pid)) == 2 and {int(p.stem.rsplit("_", 1)[1]) for p in
                                                             prom_dir.glob("gauge_livesum_*.db")} >= children(proc.pid),
                   "both gunicorn workers", proc)
        yield url, proc, prom_dir
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)


def test_metrics_add_up_the_requests_of_every_gunicorn_worker(
        gunicorn: Gunicorn, tmp_path: Path) -> None:
    url, proc, prom_dir = gunicorn
    created = requests.post(f"{url}/v1/matches", json={"game": ANY, "players": 2, "join": True}, timeout=10).json()
    # A sync worker serves one request at a time: two concurrent long-polls must land on both workers.
    replies: list[int] = []
    polls = [threading.Thread(target=lambda: replies.append(requests.get(
        f"{url}/v1/matches/{created['id']}/events?after={created['version']}&wait=2", timeout=10).status_code))
        for _ in range(2)]
    for poll in polls:
        poll.start()
    for poll in polls:
        poll.join()
    assert replies == [200, 200]
    workers = children(proc.pid)
    assert [route_count(per_worker(prom_dir, pid, tmp_path / str(pid)), EVENTS) for pid in sorted(workers)] == [1, 1]
    for _ in range(3):  # whichever worker answers the scrape, it reports both workers' requests
        assert route_count(promtext.scrape(f"{url}/metrics"), EVENTS) == 2
    # One charset parameter: Prometheus 3 fails a scrape whose Content-Type does not parse (Go's mime parser
    # refuses a duplicate parameter), and mimetype= had added a second one.
    assert requests.get(f"{url}/metrics", timeout=10).headers["Content-Type"] == CONTENT_TYPE_LATEST

    # A worker that dies takes its live gauges along (child_exit); its counters still count.
    victim = min(workers)
    os.kill(victim, signal.SIGKILL)
    wait_until(lambda: not (prom_dir / f"gauge_livesum_{victim}.db").exists(), "child_exit bookkeeping")
    wait_until(lambda: len(children(proc.pid)) == 2, "gunicorn to replace the worker", proc)
    wait_until(lambda: http_ok(f"{url}/healthz"), "gunicorn", proc)
    scraped = promtext.scrape(f"{url}/metrics")
    assert route_count(scraped, EVENTS) == 2
    assert promtext.value(scraped, "meeple_gateway_events_waiting") == 0


def test_a_long_poll_that_parks_is_counted_as_parked_and_its_tenant_request_once(redis_url: str,
                                                                                   rules: RulesProcess) -> None:
    """Under the gateway's worker a long-poll with nothing new parks: that run's response is never sent, so it is
    not a 204 in the metrics, and the tenant's request is counted once, by the answer its client got."""
    tenant = f"parks-{random.randrange(10**9)}"
    key = as_key(new_key(redis_url, tenant)["key"])
    metrics_port = free_port()
    with gunicorn_gateway(redis_url, rules.port, MEEPLE_METRICS_PORT=str(metrics_port)) as node:
        created = requests.post(f"{node.url}/v1/matches", json={"game": ANY, "players": 2, "join": True},
                                headers=key, timeout=10).json()
        answered = requests.get(f"{node.url}/v1/matches/{created['id']}/events?after={created['version']}&wait=1",
                                headers=key, timeout=10)
        assert answered.status_code == 200 and answered.json()["events"] == []
        scraped = promtext.scrape(f"http://127.0.0.1:{metrics_port}/metrics")
    statuses = promtext.totals(scraped, "meeple_gateway_request_seconds_count", ("route", "status"))
    assert {status: n for (route, status), n in statuses.items() if route == EVENTS} == {"parked": 1, "200": 1}
    counted = promtext.totals(scraped, "meeple_tenant_requests_total", ("tenant", "status"))
    assert {status: n for (name, status), n in counted.items() if name == tenant} == {"201": 1, "200": 1}


def test_tenant_names_are_never_on_the_api_port_and_all_metrics_are_on_the_metrics_port(
        redis_url: str, rules: RulesProcess) -> None:
    """Issue 49: ``/metrics`` on the API port named every tenant (``meeple_tenant_requests_total{tenant=...}``) to
    anyone who could reach it. Now, under gunicorn as deployed: without ``MEEPLE_METRICS_PORT`` the API port's
    ``/metrics`` has no series naming a tenant; with it, the API port has no ``/metrics`` (404) and the metrics
    port has them all, every worker's added up."""
    tenant = f"secret-{random.randrange(10**9)}"
    key = as_key(new_key(redis_url, tenant)["key"])
    metrics_port = free_port()
    for env in ({}, {"MEEPLE_METRICS_PORT": str(metrics_port)}):
        with gunicorn_gateway(redis_url, rules.port, **env) as node:
            assert requests.post(f"{node.url}/v1/matches", json={"game": ANY, "players": 2}, headers=key,
                                 timeout=10).status_code == 201
            public = requests.get(f"{node.url}/metrics", timeout=10)
            if not env:
                assert public.status_code == 200 and "meeple_gateway_request_seconds" in public.text
                assert "tenant" not in public.text and tenant not in public.text
                continue
            assert public.status_code == 404 and public.json()["error"]["code"] == "not_found"
            private = promtext.scrape(f"http://127.0.0.1:{metrics_port}/metrics")
    counted = promtext.totals(private, "meeple_tenant_requests_total", ("tenant", "status"))
    assert counted[(tenant, "201")] == 1
    assert promtext.value(private, "meeple_matches_created_total", {"game": ANY}) >= 2


def test_late_multiprocess_setting_is_refused() -> None:
    script = ("import os, prometheus_client\n"
              "os.environ['PROMETHEUS_MULTIPROC_DIR'] = '/tmp'\n"
              "from services.gateway.app import create_app\n"
              "try:\n    create_app()\nexcept RuntimeError as err:\n    print('refused:', err)\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.startswith("refused: PROMETHEUS_MULTIPROC_DIR was set after"), out.stdout + out.stderr


def test_the_move_path_is_measured(api: Api) -> None:
    def scrape() -> promtext.Samples:
        return promtext.parse(api.session.get(f"{api.base}/metrics").text)

    before = scrape()
    created = api.post("/v1/matches", json={"game": ANY, "players": 2, "join": True}).json()
    token = created["token"]
    joined = api.post(f"/v1/matches/{created['id']}/join", json={}).json()
    tokens = [token, joined["token"]]
    status = api.get(f"/v1/matches/{created['id']}", token).json()
    seat = status["to_act"][0]
    move = api.get(f"/v1/matches/{created['id']}/legal-moves", tokens[seat]).json()["moves"][0]
    assert api.post(f"/v1/matches/{created['id']}/moves", tokens[seat],
                    json={"move": move, "version": status["version"]}).status_code == 200
    assert api.post(f"/v1/matches/{created['id']}/moves", tokens[seat],
                    json={"move": {"type": "no_such_move"}, "version": status["version"] + 1}).status_code == 400
    change = promtext.delta(scrape(), before)
    moves = {"route": "/v1/matches/<match_id>/moves", "method": "POST"}
    assert promtext.value(change, "meeple_gateway_request_seconds_count", {**moves, "status": "200"}) == 1
    assert promtext.value(change, "meeple_gateway_request_seconds_count", {**moves, "status": "400"}) == 1
    assert promtext.value(change, "meeple_gateway_moves_total", {"game": ANY, "outcome": "applied"}) == 1
    assert promtext.value(change, "meeple_gateway_moves_total", {"game": ANY, "outcome": "malformed_move"}) == 1
    for command in ("PIPELINE", "EVALSHA"):
        assert promtext.value(change, "meeple_redis_command_seconds_count", {"command": command}) >= 2
    assert promtext.value(change, "meeple_matches_created_total", {"game": ANY}) == 1
    assert promtext.value(change, "meeple_matches_active", {"game": ANY}) == 1


def test_match_counters_follow_every_status_change(api: Api) -> None:
    game = "clash" if "clash" in GAMES else ANY
    options = {"match": "single", "max_moves": 20} if game == "clash" else {}

    def counts() -> dict[str, float]:
        samples = promtext.parse(api.session.get(f"{api.base}/metrics").text)
        return {name: promtext.value(samples, f"meeple_matches_{name}", {"game": game})
                for name in ("created_total", "active", "finished_total")}

    start = counts()
    created = api.post("/v1/matches", json={"game": game, "players": 2, "join": True, "options": options}).json()
    assert counts() == {**start, "created_total": start["created_total"] + 1}  # waiting is not active
    tokens = [created["token"], api.post(f"/v1/matches/{created['id']}/join", json={}).json()["token"]]
    assert counts()["active"] == start["active"] + 1
    status = api.get(f"/v1/matches/{created['id']}").json()
    rng = random.Random(5)
    while status["status"] == "active":
        seat = rng.choice(status["to_act"])
        moves = api.get(f"/v1/matches/{created['id']}/legal-moves", tokens[seat]).json()["moves"]
        status = api.post(f"/v1/matches/{created['id']}/moves", tokens[seat],
                          json={"move": rng.choice(moves), "version": status["version"]}).json()
    assert counts() == {"created_total": start["created_total"] + 1, "active": start["active"],
                        "finished_total": start["finished_total"] + 1}


def test_bot_queue_depth_counts_jobs_no_worker_has_taken(own_redis_url: str, rules: RulesProcess) -> None:
    redis_url = own_redis_url  # no other test's jobs in any stream
    stream = BOT_JOB_STREAMS[0]
    worker = Worker(redis_url, f"127.0.0.1:{rules.port}", name="depth-test")
    client = redisconn.connect(redis_url)
    before = worker.queue_depth()
    try:
        for n in range(3):
            client.xadd(stream, {"job": b'{"match_id": "gone", "game": "x", "version": %d, "seat": 0}' % n})
        assert worker.queue_depth() == before + 3
        taken = client.xreadgroup(GROUP, "depth-test-other", {stream: ">"}, count=before + 1)
        assert taken
        assert worker.queue_depth() == 2
        worker.run_once(block_ms=10)  # handles (and acknowledges) one job; the gauge follows
        assert worker.queue_depth() == 1
        assert worker.metrics.queue._value.get() == 1
    finally:  # leave the shared stream as other tests expect it: nothing of ours waiting or pending
        client.xreadgroup(GROUP, "depth-test-other", {stream: ">"}, count=100)
        held = client.xpending_range(stream, GROUP, "-", "+", 1000, consumername="depth-test-other")
        if held:
            client.xack(stream, GROUP, *[entry["message_id"] for entry in held])
