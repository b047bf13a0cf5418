"""What both flavours share: the operation table, request preparation, answers, retries and match state.

Every call the SDK makes goes through :data:`OPERATIONS` (method, path template, the query parameters it
may send, who may authenticate it), generated from the server's OpenAPI document (``operations.py``,
``scripts/gen_contract.py``): the SDK cannot drift.

Two credentials: a seat's token (``Authorization: Bearer``, what a player's client holds) and a tenant's API key
(``mk_...``, what an app's backend holds). The key goes as ``X-API-Key`` on the calls whose security lists the
``apiKey`` scheme and not the seat token's; on match reads (which take either) it goes as the bearer when no
seat token is given; a seat token goes, as the bearer, only on the calls whose security lists ``seatToken``.
A watch token (``w_...``, a watch link a tenant minted) goes where a seat token goes: it reads the match as a
spectator, and a match held with one refuses every acting call before sending it (:meth:`MatchFlows.check_acting`).
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections import deque
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

try:  # orjson reads and writes JSON several times faster than the standard library; the SDK does not need it
    import orjson
except ImportError:  # pragma: no cover - the SDK's own dependencies do not include it
    orjson = None  # type: ignore[assignment]

from .errors import ApiError, RateLimited, TransportError, TransportUnavailable, Unavailable, error_for
from .models import ChatMessage, DeadLetter, Event, EventsDoc, Hint, HistoryDoc, RatingsDoc, Webhook
from .operations import LONG_POLL_MAX_S, OPERATIONS, Operation

T = TypeVar("T")

#: How long a long-poll may wait (the server's cap, docs/api.md) and the HTTP read timeout around it.
LONG_POLL_S = LONG_POLL_MAX_S
RETRY_STATUSES = (503,)
DEFAULT_RETRIES = 4
#: The longest the SDK waits on a server's Retry-After before trying again (a longer wait is the caller's call).
RETRY_AFTER_CAP_S = 10.0


@dataclass
class Request:
    op: Operation
    method: str
    url: str
    params: dict[str, Any]
    headers: dict[str, str]
    body: Any
    timeout: float


API_KEY_PREFIX = "mk_"
WATCH_TOKEN_PREFIX = "w_"


def is_watch_token(token: str | None) -> bool:
    """A watch link's token (``w_<id>.<secret>``): it reads its matches as a spectator, nothing more."""
    return bool(token) and str(token).startswith(WATCH_TOKEN_PREFIX)


def check_api_key(api_key: str | None) -> str | None:
    """A tenant's key as the server prints it (``mk_<key id>.<secret>``); a seat token here is a mistake."""
    if api_key is not None and not api_key.startswith(API_KEY_PREFIX):
        raise ValueError(f"an API key starts with {API_KEY_PREFIX!r} (a seat token goes with the match instead)")
    return api_key


def auth_headers(op: Operation, name: str, token: str | None, api_key: str | None) -> dict[str, str]:
    """The credentials one call carries (see the module's docstring)."""
    if op.auth == "required" and op.key and not api_key:
        raise ValueError(f"{name} needs a tenant's API key (Client(..., api_key='mk_...'))")
    if op.auth == "required" and not op.key and not token:
        raise ValueError(f"{name} needs the seat's token")
    headers: dict[str, str] = {}
    if op.key and api_key:
        headers["X-API-Key"] = api_key
    if token and op.token:  # only where the document lists the seat token's scheme
        headers["Authorization"] = f"Bearer {token}"
    elif api_key and op.auth == "optional" and not op.key:
        headers["Authorization"] = f"Bearer {api_key}"  # a match read for the tenant, without a seat
    return headers


