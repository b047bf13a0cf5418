"""``python -m loadtests.capacity``: how many bytes Redis holds per waiting, active and finished match of each game.

A real redis-server and a real rules server on free loopback ports; matches are made through the gateway
app (its Flask test client: the same store code as under gunicorn) with people in every seat: ``waiting``
has one seat still free, ``active`` is half way through a random game (the moves of a typical full game
halved), ``finished`` is played to the end. Each match's keys (everything under its ``{id}`` hash tag) are
measured with ``MEMORY USAGE``, so the figure is what the match costs Redis, allocator overhead included.
Idempotency records and presence are included (the load test's clients send an ``Idempotency-Key`` per move).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from typing import Any

import orjson
import redis

from services.core.config import Config
from services.gateway.app import create_app
from services.rules.games import GAMES
from services.rules.server import serve, shutdown
from tooling.rediscluster import single_redis

STATES = ("waiting", "active", "finished")


def match_bytes(client: redis.Redis, match_id: str, parts: dict[str, int] | None = None) -> int:
    """``MEMORY USAGE`` summed over every key of the match (its hash tag); ``parts`` adds up by key kind."""
    total = 0
    for key in client.scan_iter(match=f"*{{{match_id}}}*", count=1000):
        size = int(client.memory_usage(key, samples=0) or 0)
        total += size
        if parts is not None:
            kind = key.decode().split("}:", 1)[-1].split(":", 1)[0]
            parts[kind] = parts.get(kind, 0) + size
    return total


def _play(http: Any, match_id: str, tokens: list[str], rng: random.Random, limit: int) -> int:
    status = http.get(f"/v1/matches/{match_id}").get_json()
    moves = 0
    while status["status"] == "active" and moves < limit:
        seat = rng.choice(status["to_act"])
        auth = {"Authorization": f"Bearer {tokens[seat]}"}
        legal = http.get(f"/v1/matches/{match_id}/legal-moves", headers=auth).get_json()["moves"]
        reply = http.post(f"/v1/matches/{match_id}/moves", headers={**auth, "Idempotency-Key": f"k{moves}"},
                          json={"move": rng.choice(legal), "version": status["version"]})
        status = reply.get_json()
        moves += 1
    return moves


def measure(games: list[str], samples: int, seed: int = 1) -> dict[str, Any]:
    with single_redis() as url:
        server, rules_port = serve("127.0.0.1:0")
        try:
            client = redis.Redis.from_url(url)
            app = create_app(Config(redis_url=url,
                                           rules_addr=f"127.0.0.1:{rules_port}", rate_limit_per_minute=0))
            http = app.test_client()
            rng = random.Random(seed)
            out: dict[str, Any] = {}
            for gid in games:
                players = max(GAMES[gid].min_players, 2)
                sizes: dict[str, list[int]] = {state: [] for state in STATES}
                parts: dict[str, int] = {}
                full_lengths: list[int] = []
                for _ in range(samples):
                    created = http.post("/v1/matches", json={"game": gid, "players": players, "join": True}).get_json()
                    sizes["waiting"].append(match_bytes(client, created["id"]))
                    tokens = [created["token"]] + [
                        http.post(f"/v1/matches/{created['id']}/join", json={}).get_json()["token"]
                        for _ in range(players - 1)]
                    full_lengths.append(_play(http, created["id"], tokens, rng, 100_000))
                    sizes["finished"].append(match_bytes(client, created["id"], parts))
                half = max(1, int(statistics.median(full_lengths)) // 2)
                for _ in range(samples):
                    created = http.post("/v1/matches", json={"game": gid, "players": players, "join": True}).get_json()
                    tokens = [created["token"]] + [
                        http.post(f"/v1/matches/{created['id']}/join", json={}).get_json()["token"]
                        for _ in range(players - 1)]
                    _play(http, created["id"], tokens, rng, half)
                    sizes["active"].append(match_bytes(client, created["id"]))
                out[gid] = {"players": players, "moves_per_game": int(statistics.median(full_lengths)),
                            **{f"{state}_bytes": int(statistics.median(sizes[state])) for state in STATES},
                            "finished_bytes_by_key": {k: v // samples for k, v in sorted(parts.items())}}
            return out
        finally:
            shutdown(server, grace=0.2)


def wait_cost(updates: int) -> dict[str, Any]:
    """What acknowledging only after a replica has the update costs: the same compare-and-set timed on a
    loopback cluster of 3 primaries with a replica each, without ``WAIT`` and with ``WAIT 1``."""
    from pathlib import Path

    from services import redisconn
    from services.core.meta import MatchMeta
    from services.core.record.store import MatchStore
    from tooling.rediscluster import LocalCluster

    with tempfile.TemporaryDirectory() as data:
        cluster = LocalCluster(3, 1, Path(data)).start()
        try:
            client = redisconn.connect(cluster.url)
            meta = MatchMeta(game="clash", status="active", to_act=[0], seats=[])
            entry = {"kind": "move", "seat": 0, "to_act": [0]}
            state = b"x" * 2000
            out: dict[str, Any] = {}
            for label, replicas in (("no_wait", 0), ("wait_1", 1)):
                store = MatchStore(client, 3600, 3600, wait_replicas=replicas)
                times = []
                for i in range(updates):
                    match = store.create(f"{label}{i % 50}x{i}", meta, state)
                    start = time.perf_counter()
                    store.update(match, meta, state, entry)
                    times.append((time.perf_counter() - start) * 1e6)
                times.sort()
                out[label] = {"p50_us": round(times[len(times) // 2]), "p99_us": round(times[int(len(times) * 0.99)]),
                              "updates": updates}
            out["wait_1_over_no_wait_p50"] = round(out["wait_1"]["p50_us"] / out["no_wait"]["p50_us"], 2)
            return out
        finally:
            cluster.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtests.capacity", description=__doc__)
    parser.add_argument("--samples", type=int, default=5, help="matches measured per game and state (median)")
    parser.add_argument("--game", action="append", default=[], help="only this game (repeatable)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--wait-cost", type=int, default=0, metavar="N",
                        help="instead: time N updates on a replicated loopback cluster without and with WAIT 1")
    args = parser.parse_args(argv)
    if args.wait_cost:
        print(orjson.dumps(wait_cost(args.wait_cost), option=orjson.OPT_INDENT_2).decode())
        return 0
    result = measure(args.game or sorted(GAMES), args.samples)
    if args.json:
        print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    else:
        for gid, row in result.items():
            print(f"{gid:18} {row['players']}p  moves/game {row['moves_per_game']:4}"
                  f"  waiting {row['waiting_bytes']:7} B"
                  f"  active {row['active_bytes']:7} B  finished {row['finished_bytes']:7} B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
