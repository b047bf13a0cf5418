"""The contract's limits and documented defaults are the ones the processes enforce.

Until the gateway's views import ``services.contract.limits`` (phase 2 of the refactor), the gateway keeps
constants of its own; these tests hold them equal, so the document never states a limit the server does not
apply. They go once the gateway's copies are gone.
"""

from __future__ import annotations

import argparse
import os
from unittest import mock

from services.contract import limits as L


def test_the_gateways_own_constants_are_the_contracts() -> None:
    from services.gateway import clocks, webhooks
    from services.gateway.api import backends, common, events, matches, matchmaking

    assert common.MAX_JSON_DEPTH == L.MAX_JSON_DEPTH
    assert (matches.BOT_LEVELS, matches.MAX_PLAYERS, matches.IDEMPOTENCY_KEY_MAX) == (
        L.BOT_LEVELS, L.MAX_PLAYERS, L.IDEMPOTENCY_KEY_MAX)
    assert (backends.PAGE_MAX, backends.PAGE_DEFAULT) == (L.PAGE_MAX, L.PAGE_DEFAULT)
    assert (webhooks.EVENTS, webhooks.MAX_HOOKS, webhooks.MAX_URL, webhooks.DEAD_KEEP) == (
        L.WEBHOOK_EVENTS, L.MAX_HOOKS, L.MAX_URL, L.DEAD_LETTERS_KEEP)
    assert (clocks.MODES, clocks.TIMEOUT_POLICIES, clocks.MIN_SECONDS, clocks.MAX_SECONDS) == (
        L.CLOCK_MODES, L.TIMEOUT_POLICIES, L.CLOCK_MIN_S, L.CLOCK_MAX_S)
    assert events.UNTIL == L.UNTIL and events.HEARTBEAT_S == L.HEARTBEAT_S
    assert matchmaking.TICKET_TTL_S == L.TICKET_TTL_S


def test_each_documented_gateway_default_is_the_configs() -> None:
    from services.gateway.config import ENV, GatewayConfig

    defaults = GatewayConfig()
    by_env = {env: getattr(defaults, name) for name, env in ENV.items()}
    by_env["MEEPLE_IDLE_MATCH_TTL"] = defaults.idle_match_ttl_s
    for setting in L.SETTINGS:
        if setting.process != "gateway":
            continue
        value = by_env[setting.env]
        assert float(value) == float(setting.default), setting.env
    assert defaults.max_body_bytes == L.MAX_BODY_BYTES and defaults.long_poll_max_s == L.LONG_POLL_MAX_S


def test_each_documented_webhook_worker_default_is_the_workers() -> None:
    from services.webhooks import worker

    parser = argparse.ArgumentParser()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MEEPLE_WEBHOOKS_")}
    with mock.patch.dict(os.environ, clean, clear=True):
        worker.add_arguments(parser)
    defaults = vars(parser.parse_args([]))
    for setting in L.SETTINGS:
        if setting.process == "webhooks":
            flag = setting.env.removeprefix("MEEPLE_WEBHOOKS_").lower()
            assert float(defaults[flag]) == float(setting.default), setting.env
