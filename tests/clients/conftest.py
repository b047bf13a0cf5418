"""A whole stack for client tests: real redis-server, real gRPC rules server, the gateway over HTTP and a
bot worker, all on loopback, gone afterwards. Clients (the SDK, ``meeple-play``, Chromium) only see HTTP.

Two gateways: ``plain_stack`` (alias ``stack``) is the app under werkzeug's threaded server (no WebSocket:
``/ws`` answers 501, so ``transport="auto"`` must fall back), ``ws_stack`` is the deployed shape, gunicorn with
the gateway's worker, which holds WebSockets."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from tests.gateway.conftest import (  # noqa: F401  (rules: a fixture)
    RulesProcess,
    bot_worker_thread,
    gunicorn_gateway,
    redis_server,
    rules,
    start_gateway,
)


@dataclass
class Stack:
    url: str
    redis_url: str
    #: the gunicorn master of a ``ws_stack`` (its worker may be killed to drop every connection)
    proc: subprocess.Popen[bytes] | None = None


@contextmanager
def gunicorn_stack(rules_port: int, **settings: str) -> Iterator[Stack]:
    """Redis, the gateway under gunicorn (one worker) and a bot worker; the limits the werkzeug stack lifts.
    ``settings``: environment variables that differ (e.g. ``MEEPLE_BOT_FILL_S``)."""
    with redis_server() as redis_url, \
            gunicorn_gateway(redis_url, rules_port, **{"MEEPLE_BOT_FILL_S": "1", **settings}) as node, \
            bot_worker_thread(redis_url, rules_port, "clients-worker"):
        yield Stack(node.url, redis_url, node.proc)


@pytest.fixture(scope="session")
def plain_stack(rules: RulesProcess) -> Iterator[Stack]:  # noqa: F811  (the imported fixture)
    with redis_server() as redis_url:
        # like `make run`: webhook URLs on loopback (or not resolvable) are accepted (the SSRF guard is off)
        # (and a revoked key is refused at once: no key cache, MEEPLE_KEY_CACHE_S=0)
        gw = start_gateway(redis_url, rules.port, bot_fill_s=1, webhook_allow_private=("all",), key_cache_s=0.0)
        try:
            with bot_worker_thread(redis_url, rules.port, "clients-worker"):
                yield Stack(gw.url, redis_url)
        finally:
            gw.stop()


@pytest.fixture(scope="session")
def stack(plain_stack: Stack) -> Stack:
    """The werkzeug stack (tests/browser overrides this name with ``ws_stack``)."""
    return plain_stack


@pytest.fixture(scope="session")
def ws_stack(rules: RulesProcess) -> Iterator[Stack]:  # noqa: F811
    with gunicorn_stack(rules.port) as stack:
        yield stack
