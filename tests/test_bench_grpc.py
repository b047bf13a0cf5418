"""``meeple bench grpc``: unary calls and streams to two echo servers, timed side by side on processes it starts.

No wall-clock assertion (speed is the command's output, not a test's verdict): that every combination sent its
messages and got each one's own reply, that the ratios are the figures' ratios, that the default sizes are a real
move's, and that both servers are gone when it returns.
"""

from __future__ import annotations

import orjson
import pytest

from services.cli import main
from tooling.bench_floor import alive
from tooling.bench_grpc import real_sizes


def test_bench_grpc_times_every_server_and_client_shape_and_stops_its_servers(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "grpc", "--json", "--messages", "15", "--rounds", "2", "--warmup", "3",
                 "--request-bytes", "300", "--reply-bytes", "2000"]) == 0
    report = orjson.loads(capsys.readouterr().out)
    assert (report["request_bytes"], report["reply_bytes"], report["sizes_from"]) == (300, 2000, "given")
    assert set(report["results"]) == {f"{server}/{mode}" for server in ("sync", "aio")
                                      for mode in ("unary", "stream", "stream_ids")}
    for figures in report["results"].values():
        assert figures["messages"] == 30 and len(figures["cpu_us_by_round"]) == 2
        assert figures["server_cpu_us"] > 0 and figures["client_cpu_us"] > 0
        assert 0 < figures["rtt_p50_us"] <= figures["rtt_p95_us"]
    unary, stream = report["results"]["sync/unary"], report["results"]["sync/stream"]
    assert report["ratios"]["sync/stream_to_unary"]["server_cpu_us"] == round(
        stream["server_cpu_us"] / unary["server_cpu_us"], 3)
    assert len(report["started_pids"]) == 2
    assert not [pid for pid in report["started_pids"] if alive(pid)]


def test_the_default_message_sizes_are_a_real_moves_request_and_reply() -> None:
    sizes = real_sizes(moves=8)
    assert sizes["game"] == "fierce-women" and sizes["moves"] == 8
    # the request carries the sealed state; the reply the new state plus every seat's view, legal moves and words
    assert 1000 < sizes["request_bytes"] < sizes["reply_bytes"] <= sizes["reply_bytes_max"]
