"""WebSocket: one socket per match that pushes the caller's events and takes its moves.

``GET /v1/matches/{id}/ws`` upgrades (RFC 6455, framing by ``wsproto``, a maintained sans-IO library); the
socket is then parked in the gunicorn worker's selector like an SSE stream, so an open WebSocket holds no
thread and no Redis connection between messages.

Auth: the seat token comes in the first message, ``{"type": "hello", "token": "..."}`` (an
``Authorization: Bearer`` header, or an API key as ``X-API-Key``, on the upgrade request works too, for
clients that can set one: then it is checked before the upgrade). Why not only the header: browsers'
``WebSocket`` API cannot set headers; ``Sec-WebSocket-Protocol`` would put the secret in a header proxies log
and echo back; a query string lands in access logs. The first message keeps the token out of every log, at the
cost of a socket that is unauthenticated for at most ``HELLO_S`` seconds. Either way the hello is decided by
the core's access policy, as any read of the match is: no update goes out before it allows one.

Moves call the core's move (``services.core.match.moves.submit``) with the socket's caller: the same versions,
idempotency keys, limits and errors as ``POST /v1/matches/{id}/moves``, whose HTTP status the ``reply`` carries.
"""

from __future__ import annotations

import logging
import time
from typing import Any, get_args

import msgspec
import orjson
from flask import Blueprint, Response, request
from wsproto.connection import Connection, ConnectionState, ConnectionType
from wsproto.events import BytesMessage, CloseConnection, Message, Ping, TextMessage
from wsproto.utilities import LocalProtocolError, generate_accept_token

from services.contract import models as m
from services.contract.limits import WS_HELLO_S
from services.contract.validation import answer as answer_bytes
from services.contract.validation import dump, parse_value
from services.core import access, limits
from services.core.access import Action, Caller, MatchAccess
from services.core.errors import DomainError, Kind
from services.core.match import moves, speaker
from services.core.match.events import chat_topic, match_topic
from services.core.match.opener import open_match
from services.core.match.reads import SPECTATOR, events_since
from services.core.record.store import Match

from ..context import Gateway, caller, core, gateway
from ..errors import answer_to
from ..hub import Hub, Slot
from ..parking import Stream, Write, can_park, park
from .common import given
from .events import HEARTBEAT_S, ChatCursor, WatchGuard, chat_start, events_json, next_beat, waiter_ident, woke_for

log = logging.getLogger("meeple.gateway")
bp = Blueprint("ws", __name__)
#: The hello must arrive this soon after the upgrade, or the socket is closed (1008).
HELLO_S = float(WS_HELLO_S)
POLICY, TOO_BIG, NORMAL = 1008, 1009, 1000
#: A ``move`` message's fields beyond the REST body: its type, the client's id for the reply, and what REST
#: sends as the ``Idempotency-Key`` header and the ``include`` parameter (``models.MoveOptions``).
MOVE_EXTRAS = ("type", "id", "idempotency_key", "include")
#: What a hello's ``include`` takes: the REST query parameter's values (``models.IncludeLegal``).
INCLUDE: tuple[str, ...] = get_args(get_args(m.IncludeLegal)[0])


@bp.get("/v1/matches/<match_id>/ws")
def plain(match_id: str) -> Response:
    """The URL without an upgrade (werkzeug routes WebSocket upgrades to the rule below)."""
    raise DomainError(Kind.UPGRADE_REQUIRED, "upgrade_required", "this endpoint speaks WebSocket (Upgrade: websocket)")


@bp.route("/v1/matches/<match_id>/ws", methods=["GET"], websocket=True)
def websocket(match_id: str) -> Response:
    gw, the_core, who = gateway(), core(), caller()
    key = request.headers.get("Sec-WebSocket-Key", "")
    if not key or request.headers.get("Sec-WebSocket-Version") != "13":
        raise DomainError(Kind.MALFORMED, "bad_handshake", "a WebSocket upgrade needs Sec-WebSocket-Key and "
                                                           "Sec-WebSocket-Version: 13")
    if not can_park():
        raise DomainError(Kind.NOT_SUPPORTED, "websocket_unsupported", "this server cannot hold WebSockets; run the "
                                                                       "gateway under its gunicorn worker")
    if who.credentialed:  # a credential on the upgrade is decided now: 401/404 before the upgrade
        opened = open_match(the_core, who, match_id, Action.READ)
        early: MatchAccess | None = opened.access
    else:  # the credential may come in the hello: decided then
        limits.count_request(the_core, who)
        early = None
    # Not authenticated yet (the token may come in the hello): counted per client once it is known. Until
    # then the upgrade's rate limit and HELLO_S bound how many such sockets an address can hold.
    slot = gw.hub.admit("ws", waiter_ident(who) if who.token else "")
    park(WsSession(gw, slot, match_id, who, early))
    response = Response(status=101, headers={"Upgrade": "websocket", "Connection": "Upgrade",
                                              "Sec-WebSocket-Accept": generate_accept_token(key.encode()).decode()})
    del response.headers["Content-Type"]
    return response


