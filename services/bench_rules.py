"""``meeple bench rules``: what a rules replica spends on ``ApplyMove``, per way of getting the state.

Each mode is a real rules server on loopback, and the same recorded games (random legal moves, fixed
seeds) are replayed through each as the gateway does: ``NewGame``, then ``ApplyMove`` with ``derive``
and the bytes of the previous reply. Modes:

* ``sealed``: the service seals its replies (``MEEPLE_SEAL_KEYS``) and trusts a verified seal, so the
  next move decodes without re-validation;
* ``validated``: no key, every state is decoded and validated in full (a third party's own bytes).

Rounds alternate the modes, so a drift of the machine's speed hits them alike; compare the ratios.
``apply_us`` is the client's wall time of one ``ApplyMove`` (gRPC included), ``state_us`` the part a
replica spends turning request bytes into a state (seal check + decode), timed in-process.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any

import grpc
import orjson

from services.pb import rules_pb2, rules_pb2_grpc
from services.rules.games import GAMES, get_game
from services.rules.games.base import Game, Move
from services.rules.seal import Sealer, new_key_spec
from services.rules.server import RulesMetrics, RulesServicer, serve, shutdown

MODES = ("sealed", "validated")


def record_games(game: Game[Any], count: int, max_moves: int) -> list[tuple[int, int, list[tuple[int, Move]]]]:
    """(players, seed, moves) of ``count`` random games, cut at ``max_moves`` moves."""
    out = []
    for seed in range(count):
        players = game.min_players if game.id != "fierce-women" else 3
        rng = random.Random(seed)
        state = game.new_game(players, seed, {})
        moves: list[tuple[int, Move]] = []
        while not game.is_over(state) and len(moves) < max_moves:
            seat = rng.choice(game.to_act(state))
            move = game.sample_move(state, seat, rng)
            moves.append((seat, move))
            game.apply_in_place(state, seat, move)
        out.append((players, seed, moves))
    return out


def sealer_for(mode: str) -> Sealer:
    return Sealer.from_spec(new_key_spec("bench")) if mode == "sealed" else Sealer()


def replay(stub: Any, gid: str, players: int, seed: int, moves: list[tuple[int, Move]]) -> tuple[float, int,
                                                                                                    list[bytes]]:
    """Seconds spent in ApplyMove over one recorded game, the number of calls, and every state's bytes."""
    reply = stub.NewGame(rules_pb2.NewGameRequest(game=gid, players=players, seed=seed, options_json="{}",
                                                  derive=True))
    states = [reply.state]
    total = 0.0
    for seat, move in moves:
        request = rules_pb2.ApplyMoveRequest(game=gid, state=reply.state, seat=seat,
                                             move_json=orjson.dumps(move).decode(), derive=True)
        t0 = time.perf_counter()
        reply = stub.ApplyMove(request)
        total += time.perf_counter() - t0
        states.append(reply.state)
    return total, len(moves), states


def state_cost(gid: str, sealer: Sealer, states: list[bytes], repeat: int) -> float:
    """Mean µs of a replica's way from request bytes to a state, in-process."""
    servicer = RulesServicer(RulesMetrics(), sealer)
    game = get_game(gid)
    t0 = time.perf_counter()
    for _ in range(repeat):
        for data in states:
            servicer._state(game, data)
    return (time.perf_counter() - t0) / (repeat * len(states)) * 1e6


def run_bench(game_ids: list[str], rounds: int, games: int, max_moves: int) -> dict[str, Any]:
    sealers = {mode: sealer_for(mode) for mode in MODES}
    servers = {mode: serve("127.0.0.1:0", sealer=sealers[mode]) for mode in MODES}
    report: dict[str, Any] = {}
    try:
        channels = {mode: grpc.insecure_channel(f"127.0.0.1:{port}") for mode, (_, port) in servers.items()}
        stubs = {mode: rules_pb2_grpc.RulesStub(channel) for mode, channel in channels.items()}
        for gid in game_ids:
            recorded = record_games(get_game(gid), games, max_moves)
            spent = dict.fromkeys(MODES, 0.0)
            calls = dict.fromkeys(MODES, 0)
            seen: dict[str, list[bytes]] = {mode: [] for mode in MODES}
            for _ in range(rounds):
                for mode in MODES:
                    for players, seed, moves in recorded:
                        seconds, n, states = replay(stubs[mode], gid, players, seed, moves)
                        spent[mode] += seconds
                        calls[mode] += n
                        if len(seen[mode]) < 400:
                            seen[mode].extend(states)
            figures: dict[str, Any] = {}
            for mode in MODES:
                figures[mode] = {"apply_us": round(spent[mode] / max(calls[mode], 1) * 1e6, 1),
                                 "state_us": round(state_cost(gid, sealers[mode], seen[mode], 3), 1),
                                 "bytes": round(sum(map(len, seen[mode])) / max(len(seen[mode]), 1))}
            base = figures["validated"]
            figures["sealed_vs_validated"] = {
                "apply": round(figures["sealed"]["apply_us"] / base["apply_us"], 3),
                "state": round(figures["sealed"]["state_us"] / base["state_us"], 3)}
            figures["moves"] = calls["sealed"]
            report[gid] = figures
            print(f"  {gid} done", file=sys.stderr)
        for channel in channels.values():
            channel.close()
    finally:
        for server, _ in servers.values():
            shutdown(server, grace=0)
    return report


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("rules", help="ApplyMove cost with sealed states vs full validation",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="replays of the recorded games per mode")
    parser.add_argument("--games", type=int, default=4, help="recorded games per game id")
    parser.add_argument("--max-moves", type=int, default=80, help="moves recorded per game at most")
    parser.add_argument("--game", action="append", choices=list(GAMES), help="only these games (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = run_bench(args.game or list(GAMES), args.rounds, args.games, args.max_moves)
    if args.json:
        print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
        return 0
    print(f"{'game':<16} {'moves':>6} " + " ".join(f"{m + ' apply µs':>18} {m + ' state µs':>18}" for m in MODES)
          + f" {'apply ratio':>11} {'state ratio':>11}")
    for gid, f in report.items():
        print(f"{gid:<16} {f['moves']:>6} " + " ".join(f"{f[m]['apply_us']:>18.1f} {f[m]['state_us']:>18.1f}"
                                                     for m in MODES)
              + f" {f['sealed_vs_validated']['apply']:>11.3f} {f['sealed_vs_validated']['state']:>11.3f}")
    return 0
