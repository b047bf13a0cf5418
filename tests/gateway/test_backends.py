"""Issue 20, for backends: API keys (tenants) with quotas, player ids and their history — over real HTTP and Redis.

Keys are made by the real admin CLI (``meeple keys``) against the test's Redis; the gateway runs with
anonymous access off, as the deploy configs run it.
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import requests

from services import cli, redisconn
from tooling.stack import free_port

from .conftest import Api, GatewayServer, RulesProcess, start_gateway

GAME = "clash"


def meeple_keys(redis_url: str, *argv: str) -> tuple[int, str]:
    """Run ``meeple keys ...`` (the real CLI entry point); its exit code and output."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli.main(["keys", *argv, "--redis-url", redis_url])
    return code, out.getvalue()


def new_key(redis_url: str, name: str, quota: str | None = None) -> dict[str, Any]:
    code, out = meeple_keys(redis_url, "create", "--name", name, "--json", *(["--quota", quota] if quota else []))
    assert code == 0, out
    record: dict[str, Any] = orjson.loads(out)
    return record


def watched_tenant_clash(url: str, redis_url: str, tenant: str) -> tuple[dict[str, str], str, str, dict[str, Any]]:
    """A tenant's CLASH match (seat 0 a named human who moves first, seat 1 an easy bot) with a watch token for it:
    (the key's headers, the match id, seat 0's token, the minted watch token)."""
    headers = {"X-API-Key": new_key(redis_url, tenant)["key"]}
    made = requests.post(f"{url}/v1/matches", headers=headers, json={
        "game": "clash", "players": 2, "join": True, "seed": 5, "options": {"match": "single", "first_player": 0},
        "seats": [{"kind": "human", "player": "ann"}, {"kind": "bot", "level": "easy"}]})
    assert made.status_code == 201, made.text
    minted = requests.post(f"{url}/v1/matches/{made.json()['id']}/watch-tokens", headers=headers, json={"ttl_s": 600})
    assert minted.status_code == 201, minted.text
    return headers, made.json()["id"], made.json()["token"], minted.json()


def as_key(key: str, header: str = "X-API-Key") -> dict[str, str]:
    return {"X-API-Key": key} if header == "X-API-Key" else {"Authorization": f"Bearer {key}"}


@pytest.fixture()
def closed_gateway(own_redis_url: str, rules: RulesProcess, request: pytest.FixtureRequest
                   ) -> Iterator[GatewayServer]:
    """A gateway with anonymous access off (``MEEPLE_ANONYMOUS=0``) on a Redis of the test's own."""
    marker = request.node.get_closest_marker("gateway_config")
    server = start_gateway(own_redis_url, rules.port, anonymous=False, **(marker.kwargs if marker else {}))
    yield server
    server.stop()


def test_a_key_is_shown_once_and_redis_holds_only_its_hash(own_redis_url: str) -> None:
    made = new_key(own_redis_url, "acme")
    key = made["key"]
    assert key.startswith("mk_") and made["tenant"] == "acme"
    store = redisconn.connect(own_redis_url)
    for name in store.scan_iter("*"):
        kind = store.type(name).decode()
        values = [store.get(name)] if kind == "string" else list(store.smembers(name)) if kind == "set" else []
        assert not any(key.encode() in (v or b"") for v in values), name
    code, listed = meeple_keys(own_redis_url, "list")
    assert code == 0 and made["key_id"] in listed and key not in listed and "acme" in listed
    assert meeple_keys(own_redis_url, "create", "--name", "acme", "--quota", "bogus=1")[0] == 2
    assert meeple_keys(own_redis_url, "revoke", "nosuchkey")[0] == 1


