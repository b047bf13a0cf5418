"""Where a rules replica's CPU per move goes: the gRPC floor, the move itself, ``derive``, ``describe``.

    .venv/bin/python scripts/bench_rules_parts.py [--game clash] [--games 4] [--max-moves 80] [--rounds 3] [--json]

One real rules server process (``python -m services.rules.server``, sealing, as deployed) and one channel. The
same recorded game positions (random legal moves, fixed seeds) are sent four ways, taking turns call by call:
``Health.Check`` (the gRPC floor: a call that does no work), ``ApplyMove`` alone, with ``derive`` (every seat's
view and the legal moves of the seats to act) and with ``derive`` and ``describe`` (the move in words for every
viewer: what the gateway sends for a player's move). The figure is the server process's CPU per call, read
around each call from each thread's ``/proc/<pid>/task/*/schedstat`` (nanoseconds), so the steps' costs are
the differences between the columns.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
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
from services.rules.games import GAMES, get_game
from services.rules.seal import ENV_VAR, new_key_spec
from tooling.stack import free_port

WAYS: dict[str, dict[str, Any] | None] = {"grpc_floor": None, "apply": {}, "derive": {"derive": True},
                                           "derive_describe": {"derive": True, "describe": True}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", choices=list(GAMES), default="clash")
    parser.add_argument("--games", type=int, default=4, help="recorded games")
    parser.add_argument("--max-moves", type=int, default=80)
    parser.add_argument("--rounds", type=int, default=3, help="replays of the recorded positions")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "services.rules.server", "--host", "127.0.0.1", "--port", str(port),
                             "--metrics-port", "0"], env={**os.environ, ENV_VAR: new_key_spec("parts")},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=60)
        stub, health = rules_pb2_grpc.RulesStub(channel), health_pb2_grpc.HealthStub(channel)
        positions: list[dict[str, Any]] = []
        for players, seed, moves in record_games(get_game(args.game), args.games, args.max_moves):
            reply = stub.NewGame(rules_pb2.NewGameRequest(game=args.game, players=players, seed=seed, derive=True))
            for seat, move in moves:
                positions.append({"game": args.game, "state": reply.state, "seat": seat,
                                  "move_json": orjson.dumps(move).decode()})
                reply = stub.ApplyMove(rules_pb2.ApplyMoveRequest(**positions[-1]))
        spent = dict.fromkeys(WAYS, 0.0)
        for _ in range(args.rounds):
            for position in positions:
                for way, flags in WAYS.items():
                    before = cpu_s(proc.pid)
                    if flags is None:
                        health.Check(health_pb2.HealthCheckRequest())
                    else:
                        stub.ApplyMove(rules_pb2.ApplyMoveRequest(**position, **flags))
                    spent[way] += cpu_s(proc.pid) - before
        channel.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    calls = len(positions) * args.rounds
    report = {"game": args.game, "calls_per_way": calls,
              "cpu_us": {way: round(seconds / calls * 1e6, 1) for way, seconds in spent.items()},
              "load_average_after": [round(x, 2) for x in os.getloadavg()]}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{args.game}: rules server CPU per call, µs ({calls} calls each way)")
    for way, us in report["cpu_us"].items():
        print(f"  {way:<16} {us:8.1f}")


if __name__ == "__main__":
    main()
