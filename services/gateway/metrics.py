"""The gateway's Prometheus metrics, on the app's own registry (no global state)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram

#: Millisecond-scale buckets: most requests take a few ms, long-polls up to 30 s.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


@dataclass
class GatewayMetrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.latency = Histogram("meeple_gateway_request_seconds", "Gateway request latency by route and status",
                                 ["route", "method", "status"], buckets=LATENCY_BUCKETS, registry=r)
        self.takeovers = Counter("meeple_seat_takeovers_total", "Human seats handed to a bot, by reason",
                                 ["reason"], registry=r)
        self.reclaims = Counter("meeple_seat_reclaims_total", "Seats taken back by their owner from a bot",
                                registry=r)
        self.seats_filled = Counter("meeple_seats_filled_total",
                                    "Seats of matches that started, by who filled them (the seat-fill ratio is "
                                    "human / (human + bot))", ["filled_by"], registry=r)
