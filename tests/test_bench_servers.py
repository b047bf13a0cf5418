"""``meeple bench servers``: the gateway's app under granian and under our connection worker, on processes it starts.

No wall-clock assertion (speed is the command's output, not a test's verdict): that both servers played the same
moves and answered the status reads, that the ratios are the figures' ratios, what each server does with a
WebSocket upgrade, and that every process it started is gone when it returns.
"""

from __future__ import annotations

import orjson
import pytest

from services.cli import main
from tooling.bench_floor import alive


def test_bench_servers_times_both_servers_probes_what_they_hold_and_stops_what_it_started(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "servers", "--json", "--moves", "4", "--warmup", "2", "--threads", "2", "--wait", "1"]) == 0
    report = orjson.loads(capsys.readouterr().out)
    for name in ("gunicorn_move", "granian_move", "gunicorn_status", "granian_status"):
        figures = report[name]
        assert figures["requests"] == 4 and 0 < figures["p50_ms"] <= figures["p95_ms"]
        assert set(figures["cpu_ms"]) == {"gateway", "rules", "redis"} and figures["cpu_ms"]["gateway"] > 0
    # the same seed: the same games, in the same order, on both
    assert report["gunicorn_move"]["p50_ms_by_game"].keys() == report["granian_move"]["p50_ms_by_game"].keys()
    move = report["ratio_granian_to_gunicorn_move"]
    assert move["p50"] == round(report["granian_move"]["p50_ms"] / report["gunicorn_move"]["p50_ms"], 3)
    holds = report["holds"]
    assert (holds["gunicorn"]["websocket_upgrade"], holds["gunicorn"]["websocket_error"]) == (101, "")
    assert (holds["granian"]["websocket_upgrade"], holds["granian"]["websocket_error"]) == (501,
                                                                                            "websocket_unsupported")
    assert holds["granian"]["long_polls"] == 2 and holds["granian"]["status_read_ms"] > 0
    assert len(report["started_pids"]) == 6  # redis, rules, gunicorn and its worker, granian and its worker
    assert not [pid for pid in report["started_pids"] if alive(pid)]
