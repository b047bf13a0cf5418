"""Tournament state in real Redis (one server and a cluster): compare-and-set with its events, registration
rules, tenant scoping, and the leased due index that lets any runner die without losing a tournament."""

from __future__ import annotations

import time
from typing import Any

import pytest
from redis.cluster import RedisCluster
from redis.crc import key_slot

from services.core.competition import ratings
from services.core.errors import Kind
from services.core.tournaments import machine, store

CLOCK = {"mode": "fischer", "base_s": 300, "increment_s": 5, "on_timeout": "bot"}
LADDER = ratings.shipped()["clash"]["ratings"]


def body(kind: str = "swiss", starts_in: float = 3600, **extra: Any) -> dict[str, Any]:
    fmt = {"kind": "swiss", "rounds": 3, "round_s": 1800} if kind == "swiss" else {"kind": "arena",
                                                                                   "duration_s": 1800}
    return {"name": "Friday", "game": "clash", "players_per_table": 2, "clock": CLOCK,
            "starts_at": time.time() + starts_in, "format": fmt, **extra}


def started(client: Any, tid: str, now: float) -> dict[str, Any]:
    """Run the machine's start as the runner would, saving its state and events."""
    version, doc, players = store.load(client, tid) or (0, {}, {})
    step = machine.advance(doc, players, {}, lambda names: dict.fromkeys(names, 25.0), LADDER, now)
    store.save(client, tid, version, step.doc, step.events)
    return step.doc


def test_a_tenant_creates_lists_and_registers_and_another_tenant_sees_nothing(client: Any, tenant: str) -> None:
    doc = store.create(client, tenant, body())
    tid = doc["id"]
    for player in ("u1", "u2", "u3"):
        store.register(client, tenant, tid, player)
    version, loaded, players = store.get(client, tenant, tid)
    assert version == 0 and loaded == doc and sorted(players) == ["u1", "u2", "u3"]
    page, nxt = store.listing(client, tenant)
    assert [(t["id"], t["registered"], t["status"]) for t in page] == [(tid, 3, "registering")] and nxt is None
    other = tenant + "-other"
    assert store.listing(client, other) == ([], None)
    for call in (lambda: store.get(client, other, tid), lambda: store.register(client, other, tid, "u9"),
                 lambda: store.unregister(client, other, tid, "u1")):
        with pytest.raises(machine.TournamentError) as err:
            call()
        assert err.value.code == "tournament_not_found"
    assert sorted(store.get(client, tenant, tid)[2]) == ["u1", "u2", "u3"]


def test_unregistering_removes_before_the_start_and_withdraws_after(client: Any, tenant: str) -> None:
    tid = store.create(client, tenant, body(starts_in=0))["id"]
    for player in ("u1", "u2", "u3"):
        store.register(client, tenant, tid, player)
    assert store.unregister(client, tenant, tid, "u3") == "removed"
    started(client, tid, time.time())
    assert store.unregister(client, tenant, tid, "u2") == "withdrawn"
    _, doc, players = store.get(client, tenant, tid)
    assert players["u2"]["withdrawn"] and machine.active(doc, players) == ["u1"]
    with pytest.raises(machine.TournamentError) as err:
        store.unregister(client, tenant, tid, "nobody")
    assert err.value.code == "player_not_registered"


def test_swiss_registration_closes_at_the_start_an_arenas_stays_open(client: Any, tenant: str) -> None:
    swiss = store.create(client, tenant, body(starts_in=0))["id"]
    arena = store.create(client, tenant, body("arena", starts_in=0))["id"]
    for tid in (swiss, arena):
        store.register(client, tenant, tid, "u1")
        store.register(client, tenant, tid, "u2")
        assert started(client, tid, time.time())["status"] == "running"
    with pytest.raises(machine.TournamentError) as err:
        store.register(client, tenant, swiss, "late")
    assert err.value.code == "registration_closed"
    store.register(client, tenant, arena, "late")
    assert "late" in store.get(client, tenant, arena)[2]


