"""WebSocket: one socket per match that pushes the seat's events and takes its moves.

``GET /v1/matches/{id}/ws`` upgrades (RFC 6455, framing by ``wsproto``, a maintained sans-IO library); the
socket is then parked in the gunicorn worker's selector like an SSE stream, so an open WebSocket holds no
thread and no Redis connection between messages.

Auth: the seat token comes in the first message, ``{"type": "hello", "token": "..."}`` (an
``Authorization: Bearer`` header on the upgrade request works too, for clients that can set one). Why not
only the header: browsers' ``WebSocket`` API cannot set headers; ``Sec-WebSocket-Protocol`` would put the
secret in a header proxies log and echo back; a query string lands in access logs. The first message keeps
the token out of every log, at the cost of a socket that is unauthenticated for at most ``HELLO_S`` seconds.

Moves run through the same Flask view as ``POST /v1/matches/{id}/moves`` (same versions, idempotency keys,
errors and rate limit), called in-process with the socket's token and address.
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from flask import Blueprint, Flask, Response, current_app, request
from werkzeug.test import EnvironBuilder
from wsproto.connection import Connection, ConnectionState, ConnectionType
from wsproto.events import BytesMessage, CloseConnection, Message, Ping, TextMessage
from wsproto.utilities import LocalProtocolError, generate_accept_token

from services.core.store import Match, events_key
from services.core.views import SPECTATOR

from ..context import Gateway, gateway
from ..errors import ApiError
from ..hub import Hub, Slot
from ..parking import Stream, Write, can_park, park
from .common import bearer_token, caller_seat, load_match, rate_limit
from .events import HEARTBEAT_S, client_ident, events_since, next_beat

bp = Blueprint("ws", __name__)
#: The hello must arrive this soon after the upgrade, or the socket is closed (1008).
HELLO_S = 10.0
POLICY, TOO_BIG, NORMAL = 1008, 1009, 1000


@bp.get("/v1/matches/<match_id>/ws")
def plain(match_id: str) -> Response:
    """The URL without an upgrade (werkzeug routes WebSocket upgrades to the rule below)."""
    raise ApiError(426, "upgrade_required", "this endpoint speaks WebSocket (Upgrade: websocket)",
                   {"Upgrade": "websocket"})


@bp.route("/v1/matches/<match_id>/ws", methods=["GET"], websocket=True)
def websocket(match_id: str) -> Response:
    rate_limit()
    gw = gateway()
    match = load_match(match_id)
    key = request.headers.get("Sec-WebSocket-Key", "")
    if not key or request.headers.get("Sec-WebSocket-Version") != "13":
        raise ApiError(400, "bad_handshake", "a WebSocket upgrade needs Sec-WebSocket-Key and "
                                             "Sec-WebSocket-Version: 13")
    if not can_park():
        raise ApiError(501, "websocket_unsupported", "this server cannot hold WebSockets; run the gateway "
                                                     "under its gunicorn worker")
    token = bearer_token()
    seat = caller_seat(match, required=False)  # a header token is checked now: 401/403 before the upgrade
    # Not authenticated yet (the token may come in the hello): counted per client once it is known. Until
    # then the upgrade's rate limit and HELLO_S bound how many such sockets an address can hold.
    slot = gw.hub.admit("ws", client_ident() if token else "")
    park(WsSession(gw.hub, slot, current_app._get_current_object(), match, token, seat,  # type: ignore[attr-defined]
                   request.remote_addr or ""))
    response = Response(status=101, headers={"Upgrade": "websocket", "Connection": "Upgrade",
                                              "Sec-WebSocket-Accept": generate_accept_token(key.encode()).decode()})
    del response.headers["Content-Type"]
    return response


def _ident(token: str | None, addr: str) -> str:
    """The per-client cap's key, as ``events.client_ident`` makes it from a request."""
    from services.core.store import hash_token

    return f"t:{hash_token(f'Bearer {token}')[:20]}" if token else f"ip:{addr}"


