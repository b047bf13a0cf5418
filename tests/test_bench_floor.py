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
    for kind in ("bare", "floor_io", "move"):
        figures = report[kind]
        assert figures["requests"] == 6
        assert 0 < figures["p50_ms"] <= figures["p95_ms"]
    assert set(report["move"]["cpu_ms"]) == set(report["floor_io"]["cpu_ms"]) == {"gateway", "rules", "redis"}
    assert set(report["bare"]["cpu_ms"]) == {"gateway"}
    assert report["ratio_move_to_bare_p50"] == round(report["move"]["p50_ms"] / report["bare"]["p50_ms"], 3)
    assert report["ratio_floor_io_to_bare_p50"] == round(report["floor_io"]["p50_ms"] / report["bare"]["p50_ms"], 3)
    assert report["ratio_move_to_floor_io_p50"] == round(report["move"]["p50_ms"] / report["floor_io"]["p50_ms"], 3)
    assert report["move"]["p50_ms_by_game"]  # real matches of real games were played
    assert len(report["started_pids"]) == 6  # redis, rules, two gunicorn masters and their workers
    assert not [pid for pid in report["started_pids"] if alive(pid)]
