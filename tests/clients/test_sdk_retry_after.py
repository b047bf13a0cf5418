"""The SDK waits what the server says before trying a 429 or a 503 again (``Retry-After`` over REST, a socket
reply's ``retry_after``), not its own backoff: checked on the delay ``on_retry`` reports, against a real gateway
refusing for real (its waiters cap full, its rules service down), the server's value read on the wire beside."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

import httpx
import pytest
from meeple_client import (
    ApiError,
    AsyncClient,
    BadRequest,
    Client,
    RateLimited,
    TransportError,
    Unavailable,
    _core,
)
from meeple_client._core import prepare, reply_error, retry_or_raise, retry_reply
from meeple_client.errors import error_for

from tests.gateway.conftest import RulesProcess
from tooling.ports import free_port

from .conftest import Stack, gunicorn_stack

T = TypeVar("T")


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on a thread of its own: a browser test in the same worker may have left an event loop running
    on this one (as the other async SDK tests do)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result(timeout=120)

VS_BOT = [{"kind": "human"}, {"kind": "bot", "level": "easy"}]
#: A match that stays at its version (its second seat never joins): a long-poll after it waits.
STILL = [{"kind": "human"}, {"kind": "human"}]
SINGLE = {"match": "single"}
BUSY = {"error": {"code": "too_many_waiters", "message": "busy"}}

Retried = list[tuple[str, str, float]]


def recorder(into: Retried) -> Any:
    """An ``on_retry`` hook keeping (call, error code, the delay the SDK is about to wait)."""
    return lambda name, exc, delay: into.append((name, getattr(exc, "code", type(exc).__name__), delay))


# -- the rule, on the SDK's own functions ---------------------------------------------------------------------------

def test_a_503_with_retry_after_is_retried_after_the_servers_seconds_not_the_backoff() -> None:
    exc = error_for(503, BUSY, {"retry-after": "3"})
    assert isinstance(exc, Unavailable) and exc.retry_after == 3.0
    assert retry_or_raise(prepare("games"), exc, iter([0.1])) == 3.0
    assert retry_reply(exc, iter([0.1])) == 3.0


def test_a_503_without_retry_after_keeps_the_backoff_and_says_none() -> None:
    exc = error_for(503, BUSY, {})
    assert isinstance(exc, Unavailable) and exc.retry_after is None
    assert retry_or_raise(prepare("games"), exc, iter([0.123])) == 0.123
    assert retry_reply(exc, iter([0.123])) == 0.123


def test_a_429_keeps_its_retry_after_of_one_second_when_the_server_sent_none() -> None:
    exc = error_for(429, {"error": {"code": "rate_limited", "message": "slow down"}})
    assert isinstance(exc, RateLimited) and exc.retry_after == 1.0
    assert retry_or_raise(prepare("games"), exc, iter([0.1])) == 1.0
    assert retry_or_raise(prepare("games"), error_for(429, {}, {"Retry-After": "7"}), iter([0.1])) == 7.0


def test_the_servers_wait_is_capped_at_ten_seconds_and_an_http_date_is_read_too() -> None:
    assert retry_or_raise(prepare("games"), error_for(503, BUSY, {"retry-after": "60"}), iter([0.1])) == 10.0
    dated = error_for(503, BUSY, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})  # long past: at once
    assert dated.retry_after == 0.0
    assert error_for(503, BUSY, {"retry-after": "soon"}).retry_after is None


def test_every_api_error_carries_the_retry_after_it_came_with() -> None:
    refused = error_for(400, {"error": {"code": "bad_parameter", "message": "no"}}, {"retry-after": "4"})
    assert isinstance(refused, BadRequest) and refused.retry_after == 4.0
    assert ApiError(418, "teapot", "short and stout").retry_after is None
    with pytest.raises(BadRequest):  # carrying one does not make a 400 retryable
        retry_or_raise(prepare("games"), refused, iter([0.1]))


def test_a_socket_replys_retry_after_is_the_errors_as_the_rest_header_would_be() -> None:
    reply = {"type": "reply", "id": "m", "status": 503, "retry_after": 2,
             "body": {"error": {"code": "rules_unavailable", "message": "down"}}}
    exc = reply_error(reply)
    assert isinstance(exc, Unavailable) and exc.retry_after == 2.0
    assert retry_reply(exc, iter([0.1])) == 2.0
    limited = reply_error({"status": 429, "retry_after": 37, "body": {"error": {"code": "rate_limited"}}})
    assert isinstance(limited, RateLimited) and limited.retry_after == 37.0
    assert retry_reply(limited, iter([0.1])) == 10.0


def test_a_socket_opened_again_waits_the_refusals_retry_after() -> None:
    assert _core.reconnect_wait(error_for(503, BUSY, {"retry-after": "2"}), 1, 4) == 2.0
    assert 0 < _core.reconnect_wait(ConnectionError("dropped"), 1, 4) <= 0.3
    with pytest.raises(TransportError):  # past the retries it gives up, whatever the server asked
        _core.reconnect_wait(error_for(503, BUSY, {"retry-after": "2"}), 5, 4)


# -- against a gateway whose one waiting request is taken: 503 too_many_waiters, Retry-After 2 ------------------------

@pytest.fixture(scope="module")
def one_waiter(rules: RulesProcess) -> Iterator[Stack]:
    with gunicorn_stack(rules.port, MEEPLE_WAITERS_MAX="1") as stack:
        yield stack


@contextmanager
def the_only_waiter_taken(url: str, match_id: str) -> Iterator[float]:
    """Hold the gateway's one waiting request (a spectator's event stream); yields the Retry-After the gateway
    then sends with its 503 to the next waiting request (read on the wire, beside the SDK)."""
    with httpx.Client(base_url=url, timeout=30) as http, \
            http.stream("GET", f"/v1/matches/{match_id}/events/stream") as held:
        assert held.status_code == 200
        refused = http.get(f"/v1/matches/{match_id}/events", params={"wait": 1})
        assert (refused.status_code, refused.json()["error"]["code"]) == (503, "too_many_waiters")
        yield float(refused.headers["Retry-After"])


def test_a_long_poll_refused_503_too_many_waiters_is_retried_after_the_servers_retry_after(one_waiter: Stack) -> None:
    retried: Retried = []
    with Client(one_waiter.url, retries=1, on_retry=recorder(retried)) as api:
        match = api.create_match("clash", 2, options=SINGLE, seats=STILL)
        with the_only_waiter_taken(one_waiter.url, match.id) as server_says, pytest.raises(Unavailable) as gave_up:
            match.poll(wait=1)
    assert server_says > 0.3  # (what the backoff's first delays never reach: the test tells them apart)
    assert retried == [("events", "too_many_waiters", server_says)]
    assert (gave_up.value.code, gave_up.value.retry_after) == ("too_many_waiters", server_says)


def async_while_full(url: str, act: Callable[[Any], Awaitable[None]],
                     refused: type[Exception]) -> tuple[Retried, float]:
    """``act`` on a new match through the async client (retries=1) while the gateway's one waiter is taken, which
    must end in ``refused``; (what on_retry heard, the Retry-After the gateway sent)."""
    retried: Retried = []

    async def run() -> float:
        async with AsyncClient(url, retries=1, on_retry=recorder(retried)) as api:
            match = await api.create_match("clash", 2, options=SINGLE, seats=STILL)
            with the_only_waiter_taken(url, match.id) as server_says, pytest.raises(refused):
                await act(match)
            return server_says

    return retried, run_async(run())


def test_the_async_client_waits_the_servers_retry_after_too(one_waiter: Stack) -> None:
    async def poll(match: Any) -> None:
        await match.poll(wait=1)

    retried, server_says = async_while_full(one_waiter.url, poll, Unavailable)
    assert retried == [("events", "too_many_waiters", server_says)]


def test_a_socket_whose_upgrade_is_refused_503_is_opened_again_after_the_servers_retry_after(
        one_waiter: Stack) -> None:
    retried: Retried = []
    with Client(one_waiter.url, retries=1, on_retry=recorder(retried)) as api:
        match = api.create_match("clash", 2, options=SINGLE, seats=STILL)
        with the_only_waiter_taken(one_waiter.url, match.id) as server_says, pytest.raises(TransportError), \
                match.socket():
            pass
    assert retried == [("ws", "too_many_waiters", server_says)]  # once (retries=1), then it gave up


def test_the_async_socket_is_opened_again_after_the_servers_retry_after(one_waiter: Stack) -> None:
    async def open_socket(match: Any) -> None:
        async with match.socket():
            pass

    retried, server_says = async_while_full(one_waiter.url, open_socket, TransportError)
    assert retried == [("ws", "too_many_waiters", server_says)]


# -- a socket move while the rules service is down: a 503 rules_unavailable reply with retry_after 1 ----------------

@pytest.fixture()
def rules_of_its_own() -> Iterator[RulesProcess]:
    """A rules service this test may stop (the session's one serves every other test)."""
    proc = RulesProcess(free_port())
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


def rest_move_refused(url: str, match: Any) -> float:
    """A REST move of the same seat now: its 503's Retry-After header (what the socket's reply carries)."""
    answer = httpx.post(f"{url}/v1/matches/{match.id}/moves", headers={"Authorization": f"Bearer {match.token}"},
                        json={"move": match.legal_moves[0], "version": match.version}, timeout=30)
    assert (answer.status_code, answer.json()["error"]["code"]) == (503, "rules_unavailable")
    return float(answer.headers["Retry-After"])


def test_a_socket_move_answered_503_is_sent_again_after_the_replys_retry_after(
        rules_of_its_own: RulesProcess) -> None:
    retried: Retried = []
    with gunicorn_stack(rules_of_its_own.port, MEEPLE_RULES_RETRIES="0") as node, \
            Client(node.url, retries=1, on_retry=recorder(retried)) as api:
        match = api.create_match("clash", 2, options=SINGLE, seats=VS_BOT, seed=59)
        with match.socket():
            match.wait_turn(timeout=30)
            version = match.version
            rules_of_its_own.stop()
            server_says = rest_move_refused(node.url, match)
            with pytest.raises(Unavailable) as gave_up:
                match.move(match.legal_moves[0])
    assert server_says > 0.3
    assert retried == [("move", "rules_unavailable", server_says)]  # the reply's wait, then once more and gave up
    assert gave_up.value.retry_after == server_says and match.version == version


def test_an_async_socket_move_answered_503_is_sent_again_after_the_replys_retry_after(
        rules_of_its_own: RulesProcess) -> None:
    retried: Retried = []

    async def move_while_down(url: str) -> float:
        async with AsyncClient(url, retries=1, on_retry=recorder(retried)) as api:
            match = await api.create_match("clash", 2, options=SINGLE, seats=VS_BOT, seed=59)
            async with match.socket():
                await match.wait_turn(timeout=30)
                rules_of_its_own.stop()
                server_says = rest_move_refused(url, match)
                with pytest.raises(Unavailable):
                    await match.move(match.legal_moves[0])
            return server_says

    with gunicorn_stack(rules_of_its_own.port, MEEPLE_RULES_RETRIES="0") as node:
        server_says = run_async(move_while_down(node.url))
    assert retried == [("move", "rules_unavailable", server_says)]
