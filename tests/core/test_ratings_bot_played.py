"""The rating rule for seats a bot played (docs/api.md "Ratings"): a bot's result never counts as a human's win
over a human, or as a loss to one. Real Redis (one server and a cluster) holds the players' stored ratings and the
bot ladder; ``ratings.settle`` is what the commit pipeline runs on the update that finishes a match."""

from __future__ import annotations

from typing import Any

import msgspec
import orjson

from services.core.competition import ratings
from services.core.meta import MatchMeta

GAME = "clash"


def _store(client: Any, tenant: str, player: str, mu: float, sigma: float, matches: int = 5) -> None:
    client.hset(ratings.player_key(tenant, player), GAME, orjson.dumps({"mu": mu, "sigma": sigma, "matches": matches}))


def _meta(tenant: str, seat1: dict[str, Any], winners: list[int], **extra: Any) -> tuple[MatchMeta, MatchMeta]:
    """A 2-seat match of ``tenant``: seat 0 is ann playing her own seat, seat 1 is ``seat1``; before and after the
    update that finishes it with ``winners``."""
    seats = [{"kind": "human", "player": "ann", "token_hash": "x", "acted": True}, seat1]
    before = {"tenant": tenant, "game": GAME, "status": "active", "seats": seats, "sides": [[0], [1]],
              "takeover_level": "normal", "to_act": [0], **extra}
    out = [1] if seat1.get("forfeited") else []
    outcome = {"ended_by": "game", "winners": winners, "forfeited": out, "scores": [1.0, 2.0] if winners == [1]
               else [2.0, 1.0], "ratings": None}
    return (msgspec.convert(before, MatchMeta),
            msgspec.convert({**before, "status": "finished", "to_act": [], "outcome": outcome}, MatchMeta))


def _expected(mine: dict[str, Any], theirs: dict[str, Any], i_won: bool) -> Any:
    """What openskill gives the first of two sides with these ratings and this result."""
    teams = [[ratings.MODEL.rating(mu=mine["mu"], sigma=mine["sigma"])],
             [ratings.MODEL.rating(mu=theirs["mu"], sigma=theirs["sigma"])]]
    return ratings.MODEL.rate(teams, ranks=[1.0, 2.0] if i_won else [2.0, 1.0])[0][0]


def _changes(meta: MatchMeta) -> dict[str, dict[str, Any]]:
    assert meta.outcome is not None
    return {c["player"]: c for c in meta.outcome.ratings or []}


def test_a_bot_that_won_a_taken_over_seat_is_a_loss_to_the_bot_and_its_absent_owner_still_loses(
        client: Any, tenant: str) -> None:
    _store(client, tenant, "ann", 25.0, 5.0)
    _store(client, tenant, "bob", 35.0, 4.0)  # far stronger than the bot that played his seat
    bot = ratings.bot_ratings(client, GAME)["normal"]
    before, after = _meta(tenant, {"kind": "human", "player": "bob", "token_hash": "y", "control": "bot",
                                   "acted": True}, winners=[1])
    changes = _changes(ratings.settle(client, before, after))
    ann = _expected({"mu": 25.0, "sigma": 5.0}, bot, i_won=False)  # lost to the bot, at the bot's strength
    assert changes["ann"]["after"]["mu"] == round(ann.mu, 4)
    assert changes["bob"]["change"] < 0  # his seat won, but he was not there: a loss, never a win over ann
    bob = _expected({"mu": 35.0, "sigma": 4.0}, {"mu": 25.0, "sigma": 5.0}, i_won=False)
    assert changes["bob"]["after"]["mu"] == round(bob.mu, 4)


def test_a_player_who_never_came_is_not_rated_and_the_other_is_rated_against_the_bot(client: Any, tenant: str) -> None:
    _store(client, tenant, "ann", 25.0, 5.0)
    _store(client, tenant, "bob", 35.0, 4.0)
    bot = ratings.bot_ratings(client, GAME)["normal"]
    before, after = _meta(tenant, {"kind": "human", "player": "bob", "token_hash": None, "kept": True,
                                   "control": "bot"}, winners=[0])
    changes = _changes(ratings.settle(client, before, after))
    assert set(changes) == {"ann"}
    assert changes["ann"]["after"]["mu"] == round(_expected({"mu": 25.0, "sigma": 5.0}, bot, i_won=True).mu, 4)


def test_a_resignation_is_the_humans_own_loss_rated_against_their_own_rating(client: Any, tenant: str) -> None:
    _store(client, tenant, "ann", 25.0, 5.0)
    _store(client, tenant, "bob", 35.0, 4.0)
    before, after = _meta(tenant, {"kind": "human", "player": "bob", "token_hash": "y", "control": "bot",
                                   "forfeited": True, "acted": True}, winners=[0])
    changes = _changes(ratings.settle(client, before, after))
    ann = _expected({"mu": 25.0, "sigma": 5.0}, {"mu": 35.0, "sigma": 4.0}, i_won=True)
    assert changes["ann"]["after"]["mu"] == round(ann.mu, 4) and changes["bob"]["change"] < 0


def test_a_reclaimed_seat_is_its_humans_result(client: Any, tenant: str) -> None:
    _store(client, tenant, "ann", 25.0, 5.0)
    _store(client, tenant, "bob", 35.0, 4.0)
    before, after = _meta(tenant, {"kind": "human", "player": "bob", "token_hash": "y", "control": "human",
                                   "acted": True}, winners=[1])
    changes = _changes(ratings.settle(client, before, after))
    bob = _expected({"mu": 35.0, "sigma": 4.0}, {"mu": 25.0, "sigma": 5.0}, i_won=True)
    assert changes["bob"]["after"]["mu"] == round(bob.mu, 4) and changes["bob"]["change"] > 0


def test_an_unrated_match_changes_no_rating(client: Any, tenant: str) -> None:
    before, after = _meta(tenant, {"kind": "human", "player": "bob", "token_hash": "y", "acted": True},
                          winners=[0], rated=False)
    settled = ratings.settle(client, before, after).outcome
    assert settled is not None and settled.ratings is None
    before, after = _meta(tenant, {"kind": "human", "player": "bob", "token_hash": "y", "acted": True}, winners=[0])
    assert set(_changes(ratings.settle(client, before, after))) == {"ann", "bob"}  # rated by default
