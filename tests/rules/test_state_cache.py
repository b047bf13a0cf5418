"""The rules service's state cache (``services.rules.server.StateCache``): a replica takes the state it sealed for
its last reply instead of decoding those bytes again. It must never change an answer: every reply is byte for
byte the reply of a replica without the cache, whatever the game, the move or the order of the requests."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import grpc
import orjson
import pytest

from services.pb import rules_pb2, rules_pb2_grpc
from services.rules.games import GAMES
from services.rules.seal import Sealer, new_key_spec
from services.rules.server import RulesMetrics, StateCache, serve, shutdown

KEY = new_key_spec("cache")


class Replica:
    def __init__(self, cache_size: int) -> None:
        self.metrics = RulesMetrics()
        self.server, port = serve("127.0.0.1:0", metrics=self.metrics, sealer=Sealer.from_spec(KEY),
                                  cache_size=cache_size)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = rules_pb2_grpc.RulesStub(self.channel)

    def decodes(self, gid: str, source: str) -> float:
        return float(self.metrics.decodes.labels(gid, source)._value.get())

    def close(self) -> None:
        self.channel.close()
        shutdown(self.server, grace=0.5)


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[Replica, Replica]]:
    cached, plain = Replica(1024), Replica(0)
    yield cached, plain
    cached.close()
    plain.close()


def _apply(stub: Any, gid: str, state: bytes, seat: int, move: Any, quiet: list[int]) -> Any:
    return stub.ApplyMove(rules_pb2.ApplyMoveRequest(game=gid, state=state, seat=seat, describe=True, derive=True,
                                                     move_json=orjson.dumps(move).decode(), quiet_seats=quiet))


@pytest.mark.parametrize("gid", list(GAMES))
def test_a_cached_state_answers_every_move_byte_for_byte_as_a_decoded_one(pair: tuple[Replica, Replica],
                                                                         gid: str) -> None:
    cached, plain = pair
    game, rng = GAMES[gid], random.Random(7)
    moves = 0
    for seed in range(3):
        players = rng.randint(max(game.min_players, 2), game.max_players)
        request = rules_pb2.NewGameRequest(game=gid, players=players, seed=seed, derive=True)
        reply = cached.stub.NewGame(request)
        assert reply == plain.stub.NewGame(request)
        hits = cached.decodes(gid, "cached")
        while not reply.finished:
            seat = rng.choice(list(reply.to_act))
            listed = {m.seat: m.moves_json for m in reply.legal}  # a quiet seat's moves are not listed: ask
            legal = listed[seat] if seat in listed else plain.stub.LegalMoves(
                rules_pb2.LegalMovesRequest(game=gid, state=reply.state, seat=seat)).moves_json
            move = rng.choice(orjson.loads(legal))
            quiet = [s for s in range(reply.seats) if s != seat and rng.random() < 0.3]
            reply, expected = (_apply(r.stub, gid, reply.state, seat, move, quiet) for r in (cached, plain))
            assert reply.SerializeToString() == expected.SerializeToString()
            moves += 1
        assert cached.decodes(gid, "cached") - hits > 0  # the cache was used, not bypassed
    assert plain.decodes(gid, "cached") == 0 and moves > 20


def test_bytes_sent_again_or_after_a_refused_move_are_decoded_and_answer_the_same(
        pair: tuple[Replica, Replica]) -> None:
    """An entry is taken once: a retried move, a second move on the same bytes or a move after a refused one
    (the engine may have changed the taken state before refusing) decodes the bytes again."""
    cached, _ = pair
    gid = "clash"
    reply = cached.stub.NewGame(rules_pb2.NewGameRequest(game=gid, players=2, seed=3, derive=True))
    seat = reply.to_act[0]
    move = orjson.loads(next(m.moves_json for m in reply.legal if m.seat == seat))[0]
    with pytest.raises(grpc.RpcError) as refused:
        _apply(cached.stub, gid, reply.state, seat, {"type": "place", "tile": "nope"}, [])
    assert refused.value.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION)
    sealed = cached.decodes(gid, "sealed")
    first = _apply(cached.stub, gid, reply.state, seat, move, [])
    again = _apply(cached.stub, gid, reply.state, seat, move, [])
    assert first.SerializeToString() == again.SerializeToString()
    assert cached.decodes(gid, "sealed") == sealed + 2


def test_the_cache_keeps_the_newest_states_up_to_its_size() -> None:
    cache = StateCache(2)
    for n in range(3):
        cache.put("g", bytes([n]), n, {-1: {"n": n}})
    assert cache.take("g", b"\x00") is None  # the oldest went first
    assert cache.take("g", b"\x02") == (2, {-1: {"n": 2}}) and cache.take("g", b"\x02") is None  # taken once
    assert cache.take("other", b"\x01") is None and cache.take("g", b"\x01") == (1, {-1: {"n": 1}})
    off = StateCache(0)
    off.put("g", b"x", 1, {})
    assert off.take("g", b"x") is None
