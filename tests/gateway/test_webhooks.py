"""Signed webhooks over real HTTP: a real local receiver, real Redis, the real worker (in-process and killed -9).

The receiver checks every delivery the way docs/api.md tells integrators to (HMAC-SHA256 over
``<t>.<body>``), and the tests require every event to arrive, exactly as signed, despite a receiver that
was down and a worker killed in the middle of a delivery.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
import pytest

from services import redisconn
from services.core.tenancy import webhooks
from services.timekeeper.keeper import Timekeeper
from services.webhooks.worker import WebhookMetrics, WebhookWorker
from tooling.stack import ROOT, free_port

from .conftest import Api, GatewayServer, RulesProcess, start_gateway
from .test_backends import as_key, new_key, rated_forfeit

GAME = "clash"
#: The receiver is on loopback: these tests allow it, as an operator would with MEEPLE_WEBHOOK_ALLOW_PRIVATE.
LOCAL = ("127.0.0.0/8",)
ALLOW = webhooks.allowed_networks(LOCAL)
ALL = ["match.created", "match.started", "match.finished", "seat.timeout", "seat.taken_over", "seat.reclaimed"]


def verify(secret: str, header: str, body: bytes, tolerance_s: int = 300) -> bool:
    """The receiver's check, as docs/api.md shows it."""
    parts = dict(p.split("=", 1) for p in header.split(","))
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, parts["v1"]) and abs(time.time() - int(parts["t"])) <= tolerance_s


