"""Redis Cluster specifics: the URL forms, the spread of shared structures, and a primary killed mid-game."""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from redis.cluster import RedisCluster

from loadtests.audit import audit_match, lost_acknowledged
from services import redisconn
from services.core.match.bots_seam import BOT_JOB_STREAMS
from services.core.meta import MatchMeta
from services.core.record.store import DEADLINE_SHARDS, MATCH_STATS_KEYS, MatchStore, NotReplicated
from tooling.rediscluster import LocalCluster

from .conftest import Api, RulesProcess, redis_cluster, start_gateway


@pytest.fixture(scope="module")
def replicated() -> Iterator[LocalCluster]:
    """3 primaries with a replica each: what a deployment that must survive a failover runs."""
    with redis_cluster(3, 1, node_timeout_ms=1500) as cluster:
        yield cluster


def test_the_manifests_cluster_url_gets_a_cluster_client(spare_cluster: LocalCluster) -> None:
    """``redis://host:port/0?cluster=true`` (the Kubernetes secret's form) used to reach redis-py's plain
    client and fail with ``unexpected keyword argument 'cluster'``."""
    port = spare_cluster.nodes[0].port
    for url in (f"redis://127.0.0.1:{port}/0?cluster=true", f"redis+cluster://127.0.0.1:{port}",
                f"redis://127.0.0.1:{port}?cluster=yes&socket_timeout=5"):
        client = redisconn.connect(url)
        assert isinstance(client, RedisCluster), url
        assert client.ping()
        assert client.set("any{key}", "1") and client.get("any{key}") == b"1"
    plain = redisconn.connect(f"redis://127.0.0.1:{port}/0")
    assert not isinstance(plain, RedisCluster)
    with pytest.raises(redis.exceptions.MovedError):  # a plain client on a cluster node: redirected
        for i in range(50):
            plain.get(f"probe-{i}")


def test_shared_structures_spread_over_every_primary(spare_cluster: LocalCluster) -> None:
    """Bot job streams, clock deadlines and match counters each have a shard on every primary, and each
    shard's deadlines and leases share a slot (the claim script touches both)."""
    client = redisconn.connect(spare_cluster.url)
    assert isinstance(client, RedisCluster)
    primaries = {node.port for node in spare_cluster.primary_nodes()}
    for keys in (BOT_JOB_STREAMS, MATCH_STATS_KEYS, tuple(d for d, _ in DEADLINE_SHARDS)):
        owners = {client.get_node_from_key(key).port for key in keys}
        assert owners == primaries, keys
    for deadlines, leases in DEADLINE_SHARDS:
        assert client.keyslot(deadlines) == client.keyslot(leases)


def test_a_slot_pipeline_follows_a_stale_slot_table_to_the_right_primary(spare_cluster: LocalCluster) -> None:
    """``on_slot`` runs a node's own pipeline from the client's slot table; when that table is stale (the
    slot moved in a failover), the node answers MOVED, nothing ran, and the call must re-read the table and
    run once on the right primary, never raise or run twice."""
    client = redisconn.connect(spare_cluster.url)
    assert isinstance(client, RedisCluster)
    key = "counter{on-slot}"
    slot = client.keyslot(key)
    owner = client.get_node_from_key(key)
    wrong = next(n for n in client.get_primaries() if n.name != owner.name)
    client.nodes_manager.slots_cache[slot] = [wrong]  # what the client believes after a missed failover

    def queue(pipe: Any) -> None:
        pipe.incr(key)
        pipe.expire(key, 60)

    assert redisconn.on_slot(client, key, queue)[0] == 1
    assert client.get_node_from_key(key).name == owner.name  # the table was re-read
    assert int(client.get(key)) == 1  # counted once


def _through_failover(call: Any, retry_s: float = 30.0) -> Any:
    """``call()`` again every 0.2 s while it answers 503 (a failover in progress), which must be clean."""
    give_up = time.monotonic() + retry_s
    while True:
        reply = call()
        if reply.status_code != 503 or time.monotonic() > give_up:
            return reply
        assert reply.json()["error"]["code"] == "store_unavailable"  # a clean 503, never a 500
        time.sleep(0.2)


