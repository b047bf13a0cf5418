"""``meeple bench rules``: what a rules replica spends on ``ApplyMove``, per way of getting the state.

Each mode is a real rules server on loopback, and the same recorded games (random legal moves, fixed
seeds) are replayed through each as the gateway does: ``NewGame``, then ``ApplyMove`` with ``derive``
and the bytes of the previous reply. Modes:

* ``sealed``: the service seals its replies (``MEEPLE_SEAL_KEYS``) and trusts a verified seal, so the
  next move decodes without re-validation;
* ``validated``: no key, every state is decoded and validated in full (a third party's own bytes).

The modes take turns move by move, so a drift of the machine's speed hits them alike; compare the ratios.
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


def replay(stubs: dict[str, Any], gid: str, players: int, seed: int, moves: list[tuple[int, Move]],
           spent: dict[str, float], states: dict[str, list[bytes]]) -> None:
    """One recorded game through every mode in lockstep (each move on each server in turn, so a drift of
    the machine's speed hits the modes alike): adds the seconds spent in ApplyMove and every state's bytes."""
    replies = {mode: stub.NewGame(rules_pb2.NewGameRequest(game=gid, players=players, seed=seed, options_json="{}",
                                                           derive=True)) for mode, stub in stubs.items()}
    for seat, move in moves:
        move_json = orjson.dumps(move).decode()
        for mode, stub in stubs.items():
            request = rules_pb2.ApplyMoveRequest(game=gid, state=replies[mode].state, seat=seat, move_json=move_json,
                                                 derive=True)
            t0 = time.perf_counter()
            replies[mode] = stub.ApplyMove(request)
            spent[mode] += time.perf_counter() - t0
            states[mode].append(replies[mode].state)


def state_costs(gid: str, sealers: dict[str, Sealer], states: dict[str, list[bytes]], repeat: int) -> dict[str, float]:
    """Mean µs of a replica's way from request bytes to a state, in-process, the modes alternating per state."""
    servicers = {mode: RulesServicer(RulesMetrics(), sealer) for mode, sealer in sealers.items()}
    game = get_game(gid)
    spent = dict.fromkeys(sealers, 0.0)
    count = min(len(v) for v in states.values())
    for _ in range(repeat):
        for i in range(count):
            for mode, servicer in servicers.items():
                t0 = time.perf_counter()
                servicer._state(game, states[mode][i])
                spent[mode] += time.perf_counter() - t0
    return {mode: seconds / (repeat * count) * 1e6 for mode, seconds in spent.items()}


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
            seen: dict[str, list[bytes]] = {mode: [] for mode in MODES}
            for _ in range(rounds):
                for players, seed, moves in recorded:
                    replay(stubs, gid, players, seed, moves, spent, seen)
            calls = len(seen[MODES[0]])
            kept = {mode: states[:calls // rounds] for mode, states in seen.items()}  # one round's states
            state_us = state_costs(gid, sealers, kept, 3)
            figures: dict[str, Any] = {
                mode: {"apply_us": round(spent[mode] / max(calls, 1) * 1e6, 1), "state_us": round(state_us[mode], 1),
                       "bytes": round(sum(map(len, kept[mode])) / max(len(kept[mode]), 1))} for mode in MODES}
            base = figures["validated"]
            figures["sealed_vs_validated"] = {
                "apply": round(figures["sealed"]["apply_us"] / base["apply_us"], 3),
                "state": round(figures["sealed"]["state_us"] / base["state_us"], 3)}
            figures["moves"] = calls
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