@dataclass
class Receiver:
    """A local HTTP endpoint that records deliveries; ``status`` to answer, ``hold`` to hang the next one."""

    port: int
    secret: str = ""
    status: int = 200
    got: list[dict[str, Any]] = field(default_factory=list)
    hold: threading.Event | None = None
    arrived: threading.Event = field(default_factory=threading.Event)
    server: ThreadingHTTPServer | None = None

    def start(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                owner.got.append({"id": self.headers["Meeple-Delivery"], "event": self.headers["Meeple-Event"],
                                  "valid": verify(owner.secret, self.headers["Meeple-Signature"], body),
                                  "body": orjson.loads(body), "host": self.headers["Host"]})
                owner.arrived.set()
                hold, owner.hold = owner.hold, None
                if hold is not None:
                    hold.wait(20)  # hang: the worker is killed meanwhile
                self.send_response(owner.status)
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def delivered(self) -> dict[str, dict[str, Any]]:
        """Deliveries by id (a redelivery has the same id), each with a valid signature."""
        assert all(d["valid"] for d in self.got), [d for d in self.got if not d["valid"]]
        return {d["id"]: d for d in self.got}

    def events(self) -> list[str]:
        return sorted(d["event"] for d in self.delivered().values())


@pytest.fixture()
def receiver() -> Iterator[Receiver]:
    rec = Receiver(free_port())
    rec.start()
    yield rec
    if rec.hold is not None:
        rec.hold.set()
    rec.stop()


@pytest.fixture()
def tenant_gateway(own_redis_url: str, rules: RulesProcess) -> Iterator[GatewayServer]:
    server = start_gateway(own_redis_url, rules.port, anonymous=False, webhook_allow_private=LOCAL)
    yield server
    server.stop()


def play_through_every_event(api: Api, key: str, redis_url: str) -> str:
    """A tenant match that creates, starts, times a seat out (a bot takes it), is reclaimed and finishes."""
    created = api.post("/v1/matches", headers=as_key(key), json={
        "game": GAME, "players": 2, "clock": {"mode": "per_move", "seconds": 5},
        "seats": [{"kind": "human", "player": "ann"}, {"kind": "human", "player": "ben"}]}).json()
    tokens = [api.post(f"/v1/matches/{created['id']}/join", headers=as_key(key), json={"seat": s}).json()["token"]
              for s in (0, 1)]
    keeper = Timekeeper(redis_url)
    keeper.run_once(now=time.time() + 60)  # every seat to act runs out of time: a bot takes it
    status = api.get(f"/v1/matches/{created['id']}", tokens[0]).json()
    out = [s["seat"] for s in status["seats"] if s["control"] == "bot"]
    assert out, status
    assert api.post(f"/v1/matches/{created['id']}/seats/{out[0]}/reclaim", tokens[out[0]], json={}).status_code == 200
    keeper.run_once(now=time.time() + 8 * 24 * 3600)  # no human action for a week and a day: abandoned
    assert api.get(f"/v1/matches/{created['id']}", tokens[0]).json()["status"] == "finished"
    return str(created["id"])


def test_every_event_arrives_signed_even_after_the_receiver_was_down(
        tenant_gateway: GatewayServer, own_redis_url: str, receiver: Receiver) -> None:
    api = Api(tenant_gateway.url)
    key, other = new_key(own_redis_url, "acme")["key"], new_key(own_redis_url, "rival")["key"]
    hook = api.post("/v1/webhooks", headers=as_key(key), json={"url": f"http://127.0.0.1:{receiver.port}/hook",
                                                                "events": ALL})
    assert hook.status_code == 201 and hook.json()["secret"].startswith("whsec_")
    receiver.secret = hook.json()["secret"]
    assert "secret" not in api.get("/v1/webhooks", headers=as_key(key)).json()["webhooks"][0]
    assert api.get("/v1/webhooks", headers=as_key(other)).json()["webhooks"] == []
    receiver.stop()  # down from the start
    match_id = play_through_every_event(api, key, own_redis_url)
    metrics = WebhookMetrics()
    worker = WebhookWorker(own_redis_url, metrics, backoff_s=1.0, allow=ALLOW)
    now = time.time()
    assert worker.run_once(now) == 0 and receiver.got == []
    made = int(metrics.deliveries.labels("failed")._value.get())  # one per event (both seats timed out)
    assert made >= len(ALL)
    assert worker.run_once(now + 0.5) == 0  # backing off: not due yet
    receiver.start()  # back up
    assert worker.run_once(now + 1.5) == made
    assert set(receiver.events()) == set(ALL) and len(receiver.delivered()) == made == len(receiver.got)
    bodies = {d["event"]: d["body"] for d in receiver.got}
    assert all(b["data"]["match_id"] == match_id for b in bodies.values())
    assert [s["player"] for s in bodies["match.created"]["data"]["seats"]] == ["ann", "ben"]
    assert bodies["match.finished"]["data"]["outcome"]["ended_by"] == "abandoned"
    assert bodies["seat.timeout"]["data"]["policy"] == "bot"
    assert worker.run_once(now + 3600) == 0  # nothing twice
    assert metrics.deliveries.labels("delivered")._value.get() == made
    assert redisconn.connect(own_redis_url).exists(webhooks.outbox_key(match_id)) in (0, 1)
    assert redisconn.connect(own_redis_url).xlen(webhooks.outbox_key(match_id)) == 0


def test_an_event_stamped_ahead_of_the_workers_clock_is_delivered_at_once(
        own_redis_url: str, receiver: Receiver) -> None:
    """A delivery was due at its event's time: an event stamped by a clock ahead of the worker's (another
    machine's, or one stepped back since) waited until the worker's clock got there."""
    client = redisconn.connect(own_redis_url)
    hook = webhooks.register(client, "acme", f"http://127.0.0.1:{receiver.port}/", ["tournament.started"])
    receiver.secret = hook["secret"]
    ahead = time.time() + 600
    event = {"type": "tournament.started", "tournament_id": "t-ahead", "at": ahead, "players": 2}
    assert webhooks.tournament_deliveries(client, "acme", "t-ahead:1", event) == 1
    assert WebhookWorker(own_redis_url, allow=ALLOW).run_once() == 1
    assert [(d["event"], d["valid"], d["body"]["created_at"]) for d in receiver.got] == [
        ("tournament.started", True, ahead)]


def test_a_worker_killed_mid_delivery_leaves_it_to_the_next_worker(
        tenant_gateway: GatewayServer, own_redis_url: str, receiver: Receiver, tmp_path: Any) -> None:
    api = Api(tenant_gateway.url)
    key = new_key(own_redis_url, "acme")["key"]
    hook = api.post("/v1/webhooks", headers=as_key(key), json={"url": f"http://127.0.0.1:{receiver.port}/",
                                                                "events": ALL}).json()
    receiver.secret = hook["secret"]
    release = threading.Event()
    receiver.hold = release  # the first delivery hangs until the worker is dead
    play_through_every_event(api, key, own_redis_url)

    def worker() -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "services.webhooks.worker", "--metrics-port", "0",
                                 "--lease-s", "1", "--backoff-s", "0.2", "--allow-private", ",".join(LOCAL)], cwd=ROOT,
                                env={**os.environ, "REDIS_URL": own_redis_url}, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)

    first = worker()
    try:
        assert receiver.arrived.wait(30), "no delivery reached the receiver"
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    finally:
        release.set()
    held = receiver.got[0]["id"]
    second = worker()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (set(receiver.events()) != set(ALL) or len(receiver.events()) < 8):
            time.sleep(0.1)
    finally:
        second.terminate()
        second.wait(10)
    assert set(receiver.events()) == set(ALL) and len(receiver.events()) == 8  # both seats timed out
    assert [d["id"] for d in receiver.got].count(held) >= 2  # delivered again, under the same delivery id


