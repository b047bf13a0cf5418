"""The core's client of the rules service: deadlines, retries on UNAVAILABLE, its errors as domain errors.

The service is stateless, so every call can be retried safely on any replica.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
import orjson

from services.core.errors import DomainError, Kind
from services.pb import rules_pb2, rules_pb2_grpc

ERROR_CODE_KEY = "meeple-error-code"
ERROR_KIND_KEY = "meeple-error-kind"
SPECTATOR = -1
T = TypeVar("T")


def grpc_target(addr: str) -> str:
    """``host:port[,host:port...]`` becomes an ``ipv4:`` target so calls round-robin over replicas."""
    if ":///" in addr or "," not in addr:
        return addr
    return "ipv4:" + addr


@dataclass
class Applied:
    state: bytes
    to_act: list[int]
    finished: bool
    seats: int
    result: Any
    #: seat (-1 = spectator) -> the view as JSON text, passed on to clients and Redis without re-encoding
    views: dict[int, str]
    sides: list[list[int]]
    scores: list[float]
    winners: list[int]
    #: seat to act -> its legal moves as JSON text (with ``derive``)
    legal: dict[int, str]
    #: viewer (-1 = spectator) -> the move in words, ``{"text", "summary"}`` (ApplyMove with ``describe``), as
    #: JSON text (``orjson.Fragment``) that goes into the move's log entry without being decoded and encoded again
    descriptions: dict[int, Any] = field(default_factory=dict)

    def derived(self) -> dict[str, str]:
        """The documents a gateway caches beside the state (see ``MatchStore``): views and legal moves."""
        return {**{f"view:{seat}": doc for seat, doc in self.views.items()},
                **{f"legal:{seat}": doc for seat, doc in self.legal.items()}}


RECONNECT_CAP_MS = 300
#: How long the matchmaker trusts the catalogue it read (its games and their player counts change only when the
#: rules service is redeployed): one ``ListGames`` round trip saved on nearly every ticket.
CATALOGUE_TTL_S = 30.0


class RulesClient:
    def __init__(self, addr: str, timeout_s: float = 5.0, retries: int = 3) -> None:
        self.timeout_s, self.retries = timeout_s, retries
        #: game id -> its components document: it changes only with the rules service's code (asked once)
        self._components: dict[str, dict[str, Any]] = {}
        self._catalogue: tuple[float, dict[str, dict[str, Any]]] | None = None
        self.channel = grpc.insecure_channel(grpc_target(addr), options=[
            ("grpc.lb_policy_name", "round_robin"),
            ("grpc.max_receive_message_length", 4 * 1024 * 1024),
            # A restarted rules service is found again within RECONNECT_CAP_MS, well inside the retry
            # window below, so the first request after it is back already succeeds.
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", RECONNECT_CAP_MS),
        ])
        self.stub = rules_pb2_grpc.RulesStub(self.channel)

    def close(self) -> None:
        self.channel.close()

    def _call(self, method: Callable[..., T], request: Any) -> T:
        delay = 0.1
        for attempt in range(self.retries + 1):
            try:
                return method(request, timeout=self.timeout_s)
            except grpc.RpcError as err:
                status = err.code()  # type: ignore[attr-defined]
                if status == grpc.StatusCode.UNAVAILABLE and attempt < self.retries:
                    time.sleep(delay)
                    delay *= 3
                    continue
                raise self._translate(err) from None
        raise AssertionError("unreachable")

    @staticmethod
    def _translate(err: grpc.RpcError) -> DomainError:
        status = err.code()  # type: ignore[attr-defined]
        details = err.details() or status.name  # type: ignore[attr-defined]
        pairs: Any = err.trailing_metadata() or ()  # type: ignore[attr-defined]
        metadata = {str(key): str(value) for key, value in pairs}
        code, kind = metadata.get(ERROR_CODE_KEY, ""), metadata.get(ERROR_KIND_KEY, "")
        if status in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return DomainError(Kind.UNAVAILABLE, "rules_unavailable", "the rules service is unavailable; try again "
                               "shortly", retry_after=1)
        if status == grpc.StatusCode.FAILED_PRECONDITION:
            return DomainError(Kind.CONFLICT if kind == "conflict" else Kind.ILLEGAL, code or "illegal_move", details)
        if status == grpc.StatusCode.INVALID_ARGUMENT:
            if kind == "malformed" or code in {"invalid_options", "unknown_game", "malformed_request"}:
                return DomainError(Kind.MALFORMED, code, details)
            return DomainError(Kind.INTERNAL, "corrupt_state", "stored match state was rejected by the rules service")
        return DomainError(Kind.DEPENDENCY_FAILED, "rules_error", "the rules service failed")

    def list_games(self) -> list[dict[str, Any]]:
        reply = self._call(self.stub.ListGames, rules_pb2.ListGamesRequest())
        return [{"id": g.id, "title": g.title, "min_players": g.min_players, "max_players": g.max_players,
                 "simultaneous": g.simultaneous, "options": orjson.loads(g.options_json)} for g in reply.games]

    def catalogue(self) -> dict[str, dict[str, Any]]:
        """The games by id, as :meth:`list_games` read them at most ``CATALOGUE_TTL_S`` ago."""
        cached = self._catalogue
        if cached is None or time.monotonic() - cached[0] > CATALOGUE_TTL_S:
            cached = self._catalogue = (time.monotonic(), {g["id"]: g for g in self.list_games()})
        return cached[1]

    def new_game(self, game: str, players: int, seed: int, options: dict[str, Any], derive: bool = True,
                 view_seats: list[int] | None = None) -> Applied:
        reply = self._call(self.stub.NewGame, rules_pb2.NewGameRequest(
            game=game, players=players, seed=seed, options_json=orjson.dumps(options).decode(), derive=derive,
            view_seats=view_seats or []))
        return _applied(reply)

    def apply_move(self, game: str, state: bytes, seat: int, move: Any, view_seats: list[int] | None = None,
                   derive: bool = True, describe: bool = False, quiet_seats: list[int] | None = None) -> Applied:
        """``quiet_seats``: seats no one reads anything of (a bot's own): no view, legal moves or words for them."""
        reply = self._call(self.stub.ApplyMove, rules_pb2.ApplyMoveRequest(
            game=game, state=state, seat=seat, move_json=orjson.dumps(move).decode(), view_seats=view_seats or [],
            derive=derive, describe=describe, quiet_seats=quiet_seats or []))
        return _applied(reply)

    def game_components(self, game: str) -> dict[str, Any]:
        """``GET /v1/games/{game}``: the catalogue entry plus ``components`` (GetGame), asked once per game."""
        found = self._components.get(game)
        if found is None:
            reply = self._call(self.stub.GetGame, rules_pb2.GetGameRequest(game=game))
            g = reply.info
            found = self._components[game] = {
                "id": g.id, "title": g.title, "min_players": g.min_players, "max_players": g.max_players,
                "simultaneous": g.simultaneous, "options": orjson.loads(g.options_json),
                "components": orjson.loads(reply.components_json)}
        return found

    def legal_moves(self, game: str, state: bytes, seat: int) -> list[Any]:
        reply = self._call(self.stub.LegalMoves, rules_pb2.LegalMovesRequest(game=game, state=state, seat=seat))
        moves: list[Any] = orjson.loads(reply.moves_json)
        return moves

    def view(self, game: str, state: bytes, seat: int | None) -> Any:
        request = rules_pb2.GetViewRequest(game=game, state=state, seat=SPECTATOR if seat is None else seat)
        return orjson.loads(self._call(self.stub.GetView, request).view_json)

    def ready(self) -> bool:
        try:
            self.stub.ListGames(rules_pb2.ListGamesRequest(), timeout=1)
            return True
        except grpc.RpcError:
            return False


def _applied(reply: rules_pb2.GameState) -> Applied:
    return Applied(state=reply.state, to_act=list(reply.to_act), finished=reply.finished, seats=reply.seats,
                   result=orjson.loads(reply.result_json) if reply.result_json else None,
                   views={v.seat: v.view_json for v in reply.views},
                   sides=[list(side.seats) for side in reply.sides], scores=list(reply.scores),
                   winners=list(reply.winners), legal={m.seat: m.moves_json for m in reply.legal},
                   descriptions={d.seat: orjson.Fragment(d.description_json) for d in reply.descriptions})
