"""Events: long-poll and Server-Sent Events. Each seat receives only its own view of what changed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import orjson
from flask import Blueprint, Response, jsonify, request, stream_with_context

from ..context import gateway
from ..errors import ApiError
from ..store import Match, your_turn_or_over
from ..views import seat_legal_moves, seat_view
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


@bp.get("/v1/matches/<match_id>/events")
def long_poll(match_id: str) -> Response:
    gw = gateway()
    include_legal = wants_legal_moves()
    after = int_arg("after", -1, 0, 2**31)
    wait = int_arg("wait", 0, 0, gw.config.long_poll_max_s)
    until = request.args.get("until", "change")
    if until not in UNTIL:
        raise ApiError(400, "bad_parameter", f"until must be one of: {', '.join(UNTIL)}")
    # One round trip: the match, the caller's view and the log after ``after`` (if given).
    match, _ = limited_load(match_id, view=True, legal=include_legal, log_from=after + 1 if after >= 0 else None)
    if after < 0:
        after = match.version
    seat = caller_seat(match, required=until == "turn", connected_for=wait)
    turn_of = seat if until == "turn" else None  # required above: never None for until=turn
    ready = match.version > after and (
        turn_of is None or your_turn_or_over(match.meta["status"], match.meta["to_act"], turn_of))
    if not ready and wait:
        with gw.metrics.events_waiting.track_inprogress():
            if turn_of is not None:
                gw.store.wait_for_turn(match_id, turn_of, max(after, match.version), wait)
            else:
                gw.store.wait_for_version(match_id, after, wait)
        match = found_or_404(match_id, gw.store.load(match_id, caller_fields(True, include_legal), log_from=after + 1))
    return jsonify(events_since(match, seat, after, include_legal))


@bp.get("/v1/matches/<match_id>/events/stream")
def stream(match_id: str) -> Response:
    """SSE: one ``event: update`` per version with the caller's data, a comment heartbeat every 15 s."""
    rate_limit()
    gw = gateway()
    match = load_match(match_id)
    seat = caller_seat(match, required=False)
    after = int_arg("after", match.version, 0, 2**31)
    limit_s = int_arg("limit", 3600, 1, 3600)

    def generate() -> Iterator[str]:
        nonlocal after
        deadline = time.monotonic() + limit_s
        yield "retry: 1000\n\n"
        while time.monotonic() < deadline:
            current = gw.store.load(match_id)
            if current is None:
                return
            if seat is not None:  # holding the stream keeps the seat connected
                gw.store.touch(current, seat, time.time() + gw.config.presence_s + HEARTBEAT_S)
            if current.version > after:
                doc = events_since(current, seat, after)
                after = current.version
                yield f"id: {after}\nevent: update\ndata: {orjson.dumps(doc).decode()}\n\n"
                if current.meta["status"] == "finished":
                    return
            else:
                with gw.metrics.events_waiting.track_inprogress():
                    gw.store.wait_for_version(match_id, after, HEARTBEAT_S)
                yield ": heartbeat\n\n"

    return Response(stream_with_context(generate()), mimetype="text/event-stream",
                    headers={"X-Accel-Buffering": "no"})
