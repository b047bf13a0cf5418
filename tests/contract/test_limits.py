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
    from services.core import backends
    from services.core.match import clocks, history, idempotency, matchmaker, seating
    from services.core.record import control
    from services.core.tenancy import tenants, webhooks

    assert (seating.BOT_LEVELS, seating.MAX_PLAYERS, seating.MAX_ID) == (L.BOT_LEVELS, L.MAX_PLAYERS, L.ID_MAX)
    assert control.DEFAULT_TAKEOVER_LEVEL == L.DEFAULT_TAKEOVER_LEVEL
    assert (backends.PAGE_MAX, backends.PAGE_DEFAULT, history.KEEP) == (L.PAGE_MAX, L.PAGE_DEFAULT, L.HISTORY_KEEP)
    assert (webhooks.EVENTS, webhooks.MAX_HOOKS, webhooks.MAX_URL, webhooks.DEAD_KEEP) == (
        L.WEBHOOK_EVENTS, L.MAX_HOOKS, L.MAX_URL, L.DEAD_LETTERS_KEEP)
    assert (clocks.MODES, clocks.TIMEOUT_POLICIES, clocks.MIN_SECONDS, clocks.MAX_SECONDS) == (
        L.CLOCK_MODES, L.TIMEOUT_POLICIES, L.CLOCK_MIN_S, L.CLOCK_MAX_S)
    assert matchmaker.TICKET_TTL_S == L.TICKET_TTL_S and idempotency.TTL_S == L.IDEMPOTENCY_TTL_S
    assert matchmaker.NAME_MAX == L.PARTY_NAME_MAX
    from services.core import watch_links, watching
    from services.core.competition import due

    assert (watch_links.TTL_MIN_S, watch_links.TTL_MAX_S, watch_links.TTL_DEFAULT_S) == (
        L.WATCH_TTL_MIN_S, L.WATCH_TTL_MAX_S, L.WATCH_TTL_DEFAULT_S)
    assert watching.TOURNAMENT_TAG == due.TAG_PREFIX  # what a tournament's watch token recognises its matches by
    cache_s, stale_s = float(L.default("MEEPLE_KEY_CACHE_S")), float(L.default("MEEPLE_KEY_STALE_S"))
    assert (cache_s, stale_s) == (tenants.KEY_CACHE_S, tenants.KEY_STALE_S)


def test_the_leaderboards_and_tournaments_limits_are_the_contracts() -> None:
    """What the core's leaderboards and tournaments refuse is what the document says (tested in the core)."""
    from services.core import competitions
    from services.core.competition import leaderboards
    from services.core.tournaments import machine

    assert (leaderboards.MAX_LIMIT, leaderboards.MAX_OFFSET, leaderboards.MAX_SPAN, leaderboards.MAX_SEASONS) == (
        L.BOARD_LIMIT_MAX, L.BOARD_OFFSET_MAX, L.BOARD_SPAN_MAX, L.SEASONS_MAX)
    assert leaderboards.MAX_MIN_MATCHES == L.MIN_MATCHES_MAX
    assert leaderboards.SEASON_RE.pattern == L.SEASON_NAME_PATTERN and L.SEASON_NAME_MAX == 32
    assert (competitions.PAGE_MAX, competitions.PAGE_DEFAULT) == (L.PAGE_MAX, L.PAGE_DEFAULT)
    assert (machine.SEATS, machine.MAX_ROUNDS, machine.MAX_PLAYERS) == (
        L.TOURNAMENT_TABLE, L.TOURNAMENT_ROUNDS_MAX, L.TOURNAMENT_PLAYERS_MAX)
    assert {
        "name": L.TOURNAMENT_NAME_MAX, "round_s": (*L.TOURNAMENT_ROUND_S, L.TOURNAMENT_ROUND_S_DEFAULT),
        "duration_s": L.TOURNAMENT_DURATION_S, "grace_s": (0.0, L.TOURNAMENT_GRACE_S_MAX, L.TOURNAMENT_GRACE_S_DEFAULT),
        "bot_after_s": (0.0, L.TOURNAMENT_BOT_AFTER_S_MAX, L.TOURNAMENT_BOT_AFTER_S_DEFAULT),
        "max_players": (2, L.TOURNAMENT_PLAYERS_MAX, L.TOURNAMENT_PLAYERS_DEFAULT),
        "starts_at": (L.TOURNAMENT_STARTS_PAST_S, L.TOURNAMENT_STARTS_AHEAD_S)} == machine.LIMITS


def test_the_gateway_reads_its_limits_from_the_contract() -> None:
    from services.gateway.api import events, ws

    assert events.HEARTBEAT_S is L.HEARTBEAT_S and ws.HELLO_S == L.WS_HELLO_S


def test_the_chat_limits_are_the_contracts() -> None:
    from services.core.config import Config
    from services.core.match import chat

    defaults = Config()
    assert chat.TEXT_MAX == L.CHAT_TEXT_MAX
    assert (defaults.chat_rate, defaults.chat_rate_window_s, defaults.chat_max_messages,
            defaults.chat_after_finish_s) == (L.CHAT_RATE, L.CHAT_RATE_WINDOW_S, L.CHAT_MAX_MESSAGES,
                                              L.CHAT_AFTER_FINISH_S)


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


def _unbounded_ints(t: object, path: str, seen: frozenset[type] = frozenset()) -> list[str]:
    import msgspec.inspect as mi

    if isinstance(t, mi.Metadata):
        bound = (t.extra_json_schema or {}).get("maximum") is not None
        return [] if bound and isinstance(t.type, mi.IntType) else _unbounded_ints(t.type, path, seen)
    if isinstance(t, mi.IntType):
        return [path] if t.le is None and t.lt is None else []
    if isinstance(t, mi.UnionType):
        return [p for x in t.types for p in _unbounded_ints(x, path, seen)]
    if isinstance(t, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType):
        return _unbounded_ints(t.item_type, path + "[]", seen)
    if isinstance(t, mi.DictType):
        return _unbounded_ints(t.value_type, path + "{}", seen)
    if isinstance(t, mi.StructType) and t.cls not in seen:
        return [p for f in t.fields for p in _unbounded_ints(f.type, f"{path}.{f.name}", seen | {t.cls})]
    return []


def test_every_integer_a_request_body_or_query_takes_has_an_upper_bound() -> None:
    """An integer without one reached orjson (the idempotency fingerprint, the store), which stops at 64 bits: a
    seat of 2**72 in a join with an Idempotency-Key was a 500. Path integers are werkzeug's ``int`` converter's
    and only compared (a seat past the match's is 403 ``not_your_seat``); a ``wait`` states its maximum in the
    schema and the view checks it against the operator's setting."""
    import msgspec.inspect as mi

    from services.contract import models as m

    found = []
    for name in dir(m):
        model = getattr(m, name)
        requested = isinstance(model, type) and issubclass(model, m.Request | m.Params)
        if requested and model not in (m.Request, m.Params) and not name.endswith("Path"):
            found += _unbounded_ints(mi.type_info(model), name)
    assert found == []
