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
import contextlib
import random
import sys
import time
from collections.abc import Iterator
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
                                                 derive=True, describe=True)
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


@contextlib.contextmanager
def _stubs(ports: dict[str, int]) -> Iterator[dict[str, Any]]:
    """A rules stub per named server (closed afterwards, even when a replay fails)."""
    channels = {name: grpc.insecure_channel(f"127.0.0.1:{port}") for name, port in ports.items()}
    try:
        yield {name: rules_pb2_grpc.RulesStub(channel) for name, channel in channels.items()}
    finally:
        for channel in channels.values():
            channel.close()


def _replay_rounds(stubs: dict[str, Any], gid: str, recorded: list[tuple[int, int, list[tuple[int, Move]]]],
                   rounds: int) -> tuple[dict[str, float], dict[str, list[bytes]], int]:
    """Every recorded game ``rounds`` times on every stub, taking turns: seconds spent and states seen per stub,
    and the calls each made."""
    spent = dict.fromkeys(stubs, 0.0)
    seen: dict[str, list[bytes]] = {name: [] for name in stubs}
    for _ in range(rounds):
        for players, seed, moves in recorded:
            replay(stubs, gid, players, seed, moves, spent, seen)
    return spent, seen, len(next(iter(seen.values())))


def run_bench(game_ids: list[str], rounds: int, games: int, max_moves: int) -> dict[str, Any]:
    sealers = {mode: sealer_for(mode) for mode in MODES}
    # no state cache: this compares a sealed state's decode with a full validation (rules-cpu measures as deployed)
    servers = {mode: serve("127.0.0.1:0", sealer=sealers[mode], cache_size=0) for mode in MODES}
    report: dict[str, Any] = {}
    try:
        with _stubs({mode: port for mode, (_, port) in servers.items()}) as stubs:
            for gid in game_ids:
                recorded = record_games(get_game(gid), games, max_moves)
                spent, seen, calls = _replay_rounds(stubs, gid, recorded, rounds)
                kept = {mode: states[:calls // rounds] for mode, states in seen.items()}  # one round's states
                state_us = state_costs(gid, sealers, kept, 3)
                figures: dict[str, Any] = {
                    mode: {"apply_us": round(spent[mode] / max(calls, 1) * 1e6, 1),
                           "state_us": round(state_us[mode], 1),
                           "bytes": round(sum(map(len, kept[mode])) / max(len(kept[mode]), 1))} for mode in MODES}
                base = figures["validated"]
                figures["sealed_vs_validated"] = {
                    "apply": round(figures["sealed"]["apply_us"] / base["apply_us"], 3),
                    "state": round(figures["sealed"]["state_us"] / base["state_us"], 3)}
                figures["moves"] = calls
                report[gid] = figures
                print(f"  {gid} done", file=sys.stderr)
    finally:
        for server, _ in servers.values():
            shutdown(server, grace=0)
    return report


def _recording_arguments(parser: argparse.ArgumentParser, rounds: int, rounds_help: str) -> None:
    """The recorded games both rules benches replay: how many, how long, which, how often."""
    parser.add_argument("--rounds", type=int, default=rounds, help=rounds_help)
    parser.add_argument("--games", type=int, default=4, help="recorded games per game id")
    parser.add_argument("--max-moves", type=int, default=80, help="moves recorded per game at most")
    parser.add_argument("--game", action="append", choices=list(GAMES), help="only these games (repeatable)")


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("rules", help="ApplyMove cost with sealed states vs full validation",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _recording_arguments(parser, rounds=3, rounds_help="replays of the recorded games per mode")
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


# -- meeple bench rules-cpu ------------------------------------------------------------------------------

CPU_DOC = """``meeple bench rules-cpu``: a rules replica's CPU time per ``ApplyMove``, compiled vs pure Python.

One real rules server process per build (the compiled one as installed, the Python one with
``MEEPLE_PURE_PYTHON=1``), both sealing with the same key, as deployed. The same recorded games (random legal
moves, fixed seeds) are replayed through both as the gateway plays a human move: ``ApplyMove`` with
``derive`` (every seat's view and the legal moves computed once) and the sealed bytes of the previous reply,
the builds taking turns move by move. ``cpu_us`` is the server process's CPU time (all its threads: gRPC,
seal, decode, move, views, encode) per ``ApplyMove``, the games' one ``NewGame`` each included.
"""


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_server(build: str, seal_spec: str, source: str | None = None) -> tuple[Any, int]:
    """A rules server process running ``build``; (its Popen, its port) once it serves.

    ``source``: run the rules service of another checkout (its ``services`` package, this interpreter), e.g.
    the branch point, for a before/after in one run.
    """
    import os
    import subprocess

    import services.rules

    env = {**os.environ, "MEEPLE_SEAL_KEYS": seal_spec, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop(services.rules.PURE_ENV, None)
    if build != "compiled":
        env[services.rules.PURE_ENV] = "1"
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "services.rules.server", "--host", "127.0.0.1", "--port",
                             str(port), "--metrics-port", "0", "--workers", "2"], env=env, cwd=source,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=60)
    except grpc.FutureTimeoutError:
        proc.kill()
        raise RuntimeError(f"the {build} rules server did not start") from None
    finally:
        channel.close()
    return proc, port


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all threads), from /proc."""
    import os

    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_cpu_bench(game_ids: list[str], rounds: int, games: int, max_moves: int,
                  builds: tuple[str, ...] = ("compiled", "python"), baseline: str | None = None) -> dict[str, Any]:
    """Figures per build; with ``baseline`` (a checkout's directory) a third server, ``baseline``, runs it."""
    spec = new_key_spec("bench")
    servers = {build: start_server(build, spec) for build in builds}
    if baseline:
        servers["baseline"] = start_server("baseline", spec, baseline)
        builds = (*builds, "baseline")
    report: dict[str, Any] = {}
    try:
        with _stubs({build: port for build, (_, port) in servers.items()}) as stubs:
            for gid in game_ids:
                recorded = record_games(get_game(gid), games, max_moves)
                before = {build: process_cpu_s(proc.pid) for build, (proc, _) in servers.items()}
                spent, _, calls = _replay_rounds(stubs, gid, recorded, rounds)
                cpu = {build: process_cpu_s(proc.pid) - before[build] for build, (proc, _) in servers.items()}
                figures: dict[str, Any] = {build: {"cpu_us": round(cpu[build] / max(calls, 1) * 1e6, 1),
                                                   "apply_us": round(spent[build] / max(calls, 1) * 1e6, 1)}
                                           for build in builds}
                if "compiled" in builds and "python" in builds and figures["compiled"]["cpu_us"]:
                    ratio = figures["python"]["cpu_us"] / figures["compiled"]["cpu_us"]
                    figures["python_vs_compiled_cpu"] = round(ratio, 2)
                figures["moves"] = calls
                report[gid] = figures
                print(f"  {gid} done", file=sys.stderr)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(timeout=30)
    all_moves = sum(f["moves"] for f in report.values())
    report["all"] = {build: {"cpu_us": round(sum(f[build]["cpu_us"] * f["moves"] for gid, f in report.items())
                                             / max(all_moves, 1), 1)} for build in builds}
    report["all"]["moves"] = all_moves
    return report


def add_cpu_parser(sub: Any) -> None:
    parser = sub.add_parser("rules-cpu", help="rules service CPU per ApplyMove, compiled vs pure Python",
                            description=CPU_DOC, formatter_class=argparse.RawDescriptionHelpFormatter)
    _recording_arguments(parser, rounds=2, rounds_help="replays of the recorded games")
    parser.add_argument("--build", choices=("both", "compiled", "python"), default="both")
    parser.add_argument("--baseline", metavar="DIR", help="also run the rules service of the checkout in DIR "
                        "(e.g. `git archive` of the branch point), as column baseline, in the same run")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.set_defaults(func=run_cpu)


def run_cpu(args: argparse.Namespace) -> int:
    import services.rules

    builds: tuple[str, ...] = ("compiled", "python") if args.build == "both" else (args.build,)
    if "compiled" in builds and services.rules.build() != "compiled":
        print("no compiled build here: pure Python only", file=sys.stderr)
        builds = ("python",)
    report = run_cpu_bench(args.game or list(GAMES), args.rounds, args.games, args.max_moves, builds, args.baseline)
    if args.baseline:
        builds = (*builds, "baseline")
    if args.json:
        print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
        return 0
    print(f"{'game':<16} {'moves':>6} " + " ".join(f"{b + ' cpu µs':>16} {b + ' apply µs':>18}" for b in builds)
          + (f" {'python/compiled':>15}" if {"compiled", "python"} <= set(builds) else ""))
    for gid, f in report.items():
        if gid == "all":
            continue
        print(f"{gid:<16} {f['moves']:>6} " + " ".join(f"{f[b]['cpu_us']:>16.1f} {f[b]['apply_us']:>18.1f}"
                                                     for b in builds)
              + (f" {f['python_vs_compiled_cpu']:>15.2f}" if "python_vs_compiled_cpu" in f else ""))
    total = report["all"]
    print(f"{'all games':<16} {total['moves']:>6} " + " ".join(f"{total[b]['cpu_us']:>16.1f} {'':>18}" for b in builds))
    print("cpu µs: the rules server process's CPU per ApplyMove (derive, sealed); apply µs: the client's wall time")
    return 0
