"""Events: long-poll and Server-Sent Events. Each caller receives only what the access policy lets it see.

Every request opens the match through the core (``services.core.match.opener.open_match``: the rate limit, the
token, the access decision), exactly as a status read does; waiting is the transport's own business. A
long-poll or a stream between events is parked (``parking.py``): it holds no thread and no Redis connection,
and the process's event reader (``hub.py``) wakes it when its match changes.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from typing import Any

import msgspec
import orjson
from flask import Blueprint, Response

from services.contract import models as m
from services.contract.limits import HEARTBEAT_S
from services.contract.validation import answer as answer_bytes
from services.core import watching
from services.core.access import Action, Caller, MatchAccess
from services.core.errors import DomainError
from services.core.match import chat
from services.core.match.events import chat_topic, match_topic, waiter_of, watch_topic, your_turn_or_over
from services.core.match.opener import Opened, open_match
from services.core.match.reads import SPECTATOR, events_since
from services.core.record.store import Match
from services.core.service import Core

from ..context import caller, core, gateway
from ..hub import Hub, Slot
from ..parking import Stream, Write, can_park, park, resumed, wait_or_park
from .common import answer, given, headers, query, wait_s

bp = Blueprint("events", __name__)


def next_beat() -> float:
    """When the next heartbeat is due: 12-15 s from now, at random, so that streams opened together (a
    reconnect storm, a benchmark) do not beat together; a client still hears something every 15 s."""
    return time.monotonic() + HEARTBEAT_S * random.uniform(0.8, 1.0)


class WatchGuard:
    """An open stream's watch token: the stream ends once the token is revoked (its topic wakes the stream, so at
    once) or expires (a timer at its ``expires_at``), as a seat token's stream ends once the seat is given up."""

    def __init__(self, core: Core, who: Caller) -> None:
        self.core = core
        self.grant = who.watch if who.watching else None
        #: ``time.monotonic()`` at the token's expiry (None: no watch token)
        self.ends = None if self.grant is None else time.monotonic() + self.grant.expires_at - time.time()

    def timer(self, other: float) -> float:
        return other if self.ends is None else min(other, self.ends)

    def arm(self, parked: Stream, wake: Any) -> None:
        if self.grant is not None:
            parked.watch_also(watch_topic(self.grant.token_id), 0, wake)

    def refusal(self) -> DomainError | None:
        """Why the stream's watch token reads no more (revoked, expired), or None (or no watch token)."""
        if self.grant is None:
            return None
        return watching.refusal(self.core.redis, self.grant)


def waiter_ident(who: Caller) -> str:
    """Whose waiters these are, for the per-client cap: the seat token (hashed), or the address without one."""
    return waiter_of(who)


@bp.get("/v1/matches/<match_id>/events")
def long_poll(match_id: str) -> Response:
    gw, the_core, who = gateway(), core(), caller()
    asked = query(m.EventsQuery)
    include_legal, until, wait = asked.include == "legal_moves", asked.until, wait_s(asked.wait)
    after = -1 if asked.after is msgspec.UNSET else asked.after
    action = Action.ACT if until == "turn" else Action.READ  # until=turn waits for the caller's own seat

    chat_after = given(asked.chat_after)

    def opened(since: int, count: bool) -> Opened:  # (with chat_after, the chat cursor in the same round trip)
        return open_match(the_core, who, match_id, action, view=True, legal=include_legal,
                          log_from=since + 1 if since >= 0 else None, connected_for=wait, count=count,
                          chat=chat_after is not None)

    again = resumed()
    if again is None:  # one round trip: rate limit, the match, the caller's view and the log after ``after``
        current = opened(after, True)
        if after < 0:
            after = current.match.version
    else:  # the re-run of a parked long-poll: counted once already
        after = again.state["after"]
        current = opened(after, False)
    match, turn_of = current.match, current.access.seat if until == "turn" else None
    ready = match.version > after and (
        turn_of is None or your_turn_or_over(match.meta.status, match.meta.to_act, turn_of))
    chat_at = None
    if chat_after is not None:  # a chat message past chat_after, or any chat change since it parked, answers too
        assert match.chat_cursor is not None
        chat_at, newest = match.chat_cursor
        ready = ready or newest > chat_after or (again is not None and chat_at > again.state["chat_at"])
    remaining = again.remaining() if again is not None else float(wait)
    if not ready and remaining > 0.01:
        # until=turn sleeps through versions it has seen that were not the caller's turn
        since = max(after, match.version) if turn_of is not None else after
        if wait_or_park(gw.hub, None, "poll", waiter_ident(who), match_topic(match_id), since, turn_of,
                        time.monotonic() + remaining, {"after": after, "chat_at": chat_at},
                        also=(chat_topic(match_id), chat_at) if chat_at is not None else None):
            return Response(status=204)  # never sent: the worker holds the connection until a wake-up
        current = opened(after, False)
    return answer(events_since(the_core, current.match, current.access, after, include_legal, chat_after))