def prepare(name: str, path: dict[str, Any] | None = None, query: dict[str, Any] | None = None,
            body: Any = None, token: str | None = None, timeout: float = 10.0,
            api_key: str | None = None, idempotency_key: str | None = None) -> Request:
    """Build one call of operation ``name``; refuses query parameters the operation does not declare.
    ``idempotency_key``: the key of a call tried before (a socket move sent again over REST), else a new one."""
    op = OPERATIONS[name]
    params = {k: v for k, v in (query or {}).items() if v is not None}
    unknown = set(params) - set(op.query)
    if unknown:
        raise ValueError(f"{name} takes no query parameter {sorted(unknown)}")
    headers = {"Accept": "application/json", **auth_headers(op, name, token, api_key)}
    if op.method == "POST" or op.body:
        # Always JSON (even an empty object): the server refuses a body without this content type (415), and
        # may refuse POSTs without it; a PUT or PATCH that takes a body (a board's settings, a season) too.
        headers["Content-Type"] = "application/json"
        body = {} if body is None else body
    if "Idempotency-Key" in op.headers:
        headers["Idempotency-Key"] = idempotency_key or uuid.uuid4().hex  # one key per logical call and its retries
    url = op.path.format(**{k: str(v) for k, v in (path or {}).items()})
    return Request(op, op.method, url, params, headers, body, timeout)


def loads(raw: str | bytes | bytearray) -> Any:
    """JSON text to Python values: with orjson when it is installed, else with the standard library."""
    return json.loads(raw) if orjson is None else orjson.loads(raw)


def dumps(value: Any) -> bytes:
    """Compact JSON text, as UTF-8 bytes: orjson when installed, else the standard library. What orjson will not
    write (an integer past 64 bits) goes to the standard library, so both send the same requests."""
    if orjson is not None:
        try:
            return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:
            pass
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def content(req: Request) -> bytes | None:
    return None if req.body is None else dumps(req.body)


def answer(response: httpx.Response) -> Any:
    """The JSON body of a 2xx answer, else the typed error."""
    try:
        body = loads(response.content)
    except ValueError:
        body = response.text
    if response.is_success:
        return body
    raise error_for(response.status_code, body, dict(response.headers))


def retry_delays(retries: int) -> Iterator[float]:
    """Exponential backoff with jitter: 0.1, 0.2, 0.4 ... seconds (capped at 2 s)."""
    for attempt in range(retries):
        yield min(2.0, 0.1 * 2**attempt) * (0.5 + random.random())


def server_wait(exc: BaseException, backoff: float) -> float:
    """The seconds before trying again after ``exc``: what the server asked (its Retry-After, a socket reply's
    ``retry_after``; capped at :data:`RETRY_AFTER_CAP_S`) when it asked, else the SDK's own ``backoff``."""
    after = exc.retry_after if isinstance(exc, ApiError) else None
    return backoff if after is None else min(after, RETRY_AFTER_CAP_S)


def retryable(req: Request, exc: BaseException) -> bool:
    """Whether sending ``req`` again is safe after ``exc``.

    503 means nothing was changed; a connection that never opened sent nothing; any other transport
    failure is retried only for idempotent operations (reads, and moves thanks to their Idempotency-Key).
    """
    if isinstance(exc, RateLimited):
        return True
    if isinstance(exc, ApiError):
        return exc.status in RETRY_STATUSES
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return True
    return isinstance(exc, httpx.TransportError) and req.op.idempotent


def retry_or_raise(req: Request, exc: Exception, delays: Iterator[float]) -> float:
    """After a failed attempt: the seconds to wait before the next one, or the error to give up with."""
    delay = next(delays, None)
    if delay is None or not retryable(req, exc):
        if isinstance(exc, httpx.TransportError):
            raise TransportError(f"{req.method} {req.url}: {exc!r}") from exc
        raise exc
    return server_wait(exc, delay)


