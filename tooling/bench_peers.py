"""``meeple bench peers``: boardgame.io's server CPU per move and Meeple's socket and REST move paths, in one window.

The peer harness is ``../shared/peers/boardgameio`` beside the checkout (``--peer-dir`` elsewhere; its README
says what it measures and its caveats). It is copied to a temporary folder (the shared folder is read-only on CI
machines), its pinned packages are installed there with ``npm ci``, and its ``run.js`` plays boardgame.io's
``tricks`` (a 2-player card game with hidden hands) and ``tictactoe`` at one match at a time (K = 1), in memory.
Then ``meeple bench floor`` runs in the same window: the REST move, the socket move (every seat on its own
WebSocket, the CPU read until every seat has the update), the bare Flask route and ``/floor-io``. With
``--rounds 2`` the two take turns twice (peer, Meeple, peer, Meeple) so a drift of the machine hits both.

Printed beside the figures, the ratios issue 47 sets as targets:

* server CPU per move on the socket path (gateway + rules + Redis) over boardgame.io's ``tricks``: at most 3;
* the socket move's p50 round trip over boardgame.io's ``tricks`` p50 round trip: at most 2;
* the REST move's p50 over ``/floor-io``'s p50: at most 1.3.

Beside them, informational: the core's own move (``bench floor``'s ``core_move``: the core called in process, no
transport and no push) over the peer, the floor any door's move could reach.

The socket move's CPU is the mean over every game, They Who Were 8's four seats (four pushes a move) included;
beside it, for like against like, Fierce Women's alone (2 seats, a card game with hidden hands, as ``tricks`` is).

Everything started is stopped before the command returns: the harness stops the node server it started by its
pid, ``bench floor`` its own Redis, rules service and gateways.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import orjson

from tooling import bench_floor
from tooling.stack import ROOT, free_port

#: Where the peer harness lies in a checkout of the project (``shared/`` beside the repository).
PEER_DIR = ROOT.parent / "shared" / "peers" / "boardgameio"
#: Issue 47's targets: (the ratio's key, its bound, what it compares).
TARGETS = (
    ("socket_cpu_over_peer", 3.0, "server CPU per move, socket path, over boardgame.io tricks"),
    ("socket_p50_over_peer", 2.0, "socket move p50 over boardgame.io tricks p50 round trip"),
    ("rest_p50_over_floor_io", 1.3, "REST move p50 over /floor-io p50"),
)
#: Our game closest to boardgame.io's ``tricks`` (2 players, a card game with hidden hands): its own ratio beside the
#: targets', which average every game (They Who Were 8 has four seats, so four pushes a move).
LIKE_FOR_LIKE = "fierce-women"


def install_peer(source: Path, into: Path) -> Path:
    """A writable copy of the harness with its pinned packages (``npm ci``); node and npm must be on PATH."""
    if not (source / "run.js").exists():
        raise SystemExit(f"no peer harness at {source} (give --peer-dir)")
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed: `make ts-install` (or bash scripts/ensure_node.sh) installs it")
    copy = into / "boardgameio"
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("node_modules", "results*.json"))
    for path in [copy, *copy.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=copy, check=True,
                   stdout=subprocess.DEVNULL)
    return copy


def run_peer(harness: Path, duration: int, warmup: int) -> dict[str, dict[str, Any]]:
    """One pass of ``run.js`` (tricks and tic-tac-toe in memory, K = 1): each game's run, by game."""
    out = harness / f"results-{os.getpid()}.json"
    subprocess.run(["node", "run.js", "--port", str(free_port()), "--duration", str(duration), "--reps", "1",
                    "--plan", "tricks:memory,tictactoe:memory", "--concurrency", "1", "--warmup", str(warmup),
                    "--out", str(out)], cwd=harness, check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "NODE_ENV": "production"})
    runs = orjson.loads(out.read_bytes())["runs"]
    out.unlink()
    return {run["game"]: {"server_cpu_ms_per_move": run["server_cpu_ms_per_move"], "rtt_p50_ms": run["rtt_ms"]["p50"],
                          "moves": run["moves"], "moves_per_s": run["moves_per_s"]} for run in runs}


