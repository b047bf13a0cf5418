"""The SDK's WebSocket transport against a real gateway under gunicorn: every version once, reconnects with
``after``, ``auto`` falling back where the server holds no socket, typed errors, no other seat's secrets."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path
from typing import Any

import httpx
import pytest
from meeple_client import ApiError, AsyncClient, Client, EventsDoc, TransportUnavailable, Unauthorized

from tests.games.fixtures import leaked_secrets
from tests.replaying import engine_states
from tooling.stack import wait_until

from .conftest import RulesProcess, Stack, gunicorn_stack
from .test_sdk import follow_async

VS_BOT = [{"kind": "human"}, {"kind": "bot", "level": "easy"}]
SINGLE = {"match": "single"}


class Recorder:
    """Every HTTP request the SDK's httpx client sends (the WebSocket does not go through httpx)."""

    def __init__(self, url: str) -> None:
        self.paths: list[str] = []
        self.http = httpx.Client(base_url=url, event_hooks={"request": [lambda r: self.paths.append(r.url.path)]})

    def streams(self) -> list[str]:
        return [p for p in self.paths if p.endswith(("/events", "/events/stream"))]


def play_to_the_end(match: Any, on_move: Any = None) -> None:
    moves = 0
    while not match.finished:
        match.wait_turn(timeout=60)
        if match.my_turn:
            match.move(match.legal_moves[0])
            moves += 1
            if on_move:
                on_move(moves)


def follow(match: Any, transport: str, into: list[int]) -> threading.Thread:
    def run() -> None:
        for doc in match.events(transport=transport):
            into.extend(e["version"] for e in doc["events"])

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_auto_events_go_over_the_websocket_and_carry_every_version_once(ws_stack: Stack) -> None:
    recorder = Recorder(ws_stack.url)
    with Client(ws_stack.url) as api, Client(ws_stack.url, http=recorder.http) as watching:
        host = api.create_match("clash", 2, options=SINGLE, seats=VS_BOT, seed=11)
        watcher = watching.match(host.id)
        start, seen = watcher.version, []
        thread = follow(watcher, "auto", seen)
        play_to_the_end(host)
        thread.join(60)
        assert not thread.is_alive() and watcher.finished
        assert seen == list(range(start + 1, host.version + 1))
        assert recorder.streams() == []  # neither SSE nor long-poll: the socket carried it all
        assert watcher.view is not None and watcher.result is not None


def test_auto_falls_back_to_sse_where_the_gateway_holds_no_websocket(stack: Stack) -> None:
    recorder = Recorder(stack.url)
    with Client(stack.url) as api, Client(stack.url, http=recorder.http) as watching:
        host = api.create_match("clash", 2, options=SINGLE, seats=VS_BOT, seed=12)
        watcher = watching.match(host.id)
        with pytest.raises(TransportUnavailable):  # werkzeug's server: 501 websocket_unsupported
            next(watcher.events(transport="ws"))
        start, seen = watcher.version, []
        thread = follow(watcher, "auto", seen)
        play_to_the_end(host)
        thread.join(60)
        assert seen == list(range(start + 1, host.version + 1))
        assert recorder.streams() and all(p.endswith("/events/stream") for p in recorder.streams())


@pytest.mark.parametrize("game", ["fierce-women", "they-who-were-8"])
def test_a_seat_plays_from_its_websocket_updates_and_never_sees_another_seats_secrets(ws_stack: Stack,
                                                                                     game: str) -> None:
    players = 4 if game == "they-who-were-8" else 2
    with Client(ws_stack.url) as api:
        match = api.create_match(game, players, seats=[VS_BOT[0]] + [VS_BOT[1]] * (players - 1), seed=5)
        docs: list[EventsDoc] = []
        while match.my_turn:  # the socket brings news: act on the present first
            match.move(match.legal_moves[0])
        for doc in match.events(transport="ws"):
            docs.append(doc)
            assert "legal_moves" in doc  # a seat's hello asks for them
            if match.my_turn:
                match.move(match.legal_moves[0])
        assert match.finished and docs
        engine, states = engine_states(dict(api.replay(match.id)))
    for doc in docs:
        if doc["status"] != "finished":
            assert leaked_secrets(engine, states[doc["version"]], 0, doc) == set(), doc["version"]


