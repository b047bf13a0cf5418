"""The stateless gRPC rules service ``meeple.v1.Rules``.

Every request carries the state bytes and every response returns them: the server keeps nothing, so any
number of replicas can sit behind a load balancer. The servicer only translates between protobuf/JSON and
the engine protocol; all rules live in ``services/rules/games``.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import Any, TypeVar

import grpc
import orjson
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server

from services.pb import rules_pb2, rules_pb2_grpc
from services.rule_codes import CONFLICT_CODES, MALFORMED_CODES
from services.rules.games import GAMES, Game, RulesError, words
from services.rules.games.base import InvalidOptions, InvalidState
from services.rules.seal import ENV_VAR as SEAL_ENV_VAR
from services.rules.seal import Sealer, SealError

log = logging.getLogger("meeple.rules")

SERVICE_NAME = rules_pb2.DESCRIPTOR.services_by_name["Rules"].full_name
ERROR_CODE_KEY = "meeple-error-code"
#: "conflict" for errors that mean the caller's picture is stale (not your turn): HTTP 409 at the gateway.
ERROR_KIND_KEY = "meeple-error-kind"
#: Seat number that stands for a spectator in requests (protobuf has no optional int here).
SPECTATOR = -1
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
#: Millisecond-scale buckets: engine calls take microseconds to a few milliseconds.
LATENCY_BUCKETS = (0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class RulesMetrics:
    """The service's Prometheus metrics, on a registry of their own (no global state)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.latency = Histogram(
            "meeple_rules_rpc_seconds", "Rules RPC latency by method and game",
            ["method", "game", "code"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )
        self.moves = Counter("meeple_rules_moves_applied_total", "Moves applied", ["game"],
                             registry=self.registry)
        self.illegal = Counter("meeple_rules_illegal_moves_total", "Moves rejected, by reason",
                               ["game", "reason"], registry=self.registry)
        self.decodes = Counter("meeple_rules_state_decodes_total", "States decoded, by source: sealed (seal "
                               "verified, not re-validated), validated (unsealed, checked in full) or cached "
                               "(this replica's last reply for those very bytes: not decoded at all)",
                               ["game", "source"], registry=self.registry)


class _Abort(Exception):
    """Raised inside a handler to end the RPC with a status (keeps handlers linear)."""

    def __init__(self, status: grpc.StatusCode, message: str, code: str, kind: str = "") -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.kind = status, message, code, kind


def _json_arg(text: str, what: str, default: Any = None) -> Any:
    if not text:
        if default is not None:
            return default
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, f"{what} is required", "malformed_request")
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        message = f"{what} is not valid JSON: {exc}"
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, message, "malformed_request") from None


def _game(game_id: str) -> Game[Any]:
    game = GAMES.get(game_id)
    if game is None:
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT,
                     f"unknown game {game_id!r}; known: {', '.join(GAMES)}", "unknown_game")
    return game


def _decode(game: Game[Any], data: bytes, trusted: bool = False) -> Any:
    try:
        return game.decode_trusted(data) if trusted else game.decode(data)
    except InvalidState as exc:
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, exc.message, exc.code) from None
    except Exception:  # a decoder bug must not kill the server or leak a trace
        log.exception("decode crashed for %s", game.id)
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, "state bytes could not be decoded", "invalid_state") from None


def _seat(game: Game[Any], state: Any, seat: int, allow_spectator: bool) -> int | None:
    if allow_spectator and seat == SPECTATOR:
        return None
    if not 0 <= seat < game.seat_count(state):
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT,
                     f"seat {seat} does not exist (seats 0..{game.seat_count(state) - 1})", "no_such_seat")
    return seat


T = TypeVar("T")


