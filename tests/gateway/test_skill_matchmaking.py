"""Skill matchmaking and calibrated bots: closest ratings first, bot fill at the level closest in rating,
the ladder that rates the levels, and a simulated population matched closer than first-come pairing."""

from __future__ import annotations

import time
from collections.abc import Iterator

import orjson
import pytest

from ai import ladder
from loadtests.matchmaking_sim import simulate
from services import redisconn
from services.gateway import ratings

from .conftest import Api, GatewayServer, RulesProcess, start_gateway
from .test_backends import as_key, new_key

GAME = "clash"


@pytest.fixture()
def mm_gateway(own_redis_url: str, rules: RulesProcess) -> Iterator[GatewayServer]:
    server = start_gateway(own_redis_url, rules.port, anonymous=False, bot_fill_s=30, mm_window=2.0,
                           mm_widen_per_s=0.0)
    yield server
    server.stop()


def rate(redis_url: str, tenant: str, player: str, mu: float) -> None:
    redisconn.connect(redis_url).hset(ratings.player_key(tenant, player), GAME,
                                         orjson.dumps({"mu": mu, "sigma": 3.0, "matches": 10}))


def test_a_simulated_population_is_matched_closer_than_first_come_pairing() -> None:
    for table in (2, 4):
        skilled, fifo = simulate("skill", 300, table, seed=7), simulate("fifo", 300, table, seed=7)
        print(f"table {table}: spread skill {skilled['mean_spread']:.2f} vs fifo {fifo['mean_spread']:.2f}, "
              f"wait p90 {skilled['wait_p90_s']:.1f} vs {fifo['wait_p90_s']:.1f} s")
        assert skilled["mean_spread"] < 0.6 * fifo["mean_spread"]
        assert skilled["wait_p99_s"] <= 30 + 1  # nobody waits past the bot fill (plus the once-a-second pass)
    sparse_skill = simulate("skill", 150, 2, rate=0.05, fill_s=10, seed=3)
    sparse_fifo = simulate("fifo", 150, 2, rate=0.05, fill_s=10, seed=3)
    assert sparse_skill["bot_filled"] > 0
    assert sparse_skill["mean_bot_gap"] < 0.5 * sparse_fifo["mean_bot_gap"]  # the bot level fits the human


def test_the_matcher_groups_the_closest_ratings_first(mm_gateway: GatewayServer, own_redis_url: str) -> None:
    api = Api(mm_gateway.url)
    key = new_key(own_redis_url, "acme")["key"]
    for player, mu in (("low", 10.0), ("high", 40.0), ("low2", 11.0), ("high2", 39.0)):
        rate(own_redis_url, "acme", player, mu)
    tickets = {}
    for player in ("low", "high", "low2", "high2"):
        reply = api.post("/v1/matchmaking", headers=as_key(key), json={"game": GAME, "players": 2, "player": player})
        tickets[player] = reply.json()
    assert tickets["high"]["status"] == "waiting"  # 30 apart: outside the window
    assert tickets["low2"]["status"] == "matched" and tickets["high2"]["status"] == "matched"
    low = api.get(f"/v1/matchmaking/{tickets['low']['ticket']}").json()
    high = api.get(f"/v1/matchmaking/{tickets['high']['ticket']}").json()
    assert low["match_id"] == tickets["low2"]["match_id"] and high["match_id"] == tickets["high2"]["match_id"]


@pytest.mark.parametrize(("mu", "level"), [(14.0, "easy"), (26.0, "normal"), (33.0, "hard")])
def test_bot_fill_seats_the_level_closest_in_rating_to_the_table(mm_gateway: GatewayServer, own_redis_url: str,
                                                                  mu: float, level: str) -> None:
    api = Api(mm_gateway.url)
    client = redisconn.connect(own_redis_url)
    ladder.store(client, GAME, {"easy": {"mu": 15.0, "sigma": 1.0, "matches": 40},
                                "normal": {"mu": 24.0, "sigma": 1.0, "matches": 40},
                                "hard": {"mu": 34.0, "sigma": 1.0, "matches": 40}})
    key = new_key(own_redis_url, "acme")["key"]
    rate(own_redis_url, "acme", "solo", mu)
    ticket = api.post("/v1/matchmaking", headers=as_key(key), json={"game": GAME, "players": 2, "player": "solo"})
    doc_key = f"mm:ticket:{{{ticket.json()['ticket']}}}"
    doc = orjson.loads(client.get(doc_key))
    client.set(doc_key, orjson.dumps({**doc, "created_at": time.time() - 60}), keepttl=True)  # waited past fill
    polled = api.get(f"/v1/matchmaking/{ticket.json()['ticket']}").json()
    assert polled["status"] == "matched" and polled["token"]
    match = api.get(f"/v1/matches/{polled['match_id']}", headers=as_key(key)).json()
    assert [s["level"] for s in match["seats"] if s["kind"] == "bot"] == [level]


def test_the_ladder_rates_the_levels_on_the_scale_the_gateway_reads(own_redis_url: str) -> None:
    from services.rules.games import get_game

    assert ladder.BOT_RATINGS_KEY == ratings.BOT_RATINGS_KEY
    found = ladder.ladder(get_game(GAME), 2, ["easy", "normal"], games=2, seed=1, scale=0.05)
    assert set(found) == {"easy", "normal"} and all(doc["matches"] == 2 for doc in found.values())
    assert all(doc["sigma"] < ratings.default()["sigma"] for doc in found.values())  # games made them surer
    client = redisconn.connect(own_redis_url)
    ladder.store(client, GAME, found)
    assert set(ratings.bot_ratings(client, GAME)) == {"easy", "normal"}
