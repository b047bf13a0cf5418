"""Issue 33 through the API: ``GET /v1/games/{game}`` (components, cacheable) and the words of every log entry in
the events and the replay, each reader getting only its own viewer's words."""

from __future__ import annotations

from services.rules.games import GAMES, words

from .conftest import Api


def test_a_games_components_are_served_with_an_etag_and_a_304_for_a_cache_that_has_them(api: Api) -> None:
    for game in GAMES:
        first = api.get(f"/v1/games/{game}")
        assert first.status_code == 200, first.text
        assert first.json()["components"] == words.components(game)
        assert first.json()["id"] == game and first.json()["options"] == GAMES[game].catalogue()["options"]
        assert "public" in first.headers["Cache-Control"] and "max-age=" in first.headers["Cache-Control"]
        again = api.get(f"/v1/games/{game}", headers={"If-None-Match": first.headers["ETag"]})
        assert again.status_code == 304 and again.content == b""
    missing = api.get("/v1/games/chess")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "game_not_found"


def test_every_game_carries_its_rules_for_people_goal_turn_components_scoring_and_an_example(api: Api) -> None:
    """Issue 50: third-party clients get the same rules page the play page shows."""
    for game in GAMES:
        rules = api.get(f"/v1/games/{game}").json()["rules"]
        assert 20 < len(rules["goal"]) < 200 and "\n" not in rules["goal"], rules["goal"]
        titles = [s["title"] for s in rules["sections"]]
        assert titles == ["How to win", "A turn", "Components", "Scoring", "Example"], titles
        assert all(s["paragraphs"] and all(len(p) > 40 for p in s["paragraphs"]) for s in rules["sections"])
        assert "_" not in str(rules)  # words for people, no internal identifiers


def test_every_event_and_replay_entry_has_words_for_its_reader_only(api: Api) -> None:
    """Sideboards (3 people): a seat's own submission is named to it, and to the others only as "chose"."""
    created = api.post("/v1/matches", json={"game": "sideboards", "players": 3, "join": True, "seed": 9}).json()
    match_id = created["id"]
    tokens = [created["token"]] + [api.post(f"/v1/matches/{match_id}/join", json={}).json()["token"]
                                   for _ in range(2)]
    status = api.get(f"/v1/matches/{match_id}", tokens[0]).json()
    move = api.get(f"/v1/matches/{match_id}/legal-moves", tokens[0]).json()["moves"][0]
    reply = api.post(f"/v1/matches/{match_id}/moves", tokens[0], json={"move": move, "version": status["version"]})
    assert reply.status_code == 200, reply.text
    mine = api.get(f"/v1/matches/{match_id}/events?after=0", tokens[0]).json()["events"]
    theirs = api.get(f"/v1/matches/{match_id}/events?after=0", tokens[1]).json()["events"]
    watcher = api.get(f"/v1/matches/{match_id}/events?after=0").json()["events"]
    for events in (mine, theirs, watcher):
        assert all(e["text"] and isinstance(e["summary"], dict) for e in events)
        assert [e["kind"] for e in events] == ["joined", "joined", "joined", "move"]
    assert mine[-1]["text"].startswith("You chose") and move["cards"][0] in mine[-1]["text"]
    for other in (theirs[-1], watcher[-1]):
        assert other["text"] == "Seat 0 chose their starting cards." and move["cards"][0] not in str(other)
    assert "move" not in theirs[-1] and "words" not in theirs[-1]  # the others' words are never sent
    assert mine[0]["text"] == "You joined the match." and theirs[0]["text"] == "Seat 0 joined the match."
    replay = api.get(f"/v1/matches/{match_id}/replay", tokens[2]).json()
    assert replay["log"][0]["text"] == "The match was created."
    assert replay["log"][-1]["text"] == "Seat 0 chose their starting cards."
