"""``meeple loadtest`` end to end with a tiny bounded run, and the pieces its report is computed from."""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from loadtests.runner import (
    LOCUSTFILE,
    LoadConfig,
    gateway_workers_for,
    last_rows,
    parse_think,
    parse_weights,
    run_loadtest,
)
from services.cli import main
from tooling import promtext

SUMMARY_KEYS = {"users", "duration_s", "requests", "failures", "moves_per_s", "endpoints", "baseline",
                "corrupted_matches", "redis", "acknowledged_moves", "lost_acknowledged_moves", "failures_by_error",
                "sdk_retries", "per_human_move", "move_wait_share", "gateway_workers", "server"}


def test_a_tiny_run_boots_the_stack_plays_audits_and_reports(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    # 12 s: under the suite's parallel load, 8 s once ended before any user's first move was acknowledged
    # (the users' first turns wait for bot moves, and the bot workers share the two cores)
    code = main(["loadtest", "--users", "4", "--spawn-rate", "4", "--duration", "12", "--out", str(out), "--json",
                 "--quiet", "--think", "0,0.05"])
    summary = orjson.loads(capsys.readouterr().out)
    assert code == 0
    assert set(summary) == SUMMARY_KEYS
    assert summary["users"] == 4 and 11 <= summary["duration_s"] <= 16
    assert summary["gateway_workers"] == gateway_workers_for(os.cpu_count())  # the default: one per two cores
    assert summary["requests"] > 20 and summary["failures"] == 0, (out / "report.md").read_text()
    assert summary["corrupted_matches"] == 0
    # every move a user saw acknowledged was recorded, and each is in the store
    assert summary["acknowledged_moves"] > 0 and summary["lost_acknowledged_moves"] == 0
    move = summary["endpoints"]["move"]
    assert set(move) == {"p50_ms", "p95_ms", "p99_ms", "rps"} and move["p50_ms"] <= move["p99_ms"]
    assert summary["moves_per_s"] > 0
    assert set(summary["baseline"]) == {"p50_ms", "p99_ms", "rps"} and summary["baseline"]["rps"] > 0
    per = summary["per_human_move"]  # what a move cost, in counts that do not drift with the machine's speed
    assert per["gateway_requests"] >= 1 and per["rules_calls"] >= 1 and per["gateway_redis_round_trips"] >= 2
    assert per["cpu_ms"]["gateway"] > 0 and per["bot_moves"] >= 0
    server = [ms for name, ms in per["cpu_ms"].items() if name in ("gateway", "rules-0", "redis")]
    assert per["server_cpu_ms"] == pytest.approx(sum(server), abs=0.02)  # each part rounded to 0.01 ms
    report = (out / "report.md").read_text()
    for section in ("## Summary", "## Targets", "## Latency and throughput per endpoint", "## Server side",
                    "## Bot load", "## Where the CPU went", "## Per human move", "## Match audit", "p50 / baseline",
                    "server CPU per human move (gateway + rules + Redis"):
        assert section in report
    assert "`/v1/matches/<match_id>/moves`" in report  # the gateway's own histogram, scraped from gunicorn
    assert "ApplyMove" in report  # the rules service's
    assert "host speed check" in report  # runs on a drifting machine compare only at similar speeds
    assert (out / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for name in ("locust_stats.csv", "locust_stats_history.csv", "locust_failures.csv", "summary.json",
                 "metrics/gateway.prom", "metrics/rules-0.prom", "metrics/bots-0.prom"):
        assert (out / name).exists(), name
    assert orjson.loads((out / "summary.json").read_bytes()) == summary


def test_a_load_test_starts_one_gateway_process_per_two_cores_and_two_for_chaos() -> None:
    # each gateway process more costs CPU of its own on a machine the whole stack shares (runner.py says how much)
    assert [gateway_workers_for(cores) for cores in (None, 1, 2, 3, 4, 8)] == [1, 1, 1, 1, 2, 4]
    assert gateway_workers_for(2, chaos=True) == 2  # the chaos kills one gateway worker and restarts another
    assert gateway_workers_for(8, chaos=True) == 4
    assert LoadConfig().gateway_workers == gateway_workers_for(os.cpu_count())
    assert LoadConfig(chaos=True).gateway_workers == gateway_workers_for(os.cpu_count(), chaos=True)
    assert LoadConfig(gateway_workers=3).gateway_workers == 3


def test_the_request_cap_ends_a_run_before_its_duration(tmp_path: Path) -> None:
    summary, out = run_loadtest(LoadConfig(users=3, spawn_rate=3, duration_s=120, out=tmp_path, max_requests=60,
                                           quiet=True))
    report = (out / "report.md").read_text()
    assert "(request cap reached)" in report  # said only when Locust stopped by itself before the duration
    assert summary["failures"] == 0 and summary["corrupted_matches"] == 0, report


def test_locust_refuses_any_host_but_loopback_before_a_user_starts() -> None:
    # 192.0.2.1 is a documentation address: even a broken guard would reach nobody.
    out = subprocess.run([sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "-u", "1", "-r", "1",
                          "-t", "5s", "--host", "http://192.0.2.1:9", "--only-summary"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "refusing to load 'http://192.0.2.1:9'" in out.stdout + out.stderr
    assert "Aggregated" not in out.stdout + out.stderr


def test_the_progress_line_reads_the_newest_whole_second_of_a_history_cut_short(tmp_path: Path) -> None:
    """Locust's buffered writes leave the history's last second half written while the runner reads it: the
    progress line showed "users 0" and no requests for the first 40 s of a run whose users were all playing."""
    history = tmp_path / "locust_stats_history.csv"
    header = "Timestamp,User Count,Type,Name,Requests/s,Total Request Count\n"
    second = ("{t},50,POST,move,60.0,{n}\n"
              "{t},50,,Aggregated,230.0,{m}\n")
    history.write_text(header + second.format(t=100, n=600, m=2300) + second.format(t=101, n=660, m=2530)
                       + "102,50,POST,move,61.0,72")
    rows = last_rows(history)
    assert rows["Aggregated"]["User Count"] == "50"
    assert rows["move"]["Total Request Count"] == "660"
    history.write_text(header + "100,0,POST,mo")
    assert last_rows(history) == {}


def test_histogram_quantiles_interpolate_inside_buckets_like_promql() -> None:
    buckets = [(0.01, 50.0), (0.02, 90.0), (0.05, 100.0), (math.inf, 100.0)]
    assert promtext.quantile(0.5, buckets) == pytest.approx(0.01)
    assert promtext.quantile(0.7, buckets) == pytest.approx(0.015)
    assert promtext.quantile(0.95, buckets) == pytest.approx(0.035)
    assert promtext.quantile(1.0, [(0.1, 1.0), (math.inf, 2.0)]) == pytest.approx(0.1)  # +Inf: the last bound
    assert math.isnan(promtext.quantile(0.5, [(0.1, 0.0), (math.inf, 0.0)]))


def test_scrapes_subtract_and_group() -> None:
    before = promtext.parse('x_total{a="1",b="p"} 2\nx_total{a="1",b="q"} 1\n')
    after = promtext.parse('x_total{a="1",b="p"} 5\nx_total{a="1",b="q"} 4\nx_total{a="2",b="q"} 1\n')
    change = promtext.delta(after, before)
    assert promtext.totals(change, "x_total", ("a",)) == {("1",): 6.0, ("2",): 1.0}
    assert promtext.value(change, "x_total", {"b": "q"}) == 4.0


def test_cli_arguments_are_validated() -> None:
    assert parse_weights("bots=1,pairs=0") == {"bots": 1, "pairs": 0}
    assert parse_think("0.2") == (0.2, 0.2)
    for bad in ("robots=1", "bots=0,pairs=0", "bots=x"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_weights(bad)
    with pytest.raises(argparse.ArgumentTypeError):
        parse_think("1,0")


def test_chaos_failures_group_into_windows_measured_from_the_first_kill() -> None:
    from loadtests.runner import Chaos
    from tooling.stack import Stack, StackConfig

    chaos = Chaos(Stack(StackConfig()), 60)
    chaos.events = [(1000.0, "kill -9 redis primary :1"), (1010.0, "kill -9 rules-1 (pid 2)")]
    report = chaos.report([(1001.0, 3), (1004.0, 2), (1030.0, 1)])
    assert [e["at_s"] for e in report["events"]] == [0.0, 10.0]
    windows = [(w["from_s"], w["to_s"], w["failures"], w["length_s"]) for w in report["failure_windows"]]
    assert windows == [(1.0, 4.0, 5, 4.0), (30.0, 30.0, 1, 1.0)]


def test_each_fault_owns_the_errors_until_the_next_fault_split_into_failed_and_retried() -> None:
    from loadtests.runner import Chaos, retries_by_error
    from tooling.stack import Stack, StackConfig

    chaos = Chaos(Stack(StackConfig()), 60)
    chaos.events = [(1000.0, "kill -9 redis primary :1"), (1015.0, "redis node 1 started again"),
                    (1020.0, "kill -9 gateway worker (pid 3)"), (1030.0, "SIGTERM gateway worker (pid 4): graceful")]
    errors = [{"at": 1001.0, "name": "move", "error": "503 store_unavailable", "retried": True},
              {"at": 1006.5, "name": "move", "error": "503 store_unavailable", "retried": False},
              {"at": 1016.0, "name": "move", "error": "503 store_unavailable", "retried": True},
              {"at": 1020.2, "name": "move", "error": "RemoteProtocolError", "retried": True}]
    faults = chaos.report([], errors)["faults"]
    assert [f["what"][:9] for f in faults] == ["kill -9 r", "kill -9 g", "SIGTERM g"]  # restarts are no fault
    assert (faults[0]["failed"], faults[0]["retried"], faults[0]["window_s"]) == (1, 2, 15.0)
    assert faults[0]["kinds"] == {"503 store_unavailable (retried)": 2, "503 store_unavailable (failed)": 1}
    assert (faults[1]["first_error_s"], faults[1]["kinds"]) == (0.2, {"RemoteProtocolError (retried)": 1})
    assert faults[2] == {"what": "SIGTERM gateway worker (pid 4): graceful", "failed": 0, "retried": 0, "kinds": {}}
    assert retries_by_error(errors) == {"move: 503 store_unavailable": 2, "move: RemoteProtocolError": 1}


def test_a_failover_ridden_out_by_retries_shows_as_the_seconds_moves_stalled() -> None:
    """No failures, yet the moves stopped while the slot's replica took over: each fault reports the seconds
    in which fewer than half the moves of the 10 s before it completed (Locust's rows: one a second)."""
    from loadtests.runner import Chaos
    from tooling.stack import Stack, StackConfig

    chaos = Chaos(Stack(StackConfig()), 60)
    chaos.events = [(1000.0, "kill -9 redis primary :1"), (1030.0, "kill -9 rules-1 (pid 2)")]
    per_second = {**{t: 200 for t in range(985, 1040)}, 1002: 90, 1003: 0, 1004: 0, 1005: 120, 1031: 150}
    faults = chaos.report([], [], sorted((float(t), n) for t, n in per_second.items()))["faults"]
    assert (faults[0]["stalled_s"], faults[0]["stall_from_s"], faults[0]["stall_to_s"]) == (3, 1.0, 4.0)
    assert faults[0]["moves_per_s_before"] == 200 and faults[0]["failed"] == 0
    assert faults[1]["stalled_s"] == 0  # 150 of 200 is a dip, not a stall


def test_failures_are_counted_by_request_and_error() -> None:
    from loadtests.runner import failures_by_error

    rows = [{"Name": "move", "Error": "LocustBadStatusCode(code=503)", "Occurrences": "4"},
            {"Name": "move", "Error": "LocustBadStatusCode(code=503)", "Occurrences": "1"},
            {"Name": "create match", "Error": "LocustBadStatusCode(code=500)", "Occurrences": "2"}]
    assert failures_by_error(rows) == {"move: LocustBadStatusCode(code=503)": 5,
                                       "create match: LocustBadStatusCode(code=500)": 2}


def test_after_the_preload_every_nodes_append_only_file_holds_the_store_and_no_rewrite_is_left(
        tmp_path: Path) -> None:
    """The copy's burst must not leave a whole-store AOF rewrite to run during the measured half."""
    from loadtests.runner import settle_aof
    from services import redisconn
    from tooling.rediscluster import LocalCluster

    cluster = LocalCluster(3, 0, tmp_path, appendonly=True).start()
    try:
        client = redisconn.connect(cluster.url)
        for i in range(0, 3000, 500):
            pipe = client.pipeline(transaction=False)
            for j in range(i, i + 500):
                pipe.set(f"match:{{m{j}}}:state", "x" * 2000)
            pipe.execute()
        settle_aof(client, timeout_s=60)
        for node in client.get_primaries():
            info = client.execute_command("INFO", "persistence", target_nodes=node)
            info = next(iter(info.values())) if "aof_enabled" not in info else info
            assert int(info["aof_rewrite_in_progress"]) == 0 and int(info["aof_rewrite_scheduled"]) == 0
            assert 0 < int(info["aof_current_size"]) <= 1.2 * int(info["aof_base_size"]), info
    finally:
        cluster.stop()


def test_server_cpu_per_human_move_sums_the_gateway_every_rules_replica_and_every_redis_node_only() -> None:
    """Issue 47's figure: the server a move runs through, without Locust, the bots and the background workers."""
    from loadtests.runner import per_human_move

    cpu = {"gateway": 1.0, "rules-0": 0.5, "rules-1": 0.25, "redis": 0.2, "redis-0": 0.04, "redis-1-again": 0.01,
           "bots-0": 3.0, "locust": 5.0, "timekeeper": 0.1, "webhooks": 0.1}
    per = per_human_move({}, cpu, 100)
    assert per["server_cpu_ms"] == 20.0  # (1.0 + 0.5 + 0.25 + 0.2 + 0.04 + 0.01) s over 100 moves
    assert per["cpu_ms"]["locust"] == 50.0 and per["cpu_ms"]["bots-0"] == 30.0  # still each shown on its own
    assert per_human_move({}, cpu, 0) == {}  # no acknowledged move: no figure, not a division by zero