def test_a_full_tournament_refuses_a_new_player_but_not_a_returning_one(client: Any, tenant: str) -> None:
    tid = store.create(client, tenant, body(max_players=2))["id"]
    store.register(client, tenant, tid, "u1")
    store.register(client, tenant, tid, "u2")
    with pytest.raises(machine.TournamentError) as err:
        store.register(client, tenant, tid, "u3")
    assert err.value.code == "tournament_full"
    store.register(client, tenant, tid, "u2")  # registering again (after an absence) takes no new place


def test_a_save_is_compare_and_set_and_its_events_exist_exactly_when_it_does(client: Any, tenant: str) -> None:
    tid = store.create(client, tenant, body(starts_in=0))["id"]
    store.register(client, tenant, tid, "u1")
    store.register(client, tenant, tid, "u2")
    version, doc, players = store.load(client, tid) or (0, {}, {})
    step = machine.advance(doc, players, {}, lambda names: dict.fromkeys(names, 25.0), LADDER, time.time())
    assert store.save(client, tid, version, step.doc, step.events) == version + 1
    with pytest.raises(store.StaleState):  # a second runner that read the same version lost the race
        store.save(client, tid, version, step.doc, step.events)
    saved = store.outbox(client, tid)
    assert [(i, e["type"]) for _, i, e in saved] == [(f"{tid}:1", "tournament.started"),
                                                      (f"{tid}:2", "round.started")]
    store.ack(client, tid, [entry for entry, _, _ in saved])
    assert store.outbox(client, tid) == []
    assert store.load(client, tid) is not None and store.load(client, tid)[1]["status"] == "running"  # type: ignore[index]


def test_a_runner_that_dies_holding_a_lease_loses_no_tournament(client: Any, tenant: str) -> None:
    tid = store.create(client, tenant, body(starts_in=-30))["id"]  # due already
    now = time.time()
    assert tid in store.claim(client, now, lease_s=30, count=1000)  # a runner takes it, then dies
    assert tid not in store.claim(client, now + 1, lease_s=30, count=1000)  # nobody else while leased
    assert tid in store.claim(client, now + 31, lease_s=30, count=1000)  # the lease ran out: it is back
    store.release(client, tid, now + 600)
    assert tid not in store.claim(client, now + 32, lease_s=30, count=1000)
    store.wake(client, tid, now + 33)  # a match of it finished: due now, earlier than planned
    assert tid in store.claim(client, now + 34, lease_s=30, count=1000)
    store.release(client, tid, None)  # over: never due again
    assert tid not in store.claim(client, now + 10_000, lease_s=30, count=1000)


def test_a_wake_during_a_lease_is_kept_when_the_lease_is_released(client: Any, tenant: str) -> None:
    """A match finishes while a runner holds its tournament: the runner's release (due later) must not push the
    wake-up back."""
    tid = store.create(client, tenant, body(starts_in=-30))["id"]
    now = time.time()
    assert tid in store.claim(client, now, lease_s=30, count=1000)
    store.wake(client, tid, now + 1)
    store.release(client, tid, now + 900)
    assert tid in store.claim(client, now + 2, lease_s=30, count=1000)


def test_a_tournaments_keys_share_one_slot_and_due_shards_cover_every_primary(client: Any, tenant: str) -> None:
    tid = store.create(client, tenant, body())["id"]
    assert len({key_slot(k.encode()) for k in store.keys(tid).values()}) == 1
    for due, leases in store.DUE_SHARDS:
        assert key_slot(due.encode()) == key_slot(leases.encode())
    if isinstance(client, RedisCluster):
        owners = {client.get_node_from_key(due).name for due, _ in store.DUE_SHARDS}
        assert owners == {n.name for n in client.get_primaries()}


def test_bad_settings_and_unknown_ids_are_domain_errors(client: Any, tenant: str) -> None:
    with pytest.raises(machine.TournamentError) as err:
        store.create(client, tenant, body(players_per_table=9))
    assert err.value.kind is Kind.MALFORMED
    for tid in ("nope", "x" * 65, "bad id"):
        with pytest.raises(machine.TournamentError) as err:
            store.get(client, tenant, tid)
        assert err.value.kind is Kind.NOT_FOUND
