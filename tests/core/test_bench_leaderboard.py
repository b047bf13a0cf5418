"""``meeple bench leaderboard`` end to end at a small size: it fills, reads, checks itself against a plain sort
and cleans up, on one server and on a cluster it starts itself (its figures are printed, never asserted)."""

from __future__ import annotations

import orjson
import pytest

from services.cli import main


def test_the_bench_fills_reads_and_verifies_on_one_server_and_a_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "leaderboard", "--players", "3000", "--reads", "20", "--redis", "both", "--json"]) == 0
    report = orjson.loads(capsys.readouterr().out)
    targets = [r["target"] for r in report["results"]]
    assert targets == ["single redis-server", "cluster (3 primaries)"]
    for result in report["results"]:
        assert result["verified"] and result["players"] == 3000 and result["shards"] == 8
        for kind in ("rank", "top100", "top100_at_5000", "around", "floor_ping", "floor_fanout"):
            assert set(result[kind]) == {"p50_ms", "p95_ms", "p99_ms", "mean_ms", "client_cpu_ms", "server_ms"}
