"""A match's record (``match:{id}:meta``) is typed (``services/core/meta.py``) and its JSON is the one earlier
versions wrote, key for key: a record either version wrote loads in the other (a rolling restart runs both)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from services import redisconn
from services.core.match import clocks
from services.core.meta import Clock, MatchMeta, Outcome, Seat, SeatClock, decode_meta, encode_meta
from services.core.record.store import keys

from .conftest import Api
from .test_backends import as_key, new_key

GAME = "clash"

#: Records as the dict-based store wrote them (every seat kind, nulls, zeros and empty lists included).
OLD_RECORDS = [
    {"game": "clash", "players": 2, "options": {}, "seed": 0,
     "seats": [{"kind": "human", "token_hash": None}, {"kind": "human", "token_hash": None, "player": "ann"}],
     "seat_count": 2, "sides": [[0], [1]], "to_act": [0], "status": "waiting", "result": None, "outcome": None,
     "clock": {"mode": "none", "on_timeout": "bot", "seats": [{"bank_s": None, "since": None, "turn": None}] * 2},
     "takeover_level": "normal", "owner": "ip:127.0.0.1", "id": "m1", "created_at": 1764648000.5},
    {"game": "fierce-women", "players": 3, "options": {"variant": "x"}, "seed": 8765432123456789012,
     "seats": [{"kind": "human", "token_hash": "ab" * 32, "acted": True, "control": "bot", "forfeited": True},
               {"kind": "bot", "level": "hard", "token_hash": None},
               {"kind": "human", "token_hash": None, "control": "bot", "left": True, "acted": True},
               {"kind": "human", "token_hash": None, "player": "bo", "kept": True},
               {"kind": "human", "token_hash": None, "reserved": "0123456789abcdef0123456789abcdef"},
               {"kind": "human", "token_hash": "cd" * 32, "control": "human", "player": "cy"}],
     "seat_count": 6, "sides": [[0, 2, 4], [1, 3, 5]], "to_act": [], "status": "finished",
     "result": {"scores": [1, 2], "text": "seat 1 wins"},
     "outcome": {"ended_by": "forfeit", "winners": [1, 3, 5], "forfeited": [0], "scores": None, "ratings": None},
     "clock": {"mode": "fischer", "on_timeout": "forfeit", "base_s": 60.0, "increment_s": 2.0,
               "seats": [{"bank_s": 0.0, "since": None, "turn": None}] * 6},
     "takeover_level": "easy", "rated": False, "tag": "tournament:t1", "owner": "tenant:acme", "tenant": "acme",
     "id": "m2", "created_at": 1764648000.5, "human_at": 1764648100.25, "rematch": "m3"},
]


#: Outcomes as the dict-based core wrote them: the game's (with rating changes), an abort's, the idle check's.
OLD_OUTCOMES = [
    {"ended_by": "game", "winners": [0], "forfeited": [], "scores": [3.0, 1.5], "ratings": [
        {"seat": 0, "player": "ann", "before": {"rating": 0.0, "mu": 25.0, "sigma": 8.3333, "matches": 0},
         "after": {"rating": 1.2, "mu": 27.6, "sigma": 8.1, "matches": 1}, "change": 1.2}]},
    {"ended_by": "aborted", "reason": "round 2's deadline", "winners": [], "forfeited": [1], "scores": None,
     "ratings": None},
    {"ended_by": "abandoned", "winners": [], "forfeited": [], "scores": None, "ratings": None},
]
OLD_RECORDS += [{**OLD_RECORDS[1], "outcome": outcome} for outcome in OLD_OUTCOMES]


@pytest.mark.parametrize("old", OLD_RECORDS, ids=["waiting", "every-key", "game", "aborted", "abandoned"])
def test_an_old_record_loads_and_is_written_back_key_for_key(old: dict[str, Any]) -> None:
    meta = decode_meta(orjson.dumps(old))
    assert orjson.loads(encode_meta(meta)) == old  # same keys, nulls and all, same values
    assert list(orjson.loads(encode_meta(meta))) == list(old)  # in the same order
    if old["outcome"] is not None:
        assert isinstance(meta.outcome, Outcome) and meta.outcome.doc() == old["outcome"]


#: Seat clocks as the dict-based core wrote them (``clocks.initial`` / ``advance``): every mode, running and stopped.
OLD_CLOCKS = [
    {"mode": "per_move", "on_timeout": "bot", "seconds": 60.0,
     "seats": [{"bank_s": None, "since": 1764648000.5, "turn": 3}, {"bank_s": None, "since": None, "turn": None}]},
    {"mode": "fischer", "on_timeout": "forfeit", "base_s": 300.0, "increment_s": 0.0,
     "seats": [{"bank_s": 296.25, "since": None, "turn": None}, {"bank_s": 300.0, "since": 1764648010.0, "turn": 7}]},
    {"mode": "correspondence", "on_timeout": "bot", "hours": 24.0,
     "seats": [{"bank_s": None, "since": 1764648000.0, "turn": 0}] * 3},
    {"mode": "none", "on_timeout": "bot", "seats": [{"bank_s": None, "since": None, "turn": None}]},
]


@pytest.mark.parametrize("old", OLD_CLOCKS, ids=["per_move", "fischer", "correspondence", "none"])
def test_an_old_clock_loads_typed_and_is_written_back_key_for_key(old: dict[str, Any]) -> None:
    record = {**OLD_RECORDS[0], "status": "active", "clock": old}
    meta = decode_meta(orjson.dumps(record))
    assert isinstance(meta.clock, Clock) and all(isinstance(s, SeatClock) for s in meta.clock.seats)
    assert meta.clock.mode == old["mode"] and meta.clock.on_timeout == old["on_timeout"]
    assert [s.turn for s in meta.clock.seats] == [s["turn"] for s in old["seats"]]
    written = orjson.loads(encode_meta(meta))
    assert written == record and list(written["clock"]) == list(old)  # same keys, same order
    assert [list(s) for s in written["clock"]["seats"]] == [["bank_s", "since", "turn"]] * len(old["seats"])
    shown = clocks.public(meta.clock, 1764648001.0)  # what a status shows: the settings as stored, then the seats
    assert list(shown) == list(old) and {k: v for k, v in shown.items() if k != "seats"} == {
        k: v for k, v in old.items() if k != "seats"}
    assert [list(s) for s in shown["seats"]] == [["seat", "running", "remaining_s", "deadline"]] * len(old["seats"])


def test_keys_written_only_when_set_stay_out_while_unset() -> None:
    meta = MatchMeta(game=GAME, seats=[Seat(kind="human"), Seat(kind="bot", level="easy")], to_act=[],
                     status="waiting", seed=0, rated=True)
    written = orjson.loads(encode_meta(meta))
    assert set(written) == {"game", "players", "options", "seed", "seats", "seat_count", "sides", "to_act", "status",
                            "result", "outcome", "clock", "takeover_level"}
    assert written["seed"] == 0 and written["result"] is None and written["options"] == {}
    assert written["seats"] == [{"kind": "human", "token_hash": None},
                                {"kind": "bot", "token_hash": None, "level": "easy"}]
    assert "rated" in orjson.loads(encode_meta(MatchMeta(game=GAME, seats=[], to_act=[], status="waiting",
                                                         rated=False)))


#: What the dict-based store wrote for a new match of the API (``new_match``, then ``MatchStore.create``).
CREATED = {"game", "players", "options", "seed", "seats", "seat_count", "sides", "to_act", "status", "result",
           "outcome", "clock", "takeover_level", "owner", "id", "created_at"}


def _stored(redis_url: str, match_id: str) -> dict[str, Any]:
    raw = redisconn.connect(redis_url).get(keys(match_id)[1])
    assert raw is not None
    doc: dict[str, Any] = orjson.loads(raw)
    return doc


def test_the_records_a_match_leaves_have_the_keys_they_always_had(api: Api, redis_url: str) -> None:
    """Created, joined, resigned (finished by a forfeit), rematched: the keys of each record, seats included."""
    made = api.post("/v1/matches", json={"game": GAME, "players": 2, "seed": 0})
    assert made.status_code == 201, made.text
    match_id = made.json()["id"]
    doc = _stored(redis_url, match_id)
    assert set(doc) == CREATED and doc["seed"] == 0 and doc["result"] is None and doc["outcome"] is None
    assert doc["seats"] == [{"kind": "human", "token_hash": None}] * 2
    tokens = []
    for seat in (0, 1):
        joined = api.post(f"/v1/matches/{match_id}/join", json={"seat": seat})
        assert joined.status_code == 200, joined.text
        tokens.append(joined.json()["token"])
    doc = _stored(redis_url, match_id)
    assert set(doc) == CREATED | {"human_at"} and doc["status"] == "active"
    assert [set(s) for s in doc["seats"]] == [{"kind", "token_hash", "acted"}] * 2
    assert api.post(f"/v1/matches/{match_id}/resign", tokens[0]).status_code == 200
    doc = _stored(redis_url, match_id)
    assert doc["status"] == "finished" and set(doc["outcome"]) == {"ended_by", "winners", "forfeited", "scores",
                                                                   "ratings"}
    assert set(doc["seats"][0]) == {"kind", "token_hash", "acted", "control", "forfeited"}
    again = api.post(f"/v1/matches/{match_id}/rematch", tokens[1])
    assert again.status_code in (200, 201), again.text
    # a finished match also records when it finished (since issue 51: its chat stays open a while after)
    assert set(_stored(redis_url, match_id)) == CREATED | {"human_at", "rematch", "finished_at"}
    nxt = _stored(redis_url, again.json()["id"])
    assert set(nxt) == CREATED | {"human_at"}
    assert [set(s) for s in nxt["seats"]] == [{"kind", "token_hash"}, {"kind", "token_hash", "acted"}]


@pytest.mark.parametrize("clock", [{"mode": "per_move", "seconds": 30, "on_timeout": "forfeit"},
                                   {"mode": "fischer", "base_s": 120, "increment_s": 5}], ids=["per_move", "fischer"])
def test_a_clocked_matchs_record_keeps_the_clock_keys_it_always_had(api: Api, redis_url: str,
                                                                    clock: dict[str, Any]) -> None:
    """A clocked match, created and then running: its stored clock and the one its status shows."""
    made = api.post("/v1/matches", json={"game": GAME, "players": 2, "seed": 0, "clock": clock})
    assert made.status_code == 201, made.text
    match_id = made.json()["id"]
    settings = {"mode": clock["mode"], "on_timeout": clock.get("on_timeout", "bot"),
                **{k: float(v) for k, v in clock.items() if k not in ("mode", "on_timeout")}}
    bank = settings.get("base_s")
    doc = _stored(redis_url, match_id)
    assert doc["clock"] == {**settings, "seats": [{"bank_s": bank, "since": None, "turn": None}] * 2}
    assert list(doc["clock"]) == [*settings, "seats"]
    for seat in (0, 1):
        joined = api.post(f"/v1/matches/{match_id}/join", json={"seat": seat})
        assert joined.status_code == 200, joined.text
    doc = _stored(redis_url, match_id)
    assert list(doc["clock"]) == [*settings, "seats"]
    assert {k: v for k, v in doc["clock"].items() if k != "seats"} == settings
    running = [s for s in doc["clock"]["seats"] if s["since"] is not None]
    assert running and all(isinstance(s["since"], float) and isinstance(s["turn"], int) for s in running)
    assert [list(s) for s in doc["clock"]["seats"]] == [["bank_s", "since", "turn"]] * 2
    shown = joined.json()["clock"]
    assert list(shown) == [*settings, "seats"] and {k: v for k, v in shown.items() if k != "seats"} == settings
    assert [list(s) for s in shown["seats"]] == [["seat", "running", "remaining_s", "deadline"]] * 2
    assert [s["running"] for s in shown["seats"]] == [s["since"] is not None for s in doc["clock"]["seats"]]


def test_a_tenants_match_with_a_bot_and_a_named_player(api: Api, redis_url: str) -> None:
    key = new_key(redis_url, "metarec")["key"]
    made = api.post("/v1/matches", headers=as_key(key), json={
        "game": GAME, "players": 2, "seats": [{"kind": "human", "player": "ann"}, {"kind": "bot", "level": "easy"}]})
    assert made.status_code == 201, made.text
    doc = _stored(redis_url, made.json()["id"])
    assert set(doc) == CREATED | {"tenant"} and doc["takeover_level"] == "normal"
    assert doc["seats"] == [{"kind": "human", "token_hash": None, "player": "ann"},
                            {"kind": "bot", "level": "easy", "token_hash": None}]
