"""Bot matches' stall per class at a fault: the classification by slot owner and the stall rule on synthetic
samples, and the observer on a real Redis Cluster with a primary down."""

from __future__ import annotations

import tempfile
from pathlib import Path

from redis.crc import key_slot

from loadtests.botstall import (
    ALL,
    HEALTHY,
    KILLED,
    STREAM_KILLED,
    Observer,
    Sample,
    binned_stall,
    classify,
    connect,
    decode,
    encode_sample,
    encode_table,
    fault_figures,
    slot_table,
    stall_by_class,
    table_at,
)
from services.core.match.bots_seam import bot_jobs_stream
from services.core.record.store import keys
from tooling.rediscluster import LocalCluster

#: Three primaries with the slot ranges `redis-cli --cluster create` gives them.
TABLE = [(0, 5460, "a:1"), (5461, 10922, "b:2"), (10923, 16383, "c:3")]


#: A primary (c) whose few slots hold none of the job streams: its matches' jobs must go to another's stream.
LOPSIDED = [(0, 5460, "a:1"), (5461, 15999, "b:2"), (16000, 16383, "c:3")]


def _owner(key: str, table: list[tuple[int, int, str]] = TABLE) -> str:
    slot = key_slot(key.encode())
    return next(node for first, last, node in table if first <= slot <= last)


def _ids_where(match_node: str, stream_node: str, count: int = 1, table: list[tuple[int, int, str]] = TABLE
               ) -> list[str]:
    """Match ids whose keys and shard's job stream (the stream without a slot table) live on the given primaries
    of ``table``."""
    found = []
    for i in range(200_000):
        match_id = f"m{i}"
        if (_owner(keys(match_id)[0], table) == match_node
                and _owner(bot_jobs_stream(match_id), table) == stream_node):
            found.append(match_id)
            if len(found) == count:
                return found
    raise AssertionError(f"no id on {match_node}/{stream_node}")


def test_a_match_is_classed_by_the_primaries_of_its_keys_and_of_its_job_stream() -> None:
    """Killed primary b: a match on b is stalled by it whatever its stream; a match elsewhere whose jobs are on a
    stream on b is a class of its own; the rest are healthy; no primary killed: one class. The core queues a
    match's jobs on its own primary where that primary holds a stream (services/core/match/bots_seam.py), so a match on
    c whose shard's stream is on b is healthy; only a primary that holds no stream sends its jobs elsewhere."""
    on_b = _ids_where("b:2", "b:2")[0]
    shard_stream_on_b = _ids_where("c:3", "b:2")[0]
    elsewhere = _ids_where("a:1", "a:1")[0]
    assert classify(on_b, TABLE, "b:2") == KILLED
    assert classify(shard_stream_on_b, TABLE, "b:2") == HEALTHY  # its jobs go to a stream on c
    assert classify(elsewhere, TABLE, "b:2") == HEALTHY
    assert classify(on_b, TABLE, None) == ALL
    on_c = _ids_where("c:3", "b:2", table=LOPSIDED)[0]
    assert classify(on_c, LOPSIDED, "b:2") == STREAM_KILLED


def test_the_slot_table_in_force_is_the_newest_one_seen_before_the_fault() -> None:
    after_failover = [(0, 5460, "a:1"), (5461, 10922, "d:4"), (10923, 16383, "c:3")]
    tables = [(100.0, TABLE), (130.0, after_failover)]
    assert table_at(tables, 120.0) == TABLE
    assert table_at(tables, 131.0) == after_failover
    assert table_at(tables, 50.0) == TABLE  # none before: the first


def _steady(match_id: str, start: int, stop: int, per_s: int = 4, stalled: range = range(0), v0: int = 0
            ) -> list[Sample]:
    """Samples every 0.5 s of a match making ``per_s`` versions a second, none in the seconds ``stalled``."""
    out, version = [], v0
    for half in range(start * 2, stop * 2):
        t = half / 2
        if int(t) not in stalled:
            version += per_s // 2
        out.append(Sample(t, match_id, version, True))
    return out


def test_healthy_bot_matches_go_on_while_the_killed_primarys_stall_for_the_failover() -> None:
    """Two healthy matches keep their pace; the killed primary's match makes no version for 6 s after the kill
    at t=1000: its class stalls 6 s (from 0 to 6 s after the fault), the healthy class 0 s."""
    healthy = _ids_where("a:1", "a:1", 2)
    killed = _ids_where("b:2", "b:2")[0]
    samples = [*_steady(healthy[0], 980, 1030), *_steady(healthy[1], 980, 1030),
               *_steady(killed, 980, 1030, stalled=range(1000, 1006))]
    figures = fault_figures(samples, [(970.0, TABLE)], 1000.0, 1025.0, "b:2")
    assert set(figures) == {HEALTHY, KILLED}
    assert figures[HEALTHY]["stalled_s"] == 0 and figures[HEALTHY]["matches"] == 2
    assert (figures[HEALTHY]["versions_per_s_before"], figures[HEALTHY]["bin_s"]) == (8.0, 1)
    assert (figures[KILLED]["stalled_s"], figures[KILLED]["stall_from_s"], figures[KILLED]["stall_to_s"]) == (6, 0, 6)
    assert figures[KILLED]["bin_s"] == 2  # 4 versions a second: counted two seconds at a time
    assert figures[KILLED]["longest_idle_s"] == 6.0  # from the fault to its next version, at 1006.0
    assert figures[HEALTHY]["longest_idle_s"] == 0.5 == figures[HEALTHY]["longest_idle_before_s"]


