"""Locust scenarios for the Meeple REST API: people playing whole matches, the way clients do.

* :class:`BotMatchPlayer` creates a match against bots and plays it to the end with legal moves, waiting
  for the bots with long-polls.
* :class:`MatchmadePlayer` queues through matchmaking; two of them (or as many as the game needs) are
  grouped into one match and play it against each other.
* :class:`Spectator` follows a running match with long-polls, without a token.
* :class:`Baseline` calls ``/healthz`` (no Redis, no gRPC) at a steady pace in the same run, so the report
  can show what the real endpoints cost above the bare HTTP stack.

Every call goes through the Python SDK (``meeple_client``, its sync :class:`~meeple_client.Client` on httpx), as
an app's client would: moves at the version the SDK's :class:`~meeple_client.Match` read, with its automatic
``Idempotency-Key``, and its safe retries (503, a connection that never opened, an idempotent call whose answer
was lost). Each SDK call is one Locust request (its time includes the SDK's own retries); each retry the SDK
made, and each call that failed, is also written to ``MEEPLE_LOAD_ERRORS`` (one JSON line: time, request,
error kind, retried or not), so the report can show what a fault cost even when no user saw it.

Games come from ``GET /v1/games``, so every registered game takes part. Simultaneous steps need no special
case: a seat plays whenever it is in ``to_act``. Players ask for ``include=legal_moves``, so a turn is a
move submission and a long-poll (``until=turn``: it answers when the seat must act again), as a frugal
mobile client plays. The move submission is the request named ``move``; waiting for bots or another person is
a separate request (``events (wait for turn)``), so think time never counts as move latency. In a share of the
REST matches (``MEEPLE_LOAD_MOVE_WAIT_SHARE``, half by default) the person sends each move with ``wait``
instead, so a turn is one request (``move (and wait for turn)``: its time includes the wait, so it is no move
latency; it counts as a move in ``moves_per_s``).

Bounded by construction: the host must be a loopback address, the runner passes ``--run-time``, and a
request cap per user and for the whole run stops users (``MEEPLE_LOAD_MAX_REQUESTS*``). Settings come
from the environment (``MEEPLE_LOAD_*``), see ``SETTINGS``.
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import random
import socket
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, TypeVar

import gevent
import httpx
import orjson
from locust import User, constant, events, task
from locust.env import Environment
from locust.exception import StopUser
from meeple_client import ApiError, Client, Match, MeepleError
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Ping, RejectConnection, Request, TextMessage

from loadtests.names import MOVE, MOVE_AND_WAIT

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
T = TypeVar("T")
#: How many times a WebSocket player opens its socket again after it dropped before the match ended.
WS_RECONNECTS = 4


def _env_json(name: str, default: Any) -> Any:
    raw = os.environ.get(name)
    return json.loads(raw) if raw else default


SETTINGS: dict[str, Any] = {
    "bot_level": os.environ.get("MEEPLE_LOAD_BOT_LEVEL", "easy"),
    #: "min": matches against bots have as few seats as the game allows; "max": any size up to full.
    "bot_players": os.environ.get("MEEPLE_LOAD_BOT_PLAYERS", "min"),
    "max_requests": int(os.environ.get("MEEPLE_LOAD_MAX_REQUESTS", "2000000")),
    "max_requests_per_user": int(os.environ.get("MEEPLE_LOAD_MAX_REQUESTS_PER_USER", "100000")),
    #: Per-game options, e.g. {"clash": {"match": "single"}}; games not named play their defaults.
    "options": _env_json("MEEPLE_LOAD_OPTIONS", {}),
    #: A person's think time before a move, uniform in [low, high] seconds.
    "think_s": tuple(_env_json("MEEPLE_LOAD_THINK_S", [0.0, 0.04])),
    "wait_s": int(os.environ.get("MEEPLE_LOAD_WAIT_S", "10")),
    #: The share of matches against bots that a person plays over the WebSocket (moves and updates on one socket).
    "ws_share": float(os.environ.get("MEEPLE_LOAD_WS_SHARE", "0.25")),
    #: The share of REST matches whose person sends each move with ``wait`` (the answer comes at their next turn:
    #: one request a turn); the others send the move, then long-poll ``until=turn`` (two requests a turn).
    "move_wait_share": float(os.environ.get("MEEPLE_LOAD_MOVE_WAIT_SHARE", "0.5")),
    #: Give up on a matchmaking ticket after this long (the gateway fills seats with bots before that).
    "matchmaking_timeout_s": float(os.environ.get("MEEPLE_LOAD_MATCHMAKING_TIMEOUT_S", "60")),
    "spectator_polls": int(os.environ.get("MEEPLE_LOAD_SPECTATOR_POLLS", "30")),
    "weights": _env_json("MEEPLE_LOAD_WEIGHTS", {"bots": 3, "pairs": 3, "spectators": 1}),
}

_requests = itertools.count(1)
_matches = itertools.count()
_bot_matches = itertools.count()  # which matches against bots are played over the WebSocket
_rest_matches = itertools.count()  # which REST matches send their moves with ``wait``
_queue_games: collections.deque[dict[str, Any]] = collections.deque()
#: Matches people are playing now, for spectators to follow.
RECENT: collections.deque[str] = collections.deque(maxlen=200)


#: Every move the server acknowledged, one JSON line each, for the audit's "lost acknowledged moves".
_ACKS = open(os.environ["MEEPLE_LOAD_ACKS"], "a", buffering=1) if os.environ.get("MEEPLE_LOAD_ACKS") else None  # noqa: SIM115


def record_acknowledged(match_id: str, seat: int | None, move: Any, version: Any) -> None:
    if _ACKS is not None:
        doc = {"match_id": match_id, "seat": seat, "move": move, "version": version}
        _ACKS.write(orjson.dumps(doc).decode() + "\n")


#: The id of every match a person started against bots, one a line (``MEEPLE_LOAD_BOT_MATCHES``): the chaos
#: run's observer follows their versions in the store (``loadtests/botstall.py``).
_BOT_MATCHES = (open(os.environ["MEEPLE_LOAD_BOT_MATCHES"], "a", buffering=1)  # noqa: SIM115
                if os.environ.get("MEEPLE_LOAD_BOT_MATCHES") else None)


def record_bot_match(match_id: str) -> None:
    if _BOT_MATCHES is not None:
        _BOT_MATCHES.write(match_id + "\n")


#: Every error an SDK call met, retried or final, one JSON line each (``MEEPLE_LOAD_ERRORS``).
_ERRORS = open(os.environ["MEEPLE_LOAD_ERRORS"], "a", buffering=1) if os.environ.get("MEEPLE_LOAD_ERRORS") else None  # noqa: SIM115


def error_kind(exc: BaseException) -> str:
    """``503 store_unavailable`` for the API's errors, the transport's exception class otherwise (the SDK's
    TransportError wraps httpx's: ``ReadError``, ``RemoteProtocolError``, ``ConnectError`` ...)."""
    if isinstance(exc, ApiError):
        return f"{exc.status} {exc.code}"
    return type(exc.__cause__ or exc).__name__


def record_error(name: str, exc: BaseException, retried: bool) -> None:
    if _ERRORS is not None:
        doc = {"at": time.time(), "name": name, "error": error_kind(exc), "retried": retried}
        _ERRORS.write(orjson.dumps(doc).decode() + "\n")


def sdk_client(host: str, on_retry: Callable[[str, Exception, float], None] | None = None) -> Client:
    """The SDK's client as an app would make it, with the load test's timeouts (60 s to read, 10 s to connect)."""
    timeout = httpx.Timeout(60.0, connect=10.0)
    return Client(host, timeout=60.0, on_retry=on_retry, http=httpx.Client(base_url=host, timeout=timeout))


def require_loopback(url: str | None) -> None:
    """Refuse to send load anywhere but this machine."""
    if urllib.parse.urlsplit(url or "").hostname not in LOOPBACK:
        raise SystemExit(f"refusing to load {url!r}: only a local stack on loopback may be loaded")


@events.init.add_listener
def _only_loopback(environment: Environment, **_: Any) -> None:
    require_loopback(environment.host)  # before any user starts: the process exits with the message


def _guard(user: Any) -> None:
    """Each user checks its own host too (a host given another way than --host)."""
    try:
        require_loopback(user.host)
    except SystemExit:
        gevent.spawn(user.environment.runner.quit)
        raise StopUser() from None


class MeepleUser(User):
    abstract = True
    wait_time = constant(0)
    games: list[Any] = []  # the catalogue, fetched once per process

    def on_start(self) -> None:
        _guard(self)
        self.requests = 0
        self.rng = random.Random()
        self.doing = ""  # the request in progress, named for the retries the SDK reports
        self.api = sdk_client(str(self.host), self.retried)
        if not MeepleUser.games:
            MeepleUser.games = self.timed("games", "GET", self.api.games) or []

    def on_stop(self) -> None:
        self.api.close()

    # -- one SDK call, counted against the caps and reported to Locust; None unless it succeeded ---------
    def timed(self, name: str, method: str, call: Callable[..., T], *args: Any) -> T | None:
        self.requests += 1
        if next(_requests) > SETTINGS["max_requests"]:
            # From a greenlet of its own: quit() kills every user greenlet, this one included, before it
            # stops the runner, so called from here it would never get that far.
            gevent.spawn(self.environment.runner.quit)  # type: ignore[union-attr]
            raise StopUser()
        if self.requests > SETTINGS["max_requests_per_user"]:
            raise StopUser()
        self.doing = name
        began = time.perf_counter()
        result: T | None = None
        error: MeepleError | None = None
        try:
            result = call(*args)
        except MeepleError as exc:
            error = exc
            record_error(name, exc, retried=False)
        self.environment.events.request.fire(
            request_type=method, name=name, response_time=(time.perf_counter() - began) * 1000, response_length=0,
            exception=error, context={})
        return result

    def retried(self, _operation: str, exc: Exception, _delay: float) -> None:
        record_error(self.doing, exc, retried=True)

    def options_for(self, game: dict[str, Any]) -> dict[str, Any]:
        options: dict[str, Any] = SETTINGS["options"].get(game["id"], {})
        return options

    def think(self) -> None:
        low, high = SETTINGS["think_s"]
        if high > 0:
            time.sleep(self.rng.uniform(low, high))

    # -- playing one seat of a match to the end ----------------------------------------------------------
    def play(self, match: Match) -> None:
        """Play like a frugal client: every response carries the seat's legal moves (``include=legal_moves``),
        so a turn is one move submission plus the long-poll that waits for the next one -- or, in a share of the
        matches (``move_wait_share``), one move submission with ``wait`` that answers at the next turn."""
        RECENT.append(match.id)
        n, share = next(_rest_matches), SETTINGS["move_wait_share"]
        wait_with_move = SETTINGS["wait_s"] if int((n + 1) * share) > int(n * share) else 0
        while match.status in ("active", "waiting"):
            done: Any
            if match.my_turn and match.doc.get("legal_moves") is None:  # a document without them (creation)
                done = self.timed("match status", "GET", match.refresh)
            elif match.my_turn and match.legal_moves:
                self.think()
                move = self.rng.choice(match.legal_moves)
                # the SDK's version and Idempotency-Key; with wait, the request ends at the next turn
                name = MOVE_AND_WAIT if wait_with_move else MOVE
                done = self.timed(name, "POST", match.move, move, wait_with_move)
                if done is not None:  # the version the move made: the first event's one before (none: now)
                    events = (match.doc.get("events") or []) if wait_with_move else []
                    record_acknowledged(match.id, match.seat, move,
                                        events[0]["version"] - 1 if events else match.version)
            else:
                # until=turn: bots' and other people's moves in between do not wake the client
                done = self.timed("events (wait for turn)", "GET", match.poll, "turn", SETTINGS["wait_s"])
            if done is None:  # the failure is recorded; free the others rather than leave them waiting
                self.timed("leave (after a failure)", "POST", match.leave)
                return


class BotMatchPlayer(MeepleUser):
    """One person against bots: create the match, play it to the end, start another."""

    weight = int(SETTINGS["weights"].get("bots", 0))

    @task
    def play_against_bots(self) -> None:
        game = self.games[next(_matches) % len(self.games)]
        # As few bots as the game allows: every bot move is an ISMCTS search, and on two shared cores the
        # bot workers must keep up (MEEPLE_LOAD_BOT_PLAYERS=max plays full tables instead).
        low = max(game["min_players"], 2)
        players = low if SETTINGS["bot_players"] == "min" else self.rng.randint(low, game["max_players"])
        seats = [{"kind": "human"}] + [{"kind": "bot", "level": SETTINGS["bot_level"]}] * (players - 1)
        # The create call itself (Client.create_match would read the match again at once: one request more)
        created = self.timed("create match", "POST", self.api.call, "create_match", None, None,
                             {"game": game["id"], "players": players, "options": self.options_for(game),
                              "seats": seats, "join": True})
        if created is not None:
            record_bot_match(created["id"])
        n, share = next(_bot_matches), SETTINGS["ws_share"]
        if created is not None and int((n + 1) * share) > int(n * share):  # every 1/share-th match, not the first
            self.play_ws(created["id"], created["token"])
        elif created is not None:
            self.play(Match.from_doc(self.api, created, refresh=False))

    def play_ws(self, match_id: str, token: str) -> None:
        """Play seat 0 over ``/v1/matches/{id}/ws``: updates pushed, moves as messages (``move (ws)``: from
        sending a move to its reply). A socket that drops or closes before the match is over is opened again
        with ``after`` = the last version seen, as a client does (a gateway worker restarting closes it); each
        reconnection is in ``MEEPLE_LOAD_ERRORS`` as a retry, and ``ws dropped`` fails only after 4 in a row."""
        seen = {"version": 0, "finished": False}
        for attempt in range(WS_RECONNECTS + 1):
            error = self.ws_session(match_id, token, seen)
            if seen["finished"]:
                return
            if attempt < WS_RECONNECTS:
                record_error("ws", ConnectionError(error or "closed before the match ended"), retried=True)
                time.sleep(0.1 * 2**attempt)
        self._fire("ws dropped", time.perf_counter(), error or "closed before the match ended")

    def ws_session(self, match_id: str, token: str, seen: dict[str, Any]) -> str | None:
        """One socket until it closes; the error that ended it, if any. ``seen`` keeps the last version and
        whether the match finished."""
        url = urllib.parse.urlsplit(str(self.host))
        host = str(url.hostname or "127.0.0.1")
        began = time.perf_counter()
        sent_at, moved = 0.0, False
        try:
            sock = socket.create_connection((host, url.port or 80), timeout=60)
        except OSError as err:
            return str(err)
        ws = WSConnection(ConnectionType.CLIENT)
        try:
            sock.sendall(ws.send(Request(host=host, target=f"/v1/matches/{match_id}/ws")))
            while True:
                data = sock.recv(65536)
                if not data:
                    return None
                ws.receive_data(data)
                for event in ws.events():
                    if isinstance(event, AcceptConnection):
                        self._fire("ws connect", began)
                        sock.sendall(ws.send(TextMessage(data=orjson.dumps(
                            # one version back: the current one is pushed again (what was lost with the socket)
                            {"type": "hello", "token": token, "after": max(0, seen["version"] - 1),
                             "include": "legal_moves"}).decode())))
                    elif isinstance(event, Ping):
                        sock.sendall(ws.send(event.response()))
                    elif isinstance(event, (CloseConnection, RejectConnection)):
                        return None
                    elif isinstance(event, TextMessage):
                        doc = orjson.loads(event.data)
                        if doc["type"] == "reply":
                            self._fire("move (ws)", sent_at, None if doc["status"] == 200 else str(doc["body"]))
                            moved = False
                        elif doc["type"] == "update":
                            version = seen["version"] = doc["version"]
                            seen["finished"] = doc["status"] == "finished"
                            if doc["status"] == "active" and 0 in doc["to_act"] and doc["legal_moves"] and not moved:
                                self.think()
                                self.requests += 1
                                sent_at, moved = time.perf_counter(), True
                                sock.sendall(ws.send(TextMessage(data=orjson.dumps({
                                    "type": "move", "id": version, "move": self.rng.choice(doc["legal_moves"]),
                                    "version": version, "idempotency_key": f"{match_id}-0-{version}"}).decode())))
        except OSError as err:
            return str(err)
        finally:
            sock.close()

    def _fire(self, name: str, began: float, error: str | None = None) -> None:
        self.environment.events.request.fire(
            request_type="WS", name=name, response_time=(time.perf_counter() - began) * 1000, response_length=0,
            exception=Exception(error) if error else None, context={})


class MatchmadePlayer(MeepleUser):
    """People queueing for a game: consecutive tickets ask for the same game, so they are grouped."""

    weight = int(SETTINGS["weights"].get("pairs", 0))

    @staticmethod
    def next_game(games: list[dict[str, Any]]) -> dict[str, Any]:
        """Games in turn, each as many times in a row as it has seats: consecutive tickets form a match."""
        if not _queue_games:
            for game in games:
                _queue_games.extend([game] * max(game["min_players"], 2))
        return _queue_games.popleft()

    @task
    def play_matchmade(self) -> None:
        game = self.next_game(self.games)
        players = max(game["min_players"], 2)
        ticket = self.timed("matchmaking enqueue", "POST", self.api.matchmaking, game["id"], players,
                            self.options_for(game))
        doc = None if ticket is None else ticket.doc
        deadline = time.monotonic() + SETTINGS["matchmaking_timeout_s"]
        while ticket is not None and doc is not None and doc["status"] == "waiting":
            if time.monotonic() > deadline:
                self.timed("matchmaking cancel", "DELETE", ticket.cancel)
                return
            wait = SETTINGS["wait_s"]
            doc = self.timed("matchmaking poll", "GET", self.api.call, "ticket", {"ticket": doc["ticket"]},
                             {"wait": wait}, None, None, wait + 15)
        if doc is None or doc["status"] != "matched":
            return
        match = Match(self.api, doc["match_id"], doc["token"])
        if self.timed("match status", "GET", match.refresh) is not None:
            self.play(match)


class Spectator(MeepleUser):
    """Someone watching a match people are playing: status once, then long-polls until it ends."""

    weight = int(SETTINGS["weights"].get("spectators", 0))

    @task
    def watch(self) -> None:
        if not RECENT:
            time.sleep(1.0)
            return
        match_id = self.rng.choice(list(RECENT)[-50:])
        match = self.timed("match status (spectator)", "GET", self.api.match, match_id)
        for _ in range(SETTINGS["spectator_polls"]):
            if match is None or match.status not in ("active", "waiting"):
                return
            if self.timed("events (spectator)", "GET", match.poll, "change", SETTINGS["wait_s"]) is None:
                return


class Baseline(User):
    """The trivial endpoint, measured beside the real ones through the same HTTP client as the SDK's calls
    (httpx): what any request costs on this stack."""

    fixed_count = 1
    wait_time = constant(0.1)

    def on_start(self) -> None:
        _guard(self)
        self.http = sdk_client(str(self.host)).http

    @task
    def healthz(self) -> None:
        began = time.perf_counter()
        error: Exception | None = None
        try:
            self.http.get("/healthz").raise_for_status()
        except httpx.HTTPError as exc:
            error = exc
        self.environment.events.request.fire(
            request_type="GET", name="baseline", response_time=(time.perf_counter() - began) * 1000,
            response_length=0, exception=error, context={})
