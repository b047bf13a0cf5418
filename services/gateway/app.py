"""The Flask app factory: config in, blueprints and dependencies wired, nothing global."""

from __future__ import annotations

import logging
import time

import redis
from flask import Flask, Response, g, request
from prometheus_client import CollectorRegistry, Histogram

from .api import events, games, matches, matchmaking, ops
from .config import GatewayConfig
from .context import Gateway
from .errors import register_error_handlers
from .rules_client import RulesClient
from .store import MatchStore

log = logging.getLogger("meeple.gateway")
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def create_app(config: GatewayConfig | None = None) -> Flask:
    config = config or GatewayConfig.from_env()
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = config.max_body_bytes
    app.json.sort_keys = False  # type: ignore[attr-defined]
    client = redis.Redis.from_url(config.redis_url, socket_timeout=config.long_poll_max_s + 5,
                                  socket_connect_timeout=2, health_check_interval=30)
    registry = CollectorRegistry()
    latency = Histogram("meeple_gateway_request_seconds", "Gateway request latency by route and status",
                        ["route", "method", "status"], buckets=LATENCY_BUCKETS, registry=registry)
    app.extensions["meeple"] = Gateway(
        config=config,
        store=MatchStore(client, config.finished_ttl_s, config.waiting_ttl_s),
        rules=RulesClient(config.rules_addr, config.rules_timeout_s, config.rules_retries),
        registry=registry,
        latency=latency,
    )
    register_error_handlers(app)
    for blueprint in (games.bp, matches.bp, events.bp, matchmaking.bp, ops.bp):
        app.register_blueprint(blueprint)

    @app.before_request
    def _start_timer() -> None:
        g.started = time.perf_counter()

    @app.after_request
    def _finish(response: Response) -> Response:
        route = request.url_rule.rule if request.url_rule else "unmatched"
        if hasattr(g, "started"):
            latency.labels(route, request.method, str(response.status_code)).observe(time.perf_counter() - g.started)
        origin = request.headers.get("Origin")
        if origin and ("*" in config.cors_origins or origin in config.cors_origins):
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Vary"] = "Origin"
            response.headers["Access-Control-Allow-Headers"] = "Authorization, Content-Type, Idempotency-Key"
            response.headers["Access-Control-Allow-Methods"] = "GET, POST, DELETE, OPTIONS"
        response.headers.setdefault("Cache-Control", "no-store")
        return response

    return app
