"""Prometheus metrics of the gateway (and of the bot workers, which share its store and Redis client).

Under gunicorn every worker is its own process. prometheus-client's multiprocess mode keeps each metric's
values in files under ``PROMETHEUS_MULTIPROC_DIR`` so that ``/metrics``, whichever worker serves it, adds up
every worker. That only works if the variable is set before ``prometheus_client`` is first imported:
:func:`check_multiprocess` refuses to start half-configured (each worker would then report only itself).

Match counts are global facts, not per-process ones, so they are read from Redis at scrape time
(:class:`MatchStatsCollector`) from counters the store keeps on every status change.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import redis
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, values
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from services.redisconn import TimedRedisCluster, connect_as

from .store import MATCH_STATS_KEYS

#: Request latencies: fine steps around the targets (p50 15 ms, p99 100 ms) so percentiles interpolate well.
LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15,
                   0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: Redis commands take tens to hundreds of microseconds on a healthy link; blocking reads take seconds.
REDIS_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0)
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def multiprocess_enabled() -> bool:
    return bool(os.environ.get(MULTIPROC_ENV))


def check_multiprocess() -> None:
    """Fail loudly if ``PROMETHEUS_MULTIPROC_DIR`` is set but prometheus-client did not see it in time."""
    if multiprocess_enabled() and values.ValueClass is values.MutexValue:
        raise RuntimeError(f"{MULTIPROC_ENV} was set after prometheus_client was imported: metrics would not "
                           "add up across gunicorn workers; set it in the environment before the process starts")


class RedisMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.latency = Histogram("meeple_redis_command_seconds",
                                 "Redis round trips by command (a pipeline counts once, as PIPELINE)",
                                 ["command"], buckets=REDIS_BUCKETS, registry=registry)


class GatewayMetrics:
    """Every metric of one gateway process (values shared through files under gunicorn)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.latency = Histogram("meeple_gateway_request_seconds", "Gateway request latency by route and status",
                                 ["route", "method", "status"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.moves = Counter("meeple_gateway_moves_total",
                             "Moves submitted over HTTP, by game and outcome (applied, or the error code)",
                             ["game", "outcome"], registry=self.registry)
        self.in_flight = Gauge("meeple_gateway_requests_in_flight", "Requests being served",
                               registry=self.registry, multiprocess_mode="livesum")
        self.events_waiting = Gauge("meeple_gateway_events_waiting",
                                    "Long-polls and event streams waiting for a match or a matchmaking ticket",
                                    registry=self.registry, multiprocess_mode="livesum")
        self.waiters = Gauge("meeple_gateway_waiters", "Parked waiters by kind (poll, sse, ws, ticket)",
                             ["kind"], registry=self.registry, multiprocess_mode="livesum")
        self.waiters_refused = Counter("meeple_gateway_waiters_refused_total",
                                       "Waiting requests refused by the caps, by kind and cap (process, client)",
                                       ["kind", "cap"], registry=self.registry)
        self.wakeups = Counter("meeple_gateway_wakeups_total", "Waiters woken by the event reader",
                               registry=self.registry)
        self.delivery = Histogram("meeple_gateway_event_delivery_seconds",
                                  "From the event reader seeing a change to the waiter's answer being written",
                                  ["kind"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.redis = RedisMetrics(self.registry)
        r = self.registry
        self.takeovers = Counter("meeple_seat_takeovers_total", "Human seats handed to a bot, by reason",
                                 ["reason"], registry=r)
        self.reclaims = Counter("meeple_seat_reclaims_total", "Seats taken back by their owner from a bot",
                                registry=r)
        self.seats_filled = Counter("meeple_seats_filled_total",
                                    "Seats of matches that started, by who filled them (the seat-fill ratio is "
                                    "human / (human + bot))", ["filled_by"], registry=r)
        # Tenants are made by an operator (``meeple keys create``), so the label's values stay few.
        self.tenant_requests = Counter("meeple_tenant_requests_total",
                                       "Requests made with a tenant's API key, by tenant and status",
                                       ["tenant", "status"], registry=r)
        self.tenant_limited = Counter("meeple_tenant_limited_total",
                                      "A tenant's requests refused by a rate limit or quota, by tenant and error code",
                                      ["tenant", "code"], registry=r)


class TimedPipeline(redis.client.Pipeline):
    """A pipeline whose ``execute`` is one observation (one round trip) of ``PIPELINE``."""

    histogram: Histogram | None = None

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        start = time.perf_counter()
        try:
            return super().execute(raise_on_error)
        finally:
            if self.histogram is not None:
                self.histogram.labels("PIPELINE").observe(time.perf_counter() - start)


class TimedRedis(redis.Redis):
    """A Redis client that times every command into ``histogram`` (labelled by command name).

    Blocking reads (``XREAD``/``XREADGROUP`` with ``BLOCK``) are timed too and keep their own label, so
    dashboards can leave them out of round-trip latencies.
    """

    histogram: Histogram | None = None

    def execute_command(self, *args: Any, **options: Any) -> Any:
        start = time.perf_counter()
        try:
            return super().execute_command(*args, **options)
        finally:
            if self.histogram is not None:
                name = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
                self.histogram.labels(name.split(" ", 1)[0].upper()).observe(time.perf_counter() - start)

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Any:
        pipe = TimedPipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)
        pipe.histogram = self.histogram
        return pipe


def timed_redis(url: str, metrics: RedisMetrics, **kwargs: Any) -> Any:
    """A client for ``url`` (one server or a cluster: see ``services.redisconn``) timing every command."""
    client = connect_as(url, TimedRedis, TimedRedisCluster, **kwargs)
    if isinstance(client, TimedRedisCluster):
        latency = metrics.latency
        client.observe = lambda name, seconds: latency.labels(name).observe(seconds)
    else:
        client.histogram = metrics.latency
    return client


class MatchStatsCollector(Collector):
    """Matches by game: active now, and created/finished since the store began (read at scrape).

    Every gateway reports the same global numbers: aggregate with ``max by (game)``, not ``sum``.
    """

    def __init__(self, client: Any) -> None:
        self.client = client

    def collect(self) -> Iterator[Metric]:
        active = GaugeMetricFamily("meeple_matches_active", "Matches being played now", labels=["game"])
        totals = {status: CounterMetricFamily(f"meeple_matches_{status}", f"Matches {status}", labels=["game"])
                  for status in ("created", "finished")}
        try:
            pipe = self.client.pipeline(transaction=False)
            for key in MATCH_STATS_KEYS:  # one hash per shard (spread over a cluster's primaries)
                pipe.hgetall(key)
            shards: list[dict[bytes, bytes]] = pipe.execute()
        except redis.RedisError:
            return  # the store is down: no numbers rather than wrong ones (readyz reports the outage)
        counts: dict[bytes, int] = {}
        for shard in shards:
            for name, raw in shard.items():
                counts[name] = counts.get(name, 0) + int(raw)
        for name, count in sorted(counts.items()):
            status, _, game = name.decode().partition(":")
            if status == "active":
                active.add_metric([game], count)
            elif status in totals:
                totals[status].add_metric([game], count)
        yield active
        yield from totals.values()
