"""A simulated matchmaking population: skill matching (``services/core/competition/skill.py``) against
first-come pairing.

Players of known strength — each one of the bot levels, at that level's rating (the ladder's, from
``--ratings``, or the defaults below), as bots of fixed levels standing in for players — arrive at random
(Poisson, ``--rate`` a second) over simulated time. The matcher runs at every arrival and once a simulated
second, exactly as the gateway's does (same functions), and after ``--fill`` seconds a ticket gets the
closest-rated others plus bots. Prints mean rating spread per match (highest minus lowest ``mu`` of the match's
humans), the mean gap between a filled bot's rating and its table's humans, and wait percentiles, for both
policies::

    python -m loadtests.matchmaking_sim --players 400 --json

With ``--party-share S`` that share of arrivals are parties (2 to ``--table`` friends, each of a level drawn as a
single player's is: friends of any strength), matched by their mean rating with the window widened by half their
spread, and the report has each policy twice, without parties and with them, plus the waits of parties against
singles and the spread of matches with a party against those without. ``--teams K`` plays a team game of K teams
(seat i on team i mod K, as They Who Were 8's 0 + 2 against 1 + 3 with ``--table 4 --teams 2``).
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


def team_sides(table: int, teams: int) -> list[list[int]] | None:
    """Seat i on team i mod ``teams`` (None: no teams)."""
    return [list(range(t, table, teams)) for t in range(teams)] if teams > 1 else None


def _arrivals(rng: random.Random, players: int, table: int, rate: float, levels: dict[str, dict[str, Any]],
              party_share: float) -> tuple[list[skill.Entry], dict[str, list[float]]]:
    """The tickets as they arrive (a party's rating: its members' mean), and each ticket's members' ratings."""
    names = sorted(levels)
    t = 0.0
    arrivals, members = [], {}
    for i in range(players):
        t += rng.expovariate(rate)
        size = rng.randint(2, table) if table > 1 and rng.random() < party_share else 1
        mus = [float(levels[rng.choice(names)]["mu"]) + rng.gauss(0, 1.0) for _ in range(size)]
        arrivals.append(skill.Entry(f"p{i}", statistics.fmean(mus), t, size=size, spread=skill.spread(mus)))
        members[f"p{i}"] = mus
    return arrivals, members


def _first_come(pool: list[skill.Entry], room: int, sides: skill.Sides | None, n: int,
                exact: bool) -> list[skill.Entry] | None:
    """First-come pairing: tickets in arrival order that fit the table (``exact``: filling it)."""
    group: list[skill.Entry] = []
    for entry in pool:
        if sum(e.size for e in group) + entry.size <= room and skill.fits([e.size for e in group] + [entry.size],
                                                                            n, sides):
            group.append(entry)
    return group if group and (not exact or sum(e.size for e in group) == room) else None


def simulate(policy: str, players: int = 400, table: int = 2, rate: float = 2.0, fill_s: float = 30.0,
             base: float = 2.0, widen: float = 0.5, levels: dict[str, dict[str, Any]] | None = None,
             seed: int = 1, party_share: float = 0.0, teams: int = 0) -> dict[str, Any]:
    """One run; ``policy`` is ``skill`` or ``fifo`` (groups of ``table`` seats in arrival order)."""
    levels = levels or DEFAULT_LEVELS
    rng = random.Random(seed)
    sides = team_sides(table, teams)
    arrivals, members = _arrivals(rng, players, table, rate, levels, party_share)
    pool: list[skill.Entry] = []
    spreads: dict[bool, list[float]] = {True: [], False: []}  # by: the match has a party
    bot_gaps: list[float] = []
    waits: dict[bool, list[float]] = {True: [], False: []}  # by: the ticket is a party
    filled = 0

    def seat(group: list[skill.Entry], now: float) -> None:
        nonlocal filled
        for e in group:
            pool.remove(e)
            waits[e.size > 1].append(now - e.since)
        humans = [mu for e in group for mu in members[e.ticket]]
        if len(humans) > 1:
            spreads[any(e.size > 1 for e in group)].append(skill.spread(humans))
        if len(humans) < table:
            filled += 1
            mean = statistics.fmean(humans)
            level = skill.closest_level(levels, mean) if policy == "skill" else "normal"
            bot_gaps.append(abs(float(levels[level]["mu"]) - mean))

    def match(now: float) -> None:
        while True:
            if policy == "skill":
                group = skill.pick_group(pool, table, now, base, widen, sides)
            else:
                group = _first_come(pool, table, sides, table, exact=True)
            if not group:
                break
            seat(group, now)
        for e in sorted(pool, key=lambda e: e.since):
            if e in pool and now - e.since >= fill_s:
                others = skill.nearest(pool, e, table - e.size, sides) if policy == "skill" else (
                    _first_come([o for o in pool if o is not e], table - e.size, sides, table, exact=False) or [])
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
    every_spread, every_wait = spreads[True] + spreads[False], waits[True] + waits[False]
    return {"policy": policy, "players": players, "table": table, "party_share": party_share, "teams": teams,
            "tickets": len(arrivals), "humans": sum(len(m) for m in members.values()),
            "matches_with_humans": len(every_spread), "bot_filled": filled,
            "mean_spread": statistics.fmean(every_spread) if every_spread else 0.0,
            "mean_bot_gap": statistics.fmean(bot_gaps) if bot_gaps else 0.0,
            "wait_p50_s": percentile(every_wait, 0.5), "wait_p90_s": percentile(every_wait, 0.9),
            "wait_p99_s": percentile(every_wait, 0.99),
            "parties": _split(spreads[True], waits[True]), "singles": _split(spreads[False], waits[False])}


def _split(spreads: list[float], waits: list[float]) -> dict[str, float]:
    """Matches with (or without) a party: their mean spread; tickets that are (or are not) parties: their waits."""
    return {"matches": len(spreads), "mean_spread": statistics.fmean(spreads) if spreads else 0.0,
            "tickets": len(waits), "wait_p50_s": percentile(waits, 0.5), "wait_p90_s": percentile(waits, 0.9)}


def _line(r: dict[str, Any]) -> str:
    parties = f"parties {r['party_share']:.0%}" if r["party_share"] else "no parties"
    text = (f"{r['policy']:<6} {parties:<12} spread {r['mean_spread']:6.2f}  bot gap {r['mean_bot_gap']:5.2f}  "
            f"wait p50 {r['wait_p50_s']:5.1f} s  p90 {r['wait_p90_s']:5.1f} s  p99 {r['wait_p99_s']:5.1f} s  "
            f"({r['matches_with_humans']} matches with humans, {r['bot_filled']} bot-filled)")
    if r["party_share"]:
        p, s = r["parties"], r["singles"]
        text += (f"\n       {'':<12} matches with a party: spread {p['mean_spread']:6.2f} ({p['matches']}), without: "
                 f"{s['mean_spread']:6.2f} ({s['matches']}); waits of parties p50 {p['wait_p50_s']:5.1f} s p90 "
                 f"{p['wait_p90_s']:5.1f} s ({p['tickets']}), of singles p50 {s['wait_p50_s']:5.1f} s p90 "
                 f"{s['wait_p90_s']:5.1f} s")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtests.matchmaking_sim", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--players", type=int, default=400, help="tickets that arrive (a party is one)")
    parser.add_argument("--table", type=int, default=2, help="players per match")
    parser.add_argument("--rate", type=float, default=2.0, help="arrivals a second")
    parser.add_argument("--fill", type=float, default=30.0, help="bot fill after this many seconds")
    parser.add_argument("--window", type=float, default=2.0, help="MEEPLE_MM_WINDOW")
    parser.add_argument("--widen", type=float, default=0.5, help="MEEPLE_MM_WIDEN_PER_S")
    parser.add_argument("--ratings", type=orjson.loads, default=None,
                        help='level ratings as JSON, e.g. {"easy": {"mu": 17}, ...} (a ladder run\'s)')
    parser.add_argument("--party-share", type=float, default=0.0,
                        help="share of arrivals that are parties (0-1); reported against a run without parties")
    parser.add_argument("--teams", type=int, default=0, help="a team game of this many teams (seat i: team i mod K)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not 0.0 <= args.party_share <= 1.0:
        parser.error("--party-share is a share: 0 to 1")
    shares = (0.0, args.party_share) if args.party_share else (0.0,)
    reports = [simulate(policy, args.players, args.table, args.rate, args.fill, args.window, args.widen,
                        args.ratings, args.seed, share, args.teams) for share in shares for policy in ("skill", "fifo")]
    if args.json:
        print(orjson.dumps(reports).decode())
        return 0
    for r in reports:
        print(_line(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