class SseStream(Stream):
    """One SSE response: an ``update`` per new version (the caller's data), a heartbeat every 15 s; it ends
    once the match is finished (or expired, or the seat's token was revoked by leaving, or its watch token was
    revoked or expired)."""

    kind = "sse"

    def __init__(self, hub: Hub, slot: Slot, core: Core, who: Caller, match: Match, access: MatchAccess, after: int,
                 limit_s: int, chat_at: tuple[int, int]) -> None:
        super().__init__(hub, slot)
        self.core, self.who, self.match, self.access, self.after = core, who, match, access, after
        self.chat = ChatCursor(core, match.id, *chat_at)
        self.end = time.monotonic() + limit_s
        self.beat = next_beat()
        self.over = False
        self.guard = WatchGuard(core, who)

    def timer(self) -> float | None:
        return self.guard.timer(min(self.beat, self.end))

    def arm(self, wake: Any) -> None:
        self.watch(match_topic(self.match.id), self.after, wake, also=(chat_topic(self.match.id), self.chat.seq))
        self.guard.arm(self, wake)

    def first(self) -> str:
        """What the response starts with: the reconnect delay, the chat messages past the stream's ``chat_after``,
        and the update if the match is past ``after`` (last: a client may stop reading at the finishing one)."""
        chat_text = self.chat_text()
        return "retry: 1000\n\n" + chat_text + self.update(self.match)

    def chat_text(self) -> str:
        """``event: chat`` per new message, ``event: chat_redacted`` per redaction (no ``id:``: the event id
        stays the version a reconnect resumes from)."""
        return "".join(f"event: {kind}\ndata: {data.decode()}\n\n" for kind, data in self.chat.frames())

    def update(self, current: Match) -> str:
        self.match = current
        self.over = current.meta.status == "finished"
        seat = self.access.seat
        if seat is not None:
            if self.who.token is not None and current.seat_of(self.who.token) != seat:
                self.over = True  # the seat was given up: its token reads no more
                return ""
            cfg = self.core.config  # holding the stream keeps the seat connected (one write per few heartbeats)
            self.core.store.touch(current, seat, time.time() + cfg.presence_s + HEARTBEAT_S, slack=cfg.presence_s)
        if current.version <= self.after:
            return ""
        doc = events_since(self.core, current, self.access, self.after)
        self.after = current.version
        return f"id: {self.after}\nevent: update\ndata: {events_json(doc).decode()}\n\n"

    def step(self, woken: bool) -> tuple[str, bool]:
        """After a wake-up (or a timer): the text to send, and whether the stream goes on."""
        if time.monotonic() >= self.end or self.guard.refusal() is not None:
            return "", False  # (a watch token revoked or expired: the client's next request is told why)
        key = SPECTATOR if self.access.seat is None else self.access.seat
        moved, chatted = woke_for(self, self.match.id, woken)
        current = self.core.store.load(self.match.id, (f"view:{key}",), self.after + 1) if moved else None
        if moved and current is None:
            return "", False  # the match expired
        text = self.chat_text() if chatted else ""  # (chat first: the update may be the finishing one)
        if current is not None:
            text += self.update(current)
        if not text and time.monotonic() >= self.beat:
            if current is None and self.access.seat is not None:
                self.update(self.match)  # presence only
            text = ": heartbeat\n\n"
        if text:
            self.beat = next_beat()
        return text, not self.over

    def on_wake(self, write: Write) -> bool:
        text, keep = self.step(True)
        if text:
            write(text.encode())
            self.delivered()
        return keep

    def on_timer(self, write: Write) -> bool:
        text, keep = self.step(False)
        if text:
            write(text.encode())
        return keep