@dataclass
class MatchState:
    """The last known picture of a match from one seat (or a spectator): what a status document carries,
    kept up to date by moves and events. ``version`` is the version decisions are based on."""

    id: str
    token: str | None = None
    doc: dict[str, Any] = field(default_factory=dict)
    #: the match's chat as far as this client heard it, oldest first, redactions applied (every transport and
    #: :meth:`chat` keep it; ``chat_after`` asks the server for what comes after it)
    chat_messages: list[ChatMessage] = field(default_factory=list)
    #: called with each chat message heard (new, or redacted: ``redacted`` true), on the thread that read it
    on_chat: Callable[[ChatMessage], None] | None = None

    @property
    def chat_after(self) -> int:
        """The newest chat message id heard (0: none)."""
        return self.chat_messages[-1]["id"] if self.chat_messages else 0

    def hear_chat(self, message: ChatMessage) -> None:
        """Fold in one chat message: a new one is appended, a known one (a redaction) replaced."""
        for i, known in enumerate(self.chat_messages):
            if known["id"] == message["id"]:
                if known == message:
                    return
                self.chat_messages[i] = message
                break
        else:
            if message["id"] <= self.chat_after:  # (never heard, older than what was: the server's order holds)
                return
            self.chat_messages.append(message)
        if self.on_chat is not None:
            self.on_chat(message)

    def hear_redaction(self, message_id: int) -> None:
        """A message the tenant redacted: its text and preset are gone everywhere."""
        for known in self.chat_messages:
            if known["id"] == message_id and not known["redacted"]:
                self.hear_chat({**known, "text": None, "preset": None, "redacted": True})

    @property
    def watching(self) -> bool:
        """Held with a watch token: a read-only spectator's handle (reads, events, the socket's updates)."""
        return is_watch_token(self.token)

    def check_acting(self) -> None:
        """Refuse, before sending anything, what a watch token may not do (the server would answer 401)."""
        if self.watching:
            raise ValueError("a watch token only reads the match (status, events, socket updates, replay)")

    def update(self, doc: Mapping[str, Any]) -> None:
        """Fold a status document (create/join/get/move) or an events document into the state. An older
        version than the one held is ignored: a move's answer may come after an event stream's later news."""
        if self.doc and int(doc.get("version", self.version)) < self.version:
            return
        if "events" in doc and "id" not in doc:  # an events document (no id): keep what it does not carry
            merged = dict(self.doc)
            for key in ("version", "status", "to_act", "result"):
                merged[key] = doc[key]
            if doc.get("view") is not None:
                merged["view"] = doc["view"]
            if "legal_moves" in doc:
                merged["legal_moves"] = doc["legal_moves"]
            self.doc = merged
        else:
            token = doc.get("token")
            if token:
                self.token = token
            keep_view = self.doc.get("view") if doc.get("view") is None else None
            self.doc = {k: v for k, v in doc.items() if k != "token"}
            if keep_view is not None and doc.get("version") == self.doc.get("version"):
                self.doc["view"] = keep_view

    @property
    def game(self) -> str:
        return str(self.doc.get("game", ""))

    @property
    def version(self) -> int:
        return int(self.doc.get("version", 0))

    @property
    def status(self) -> str:
        return str(self.doc.get("status", ""))

    @property
    def seat(self) -> int | None:
        you = self.doc.get("you", self.doc.get("seat"))
        return None if you is None else int(you)

    @property
    def to_act(self) -> list[int]:
        return list(self.doc.get("to_act", []))

    @property
    def view(self) -> dict[str, Any] | None:
        view = self.doc.get("view")
        return view if isinstance(view, dict) else None

    @property
    def finished(self) -> bool:
        return self.status == "finished"

    @property
    def my_turn(self) -> bool:
        return self.seat is not None and self.status == "active" and self.seat in self.to_act

    @property
    def legal_moves(self) -> list[dict[str, Any]]:
        """The caller's legal moves at :attr:`version` ([] while it has nothing to decide)."""
        return list(self.doc.get("legal_moves") or [])

    @property
    def result(self) -> dict[str, Any] | None:
        return self.doc.get("result")

    @property
    def outcome(self) -> dict[str, Any] | None:
        return self.doc.get("outcome")

    @property
    def clock(self) -> dict[str, Any] | None:
        return self.doc.get("clock")

    @property
    def seats(self) -> list[dict[str, Any]]:
        return list(self.doc.get("seats", []))

    @property
    def rematch_id(self) -> str | None:
        return self.doc.get("rematch")


def create_body(game: str, players: int, options: dict[str, Any] | None, seats: list[dict[str, Any]] | None,
                join: bool, clock: dict[str, Any] | None, takeover_level: str | None,
                seed: int | None, spectator_chat: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"game": game, "players": players, "join": join}
    if spectator_chat:
        body["spectator_chat"] = True
    for key, value in (("options", options), ("seats", seats), ("clock", clock),
                       ("takeover_level", takeover_level), ("seed", seed)):
        if value is not None:
            body[key] = value
    return body


