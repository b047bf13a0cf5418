"""What a move against bots costs the rules service with and without ``quiet_seats``, in one run.

    .venv/bin/python scripts/bench_quiet_seats.py [--games 8] [--max-moves 100] [--repeat 3] [--json]

The rules service's own handler (``RulesServicer.ApplyMove``, sealing as deployed, the request parsed from its
bytes and the reply serialised to bytes, in this process: no transport) replays the same recorded games (random
legal moves, fixed seeds; seat 0 a person, every other seat a bot's own) as the gateway sends a move, with
``derive`` and ``describe``: once as before (every seat's view, legal moves and words) and once with the bot
seats as ``quiet_seats``, the two taking turns call by call. Figures: this thread's CPU time per ``ApplyMove``
(``time.thread_time``; the gRPC transport, about 0.4 ms of CPU a call on the same machine, comes on top and
shrinks with the reply) and the reply's size in bytes.

(A server process per way, measured from ``/proc``, was tried first: on a machine shared by other jobs two
identical servers differed by up to 2x in CPU per call, so the in-process figure is the one to compare.)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from services.pb import rules_pb2
from services.rules.games import GAMES, get_game
from services.rules.seal import Sealer, new_key_spec
from services.rules.server import RulesMetrics, RulesServicer
from tooling.bench_rules import record_games

MODES = ("all_seats", "quiet_bots")


class Context:
    """The two calls a handler makes on its gRPC context when it refuses a request (never, here)."""

    def set_trailing_metadata(self, metadata: Any) -> None:
        raise AssertionError(f"a recorded move was refused: {metadata}")

    def abort(self, status: Any, message: str) -> None:
        raise AssertionError(f"a recorded move was refused: {status} {message}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=8, help="recorded games per game id")
    parser.add_argument("--max-moves", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3, help="replays of every request per way")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    servicer = RulesServicer(RulesMetrics(), Sealer.from_spec(new_key_spec("quiet")))
    context: Any = Context()
    report: dict[str, Any] = {}
    for gid in GAMES:
        requests: dict[str, list[bytes]] = {mode: [] for mode in MODES}
        for players, seed, moves in record_games(get_game(gid), args.games, args.max_moves):
            reply = servicer.NewGame(rules_pb2.NewGameRequest(game=gid, players=players, seed=seed, options_json="{}",
                                                              derive=True), context)
            quiet = list(range(1, reply.seats))
            for seat, move in moves:
                for mode in MODES:
                    requests[mode].append(rules_pb2.ApplyMoveRequest(
                        game=gid, state=reply.state, seat=seat, move_json=orjson.dumps(move).decode(), derive=True,
                        describe=True, quiet_seats=quiet if mode == "quiet_bots" else []).SerializeToString())
                reply = servicer.ApplyMove(rules_pb2.ApplyMoveRequest.FromString(requests[MODES[0]][-1]), context)
        cpu, size = dict.fromkeys(MODES, 0.0), dict.fromkeys(MODES, 0)
        calls = len(requests[MODES[0]])
        for _ in range(args.repeat):
            for i in range(calls):
                for mode in MODES:
                    start = time.thread_time()
                    raw = servicer.ApplyMove(rules_pb2.ApplyMoveRequest.FromString(requests[mode][i]),
                                             context).SerializeToString()
                    cpu[mode] += time.thread_time() - start
                    size[mode] += len(raw)
        n = calls * args.repeat
        report[gid] = {mode: {"cpu_us": round(cpu[mode] / n * 1e6, 1), "reply_bytes": round(size[mode] / n)}
                       for mode in MODES}
        report[gid]["quiet_vs_all_cpu"] = round(cpu["quiet_bots"] / cpu["all_seats"], 3)
        report[gid]["moves"] = calls
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{'game':<16} {'moves':>5} " + " ".join(f"{m + ' cpu µs':>18} {m + ' bytes':>17}" for m in MODES)
          + f" {'cpu ratio':>9}")
    for gid, f in report.items():
        print(f"{gid:<16} {f['moves']:>5} " + " ".join(f"{f[m]['cpu_us']:>18.1f} {f[m]['reply_bytes']:>17}"
                                                    for m in MODES) + f" {f['quiet_vs_all_cpu']:>9.3f}")
    print("cpu µs: the ApplyMove handler's CPU (derive + describe, sealed, parse + serialise), in-process; "
          "seat 0 a person, the rest a bot's")


if __name__ == "__main__":
    main()