def test_anonymous_access_off_needs_a_key_to_create_join_or_queue_and_seat_tokens_still_work(
        closed_gateway: GatewayServer, own_redis_url: str) -> None:
    api = Api(closed_gateway.url)
    for path in ("/v1/matches", "/v1/matchmaking"):
        refused = api.post(path, json={"game": GAME, "players": 2})
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "api_key_required", refused.text
    key = new_key(own_redis_url, "acme")["key"]
    created = api.post("/v1/matches", json={"game": GAME, "players": 2, "join": True}, headers=as_key(key)).json()
    match_id, token = created["id"], created["token"]
    assert api.post(f"/v1/matches/{match_id}/join", json={}).status_code == 401  # no key: no seat
    assert api.get(f"/v1/matches/{match_id}").status_code == 401  # no spectators without credentials
    joined = api.post(f"/v1/matches/{match_id}/join", json={}, headers=as_key(key, "Authorization"))
    assert joined.status_code == 200
    # The players' own clients: seat tokens, exactly as before.
    mine = api.get(f"/v1/matches/{match_id}", token)
    assert mine.status_code == 200 and mine.json()["you"] == 0 and mine.json()["status"] == "active"
    mover = token if 0 in mine.json()["to_act"] else joined.json()["token"]
    legal = api.get(f"/v1/matches/{match_id}/legal-moves", mover).json()["moves"]
    moved = api.post(f"/v1/matches/{match_id}/moves", mover, json={"move": legal[0], "version": mine.json()["version"]})
    assert moved.status_code == 200, moved.text
    assert api.get(f"/v1/matches/{match_id}", "0.invented").status_code == 401
    assert api.get("/v1/games").status_code == 200  # the catalogue stays open


def test_a_tenant_seats_its_players_and_reads_their_history_which_no_other_tenant_sees(
        closed_gateway: GatewayServer, own_redis_url: str) -> None:
    api = Api(closed_gateway.url)
    acme, rival = new_key(own_redis_url, "acme")["key"], new_key(own_redis_url, "rival")["key"]
    ids = []
    for opponent in ("bob", "carol", "dave"):
        created = api.post("/v1/matches", headers=as_key(acme), json={
            "game": GAME, "players": 2, "seats": [{"kind": "human", "player": "alice"}, {"kind": "human"}]})
        assert created.status_code == 201, created.text
        assert [s.get("player") for s in created.json()["seats"]] == ["alice", None]
        joined = api.post(f"/v1/matches/{created.json()['id']}/join", headers=as_key(acme),
                          json={"seat": 1, "player": opponent})
        assert joined.status_code == 200 and joined.json()["seats"][1]["player"] == opponent
        ids.append(created.json()["id"])
        time.sleep(0.01)  # distinct creation times: the order below is by creation
    seated = api.post(f"/v1/matches/{ids[0]}/join", headers=as_key(acme), json={"seat": 0, "player": "alice"})
    assert seated.status_code == 200
    token = seated.json()["token"]
    # Newest first, two a page.
    first = api.get("/v1/players/alice/matches?limit=2", headers=as_key(acme)).json()
    assert [m["id"] for m in first["matches"]] == ids[:0:-1] and first["next"] is not None
    assert all(m["seat"] == 0 for m in first["matches"])
    rest = api.get(f"/v1/players/alice/matches?limit=2&before={first['next']}", headers=as_key(acme)).json()
    assert [m["id"] for m in rest["matches"]] == ids[:1] and rest["next"] is None
    bob = api.get("/v1/players/bob/matches", headers=as_key(acme)).json()
    assert [m["id"] for m in bob["matches"]] == ids[:1] and bob["matches"][0]["seat"] == 1
    listed = api.get("/v1/matches", headers=as_key(acme)).json()
    assert [m["id"] for m in listed["matches"]] == ids[::-1]
    # Another tenant: the same player id is its own (empty), the matches do not exist for it.
    assert api.get("/v1/players/alice/matches", headers=as_key(rival)).json()["matches"] == []
    assert api.get("/v1/matches", headers=as_key(rival)).json()["matches"] == []
    assert api.get(f"/v1/matches/{ids[0]}", headers=as_key(rival)).status_code == 404
    assert api.get(f"/v1/matches/{ids[0]}/replay", headers=as_key(rival)).status_code == 404
    assert api.post(f"/v1/matches/{ids[1]}/join", headers=as_key(rival), json={}).status_code == 404
    # A seat holder sees the match, not the tenant's player ids.
    seen = api.get(f"/v1/matches/{ids[0]}", token).json()
    assert all("player" not in s for s in seen["seats"])
    # A player id needs a key, and one player sits once per match.
    twice = api.post("/v1/matches", headers=as_key(acme), json={
        "game": GAME, "players": 2, "seats": [{"kind": "human", "player": "x"}, {"kind": "human", "player": "x"}]})
    assert twice.status_code == 400 and twice.json()["error"]["code"] == "bad_seats"
    assert api.get("/v1/players/alice/matches").status_code == 401
    bad = api.get("/v1/players/al%20ice/matches", headers=as_key(acme))
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_player"


