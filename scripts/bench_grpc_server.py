"""The rules service's CPU per call under grpcio's threaded server (as deployed) and under ``grpc.aio``, busy and
idle between calls.

    .venv/bin/python scripts/bench_grpc_server.py [--games 3] [--max-moves 80] [--gaps-ms 0,3] [--json]

Two real server processes of the same servicer (sealing with one key): ``python -m services.rules.server`` (a
thread pool of 8) and the same ``RulesServicer`` on a ``grpc.aio`` server. The same recorded CLASH positions go
to both, taking turns call by call: ``Health.Check`` (the floor) and ``ApplyMove`` with ``derive`` and
``describe`` (a player's move). With a gap, the driver sleeps that long before each call, as at low load, where
the server's threads go to sleep between requests. The figure is each server process's CPU per call, read around
the call from each thread's ``schedstat`` (nanoseconds).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import services  # noqa: F401, I001  (before grpc: it sets the grpcio experiments every process runs with)

import grpc
import orjson
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tooling.bench_floor import cpu_s
from tooling.bench_rules import record_games
from services.pb import rules_pb2, rules_pb2_grpc
from services.rules.games import get_game
from services.rules.seal import ENV_VAR, new_key_spec
from tooling.stack import free_port

AIO_SERVER = """
import asyncio, os, sys
import grpc
from grpc_health.v1 import health, health_pb2_grpc
from services.pb import rules_pb2_grpc
from services.rules.seal import Sealer
from services.rules.server import RulesMetrics, RulesServicer

async def main(port: int) -> None:
    server = grpc.aio.server()
    rules_pb2_grpc.add_RulesServicer_to_server(RulesServicer(RulesMetrics(), Sealer.from_env()), server)
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()

asyncio.run(main(int(sys.argv[1])))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=3)
    parser.add_argument("--max-moves", type=int, default=80)
    parser.add_argument("--gaps-ms", default="0,3", help="sleeps before each call, comma-separated")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    env = {**os.environ, ENV_VAR: new_key_spec("grpc")}
    ports = {"threaded": free_port(), "aio": free_port()}
    procs = {
        "threaded": subprocess.Popen([sys.executable, "-m", "services.rules.server", "--host", "127.0.0.1", "--port",
                                      str(ports["threaded"]), "--metrics-port", "0"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        "aio": subprocess.Popen([sys.executable, "-c", AIO_SERVER, str(ports["aio"])], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)}
    report: dict[str, Any] = {}
    try:
        channels = {name: grpc.insecure_channel(f"127.0.0.1:{port}") for name, port in ports.items()}
        for channel in channels.values():
            grpc.channel_ready_future(channel).result(timeout=60)
        stubs = {name: (rules_pb2_grpc.RulesStub(ch), health_pb2_grpc.HealthStub(ch)) for name, ch in channels.items()}
        requests = []
        rules = stubs["threaded"][0]
        for players, seed, moves in record_games(get_game("clash"), args.games, args.max_moves):
            reply = rules.NewGame(rules_pb2.NewGameRequest(game="clash", players=players, seed=seed, derive=True))
            for seat, move in moves:
                requests.append(rules_pb2.ApplyMoveRequest(game="clash", state=reply.state, seat=seat, derive=True,
                                                           describe=True, move_json=orjson.dumps(move).decode()))
                reply = rules.ApplyMove(requests[-1])
        for gap_ms in (float(g) for g in args.gaps_ms.split(",")):
            spent = {(name, call): 0.0 for name in procs for call in ("floor", "apply_move")}
            for request in requests:
                for name, (stub, health) in stubs.items():
                    pid = procs[name].pid
                    time.sleep(gap_ms / 1000)
                    before = cpu_s(pid)
                    health.Check(health_pb2.HealthCheckRequest())
                    spent[(name, "floor")] += cpu_s(pid) - before
                    time.sleep(gap_ms / 1000)
                    before = cpu_s(pid)
                    stub.ApplyMove(request)
                    spent[(name, "apply_move")] += cpu_s(pid) - before
            report[f"gap_{gap_ms:g}_ms"] = {name: {call: round(spent[(name, call)] / len(requests) * 1e6, 1)
                                                   for call in ("floor", "apply_move")} for name in procs}
        for channel in channels.values():
            channel.close()
    finally:
        for proc in procs.values():
            proc.terminate()
            proc.wait(timeout=30)
    report["calls_per_way"] = len(requests)
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for key, figures in report.items():
        if key.startswith("gap_"):
            print(key + ": " + "; ".join(f"{name} floor {f['floor']:.0f} µs, ApplyMove {f['apply_move']:.0f} µs"
                                          for name, f in figures.items()))
    print(f"CPU per call of each rules server process ({report['calls_per_way']} calls each)")


if __name__ == "__main__":
    main()
