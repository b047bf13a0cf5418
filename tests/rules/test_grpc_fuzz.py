"""Hypothesis against a real rules gRPC server: whatever bytes and JSON arrive, the answer is OK,
INVALID_ARGUMENT or FAILED_PRECONDITION (never UNKNOWN or INTERNAL), and the server keeps serving.

States are random bytes, valid states (sealed and unsealed) truncated, bit-flipped, with one JSON field
replaced, sent as another game's, or oversized; moves are random JSON (or not JSON at all). Bounded:
a few hundred examples in all.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import grpc
import orjson
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.pb import rules_pb2, rules_pb2_grpc
from services.rules.games import GAMES
from services.rules.seal import Sealer, new_key_spec, strip
from services.rules.server import MAX_MESSAGE_BYTES, RulesMetrics, serve, shutdown

ALLOWED = {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION}
GIDS = list(GAMES)
FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])


class Target:
    def __init__(self) -> None:
        self.server, port = serve("127.0.0.1:0", metrics=RulesMetrics(), sealer=Sealer.from_spec(new_key_spec()))
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}",
                                             options=[("grpc.max_send_message_length", 2 * MAX_MESSAGE_BYTES)])
        self.stub = rules_pb2_grpc.RulesStub(self.channel)
        self.health = health_pb2_grpc.HealthStub(self.channel)
        #: per game: sealed and unsealed states reached by random legal play, with the seats to act
        self.states: dict[str, list[tuple[bytes, list[int]]]] = {}
        for gid in GIDS:
            game = GAMES[gid]
            rng = random.Random(1)
            reply = self.stub.NewGame(rules_pb2.NewGameRequest(game=gid, players=max(game.min_players, 2), seed=2,
                                                               derive=True))
            found = []
            for i in range(30):
                if reply.finished:
                    break
                if i % 6 == 0:
                    found.append((bytes(reply.state), list(reply.to_act)))
                    found.append((game.encode(game.decode(strip(reply.state))), list(reply.to_act)))
                seat = rng.choice(list(reply.to_act))
                move = rng.choice(orjson.loads(next(m.moves_json for m in reply.legal if m.seat == seat)))
                reply = self.stub.ApplyMove(rules_pb2.ApplyMoveRequest(
                    game=gid, state=reply.state, seat=seat, move_json=orjson.dumps(move).decode(), derive=True))
            self.states[gid] = found

    def close(self) -> None:
        self.channel.close()
        shutdown(self.server, grace=0.5)


@pytest.fixture(scope="module")
def target() -> Iterator[Target]:
    t = Target()
    yield t
    # the server survived everything: still SERVING and still playing
    assert t.health.Check(health_pb2.HealthCheckRequest(), timeout=5).status == health_pb2.HealthCheckResponse.SERVING
    t.stub.NewGame(rules_pb2.NewGameRequest(game="clash", players=2, seed=1))
    t.close()


def call(target: Target, rpc: str, gid: str, state: bytes, seat: int, move_json: str) -> grpc.StatusCode:
    stub = target.stub
    try:
        if rpc == "ApplyMove":
            stub.ApplyMove(rules_pb2.ApplyMoveRequest(game=gid, state=state, seat=seat, move_json=move_json,
                                                      derive=seat % 2 == 0), timeout=30)
        elif rpc == "LegalMoves":
            stub.LegalMoves(rules_pb2.LegalMovesRequest(game=gid, state=state, seat=seat), timeout=30)
        elif rpc == "GetView":
            stub.GetView(rules_pb2.GetViewRequest(game=gid, state=state, seat=seat), timeout=30)
        else:
            stub.GetResult(rules_pb2.GetResultRequest(game=gid, state=state), timeout=30)
    except grpc.RpcError as err:
        return err.code()  # type: ignore[no-any-return]
    return grpc.StatusCode.OK


def checked(target: Target, rpc: str, gid: str, state: bytes, seat: int, move_json: str) -> None:
    code = call(target, rpc, gid, state, seat, move_json)
    assert code in ALLOWED, f"{rpc} answered {code} for {state[:120]!r}... seat {seat} move {move_json[:120]!r}"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**63, max_value=2**63 - 1) | st.floats(allow_nan=False)
    | st.text(max_size=12) | st.sampled_from(["new", "A1", "W01", "S01", "G1", "M0", "left", "right", "C01"]),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=20,
)
move_texts = st.one_of(
    json_values.map(lambda v: orjson.dumps(v).decode()),
    st.fixed_dictionaries({"type": st.sampled_from(["draw", "place", "play_action", "discard", "remove_column",
                                                    "remove_cards", "rearrange", "start", "exchange", "pick",
                                                    "choose_first", "play", "use_power", "decline", "keep",
                                                    "pass", "take"])},
                          optional={"card": json_values, "column": json_values, "pile": json_values,
                                    "cards": json_values, "tile": json_values, "field": json_values,
                                    "supports": json_values, "effect": json_values, "god": json_values,
                                    "target": json_values, "side": json_values, "orientation": json_values})
    .map(lambda v: orjson.dumps(v).decode()),
    st.text(max_size=30),
    st.integers(1, 300).map(lambda depth: "[" * depth + "]" * depth),
    st.sampled_from(['{"type": "draw", "pile": 1' + "0" * 30 + "}", '{"type": "place", "card": "W01", "column": 1e999}',
                     '{"type": "pick", "tile": "\\ud800"}', '{"type": "draw", "pile": -0}']),
)
seats = st.one_of(st.integers(-3, 8), st.integers(-2**31, 2**31 - 1))
rpcs = st.sampled_from(["ApplyMove", "LegalMoves", "GetView", "GetResult"])


@FUZZ
@given(data=st.data(), rpc=rpcs, gid=st.sampled_from(GIDS), seat=seats, move=move_texts)
def test_random_and_damaged_states(target: Target, data: Any, rpc: str, gid: str, seat: int, move: str) -> None:
    base, _ = data.draw(st.sampled_from(target.states[gid]))
    kind = data.draw(st.sampled_from(["random", "truncated", "bitflip", "cross_game", "unknown_game"]))
    if kind == "random":
        state = data.draw(st.binary(max_size=300))
    elif kind == "truncated":
        state = base[:data.draw(st.integers(0, len(base)))]
    elif kind == "bitflip":
        flipped = bytearray(base)
        for _ in range(data.draw(st.integers(1, 4))):
            flipped[data.draw(st.integers(0, len(flipped) - 1))] ^= 1 << data.draw(st.integers(0, 7))
        state = bytes(flipped)
    elif kind == "cross_game":
        other = data.draw(st.sampled_from([g for g in GIDS if g != gid]))
        state = data.draw(st.sampled_from(target.states[other]))[0]
    else:
        state, gid = base, data.draw(st.text(max_size=12))
    checked(target, rpc, gid, state, seat, move)


@FUZZ
@given(data=st.data(), rpc=rpcs, gid=st.sampled_from(GIDS), move=move_texts, value=json_values)
def test_one_field_of_an_unsealed_state_replaced(target: Target, data: Any, rpc: str, gid: str, move: str,
                                                 value: Any) -> None:
    """Unsealed bytes are validated in full: a field replaced by any JSON must not crash a later call."""
    base, to_act = data.draw(st.sampled_from([s for s in target.states[gid] if s[0][:1] == b"{"]))
    doc = orjson.loads(base)
    key = data.draw(st.sampled_from(sorted(doc)))
    holder: Any = doc
    # walk down a little so nested fields get hit too
    for _ in range(data.draw(st.integers(0, 3))):
        child = holder[key]
        if isinstance(child, dict) and child:
            holder, key = child, data.draw(st.sampled_from(sorted(child)))
        elif isinstance(child, list) and child:
            holder, key = child, data.draw(st.integers(0, len(child) - 1))
        else:
            break
    holder[key] = value
    seat = to_act[0] if to_act else 0
    if rpc == "ApplyMove" and data.draw(st.booleans()):
        legal = GAMES[gid].legal_moves(GAMES[gid].decode(base), seat) if to_act else []
        if legal:
            move = orjson.dumps(data.draw(st.sampled_from(legal))).decode()
    checked(target, rpc, gid, orjson.dumps(doc), seat, move)


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(gid=st.sampled_from(GIDS), size=st.sampled_from([MAX_MESSAGE_BYTES // 2, MAX_MESSAGE_BYTES - 4096]),
       shape=st.sampled_from(["list", "string", "nested"]))
def test_oversized_states(target: Target, gid: str, size: int, shape: str) -> None:
    """States up to the message limit are refused cleanly (bigger messages gRPC itself refuses)."""
    if shape == "list":
        state = b'{"game": "' + gid.encode() + b'", "v": 1, "log": [' + b"0," * (size // 2 - 40) + b"0]}"
    elif shape == "string":
        state = b'{"game": "' + gid.encode() + b'", "v": 1, "x": "' + b"a" * (size - 60) + b'"}'
    else:
        state = b"[" * 5000 + b"]" * 5000
    checked(target, "GetView", gid, state, 0, "")
    checked(target, "ApplyMove", gid, state, 0, '{"type": "draw", "pile": 0}')


def test_a_message_over_the_limit_is_resource_exhausted_not_a_crash(target: Target) -> None:
    code = call(target, "GetView", "clash", b"x" * (MAX_MESSAGE_BYTES + 1024), 0, "")
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
