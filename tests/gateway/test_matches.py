"""End to end over real HTTP, a real gRPC rules server and a real redis-server."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
import pytest
from openapi_spec_validator import validate

from services import redisconn
from services.contract.openapi import document
from services.core.record.store import MatchStore, StaleVersion, keys
from services.rules.games import GAMES, words
from services.rules.server import RulesMetrics, serve, shutdown
from tests.games.fixtures import leaked_secrets
from tooling.stack import free_port

from .conftest import Api, RulesProcess, start_gateway

ANY = next(iter(GAMES))


def stored_state(redis_url: str, match_id: str) -> Any:
    raw = redisconn.connect(redis_url).get(keys(match_id)[2])
    assert raw is not None
    return raw


def new_match(api: Api, game: str = ANY, players: int | None = None, **extra: Any) -> tuple[str, list[str]]:
    """A match with every seat joined by a human; returns its id and the seat tokens."""
    players = players or max(GAMES[game].min_players, 2)
    created = api.post("/v1/matches", json={"game": game, "players": players, "seed": 5, "join": True, **extra})
    assert created.status_code == 201, created.text
    body = created.json()
    tokens = [body["token"]]
    for _ in range(players - 1):
        joined = api.post(f"/v1/matches/{body['id']}/join", json={})
        assert joined.status_code == 200, joined.text
        tokens.append(joined.json()["token"])
    return body["id"], tokens


def test_openapi_document_is_valid_and_served(api: Api) -> None:
    validate(document())
    assert api.get("/v1/openapi.json").json() == document()
    page = api.session.get(api.base + "/docs")
    assert page.status_code == 200 and "openapi.json" in page.text and "https://" not in page.text


def test_catalogue_lists_every_registered_game(api: Api) -> None:
    games = api.get("/v1/games").json()["games"]
    assert [g["id"] for g in games] == list(GAMES)


@pytest.mark.parametrize("gid", list(GAMES))
def test_humans_play_a_complete_game_through_rest_and_never_see_hidden_cards(
    api: Api, redis_url: str, gid: str
) -> None:
    game = GAMES[gid]
    players = max(game.min_players, 2)
    match_id, tokens = new_match(api, gid, players)
    rng = random.Random(3)
    version = 0
    status: dict[str, Any] = api.get(f"/v1/matches/{match_id}", tokens[0]).json()
    version = status["version"]

    def check(seat: int, body: Any) -> None:
        state = game.decode(stored_state(redis_url, match_id))
        assert leaked_secrets(game, state, seat, body) == set(), f"seat {seat} received hidden ids"

    while status["status"] == "active":
        seat = rng.choice(status["to_act"])
        legal = api.get(f"/v1/matches/{match_id}/legal-moves", tokens[seat])
        check(seat, legal.json())
        move = rng.choice(legal.json()["moves"])
        reply = api.post(f"/v1/matches/{match_id}/moves", tokens[seat], json={"move": move, "version": version})
        assert reply.status_code == 200, reply.text
        check(seat, reply.json())
        status = reply.json()
        version = status["version"]
        other = (seat + 1) % players
        seen = api.get(f"/v1/matches/{match_id}", tokens[other]).json()
        check(other, seen)
        assert seen["view"] == game.view(game.decode(stored_state(redis_url, match_id)), other)
    assert status["status"] == "finished"
    final = game.decode(stored_state(redis_url, match_id))  # the engine's result, explained (issue 33)
    assert status["result"] == {**game.result(final), "explanation": words.explain(game, final)}
    replay = api.get(f"/v1/matches/{match_id}/replay").json()
    assert replay["seed"] == "5"  # a decimal string: 63-bit seeds are more than a JavaScript number holds
    # version 0 is the creation, then one join per seat (seat 0's by ``join: true``), then the moves
    assert [e["kind"] for e in replay["log"][:players + 1]] == ["created"] + ["joined"] * players
    assert sum(1 for e in replay["log"] if e["kind"] == "move") == version - players


def test_twenty_concurrent_submissions_of_the_same_move_apply_once(api: Api, redis_url: str) -> None:
    match_id, tokens = new_match(api)
    status = api.get(f"/v1/matches/{match_id}", tokens[0]).json()
    seat = status["to_act"][0]
    move = api.get(f"/v1/matches/{match_id}/legal-moves", tokens[seat]).json()["moves"][0]
    barrier = threading.Barrier(20)

    def submit(_: int) -> int:
        barrier.wait()
        return int(api.post(f"/v1/matches/{match_id}/moves", tokens[seat],
                            json={"move": move, "version": status["version"]}).status_code)

    with ThreadPoolExecutor(20) as pool:
        codes = list(pool.map(submit, range(20)))
    assert codes.count(200) == 1, codes
    assert set(codes) <= {200, 409}
    log = api.get(f"/v1/matches/{match_id}/replay", tokens[seat]).json()["log"]
    assert sum(1 for e in log if e["kind"] == "move") == 1


def test_idempotency_key_returns_the_original_response_and_rejects_another_body(api: Api) -> None:
    match_id, tokens = new_match(api)
    status = api.get(f"/v1/matches/{match_id}", tokens[0]).json()
    seat = status["to_act"][0]
    moves = api.get(f"/v1/matches/{match_id}/legal-moves", tokens[seat]).json()["moves"]
    body = {"move": moves[0], "version": status["version"]}
    first = api.post(f"/v1/matches/{match_id}/moves", tokens[seat], json=body, headers={"Idempotency-Key": "k1"})
    again = api.post(f"/v1/matches/{match_id}/moves", tokens[seat], json=body, headers={"Idempotency-Key": "k1"})
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    other = {"move": moves[-1], "version": status["version"] + 5}
    clash = api.post(f"/v1/matches/{match_id}/moves", tokens[seat], json=other, headers={"Idempotency-Key": "k1"})
    assert clash.status_code == 422 and clash.json()["error"]["code"] == "idempotency_key_reused"
    assert api.get(f"/v1/matches/{match_id}").json()["version"] == first.json()["version"]


def test_a_rematch_with_an_idempotency_key_gives_the_same_seat_and_token_on_a_retry(api: Api) -> None:
    """A rematch hands out its seat's token once; without a key, a retry after a lost answer was 409 seat_taken
    and the seat stayed held by a token nobody had (found probing)."""
    match_id, tokens = new_match(api, "clash", 2)
    assert api.post(f"/v1/matches/{match_id}/resign", tokens[1], json={}).status_code == 200
    first = api.post(f"/v1/matches/{match_id}/rematch", tokens[0], json={}, headers={"Idempotency-Key": "r1"})
    again = api.post(f"/v1/matches/{match_id}/rematch", tokens[0], json={}, headers={"Idempotency-Key": "r1"})
    assert first.status_code == again.status_code == 200, (first.text, again.text)
    assert (again.json()["id"], again.json()["seat"], again.json()["token"]) == \
        (first.json()["id"], 0, first.json()["token"])
    other_seat = api.post(f"/v1/matches/{match_id}/rematch", tokens[1], json={}, headers={"Idempotency-Key": "r1"})
    assert other_seat.status_code == 422 and other_seat.json()["error"]["code"] == "idempotency_key_reused"
    unkeyed = api.post(f"/v1/matches/{match_id}/rematch", tokens[0], json={})
    assert unkeyed.status_code == 409 and unkeyed.json()["error"]["code"] == "seat_taken"
    second = api.post(f"/v1/matches/{match_id}/rematch", tokens[1], json={}, headers={"Idempotency-Key": "r2"})
    assert second.status_code == 200 and second.json()["status"] == "active"
    assert api.get(f"/v1/matches/{first.json()['id']}/legal-moves", first.json()["token"]).status_code == 200


def test_stale_version_is_409_and_changes_nothing(api: Api) -> None:
    match_id, tokens = new_match(api)
    status = api.get(f"/v1/matches/{match_id}", tokens[0]).json()
    seat = status["to_act"][0]
    move = api.get(f"/v1/matches/{match_id}/legal-moves", tokens[seat]).json()["moves"][0]
    done = api.post(f"/v1/matches/{match_id}/moves", tokens[seat], json={"move": move, "version": status["version"]})
    assert done.status_code == 200
    # The seat decided again on the picture before its own move: that decision no longer fits.
    reply = api.post(f"/v1/matches/{match_id}/moves", tokens[seat], json={"move": move, "version": status["version"]})
    assert reply.status_code == 409 and reply.json()["error"]["code"] == "stale_version"
    assert api.get(f"/v1/matches/{match_id}").json()["version"] == status["version"] + 1


def test_a_move_out_of_turn_is_409_and_an_illegal_move_is_422(api: Api) -> None:
    match_id, tokens = new_match(api)
    status = api.get(f"/v1/matches/{match_id}", tokens[0]).json()
    idle = [s for s in range(len(tokens)) if s not in status["to_act"]]
    seat = status["to_act"][0]
    move = api.get(f"/v1/matches/{match_id}/legal-moves", tokens[seat]).json()["moves"][0]
    if idle:
        reply = api.post(f"/v1/matches/{match_id}/moves", tokens[idle[0]],
                         json={"move": move, "version": status["version"]})
        assert reply.status_code == 409, reply.text
    reply = api.post(f"/v1/matches/{match_id}/moves", tokens[seat],
                     json={"move": {"type": "no_such_move"}, "version": status["version"]})
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "malformed_move"
    assert api.get(f"/v1/matches/{match_id}").json()["version"] == status["version"]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{not json", 400, "malformed_json"),
        (b"[1, 2]", 400, "malformed_json"),
        (orjson.dumps({"game": ANY, "players": 2, "colour": "red"}), 400, "unknown_field"),
        (orjson.dumps({"game": ANY, "players": "two"}), 400, "wrong_type"),
        (orjson.dumps({"game": ANY}), 400, "missing_field"),
        (orjson.dumps({"game": "chess", "players": 2}), 400, "unknown_game"),
        (orjson.dumps({"game": ANY, "players": 2, "options": {"nope": True}}), 400, "invalid_options"),
        (orjson.dumps({"game": ANY, "players": 2, "seats": [{"kind": "alien"}]}), 400, "bad_seats"),
        (b'{"game": "' + b"x" * 70_000 + b'"}', 413, "body_too_large"),
    ],
)
def test_bad_create_requests_get_precise_errors(api: Api, body: bytes, status: int, code: str) -> None:
    reply = api.post("/v1/matches", data=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == status, reply.text
    assert reply.json()["error"]["code"] == code
    assert "Traceback" not in reply.text


def test_tokens_are_checked(api: Api) -> None:
    match_id, tokens = new_match(api)
    assert api.get(f"/v1/matches/{match_id}/legal-moves").status_code == 401
    assert api.get(f"/v1/matches/{match_id}/legal-moves", "forged-token").status_code == 401
    assert api.get(f"/v1/matches/{match_id}/legal-moves", headers={"Authorization": "Basic x"}).status_code == 401
    assert api.get("/v1/matches/does-not-exist").status_code == 404
    assert api.get(f"/v1/matches/{match_id}/legal-moves", tokens[0]).status_code == 200


def test_tokens_are_stored_hashed(api: Api, redis_url: str) -> None:
    match_id, tokens = new_match(api)
    meta = redisconn.connect(redis_url).get(keys(match_id)[1])
    assert meta is not None
    for token in tokens:
        assert token.encode() not in meta


def test_long_poll_returns_as_soon_as_a_move_happens(api: Api) -> None:
    match_id, tokens = new_match(api)
    status = api.get(f"/v1/matches/{match_id}", tokens[0]).json()
    seat = status["to_act"][0]
    move = api.get(f"/v1/matches/{match_id}/legal-moves", tokens[seat]).json()["moves"][0]
    watcher = (seat + 1) % len(tokens)
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(api.get, f"/v1/matches/{match_id}/events?after={status['version']}&wait=20",
                             tokens[watcher])
        api.post(f"/v1/matches/{match_id}/moves", tokens[seat], json={"move": move, "version": status["version"]})
        events = future.result(timeout=10).json()
    assert events["version"] == status["version"] + 1
    assert [e["version"] for e in events["events"]] == [status["version"] + 1]
    assert "move" not in events["events"][0]  # another seat's move may hide cards: only the view is sent
    assert events["view"] is not None
    too_long = api.get(f"/v1/matches/{match_id}/events?wait=31")
    assert too_long.status_code == 400


def test_long_poll_until_turn_sleeps_through_other_seats_moves_and_wakes_on_the_callers_turn(api: Api) -> None:
    match_id, tokens = new_match(api, "fierce-women", 3)
    status = api.get(f"/v1/matches/{match_id}", tokens[0]).json()
    start = status["version"]
    watcher = next(s for s in range(3) if s not in status["to_act"])
    rng = random.Random(4)
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(api.get, f"/v1/matches/{match_id}/events?after={start}&wait=20&until=turn"
                                      "&include=legal_moves", tokens[watcher])
        others_moved = 0
        while watcher not in status["to_act"]:
            seat = status["to_act"][0]
            legal = api.get(f"/v1/matches/{match_id}/legal-moves", tokens[seat]).json()["moves"]
            status = api.post(f"/v1/matches/{match_id}/moves", tokens[seat],
                              json={"move": rng.choice(legal), "version": status["version"]}).json()
            others_moved += 1
            if watcher not in status["to_act"]:
                threading.Event().wait(0.3)
                assert not future.done(), "until=turn answered before the caller had anything to decide"
        events = future.result(timeout=10).json()
    assert others_moved >= 2
    assert watcher in events["to_act"] and events["version"] == status["version"]
    assert [e["version"] for e in events["events"]] == list(range(start + 1, status["version"] + 1))
    assert events["legal_moves"]


def test_long_poll_until_turn_answers_at_once_when_it_already_is_the_callers_turn(api: Api) -> None:
    match_id, tokens = new_match(api)
    status = api.get(f"/v1/matches/{match_id}", tokens[0]).json()
    seat = status["to_act"][0]
    events = api.get(f"/v1/matches/{match_id}/events?after={status['version'] - 1}&wait=20&until=turn",
                     tokens[seat]).json()
    assert events["version"] == status["version"] and seat in events["to_act"]


def test_long_poll_until_turn_needs_a_seat_and_until_takes_known_values(api: Api) -> None:
    match_id, tokens = new_match(api)
    spectator = api.get(f"/v1/matches/{match_id}/events?wait=1&until=turn")
    assert spectator.status_code == 401 and spectator.json()["error"]["code"] == "missing_token"
    unknown = api.get(f"/v1/matches/{match_id}/events?wait=1&until=soon", tokens[0])
    assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "bad_parameter"


def play_until_turn_of(api: Api, match_id: str, tokens: list[str], seat: int, rng: random.Random,
                       unanswered: Any = None) -> dict[str, Any]:
    """Other seats play random legal moves until ``seat`` must act (or the match ends); the status after.
    ``unanswered``: a future that must stay pending until then."""
    status = api.get(f"/v1/matches/{match_id}").json()
    while status["status"] == "active" and seat not in status["to_act"]:
        threading.Event().wait(0.2)
        assert unanswered is None or not unanswered.done(), "answered before the mover had anything to decide"
        other = status["to_act"][0]
        legal = api.get(f"/v1/matches/{match_id}/legal-moves", tokens[other]).json()["moves"]
        status = api.post(f"/v1/matches/{match_id}/moves", tokens[other],
                          json={"move": rng.choice(legal), "version": status["version"]}).json()
    return dict(status)


def turn_handing_move(api: Api, match_id: str, token: str) -> tuple[dict[str, Any], int]:
    """Fierce Women at its start: a turn is two moves, and the second hands the turn on. Plays the first
    (the first legal move: the seed fixes the rest) and returns the second with the version it is at."""
    status = api.get(f"/v1/matches/{match_id}?include=legal_moves", token).json()
    status = api.post(f"/v1/matches/{match_id}/moves?include=legal_moves", token,
                      json={"move": status["legal_moves"][0], "version": status["version"]}).json()
    assert status["you"] in status["to_act"]
    return status["legal_moves"][0], status["version"]


def test_a_move_with_wait_answers_at_the_movers_next_turn_with_the_events_in_between(api: Api) -> None:
    match_id, tokens = new_match(api, "fierce-women", 3)
    mover = api.get(f"/v1/matches/{match_id}").json()["to_act"][0]
    move, start = turn_handing_move(api, match_id, tokens[mover])
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(api.post, f"/v1/matches/{match_id}/moves?wait=20&include=legal_moves", tokens[mover],
                             json={"move": move, "version": start})
        while (status := api.get(f"/v1/matches/{match_id}").json())["version"] == start:
            threading.Event().wait(0.05)
        assert mover not in status["to_act"], "the move was meant to hand the turn on"
        after = play_until_turn_of(api, match_id, tokens, mover, random.Random(9), future)
        reply = future.result(timeout=10)
    doc = reply.json()
    assert reply.status_code == 200 and doc["version"] == after["version"] and mover in doc["to_act"]
    assert after["version"] >= start + 3, "both other seats played in between"
    assert [e["version"] for e in doc["events"]] == list(range(start + 2, after["version"] + 1))
    assert all("move" not in e for e in doc["events"]), "another seat's move is hidden while the game runs"
    assert doc["legal_moves"] and doc["view"] is not None and doc["you"] == mover
    log = api.get(f"/v1/matches/{match_id}/replay", tokens[mover]).json()["log"]
    assert [e["version"] for e in log if e["kind"] == "move" and e["seat"] == mover][-1] == start + 1


def test_a_move_with_wait_retried_with_its_key_is_applied_once(api: Api) -> None:
    match_id, tokens = new_match(api, "fierce-women", 2)
    mover = api.get(f"/v1/matches/{match_id}").json()["to_act"][0]
    move, start = turn_handing_move(api, match_id, tokens[mover])
    sent = {"json": {"move": move, "version": start}, "headers": {"Idempotency-Key": "wait-once"}}
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(api.post, f"/v1/matches/{match_id}/moves?wait=20", tokens[mover], **sent)
        while api.get(f"/v1/matches/{match_id}").json()["version"] == start:
            threading.Event().wait(0.05)
        again = pool.submit(api.post, f"/v1/matches/{match_id}/moves?wait=20", tokens[mover], **sent)
        after = play_until_turn_of(api, match_id, tokens, mover, random.Random(3), first)
        answers = [first.result(timeout=10), again.result(timeout=10)]
    assert [r.status_code for r in answers] == [200, 200]
    assert [r.json()["version"] for r in answers] == [after["version"]] * 2 and after["version"] > start + 1
    log = api.get(f"/v1/matches/{match_id}/replay", tokens[mover]).json()["log"]
    assert [e["version"] for e in log if e["kind"] == "move" and e["seat"] == mover][-1] == start + 1
    assert [e["version"] for e in log if e["kind"] == "move"].count(start + 1) == 1


def test_a_move_with_wait_answers_at_once_with_no_events_when_the_caller_must_act_or_it_is_over(api: Api) -> None:
    """Sideboards alone: every move leaves the one seat to act (or ends the match), so nothing is waited for."""
    match_id, tokens = new_match(api, "sideboards", 1)
    status = api.get(f"/v1/matches/{match_id}?include=legal_moves", tokens[0]).json()
    reply = api.post(f"/v1/matches/{match_id}/moves?wait=20", tokens[0],
                     json={"move": status["legal_moves"][0], "version": status["version"]})
    doc = reply.json()
    assert reply.status_code == 200 and doc["events"] == [] and doc["version"] == status["version"] + 1
    assert doc["status"] == "finished" or 0 in doc["to_act"]


def test_a_move_without_wait_has_no_events_and_a_wait_past_the_cap_applies_nothing(api: Api) -> None:
    match_id, tokens = new_match(api, "clash", 2)
    status = api.get(f"/v1/matches/{match_id}?include=legal_moves", tokens[0]).json()
    seat = status["to_act"][0]
    move = api.get(f"/v1/matches/{match_id}/legal-moves", tokens[seat]).json()["moves"][0]
    too_long = api.post(f"/v1/matches/{match_id}/moves?wait=100000", tokens[seat],
                        json={"move": move, "version": status["version"]})
    assert too_long.status_code == 400 and too_long.json()["error"]["code"] == "bad_parameter"
    assert api.get(f"/v1/matches/{match_id}").json()["version"] == status["version"]
    plain_move = api.post(f"/v1/matches/{match_id}/moves", tokens[seat],
                          json={"move": move, "version": status["version"]}).json()
    assert "events" not in plain_move and plain_move["version"] == status["version"] + 1


def test_an_applied_move_and_its_idempotent_response_commit_together(api: Api, redis_url: str) -> None:
    """The response of an ``Idempotency-Key`` move is written by the compare-and-set itself: a retry after
    a crash finds it, and an attempt that lost the race leaves none behind."""
    match_id, _ = new_match(api)
    store = MatchStore(redisconn.connect(redis_url), 60, 60)
    match = store.load(match_id)
    assert match is not None
    entry = {"kind": "joined", "seat": 0, "to_act": match.meta.to_act}
    won = store.update(match, match.meta, None, entry, remember=lambda m: ("k-won", {"version": m.version}))
    assert store.idempotent_get(match_id, "k-won") == {"version": won.version} == {"version": match.version + 1}
    with pytest.raises(StaleVersion):
        store.update(match, match.meta, None, entry, remember=lambda m: ("k-lost", {"version": m.version}))
    assert store.idempotent_get(match_id, "k-lost") is None


def test_seed_is_revealed_only_after_the_end(api: Api) -> None:
    match_id, _ = new_match(api)
    assert api.get(f"/v1/matches/{match_id}/replay").json()["seed"] is None


def test_two_gateways_serve_one_match_interleaved(api: Api, redis_url: str, rules: RulesProcess) -> None:
    second = start_gateway(redis_url, rules.port)
    try:
        other = Api(second.url)
        match_id, tokens = new_match(api)
        rng = random.Random(1)
        moves = 0
        status = api.get(f"/v1/matches/{match_id}").json()
        while status["status"] == "active" and moves < 40:
            client = (api, other)[moves % 2]
            seat = rng.choice(status["to_act"])
            legal = client.get(f"/v1/matches/{match_id}/legal-moves", tokens[seat]).json()["moves"]
            reply = client.post(f"/v1/matches/{match_id}/moves", tokens[seat],
                                json={"move": rng.choice(legal), "version": status["version"]})
            assert reply.status_code == 200, reply.text
            status = reply.json()
            moves += 1
        log = other.get(f"/v1/matches/{match_id}/replay", tokens[0]).json()["log"]
        assert [e["version"] for e in log] == list(range(len(log)))
        assert sum(1 for e in log if e["kind"] == "move") == moves
    finally:
        second.stop()


def test_dead_rules_service_gives_503_and_the_match_continues(api: Api, rules: RulesProcess) -> None:
    match_id, tokens = new_match(api)
    status = api.get(f"/v1/matches/{match_id}", tokens[0]).json()
    seat = status["to_act"][0]
    move = api.get(f"/v1/matches/{match_id}/legal-moves", tokens[seat]).json()["moves"][0]
    rules.stop()
    try:
        reply = api.post(f"/v1/matches/{match_id}/moves", tokens[seat],
                         json={"move": move, "version": status["version"]})
        assert reply.status_code == 503 and reply.json()["error"]["code"] == "rules_unavailable"
        assert api.get("/readyz").status_code == 503
    finally:
        rules.start()
    reply = api.post(f"/v1/matches/{match_id}/moves", tokens[seat], json={"move": move, "version": status["version"]})
    assert reply.status_code == 200, reply.text


def test_restarting_the_gateway_loses_nothing(redis_url: str, rules: RulesProcess) -> None:
    first = start_gateway(redis_url, rules.port)
    match_id, tokens = new_match(Api(first.url))
    before = Api(first.url).get(f"/v1/matches/{match_id}", tokens[0]).json()
    first.stop()
    second = start_gateway(redis_url, rules.port)
    try:
        after = Api(second.url).get(f"/v1/matches/{match_id}", tokens[0]).json()
        assert after == before
    finally:
        second.stop()


def test_rate_limit_gives_429_with_retry_after(own_redis_url: str, rules: RulesProcess) -> None:
    limited = start_gateway(own_redis_url, rules.port, rate_limit_per_minute=3)
    try:
        api = Api(limited.url)
        codes = [api.get("/v1/games").status_code for _ in range(5)]
        assert codes[:3] == [200, 200, 200] and codes[3:] == [429, 429]
        reply = api.get("/v1/games")
        assert int(reply.headers["Retry-After"]) > 0
    finally:
        limited.stop()


def test_matchmaking_groups_humans_as_they_arrive(api: Api) -> None:
    game = GAMES[ANY]
    players = max(game.min_players, 2)
    tickets = [api.post("/v1/matchmaking", json={"game": ANY, "players": players, "options": {}}).json()
               for _ in range(players)]
    assert all(t["status"] == "waiting" for t in tickets[:-1]) and tickets[-1]["status"] == "matched"
    polled = [api.get(f"/v1/matchmaking/{t['ticket']}").json() for t in tickets]
    assert {p["match_id"] for p in polled} == {tickets[-1]["match_id"]}
    assert sorted(p["seat"] for p in polled) == list(range(players))
    match = api.get(f"/v1/matches/{polled[0]['match_id']}", polled[0]["token"]).json()
    assert match["status"] == "active" and match["you"] == polled[0]["seat"]


def test_matchmaking_long_poll_answers_when_the_last_player_arrives(api: Api) -> None:
    players = max(GAMES[ANY].min_players, 2)
    first = api.post("/v1/matchmaking", json={"game": ANY, "players": players}).json()
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(api.get, f"/v1/matchmaking/{first['ticket']}?wait=20")
        threading.Event().wait(0.3)
        assert not waiting.done(), "the long-poll answered while the ticket was still waiting"
        for _ in range(players - 1):
            last = api.post("/v1/matchmaking", json={"game": ANY, "players": players}).json()
        polled = waiting.result(timeout=10).json()
    assert polled["status"] == "matched" and polled["match_id"] == last["match_id"] and polled["token"]
    assert api.get(f"/v1/matchmaking/{first['ticket']}?wait=31").status_code == 400


def test_matchmaking_seats_bots_once_the_fill_time_is_due_and_wakes_the_long_poll(
    redis_url: str, rules: RulesProcess
) -> None:
    filling = start_gateway(redis_url, rules.port, bot_fill_s=1)
    try:
        api = Api(filling.url)
        players = max(GAMES[ANY].min_players, 2)
        ticket = api.post("/v1/matchmaking", json={"game": ANY, "players": players}).json()
        if ticket["status"] == "matched":  # someone else's ticket was waiting in this queue
            ticket = api.post("/v1/matchmaking", json={"game": ANY, "players": players}).json()
        polled = api.get(f"/v1/matchmaking/{ticket['ticket']}?wait=20").json()
        assert polled["status"] == "matched"
        match = api.get(f"/v1/matches/{polled['match_id']}", polled["token"]).json()
        kinds = [seat["kind"] for seat in match["seats"]]
        assert kinds[polled["seat"]] == "human" and kinds.count("bot") >= 1
    finally:
        filling.stop()


def test_matchmaking_ticket_can_be_cancelled(api: Api) -> None:
    ticket = api.post("/v1/matchmaking", json={"game": ANY, "players": GAMES[ANY].max_players}).json()
    assert ticket["status"] == "waiting"
    assert api.call("DELETE", f"/v1/matchmaking/{ticket['ticket']}").json()["status"] == "cancelled"
    assert api.call("DELETE", f"/v1/matchmaking/{ticket['ticket']}").status_code == 409
    assert api.get("/v1/matchmaking/nope").status_code == 404
    bad = api.post("/v1/matchmaking", json={"game": ANY, "players": 99})
    assert bad.status_code == 400


def test_a_ticket_that_sends_a_default_option_and_one_that_leaves_it_out_are_matched(api: Api) -> None:
    """Found probing: options were compared as sent, so `{"match": "best_of_3"}` (CLASH's default) and `{}` asked
    for the same game from two pools that never met (likewise a points series' default length here). A ticket's
    options now carry the game's defaults."""
    defaults = {o["name"]: o["default"] for o in api.get("/v1/games/clash").json()["options"]}
    points = {"match": "points"}  # a pool no other test of this Redis queues in
    first = api.post("/v1/matchmaking", json={"game": "clash", "players": 2, "options": points}).json()
    second = api.post("/v1/matchmaking", json={"game": "clash", "players": 2,
                                               "options": {**points, "games": defaults["games"]}}).json()
    assert first["options"] == second["options"] == {**defaults, **points}
    assert second["status"] == "matched", second
    assert api.get(f"/v1/matchmaking/{first['ticket']}").json()["match_id"] == second["match_id"]


def test_matchmaking_refuses_options_the_game_does_not_take_when_the_ticket_is_made(api: Api) -> None:
    players = max(GAMES[ANY].min_players, 2)
    reply = api.post("/v1/matchmaking", json={"game": ANY, "players": players, "options": {"no_such_option": 1}})
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "invalid_options"


def test_a_ticket_costs_the_rules_service_nothing_until_a_group_is_seated(own_redis_url: str) -> None:
    """The catalogue is read once (not per ticket), and a ticket without options needs no trial ``NewGame``."""
    metrics = RulesMetrics()
    server, port = serve("127.0.0.1:0", metrics=metrics)
    gateway = start_gateway(own_redis_url, port)
    try:
        api = Api(gateway.url)
        for game in GAMES.values():  # one waiting ticket per game, each the only one in its queue
            ticket = api.post("/v1/matchmaking", json={"game": game.id, "players": game.max_players}).json()
            assert ticket["status"] == "waiting"
            api.call("DELETE", f"/v1/matchmaking/{ticket['ticket']}")

        def calls(method: str) -> float:
            return sum(s.value for m in metrics.registry.collect() if m.name == "meeple_rules_rpc_seconds"
                       for s in m.samples if s.name.endswith("_count") and s.labels["method"] == method)

        assert (calls("ListGames"), calls("NewGame")) == (1, 0)
    finally:
        gateway.stop()
        shutdown(server, grace=0.2)


def test_a_group_the_rules_service_could_not_seat_waits_again_and_is_seated_when_the_request_is_retried(
        own_redis_url: str) -> None:
    """The last ticket of a group arrives while the rules service is down: that request fails (503), nobody's
    ticket is lost from the queue, and the same request sent again once the service is back seats the group. A
    request without an Idempotency-Key that fails so takes its own ticket away: nobody could ask for it again."""
    rules = RulesProcess(free_port())
    rules.start()
    gateway = start_gateway(own_redis_url, rules.port)
    try:
        api, body = Api(gateway.url), {"game": "sideboards", "players": 3}
        waiting = [api.post("/v1/matchmaking", json=body).json() for _ in range(2)]
        assert [t["status"] for t in waiting] == ["waiting", "waiting"]
        rules.stop()
        unkeyed = api.post("/v1/matchmaking", json=body)  # its ticket would be a seat nobody ever takes
        assert unkeyed.status_code == 503 and unkeyed.json()["error"]["code"] == "rules_unavailable"
        key = {"Idempotency-Key": "the-third-of-three"}
        failed = api.post("/v1/matchmaking", json=body, headers=key)
        assert failed.status_code == 503 and failed.json()["error"]["code"] == "rules_unavailable"
        rules.start()
        last = api.post("/v1/matchmaking", json=body, headers=key).json()
        assert last["status"] == "matched" and last["token"]
        polled = [api.get(f"/v1/matchmaking/{t['ticket']}").json() for t in waiting]
        assert [(p["status"], p["match_id"]) for p in polled] == [("matched", last["match_id"])] * 2
    finally:
        gateway.stop()
        rules.stop()


def test_reads_fall_back_to_the_rules_service_when_the_cache_is_gone(api: Api, redis_url: str) -> None:
    match_id, tokens = new_match(api)
    redisconn.connect(redis_url).delete(keys(match_id)[5])
    status = api.get(f"/v1/matches/{match_id}", tokens[0]).json()
    game = GAMES[ANY]
    state = game.decode(stored_state(redis_url, match_id))
    assert status["view"] == game.view(state, 0)
    seat = status["to_act"][0]
    legal = api.get(f"/v1/matches/{match_id}/legal-moves", tokens[seat]).json()["moves"]
    assert legal == game.legal_moves(state, seat)


@pytest.mark.parametrize("gid", list(GAMES))
def test_include_legal_moves_saves_a_request_per_turn(api: Api, redis_url: str, gid: str) -> None:
    """A client can play a whole game without ever calling /legal-moves: every response it gets carries them."""
    game = GAMES[gid]
    players = max(game.min_players, 2)
    match_id, tokens = new_match(api, gid, players)
    status = api.get(f"/v1/matches/{match_id}?include=legal_moves", tokens[0]).json()
    assert api.get(f"/v1/matches/{match_id}?include=legal_moves").json()["legal_moves"] is None  # spectator
    known: dict[int, tuple[int, list[Any]]] = {}
    for seat in range(players):
        doc = api.get(f"/v1/matches/{match_id}?include=legal_moves", tokens[seat]).json()
        known[seat] = (doc["version"], doc["legal_moves"])
    rng = random.Random(4)
    moves = 0
    while status["status"] == "active" and moves < 60:
        seat = rng.choice(status["to_act"])
        version, legal = known[seat]
        state = game.decode(stored_state(redis_url, match_id))
        assert legal == game.legal_moves(state, seat)  # what the client holds is still right
        reply = api.post(f"/v1/matches/{match_id}/moves?include=legal_moves", tokens[seat],
                         json={"move": rng.choice(legal), "version": version})
        assert reply.status_code == 200, reply.text
        status = reply.json()
        moves += 1
        state = game.decode(stored_state(redis_url, match_id))
        assert status["legal_moves"] == game.legal_moves(state, seat)
        known[seat] = (status["version"], status["legal_moves"])
        for other in range(players):  # the others learn theirs from the event they were waiting for
            if other != seat:
                events = api.get(f"/v1/matches/{match_id}/events?after={known[other][0]}&include=legal_moves",
                                 tokens[other]).json()
                assert events["legal_moves"] == game.legal_moves(state, other)
                known[other] = (events["version"], events["legal_moves"])
    assert api.get(f"/v1/matches/{match_id}/events?include=everything").status_code == 400
