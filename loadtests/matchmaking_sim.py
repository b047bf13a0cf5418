"""A simulated matchmaking population: skill matching (``services/core/competition/skill.py``) against
first-come pairing.

Players of known strength — each one of the bot levels, at that level's rating (the ladder's, from
``--ratings``, or the defaults below), as bots of fixed levels standing in for players — arrive at random
(Poisson, ``--rate`` a second) over simulated time. The matcher runs at every arrival and once a simulated
second, exactly as the gateway's does (same functions), and after ``--fill`` seconds a ticket gets the
closest-rated others plus bots. Prints mean rating spread per match (the humans'), the mean gap between a
filled bot's rating and its table's humans, and wait percentiles, for both policies::

    python -m loadtests.matchmaking_sim --players 400 --json
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from typing import Any

import orjson

from services.core.competition import skill

#: Level ratings (mu) before a ladder has run: the spread the levels roughly show on the openskill scale.
DEFAULT_LEVELS = {"easy": {"mu": 18.0}, "normal": {"mu": 25.0}, "hard": {"mu": 32.0}}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values) or [0.0]
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def simulate(policy: str, players: int = 400, table: int = 2, rate: float = 2.0, fill_s: float = 30.0,
             base: float = 2.0, widen: float = 0.5, levels: dict[str, dict[str, Any]] | None = None,
             seed: int = 1) -> dict[str, Any]:
    """One run; ``policy`` is ``skill`` or ``fifo`` (groups of ``table`` in arrival order)."""
    levels = levels or DEFAULT_LEVELS
    rng = random.Random(seed)
    names = sorted(levels)
    t = 0.0
    arrivals = []
    for i in range(players):
        t += rng.expovariate(rate)
        level = rng.choice(names)
        arrivals.append(skill.Entry(f"p{i}", float(levels[level]["mu"]) + rng.gauss(0, 1.0), t))
    pool: list[skill.Entry] = []
    spreads: list[float] = []
    bot_gaps: list[float] = []
    waits: list[float] = []
    filled = 0

    def seat(group: list[skill.Entry], now: float) -> None:
        nonlocal filled
        for e in group:
            pool.remove(e)
            waits.append(now - e.since)
        ratings = [e.rating for e in group]
        if len(group) > 1:
            spreads.append(skill.spread(ratings))
        if len(group) < table:
            filled += 1
            mean = statistics.fmean(ratings)
            level = skill.closest_level(levels, mean) if policy == "skill" else "normal"
            bot_gaps.append(abs(float(levels[level]["mu"]) - mean))

    def match(now: float) -> None:
        while True:
            if policy == "skill":
                group = skill.pick_group(pool, table, now, base, widen)
            else:
                group = pool[:table] if len(pool) >= table else None
            if not group:
                break
            seat(group, now)
        for e in sorted(pool, key=lambda e: e.since):
            if e in pool and now - e.since >= fill_s:
                others = skill.nearest(pool, e, table - 1) if policy == "skill" else [
                    o for o in pool if o is not e][:table - 1]
                seat([e, *others], now)

    clock = 0.0
    for entry in arrivals:
        while clock + 1.0 < entry.since:  # the once-a-second pass (polls)
            clock += 1.0
            match(clock)
        pool.append(entry)
        match(entry.since)
    while pool:
        clock += 1.0
        match(clock)
    return {"policy": policy, "players": players, "table": table, "matches_with_humans": len(spreads),
            "bot_filled": filled, "mean_spread": statistics.fmean(spreads) if spreads else 0.0,
            "mean_bot_gap": statistics.fmean(bot_gaps) if bot_gaps else 0.0,
            "wait_p50_s": percentile(waits, 0.5), "wait_p90_s": percentile(waits, 0.9),
            "wait_p99_s": percentile(waits, 0.99)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtests.matchmaking_sim", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--players", type=int, default=400)
    parser.add_argument("--table", type=int, default=2, help="players per match")
    parser.add_argument("--rate", type=float, default=2.0, help="arrivals a second")
    parser.add_argument("--fill", type=float, default=30.0, help="bot fill after this many seconds")
    parser.add_argument("--window", type=float, default=2.0, help="MEEPLE_MM_WINDOW")
    parser.add_argument("--widen", type=float, default=0.5, help="MEEPLE_MM_WIDEN_PER_S")
    parser.add_argument("--ratings", type=orjson.loads, default=None,
                        help='level ratings as JSON, e.g. {"easy": {"mu": 17}, ...} (a ladder run\'s)')
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    reports = [simulate(policy, args.players, args.table, args.rate, args.fill, args.window, args.widen,
                        args.ratings, args.seed) for policy in ("skill", "fifo")]
    if args.json:
        print(orjson.dumps(reports).decode())
        return 0
    for r in reports:
        print(f"{r['policy']:<6} spread {r['mean_spread']:6.2f}  bot gap {r['mean_bot_gap']:5.2f}  wait p50 "
              f"{r['wait_p50_s']:5.1f} s  p90 {r['wait_p90_s']:5.1f} s  p99 {r['wait_p99_s']:5.1f} s  "
              f"({r['matches_with_humans']} matches with humans, {r['bot_filled']} bot-filled)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
