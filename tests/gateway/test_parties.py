"""Parties in matchmaking (issue 51), over real HTTP and Redis, on one server and on a Redis Cluster
(``own_redis_url``): friends queue as one ticket, sit in one match (in They Who Were 8 on one team), are matched
by their mean rating, get one seat token each, once, and every rule of a ticket holds for every member.
Bot fill is made due by moving a ticket's queue time back (no test waits on the clock)."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
import pytest

from services import redisconn
from services.core.competition import ratings, skill

from .conftest import Api, GatewayServer, RulesProcess, bot_worker_thread, start_gateway
from .test_backends import as_key, new_key

TEAMS_GAME = "they-who-were-8"
SIDES = [[0, 2], [1, 3]]
QUEUE = "/v1/matchmaking"


@pytest.fixture()
def party_gateway(own_redis_url: str, rules: RulesProcess) -> Iterator[GatewayServer]:
    """A gateway whose bot fill is due after 30 s (tests make it due by moving a ticket back) and whose window
    does not widen with the wait, on a Redis of the test's own."""
    server = start_gateway(own_redis_url, rules.port, bot_fill_s=30, mm_window=2.0, mm_widen_per_s=0.0)
    yield server
    server.stop()


def queue(api: Api, body: dict[str, Any], key: str | None = None, **headers: str) -> dict[str, Any]:
    reply = api.post(QUEUE, json=body, headers={**(as_key(key) if key else {}), **headers})
    assert reply.status_code == 201, reply.text
    doc: dict[str, Any] = reply.json()
    return doc


def refused(api: Api, body: dict[str, Any], key: str | None = None) -> str:
    reply = api.post(QUEUE, json=body, headers=as_key(key) if key else {})
    assert reply.status_code == 400, reply.text
    code: str = reply.json()["error"]["code"]
    return code


def party(*names: str, players: bool = False) -> list[dict[str, str]]:
    """Members with display names (and, with ``players``, the tenant's player ids of the same names)."""
    return [{"name": n, **({"player": n} if players else {})} for n in names]


def fill_now(api: Api, redis_url: str, ticket: str, key: str | None = None) -> dict[str, Any]:
    """The ticket's first read once its bot fill is due (its queue time moved back past ``bot_fill_s``)."""
    client = redisconn.connect(redis_url)
    name = f"mm:ticket:{{{ticket}}}"
    stored = orjson.loads(client.get(name))
    client.set(name, orjson.dumps({**stored, "created_at": time.time() - 60}), keepttl=True)
    polled: dict[str, Any] = api.get(f"{QUEUE}/{ticket}", headers=as_key(key) if key else {}).json()
    assert polled["status"] == "matched", polled
    return polled


def poll(api: Api, ticket: dict[str, Any], key: str | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = api.get(f"{QUEUE}/{ticket['ticket']}", headers=as_key(key) if key else {}).json()
    return doc


def tokens_of(ticket: dict[str, Any]) -> list[str]:
    found = [m["token"] for m in ticket["party"]]
    assert all(found), ticket
    return found


def assert_seated_as_promised(api: Api, ticket: dict[str, Any]) -> None:
    """Each member's token holds the seat the ticket names, on the team the ticket names (the game's own sides
    in its view), and the top-level seat and token are the first member's."""
    assert ticket["seat"] == ticket["party"][0]["seat"] and ticket["token"] == ticket["party"][0]["token"]
    for member in ticket["party"]:
        mine = api.get(f"/v1/matches/{ticket['match_id']}", member["token"]).json()
        assert mine["you"] == member["seat"]
        assert member["seat"] in mine["view"]["teams"][member["team"]]


def rate(redis_url: str, tenant: str, game: str, mu: dict[str, float]) -> None:
    client = redisconn.connect(redis_url)
    for player, value in mu.items():
        client.hset(ratings.player_key(tenant, player), game, orjson.dumps({"mu": value, "sigma": 3.0, "matches": 10}))


# -- the "Done when" -----------------------------------------------------------------------------------
def test_a_party_of_two_and_a_single_are_seated_as_two_teams_with_a_bot_filling(
        party_gateway: GatewayServer, own_redis_url: str) -> None:
    api = Api(party_gateway.url)
    friends = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("ann", "ben")})
    single = queue(api, {"game": TEAMS_GAME, "players": 4})
    assert friends["status"] == single["status"] == "waiting"  # three of four seats: the queue waits
    assert [m["seat"] for m in friends["party"]] == [None, None] and friends["party"][0]["team"] is None
    seated = fill_now(api, own_redis_url, friends["ticket"])
    teammates = {m["team"] for m in seated["party"]}
    assert len(teammates) == 1 and sorted(m["seat"] for m in seated["party"]) in SIDES
    assert [m["name"] for m in seated["party"]] == ["ann", "ben"]
    assert_seated_as_promised(api, seated)
    alone = poll(api, single)
    assert alone["match_id"] == seated["match_id"] and alone["party"][0]["team"] not in teammates
    assert_seated_as_promised(api, alone)
    match = api.get(f"/v1/matches/{seated['match_id']}").json()
    bot = next(i for i, s in enumerate(match["seats"]) if s["kind"] == "bot")
    assert [s["kind"] for s in match["seats"]].count("bot") == 1 and bot in SIDES[alone["party"][0]["team"]]