class ChatCursor:
    """Where a stream or socket is in a match's chat: the topic's position and the newest message it sent."""

    def __init__(self, core: Core, match_id: str, seq: int, last_id: int) -> None:
        self.core, self.match_id, self.seq, self.last_id = core, match_id, seq, last_id

    def frames(self) -> list[tuple[str, bytes]]:
        """What is new since the cursor, as (``chat`` | ``chat_redacted``, JSON) pairs, oldest first."""
        news = chat.news(self.core, self.match_id, self.seq, self.last_id)
        self.seq, self.last_id = news.seq, news.last_id
        return ([("chat_redacted", orjson.dumps({"id": n})) for n in news.redacted]
                + [("chat", answer_bytes(m.ChatMessage, message)) for message in news.messages])


def chat_start(core: Core, match_id: str, chat_after: int | None) -> tuple[int, int]:
    """A new stream's chat cursor: the topic's position now, and ``chat_after`` (default: the newest message, so
    that only new ones are sent)."""
    seq, newest = chat.cursor(core, match_id)
    return seq, newest if chat_after is None else min(chat_after, newest)


def woke_for(parked: Stream, match_id: str, woken: bool) -> tuple[bool, bool]:
    """(the match, the chat) to read after a wake-up: what woke it (both when it cannot tell: a blocking wait)."""
    if not woken:
        return False, False
    heard = parked.heard()
    if not heard:
        return True, True
    return match_topic(match_id) in heard, chat_topic(match_id) in heard


def events_json(doc: dict[str, Any]) -> bytes:
    """An Events document (an SSE ``update``'s data, a WebSocket ``update``) through its model."""
    return answer_bytes(m.Events, doc)


@bp.get("/v1/matches/<match_id>/events/stream")
def stream(match_id: str) -> Response:
    """SSE: one ``event: update`` per version with the caller's data, a comment heartbeat every 15 s; the
    stream ends once the match is finished.

    ``after`` (or, on an EventSource's reconnect, ``Last-Event-ID``) resumes where the client was.
    """
    gw, the_core, who = gateway(), core(), caller()
    asked, last = query(m.StreamQuery), given(headers(m.StreamHeaders).last_event_id)
    opened = open_match(the_core, who, match_id, Action.READ, view=True)
    after = given(asked.after)
    if after is None:
        after = opened.match.version if last is None else last
    match = opened.match
    if match.version > after:
        match = open_match(the_core, who, match_id, Action.READ, view=True, log_from=after + 1, count=False).match
    chat_at = chat_start(the_core, match_id, given(asked.chat_after))
    slot = gw.hub.admit("sse", waiter_ident(who))
    sse = SseStream(gw.hub, slot, the_core, who, match, opened.access, after, asked.limit, chat_at)
    sent = {"X-Accel-Buffering": "no"}
    try:
        first = sse.first()
    except BaseException:
        sse.close()
        raise
    if sse.over:
        sse.close()
        return Response(first, mimetype="text/event-stream", headers=sent)
    if can_park():
        park(sse)
        return Response(iter([first]), mimetype="text/event-stream", headers=sent)  # no Content-Length

    def generate() -> Iterator[str]:  # a server that cannot park: the thread waits on the hub
        try:
            yield first
            keep = True
            while keep:
                timer = sse.timer() or time.monotonic()
                woken = gw.hub.wait(match_topic(match_id), sse.after, timer - time.monotonic(),
                                    also=(chat_topic(match_id), sse.chat.seq))
                text, keep = sse.step(woken)
                if text:
                    yield text
        finally:
            sse.close()

    return Response(generate(), mimetype="text/event-stream", headers=sent)
