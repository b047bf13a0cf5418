"""Human-vs-human matches of every game played one seat's move at a time, through the app (Flask's test client) or
over real HTTP (``spy.py``'s client with the same methods): the traffic the move path's profiles measure
(``profile_move.py``, ``spy.py``)."""

from __future__ import annotations

import random
from typing import Any

from flask.testing import FlaskClient

from services.rules.games import GAMES


class Driver:
    """Plays human-vs-human matches of every game through the app, one seat's move at a time."""

    def __init__(self, client: FlaskClient, seed: int = 1) -> None:
        self.client = client
        self.rng = random.Random(seed)
        self.matches: list[dict[str, Any]] = []
        self.games = [g for g in GAMES.values()]

    def new_match(self) -> dict[str, Any]:
        game = self.games[len(self.matches) % len(self.games)]
        players = max(game.min_players, 2)
        created = self.client.post("/v1/matches", json={"game": game.id, "players": players, "join": True,
                                                         "seed": self.rng.randrange(2**32)}).get_json()
        tokens = [created["token"]]
        for _ in range(players - 1):
            tokens.append(self.client.post(f"/v1/matches/{created['id']}/join", json={}).get_json()["token"])
        return {"id": created["id"], "tokens": tokens, "status": self.status(created["id"], tokens[0])}

    def status(self, match_id: str, token: str) -> dict[str, Any]:
        doc: dict[str, Any] = self.client.get(f"/v1/matches/{match_id}",
                                              headers={"Authorization": f"Bearer {token}"}).get_json()
        return doc

    def next_move(self, slot: int) -> tuple[str, str, dict[str, Any]]:
        """(path, token, body) of the next move in match ``slot`` (a new match once one ends)."""
        while slot >= len(self.matches):
            self.matches.append(self.new_match())
        match = self.matches[slot]
        if match["status"]["status"] != "active":
            match = self.matches[slot] = self.new_match()
        seat = self.rng.choice(match["status"]["to_act"])
        token = match["tokens"][seat]
        legal = self.client.get(f"/v1/matches/{match['id']}/legal-moves",
                                headers={"Authorization": f"Bearer {token}"}).get_json()
        body = {"move": self.rng.choice(legal["moves"]), "version": legal["version"]}
        return f"/v1/matches/{match['id']}/moves", token, body

    def record(self, slot: int, reply: dict[str, Any]) -> None:
        self.matches[slot]["status"] = reply


def post_move(client: FlaskClient, path: str, token: str, body: dict[str, Any], key: str) -> dict[str, Any]:
    """The measured request (the profile looks for this function's frames)."""
    response = client.post(path, json=body, headers={"Authorization": f"Bearer {token}", "Idempotency-Key": key})
    if response.status_code != 200:
        raise RuntimeError(f"move failed: {response.status_code} {response.get_data(as_text=True)}")
    doc: dict[str, Any] = response.get_json()
    return doc