def test_two_parties_of_two_are_seated_as_one_team_each(party_gateway: GatewayServer) -> None:
    api = Api(party_gateway.url)
    first = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("ann", "ben")})
    second = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("cat", "dan")})
    assert first["status"] == "waiting" and second["status"] == "matched"
    first = poll(api, first)
    assert first["match_id"] == second["match_id"]
    for ticket in (first, second):
        assert sorted(m["seat"] for m in ticket["party"]) in SIDES
        assert_seated_as_promised(api, ticket)
    assert {m["team"] for m in first["party"]} | {m["team"] for m in second["party"]} == {0, 1}
    match = api.get(f"/v1/matches/{first['match_id']}").json()
    assert match["status"] == "active" and all(s["kind"] == "human" for s in match["seats"])


def test_two_parties_and_a_single_queued_between_them_seat_the_parties_as_two_teams_and_the_single_with_bots(
        party_gateway: GatewayServer, own_redis_url: str) -> None:
    """A group fills the table exactly with parties that fit: the single queued between the two parties (2 + 1
    leaves a seat only a single could take) is passed over, and its own bot fill seats it with three bots."""
    api = Api(party_gateway.url)
    first = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("ann", "ben")})
    single = queue(api, {"game": TEAMS_GAME, "players": 4})
    second = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("cat", "dan")})
    assert second["status"] == "matched" and poll(api, first)["match_id"] == second["match_id"]
    assert {m["team"] for m in second["party"]} == {1 - poll(api, first)["party"][0]["team"]}
    alone = fill_now(api, own_redis_url, single["ticket"])
    assert alone["match_id"] != second["match_id"]
    match = api.get(f"/v1/matches/{alone['match_id']}").json()
    assert [s["kind"] for s in match["seats"]].count("bot") == 3


def test_a_party_of_three_plus_bots_plays_fierce_women_to_the_end(party_gateway: GatewayServer, own_redis_url: str,
                                                                  rules: RulesProcess) -> None:
    api = Api(party_gateway.url)
    three = queue(api, {"game": "fierce-women", "players": 5, "party": party("ann", "ben", "cat")})
    assert three["status"] == "waiting"
    seated = fill_now(api, own_redis_url, three["ticket"])
    assert [m["seat"] for m in seated["party"]] == [0, 1, 2] and {m["team"] for m in seated["party"]} == {None}
    tokens = dict(zip((m["seat"] for m in seated["party"]), tokens_of(seated), strict=True))
    match_id = seated["match_id"]
    match = api.get(f"/v1/matches/{match_id}").json()
    assert [s["kind"] for s in match["seats"]] == ["human"] * 3 + ["bot"] * 2
    assert {s["level"] for s in match["seats"] if s["kind"] == "bot"} == {ratings.NEWCOMER_LEVEL}
    rng = random.Random(51)
    with bot_worker_thread(own_redis_url, rules.port, "party-bots"):
        for _ in range(3000):
            status = api.get(f"/v1/matches/{match_id}").json()
            if status["status"] == "finished":
                break
            ours = [seat for seat in status["to_act"] if seat in tokens]
            if not ours:
                api.get(f"/v1/matches/{match_id}/events?after={status['version']}&wait=5")  # the bots' turn
                continue
            seat = ours[0]
            moves = api.get(f"/v1/matches/{match_id}/legal-moves", tokens[seat]).json()["moves"]
            moved = api.post(f"/v1/matches/{match_id}/moves", tokens[seat],
                             json={"move": rng.choice(moves), "version": status["version"]})
            assert moved.status_code in (200, 409), moved.text  # 409: a bot moved meanwhile (read again)
    final = api.get(f"/v1/matches/{match_id}", tokens[0]).json()
    assert final["status"] == "finished" and final["outcome"]["ended_by"] == "game"
    assert len(final["outcome"]["scores"]) >= 5


