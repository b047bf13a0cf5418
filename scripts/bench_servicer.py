"""The rules handler alone: CPU per ``ApplyMove`` in-process, without gRPC, as the gateway asks (derive, describe).

    .venv/bin/python scripts/bench_servicer.py [--games 6] [--max-moves 120] [--profile]

Random recorded games of every game (``tooling.bench_rules.record_games``) go through ``RulesServicer.NewGame`` and
``ApplyMove`` with sealing on, so the state cache works as in a replica: one pass to warm up, then one timed with
``time.process_time``. ``--profile`` adds a cProfile of a third pass (30 most expensive functions by own time).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from services.pb import rules_pb2
from services.rules.games import GAMES
from services.rules.seal import Sealer, new_key_spec
from services.rules.server import RulesMetrics, RulesServicer
from tooling.bench_rules import record_games


class Context:
    """What a handler needs of a ``grpc.ServicerContext`` when nothing fails."""

    def set_trailing_metadata(self, *_: Any) -> None:
        pass

    def abort(self, *args: Any) -> None:
        raise RuntimeError(args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=6)
    parser.add_argument("--max-moves", type=int, default=120)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    servicer, context = RulesServicer(RulesMetrics(), Sealer.from_spec(new_key_spec("bench"))), Context()
    recorded = {gid: record_games(game, args.games, args.max_moves) for gid, game in GAMES.items()}

    def play() -> int:
        moves = 0
        for gid, games in recorded.items():
            for players, seed, moves_of_game in games:
                request = rules_pb2.NewGameRequest(game=gid, players=players, seed=seed, derive=True)
                state = servicer.NewGame(request, context).state
                for seat, move in moves_of_game:
                    state = servicer.ApplyMove(rules_pb2.ApplyMoveRequest(
                        game=gid, state=state, seat=seat, move_json=orjson.dumps(move).decode(), derive=True,
                        describe=True), context).state
                    moves += 1
        return moves

    play()
    start = time.process_time()
    moves = play()
    print(f"{(time.process_time() - start) / moves * 1e6:.1f} µs of CPU per ApplyMove, {moves} moves")
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(play)
        pstats.Stats(profile).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