def join_body(seat: int | None, player: str | None) -> dict[str, Any]:
    return {k: v for k, v in (("seat", seat), ("player", player)) if v is not None}


def matchmaking_body(game: str, players: int, options: dict[str, Any] | None, player: str | None,
                     party: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"game": game, "players": players, "options": options or {}}
    if player is not None:
        body["player"] = player
    if party is not None:
        body["party"] = party
    return body


def chat_body(text: str | None, preset: str | None) -> dict[str, Any]:
    """``POST /v1/matches/{id}/chat``'s body: the text, or a preset of the game (``Client.games()``)."""
    if (text is None) == (preset is None):
        raise ValueError("send either text or a preset")
    return {"text": text} if text is not None else {"preset": preset}


def hear_sse_chat(match: MatchState, event: str, data: str) -> bool:
    """Fold a stream's ``chat`` / ``chat_redacted`` event into the match; False for any other event."""
    if event == "chat":
        match.hear_chat(loads(data))
    elif event == "chat_redacted":
        match.hear_redaction(int(loads(data)["id"]))
    else:
        return False
    return True


def hear_polled_chat(match: MatchState, doc: Mapping[str, Any]) -> None:
    """Fold a long-poll's ``chat`` and ``chat_redacted`` into the match."""
    for message in doc.get("chat") or ():
        match.hear_chat(message)
    for message_id in doc.get("chat_redacted") or ():
        match.hear_redaction(int(message_id))


def parse_sse_update(event: str, data: str) -> EventsDoc | None:
    """An ``update`` event's Events document (other event kinds are ignored)."""
    if event != "update" or not data:
        return None
    doc: EventsDoc = loads(data)
    return doc


#: The event transports ``Match.events`` takes; ``auto`` prefers the WebSocket, then SSE, then long-poll.
TRANSPORT_NAMES = ("auto", "ws", "sse", "long-poll", "poll")
#: What a WebSocket ``error`` message's code means as an HTTP status (the typed error raised for it).
WS_ERROR_STATUS = {"wrong_token": 401, "missing_token": 401, "match_not_found": 404, "too_many_waiters": 429,
                   "bad_parameter": 400, "malformed_json": 400, "bad_message": 400}
#: Error codes with which a server says it does not offer a transport (``auto`` then tries the next one).
UNOFFERED_CODES = ("upgrade_required", "websocket_unsupported", "not_implemented")


def handshake_body(raw: bytes | bytearray) -> Any:
    try:
        return loads(raw)
    except ValueError:
        return raw[:200].decode(errors="replace")


def check_transport(name: str) -> str:
    if name not in TRANSPORT_NAMES:
        raise ValueError(f"transport must be one of {', '.join(TRANSPORT_NAMES)}")
    return "long-poll" if name == "poll" else name


def refused(status: int, body: Any, headers: dict[str, str] | None = None) -> Exception:
    """A transport's refused handshake: the typed error of a Meeple error body, or :class:`TransportUnavailable`
    when the answer says the transport is not there (426/501, or a body that is no Meeple error: a proxy)."""
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict) or err.get("code") in UNOFFERED_CODES or status in (405, 426, 501):
        return TransportUnavailable(f"HTTP {status}: {str(body)[:200]}")
    return error_for(status, body, headers)


def ws_url(base_url: str, match_id: str) -> str:
    """``ws://`` (``wss://`` behind TLS) for the match's socket."""
    scheme, rest = base_url.split("://", 1)
    return ("wss" if scheme == "https" else "ws") + "://" + rest + OPERATIONS["ws"].path.format(match_id=match_id)


def ws_hello(token: str | None, after: int, chat_after: int = 0) -> str:
    """The first message: the seat's token (none: a spectator) and the last version and chat message seen, so
    nothing is missed across reconnects; a seat asks for its legal moves with every update (a watch token has
    none to ask for)."""
    hello: dict[str, Any] = {"type": "hello", "token": token, "after": after, "chat_after": chat_after}
    if token and not is_watch_token(token):
        hello["include"] = "legal_moves"
    return dumps(hello).decode()


