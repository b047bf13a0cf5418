"""Play one CLASH game against a bot to the end with the SDK: ``python play_vs_bot.py BASE_URL [--level L]``.

Plays a random legal move at every turn (the SDK sends the version it read) and exits 0
once the match is finished. It holds the match's WebSocket where the server offers one: the moves and the
waits go over it, one message a move; else over REST.
"""

from __future__ import annotations

import argparse
import random
import sys
from contextlib import ExitStack, suppress

from meeple_client import Client, StaleVersion, TransportUnavailable


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("base_url", help="the server, e.g. http://127.0.0.1:8000")
    parser.add_argument("--level", default="normal", choices=["easy", "normal", "hard"])
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with Client(args.base_url) as api:
        match = api.create_match("clash", 2, options={"match": "single"}, seed=args.seed,
                                 seats=[{"kind": "human"}, {"kind": "bot", "level": args.level}])
        print(f"match {match.id}: you are seat {match.seat}")
        moves = 0
        with ExitStack() as held:
            with suppress(TransportUnavailable):  # no socket offered (a plain WSGI server, a proxy): REST
                held.enter_context(match.socket())
            while not match.finished:
                match.wait_turn()
                if match.finished:
                    break
                try:
                    match.move(rng.choice(match.legal_moves))
                    moves += 1
                except StaleVersion:  # never rebased silently: reload and decide again
                    match.refresh()
        outcome = match.outcome or {}
        print(f"finished after {moves} of your moves: winners {outcome.get('winners')}, "
              f"scores {outcome.get('scores')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
