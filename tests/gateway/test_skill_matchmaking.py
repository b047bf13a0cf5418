"""Skill matchmaking and calibrated bots: closest ratings first, bot fill at the level closest in rating,
the ladder that rates the levels, and a simulated population matched closer than first-come pairing."""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from ai import ladder
from loadtests.matchmaking_sim import simulate
from services import redisconn
from services.core.competition import ratings, skill
from services.core.config import Config
from services.core.errors import DomainError
from services.core.match.creator import new_match
from services.core.meta import Seat
from services.core.metrics import CoreMetrics
from services.core.record.store import MatchStore
from services.core.rules_client import RulesClient
from services.core.service import Core

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


def filled_after_waiting(api: Api, client: Any, key: str, ticket: str) -> dict[str, Any]:
    """The match the ticket's bot fill makes once it has waited past ``bot_fill_s`` (its queue time moved back,
    then one read of it)."""
    doc_key = f"mm:ticket:{{{ticket}}}"
    stored = orjson.loads(client.get(doc_key))
    client.set(doc_key, orjson.dumps({**stored, "created_at": time.time() - 60}), keepttl=True)
    polled = api.get(f"/v1/matchmaking/{ticket}", headers=as_key(key)).json()
    assert polled["status"] == "matched" and polled["token"], polled
    return dict(api.get(f"/v1/matches/{polled['match_id']}", headers=as_key(key)).json())


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


def test_the_simulation_reports_waits_and_spreads_with_and_without_parties() -> None:
    """``--party-share``: parties fill whole teams' worth of seats at once, so they wait less than singles; skill
    matching still groups closer than first-come with parties in the queue (simulated time: no clock here)."""
    from loadtests.matchmaking_sim import main

    alone = simulate("skill", 300, 4, seed=7, teams=2)
    skilled, fifo = (simulate(policy, 300, 4, seed=7, party_share=0.3, teams=2) for policy in ("skill", "fifo"))
    assert alone["parties"]["tickets"] == 0 and skilled["parties"]["tickets"] > 50
    assert skilled["humans"] > skilled["tickets"] == 300
    assert skilled["mean_spread"] < fifo["mean_spread"]
    assert skilled["singles"]["mean_spread"] < 0.5 * fifo["singles"]["mean_spread"]
    assert skilled["parties"]["wait_p50_s"] <= skilled["singles"]["wait_p50_s"]
    assert skilled["wait_p99_s"] <= 30 + 1  # nobody waits past the bot fill (plus the once-a-second pass)
    assert main(["--players", "40", "--table", "4", "--teams", "2", "--party-share", "0.3"]) == 0


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
    low = api.get(f"/v1/matchmaking/{tickets['low']['ticket']}", headers=as_key(key)).json()
    high = api.get(f"/v1/matchmaking/{tickets['high']['ticket']}", headers=as_key(key)).json()
    assert low["match_id"] == tickets["low2"]["match_id"] and high["match_id"] == tickets["high2"]["match_id"]


def test_a_player_queued_twice_is_never_seated_against_themselves(mm_gateway: GatewayServer,
                                                                    own_redis_url: str) -> None:
    """Found probing as a backend would (a double tap queues a player twice): both tickets were grouped into
    one match, the player in both seats. A match takes a player once, as a create (bad_seats) and a join
    (player_seated) already said; the second ticket waits for someone else."""
    api = Api(mm_gateway.url)
    key = new_key(own_redis_url, "acme")["key"]
    first, second = (api.post("/v1/matchmaking", headers=as_key(key),
                              json={"game": GAME, "players": 2, "player": "twice"}).json() for _ in range(2))
    assert first["status"] == second["status"] == "waiting"
    other = api.post("/v1/matchmaking", headers=as_key(key), json={"game": GAME, "players": 2, "player": "else"})
    assert other.json()["status"] == "matched"
    match = api.get(f"/v1/matches/{other.json()['match_id']}", headers=as_key(key)).json()
    assert sorted(s["player"] for s in match["seats"]) == ["else", "twice"]
    waiting = [api.get(f"/v1/matchmaking/{t['ticket']}", headers=as_key(key)).json()["status"] for t in (first, second)]
    assert sorted(waiting) == ["matched", "waiting"]


