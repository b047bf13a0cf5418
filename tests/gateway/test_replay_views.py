"""``GET /v1/matches/{id}/replay?include=views``: the board at every version of a finished match, rebuilt by the
rules service, as the caller's seat (or a spectator) saw it then, and nothing more."""

from __future__ import annotations

import orjson

from tests.games.fixtures import leaked_secrets
from tests.replaying import engine_states

from .conftest import Api


def finished_match(api: Api, game: str = "fierce-women") -> tuple[str, list[str]]:
    created = api.post("/v1/matches", json={"game": game, "players": 2, "join": True, "seed": 21}).json()
    tokens = [created["token"], api.post(f"/v1/matches/{created['id']}/join", json={}).json()["token"]]
    for _ in range(2000):
        status = api.get(f"/v1/matches/{created['id']}").json()
        if status["status"] == "finished":
            return created["id"], tokens
        seat = status["to_act"][0]
        moves = api.get(f"/v1/matches/{created['id']}/legal-moves", tokens[seat]).json()["moves"]
        reply = api.post(f"/v1/matches/{created['id']}/moves", tokens[seat],
                         json={"move": moves[0], "version": status["version"]})
        assert reply.status_code == 200, reply.text
    raise AssertionError("the match did not finish")


def test_replay_views_are_each_versions_view_for_the_seat_or_a_spectator_and_hide_the_rest(api: Api) -> None:
    match_id, tokens = finished_match(api)
    for token, seat in ((None, None), (tokens[1], 1)):
        answer = api.get(f"/v1/matches/{match_id}/replay?include=views", token)
        assert answer.status_code == 200, answer.text
        replay = answer.json()
        game, states = engine_states(replay)
        log = replay["log"]
        assert [e["version"] for e in log] == list(range(replay["version"] + 1))
        for entry in log:  # exactly the engine's view of that seat at that version
            expected = orjson.loads(orjson.dumps(game.view(states[entry["version"]], seat)))
            assert entry["view"] == expected, entry["version"]
            if entry["version"] < replay["version"]:  # while the match ran: none of the others' secrets
                assert leaked_secrets(game, states[entry["version"]], seat, entry["view"]) == set()
        assert len({repr(e["view"]) for e in log}) > 2  # the board changes from step to step
        assert log[-1]["view"] == api.get(f"/v1/matches/{match_id}", token).json()["view"]  # ends where it ended
    plain = api.get(f"/v1/matches/{match_id}/replay").json()
    assert all("view" not in e for e in plain["log"])


def test_replay_views_of_a_running_match_are_refused_and_a_bad_include_is_a_400(api: Api) -> None:
    created = api.post("/v1/matches", json={"game": "clash", "players": 2, "join": True}).json()
    running = api.get(f"/v1/matches/{created['id']}/replay?include=views", created["token"])
    assert running.status_code == 409 and running.json()["error"]["code"] == "match_not_finished"
    bad = api.get(f"/v1/matches/{created['id']}/replay?include=everything")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_parameter"
