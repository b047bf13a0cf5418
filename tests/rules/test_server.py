"""The gRPC rules service, tested through a real server on a free port and a real channel."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import orjson
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from services.pb import rules_pb2, rules_pb2_grpc
from services.rules.games import GAMES, words
from services.rules.server import ERROR_CODE_KEY, RulesMetrics, serve, shutdown

ROOT = Path(__file__).resolve().parents[2]
#: Tests that only need some game use the first registered one.
ANY = next(iter(GAMES))
PLAYERS = max(GAMES[ANY].min_players, 2)


@pytest.fixture(scope="module")
def rules() -> Iterator[tuple[rules_pb2_grpc.RulesStub, grpc.Channel, RulesMetrics]]:
    metrics = RulesMetrics()
    server, port = serve("127.0.0.1:0", metrics=metrics)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    grpc.channel_ready_future(channel).result(timeout=10)
    yield rules_pb2_grpc.RulesStub(channel), channel, metrics
    channel.close()
    shutdown(server, grace=1)


def error_code(err: grpc.RpcError) -> str | None:
    return dict(err.trailing_metadata() or ()).get(ERROR_CODE_KEY)  # type: ignore[attr-defined]


def test_list_games_is_the_registry(rules: Any) -> None:
    stub, _, _ = rules
    games = stub.ListGames(rules_pb2.ListGamesRequest()).games
    assert [g.id for g in games] == list(GAMES)
    for info in games:
        assert info.min_players <= info.max_players
        assert isinstance(orjson.loads(info.options_json), list)


@pytest.mark.parametrize("gid", list(GAMES))
def test_complete_game_through_the_service(rules: Any, gid: str) -> None:
    stub, _, metrics = rules
    game = GAMES[gid]
    players = max(game.min_players, 2)
    rng = random.Random(7)
    reply = stub.NewGame(rules_pb2.NewGameRequest(game=gid, players=players, seed=42, view_seats=[-1, 0]))
    assert [v.seat for v in reply.views] == [-1, 0]
    moves = 0
    while not reply.finished:
        seat = rng.choice(list(reply.to_act))
        request = rules_pb2.LegalMovesRequest(game=gid, state=reply.state, seat=seat)
        legal = orjson.loads(stub.LegalMoves(request).moves_json)
        move = rng.choice(legal)
        reply = stub.ApplyMove(rules_pb2.ApplyMoveRequest(game=gid, state=reply.state, seat=seat,
                                                          move_json=orjson.dumps(move).decode(), view_seats=[seat]))
        assert orjson.loads(reply.views[0].view_json) == game.view(game.decode(reply.state), seat)
        moves += 1
    assert list(reply.to_act) == []
    final = game.decode(reply.state)  # the engine's result, explained (issue 33)
    assert orjson.loads(reply.result_json) == {**game.result(final), "explanation": words.explain(game, final)}
    result = stub.GetResult(rules_pb2.GetResultRequest(game=gid, state=reply.state))
    assert result.finished and list(result.winners)
    assert list(result.scores) == game.outcome(game.decode(reply.state)).scores
    spectator = stub.GetView(rules_pb2.GetViewRequest(game=gid, state=reply.state, seat=-1))
    assert orjson.loads(spectator.view_json) == game.view(game.decode(reply.state), None)
    assert metrics.moves.labels(gid)._value.get() >= moves


def test_illegal_move_is_failed_precondition_with_a_reason(rules: Any) -> None:
    stub, _, metrics = rules
    gid = next(iter(GAMES))
    game = GAMES[gid]
    reply = stub.NewGame(rules_pb2.NewGameRequest(game=gid, players=max(game.min_players, 2), seed=1))
    state = game.decode(reply.state)
    idle = next(s for s in range(game.seat_count(state)) if s not in game.to_act(state)) if len(
        game.to_act(state)) < game.seat_count(state) else None
    if idle is not None:
        move = game.legal_moves(state, game.to_act(state)[0])[0]
        with pytest.raises(grpc.RpcError) as err:
            stub.ApplyMove(rules_pb2.ApplyMoveRequest(game=gid, state=reply.state, seat=idle,
                                                      move_json=orjson.dumps(move).decode()))
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert error_code(err.value) == "not_your_turn"
        assert len(err.value.details()) > 10
    with pytest.raises(grpc.RpcError) as err:
        stub.ApplyMove(rules_pb2.ApplyMoveRequest(game=gid, state=reply.state, seat=game.to_act(state)[0],
                                                  move_json='{"type": "fly"}'))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_code(err.value) == "malformed_move"
    assert metrics.illegal.labels(gid, "malformed_move")._value.get() >= 1


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        (rules_pb2.ApplyMoveRequest(game=ANY, state=b"garbage", seat=0, move_json="{}"), "invalid_state"),
        (rules_pb2.GetViewRequest(game=ANY, state=b"\x00\xff" * 50, seat=0), "invalid_state"),
        (rules_pb2.LegalMovesRequest(game="chess", state=b"{}", seat=0), "unknown_game"),
        (rules_pb2.NewGameRequest(game=ANY, players=GAMES[ANY].max_players + 1, seed=1), "invalid_options"),
        (rules_pb2.NewGameRequest(game=ANY, players=PLAYERS, seed=1, options_json="{"), "malformed_request"),
        (rules_pb2.NewGameRequest(game=ANY, players=PLAYERS, seed=1, options_json='{"colour": 1}'),
         "invalid_options"),
    ],
)
def test_garbage_input_is_invalid_argument_and_the_server_keeps_serving(rules: Any, request_: Any, code: str) -> None:
    stub, _, _ = rules
    method = {rules_pb2.ApplyMoveRequest: stub.ApplyMove, rules_pb2.GetViewRequest: stub.GetView,
              rules_pb2.LegalMovesRequest: stub.LegalMoves, rules_pb2.NewGameRequest: stub.NewGame}[type(request_)]
    with pytest.raises(grpc.RpcError) as err:
        method(request_)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_code(err.value) == code
    assert stub.ListGames(rules_pb2.ListGamesRequest()).games


def test_bad_seat_is_invalid_argument(rules: Any) -> None:
    stub, _, _ = rules
    reply = stub.NewGame(rules_pb2.NewGameRequest(game=ANY, players=PLAYERS, seed=1))
    with pytest.raises(grpc.RpcError) as err:
        stub.LegalMoves(rules_pb2.LegalMovesRequest(game=ANY, state=reply.state, seat=7))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_code(err.value) == "no_such_seat"


def test_health_checking_and_reflection_are_on(rules: Any) -> None:
    _, channel, _ = rules
    health = health_pb2_grpc.HealthStub(channel)
    for service in ("", "meeple.v1.Rules"):
        status = health.Check(health_pb2.HealthCheckRequest(service=service)).status
        assert status == health_pb2.HealthCheckResponse.SERVING
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    responses = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
    names = {s.name for r in responses for s in r.list_services_response.service}
    assert "meeple.v1.Rules" in names


def test_metrics_endpoint_serves_rpc_latency() -> None:
    import urllib.request

    server, port = serve("127.0.0.1:0", metrics_port=0)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            rules_pb2_grpc.RulesStub(channel).NewGame(rules_pb2.NewGameRequest(game=ANY, players=PLAYERS, seed=1))
        body = urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=5).read().decode()
        assert f'meeple_rules_rpc_seconds_bucket{{code="OK",game="{ANY}",le="0.001",method="NewGame"}}' in body
    finally:
        shutdown(server, grace=0.5)


def test_graceful_shutdown_reports_not_serving_then_stops() -> None:
    server, port = serve("127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    health = health_pb2_grpc.HealthStub(channel)
    assert health.Check(health_pb2.HealthCheckRequest()).status == health_pb2.HealthCheckResponse.SERVING
    shutdown(server, grace=0.5)
    with pytest.raises(grpc.RpcError) as err:
        health.Check(health_pb2.HealthCheckRequest(), timeout=1)
    assert err.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    channel.close()


def test_generated_grpc_code_is_not_stale() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_proto.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif("sideboards" not in GAMES, reason="needs a game with a structured option")
def test_structured_options_travel_as_json_and_bad_ones_are_invalid_argument(rules: Any) -> None:
    stub, _, _ = rules
    reply = stub.NewGame(rules_pb2.NewGameRequest(game="sideboards", players=1, seed=3, view_seats=[0],
                                                  options_json='{"goals": [2, 9, 19]}'))
    assert orjson.loads(reply.views[0].view_json)["goals"] == {"colour": 2, "handle": 9, "row": 19}
    with pytest.raises(grpc.RpcError) as err:
        stub.NewGame(rules_pb2.NewGameRequest(game="sideboards", players=2, seed=3,
                                              options_json='{"goals": [9, 9, 19]}'))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and error_code(err.value) == "invalid_options"
    assert "9 is not a colour goal" in err.value.details()


@pytest.mark.parametrize("gid", list(GAMES))
def test_quiet_seats_get_no_view_legal_moves_or_words_and_the_rest_is_unchanged(rules: Any, gid: str) -> None:
    """ApplyMove's ``quiet_seats`` (a bot's own seats, whose token no one holds) leaves out only what no one would
    read: their views, their legal moves and their descriptions; the state and every other seat's documents are
    the same bytes as without it."""
    stub, _, _ = rules
    game = GAMES[gid]
    players = max(game.min_players, 2)
    rng = random.Random(3)
    reply = stub.NewGame(rules_pb2.NewGameRequest(game=gid, players=players, seed=7, derive=True))
    quiet = list(range(1, reply.seats))  # seat 0 is the person; the others are the bot's
    compared = 0
    for _ in range(30):
        if reply.finished:
            break
        seat = rng.choice(list(reply.to_act))
        move_json = orjson.dumps(rng.choice(orjson.loads(next(m.moves_json for m in reply.legal
                                                               if m.seat == seat)))).decode()

        def request(quiet_seats: list[int], state: bytes = reply.state, seat: int = seat,
                    move_json: str = move_json) -> Any:
            return stub.ApplyMove(rules_pb2.ApplyMoveRequest(game=gid, state=state, seat=seat, move_json=move_json,
                                                             derive=True, describe=True, quiet_seats=quiet_seats))

        full, lean = request([]), request(quiet)
        assert {v.seat for v in lean.views} == {-1, 0}
        assert {m.seat for m in lean.legal} == {0} & set(full.to_act)
        assert {d.seat for d in lean.descriptions} == {-1, 0}
        assert {v.seat: v.view_json for v in lean.views} == {
            v.seat: v.view_json for v in full.views if v.seat in (-1, 0)}
        assert {d.seat: d.description_json for d in lean.descriptions} == {
            d.seat: d.description_json for d in full.descriptions if d.seat in (-1, 0)}
        assert [m.moves_json for m in lean.legal] == [m.moves_json for m in full.legal if m.seat == 0]
        assert (lean.state, list(lean.to_act), lean.finished) == (full.state, list(full.to_act), full.finished)
        compared += 1
        reply = full
    assert compared > 0
