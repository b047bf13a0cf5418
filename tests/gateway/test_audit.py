"""The match audit behind ``corrupted_matches``: a match the gateway played passes; any tampering is caught."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from loadtests.audit import audit_match, audit_store, check_match
from services import redisconn
from services.core.record.store import keys
from services.rules.games import GAMES, words

from .conftest import Api

ANY = next(iter(GAMES))


def played(gid: str, moves: int, seed: int = 4) -> tuple[dict[str, Any], list[dict[str, Any]], list[Any]]:
    """Meta, log and the states after each version, as the store would hold them for a game of ``moves`` moves."""
    game = GAMES[gid]
    players = max(game.min_players, 2)
    state = game.new_game(players, seed, {})
    log: list[dict[str, Any]] = [{"version": 0, "kind": "created", "seat": None, "to_act": game.to_act(state)}]
    states = [state]
    rng = random.Random(seed)
    while len(log) <= moves and not game.is_over(state):
        seat = rng.choice(game.to_act(state))
        move = rng.choice(game.legal_moves(state, seat))
        state = game.apply(state, seat, move)
        states.append(state)
        log.append({"version": len(log), "kind": "move", "seat": seat, "move": move, "to_act": game.to_act(state)})
    meta = {"game": gid, "players": players, "options": {}, "seed": seed, "to_act": game.to_act(state),
            "status": "finished" if game.is_over(state) else "active",
            "result": words.result_document(game, state) if game.is_over(state) else None}
    return meta, log, states


@pytest.mark.parametrize("gid", list(GAMES))
def test_a_faithful_match_passes_and_a_finished_one_too(gid: str) -> None:
    game = GAMES[gid]
    meta, log, states = played(gid, 12)
    assert check_match("m", len(log) - 1, meta, game.encode(states[-1]), log).ok
    meta, log, states = played(gid, 10_000)
    assert meta["status"] == "finished"
    assert check_match("m", len(log) - 1, meta, game.encode(states[-1]), log).ok


@pytest.mark.parametrize("gid", list(GAMES))
def test_a_changed_move_in_the_log_is_caught(gid: str) -> None:
    game = GAMES[gid]
    meta, log, states = played(gid, 12)
    for index in range(1, len(log)):  # swap one logged move for another legal one that changes the game
        entry, before = log[index], states[index - 1]
        others = [m for m in game.legal_moves(before, entry["seat"]) if m != entry["move"]
                  and game.encode(game.apply(before, entry["seat"], m)) != game.encode(states[index])]
        if others:
            tampered = [*log[:index], {**entry, "move": others[0]}, *log[index + 1:]]
            break
    else:
        pytest.skip("no alternative move changes this game")
    audit = check_match("m", len(log) - 1, meta, game.encode(states[-1]), tampered)
    assert not audit.ok and audit.problem


def test_a_state_that_is_not_the_logs_is_caught() -> None:
    game = GAMES[ANY]
    meta, log, states = played(ANY, 12)
    audit = check_match("m", len(log) - 1, meta, game.encode(states[-2]), log)
    assert audit.problem == "the stored state differs from the replay of the log"


def test_a_lost_or_duplicated_log_entry_is_caught() -> None:
    game = GAMES[ANY]
    meta, log, states = played(ANY, 12)
    stored = game.encode(states[-1])
    assert "versions" in str(check_match("m", len(log) - 1, meta, stored, log[:5] + log[6:]).problem)
    assert "versions" in str(check_match("m", len(log) - 1, meta, stored, [*log, log[-1]]).problem)
    illegal = [*log[:-1], {**log[-1], "seat": 99}]
    assert not check_match("m", len(log) - 1, meta, stored, illegal).ok


def test_wrong_meta_is_caught() -> None:
    game = GAMES[ANY]
    meta, log, states = played(ANY, 12)
    stored = game.encode(states[-1])
    assert "meta says" in str(check_match("m", len(log) - 1, {**meta, "to_act": [7]}, stored, log).problem)
    assert "status" in str(check_match("m", len(log) - 1, {**meta, "status": "finished"}, stored, log).problem)


def test_matches_played_through_the_gateway_pass_and_tampering_in_redis_is_caught(api: Api, redis_url: str) -> None:
    game = GAMES[ANY]
    players = max(game.min_players, 2)
    created = api.post("/v1/matches", json={"game": ANY, "players": players, "join": True}).json()
    tokens = [created["token"]] + [api.post(f"/v1/matches/{created['id']}/join", json={}).json()["token"]
                                   for _ in range(players - 1)]
    rng = random.Random(9)
    status = api.get(f"/v1/matches/{created['id']}").json()
    for _ in range(8):
        seat = rng.choice(status["to_act"])
        moves = api.get(f"/v1/matches/{created['id']}/legal-moves", tokens[seat]).json()["moves"]
        status = api.post(f"/v1/matches/{created['id']}/moves", tokens[seat],
                          json={"move": rng.choice(moves), "version": status["version"]}).json()
    client = redisconn.connect(redis_url)
    assert audit_match(client, created["id"]).ok
    assert created["id"] in {a.match_id for a in audit_store(client) if a.ok}

    log_key = keys(created["id"])[3]
    entries = [orjson.loads(raw) for raw in client.lrange(log_key, 0, -1)]
    last = next(i for i in range(len(entries) - 1, -1, -1) if entries[i]["kind"] == "move")
    client.lset(log_key, last, orjson.dumps({**entries[last], "seat": (entries[last]["seat"] + 1) % players}))
    assert not audit_match(client, created["id"]).ok
    assert not audit_match(client, "no-such-match").ok


def test_the_views_and_legal_moves_cached_beside_the_state_are_the_engines(api: Api, redis_url: str) -> None:
    """Reads are served from the cache the compare-and-set keeps; the audit proves it describes the state."""
    game = GAMES[ANY]
    players = max(game.min_players, 2)
    created = api.post("/v1/matches", json={"game": ANY, "players": players, "join": True}).json()
    tokens = [created["token"]] + [api.post(f"/v1/matches/{created['id']}/join", json={}).json()["token"]
                                   for _ in range(players - 1)]
    status = api.get(f"/v1/matches/{created['id']}").json()
    seat = status["to_act"][0]
    move = api.get(f"/v1/matches/{created['id']}/legal-moves", tokens[seat]).json()["moves"][0]
    api.post(f"/v1/matches/{created['id']}/moves", tokens[seat], json={"move": move, "version": status["version"]})
    client = redisconn.connect(redis_url)
    derived_key = keys(created["id"])[5]
    assert client.hget(derived_key, "view:-1") is not None and audit_match(client, created["id"]).ok
    client.hset(derived_key, "view:0", orjson.dumps({"forged": True}))
    assert "cached view of seat 0" in (audit_match(client, created["id"]).problem or "")