def test_a_finished_match_is_not_a_stalled_one_and_a_class_with_no_pace_before_says_so() -> None:
    """A match that finishes at the fault stops making versions: it is no longer counted as live; a class whose
    matches made nothing in the 10 s before has no usual rate (stalled_s None rather than a made-up 0)."""
    ids = _ids_where("a:1", "a:1", 3)
    ends = [*_steady(ids[0], 980, 1000), Sample(1000.0, ids[0], 82, False)]  # its last move, at the fault
    goes_on = _steady(ids[1], 980, 1030)
    late = _steady(ids[2], 1005, 1030)  # created after the fault
    figures = stall_by_class([*ends, *goes_on, *late], dict.fromkeys(ids, HEALTHY), 1000.0, 1020.0)
    assert figures[HEALTHY]["matches"] == 1 and figures[HEALTHY]["matches_seen"] == 3
    assert figures[HEALTHY]["stalled_s"] == 0  # one match's 4 a second of the 8 before: half, not under it
    idle = stall_by_class([Sample(995.0, ids[0], 3, True), Sample(1005.0, ids[0], 3, True)],
                          {ids[0]: HEALTHY}, 1000.0, 1010.0)
    assert idle[HEALTHY]["stalled_s"] is None and idle[HEALTHY]["longest_idle_s"] == 5.0


def test_the_watch_process_lines_round_trip() -> None:
    sample = Sample(12.5, "abc", 7, True)
    assert decode(encode_sample(sample)) == ("sample", sample)
    assert decode(encode_table(3.0, TABLE)) == ("table", (3.0, TABLE))


def test_the_observer_reads_the_healthy_primaries_matches_while_one_primary_is_down() -> None:
    """A real 3-primary cluster: matches on every primary; one primary killed; the observer's next rounds read
    every match on the two others (and none of the dead one's), and its slot table names the dead primary."""
    with tempfile.TemporaryDirectory() as data:
        cluster = LocalCluster(3, 0, Path(data), node_timeout_ms=1500).start()
        try:
            client = connect(cluster.url)
            ids = [f"obs{i}" for i in range(30)]
            for n, match_id in enumerate(ids):
                version_key, meta_key = keys(match_id)[:2]
                client.set(version_key, n)
                client.set(meta_key, b'{"status": "active"}')
            observer = Observer(client)
            for match_id in ids:
                observer.watch(match_id)
            assert observer.sample_once(wait_s=60) == 30  # (a failure detector's bound, not a measurement)
            table = slot_table(client)
            dead = cluster.primary_nodes()[0]
            dead_name = next(node for _, _, node in table if node.endswith(f":{dead.port}"))
            on_dead = {m for m in ids if classify(m, table, dead_name) == KILLED}
            assert 0 < len(on_dead) < 30
            cluster.kill(dead)
            read = [observer.sample_once(wait_s=60) for _ in range(3)]
            assert read[-1] == 30 - len(on_dead)
            latest = {s.match_id for s in observer.samples[-read[-1]:]}
            assert latest == set(ids) - on_dead
            observer.stop()
        finally:
            cluster.stop()


def test_a_bot_wait_runs_from_the_first_sample_with_a_bot_to_act_to_the_first_newer_version() -> None:
    """Waits on the bot workers are told apart from waits on the person: only samples with a bot to act open
    one, and the fault's window clips them (4 s of a wait from 998 to 1004 fall after a fault at 1000)."""
    ids = _ids_where("a:1", "a:1", 2)
    on_bot = [Sample(990.0, ids[0], 5, True, False), Sample(991.0, ids[0], 6, True, True),
              Sample(992.0, ids[0], 7, True, False), Sample(998.0, ids[0], 8, True, True),
              Sample(1001.0, ids[0], 8, True, True), Sample(1004.0, ids[0], 9, True, False),
              Sample(1010.0, ids[0], 10, True, False)]
    on_person = [Sample(990.0, ids[1], 1, True, False), Sample(1009.0, ids[1], 1, True, False),
                 Sample(1010.0, ids[1], 2, True, True)]
    figures = stall_by_class([*on_bot, *on_person], dict.fromkeys(ids, HEALTHY), 1000.0, 1010.0)[HEALTHY]
    assert (figures["longest_bot_wait_s"], figures["longest_bot_wait_before_s"]) == (4.0, 2.0)
    assert figures["longest_idle_s"] == 10.0  # the person's match: idle, but not on a bot


def test_a_class_making_few_versions_is_counted_in_bins_long_enough_to_tell_a_stall_from_noise() -> None:
    """2 versions a second before the fault: 1 s counts of 0 to 4 are its usual noise, so it is counted 4 s at
    a time (8 versions at the usual rate): a 4 s bin with 2 is under half of that, one with 6 is not."""
    before = {s: (0, 4, 1, 3, 2)[s % 5] for s in range(990, 1000)}  # 20 in 10 s, lumpy
    after = {**before, **{s: (0, 3)[s % 2] for s in range(1000, 1004)},  # 6 in the first 4 s
             **{s: (1, 0)[s % 2] for s in range(1004, 1008)}, **{s: 2 for s in range(1008, 1012)}}
    assert binned_stall(after, 1000.0, 1012.0) == {"per_s_before": 2.0, "bin_s": 4, "stalled_s": 4,
                                                   "stall_from_s": 4.0, "stall_to_s": 8.0}
    assert binned_stall({s: 9 for s in range(990, 1003)}, 1000.0, 1003.0) == {"per_s_before": 9.0, "bin_s": 1,
                                                                               "stalled_s": 0}