def test_bot_fill_of_a_player_queued_twice_takes_a_bot_not_their_other_ticket(mm_gateway: GatewayServer,
                                                                               own_redis_url: str) -> None:
    api = Api(mm_gateway.url)
    client = redisconn.connect(own_redis_url)
    key = new_key(own_redis_url, "acme")["key"]
    tickets = [api.post("/v1/matchmaking", headers=as_key(key),
                        json={"game": GAME, "players": 2, "player": "twice"}).json()["ticket"] for _ in range(2)]
    match = filled_after_waiting(api, client, key, tickets[0])
    assert [s["kind"] for s in match["seats"]] == ["human", "bot"]
    assert api.get(f"/v1/matchmaking/{tickets[1]}", headers=as_key(key)).json()["status"] == "waiting"


def test_no_door_can_make_a_match_that_seats_one_player_twice(own_redis_url: str) -> None:
    """The core's own check, under create's bad_seats and join's player_seated: a door that forgot the rule
    (as matchmaking had) gets a 409, not a match with one player on both sides."""
    store = MatchStore(redisconn.connect(own_redis_url), 60, 60)
    core = Core(Config(), store, RulesClient("127.0.0.1:9"), CoreMetrics())  # refused before any rules call
    seats = [Seat(kind="human", player="twice") for _ in range(2)]
    with pytest.raises(DomainError) as refused:
        new_match(core, GAME, 2, {}, None, seats)
    assert refused.value.code == "player_seated"


def test_a_group_is_the_closest_run_of_distinct_players() -> None:
    e = skill.Entry
    pool = [e("a1", 20.0, 0.0, "a"), e("a2", 20.0, 1.0, "a"), e("a3", 20.1, 2.0, "a"), e("b", 20.5, 3.0, "b"),
            e("anon1", 30.0, 4.0), e("anon2", 30.0, 5.0)]
    # "a"'s three tickets are closest to each other, but one player makes no group: a3 (nearest b) and b do.
    assert [x.ticket for x in skill.pick_group(pool[:4], 2, 10.0, 2.0, 0.0) or []] == ["a3", "b"]
    assert skill.pick_group(pool[:3], 2, 10.0, 2.0, 0.0) is None
    assert [x.ticket for x in skill.pick_group(pool, 2, 10.0, 2.0, 0.0) or []] == ["anon1", "anon2"]  # anonymous
    assert [x.ticket for x in skill.nearest(pool, pool[0], 2)] == ["b", "anon1"]


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
    match = filled_after_waiting(api, client, key, ticket.json()["ticket"])
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


def test_the_shipped_ladder_rates_every_rung_of_every_game_at_the_real_budgets() -> None:
    from ai.bot import LEVELS, budget_of
    from services.core.match.seating import BOT_LEVELS
    from services.rules.games import GAMES

    assert tuple(LEVELS) == BOT_LEVELS  # the gateway's rungs are the bots' own, weakest first
    doc = orjson.loads(ratings.SHIPPED_PATH.read_bytes())
    assert set(doc["games"]) == set(GAMES)
    for game, run in doc["games"].items():
        assert run["command"].startswith(f"meeple arena --ladder --game {game} ") and "--scale" not in run["command"]
        assert run["scale"] == 1.0 and isinstance(run["seed"], int) and run["games_per_pair"] >= 1
        assert datetime.datetime.fromisoformat(run["date"]).year >= 2026
        assert run["iterations"] == {level: budget_of(game, level) for level in LEVELS}  # the calibrated budgets
        assert set(run["ratings"]) == set(LEVELS)
        anchor = run.get("anchor")  # random play, rated 0 and not shipped as a rung
        assert all(a in (*LEVELS, anchor) and b in LEVELS for a, b in run["pairs"])
        played = sum(r["matches"] for r in run["ratings"].values())
        # each pair's games (a pair with a run of its own has more; files written before that have the same count
        # for every pair), the fewest of which is games_per_pair
        by_pair = run.get("games_by_pair") or [[a, b, run["games_per_pair"]] for a, b in run["pairs"]]
        assert [[a, b] for a, b, _ in by_pair] == run["pairs"]
        assert min(n for *_, n in by_pair) == run["games_per_pair"]
        assert played == sum(((a in LEVELS) + (b in LEVELS)) * n for a, b, n in by_pair)  # each game, each rated side
        for level, r in run["ratings"].items():
            assert 0 < r["sigma"] < ratings.default()["sigma"] and r["matches"] >= run["games_per_pair"], level
        assert run["ratings"]["novice"]["mu"] < run["ratings"]["hard"]["mu"], game
        served = ratings.shipped()[game]["ratings"]  # on the players' scale: the same rungs, one shift
        shift = {round(served[lv]["mu"] - run["ratings"][lv]["mu"], 9) for lv in LEVELS}
        assert len(shift) == 1 and served[ratings.NEWCOMER_LEVEL]["mu"] == ratings.default()["mu"], game