# -- tokens, idempotency, cancel, quotas, tenants ----------------------------------------------------------------
def test_each_member_gets_their_seat_token_once(party_gateway: GatewayServer) -> None:
    api = Api(party_gateway.url)
    first = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("ann", "ben")})
    assert [m["token"] for m in first["party"]] == [None, None] and not first["party"][0]["token_issued"]
    second = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("cat", "dan")})
    handed = poll(api, first)
    assert len(set(tokens_of(handed)) | set(tokens_of(second))) == 4
    again = poll(api, first)
    assert again["token"] is None and [m["token"] for m in again["party"]] == [None, None]
    assert all(m["token_issued"] for m in again["party"]) and again["token_issued"]


def test_reads_racing_for_a_matched_party_hand_every_token_out_in_one_answer(party_gateway: GatewayServer) -> None:
    """Eight reads at once of a party's ticket that was just matched: one answer carries all its members' tokens,
    the others none (a read that finds another handing them out says so, token_issued false, and a later read
    says token_issued true)."""
    api = Api(party_gateway.url)
    first = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("ann", "ben")})
    queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("cat", "dan")})
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: Api(party_gateway.url).get(f"{QUEUE}/{first['ticket']}").json(), range(8)))
    handed = [[m["token"] for m in a["party"]] for a in answers if any(m["token"] for m in a["party"])]
    assert len(handed) == 1 and all(handed[0]) and len(set(handed[0])) == 2
    assert all(m["token_issued"] for m in poll(api, first)["party"])


def test_a_party_enqueue_retried_with_its_idempotency_key_answers_every_token_again(
        party_gateway: GatewayServer) -> None:
    api = Api(party_gateway.url)
    queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("ann", "ben")})
    body = {"game": TEAMS_GAME, "players": 4, "party": party("cat", "dan")}
    made = queue(api, body, **{"Idempotency-Key": "party-51"})
    retried = queue(api, body, **{"Idempotency-Key": "party-51"})
    assert made["status"] == "matched" and retried == made and len(set(tokens_of(retried))) == 2
    other = api.post(QUEUE, json={**body, "party": party("cat", "eve")}, headers={"Idempotency-Key": "party-51"})
    assert other.status_code == 422 and other.json()["error"]["code"] == "idempotency_key_reused"


def test_a_party_can_be_cancelled_until_it_is_matched(party_gateway: GatewayServer) -> None:
    api = Api(party_gateway.url)
    gone = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("ann", "ben")})
    assert api.call("DELETE", f"{QUEUE}/{gone['ticket']}").json()["status"] == "cancelled"
    first = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("cat", "dan")})
    second = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("eve", "fay")})
    assert second["status"] == "matched" and poll(api, first)["match_id"] == second["match_id"]  # not the cancelled
    late = api.call("DELETE", f"{QUEUE}/{first['ticket']}")
    assert late.status_code == 409 and late.json()["error"]["code"] == "ticket_matched"


def test_a_party_counts_one_active_match_per_member(party_gateway: GatewayServer, own_redis_url: str) -> None:
    api = Api(party_gateway.url)
    key = new_key(own_redis_url, "acme", "matches=3")["key"]
    held = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("ann", "ben", players=True)}, key)
    over = api.post(QUEUE, json={"game": TEAMS_GAME, "players": 4, "party": party("cat", "dan", players=True)},
                    headers=as_key(key))
    assert over.status_code == 429 and over.json()["error"]["code"] == "quota_exceeded"
    queue(api, {"game": TEAMS_GAME, "players": 4, "player": "cat"}, key)  # the third: one seat left of three
    api.call("DELETE", f"{QUEUE}/{held['ticket']}", headers=as_key(key))  # both members' charges given back
    queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("dan", "eve", players=True)}, key)