def _play(api: Api, match_id: str, tokens: list[str], status: dict[str, Any], moves: int, rng: random.Random,
          acknowledged: list[dict[str, Any]]) -> dict[str, Any]:
    """Play ``moves`` random legal moves, retrying each (same Idempotency-Key) while the store answers 503."""
    for _ in range(moves):
        if status["status"] != "active":
            break
        seat = status["to_act"][0]
        legal = _through_failover(lambda s=seat: api.get(f"/v1/matches/{match_id}/legal-moves", tokens[s]))
        move = rng.choice(legal.json()["moves"])
        body = {"move": move, "version": status["version"]}
        key = f"{match_id}-{status['version']}"
        reply = _through_failover(lambda s=seat, b=body, k=key: api.post(  # type: ignore[misc]
            f"/v1/matches/{match_id}/moves", tokens[s], json=b, headers={"Idempotency-Key": k}))
        assert reply.status_code == 200, reply.text
        status = reply.json()
        acknowledged.append({"match_id": match_id, "seat": seat, "move": move, "version": status["version"]})
        while status["status"] == "active" and not status["to_act"]:
            status = _through_failover(lambda: api.get(f"/v1/matches/{match_id}")).json()
    return status


def test_a_primary_killed_mid_game_loses_no_acknowledged_move(replicated: LocalCluster, rules: RulesProcess) -> None:
    """kill -9 the primary holding a match: its replica takes over, the game goes on, and every move the
    client was told was applied is in the log (each was on the replica before it was acknowledged: WAIT)."""
    gateway = start_gateway(replicated.url, rules.port)
    try:
        api = Api(gateway.url)
        created = api.post("/v1/matches", json={"game": "clash", "players": 2, "join": True}).json()
        match_id = created["id"]
        tokens = [created["token"], api.post(f"/v1/matches/{match_id}/join", json={}).json()["token"]]
        status = api.get(f"/v1/matches/{match_id}").json()
        rng, acknowledged = random.Random(7), []  # type: ignore[var-annotated]
        status = _play(api, match_id, tokens, status, 6, rng, acknowledged)
        victim = replicated.node_for(f"match:{{{match_id}}}:version")
        replicated.kill(victim)
        status = _play(api, match_id, tokens, status, 6, rng, acknowledged)
        replicated.wait_healthy()
        assert replicated.node_for(f"match:{{{match_id}}}:version").port != victim.port  # the replica took over
        client = redisconn.connect(replicated.url)
        assert lost_acknowledged(client, acknowledged) == []
        assert len(acknowledged) >= 8
        audit = audit_match(client, match_id)
        assert audit.ok, audit.problem
        replicated.restart(victim)  # it comes back as the new primary's replica
        replicated.wait_healthy(replicas=1)
    finally:
        gateway.stop()


def test_an_update_waits_for_a_replica_when_the_primary_has_one(replicated: LocalCluster) -> None:
    client = redisconn.connect(replicated.url)
    store = MatchStore(client, 60, 60)
    replicated.wait_healthy(replicas=1)
    redisconn.refresh(client)
    assert store.replicas_to_wait("match:{m1}:version") == 1
    assert MatchStore(client, 60, 60, wait_replicas=0).replicas_to_wait("match:{m1}:version") == 0
    store.create("m1", MatchMeta(game="clash", status="active", to_act=[0], seats=[]), b"s0")
    # Acknowledged means on a replica: read it there at once (no waiting for replication to catch up).
    primaries = {node.port for node in replicated.primary_nodes()}
    seen = []
    for node in replicated.live():
        if node.port in primaries:
            continue
        reader = node.client()
        reader.execute_command("READONLY")
        try:
            seen.append(reader.get("match:{m1}:version"))
        except redis.exceptions.ResponseError:  # MOVED: a replica of another primary
            continue
    assert seen == [b"0"]


