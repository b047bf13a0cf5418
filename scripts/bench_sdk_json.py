"""The Python SDK's client CPU per status read under gevent (as a Locust user runs it), orjson against ``json``.

    .venv/bin/meeple run --http-port 18500 &                      # any running stack
    REDIS_URL=<its Redis> .venv/bin/meeple keys create --name bench --quota rpm=0
    .venv/bin/python scripts/bench_sdk_json.py --url http://127.0.0.1:18500 --api-key mk_... [--rounds 12] [--json]

Creates one They Who Were 8 match (four seats, one joined) and reads its status through
``Client.match`` ``--calls`` times a round, the rounds alternating between the SDK's two JSON paths (orjson, then
the standard library, then the other order); prints each path's median client CPU (µs per read) and the rounds.
"""

from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import orjson  # noqa: E402
from meeple_client import Client, _core  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with Client(args.url, api_key=args.api_key) as client:
        body = {"game": "they-who-were-8", "players": 4, "join": True}
        match_id = client.call("create_match", None, None, body)["id"]
        rounds: dict[str, list[float]] = {"orjson": [], "json": []}
        for n in range(args.rounds):
            for name in ("orjson", "json") if n % 2 == 0 else ("json", "orjson"):
                _core.orjson = orjson if name == "orjson" else None  # type: ignore[assignment]
                for _ in range(50):
                    client.match(match_id)
                start = time.process_time()
                for _ in range(args.calls):
                    client.match(match_id)
                rounds[name].append((time.process_time() - start) / args.calls * 1e6)
    result = {name: {"median_us": round(statistics.median(v), 1), "rounds_us": [round(x, 1) for x in v]}
              for name, v in rounds.items()}
    result["ratio_orjson_to_json"] = round(result["orjson"]["median_us"] / result["json"]["median_us"], 3)
    if args.json:
        print(json.dumps(result))
    else:
        for name in ("orjson", "json"):
            print(f"{name:7s} median {result[name]['median_us']:8.1f} µs of client CPU per status read")
        print(f"orjson / json: {result['ratio_orjson_to_json']}")


if __name__ == "__main__":
    main()
