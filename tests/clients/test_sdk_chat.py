"""The Python SDK's chat against a real gateway: ``match.chat`` over REST and over the open socket (no HTTP
request), what every transport hears (long-poll, SSE, WebSocket) kept in ``match.chat_messages`` and passed to
``on_chat``, redactions applied, and the async client the same."""

from __future__ import annotations

import threading

from meeple_client import AsyncClient, ChatMessage, Client, Forbidden, RateLimited

from .conftest import Stack
from .test_sdk_backends import run_async
from .test_sdk_ws import Recorder

HUMANS = [{"kind": "human"}, {"kind": "human"}]
VS_BOT = [{"kind": "human"}, {"kind": "bot", "level": "easy"}]


def test_chat_goes_over_the_open_socket_and_each_seat_hears_the_other_on_socket_and_long_poll(ws_stack: Stack) -> None:
    recorder = Recorder(ws_stack.url)
    with Client(ws_stack.url) as api, Client(ws_stack.url, http=recorder.http) as other:
        first = api.create_match("clash", 2, seats=HUMANS, seed=3)
        second = other.join(first.id)
        said = first.chat("good luck")  # REST: no socket open
        assert said["seat"] == 0 and first.chat_messages == [said]
        with second.socket():
            assert second.wait_chat(timeout=20) == [said]  # chat_after=0 in the hello: the past one first
            before = len(recorder.paths)
            reply = second.chat(preset="gg")  # over the socket
            assert reply["seat"] == 1 and reply["text"] == "Good game" and recorder.paths[before:] == []
        assert first.wait_chat(timeout=20) == [reply]  # a long-poll with chat_after=1 answers with it
        assert [m["id"] for m in first.chat_messages] == [m["id"] for m in second.chat_messages] == [1, 2]


def test_a_spectator_follows_chat_over_sse_with_on_chat_and_sees_a_redaction(stack: Stack) -> None:
    with Client(stack.url) as api, Client(stack.url) as watching:
        host = api.create_match("clash", 2, seats=VS_BOT, options={"match": "single"}, spectator_chat=True)
        watcher = watching.match(host.id)
        heard: list[ChatMessage] = []
        watcher.on_chat = heard.append
        cheer = watcher.chat("go seat 0!")  # a spectator speaks: the match has spectator chat
        assert cheer["seat"] is None
        host.chat("thanks")
        thread = threading.Thread(target=lambda: list(watcher.events(transport="sse")), daemon=True)
        thread.start()
        host.resign()  # the match ends: the stream ends
        thread.join(60)
        assert not thread.is_alive()
        assert [m["text"] for m in watcher.chat_messages] == ["go seat 0!", "thanks"]
        assert [m["id"] for m in heard] == [1, 2]  # the stream sent the one the watcher did not post itself
        watcher.hear_redaction(2)  # as a chat_redacted event folds in
        assert watcher.chat_messages[1]["redacted"] and watcher.chat_messages[1]["text"] is None


def test_chat_errors_come_back_typed(stack: Stack) -> None:
    with Client(stack.url, retries=0) as api, Client(stack.url) as watching:  # (no retry after the 429)
        host = api.create_match("clash", 2, seats=VS_BOT, options={"match": "single"})
        try:
            watching.match(host.id).chat("may I?")
            raise AssertionError("a spectator spoke in a match without spectator chat")
        except Forbidden as err:
            assert err.code == "chat_spectators_off"
        for n in range(5):
            host.chat(f"{n}")
        try:
            host.chat("flood")
            raise AssertionError("the sixth message in 10 s went through")
        except RateLimited as err:
            assert err.code == "chat_rate_limited" and err.retry_after > 0


def test_the_async_client_chats_over_its_socket(ws_stack: Stack) -> None:
    async def run() -> None:
        async with AsyncClient(ws_stack.url) as api, AsyncClient(ws_stack.url) as other:
            first = await api.create_match("clash", 2, seats=HUMANS, seed=4)
            second = await other.join(first.id)
            async with second.socket():
                said = await first.chat("hello")
                assert await second.wait_chat(timeout=20) == [said]
                answer = await second.chat("hi")
            assert await first.wait_chat(timeout=20) == [answer]

    run_async(run())  # on a thread of its own: a browser test may leave an event loop running on this one
