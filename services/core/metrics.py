"""Prometheus metrics every process that uses the store shares: Redis round trips, and match counts.

Match counts are global facts, not per-process ones, so they are read from Redis at scrape time
(:class:`MatchStatsCollector`) from counters the commit pipeline keeps on every status change.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import redis
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from services.core.record.store import MATCH_STATS_KEYS
from services.redisconn import TimedRedisCluster, connect_as

#: Redis commands take tens to hundreds of microseconds on a healthy link; blocking reads take seconds.
REDIS_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0)


class RedisMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.latency = Histogram("meeple_redis_command_seconds",
                                 "Redis round trips by command (a pipeline counts once, as PIPELINE)",
                                 ["command"], buckets=REDIS_BUCKETS, registry=registry)



class CoreMetrics:
    """What the match core counts, in whichever process runs it (gateway, bot worker, timekeeper)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = r = registry or CollectorRegistry()
        self.redis = RedisMetrics(r)
        self.moves = Counter("meeple_gateway_moves_total",
                             "Moves submitted by players (HTTP or WebSocket), by game and outcome (applied, or the "
                             "error code)", ["game", "outcome"], registry=r)
        self.takeovers = Counter("meeple_seat_takeovers_total", "Human seats handed to a bot, by reason",
                                 ["reason"], registry=r)
        self.reclaims = Counter("meeple_seat_reclaims_total", "Seats taken back by their owner from a bot",
                                registry=r)
        self.seats_filled = Counter("meeple_seats_filled_total",
                                    "Seats of matches that started, by who filled them (the seat-fill ratio is "
                                    "human / (human + bot))", ["filled_by"], registry=r)
        self.stale_keys = Counter("meeple_api_key_stale_reads_total",
                                  "API-key lookups answered from a record past its cache TTL because Redis could "
                                  "not answer (MEEPLE_KEY_STALE_S)", registry=r)


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


def timed_redis(url: str, metrics: RedisMetrics, patient: bool = True, **kwargs: Any) -> Any:
    """A client for ``url`` (one server or a cluster: see ``services.redisconn``) timing every command."""
    client = connect_as(url, TimedRedis, TimedRedisCluster, patient=patient, **kwargs)
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
