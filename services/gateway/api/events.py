"""Events: long-poll and Server-Sent Events. Each seat receives only its own view of what changed.

Waiting is parked (``parking.py``): a long-poll or a stream between events holds no thread and no Redis
connection; the process's event reader (``hub.py``) wakes it when its match changes.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from typing import Any

import orjson
from flask import Blueprint, Flask, Response, current_app, jsonify, request

from services.core.store import Match, events_key, your_turn_or_over
from services.core.views import SPECTATOR, seat_legal_moves, seat_view

from ..context import Gateway, gateway
from ..errors import ApiError
from ..hub import Hub, Slot
from ..parking import Stream, Write, can_park, park, resumed, wait_or_park
from .common import (
    caller_fields,
    caller_seat,
    found_or_404,
    int_arg,
    limited_load,
    load_match,
    rate_limit,
    wants_legal_moves,
)

bp = Blueprint("events", __name__)
HEARTBEAT_S = 15


def next_beat() -> float:
    """When the next heartbeat is due: 12-15 s from now, at random, so that streams opened together (a
    reconnect storm, a benchmark) do not beat together; a client still hears something every 15 s."""
    return time.monotonic() + HEARTBEAT_S * random.uniform(0.8, 1.0)
#: What a long-poll waits for: any new version (``change``), or the caller's turn or the end (``turn``).
UNTIL = ("change", "turn")


def events_since(match: Match, seat: int | None, after: int, include_legal: bool = False) -> dict[str, Any]:
    """What happened after version ``after``: entries (moves only for their own seat) and the caller's view
    (and legal moves, if asked for) when anything did."""
    gw = gateway()
    over = match.meta["status"] == "finished"
    items = []
    entries = match.tail if match.tail is not None else gw.store.log(match.id, after + 1, match.version)
    for entry in entries:
        if not after < entry["version"] <= match.version:
            continue
        item = {"version": entry["version"], "kind": entry["kind"], "seat": entry.get("seat"),
                "to_act": entry["to_act"]}
        if "by" in entry:
            item["by"] = entry["by"]
        if entry["kind"] == "move" and (over or entry.get("seat") == seat):
            item["move"] = entry["move"]
        items.append(item)
    doc = {"version": match.version, "status": match.meta["status"], "to_act": match.meta["to_act"],
           "events": items, "view": seat_view(gw, match, seat) if items else None,
           "result": match.meta.get("result")}
    if include_legal:
        doc["legal_moves"] = seat_legal_moves(gw, match, seat) if seat is not None else None
    return doc


def client_ident() -> str:
    """Whose waiters these are, for the per-client cap: the token (hashed), or the address without one."""
    from services.core.store import hash_token

    token = request.headers.get("Authorization", "")
    return f"t:{hash_token(token)[:20]}" if token else f"ip:{request.remote_addr}"


@bp.get("/v1/matches/<match_id>/events")
def long_poll(match_id: str) -> Response:
    gw = gateway()
    include_legal = wants_legal_moves()
    after = int_arg("after", -1, 0, 2**31)
    wait = int_arg("wait", 0, 0, gw.config.long_poll_max_s)
    until = request.args.get("until", "change")
    if until not in UNTIL:
        raise ApiError(400, "bad_parameter", f"until must be one of: {', '.join(UNTIL)}")
    again = resumed()
    if again is None:  # one round trip: rate limit, the match, the caller's view and the log after ``after``
        match, _ = limited_load(match_id, view=True, legal=include_legal, log_from=after + 1 if after >= 0 else None)
        if after < 0:
            after = match.version
    else:  # the re-run of a parked long-poll: counted once already
        after = again.state["after"]
        match = found_or_404(match_id, gw.store.load(match_id, caller_fields(True, include_legal), after + 1))
    seat = caller_seat(match, required=until == "turn", connected_for=wait)
    turn_of = seat if until == "turn" else None  # required above: never None for until=turn
    ready = match.version > after and (
        turn_of is None or your_turn_or_over(match.meta["status"], match.meta["to_act"], turn_of))
    remaining = again.remaining() if again is not None else float(wait)
    if not ready and remaining > 0.01:
        # until=turn sleeps through versions it has seen that were not the caller's turn
        since = max(after, match.version) if turn_of is not None else after
        if wait_or_park(gw.hub, None, "poll", client_ident(), events_key(match_id), since, turn_of,
                        time.monotonic() + remaining, {"after": after}):
            return Response(status=204)  # never sent: the worker holds the connection until a wake-up
        match = found_or_404(match_id, gw.store.load(match_id, caller_fields(True, include_legal), after + 1))
    return jsonify(events_since(match, seat, after, include_legal))


class SseStream(Stream):
    """One SSE response: an ``update`` per new version (the caller's data), a heartbeat every 15 s."""

    kind = "sse"

    def __init__(self, hub: Hub, slot: Slot, app: Flask, match: Match, seat: int | None, after: int,
                 limit_s: int) -> None:
        super().__init__(hub, slot)
        self.app, self.match, self.seat, self.after = app, match, seat, after
        self.end = time.monotonic() + limit_s
        self.beat = next_beat()
        self.over = False

    def timer(self) -> float | None:
        return min(self.beat, self.end)

    def arm(self, wake: Any) -> None:
        self.watch(events_key(self.match.id), self.after, wake)

    def first(self) -> str:
        """What the response starts with: the reconnect delay, and the update if the match is past ``after``."""
        return "retry: 1000\n\n" + self.update(self.match)

    def update(self, current: Match) -> str:
        gw: Gateway = self.app.extensions["meeple"]
        self.match = current
        if self.seat is not None:  # holding the stream keeps the seat connected (one write per few heartbeats)
            gw.store.touch(current, self.seat, time.time() + gw.config.presence_s + HEARTBEAT_S,
                           slack=gw.config.presence_s)
        if current.version <= self.after:
            return ""
        doc = events_since(current, self.seat, self.after)
        self.after = current.version
        self.over = current.meta["status"] == "finished"
        return f"id: {self.after}\nevent: update\ndata: {orjson.dumps(doc).decode()}\n\n"

    def step(self, woken: bool) -> tuple[str, bool]:
        """After a wake-up (or a timer): the text to send, and whether the stream goes on."""
        if time.monotonic() >= self.end:
            return "", False
        with self.app.app_context():
            gw: Gateway = self.app.extensions["meeple"]
            key = SPECTATOR if self.seat is None else self.seat
            current = gw.store.load(self.match.id, (f"view:{key}",), self.after + 1) if woken else None
            if woken and current is None:
                return "", False  # the match expired
            text = self.update(current) if current is not None else ""
            if not text and time.monotonic() >= self.beat:
                if current is None and self.seat is not None:
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


def _last_event_id() -> int | None:
    raw = request.headers.get("Last-Event-ID", "")
    return int(raw) if raw.isdigit() and len(raw) < 11 else None


@bp.get("/v1/matches/<match_id>/events/stream")
def stream(match_id: str) -> Response:
    """SSE: one ``event: update`` per version with the caller's data, a comment heartbeat every 15 s.

    ``after`` (or, on an EventSource's reconnect, ``Last-Event-ID``) resumes where the client was.
    """
    rate_limit()
    gw = gateway()
    seat_key = caller_fields(True, False)
    match = load_match(match_id)
    seat = caller_seat(match, required=False)
    last = _last_event_id()
    after = int_arg("after", match.version if last is None else last, 0, 2**31)
    limit_s = int_arg("limit", 3600, 1, 3600)
    if match.version > after:
        match = found_or_404(match_id, gw.store.load(match_id, seat_key, after + 1))
    slot = gw.hub.admit("sse", client_ident())
    sse = SseStream(gw.hub, slot, current_app._get_current_object(), match, seat, after, limit_s)  # type: ignore[attr-defined]
    headers = {"X-Accel-Buffering": "no"}
    try:
        first = sse.first()
    except BaseException:
        sse.close()
        raise
    if sse.over:
        sse.close()
        return Response(first, mimetype="text/event-stream", headers=headers)
    if can_park():
        park(sse)
        return Response(iter([first]), mimetype="text/event-stream", headers=headers)  # no Content-Length

    def generate() -> Iterator[str]:  # a server that cannot park: the thread waits on the hub
        try:
            yield first
            keep = True
            while keep:
                timer = sse.timer() or time.monotonic()
                woken = gw.hub.wait(events_key(match_id), sse.after, timer - time.monotonic())
                text, keep = sse.step(woken)
                if text:
                    yield text
        finally:
            sse.close()

    return Response(generate(), mimetype="text/event-stream", headers=headers)