def test_a_tenants_party_is_its_key_alone_and_meets_its_own_players_only(
        party_gateway: GatewayServer, own_redis_url: str) -> None:
    api = Api(party_gateway.url)
    acme, rival = new_key(own_redis_url, "acme")["key"], new_key(own_redis_url, "rival")["key"]
    friends = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("ann", "ben", players=True)}, acme)
    theirs = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("cat", "dan", players=True)}, rival)
    assert theirs["status"] == "waiting"  # another tenant's party is in another queue
    assert api.get(f"{QUEUE}/{friends['ticket']}", headers=as_key(rival)).status_code == 404
    assert api.call("DELETE", f"{QUEUE}/{friends['ticket']}", headers=as_key(rival)).status_code == 404
    ours = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("cat", "dan", players=True)}, acme)
    assert ours["status"] == "matched" and poll(api, friends, acme)["match_id"] == ours["match_id"]
    match = api.get(f"/v1/matches/{ours['match_id']}", headers=as_key(acme)).json()
    assert sorted(s["player"] for s in match["seats"]) == ["ann", "ben", "cat", "dan"]
    assert [m["player"] for m in ours["party"]] == ["cat", "dan"]


def test_two_parties_that_share_a_player_are_never_seated_together(party_gateway: GatewayServer,
                                                                   own_redis_url: str) -> None:
    api = Api(party_gateway.url)
    key = new_key(own_redis_url, "acme")["key"]
    first = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("ann", "ben", players=True)}, key)
    shared = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("ben", "cat", players=True)}, key)
    single = queue(api, {"game": TEAMS_GAME, "players": 4, "player": "ann"}, key)
    assert first["status"] == shared["status"] == single["status"] == "waiting"
    other = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("dan", "eve", players=True)}, key)
    assert other["status"] == "matched"
    match = api.get(f"/v1/matches/{other['match_id']}", headers=as_key(key)).json()
    players = [s["player"] for s in match["seats"]]
    assert len(set(players)) == 4 and {"dan", "eve"} <= set(players)
    filled = fill_now(api, own_redis_url, shared["ticket"], key)  # ann's single ticket, not ben's other party
    seated = api.get(f"/v1/matches/{filled['match_id']}", headers=as_key(key)).json()
    names = [s.get("player") for s in seated["seats"] if s["kind"] == "human"]
    assert len(names) == len(set(names)) and names.count("ben") == 1


# -- the party's rating ------------------------------------------------------------------------------------------
def test_a_party_is_matched_by_its_mean_rating_within_a_window_widened_by_half_its_spread(
        party_gateway: GatewayServer, own_redis_url: str) -> None:
    """ann 20 and ben 30: the party's rating is 25 and its window 2 + 10 / 2 = 7, so a player rated 31.5 joins
    it at once and one rated 32.5 (7.5 away) does not; a single's own window stays 2."""
    api = Api(party_gateway.url)
    key = new_key(own_redis_url, "acme")["key"]
    rate(own_redis_url, "acme", "fierce-women", {"ann": 20.0, "ben": 30.0, "far": 32.5, "near": 31.5})
    body = {"game": "fierce-women", "players": 3}
    friends = queue(api, {**body, "party": party("ann", "ben", players=True)}, key)
    assert queue(api, {**body, "player": "far"}, key)["status"] == "waiting"
    near = queue(api, {**body, "player": "near"}, key)
    assert near["status"] == "matched" and poll(api, friends, key)["match_id"] == near["match_id"]


def test_bot_fill_seats_the_level_closest_to_the_mean_of_every_member(party_gateway: GatewayServer,
                                                                        own_redis_url: str) -> None:
    from ai import ladder

    api = Api(party_gateway.url)
    client = redisconn.connect(own_redis_url)
    ladder.store(client, TEAMS_GAME, {"easy": {"mu": 15.0, "sigma": 1.0, "matches": 40},
                                      "normal": {"mu": 24.0, "sigma": 1.0, "matches": 40},
                                      "hard": {"mu": 34.0, "sigma": 1.0, "matches": 40}})
    key = new_key(own_redis_url, "acme")["key"]
    rate(own_redis_url, "acme", TEAMS_GAME, {"ann": 30.0, "ben": 36.0})
    friends = queue(api, {"game": TEAMS_GAME, "players": 4, "party": party("ann", "ben", players=True)}, key)
    seated = fill_now(api, own_redis_url, friends["ticket"], key)
    match = api.get(f"/v1/matches/{seated['match_id']}", headers=as_key(key)).json()
    assert [s["level"] for s in match["seats"] if s["kind"] == "bot"] == ["hard", "hard"]  # mean 33


