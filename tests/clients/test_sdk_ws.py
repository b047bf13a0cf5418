"""The SDK's WebSocket transport against a real gateway under gunicorn: every version once, reconnects with
``after``, ``auto`` falling back where the server holds no socket, typed errors, no other seat's secrets."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path
from typing import Any

import httpx
import pytest
from meeple_client import (
    ApiError,
    AsyncClient,
    AsyncMatch,
    Client,
    EventsDoc,
    Match,
    RateLimited,
    StaleVersion,
    TransportUnavailable,
    Unauthorized,
    _core,
)

from tests.games.fixtures import leaked_secrets
from tests.replaying import engine_states
from tooling import promtext
from tooling.stack import ROOT, wait_until

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

    def moves(self) -> int:
        return sum(p.endswith("/moves") for p in self.paths)


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


# -- moves on the open socket ------------------------------------------------------------------------------------
MOVE_ROUTES = {"ws": "ws:move", "rest": "/v1/matches/<match_id>/moves"}
HUMANS = [{"kind": "human"}, {"kind": "human"}]


class MoveCount:
    """The moves the gateway itself answered, per door, from its /metrics (what the server saw, not the SDK)."""

    def __init__(self, url: str) -> None:
        self.url = url + "/metrics"
        self.before = promtext.scrape(self.url)

    def __call__(self) -> dict[str, int]:
        change = promtext.delta(promtext.scrape(self.url), self.before)
        return {door: int(promtext.value(change, "meeple_gateway_request_seconds_count", {"route": route}))
                for door, route in MOVE_ROUTES.items()}


def my_moves(api: Client, match_id: str, seat: int) -> int:
    return sum(e["kind"] == "move" and e["seat"] == seat for e in api.replay(match_id)["log"])


def test_a_seat_holding_its_socket_moves_and_waits_over_it_with_no_http_request(ws_stack: Stack) -> None:
    recorder, served = Recorder(ws_stack.url), MoveCount(ws_stack.url)
    with Client(ws_stack.url, http=recorder.http) as api:
        match = api.create_match("clash", 2, options=SINGLE, seats=VS_BOT, seed=23)
        before = list(recorder.paths)
        with match.socket():
            play_to_the_end(match)  # match.wait_turn() and match.move(), as over REST
        assert match.finished and match.outcome is not None
        during = recorder.paths[len(before):]
        moves = my_moves(api, match.id, 0)
    assert moves > 1
    assert [p for p in during if not p.endswith(f"/matches/{match.id}")] == []  # only the final status read
    assert served() == {"ws": moves, "rest": 0}


def test_moves_made_while_events_come_over_the_socket_go_over_that_socket(ws_stack: Stack) -> None:
    recorder, served = Recorder(ws_stack.url), MoveCount(ws_stack.url)
    with Client(ws_stack.url, http=recorder.http) as api:
        match = api.create_match("clash", 2, options=SINGLE, seats=VS_BOT, seed=29)
        while match.my_turn:  # no socket open yet: these go over REST
            match.move(match.legal_moves[0])
        before_socket = recorder.moves()
        for _ in match.events(transport="ws"):
            if match.my_turn:
                match.move(match.legal_moves[0])
        assert match.finished and recorder.moves() == before_socket
        moves = my_moves(api, match.id, 0)
    assert served() == {"ws": moves - before_socket, "rest": before_socket}


def test_a_move_with_wait_over_the_socket_answers_at_the_seats_turn_with_what_happened_in_between(
        ws_stack: Stack) -> None:
    recorder, served = Recorder(ws_stack.url), MoveCount(ws_stack.url)
    with Client(ws_stack.url, http=recorder.http) as api:
        match = api.create_match("clash", 2, options=SINGLE, seats=VS_BOT, seed=43)
        bot_moves, moves = 0, 0
        with match.socket():
            match.wait_turn(timeout=60)
            while not match.finished:
                assert match.my_turn  # a move with wait answers at the seat's turn or at the end
                before = match.version
                match.move(match.legal_moves[0], wait=30)
                moves += 1
                events = match.doc["events"]
                versions = [e["version"] for e in events]  # what happened after the move, up to now, once each
                assert versions == sorted(set(versions)) and all(v > before + 1 for v in versions)
                assert not versions or versions[-1] == match.version
                bot_moves += sum(e["kind"] == "move" and e["seat"] == 1 for e in events)
        assert bot_moves > 0 and recorder.moves() == 0 and not recorder.streams()
    assert served() == {"ws": moves, "rest": 0}


def test_a_thread_moving_while_another_reads_the_socket_gets_its_replies_and_no_update_is_lost(
        ws_stack: Stack) -> None:
    recorder, served = Recorder(ws_stack.url), MoveCount(ws_stack.url)
    with Client(ws_stack.url, http=recorder.http) as api:
        match = api.create_match("clash", 2, options=SINGLE, seats=VS_BOT, seed=47)
        start, seen = match.version, []
        reader = follow(match, "ws", seen)  # this Match's own events, in another thread: the socket's one reader
        wait_until(lambda: match.live is not None, "the reading thread's socket")
        play_to_the_end(match)  # wait_turn and move from this thread, over the same socket
        reader.join(60)
        assert not reader.is_alive() and match.finished
        assert seen == list(range(start + 1, match.version + 1))
        moves = my_moves(api, match.id, 0)
    assert moves > 1 and recorder.moves() == 0
    assert served() == {"ws": moves, "rest": 0}


def test_an_async_task_moving_while_another_reads_the_socket_gets_its_replies(ws_stack: Stack) -> None:
    async def play() -> tuple[list[int], int, int, int]:
        async with AsyncClient(ws_stack.url) as api:
            match = await api.create_match("clash", 2, options=SINGLE, seats=VS_BOT, seed=53)
            start, seen = match.version, []

            async def read() -> None:
                async for doc in match.events(transport="ws"):
                    seen.extend(e["version"] for e in doc["events"])

            reader = asyncio.create_task(read())
            while match.live is None:
                await asyncio.sleep(0.01)
            moves = 0
            while not match.finished:
                await match.wait_turn(timeout=60)
                if match.my_turn:
                    await match.move(match.legal_moves[0])
                    moves += 1
            await asyncio.wait_for(reader, 60)
            return seen, start, match.version, moves

    served = MoveCount(ws_stack.url)
    with ThreadPoolExecutor(1) as pool:
        seen, start, final, moves = pool.submit(asyncio.run, play()).result(timeout=180)
    assert seen == list(range(start + 1, final + 1)) and moves > 1
    assert served() == {"ws": moves, "rest": 0}


def test_a_move_goes_over_rest_when_no_socket_is_open(ws_stack: Stack) -> None:
    recorder, served = Recorder(ws_stack.url), MoveCount(ws_stack.url)
    with Client(ws_stack.url, http=recorder.http) as api:
        match = api.create_match("clash", 2, options=SINGLE, seats=VS_BOT, seed=31)
        with match.socket():
            pass  # held, then closed: the moves after it go over REST again
        play_to_the_end(match)
        moves = my_moves(api, match.id, 0)
    assert moves > 1 and recorder.moves() == moves
    assert served() == {"ws": 0, "rest": moves}


def test_the_async_match_moves_over_its_open_socket_and_over_rest_without_one(ws_stack: Stack) -> None:
    async def play(match: AsyncMatch) -> None:
        while not match.finished:
            await match.wait_turn(timeout=60)
            if match.my_turn:
                await match.move(match.legal_moves[0])

    async def both() -> tuple[int, int, int, int]:
        recorder = httpx.AsyncClient(base_url=ws_stack.url)
        paths: list[str] = []

        async def seen(request: httpx.Request) -> None:
            paths.append(request.url.path)

        recorder.event_hooks["request"] = [seen]
        async with AsyncClient(ws_stack.url, http=recorder) as api:
            held = await api.create_match("clash", 2, options=SINGLE, seats=VS_BOT, seed=37)
            async with held.socket():
                await play(held)
            over_socket = sum(p.endswith("/moves") for p in paths)
            bare = await api.create_match("clash", 2, options=SINGLE, seats=VS_BOT, seed=41)
            await play(bare)
            over_rest = sum(p.endswith("/moves") for p in paths) - over_socket
            counted = [sum(e["kind"] == "move" and e["seat"] == 0 for e in (await api.replay(m.id))["log"])
                       for m in (held, bare)]
            return over_socket, counted[0], over_rest, counted[1]

    served = MoveCount(ws_stack.url)
    with ThreadPoolExecutor(1) as pool:
        over_socket, held_moves, over_rest, bare_moves = pool.submit(asyncio.run, both()).result(timeout=180)
    assert over_socket == 0 and held_moves > 1
    assert over_rest == bare_moves > 1
    assert served() == {"ws": held_moves, "rest": bare_moves}


def refusal(match: Match, move: dict[str, Any], door: str) -> tuple[type[ApiError], int, str]:
    """The typed error ``move`` gets through one door (``ws``: with the match's socket held open)."""
    try:
        if door == "ws":
            with match.socket():
                match.move(move)
        else:
            match.move(move)
    except ApiError as err:
        return type(err), err.status, err.code
    raise AssertionError(f"{move} was accepted over {door}")


def test_a_socket_move_raises_the_same_typed_errors_as_the_rest_move(ws_stack: Stack) -> None:
    served = MoveCount(ws_stack.url)
    with Client(ws_stack.url) as api:
        host = api.create_match("clash", 2, options=SINGLE, seats=HUMANS)
        guest = api.join(host.id)
        host.refresh()
        mover = host if host.my_turn else guest
        stale = {door: api.match(mover.id, mover.token) for door in ("rest", "ws")}  # read before the move
        bogus = {door: refusal(api.match(mover.id, mover.token), {"type": "no-such-move"}, door)
                 for door in ("rest", "ws")}
        move = mover.legal_moves[0]
        mover.move(move)
        late = {door: refusal(stale[door], move, door) for door in ("rest", "ws")}
    assert bogus["rest"] == bogus["ws"] and bogus["ws"][1] in (400, 422)
    assert late["rest"] == late["ws"] == (StaleVersion, 409, "stale_version")
    assert served() == {"ws": 2, "rest": 3}  # each door was taken: the refusals, and the move that applied


class Relay:
    """A TCP relay in front of the gateway, for the SDK's socket only: it can swallow what the gateway answers
    (a reply lost on the way) or cut the connection right after the client's next message (a socket dropped
    mid-move). Real sockets both sides; the gateway sees an ordinary client."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit("://", 1)[1].rsplit(":", 1)
        self.target = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.mute, self.cut = threading.Event(), threading.Event()
        self.upstream_chunks = 0
        self.open: list[socket.socket] = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self) -> None:
        with suppress(OSError):
            while True:
                client, _ = self.listener.accept()
                server = socket.create_connection(self.target)
                self.open += [client, server]
                threading.Thread(target=self.pump, args=(client, server, True), daemon=True).start()
                threading.Thread(target=self.pump, args=(server, client, False), daemon=True).start()

    def pump(self, src: socket.socket, dst: socket.socket, upstream: bool) -> None:
        with suppress(OSError):
            while data := src.recv(65536):
                if upstream:
                    dst.sendall(data)
                    self.upstream_chunks += 1
                    if self.cut.is_set():  # what the client sent reaches the gateway; nothing comes back
                        self.cut.clear()
                        break
                elif not self.mute.is_set():
                    dst.sendall(data)
        for end in (src, dst):
            with suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        for sock in (self.listener, *self.open):
            with suppress(OSError):
                sock.close()


def two_humans(api: Client, url: str, timeout: float = 10.0) -> tuple[Client, Match, Recorder]:
    """A client whose socket goes to ``url`` (its HTTP calls go straight to ``api``'s gateway, recorded), and the
    seat to act of a fresh two-human match, resumed through it."""
    host = api.create_match("clash", 2, options=SINGLE, seats=HUMANS)
    guest = api.join(host.id)
    host.refresh()
    mover = host if host.my_turn else guest
    recorder = Recorder(api.base_url)
    player = Client(url, http=recorder.http, timeout=timeout)
    return player, player.match(mover.id, mover.token), recorder


def test_a_socket_move_whose_reply_is_lost_is_sent_again_over_rest_with_its_key_and_applies_once(
        ws_stack: Stack) -> None:
    relay, served = Relay(ws_stack.url), MoveCount(ws_stack.url)
    with Client(ws_stack.url) as api:
        player, match, recorder = two_humans(api, relay.url, timeout=2.0)
        version, move = match.version, match.legal_moves[0]
        try:
            with match.socket():
                wait_until(lambda: relay.upstream_chunks >= 2, "the upgrade and the hello through the relay")
                relay.mute.set()  # the gateway applies the move; its reply never arrives
                match.move(move)
        finally:
            relay.close()
        # after the client's timeout, one REST move under the socket move's key: the first outcome answered again
        # (another key would have been a 409 stale_version: the match had moved on)
        assert recorder.moves() == 1 and match.version == version + 1
        assert my_moves(api, match.id, match.seat or 0) == 1
        player.close()
    assert served() == {"ws": 1, "rest": 1}


def test_a_socket_dropped_mid_move_is_reopened_and_the_move_sent_again_with_its_key_and_applied_once(
        ws_stack: Stack) -> None:
    relay, served = Relay(ws_stack.url), MoveCount(ws_stack.url)
    with Client(ws_stack.url) as api:
        player, match, recorder = two_humans(api, relay.url)
        version, move = match.version, match.legal_moves[0]
        try:
            with match.socket():
                wait_until(lambda: relay.upstream_chunks >= 2, "the upgrade and the hello through the relay")
                relay.cut.set()  # the move reaches the gateway, then the connection drops
                match.move(move)
        finally:
            relay.close()
        assert recorder.moves() == 0 and match.version == version + 1  # reopened: the socket carried it again
        assert my_moves(api, match.id, match.seat or 0) == 1
        player.close()
    assert served() == {"ws": 2, "rest": 0}  # the move, and the same one again on the new socket


def test_a_rate_limited_socket_move_is_sent_again_then_raises_the_rest_moves_typed_error(
        rules: RulesProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    # The resends wait the reply's retry_after (the seconds left in the gateway's minute window), capped: a cap
    # of half a second keeps the window from turning during them (then a resend would go through).
    monkeypatch.setattr(_core, "RETRY_AFTER_CAP_S", 0.5)
    retried: list[tuple[str, type[Exception]]] = []
    with gunicorn_stack(rules.port, MEEPLE_RATE_LIMIT_PER_MINUTE="4") as node, \
            Client(node.url, retries=2, on_retry=lambda name, exc, _delay: retried.append((name, type(exc)))) as api:
        served = MoveCount(node.url)
        match = api.create_match("clash", 2, options=SINGLE, seats=VS_BOT, seed=59)
        with match.socket(), pytest.raises(RateLimited) as over_ws:
            for _ in range(4):  # the seat token's requests a minute (its read, then its moves) run out: a 429 reply
                match.wait_turn(timeout=30)
                match.move(match.legal_moves[0])
        with Client(node.url, retries=0) as no_retry, pytest.raises(RateLimited) as over_rest:
            same_seat = Match(no_retry, match.id, match.token)
            same_seat.update(match.doc)  # as read: no request before the move
            same_seat.move(match.legal_moves[0])
        sent = served()
    assert (over_ws.value.status, over_ws.value.code) == (over_rest.value.status, over_rest.value.code) == \
        (429, "rate_limited")
    assert retried == [("move", RateLimited)] * 2  # sent again twice (the same message, the same key), then raised
    assert sent == {"ws": 3 + 1 + 2, "rest": 1}  # 3 moves, the 4th and its 2 resends; the REST move


def test_the_python_example_plays_over_the_socket_where_the_gateway_holds_one(ws_stack: Stack) -> None:
    served = MoveCount(ws_stack.url)
    run = subprocess.run([sys.executable, str(ROOT / "clients" / "python" / "examples" / "play_vs_bot.py"),
                          ws_stack.url, "--level", "easy", "--seed", "3"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    played = re.search(r"finished after (\d+) of your moves", run.stdout)
    assert played and int(played[1]) > 1
    assert served() == {"ws": int(played[1]), "rest": 0}
