"""Parked waiters on a real Redis Cluster: the hub subscribes to the event channel instead of XREADing
streams of many slots (a CROSSSLOT error there), re-reads a stream after each park so a version written in
the park race is not missed, and moves its subscription to another node when that one is killed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import requests

from services import redisconn
from services.core.record.store import EVENTS_CHANNEL
from services.gateway.hub import Hub, Waiter
from tooling.rediscluster import LocalCluster
from tooling.stack import GUNICORN_CONF, ROOT, free_port, http_ok, wait_until

from .conftest import RulesProcess, redis_cluster
from .test_waiters import Node, WsClient, answer, auth, new_match, park


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """3 primaries with a replica each, so a killed node's slots are taken over."""
    with redis_cluster(3, 1, node_timeout_ms=1500) as formed:
        formed.wait_healthy(replicas=1)
        yield formed


@pytest.fixture()
def node(cluster: LocalCluster, rules: RulesProcess, tmp_path: Path) -> Iterator[Node]:
    """One gunicorn gateway node (the parking worker) on the cluster."""
    port = free_port()
    log = tmp_path / "gunicorn.log"
    env = {**os.environ, "REDIS_URL": cluster.url, "MEEPLE_RULES_ADDR": f"127.0.0.1:{rules.port}",
           "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prom"), "MEEPLE_RATE_LIMIT_PER_MINUTE": "100000"}
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", GUNICORN_CONF, "--workers", "1",
                             "--bind", f"127.0.0.1:{port}", "--graceful-timeout", "2", "services.gateway.wsgi:app"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: http_ok(f"{url}/healthz"), "gunicorn", proc)
        yield Node(url, port, proc, cluster.url, log)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)


def play(node: Node, match_id: str, tokens: list[str], retry_s: float = 30.0) -> int:
    """One legal move by a seat to act; the new version. A clean 503 (a failover) is retried as a client
    must: the *same* move with the same version and Idempotency-Key, because a 503 can follow a commit (the
    primary took it, but no replica confirmed it in time) and a new move would then be a second one."""
    give_up = time.monotonic() + retry_s
    request: dict[str, object] | None = None
    while True:
        if request is None:
            status = requests.get(f"{node.url}/v1/matches/{match_id}", timeout=10)
            if status.status_code == 200:
                doc = status.json()
                seat = doc["to_act"][0]
                status = requests.get(f"{node.url}/v1/matches/{match_id}/legal-moves", headers=auth(tokens[seat]),
                                      timeout=10)
                if status.status_code == 200:
                    request = {"headers": {**auth(tokens[seat]), "Idempotency-Key": f"{match_id}-{doc['version']}"},
                               "json": {"move": status.json()["moves"][0], "version": doc["version"]}}
        if request is not None:
            status = requests.post(f"{node.url}/v1/matches/{match_id}/moves", timeout=10, **request)  # type: ignore[arg-type]
            if status.status_code == 200:
                version: int = status.json()["version"]
                return version
        assert status.status_code == 503 and status.json()["error"]["code"] == "store_unavailable", status.text
        assert time.monotonic() < give_up, "the store stayed unavailable"
        time.sleep(0.2)


def sse_until(sock: socket.socket, version: int) -> list[int]:
    """Every version the SSE ``update`` events of a parked stream socket carry, up to ``version``."""
    data, seen = b"", []
    while version not in seen:
        chunk = sock.recv(65536)
        assert chunk, f"the stream ended before version {version}: {data!r}"
        data += chunk
        *events, data = data.split(b"\n\n")
        for event in events:
            lines = event.splitlines()
            if b"event: update" in lines:
                line = next(ln for ln in lines if ln.startswith(b"data: "))
                seen += [e["version"] for e in orjson.loads(line[6:])["events"]]
    return seen


def ws_update(client: WsClient) -> dict[str, object]:
    while True:
        doc = client.next()
        assert doc is not None, "the WebSocket closed"
        if doc["type"] == "update":
            return doc