def test_a_player_id_without_a_key_is_refused_and_a_key_does_not_reach_anonymous_matches(
        api: Api, redis_url: str) -> None:
    reply = api.post("/v1/matches", json={"game": GAME, "players": 2, "seats": [
        {"kind": "human", "player": "alice"}, {"kind": "human"}]})
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "player_needs_api_key"
    anonymous = api.post("/v1/matches", json={"game": GAME, "players": 2}).json()
    key = new_key(redis_url, "acme-anon")["key"]
    for body in ({"player": "alice"}, {}):  # a key acts for its tenant: this match is not the tenant's
        refused = api.post(f"/v1/matches/{anonymous['id']}/join", headers=as_key(key), json=body)
        assert refused.status_code == 404 and refused.json()["error"]["code"] == "match_not_found"
    assert api.post(f"/v1/matches/{anonymous['id']}/join", json={}).status_code == 200


@pytest.mark.gateway_config(key_cache_s=0.0)
def test_a_revoked_key_is_401_at_once_without_a_key_cache(closed_gateway: GatewayServer, own_redis_url: str) -> None:
    """``MEEPLE_KEY_CACHE_S=0``: the key's record is read on every request (the default, 5 s, is the cache's
    TTL: tests/core/test_key_cache.py moves its clock past it)."""
    api = Api(closed_gateway.url)
    made = new_key(own_redis_url, "acme")
    assert api.get("/v1/matches", headers=as_key(made["key"])).status_code == 200
    assert meeple_keys(own_redis_url, "revoke", made["key_id"]) == (0, f"revoked {made['key_id']}\n")
    for header in ("X-API-Key", "Authorization"):
        reply = api.post("/v1/matches", headers=as_key(made["key"], header), json={"game": GAME, "players": 2})
        assert reply.status_code == 401 and reply.json()["error"]["code"] == "invalid_api_key"
    forged = made["key"][:-4] + "AAAA"
    assert api.get("/v1/matches", headers=as_key(forged)).json()["error"]["code"] == "invalid_api_key"
    code, listed = meeple_keys(own_redis_url, "list")
    assert code == 0 and "revoked" in listed


@pytest.mark.gateway_config(key_cache_s=3600.0)
def test_a_gateway_reuses_a_keys_record_until_its_key_cache_ttl(closed_gateway: GatewayServer,
                                                                 own_redis_url: str) -> None:
    """The gateway's requests go through its key cache (issue 28: a tenant's requests must not each need the
    primary holding its key's record): within the TTL, a key revoked meanwhile still acts for its tenant, the
    documented window. A forged secret under the same key id is refused all the same."""
    api = Api(closed_gateway.url)
    made = new_key(own_redis_url, "acme")
    assert api.get("/v1/matches", headers=as_key(made["key"])).status_code == 200
    assert meeple_keys(own_redis_url, "revoke", made["key_id"])[0] == 0
    assert api.get("/v1/matches", headers=as_key(made["key"])).status_code == 200
    forged = made["key"][:-4] + "AAAA"
    assert api.get("/v1/matches", headers=as_key(forged)).json()["error"]["code"] == "invalid_api_key"


@pytest.fixture()
def metrics_port() -> int:
    return free_port()


@pytest.fixture()
def counted_gateway(own_redis_url: str, rules: RulesProcess, metrics_port: int) -> Iterator[GatewayServer]:
    """A closed gateway whose metrics are served on a port of their own (``MEEPLE_METRICS_PORT``)."""
    server = start_gateway(own_redis_url, rules.port, anonymous=False, rate_limit_per_minute=1000,
                           metrics_port=metrics_port)
    yield server
    server.stop()