def ws_update(msg: Any) -> EventsDoc | None:
    """A read message's Events document if it is an ``update``; None for ``ready``/``reply``; an ``error`` raises
    its typed error."""
    kind = msg.pop("type", None) if isinstance(msg, dict) else None
    if kind == "error":
        err = msg.get("error") or {}
        status = WS_ERROR_STATUS.get(str(err.get("code")), 400)
        # (a 429 too_many_waiters: the documented Retry-After of 5 s, unless the message names its own)
        wait = msg.get("retry_after", 5 if status == 429 else None)
        raise error_for(status, msg, None if wait is None else {"retry-after": str(wait)})
    if kind != "update":
        return None
    doc: EventsDoc = msg  # type: ignore[assignment]
    return doc


@dataclass
class SocketMove:
    """A move sent over the socket: its message id, idempotency key and text, and what a retry over REST needs
    (the same key with the same body, so the server answers the first outcome)."""

    id: str
    key: str
    move: dict[str, Any]
    version: int
    text: str


class ReplyLost(Exception):
    """No reply to a socket move within the client's timeout: it is sent again over REST, with the same key."""


class SocketState:
    """One match's socket, sans-I/O: the messages to send, and what each received message does to the match.
    Updates wait in ``pending`` for the caller's iterator; moves sent and not yet answered in ``outbox`` (sent
    again after every hello: a reply lost with a dropped socket is answered again under the same key); their
    replies in ``replies`` by message id."""

    def __init__(self, match: MatchState) -> None:
        self.match = match
        self.pending: deque[EventsDoc] = deque()
        self.outbox: dict[str, str] = {}
        self.replies: dict[str, dict[str, Any]] = {}
        #: chat messages sent and not yet answered (never sent again: chat has no idempotency key)
        self.chatting: set[str] = set()
        #: the events of the updates received while a move waits for the seat's turn (``move(m, wait)``)
        self.heard: list[Event] | None = None
        #: the last version an update brought (a move's reply may put the match ahead of it)
        self.seen = match.version

    def hello(self) -> str:
        return ws_hello(self.match.token, self.seen, self.match.chat_after)

    def greeting(self) -> list[str]:
        """What a freshly opened socket sends: the hello, then every move still waiting for its reply."""
        return [self.hello(), *self.outbox.values()]

    @property
    def done(self) -> bool:
        """The match is over and its last update arrived."""
        return self.match.finished and self.seen >= self.match.version and not self.pending

    def move_message(self, move: dict[str, Any]) -> SocketMove:
        """A move at the version the match read, with a fresh idempotency key that every resend reuses (after a
        reconnect, a 503 or a 429, or over REST), as ``POST /moves`` asks the same thing (``include``)."""
        self.match.check_acting()
        key = uuid.uuid4().hex
        msg = {"type": "move", "id": key, "move": move, "version": self.match.version, "idempotency_key": key,
               "include": "legal_moves"}
        return SocketMove(key, key, move, self.match.version, dumps(msg).decode())

    def send(self, sent: SocketMove) -> None:
        self.outbox[sent.id] = sent.text

    def forget(self, sent: SocketMove) -> None:
        """The move is no longer the socket's (answered, or handed to REST): not sent again, a late reply dropped."""
        self.outbox.pop(sent.id, None)
        self.replies.pop(sent.id, None)

    def answered(self, sent: SocketMove) -> bool:
        return sent.id in self.replies

    def receive(self, raw: str | bytes) -> bool:
        """Take one message; True if it brought news (an update or a reply), not just ``ready``."""
        msg = loads(raw)
        if isinstance(msg, dict) and msg.get("type") == "reply":
            msg_id = str(msg.get("id"))
            if msg_id in self.outbox or msg_id in self.chatting:  # else a late reply to one answered elsewhere
                self.replies[msg_id] = msg
            return True
        if isinstance(msg, dict) and msg.get("type") == "chat":
            self.match.hear_chat(msg["message"])
            return True
        if isinstance(msg, dict) and msg.get("type") == "chat_redacted":
            self.match.hear_redaction(int(msg["id"]))
            return True
        doc = ws_update(msg)
        if doc is None:
            return False
        if doc["version"] > self.match.version:  # every version once, in order (a move's reply may have
            self.match.update(doc)                # folded it in already)
        self.seen = max(self.seen, doc["version"])
        if self.heard is not None:
            self.heard.extend(doc["events"])
        self.pending.append(doc)
        return True

    def chat_message(self, text: str | None, preset: str | None) -> tuple[str, str]:
        """A chat message for the socket: its id (for its reply) and text."""
        msg_id = uuid.uuid4().hex
        self.chatting.add(msg_id)
        return msg_id, dumps({"type": "chat", "id": msg_id, **chat_body(text, preset)}).decode()

    def chat_reply(self, msg_id: str) -> ChatMessage:
        """The chat message's reply as ``POST /chat`` answers: the message (folded in), or its typed error."""
        self.chatting.discard(msg_id)
        reply = self.replies.pop(msg_id)
        if not 200 <= int(reply["status"]) < 300:
            raise reply_error(reply)
        message: ChatMessage = reply["body"]
        self.match.hear_chat(message)
        return message

    def settle(self, sent: SocketMove) -> dict[str, Any]:
        """The move's reply as ``POST /moves`` answers: its status document, or its typed error raised."""
        reply = self.replies.pop(sent.id)
        self.outbox.pop(sent.id, None)
        if not 200 <= int(reply["status"]) < 300:
            raise reply_error(reply)
        body: dict[str, Any] = reply["body"]
        return body