# -- bad input: 400 bad_party, each rule its own test --------------------------------------------------------------
def test_bad_party_an_empty_party(party_gateway: GatewayServer) -> None:
    assert refused(Api(party_gateway.url), {"game": TEAMS_GAME, "players": 4, "party": []}) == "bad_party"


def test_bad_party_more_members_than_players(party_gateway: GatewayServer) -> None:
    body = {"game": "fierce-women", "players": 3, "party": party("a", "b", "c", "d")}
    assert refused(Api(party_gateway.url), body) == "bad_party"


def test_bad_party_the_same_player_twice(party_gateway: GatewayServer, own_redis_url: str) -> None:
    key = new_key(own_redis_url, "acme")["key"]
    body = {"game": TEAMS_GAME, "players": 4, "party": [{"player": "ann"}, {"player": "ann", "name": "again"}]}
    assert refused(Api(party_gateway.url), body, key) == "bad_party"


def test_bad_party_a_player_field_beside_a_party(party_gateway: GatewayServer, own_redis_url: str) -> None:
    key = new_key(own_redis_url, "acme")["key"]
    body = {"game": TEAMS_GAME, "players": 4, "player": "ann", "party": party("ben", players=True)}
    assert refused(Api(party_gateway.url), body, key) == "bad_party"


@pytest.mark.parametrize("name", ["", "x" * 33, "tab\there", "bell\x07"])
def test_bad_party_a_member_name_not_1_to_32_characters_without_control_characters(
        party_gateway: GatewayServer, name: str) -> None:
    body = {"game": TEAMS_GAME, "players": 4, "party": [{"name": name}]}
    assert refused(Api(party_gateway.url), body) == "bad_party"


def test_a_party_member_player_follows_the_player_rules(party_gateway: GatewayServer, own_redis_url: str) -> None:
    api = Api(party_gateway.url)
    assert refused(api, {"game": TEAMS_GAME, "players": 4, "party": [{"player": "ann"}]}) == "player_needs_api_key"
    key = new_key(own_redis_url, "acme")["key"]
    assert refused(api, {"game": TEAMS_GAME, "players": 4, "party": [{"player": "-x"}]}, key) == "bad_player"
    assert refused(api, {"game": TEAMS_GAME, "players": 4, "party": [{"nick": "x"}]}) == "bad_party"  # (inside it)


def test_groups_are_built_only_of_parties_that_fit_the_teams() -> None:
    """The placement rule, on They Who Were 8's teams and on a 3-against-3 shape (no game has one yet): a party
    sits on one team when it fits, a larger one fills a team and sits together on the other; three parties of
    two cannot share two teams of three without splitting one, so no group of them is made."""
    assert skill.place([2, 1, 1], 4, SIDES) == [[0, 2], [1], [3]]
    assert skill.place([1, 3], 4, SIDES) == [[3], [0, 1, 2]]
    assert skill.place([2, 2], 4, SIDES) == [[0, 2], [1, 3]]
    three_a_side = [[0, 2, 4], [1, 3, 5]]
    assert skill.place([2, 2, 2], 6, three_a_side) is None
    e = skill.Entry
    pairs = [e(f"p{i}", 25.0, float(i), size=2) for i in range(3)]
    assert skill.pick_group(pairs, 6, 10.0, 2.0, 0.0, three_a_side) is None
    singles = [e("s1", 25.0, 5.0), e("s2", 25.0, 6.0)]
    group = skill.pick_group([*pairs, *singles], 6, 10.0, 2.0, 0.0, three_a_side)
    assert group is not None and sorted(x.size for x in group) == [1, 1, 2, 2]
    assert skill.pick_group(pairs, 6, 10.0, 2.0, 0.0) is not None  # without teams, three pairs make six