def test_a_new_player_meets_the_newcomer_rung_in_every_game() -> None:
    """The ladder is anchored at random play (a rung's rating is its distance from it); a new player's 25 is not
    such a distance. Read as it was shipped, a newcomer's bot fill and tournament byes met the rung nearest 25:
    ``hard`` in CLASH and Sideboards. The server places a newcomer at ``easy`` in every game."""
    new = ratings.default()["mu"]
    for game, ship in ratings.shipped().items():
        assert skill.closest_level(ship["ratings"], new) == ratings.NEWCOMER_LEVEL == "easy", game


def test_the_shipped_ladder_is_used_until_redis_holds_a_newer_run(own_redis_url: str) -> None:
    client = redisconn.connect(own_redis_url)
    shipped = ratings.shipped()[GAME]
    assert ratings.bot_ratings(client, GAME) == shipped["ratings"]  # nothing in Redis
    old = {f"{GAME}:easy": orjson.dumps({"mu": 99.0, "sigma": 1.0, "matches": 1, "updated_at": shipped["at"] - 60})}
    client.hset(ratings.BOT_RATINGS_KEY, mapping=old)  # a ladder run older than the shipped one
    assert ratings.bot_ratings(client, GAME) == shipped["ratings"]
    ladder.store(client, GAME, {"easy": {"mu": 15.0, "sigma": 1.0, "matches": 40},
                                "hard": {"mu": 34.0, "sigma": 1.0, "matches": 40}})
    assert {k: v["mu"] for k, v in ratings.bot_ratings(client, GAME).items()} == {"easy": 15.0, "hard": 34.0}


def test_bot_fill_seats_the_shipped_rung_closest_to_the_player(mm_gateway: GatewayServer,
                                                               own_redis_url: str) -> None:
    api = Api(mm_gateway.url)
    client = redisconn.connect(own_redis_url)
    key = new_key(own_redis_url, "acme")["key"]
    rungs = sorted(ratings.shipped()[GAME]["ratings"].items(), key=lambda item: item[1]["mu"])
    seated = []
    for n, (_, doc) in enumerate(rungs):
        # A quarter of the way to the next rung up (or down, for the top one): this rung is the closest.
        neighbour = rungs[n + 1] if n + 1 < len(rungs) else rungs[n - 1]
        mu = doc["mu"] + 0.25 * (neighbour[1]["mu"] - doc["mu"])
        player = f"p{n}"
        rate(own_redis_url, "acme", player, mu)
        ticket = api.post("/v1/matchmaking", headers=as_key(key), json={"game": GAME, "players": 2, "player": player})
        match = filled_after_waiting(api, client, key, ticket.json()["ticket"])
        seated.append(next(s["level"] for s in match["seats"] if s["kind"] == "bot"))
    assert seated == [level for level, _ in rungs]