def reply_error(reply: dict[str, Any]) -> ApiError:
    """A socket reply's typed error, as REST raises it: its ``retry_after`` is the Retry-After header REST sends."""
    wait = reply.get("retry_after")
    return error_for(int(reply["status"]), reply.get("body"), None if wait is None else {"retry-after": str(wait)})


def retry_reply(exc: ApiError, delays: Iterator[float]) -> float:
    """After a socket move's error reply: the seconds before sending it again (same key), as REST retries the
    same statuses (429, 503) after the same wait (the reply's ``retry_after``, else the backoff), or the error to
    give up with."""
    delay = next(delays, None)
    if delay is None or not (isinstance(exc, RateLimited) or exc.status in RETRY_STATUSES):
        raise exc
    return server_wait(exc, delay)


def waited_events(heard: list[Event], moved: int) -> list[Event]:
    """What a move with ``wait`` answers in ``events``: what happened after the move, up to the seat's turn."""
    return [e for e in heard if e["version"] > moved]


#: Failures after which a socket is opened again: a connection that dropped or never opened, too many
#: waiters (429, as a refused upgrade or an error message), a dependency down (503).
TRANSIENT: tuple[type[Exception], ...] = (OSError, RateLimited, Unavailable)


def ws_headers(token: str | None, api_key: str | None) -> dict[str, str]:
    """The upgrade's headers: none for a seat (its token goes in the hello), a tenant's key as the bearer of
    a spectating backend."""
    return {} if token else auth_headers(OPERATIONS["ws"], "ws", None, api_key)


def reconnect_delay(failures: int, retries: int) -> float:
    """Seconds before reconnecting a dropped stream (a short random delay, docs/api.md "Reconnecting"), or
    raise once ``retries`` reconnections in a row brought nothing."""
    if failures > retries:
        raise TransportError(f"the event stream dropped {failures} times in a row")
    return min(2.0, 0.1 * 2**failures) * (0.5 + random.random())


def reconnect_wait(exc: BaseException, failures: int, retries: int) -> float:
    """Seconds before opening a socket again after ``exc``: the server's Retry-After when the refusal carried one
    (a 429 or 503 upgrade, a ``too_many_waiters`` error), else :func:`reconnect_delay` (which also gives up)."""
    return server_wait(exc, reconnect_delay(failures, retries))


@dataclass
class Call:
    """One operation to perform; the flows below yield these and receive the JSON answers (sans-I/O), so the
    sync and asyncio flavours share every step and differ only in how they send."""

    name: str
    path: dict[str, Any] | None = None
    query: dict[str, Any] | None = None
    body: Any = None
    token: str | None = None
    timeout: float | None = None
    #: the Idempotency-Key of a call tried before through another door (a socket move sent again over REST)
    idempotency_key: str | None = None


