"""The contract's limits and documented defaults are the ones the processes enforce.

The gateway reads its own limits from ``services.contract.limits`` (the body nesting bound, the Idempotency-Key's
length, the heartbeat, the WebSocket hello's delay). The match core does not import the HTTP contract, so its
constants, and the defaults of the settings, are held equal to the contract's here: the document never states a
limit the server does not apply.
"""

from __future__ import annotations

import argparse
import os
from unittest import mock

from services.contract import limits as L


def test_the_cores_own_constants_are_the_contracts() -> None:
    from services.core import backends, clocks, control, history, idempotency, matches, matchmaker, webhooks

    assert (matches.BOT_LEVELS, matches.MAX_PLAYERS, matches.MAX_ID) == (L.BOT_LEVELS, L.MAX_PLAYERS, L.ID_MAX)
    assert control.DEFAULT_TAKEOVER_LEVEL == L.DEFAULT_TAKEOVER_LEVEL
    assert (backends.PAGE_MAX, backends.PAGE_DEFAULT, history.KEEP) == (L.PAGE_MAX, L.PAGE_DEFAULT, L.HISTORY_KEEP)
    assert (webhooks.EVENTS, webhooks.MAX_HOOKS, webhooks.MAX_URL, webhooks.DEAD_KEEP) == (
        L.WEBHOOK_EVENTS, L.MAX_HOOKS, L.MAX_URL, L.DEAD_LETTERS_KEEP)
    assert (clocks.MODES, clocks.TIMEOUT_POLICIES, clocks.MIN_SECONDS, clocks.MAX_SECONDS) == (
        L.CLOCK_MODES, L.TIMEOUT_POLICIES, L.CLOCK_MIN_S, L.CLOCK_MAX_S)
    assert matchmaker.TICKET_TTL_S == L.TICKET_TTL_S and idempotency.TTL_S == L.IDEMPOTENCY_TTL_S


def test_the_gateway_reads_its_limits_from_the_contract() -> None:
    from services.gateway.api import events, ws

    assert events.HEARTBEAT_S is L.HEARTBEAT_S and ws.HELLO_S == L.WS_HELLO_S


def test_each_documented_gateway_default_is_the_configs() -> None:
    from services.core.config import ENV, Config

    defaults = Config()
    by_env = {env: getattr(defaults, name) for name, env in ENV.items()}
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