def test_a_delivery_failing_for_the_retry_period_becomes_a_dead_letter_only_its_tenant_reads(
        tenant_gateway: GatewayServer, own_redis_url: str, receiver: Receiver) -> None:
    api = Api(tenant_gateway.url)
    key, other = new_key(own_redis_url, "acme")["key"], new_key(own_redis_url, "rival")["key"]
    receiver.status = 500
    hook = api.post("/v1/webhooks", headers=as_key(key), json={"url": f"http://127.0.0.1:{receiver.port}/",
                                                                "events": ["match.created"]}).json()
    receiver.secret = hook["secret"]
    api.post("/v1/matches", headers=as_key(key), json={"game": GAME, "players": 2})
    worker = WebhookWorker(own_redis_url, backoff_s=1.0, retry_for_s=10.0, allow=ALLOW)
    now = time.time()
    for step in (0, 2, 4, 8, 16):  # backoff 1, 2, 4, 8 s; at 16 s the 10 s retry period is over
        worker.run_once(now + step)
    assert len(receiver.got) >= 3 and len({d["id"] for d in receiver.got}) == 1  # retried, one delivery id
    dead = api.get("/v1/webhooks/dead-letters", headers=as_key(key)).json()["dead_letters"]
    assert len(dead) == 1 and dead[0]["type"] == "match.created" and dead[0]["last_error"] == "HTTP 500"
    assert api.get("/v1/webhooks/dead-letters", headers=as_key(other)).json()["dead_letters"] == []
    assert api.call("DELETE", "/v1/webhooks/dead-letters", headers=as_key(other)).json() == {"cleared": 0}
    attempts = len(receiver.got)
    worker.run_once(now + 3600)
    assert len(receiver.got) == attempts  # given up
    assert api.call("DELETE", f"/v1/webhooks/{hook['id']}", headers=as_key(other)).status_code == 404
    assert api.call("DELETE", f"/v1/webhooks/{hook['id']}", headers=as_key(key)).status_code == 200
    assert api.call("DELETE", "/v1/webhooks/dead-letters", headers=as_key(key)).json() == {"cleared": 1}
    assert api.get("/v1/webhooks/dead-letters", headers=as_key(key)).json()["dead_letters"] == []


def test_a_mark_left_without_an_outbox_is_healed_and_a_fresh_one_is_kept(own_redis_url: str) -> None:
    client = redisconn.connect(own_redis_url)
    webhooks.mark(client, "crashed")  # the process died between the mark and the compare-and-set
    worker = WebhookWorker(own_redis_url)
    shard = webhooks.mark_key("crashed")
    worker.pump(time.time())
    assert client.zscore(shard, "crashed") is not None  # within the grace: an update may still append
    worker.pump(time.time() + webhooks.MARK_GRACE_S + 1)
    assert client.zscore(shard, "crashed") is None