#: A flow: yields calls, receives each call's answer, returns its result.
Flow = Generator[Call, Any, T]


class MatchFlows(MatchState):
    """What a seat (or spectator) does with a match, written once as flows."""

    def _path(self) -> dict[str, Any]:
        return {"match_id": self.id}

    def _include(self) -> str | None:
        return "legal_moves" if self.token and not self.watching else None

    def refresh_flow(self) -> Flow[None]:
        self.update((yield Call("get_match", self._path(), {"include": self._include()}, token=self.token)))

    def move_flow(self, move: dict[str, Any], wait: int = 0, *, version: int | None = None,
                  key: str | None = None) -> Flow[None]:
        """``version`` and ``key``: a move first sent over the socket, sent again as it was (the same body under
        the same key answers its first outcome, whichever door it came through)."""
        self.check_acting()
        body = {"move": move, "version": self.version if version is None else version}  # never rebased
        query: dict[str, Any] = {"include": "legal_moves", **({"wait": wait} if wait else {})}
        # with wait: the HTTP read timeout covers the wait, as a long-poll's does; else the client's own
        self.update((yield Call("move", self._path(), query, body, self.token, timeout=wait + 15 if wait else None,
                                idempotency_key=key)))

    def poll_flow(self, until: str = "change", wait: int = LONG_POLL_S) -> Flow[EventsDoc]:
        """One long-poll; it brings the chat too (``chat_after``), and a chat message answers it."""
        query = {"after": self.version, "wait": wait, "until": until, "include": self._include(),
                 "chat_after": self.chat_after}
        doc: EventsDoc = yield Call("events", self._path(), query, token=self.token, timeout=wait + 15)
        self.update(doc)
        hear_polled_chat(self, doc)
        return doc

    def wait_chat_flow(self, timeout: float | None) -> Flow[list[ChatMessage]]:
        """Long-poll until a chat message newer than those heard arrives (or ``timeout``): the new ones."""
        seen = self.chat_after
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.chat_after <= seen:
            left = LONG_POLL_S if deadline is None else min(LONG_POLL_S, int(deadline - time.monotonic()))
            if left <= 0:
                break
            yield from self.poll_flow(wait=left)
        return [m for m in self.chat_messages if m["id"] > seen]

    def chat_flow(self, text: str | None = None, preset: str | None = None) -> Flow[ChatMessage]:
        """Post a chat message (as this seat, or as a spectator where the match allows it)."""
        message: ChatMessage = yield Call("post_chat", self._path(), body=chat_body(text, preset), token=self.token)
        self.hear_chat(message)
        return message

    def wait_turn_flow(self, timeout: float | None) -> Flow[None]:
        self.check_acting()
        deadline = None if timeout is None else time.monotonic() + timeout
        while not (self.finished or self.my_turn):
            if deadline is not None and time.monotonic() >= deadline:
                break
            yield from self.poll_flow(until="turn")
        if self.finished and self.outcome is None:  # events documents carry no outcome
            yield from self.refresh_flow()

    def hint_flow(self) -> Flow[Hint]:
        self.check_acting()
        hint: Hint = yield Call("hint", self._path(), token=self.token, timeout=30)
        return hint

    def leave_flow(self) -> Flow[None]:
        self.check_acting()
        self.update((yield Call("leave", self._path(), token=self.token)))

    def resign_flow(self) -> Flow[None]:
        """Concede: the seat's side forfeits (the match may play on for the others, a bot in the seat)."""
        self.check_acting()
        self.update((yield Call("resign", self._path(), token=self.token)))

    def reclaim_flow(self) -> Flow[None]:
        self.check_acting()
        self.update((yield Call("reclaim", {**self._path(), "seat": self.seat}, token=self.token)))
        yield from self.refresh_flow()

    def rematch_flow(self) -> Flow[dict[str, Any]]:
        """The rematch's status document with this seat's new token (the caller wraps it in a match)."""
        self.check_acting()
        doc: dict[str, Any] = yield Call("rematch", self._path(), token=self.token)
        return doc