def test_a_long_poll_an_sse_stream_and_a_websocket_on_a_cluster_get_their_events(node: Node) -> None:
    """Three matches (so streams of several slots are watched at once: one XREAD over them is CROSSSLOT)."""
    matches = [new_match(node) for _ in range(3)]
    versions = [requests.get(f"{node.url}/v1/matches/{m}", timeout=10).json()["version"] for m, _ in matches]
    (poll_id, poll_tokens), (sse_id, sse_tokens), (ws_id, ws_tokens) = matches
    poll = park(node, f"/v1/matches/{poll_id}/events?after={versions[0]}&wait=30&until=turn", poll_tokens[0])
    sse = park(node, f"/v1/matches/{sse_id}/events/stream?after={versions[1]}", sse_tokens[0])
    client = WsClient(node, ws_id)
    client.send({"type": "hello", "token": ws_tokens[0], "after": versions[2]})
    assert client.next() == {"type": "ready", "seat": 0, "version": versions[2]}
    wait_until(lambda: node.waiters() == 3, "three parked waiters", node.proc)
    moved = [play(node, m, tokens) for m, tokens in matches]
    status, body = answer(poll)
    assert status == 200 and orjson.loads(body)["version"] >= moved[0]
    assert sse_until(sse, moved[1])[-1] == moved[1]
    assert ws_update(client)["version"] == moved[2]
    for sock in (poll, sse, client.sock):
        sock.close()


def test_a_version_written_in_the_park_race_still_wakes_the_waiter(redis_url: str) -> None:
    """A version that lands after the request looked but before its waiter is registered (its notification,
    if any, went to nobody): the hub must still see it, from the stream."""
    client = redisconn.connect(redis_url)
    hub = Hub(redis_url, 100, 100)
    try:
        hub.watch(Waiter(f"match:{{other-{uuid.uuid4().hex}}}:events", 0, lambda _: None))
        wait_until(lambda: getattr(hub.reader, "subscribed", True), "the hub's reader")  # listening
        key = f"match:{{race-{uuid.uuid4().hex}}}:events"
        client.xadd(key, {"version": 5, "wake": "active:1"}, id="5-1")
        client.publish(EVENTS_CHANNEL, f"{key} 5 active:1")  # heard by no one: nothing watches the key yet
        assert hub.wait(key, 4, timeout=20)
        assert hub.wait(key, 4, timeout=20, seat=1)
        assert not hub.wait(key, 5, timeout=0.5)
    finally:
        hub.stop()


def subscribed_node(cluster: LocalCluster) -> object:
    """The cluster node holding the gateway's subscription (its client list shows one subscribed client)."""
    for candidate in cluster.live():
        if any(int(c.get("sub", 0)) > 0 for c in candidate.client().client_list()):
            return candidate
    return None


def test_killing_the_subscriptions_node_still_wakes_parked_waiters(node: Node, cluster: LocalCluster) -> None:
    """kill -9 the node the hub listens on: it subscribes on another and re-reads every watched stream, so a
    move made while it had no subscription and moves after it both reach waiters parked before the kill."""
    matches = [new_match(node) for _ in range(2)]
    versions = [requests.get(f"{node.url}/v1/matches/{m}", timeout=10).json()["version"] for m, _ in matches]
    (poll_id, poll_tokens), (sse_id, sse_tokens) = matches
    poll = park(node, f"/v1/matches/{poll_id}/events?after={versions[0]}&wait=30", poll_tokens[0])
    sse = park(node, f"/v1/matches/{sse_id}/events/stream?after={versions[1]}", sse_tokens[0])
    wait_until(lambda: node.waiters() == 2, "two parked waiters", node.proc)
    wait_until(lambda: subscribed_node(cluster) is not None, "the hub's subscription", node.proc)
    victim = subscribed_node(cluster)
    try:
        cluster.kill(victim)  # type: ignore[arg-type]
        in_gap = play(node, poll_id, poll_tokens)  # likely before the hub subscribed again
        status, body = answer(poll)
        assert status == 200 and [e["version"] for e in orjson.loads(body)["events"]] == [in_gap]
        wait_until(lambda: subscribed_node(cluster) is not None, "a new subscription", node.proc)
        assert subscribed_node(cluster) is not victim
        later = play(node, sse_id, sse_tokens)
        assert sse_until(sse, later) == list(range(versions[1] + 1, later + 1))  # none missed, none twice
    finally:
        sse.close()
        poll.close()
        cluster.restart(victim)  # type: ignore[arg-type]
        cluster.wait_healthy(replicas=1)
