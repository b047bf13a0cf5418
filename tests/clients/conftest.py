"""A whole stack for client tests: real redis-server, real gRPC rules server, the gateway over HTTP and a
bot worker, all on loopback, gone afterwards. Clients (the SDK, ``meeple-play``, Chromium) only see HTTP."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from services.bots.worker import Worker
from tests.gateway.conftest import RulesProcess, redis_server, rules, start_gateway  # noqa: F401  (rules: a fixture)


@dataclass
class Stack:
    url: str
    redis_url: str


@pytest.fixture(scope="session")
def stack(rules: RulesProcess) -> Iterator[Stack]:  # noqa: F811  (the imported fixture)
    with redis_server() as redis_url:
        # like `make run`: webhook URLs on loopback (or not resolvable) are accepted (the SSRF guard is off)
        gw = start_gateway(redis_url, rules.port, bot_fill_s=1, webhook_allow_private=("all",))
        bot = Worker(redis_url, f"127.0.0.1:{rules.port}", name="clients-worker", claim_idle_ms=60_000)
        thread = threading.Thread(target=bot.run, daemon=True)
        thread.start()
        try:
            yield Stack(gw.url, redis_url)
        finally:
            bot.stopping.set()
            thread.join(10)
            gw.stop()