class StateCache:
    """The states this replica sealed last, by their sealed bytes: the next move of a match sends back exactly the
    bytes of the last reply, and taking the state from here skips the seal check and the decode (the bytes are
    the very ones this replica sealed, so they are authentic). Beside the state it keeps the views that reply
    carried (seat -1 = the spectator's): they are the views *before* the next move, which that move's words need,
    so the move neither copies the state nor makes them again. An entry is taken once, so the caller owns the
    state and may change it; a miss (another replica's bytes, an evicted or retried one) decodes as usual. The
    service stays stateless: nothing here is needed to answer. ``size`` 0 turns it off."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._states: dict[tuple[str, bytes], tuple[Any, dict[int, Any]]] = {}
        self._lock = threading.Lock()

    def put(self, game: str, sealed: bytes, state: Any, views: dict[int, Any]) -> None:
        if not self.size:
            return
        with self._lock:
            self._states[(game, sealed)] = (state, views)
            while len(self._states) > self.size:  # the oldest first (dicts keep their insertion order)
                del self._states[next(iter(self._states))]

    def take(self, game: str, sealed: bytes) -> tuple[Any, dict[int, Any]] | None:
        if not self.size:
            return None
        with self._lock:
            return self._states.pop((game, sealed), None)


#: States kept by :class:`StateCache` unless ``MEEPLE_RULES_STATE_CACHE`` says otherwise.
STATE_CACHE_SIZE = 1024


class RulesServicer(rules_pb2_grpc.RulesServicer):
    """Translates RPCs to engine calls; stateless by construction."""

    def __init__(self, metrics: RulesMetrics, sealer: Sealer | None = None, cache_size: int = STATE_CACHE_SIZE
                 ) -> None:
        self.metrics = metrics
        self.sealer = sealer or Sealer()
        #: Only sealed bytes are kept: unsealed ones are a third party's and are validated in full every time.
        self.cache = StateCache(cache_size if self.sealer.enabled else 0)
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}

    def _labelled(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, looked up once per label set (it takes a lock and a dict per call)."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def _state(self, game: Game[Any], data: bytes) -> Any:
        """The state behind ``data``, a private copy the caller may change.

        Sealed by a replica of this service: decoded without re-validation. A seal that fails:
        ``INVALID_ARGUMENT``. Unsealed (a third party's own state): decoded and validated in full.
        """
        try:
            payload, trusted = self.sealer.open(game.id, data)
        except SealError as exc:
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc), "bad_seal") from None
        self._labelled(self.metrics.decodes, game.id, "sealed" if trusted else "validated").inc()
        return _decode(game, payload, trusted)

    def _state_and_views(self, game: Game[Any], data: bytes) -> tuple[Any, dict[int, Any]]:
        """:meth:`_state`, taken from :class:`StateCache` when this replica sealed these bytes last, with the views
        its reply carried (none on a miss)."""
        found = self.cache.take(game.id, data)
        if found is not None:
            self._labelled(self.metrics.decodes, game.id, "cached").inc()
            return found
        return self._state(game, data), {}

    @contextmanager
    def _observe(self, method: str, game: str, context: grpc.ServicerContext) -> Iterator[None]:
        start = time.perf_counter()
        code = "OK"
        try:
            yield
        except _Abort as abort:
            code = abort.status.name
            context.set_trailing_metadata(((ERROR_CODE_KEY, abort.code), (ERROR_KIND_KEY, abort.kind)))
            self._labelled(self.metrics.latency, method, game, code).observe(time.perf_counter() - start)
            context.abort(abort.status, abort.message)
        except Exception:
            log.exception("%s failed for %s", method, game)
            code = "INTERNAL"
            self._labelled(self.metrics.latency, method, game, code).observe(time.perf_counter() - start)
            context.abort(grpc.StatusCode.INTERNAL, "internal error in the rules service")
        else:
            self._labelled(self.metrics.latency, method, game, code).observe(time.perf_counter() - start)

    def _game_state(self, game: Game[Any], state: Any, view_seats: Iterable[int],
                    derive: bool = False, computed: dict[int, Any] | None = None,
                    quiet: Collection[int] = ()) -> rules_pb2.GameState:
        """``computed``: views of this state already made (seat -1 = spectator), not made again. ``quiet``: seats
        whose view and legal moves ``derive`` leaves out (no one reads them: ApplyMoveRequest.quiet_seats)."""
        finished = game.is_over(state)
        result = words.result_document(game, state) if finished else None
        to_act = game.to_act(state)
        if derive:  # everything a reader may ask for until the next move, computed once here
            view_seats = [-1, *(s for s in range(game.seat_count(state)) if s not in quiet)]
        made = dict(computed or {})
        for s in view_seats:
            if s not in made:
                made[s] = game.view(state, _seat(game, state, s, True))
        views = [rules_pb2.SeatView(seat=s, view_json=orjson.dumps(made[s]).decode()) for s in view_seats]
        legal = [rules_pb2.SeatMoves(seat=s, moves_json=orjson.dumps(game.legal_moves(state, s)).decode())
                 for s in to_act if s not in quiet] if derive else []
        encoded = self.sealer.seal(game.id, game.encode(state))
        self.cache.put(game.id, encoded, state, made)  # nothing changes these after this: they are the reply's
        reply = rules_pb2.GameState(
            game=game.id, state=encoded, to_act=to_act, finished=finished,
            seats=game.seat_count(state), result_json=orjson.dumps(result).decode() if result is not None else "",
            views=views, sides=[rules_pb2.Side(seats=side) for side in game.sides(state)], legal=legal,
        )
        if finished:
            outcome = game.outcome(state)
            reply.scores.extend(outcome.scores)
            reply.winners.extend(outcome.winners)
        return reply

    def ListGames(self, request: rules_pb2.ListGamesRequest, context: grpc.ServicerContext) -> Any:
        with self._observe("ListGames", "", context):
            infos = []
            for game in GAMES.values():
                doc = game.catalogue()
                infos.append(rules_pb2.GameInfo(
                    id=doc["id"], title=doc["title"], min_players=doc["min_players"],
                    max_players=doc["max_players"], simultaneous=doc["simultaneous"],
                    options_json=orjson.dumps(doc["options"]).decode(),
                ))
            return rules_pb2.ListGamesResponse(games=infos)

    def GetGame(self, request: rules_pb2.GetGameRequest, context: grpc.ServicerContext) -> Any:
        with self._observe("GetGame", request.game, context):
            game = _game(request.game)
            doc = game.catalogue()
            info = rules_pb2.GameInfo(id=doc["id"], title=doc["title"], min_players=doc["min_players"],
                                      max_players=doc["max_players"], simultaneous=doc["simultaneous"],
                                      options_json=orjson.dumps(doc["options"]).decode())
            return rules_pb2.GameComponents(info=info, components_json=orjson.dumps(words.components(game.id)).decode())

    def NewGame(self, request: rules_pb2.NewGameRequest, context: grpc.ServicerContext) -> Any:
        with self._observe("NewGame", request.game, context):
            game = _game(request.game)
            options = _json_arg(request.options_json, "options_json", default={})
            if not isinstance(options, dict):
                raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, "options must be a JSON object", "invalid_options")
            try:
                state = game.new_game(request.players, request.seed, options)
            except InvalidOptions as exc:
                raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, exc.message, exc.code) from None
            return self._game_state(game, state, request.view_seats, request.derive)

    def LegalMoves(self, request: rules_pb2.LegalMovesRequest, context: grpc.ServicerContext) -> Any:
        with self._observe("LegalMoves", request.game, context):
            game = _game(request.game)
            state = self._state(game, request.state)
            seat = _seat(game, state, request.seat, allow_spectator=False)
            assert seat is not None
            return rules_pb2.LegalMovesResponse(moves_json=orjson.dumps(game.legal_moves(state, seat)).decode())

    def ApplyMove(self, request: rules_pb2.ApplyMoveRequest, context: grpc.ServicerContext) -> Any:
        with self._observe("ApplyMove", request.game, context):
            game = _game(request.game)
            state, views = self._state_and_views(game, request.state)
            seat = _seat(game, state, request.seat, allow_spectator=False)
            assert seat is not None
            move = _json_arg(request.move_json, "move_json")
            quiet = frozenset(request.quiet_seats)
            viewers = [-1, *(s for s in range(game.seat_count(state)) if s not in quiet)]
            before_views: dict[int, Any] | None = None
            before = None
            if request.describe:  # the words need each viewer's view before the move: the cached ones, or a copy
                if all(v in views for v in viewers):
                    before_views = {v: views[v] for v in viewers}
                else:
                    before = game.clone(state)
            try:
                game.apply_in_place(state, seat, move)  # the decoded state is ours alone
            except RulesError as exc:
                self._labelled(self.metrics.illegal, game.id, exc.code).inc()
                status = (grpc.StatusCode.INVALID_ARGUMENT if exc.code in MALFORMED_CODES
                          else grpc.StatusCode.FAILED_PRECONDITION)
                kind = "conflict" if exc.code in CONFLICT_CODES else "malformed" if exc.code in MALFORMED_CODES else ""
                raise _Abort(status, exc.message, exc.code, kind) from None
            self._labelled(self.metrics.moves, game.id).inc()
            if not request.describe:
                return self._game_state(game, state, request.view_seats, request.derive, quiet=quiet)
            return self._described(game, before, before_views, seat, move, state, request, viewers, quiet)

    def _described(self, game: Game[Any], before: Any, before_views: dict[int, Any] | None, seat: int, move: Any,
                   state: Any, request: rules_pb2.ApplyMoveRequest, viewers: list[int],
                   quiet: Collection[int] = ()) -> rules_pb2.GameState:
        """The new state with the move's words for each of ``viewers`` (-1: the spectator). The views after the move
        are made once, for the words and for ``derive``; the views before it are ``before_views``, or are made from
        ``before``, a copy of the state before the move."""
        after_views = {v: game.view(state, None if v < 0 else v) for v in viewers}
        described = {v: words.describe(game, before, seat, move, state, None if v < 0 else v,
                                       before_view=None if before_views is None else before_views[v],
                                       after_view=after_views[v])
                     for v in viewers}
        reply = self._game_state(game, state, request.view_seats, request.derive, computed=after_views, quiet=quiet)
        reply.descriptions.extend(
            rules_pb2.SeatDescription(seat=v, description_json=orjson.dumps(doc).decode())
            for v, doc in described.items())
        return reply

    def GetView(self, request: rules_pb2.GetViewRequest, context: grpc.ServicerContext) -> Any:
        with self._observe("GetView", request.game, context):
            game = _game(request.game)
            state = self._state(game, request.state)
            seat = _seat(game, state, request.seat, allow_spectator=True)
            return rules_pb2.ViewResponse(view_json=orjson.dumps(game.view(state, seat)).decode())

    def GetResult(self, request: rules_pb2.GetResultRequest, context: grpc.ServicerContext) -> Any:
        with self._observe("GetResult", request.game, context):
            game = _game(request.game)
            state = self._state(game, request.state)
            result = words.result_document(game, state)
            response = rules_pb2.ResultResponse(
                finished=game.is_over(state),
                result_json=orjson.dumps(result).decode() if result is not None else "",
            )
            if game.is_over(state):
                outcome = game.outcome(state)
                response.scores.extend(outcome.scores)
                response.winners.extend(outcome.winners)
            return response


def serve(address: str = "127.0.0.1:0", metrics_port: int | None = None, workers: int = 8,
          metrics: RulesMetrics | None = None, sealer: Sealer | None = None,
          cache_size: int = STATE_CACHE_SIZE) -> tuple[grpc.Server, int]:
    """Start a rules server (health checking and reflection on); returns it and its bound port.

    ``metrics_port`` 0 picks a free port; ``None`` serves no /metrics endpoint (tests can read
    ``metrics.registry`` directly). ``sealer`` None: no sealing (every state is validated in full).
    """
    metrics = metrics or RulesMetrics()
    sealer = sealer or Sealer()
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rules"),
        options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                 ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                 ("grpc.so_reuseport", 0)],
    )
    rules_pb2_grpc.add_RulesServicer_to_server(RulesServicer(metrics, sealer, cache_size), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
        server,
    )
    port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"could not bind the rules service to {address}")
    server.start()
    for name in ("", SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    server.health_servicer = health_servicer  # type: ignore[attr-defined]  # for graceful shutdown
    if metrics_port is not None:
        http_server, _ = start_http_server(metrics_port, addr="127.0.0.1" if address.startswith("127.") else "0.0.0.0",
                                           registry=metrics.registry)
        server.metrics_port = http_server.server_port  # type: ignore[attr-defined]
        server.metrics_http = http_server  # type: ignore[attr-defined]
    return server, port


def shutdown(server: grpc.Server, grace: float = 5.0) -> None:
    """Graceful stop: report NOT_SERVING first so balancers drain, then finish in-flight RPCs."""
    health_servicer = getattr(server, "health_servicer", None)
    if health_servicer is not None:
        health_servicer.enter_graceful_shutdown()
    server.stop(grace).wait()
    http_server = getattr(server, "metrics_http", None)
    if http_server is not None:
        http_server.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="meeple serve rules", description="Run the gRPC rules service.")
    add_arguments(parser)
    return run(parser.parse_args(argv))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    import os

    parser.add_argument("--host", default=os.environ.get("MEEPLE_RULES_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("MEEPLE_RULES_PORT", "50051")))
    parser.add_argument("--metrics-port", type=int, default=int(os.environ.get("MEEPLE_RULES_METRICS_PORT", "9101")),
                        help="port of the Prometheus /metrics endpoint (0 = any free port)")
    parser.add_argument("--workers", type=int, default=int(os.environ.get("MEEPLE_RULES_WORKERS", "8")))
    parser.add_argument("--state-cache", type=int,
                        default=int(os.environ.get("MEEPLE_RULES_STATE_CACHE", str(STATE_CACHE_SIZE))),
                        help="states of the last replies kept to skip the next move's decode (0 = off)")


def run(args: argparse.Namespace, on_ready: Callable[[int, int], None] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        sealer = Sealer.from_env()
    except ValueError as exc:
        log.error("%s", exc)
        return 2
    if sealer.enabled:
        log.info("state bytes are sealed with key %r (%d key(s) verify)", sealer.signing, len(sealer.keys))
    else:
        log.warning("%s is not set: state bytes are not sealed and every state is validated in full "
                    "(set the same key on every replica to seal)", SEAL_ENV_VAR)
    server, port = serve(f"{args.host}:{args.port}", metrics_port=args.metrics_port, workers=args.workers,
                         sealer=sealer, cache_size=args.state_cache)
    metrics_port = getattr(server, "metrics_port", 0)
    log.info("rules service on %s:%d (games: %s); metrics on :%d/metrics",
             args.host, port, ", ".join(GAMES), metrics_port)
    if on_ready:
        on_ready(port, metrics_port)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    log.info("shutting down gracefully")
    shutdown(server)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