def test_an_update_no_replica_confirms_is_not_acknowledged(replicated: LocalCluster) -> None:
    """With the primary's replica frozen (SIGSTOP), WAIT times out: the update raises (the gateway answers
    503) instead of telling the client it is safe; once the replica is back, updates are acknowledged."""
    replicated.wait_healthy(replicas=1)
    client = redisconn.connect(replicated.url)
    store = MatchStore(client, 60, 60, wait_ms=200)
    meta = MatchMeta(game="clash", status="active", to_act=[0], seats=[])
    match = store.create("m2", meta, b"s0")
    replica = replicated.replicas_of(replicated.node_for("match:{m2}:version"))[0]
    assert replica.proc is not None
    os.kill(replica.proc.pid, signal.SIGSTOP)
    try:
        with pytest.raises(NotReplicated):
            store.update(match, meta, b"s1", {"kind": "move", "seat": 0, "to_act": [0]})
    finally:
        os.kill(replica.proc.pid, signal.SIGCONT)
    current = store.load("m2")
    assert current is not None
    updated = store.update(current, meta, b"s2", {"kind": "move", "seat": 0, "to_act": [0]})
    assert updated.version == current.version + 1


def test_a_counter_on_a_failing_over_primary_neither_holds_nor_refuses_a_healthy_matchs_request(
        replicated: LocalCluster) -> None:
    """An IP's (or a tenant's) rate-limit counter is one key on one primary. While that primary fails over,
    a request about a match on another primary used to wait out the failover (the load test's users, all
    on 127.0.0.1, stalled for 5 s); it is now served uncounted (fail open), and so is the check of how full
    the store is. A count of 0 is the proof, not a stopwatch: a call that waited out the failover would have
    been counted by the promoted replica."""
    replicated.wait_healthy(replicas=1)
    client = redisconn.connect(replicated.url)
    store = MatchStore(client, 60, 60)
    ident = "ip:203.0.113.9"
    counter = replicated.node_for(f"ratelimit:{{{ident}}}:0")
    match_id = next(f"c{i}" for i in range(100) if replicated.node_for(f"match:{{c{i}}}:version").port != counter.port)
    store.create(match_id, MatchMeta(game="clash", status="active", to_act=[0], seats=[]), b"s0")
    assert store.load_counted(match_id, ident)[1][0] == 1
    replicated.kill(counter)
    try:
        match, (count, _), _ = store.load_counted(match_id, ident)
        assert match is not None and count == 0
        store._room = (0.0, 0.0)  # due for a look at every primary's memory
        assert store.used_share() >= 0.0
    finally:
        replicated.wait_healthy()
        replicated.restart(counter)
        replicated.wait_healthy(replicas=1)
    redisconn.refresh(client)
    # counted again once the replica took over (it holds the first count too, unless the kill beat replication)
    assert store.hit(ident)[0] in (1, 2)


def test_reading_streams_asks_the_server_nothing_but_the_read(spare_cluster: LocalCluster) -> None:
    """XREAD/XREADGROUP have movable keys, for which redis-py's cluster client sends ``COMMAND GETKEYS``
    before every call: a bot worker's every take paid a round trip more. The client finds the streams itself."""
    client = redisconn.connect(spare_cluster.url)
    stream = BOT_JOB_STREAMS[0]
    client.xgroup_create(stream, "readers", id="0", mkstream=True)
    client.xadd(stream, {"job": "1"})

    def getkeys_calls() -> int:  # (Redis 6 counts COMMAND's subcommands under COMMAND)
        stats: list[Any] = [node.client().info("commandstats") for node in spare_cluster.primary_nodes()]
        return sum(int(s.get(name, {}).get("calls", 0)) for s in stats
                   for name in ("cmdstat_command", "cmdstat_command|getkeys"))

    before = getkeys_calls()
    taken: Any = client.xreadgroup("readers", "STREAMS", {stream: ">"}, count=1)  # a consumer named like the keyword
    assert taken[0][1][0][1] == {b"job": b"1"}
    assert client.xread({stream: "0-0"}, count=5, block=10)[0][0] == stream.encode()
    assert getkeys_calls() == before


def test_refreshing_the_slot_table_of_a_cluster_no_node_of_which_answers_raises_nothing() -> None:
    """The gateway's event subscription refreshes the slot table after each lost connection. With every node
    gone, redis-py raises RedisClusterException, which is no RedisError: it once ended that thread for good."""
    with redis_cluster() as cluster:
        client = redisconn.connect(cluster.url)
        assert client.ping()
    redisconn.refresh(client)  # every node is stopped now
    redisconn.refresh(client, failed=client.get_primaries()[0].name)  # as the bot worker's watcher asks