class WsSession(Stream):
    """One match's WebSocket: hello, then updates pushed on wake-ups and moves answered as replies."""

    kind = "ws"
    reads = True

    def __init__(self, hub: Hub, slot: Slot, app: Flask, match: Match, token: str | None, seat: int | None,
                 remote_addr: str) -> None:
        super().__init__(hub, slot)
        self.app, self.match_id, self.token, self.seat, self.remote_addr = app, match.id, token, seat, remote_addr
        self.ws = Connection(ConnectionType.SERVER)
        self.hello_by = time.monotonic() + HELLO_S
        self.beat = next_beat()
        self.ready = False
        self.after = match.version
        self.legal = False
        self.parts: list[str] = []
        self.size = 0
        self.open = True
        self.touched: Match | None = None

    @property
    def gw(self) -> Gateway:
        gw: Gateway = self.app.extensions["meeple"]
        return gw

    def timer(self) -> float | None:
        return self.beat if self.ready else self.hello_by

    def arm(self, wake: Any) -> None:
        if self.ready:
            self.watch(events_key(self.match_id), self.after, wake)

    # -- sending ------------------------------------------------------------------------------------------
    def send(self, write: Write, doc: dict[str, Any]) -> None:
        write(self.ws.send(TextMessage(data=orjson.dumps(doc).decode())))

    def error(self, write: Write, code: str, message: str) -> None:
        self.send(write, {"type": "error", "error": {"code": code, "message": message}})

    def close_with(self, write: Write, code: int, reason: str) -> bool:
        if self.ws.state is ConnectionState.OPEN:
            write(self.ws.send(CloseConnection(code=code, reason=reason)))
        self.open = False
        return False

    # -- the worker's calls -----------------------------------------------------------------------------------
    def on_data(self, data: bytes, write: Write) -> bool:
        self.ws.receive_data(data)
        try:
            for event in self.ws.events():
                if isinstance(event, Ping):
                    write(self.ws.send(event.response()))
                elif isinstance(event, CloseConnection):
                    if self.ws.state is not ConnectionState.CLOSED:
                        write(self.ws.send(event.response()))
                    return False
                elif isinstance(event, BytesMessage):
                    return self.close_with(write, 1003, "send JSON text messages")
                elif isinstance(event, Message):
                    self.size += len(event.data)
                    if self.size > self.gw.config.max_body_bytes:
                        return self.close_with(write, TOO_BIG, f"messages are limited to "
                                                               f"{self.gw.config.max_body_bytes} bytes")
                    self.parts.append(event.data)
                    if event.message_finished:
                        text, self.parts, self.size = "".join(self.parts), [], 0
                        if not self.message(text, write):
                            return False
        except LocalProtocolError:
            return False
        return self.open

    def on_wake(self, write: Write) -> bool:
        if self.push(write):
            self.delivered()
        return self.open

    def on_timer(self, write: Write) -> bool:
        if not self.ready:
            return self.close_with(write, POLICY, f"send the hello within {HELLO_S:g} s")
        write(self.ws.send(Ping(payload=b"hb")))
        self.beat = next_beat()
        if self.seat is not None and self.touched is not None:
            with self.app.app_context():
                self.touch(self.touched)
        return True

    # -- messages ---------------------------------------------------------------------------------------------
    def message(self, text: str, write: Write) -> bool:
        try:
            msg = orjson.loads(text)
        except orjson.JSONDecodeError:
            msg = None
        if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
            self.error(write, "malformed_json", 'every message is a JSON object with a "type"')
            return self.ready or self.close_with(write, POLICY, "the first message must be the hello")
        if not self.ready:
            if msg["type"] != "hello":
                return self.close_with(write, POLICY, "the first message must be the hello")
            return self.hello(msg, write)
        if msg["type"] == "move":
            return self.move(msg, write)
        self.error(write, "bad_message", f"unknown message type {msg['type']!r}; send hello once, then moves")
        return True

    def hello(self, msg: dict[str, Any], write: Write) -> bool:
        unknown = sorted(set(msg) - {"type", "token", "after", "include"})
        token, after, include = msg.get("token"), msg.get("after"), msg.get("include")
        problem = None
        if unknown:
            problem = f"unknown field {unknown[0]!r} in the hello"
        elif token is not None and not isinstance(token, str):
            problem = "token must be a string"
        elif after is not None and (not isinstance(after, int) or isinstance(after, bool) or not 0 <= after < 2**31):
            problem = "after must be a version (an integer >= 0)"
        elif include not in (None, "legal_moves"):
            problem = "include takes: legal_moves"
        if problem:
            self.error(write, "bad_parameter", problem)
            return self.close_with(write, POLICY, "bad hello")
        with self.app.app_context():
            match = self.gw.store.load(self.match_id)
            if match is None:
                self.error(write, "match_not_found", "the match expired")
                return self.close_with(write, NORMAL, "match not found")
            if token is not None:
                seat = match.seat_of(token)
                if seat is None:
                    self.error(write, "wrong_token", "that token does not hold a seat in this match")
                    return self.close_with(write, POLICY, "wrong token")
                self.token, self.seat = token, seat
            try:  # from now on the socket counts against its token's cap (a spectator's: its address's)
                self.hub.transfer(self.slot, _ident(self.token, self.remote_addr))
            except ApiError as err:
                self.error(write, err.code, err.message)
                return self.close_with(write, POLICY, "too many waiters")
            self.touch(match)
        self.ready, self.legal = True, include == "legal_moves"
        self.after = match.version if after is None else after
        self.send(write, {"type": "ready", "seat": self.seat, "version": match.version})
        self.push(write)
        return self.open

    def move(self, msg: dict[str, Any], write: Write) -> bool:
        """Run ``POST /v1/matches/{id}/moves`` in-process: the REST view, its errors and its rate limit."""
        unknown = sorted(set(msg) - {"type", "id", "move", "version", "idempotency_key", "include"})
        if unknown:
            self.error(write, "unknown_field", f"unknown field {unknown[0]!r} in a move message")
            return True
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        key = msg.get("idempotency_key")
        if key is not None:
            headers["Idempotency-Key"] = str(key)
        body = {k: msg[k] for k in ("move", "version") if k in msg}
        environ = EnvironBuilder(path=f"/v1/matches/{self.match_id}/moves", method="POST",
                                 headers=list(headers.items()),
                                 query_string="include=legal_moves" if msg.get("include") == "legal_moves" else "",
                                 data=orjson.dumps(body), environ_base={"REMOTE_ADDR": self.remote_addr}).get_environ()
        answer: dict[str, Any] = {}

        def start_response(status: str, _headers: list[tuple[str, str]], _exc: Any = None) -> Any:
            answer["status"] = int(status.split(" ", 1)[0])
            return None

        chunks = self.app(environ, start_response)
        try:
            raw = b"".join(chunks)
        finally:
            getattr(chunks, "close", lambda: None)()
        self.send(write, {"type": "reply", "id": msg.get("id"), "status": answer["status"],
                          "body": orjson.loads(raw) if raw else None})
        return True

    def push(self, write: Write) -> bool:
        """Send an update if the match is past what this socket has seen; True if one went out."""
        with self.app.app_context():
            key = SPECTATOR if self.seat is None else self.seat
            fields = (f"view:{key}", *((f"legal:{key}",) if self.legal and self.seat is not None else ()))
            match = self.gw.store.load(self.match_id, fields, self.after + 1)
            if match is None:
                self.error(write, "match_not_found", "the match expired")
                return self.close_with(write, NORMAL, "match not found")
            self.touch(match)
            if match.version <= self.after:
                return False
            doc = events_since(match, self.seat, self.after, self.legal)
        self.after = match.version
        self.send(write, {"type": "update", **doc})
        if match.meta["status"] == "finished":
            self.close_with(write, NORMAL, "match finished")
        return True

    def touch(self, match: Match) -> None:
        """Holding the socket keeps the seat connected (one write per few heartbeats)."""
        self.touched = match
        if self.seat is not None:
            cfg = self.gw.config
            self.gw.store.touch(match, self.seat, time.time() + cfg.presence_s + HEARTBEAT_S, slack=cfg.presence_s)