def test_the_websocket_reconnects_with_after_when_the_gateway_worker_dies(rules: RulesProcess) -> None:
    with gunicorn_stack(rules.port) as node, Client(node.url) as api, Client(node.url) as watching:
        assert node.proc is not None
        host = api.create_match("clash", 2, options=SINGLE, seats=VS_BOT, seed=13)
        watcher = watching.match(host.id)
        start, seen = watcher.version, []
        thread = follow(watcher, "ws", seen)
        killed: list[int] = []

        def kill_worker(moves: int) -> None:
            if moves != 3:
                return
            wait_until(lambda: len(seen) > 0, "the first updates over the socket")
            workers = Path(f"/proc/{node.proc.pid}/task/{node.proc.pid}/children").read_text().split()
            for pid in workers:  # gunicorn's own worker (this test started gunicorn): every connection drops
                with suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
                killed.append(int(pid))

        play_to_the_end(host, kill_worker)
        thread.join(60)
        assert killed and not thread.is_alive()
        assert seen == list(range(start + 1, host.version + 1))  # nothing missed, nothing twice


def test_a_wrong_token_over_the_websocket_is_a_typed_unauthorized(ws_stack: Stack) -> None:
    with Client(ws_stack.url) as api:
        host = api.create_match("clash", 2, options=SINGLE, seats=VS_BOT)
        stranger = api.match(host.id)
        stranger.token = "0.not-a-token"
        with pytest.raises(Unauthorized) as caught:
            next(stranger.events(transport="ws"))
        assert caught.value.code == "wrong_token"
        with pytest.raises(ValueError):
            next(host.events(transport="carrier-pigeon"))


def test_the_async_client_follows_over_the_websocket_and_falls_back_to_sse(ws_stack: Stack, stack: Stack) -> None:
    # A thread of its own: Playwright's sync API (tests/browser, same process) holds this thread's event loop.
    with ThreadPoolExecutor(1) as pool:
        for url, transport in ((ws_stack.url, "ws"), (stack.url, "auto")):
            seen, start, final = pool.submit(asyncio.run, follow_async(url, transport)).result(timeout=180)
            assert seen == list(range(start + 1, final + 1)), (url, transport)


def test_moves_over_the_socket_play_a_game_to_the_end_and_errors_come_back_typed(ws_stack: Stack) -> None:
    with Client(ws_stack.url) as api:
        match = api.create_match("clash", 2, options=SINGLE, seats=VS_BOT, seed=17)
        other_view = api.match(match.id, match.token)  # the same seat, read once: soon out of date
        start, seen, refused = match.version, [], []
        with match.socket() as ws:

            def play() -> None:
                if not refused:  # a malformed move first: the REST endpoint's error, typed, nothing applied
                    version = match.version
                    with pytest.raises(ApiError) as bad:
                        ws.move({"type": "no-such-move"})
                    refused.append(bad.value.status)
                    assert match.version == version
                ws.move(match.legal_moves[0])

            while match.my_turn:
                play()
            for doc in ws.updates():
                seen.extend(e["version"] for e in doc["events"])
                if match.my_turn:
                    play()
        assert refused and refused[0] in (400, 422)
        assert match.finished and seen == list(range(start + 1, match.version + 1))
        mine = [e["move"] for e in api.replay(match.id)["log"] if e["kind"] == "move" and e["seat"] == 0]
        assert len(mine) > 1
        with other_view.socket() as late_socket, pytest.raises(ApiError) as late:
            late_socket.move(mine[0])  # the socket's hello brought the picture up to date: the match is over
        assert late.value.status == 409 and late.value.code == "match_closed" and other_view.finished


def test_the_async_client_moves_over_its_socket_to_the_end(ws_stack: Stack) -> None:
    async def play() -> tuple[list[int], int, int]:
        async with AsyncClient(ws_stack.url) as api:
            match = await api.create_match("clash", 2, options=SINGLE, seats=VS_BOT, seed=19)
            start, seen = match.version, []
            async with match.socket() as ws:
                while match.my_turn:
                    await ws.move(match.legal_moves[0])
                async for doc in ws.updates():
                    seen.extend(e["version"] for e in doc["events"])
                    if match.my_turn:
                        await ws.move(match.legal_moves[0])
            assert match.finished
            return seen, start, match.version

    with ThreadPoolExecutor(1) as pool:
        seen, start, final = pool.submit(asyncio.run, play()).result(timeout=180)
    assert seen == list(range(start + 1, final + 1))