def test_tenant_quotas_answer_429_naming_the_limit_and_are_shared_by_its_keys(
        counted_gateway: GatewayServer, own_redis_url: str, metrics_port: int) -> None:
    closed_gateway = counted_gateway
    api = Api(closed_gateway.url)
    key = new_key(own_redis_url, "acme", "matches=2,bots=2,hard=1")["key"]
    second_key = new_key(own_redis_url, "acme")["key"]  # the same tenant, the same quotas
    hard = api.post("/v1/matches", headers=as_key(key),
                    json={"game": GAME, "players": 2, "seats": [{"kind": "bot", "level": "hard"}] * 2})
    assert hard.status_code == 429 and hard.json()["error"]["code"] == "quota_exceeded"
    assert "tenant acme" in hard.json()["error"]["message"] and "limit is 1" in hard.json()["error"]["message"]
    assert api.post("/v1/matches", headers=as_key(key), json={"game": GAME, "players": 2}).status_code == 201
    assert api.post("/v1/matches", headers=as_key(second_key), json={"game": GAME, "players": 2}).status_code == 201
    over = api.post("/v1/matchmaking", headers=as_key(second_key), json={"game": GAME, "players": 2})
    assert over.status_code == 429 and "active matches" in over.json()["error"]["message"]
    # Another tenant is not touched by acme's quota.
    other = new_key(own_redis_url, "other")["key"]
    assert api.post("/v1/matches", headers=as_key(other), json={"game": GAME, "players": 2}).status_code == 201
    # counted on the gateway's metrics port (MEEPLE_METRICS_PORT), never on the API port
    assert requests.get(f"{closed_gateway.url}/metrics", timeout=10).status_code == 404
    metrics = requests.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).text
    assert 'meeple_tenant_requests_total{status="201",tenant="acme"}' in metrics
    assert 'meeple_tenant_limited_total{code="quota_exceeded",tenant="acme"}' in metrics