def test_an_outbox_an_older_gateway_marked_in_a_legacy_shard_is_still_delivered(
        tenant_gateway: GatewayServer, own_redis_url: str, receiver: Receiver) -> None:
    """During a rolling upgrade, gateways of the release before mark ``{webhooks:<crc32 % 16>}:pending``: the
    worker still reads those shards, delivers, and unmarks them once drained and past the grace."""
    api = Api(tenant_gateway.url)
    key = new_key(own_redis_url, "acme")["key"]
    hook = api.post("/v1/webhooks", headers=as_key(key), json={"url": f"http://127.0.0.1:{receiver.port}/",
                                                                "events": ["match.created"]}).json()
    receiver.secret = hook["secret"]
    client = redisconn.connect(own_redis_url)
    match_id = api.post("/v1/matches", headers=as_key(key), json={"game": GAME, "players": 2}).json()["id"]
    score = client.zscore(webhooks.mark_key(match_id), match_id)
    assert score is not None  # marked in its own slot's set
    legacy = webhooks.legacy_pending_key(webhooks.shard_of(match_id))
    client.zrem(webhooks.mark_key(match_id), match_id)  # as an older gateway would have marked it
    client.zadd(legacy, {match_id: score})
    worker = WebhookWorker(own_redis_url, allow=ALLOW)
    assert worker.run_once(time.time()) == 1
    assert receiver.events() == ["match.created"] and receiver.got[0]["body"]["data"]["match_id"] == match_id
    assert client.zscore(legacy, match_id) is not None  # within the grace: kept
    worker.run_once(time.time() + webhooks.MARK_GRACE_S + 1)
    assert client.zscore(legacy, match_id) is None and len(receiver.got) == 1


def test_webhook_registration_rejects_bad_urls_and_unknown_events(tenant_gateway: GatewayServer,
                                                                   own_redis_url: str) -> None:
    api = Api(tenant_gateway.url)
    key = new_key(own_redis_url, "acme")["key"]
    bad_urls = ("ftp://x/", "https://[::1]:99999/h", "https://[::1/h", "https://x:0/h", "https://x:abc/h",
                "https://exa mple.com/h", "https://x/\x00", "https://-bad-.example/", "https://a..example/",
                "https://" + "b" * 64 + ".example/")
    for body in ({"url": "http://x/", "events": ["nope"]}, {"url": "http://x/", "events": []},
                 *({"url": url, "events": ["match.created"]} for url in bad_urls)):
        reply = api.post("/v1/webhooks", headers=as_key(key), json=body)
        assert reply.status_code == 400 and reply.json()["error"]["code"] == "bad_webhook", (body, reply.text)
    assert api.post("/v1/webhooks", json={"url": "http://x/", "events": ["turn"]}).status_code == 401


def test_a_rated_match_finished_webhook_carries_the_rating_changes_and_the_worker_heals_a_lost_rating_write(
        tenant_gateway: GatewayServer, own_redis_url: str, receiver: Receiver) -> None:
    from services.core.competition import ratings

    api = Api(tenant_gateway.url)
    key = new_key(own_redis_url, "acme")["key"]
    hook = api.post("/v1/webhooks", headers=as_key(key), json={"url": f"http://127.0.0.1:{receiver.port}/",
                                                                "events": ["match.finished"]}).json()
    receiver.secret = hook["secret"]
    outcome = rated_forfeit(api, key, own_redis_url)[2]["outcome"]
    assert {c["player"] for c in outcome["ratings"]} == {"ann", "ben"}
    # As if the gateway died right after the finishing update, before it wrote the ratings:
    client = redisconn.connect(own_redis_url)
    client.delete(ratings.player_key("acme", "ann"), ratings.player_key("acme", "ben"))
    assert api.get("/v1/players/ann/ratings", headers=as_key(key)).json()["ratings"] == {}
    WebhookWorker(own_redis_url, allow=ALLOW).run_once()
    finished = [d for d in receiver.got if d["event"] == "match.finished"]
    assert len(finished) == 1 and finished[0]["valid"]
    assert finished[0]["body"]["data"]["outcome"] == outcome  # result, outcome and rating changes
    healed = api.get("/v1/players/ann/ratings", headers=as_key(key)).json()["ratings"][GAME]
    assert healed == next(c["after"] for c in outcome["ratings"] if c["player"] == "ann")