def ratios(peer: dict[str, Any], ours: dict[str, Any]) -> dict[str, float]:
    tricks = peer["tricks"]
    by_game = ours["socket_move"].get("cpu_ms_total_by_game", {})
    like = ({"socket_cpu_2p_cards_over_peer": round(by_game[LIKE_FOR_LIKE] / tricks["server_cpu_ms_per_move"], 2)}
            if LIKE_FOR_LIKE in by_game else {})
    return {**like,
            "socket_cpu_over_peer": round(ours["socket_move"]["cpu_ms_total"] / tricks["server_cpu_ms_per_move"], 2),
            "socket_p50_over_peer": round(ours["socket_move"]["p50_ms"] / tricks["rtt_p50_ms"], 2),
            "rest_p50_over_floor_io": round(ours["move"]["p50_ms"] / ours["floor_io"]["p50_ms"], 2),
            "rest_cpu_over_peer": round(ours["move"]["cpu_ms_total"] / tricks["server_cpu_ms_per_move"], 2),
            **({"core_cpu_over_peer": round(ours["core_move"]["cpu_ms_total"] / tricks["server_cpu_ms_per_move"], 2)}
               if "core_move" in ours else {})}


def run_bench(rounds: int, duration: int, moves: int, peer_dir: Path, baseline: Path | None) -> dict[str, Any]:
    report: dict[str, Any] = {"rounds": []}
    with tempfile.TemporaryDirectory(prefix="meeple-peers-") as tmp:
        harness = install_peer(peer_dir, Path(tmp))
        for _ in range(rounds):
            peer = run_peer(harness, duration, warmup=3)
            ours = bench_floor.run_bench(moves, baseline=baseline)
            report["rounds"].append({"boardgameio": peer, "meeple": ours, "ratios": ratios(peer, ours)})
    report["median_ratios"] = {key: round(statistics.median(r["ratios"][key] for r in report["rounds"]), 2)
                               for key in report["rounds"][0]["ratios"]
                               if all(key in r["ratios"] for r in report["rounds"])}
    report["targets"] = {key: {"at_most": bound, "what": what, "met": report["median_ratios"][key] <= bound}
                         for key, bound, what in TARGETS}
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return report


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("peers", help="boardgame.io's CPU per move beside our socket and REST moves, one window",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="peer then Meeple, this many times in turn")
    parser.add_argument("--duration", type=int, default=20, help="measured seconds of each peer game run")
    parser.add_argument("--moves", type=int, default=400, help="timed moves of each Meeple series per round")
    parser.add_argument("--peer-dir", type=Path, default=PEER_DIR, help="the boardgame.io harness")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="also time the REST and socket moves of the checkout in DIR (before/after)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = run_bench(args.rounds, args.duration, args.moves, args.peer_dir, args.baseline)
    if args.json:
        print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
        return 0
    print(f"{'round':<6} {'server, one move':<40} {'p50 ms':>8} {'CPU ms per move':>16}")
    for n, rnd in enumerate(report["rounds"], 1):
        for game, fig in rnd["boardgameio"].items():
            cpu = fig["server_cpu_ms_per_move"]
            print(f"{n:<6} {'boardgame.io ' + game:<40} {fig['rtt_p50_ms']:>8.3f} {cpu:>16.3f}")
        for name in bench_floor.SERIES:
            if name in rnd["meeple"]:
                fig = rnd["meeple"][name]
                print(f"{n:<6} {'meeple ' + name:<40} {fig['p50_ms']:>8.3f} {fig['cpu_ms_total']:>16.3f}")
    for key, target in report["targets"].items():
        verdict = "met" if target["met"] else "NOT met"
        print(f"{target['what']}: {report['median_ratios'][key]:.2f} (target <= {target['at_most']}: {verdict})")
    if "socket_cpu_2p_cards_over_peer" in report["median_ratios"]:
        print(f"socket move CPU, {LIKE_FOR_LIKE} at 2 seats only, over boardgame.io tricks: "
              f"{report['median_ratios']['socket_cpu_2p_cards_over_peer']:.2f}")
    if "core_cpu_over_peer" in report["median_ratios"]:
        print(f"the core's own move (in process: no HTTP, no socket, no push) CPU over boardgame.io tricks: "
              f"{report['median_ratios']['core_cpu_over_peer']:.2f}")
    print(f"REST move CPU over boardgame.io tricks: {report['median_ratios']['rest_cpu_over_peer']:.2f}; "
          f"load average after: {report['load_average_after'][0]:.1f}")
    return 0
