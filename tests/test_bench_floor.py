"""``meeple bench floor``: the move path and a bare Flask route, timed side by side on processes it starts.

No wall-clock assertion (speed is the command's output, not a test's verdict): that the figures are there,
that the ratio is the two medians' ratio, and that every process it started is gone when it returns.
"""

from __future__ import annotations

import orjson
import pytest

from services.cli import main
from tooling.bench_floor import alive


def test_bench_floor_times_moves_the_bare_route_and_the_io_floor_and_stops_what_it_started(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "floor", "--json", "--moves", "6", "--warmup", "2"]) == 0
    report = orjson.loads(capsys.readouterr().out)
    for kind in ("bare", "floor_io", "move", "socket_move", "core_move"):
        figures = report[kind]
        assert figures["requests"] == 6
        assert 0 < figures["p50_ms"] <= figures["p95_ms"]
    assert set(report["move"]["cpu_ms"]) == set(report["floor_io"]["cpu_ms"]) == {"gateway", "rules", "redis"}
    assert set(report["socket_move"]["cpu_ms"]) == {"gateway", "rules", "redis"}
    assert report["socket_move"]["cpu_ms_total"] == pytest.approx(sum(report["socket_move"]["cpu_ms"].values()),
                                                                   abs=0.01)
    assert report["socket_move"]["p50_ms_by_game"]  # played over the sockets, every seat on its own
    assert set(report["socket_move"]["cpu_ms_total_by_game"]) == set(report["socket_move"]["p50_ms_by_game"])
    assert report["ratio_socket_move_to_move_p50"] == round(
        report["socket_move"]["p50_ms"] / report["move"]["p50_ms"], 3)
    # the core's own move: in this process (no gateway), on the same Redis and rules service
    assert set(report["core_move"]["cpu_ms"]) == {"core", "rules", "redis"}
    assert report["core_move"]["cpu_ms"]["core"] > 0 and report["core_move"]["p50_ms_by_game"]
    assert report["ratio_core_move_to_move_p50"] == round(report["core_move"]["p50_ms"] / report["move"]["p50_ms"], 3)
    assert set(report["bare"]["cpu_ms"]) == {"gateway"}
    assert report["ratio_move_to_bare_p50"] == round(report["move"]["p50_ms"] / report["bare"]["p50_ms"], 3)
    assert report["ratio_floor_io_to_bare_p50"] == round(report["floor_io"]["p50_ms"] / report["bare"]["p50_ms"], 3)
    assert report["ratio_move_to_floor_io_p50"] == round(report["move"]["p50_ms"] / report["floor_io"]["p50_ms"], 3)
    assert report["move"]["p50_ms_by_game"]  # real matches of real games were played
    assert len(report["started_pids"]) == 6  # redis, rules, two gunicorn masters and their workers
    assert not [pid for pid in report["started_pids"] if alive(pid)]


def test_bench_peers_sets_boardgameio_beside_our_moves_with_the_issues_ratios(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The peer harness (node) and our moves in one run: the figures are there and each ratio is its figures'."""
    from tooling.bench_peers import PEER_DIR

    if not (PEER_DIR / "run.js").exists():
        pytest.skip(f"no peer harness at {PEER_DIR}")
    assert main(["bench", "peers", "--json", "--rounds", "1", "--duration", "1", "--moves", "4"]) == 0
    report = orjson.loads(capsys.readouterr().out)
    (only,) = report["rounds"]
    tricks, ours = only["boardgameio"]["tricks"], only["meeple"]
    assert tricks["moves"] > 0 and tricks["server_cpu_ms_per_move"] > 0
    assert only["ratios"]["socket_cpu_over_peer"] == round(
        ours["socket_move"]["cpu_ms_total"] / tricks["server_cpu_ms_per_move"], 2)
    assert only["ratios"]["rest_p50_over_floor_io"] == round(ours["move"]["p50_ms"] / ours["floor_io"]["p50_ms"], 2)
    assert only["ratios"]["core_cpu_over_peer"] == round(
        ours["core_move"]["cpu_ms_total"] / tricks["server_cpu_ms_per_move"], 2)
    if "fierce-women" in ours["socket_move"]["cpu_ms_total_by_game"]:  # like for like: 2 seats, hidden hands
        assert only["ratios"]["socket_cpu_2p_cards_over_peer"] == round(
            ours["socket_move"]["cpu_ms_total_by_game"]["fierce-women"] / tricks["server_cpu_ms_per_move"], 2)
    assert set(report["targets"]) == {"socket_cpu_over_peer", "socket_p50_over_peer", "rest_p50_over_floor_io"}
    assert not [pid for pid in ours["started_pids"] if alive(pid)]