class WsSession(Stream):
    """One match's WebSocket: hello, then updates pushed on wake-ups and moves answered as replies."""

    kind = "ws"
    reads = True

    def __init__(self, gw: Gateway, slot: Slot, match_id: str, who: Caller, access: MatchAccess | None) -> None:
        hub: Hub = gw.hub
        super().__init__(hub, slot)
        self.gw, self.core, self.match_id, self.who, self.access = gw, gw.core, match_id, who, access
        self.ws = Connection(ConnectionType.SERVER)
        self.hello_by = time.monotonic() + HELLO_S
        self.beat = next_beat()
        self.ready = False
        self.after = -1
        self.legal = False
        self.parts: list[str] = []
        self.size = 0
        self.open = True
        self.touched: Match | None = None
        self.guard = WatchGuard(gw.core, who)
        self.chat: ChatCursor | None = None

    @property
    def seat(self) -> int | None:
        return None if self.access is None else self.access.seat

    def timer(self) -> float | None:
        return self.guard.timer(self.beat) if self.ready else self.hello_by

    def arm(self, wake: Any) -> None:
        if self.ready:
            also = (chat_topic(self.match_id), self.chat.seq) if self.chat is not None else None
            self.watch(match_topic(self.match_id), self.after, wake, also=also)
            self.guard.arm(self, wake)

    # -- sending ------------------------------------------------------------------------------------------
    def send(self, write: Write, doc: dict[str, Any]) -> None:
        self.send_json(write, orjson.dumps(doc))

    def send_json(self, write: Write, encoded: bytes) -> None:
        write(self.ws.send(TextMessage(data=encoded.decode())))

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
                    if self.size > self.core.config.max_body_bytes:
                        return self.close_with(write, TOO_BIG, f"messages are limited to "
                                                               f"{self.core.config.max_body_bytes} bytes")
                    self.parts.append(event.data)
                    if event.message_finished:
                        text, self.parts, self.size = "".join(self.parts), [], 0
                        if not self.message(text, write):
                            return False
        except LocalProtocolError:
            return False
        return self.open

    def on_wake(self, write: Write) -> bool:
        moved, chatted = woke_for(self, self.match_id, True)
        if chatted:  # (chat first: the update may finish the match and close the socket)
            self.push_chat(write)
        if moved and self.push(write):
            self.delivered()
        return self.open

    def on_timer(self, write: Write) -> bool:
        if not self.ready:
            return self.close_with(write, POLICY, f"send the hello within {HELLO_S:g} s")
        if not self.still_watching(write):
            return False
        write(self.ws.send(Ping(payload=b"hb")))
        self.beat = next_beat()
        if self.touched is not None:
            self.touch(self.touched)
        return True

    # -- messages ---------------------------------------------------------------------------------------------
    def message(self, text: str, write: Write) -> bool:
        # Read as a REST body is (msgspec): an integer past 64 bits stays an integer, which orjson would make a
        # float, so the contract's integer bound refuses it at this door too.
        try:
            msg = msgspec.json.decode(text)
        except (msgspec.DecodeError, RecursionError):
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
        if msg["type"] == "chat":
            return self.post_chat(msg, write)
        self.error(write, "bad_message", f"unknown message type {msg['type']!r}; send hello once, then moves and "
                                         "chat")
        return True

    def hello(self, msg: dict[str, Any], write: Write) -> bool:
        unknown = sorted(set(msg) - {"type", "token", "after", "include", "chat_after"})
        token, after, include = msg.get("token"), msg.get("after"), msg.get("include")
        chat_after = msg.get("chat_after")
        problem = None
        if unknown:
            problem = f"unknown field {unknown[0]!r} in the hello"
        elif token is not None and not isinstance(token, str):
            problem = "token must be a string"
        elif after is not None and (not isinstance(after, int) or isinstance(after, bool) or not 0 <= after < 2**31):
            problem = "after must be a version (an integer >= 0)"
        elif chat_after is not None and (not isinstance(chat_after, int) or isinstance(chat_after, bool)
                                         or not 0 <= chat_after < 2**31):
            problem = "chat_after must be a chat message id (an integer >= 0)"
        elif include is not None and include not in INCLUDE:
            problem = "include takes: legal_moves, or empty for nothing (as the REST parameter)"
        if problem:
            self.error(write, "bad_parameter", problem)
            return self.close_with(write, POLICY, "bad hello")
        try:  # the hello is decided as any read of the match: the core's access policy
            self.who = access.with_token(self.core.redis, self.who, token)
            opened = open_match(self.core, self.who, self.match_id, Action.READ, count=False)
            # from now on the socket counts against its token's cap (a spectator's: its address's)
            self.hub.transfer(self.slot, waiter_ident(self.who))
        except DomainError as err:
            self.error(write, err.code, err.message)
            return self.close_with(write, NORMAL if err.kind is Kind.NOT_FOUND else POLICY, err.code)
        self.access, self.guard = opened.access, WatchGuard(self.core, self.who)
        self.touch(opened.match)
        self.ready, self.legal = True, include == "legal_moves"
        self.after = opened.match.version if after is None else after
        self.chat = ChatCursor(self.core, self.match_id, *chat_start(self.core, self.match_id, chat_after))
        self.send(write, {"type": "ready", "seat": self.seat, "version": opened.match.version})
        self.push_chat(write)  # (before the update, which may finish the match and close the socket)
        self.push(write)
        return self.open

    def push_chat(self, write: Write) -> None:
        """Send what is new in the match's chat: a ``chat`` frame per message, a ``chat_redacted`` per redaction."""
        if self.chat is None:
            return
        for kind, data in self.chat.frames():
            field = b'"message":' if kind == "chat" else b'"id":'
            body = data if kind == "chat" else data[len(b'{"id":'):-1]
            self.send_json(write, b'{"type":"' + kind.encode() + b'",' + field + body + b"}")

    def post_chat(self, msg: dict[str, Any], write: Write) -> bool:
        """A chat message through the core, as ``POST /v1/matches/{id}/chat`` posts it; the reply carries its status."""
        try:  # the REST body's model: the same checks and errors
            body = parse_value(m.PostChat, {k: v for k, v in msg.items() if k not in ("type", "id")})
            doc = speaker.post_chat(self.core, self.who, self.match_id, text=given(body.text),
                                    preset=given(body.preset))
            status, encoded, wait = 201, answer_bytes(m.ChatMessage, doc), None
        except Exception as err:  # every failure becomes the reply's status and error body, as over HTTP
            status, error, headers = answer_to(err)
            encoded, wait = dump(error), headers.get("Retry-After")
        reply = {"type": "reply", "id": msg.get("id"), "status": status, "body": m.fragment(encoded)}
        if wait is not None:
            reply["retry_after"] = int(wait)
        self.send_json(write, dump(reply))
        return True

    def move(self, msg: dict[str, Any], write: Write) -> bool:
        """A move through the core, as ``POST /v1/matches/{id}/moves`` makes it; the reply carries its status."""
        started = time.perf_counter()
        try:  # the REST move's body (the same model), and what REST sends as a header and a query parameter
            body = parse_value(m.SubmitMove, {k: v for k, v in msg.items() if k not in MOVE_EXTRAS})
            options = parse_value(m.MoveOptions, {k: msg[k] for k in MOVE_EXTRAS[2:] if k in msg})
            doc = moves.submit(self.core, self.who, self.match_id, body.move, body.version,
                               idempotency_key=given(options.idempotency_key),
                               include_legal=options.include == "legal_moves")
            status, encoded, wait = 200, answer_bytes(m.Match, doc), None
        except Exception as err:  # every failure becomes the reply's status and error body, as over HTTP
            status, error, headers = answer_to(err)
            encoded, wait = dump(error), headers.get("Retry-After")
        self.gw.metrics.latency.labels("ws:move", "WS", str(status)).observe(time.perf_counter() - started)
        reply = {"type": "reply", "id": msg.get("id"), "status": status, "body": m.fragment(encoded)}
        if wait is not None:  # what REST sends as the Retry-After header (a 429 or a 503)
            reply["retry_after"] = int(wait)
        self.send_json(write, dump(reply))
        return True

    def push(self, write: Write) -> bool:
        """Send an update if the match is past what this socket has seen; True if one went out."""
        if not self.still_watching(write):
            return False
        key = SPECTATOR if self.seat is None else self.seat
        fields = (f"view:{key}", *((f"legal:{key}",) if self.legal and self.seat is not None else ()))
        match = self.core.store.load_next(self.match_id, fields, self.after)
        if match is None:
            self.error(write, "match_not_found", "the match expired")
            return self.close_with(write, NORMAL, "match not found")
        if self.who.token is not None and self.seat is not None and match.seat_of(self.who.token) != self.seat:
            return self.close_with(write, NORMAL, "the seat was given up")
        self.touch(match)
        if match.version <= self.after:
            return False
        assert self.access is not None
        doc = events_since(self.core, match, self.access, self.after, self.legal)
        self.after = match.version
        self.send_json(write, b'{"type":"update",' + events_json(doc)[1:])
        if match.meta.status == "finished":
            self.close_with(write, NORMAL, "match finished")
        return True

    def still_watching(self, write: Write) -> bool:
        """False (the socket closed, 1000, after an error naming why) once its watch token is revoked or expired."""
        refused = self.guard.refusal()
        if refused is None:
            return True
        self.error(write, refused.code, refused.message)
        self.close_with(write, NORMAL, refused.code)
        return False

    def touch(self, match: Match) -> None:
        """Holding the socket keeps the seat connected (one write per few heartbeats)."""
        self.touched = match
        if self.seat is not None:
            cfg = self.core.config
            self.core.store.touch(match, self.seat, time.time() + cfg.presence_s + HEARTBEAT_S, slack=cfg.presence_s)