def test_a_tenant_rate_limit_counts_every_key_of_the_tenant(closed_gateway: GatewayServer,
                                                           own_redis_url: str) -> None:
    api = Api(closed_gateway.url)
    key = new_key(own_redis_url, "acme", "rpm=3")["key"]
    codes = [api.get("/v1/matches", headers=as_key(key)).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    limited = api.get("/v1/matches", headers=as_key(new_key(own_redis_url, "acme")["key"]))
    assert limited.status_code == 429 and "tenant acme" in limited.json()["error"]["message"]
    assert limited.headers.get("Retry-After")
    assert api.get("/v1/matches", headers=as_key(new_key(own_redis_url, "other")["key"])).status_code == 200


def test_matchmaking_with_a_key_seats_the_tenants_players_with_each_other(
        closed_gateway: GatewayServer, own_redis_url: str) -> None:
    api = Api(closed_gateway.url)
    acme, rival = new_key(own_redis_url, "acme")["key"], new_key(own_redis_url, "rival")["key"]
    first = api.post("/v1/matchmaking", headers=as_key(acme), json={"game": GAME, "players": 2, "player": "ann"})
    lone = api.post("/v1/matchmaking", headers=as_key(rival), json={"game": GAME, "players": 2, "player": "ann"})
    assert lone.json()["status"] == "waiting"  # another tenant's pool
    second = api.post("/v1/matchmaking", headers=as_key(acme), json={"game": GAME, "players": 2, "player": "ben"})
    assert second.json()["status"] == "matched" and second.json()["token"]
    polled = api.get(f"/v1/matchmaking/{first.json()['ticket']}", headers=as_key(acme)).json()
    assert polled["match_id"] == second.json()["match_id"] and polled["token"]
    match = api.get(f"/v1/matches/{polled['match_id']}", headers=as_key(acme)).json()
    assert sorted(s["player"] for s in match["seats"]) == ["ann", "ben"]
    history = api.get("/v1/players/ben/matches", headers=as_key(acme)).json()
    assert [m["id"] for m in history["matches"]] == [polled["match_id"]]
    assert api.get("/v1/players/ann/matches", headers=as_key(rival)).json()["matches"] == []


def rated_forfeit(api: Api, key: str, redis_url: str) -> tuple[str, str, dict[str, Any]]:
    """A rated match of ann and ben: the seat to act moves, the other runs out of time and forfeits.
    Returns the match id, the winner and the finished match."""
    from services.timekeeper.keeper import Timekeeper

    created = api.post("/v1/matches", headers=as_key(key), json={
        "game": GAME, "players": 2, "clock": {"mode": "per_move", "seconds": 5, "on_timeout": "forfeit"},
        "seats": [{"kind": "human", "player": "ann"}, {"kind": "human", "player": "ben"}]}).json()
    tokens = [api.post(f"/v1/matches/{created['id']}/join", headers=as_key(key), json={"seat": s}).json()["token"]
              for s in (0, 1)]
    status = api.get(f"/v1/matches/{created['id']}", tokens[0]).json()
    seat = status["to_act"][0]
    move = api.get(f"/v1/matches/{created['id']}/legal-moves", tokens[seat]).json()["moves"][0]
    assert api.post(f"/v1/matches/{created['id']}/moves", tokens[seat],
                    json={"move": move, "version": status["version"]}).status_code == 200
    Timekeeper(redis_url).run_once(now=time.time() + 60)  # the other runs out of time and forfeits
    done = api.get(f"/v1/matches/{created['id']}", headers=as_key(key)).json()
    assert done["status"] == "finished" and done["outcome"]["ended_by"] == "forfeit", done["outcome"]
    return str(created["id"]), ("ann", "ben")[seat], done


def test_a_rated_match_moves_its_players_ratings_and_shows_the_change_in_the_outcome(
        closed_gateway: GatewayServer, own_redis_url: str) -> None:
    from services.core.competition import leaderboards

    api = Api(closed_gateway.url)
    key, rival = new_key(own_redis_url, "acme")["key"], new_key(own_redis_url, "rival")["key"]
    match_id, winner, done = rated_forfeit(api, key, own_redis_url)
    loser = "ben" if winner == "ann" else "ann"
    changes = {c["player"]: c for c in done["outcome"]["ratings"]}
    assert changes[winner]["change"] > 0 > changes[loser]["change"]
    assert changes[winner]["after"]["sigma"] < changes[winner]["before"]["sigma"]  # less uncertain after a match
    ann = api.get("/v1/players/ann/ratings", headers=as_key(key)).json()["ratings"][GAME]
    assert ann == changes["ann"]["after"] and ann["matches"] == 1
    assert api.get("/v1/players/ann/ratings", headers=as_key(rival)).json()["ratings"] == {}
    # Applying the outcome again (the webhook worker does, from the outbox) changes nothing.
    stored = redisconn.connect(own_redis_url)
    meta = orjson.loads(stored.get(f"match:{{{match_id}}}:meta"))
    assert leaderboards.apply_ratings(stored, "acme", GAME, meta["outcome"]) == 0
    history = api.get("/v1/players/ben/matches", headers=as_key(key)).json()["matches"]
    assert history[0]["outcome"]["ratings"] == done["outcome"]["ratings"]


def test_ranks_put_the_winning_team_first_and_forfeited_sides_last() -> None:
    from services.core.competition import ratings
    from services.core.meta import Outcome

    def ended(winners: list[int], scores: list[float] | None, forfeited: list[int]) -> Outcome:
        return Outcome(ended_by="game", winners=winners, scores=scores, forfeited=forfeited)

    assert ratings.ranks([[0, 2], [1, 3]], ended([1, 3], [5, 9, 5, 9], [])) == [2.0, 1.0]
    three = [[0], [1], [2]]
    assert ratings.ranks(three, ended([2], [4, 7, 9], [])) == [3.0, 2.0, 1.0]
    assert ratings.ranks(three, ended([1], None, [0])) == [3.0, 1.0, 2.0]


def test_deploy_configs_turn_anonymous_access_off_and_make_run_keeps_it_on() -> None:
    from pathlib import Path

    from services.core.config import Config

    deploy = Path(__file__).resolve().parents[2] / "deploy"
    assert 'MEEPLE_ANONYMOUS: "0"' in (deploy / "docker-compose.yml").read_text()
    assert '{name: MEEPLE_ANONYMOUS, value: "0"}' in (deploy / "k8s" / "gateway.yaml").read_text()
    assert Config().anonymous is True  # make run sets nothing: demos work without a key


@pytest.mark.gateway_config(hint_wait_s=0.05)
def test_a_tenants_hint_budget_is_shared_by_all_its_matches(closed_gateway: GatewayServer,
                                                            own_redis_url: str) -> None:
    api = Api(closed_gateway.url)
    key = new_key(own_redis_url, "acme", "hints=1")["key"]
    codes = []
    for _ in range(2):  # two matches, one hint each: the second is over the tenant's budget
        created = api.post("/v1/matches", headers=as_key(key), json={"game": GAME, "players": 2, "join": True}).json()
        joined = api.post(f"/v1/matches/{created['id']}/join", headers=as_key(key), json={}).json()
        status = api.get(f"/v1/matches/{created['id']}", created["token"]).json()
        token = created["token"] if 0 in status["to_act"] else joined["token"]
        reply = api.get(f"/v1/matches/{created['id']}/hint", token)
        codes.append(reply.json()["error"]["code"])
    assert codes[0] == "hint_unavailable"  # within budget: asked (no bot worker runs in this test)
    assert codes[1] == "hint_limited"