def party_tokens(doc: dict[str, Any], seen: list[str | None] | None = None) -> list[str | None]:
    """Each member's seat token in a ticket document, those ``seen`` before kept (the server shows them once)."""
    members = doc.get("party") or [{"token": doc.get("token")}]
    seen = seen or [None] * len(members)
    return [member.get("token") or old for member, old in zip(members, seen, strict=True)]


def ticket_wait_flow(doc: dict[str, Any], timeout: float,
                     seen: list[str | None] | None = None) -> Flow[tuple[dict[str, Any], list[str]]]:
    """Long-poll a matchmaking ticket until matched; returns (the ticket, every member's seat token, in the
    party's order). The server may show the tokens only once, so the first ones seen are kept."""
    deadline = time.monotonic() + timeout
    tokens = party_tokens(doc, seen)
    while doc["status"] == "waiting" and time.monotonic() < deadline:
        doc = yield Call("ticket", {"ticket": doc["ticket"]}, {"wait": LONG_POLL_S}, timeout=LONG_POLL_S + 15)
        tokens = party_tokens(doc, tokens)
    if doc["status"] != "matched" or not all(tokens):
        raise TimeoutError(f"ticket {doc['status']}")
    return doc, [str(token) for token in tokens]


# For backends: what a tenant's API key reads and registers. One call each, written once for both flavours.

def history_flow(player: str | None, limit: int | None, before: float | None) -> Flow[HistoryDoc]:
    """One page of the tenant's matches (``player`` None) or of one player's, newest first; the page's
    ``next`` is the ``before`` of the next (older) page, None at the end."""
    query = {"limit": limit, "before": before}
    call = Call("tenant_matches", query=query) if player is None else Call("player_matches", {"player": player}, query)
    page: HistoryDoc = yield call
    return page


def ratings_flow(player: str, game: str | None) -> Flow[RatingsDoc]:
    doc: RatingsDoc = yield Call("ratings", {"player": player}, {"game": game})
    return doc


def add_webhook_flow(url: str, events: list[str]) -> Flow[Webhook]:
    hook: Webhook = yield Call("add_webhook", body={"url": url, "events": list(events)})
    return hook


def webhooks_flow() -> Flow[list[Webhook]]:
    hooks: list[Webhook] = (yield Call("webhooks"))["webhooks"]
    return hooks


def delete_webhook_flow(hook_id: str) -> Flow[str]:
    return str((yield Call("delete_webhook", {"hook_id": hook_id}))["deleted"])


def dead_letters_flow(limit: int | None) -> Flow[list[DeadLetter]]:
    letters: list[DeadLetter] = (yield Call("dead_letters", query={"limit": limit}))["dead_letters"]
    return letters


def clear_dead_letters_flow() -> Flow[int]:
    return int((yield Call("clear_dead_letters"))["cleared"])


# -- leaderboards, seasons and tournaments (API key) ---------------------------------------------------------------
def call_flow(name: str, path: dict[str, Any] | None = None, query: dict[str, Any] | None = None,
              body: Any = None) -> Flow[Any]:
    """One call of the table as a flow (the calls whose answer is the document itself)."""
    return (yield Call(name, path, query, body))


def season_body(name: str, starts_at: float, ends_at: float, policy: str, decay: float | None) -> dict[str, Any]:
    return {"name": name, "starts_at": starts_at, "ends_at": ends_at, "policy": policy,
            **({"decay": decay} if decay is not None else {})}


def mint_watch_flow(match_id: str | None, tournament_id: str | None, ttl_s: int | None,
                    player_ids: bool) -> Flow[Any]:
    """Mint a watch link's token (a tenant's key) for one match, or for every match of one tournament."""
    body: dict[str, Any] = {"player_ids": player_ids, **({"ttl_s": ttl_s} if ttl_s is not None else {})}
    if match_id is not None:
        return call_flow("mint_watch_token", {"match_id": match_id}, body=body)
    return call_flow("mint_tournament_watch_token", {"tournament_id": tournament_id}, body=body)


def check_watch_token(token: str) -> str:
    """A watch link's token as minted (``w_<id>.<secret>``): a seat token or a key here is a mistake."""
    if not is_watch_token(token):
        raise ValueError(f"a watch token starts with {WATCH_TOKEN_PREFIX!r} (mint one with watch_token(...))")
    return token
