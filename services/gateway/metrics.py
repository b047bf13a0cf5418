"""Prometheus metrics of the gateway process (the Redis and match-count metrics it shares are in core.metrics).

Where they are served: with ``MEEPLE_METRICS_PORT`` (the deploy setting), on that port of their own, all of
them (the tenants' series too), which the API's entrance does not publish; without it (``make run``, tests), on
the API port's ``/metrics``, without any series that names a tenant (:class:`WithoutTenants`): a tenant never
learns of another from anything public.

Under gunicorn every worker is its own process. prometheus-client's multiprocess mode keeps each metric's
values in files under ``PROMETHEUS_MULTIPROC_DIR`` so that ``/metrics``, whichever worker serves it, adds up
every worker. That only works if the variable is set before ``prometheus_client`` is first imported:
:func:`check_multiprocess` refuses to start half-configured (each worker would then report only itself).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import redis
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, multiprocess, start_http_server, values
from prometheus_client.core import Metric

from services import redisconn
from services.core.metrics import MatchStatsCollector

#: Request latencies: fine steps around the targets (p50 15 ms, p99 100 ms) so percentiles interpolate well.
LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15,
                   0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def multiprocess_enabled() -> bool:
    return bool(os.environ.get(MULTIPROC_ENV))


#: Metric families named so hold a tenant label: never on the API port.
TENANT_FAMILIES = "meeple_tenant_"


class WithoutTenants:
    """A registry as the API port's ``/metrics`` shows it: every family but those that name a tenant."""

    def __init__(self, source: Any) -> None:
        self.source = source

    def collect(self) -> Iterator[Metric]:
        for family in self.source.collect():
            if not family.name.startswith(TENANT_FAMILIES) and not any("tenant" in s.labels for s in family.samples):
                yield family


class LazyClient:
    """A Redis client made at its first use: gunicorn's master serves the metrics from before Redis may answer (a
    cluster client asks for the slots when it is made); until one is made, a scrape has no match counts."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client: Any = None

    def pipeline(self, **kwargs: Any) -> Any:
        if self.client is None:
            try:
                self.client = redisconn.connect(self.url, socket_timeout=10)
            except (redis.RedisError, OSError) as err:
                raise redis.ConnectionError(f"redis not reachable yet: {err}") from err
        return self.client.pipeline(**kwargs)


def gateway_registry(client: Any) -> CollectorRegistry:
    """What a scrape of a gunicorn gateway answers: every worker's metrics added up (their files), and the match
    counts read from Redis (``client``)."""
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    registry.register(MatchStatsCollector(client))
    return registry


def serve_metrics(port: int, registry: Any) -> Any:
    """Serve ``registry`` on ``port`` (all interfaces: Prometheus scrapes each gateway container or pod there),
    from a daemon thread; returns the server (``shutdown()`` stops it)."""
    server, _ = start_http_server(port, addr="0.0.0.0", registry=registry)
    return server


def check_multiprocess() -> None:
    """Fail loudly if ``PROMETHEUS_MULTIPROC_DIR`` is set but prometheus-client did not see it in time."""
    if multiprocess_enabled() and values.ValueClass is values.MutexValue:
        raise RuntimeError(f"{MULTIPROC_ENV} was set after prometheus_client was imported: metrics would not "
                           "add up across gunicorn workers; set it in the environment before the process starts")


class GatewayMetrics:
    """The HTTP side of one gateway process (values shared through files under gunicorn); the match core's
    own metrics are :class:`services.core.metrics.CoreMetrics`, on the same registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        #: the server of ``MEEPLE_METRICS_PORT`` in a process that serves it itself (not under gunicorn)
        self.server: Any = None
        self.latency = Histogram("meeple_gateway_request_seconds",
                                 "Gateway request latency by route and status (a long-poll's run that parked until a "
                                 "wake-up: status parked; the run that answers has its own)",
                                 ["route", "method", "status"], buckets=LATENCY_BUCKETS, registry=self.registry)
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
        r = self.registry
        # Tenants are made by an operator (``meeple keys create``), so the label's values stay few.
        self.tenant_requests = Counter("meeple_tenant_requests_total",
                                       "Requests made with a tenant's API key, by tenant and status",
                                       ["tenant", "status"], registry=r)
        self.tenant_limited = Counter("meeple_tenant_limited_total",
                                      "A tenant's requests refused by a rate limit or quota, by tenant and error code",
                                      ["tenant", "code"], registry=r)
