"""The Flask app factory: config in, blueprints and dependencies wired, nothing global."""

from __future__ import annotations

import logging
import time

from flask import Flask, Response, g, request

from services.contract.validation import warm_up
from services.core.config import Config
from services.core.metrics import MatchStatsCollector
from services.core.service import Core
from services.core.tenancy.webhooks import allowed_networks

from .api import (
    backends,
    chat,
    clients,
    events,
    games,
    leaderboards,
    matches,
    matchmaking,
    ops,
    seats,
    tournaments,
    watch,
    ws,
)
from .api.common import policy_refusal
from .context import Gateway
from .errors import register_error_handlers
from .hub import Hub
from .jsonio import OrjsonProvider
from .metrics import GatewayMetrics, check_multiprocess, multiprocess_enabled, serve_metrics

log = logging.getLogger("meeple.gateway")


def create_app(config: Config | None = None) -> Flask:
    config = config or Config.from_env()
    allowed_networks(config.webhook_allow_private)  # a malformed MEEPLE_WEBHOOK_ALLOW_PRIVATE stops the boot
    app = Flask(__name__, static_folder=None)  # /play serves the page's files; nothing else is static
    # A doubled slash (``/v1//games``, ``/v1/matches//events``: an empty id) is a 404 like any unknown path, not
    # werkzeug's 308 redirect with an HTML body: every answer of the API is JSON.
    app.url_map.merge_slashes = False
    # One byte over the limit: a chunked body (no Content-Length) is read up to this, so one past the limit is
    # seen as such (413 in ``json_body``) instead of being cut at the limit and parsed as broken JSON.
    app.config["MAX_CONTENT_LENGTH"] = config.max_body_bytes + 1
    app.json = OrjsonProvider(app)
    warm_up()  # before any request thread: msgspec builds a model's type information unsafely on first use
    check_multiprocess()
    metrics = GatewayMetrics()
    the_core = Core.connect(config, metrics.registry, socket_timeout=config.long_poll_max_s + 5,
                            socket_connect_timeout=2, health_check_interval=30)
    metrics.registry.register(MatchStatsCollector(the_core.redis))
    if config.metrics_port and not multiprocess_enabled():  # (gunicorn's master serves the workers' sum: its conf)
        metrics.server = serve_metrics(config.metrics_port, metrics.registry)
    app.extensions["meeple"] = Gateway(
        core=the_core, metrics=metrics,
        hub=Hub(config.redis_url, config.waiters_max, config.waiters_per_client, metrics),
    )
    register_error_handlers(app, policy_refusal)
    for blueprint in (games.bp, matches.bp, seats.bp, chat.bp, events.bp, ws.bp, matchmaking.bp, backends.bp,
                      leaderboards.bp, tournaments.bp, watch.bp, ops.bp):
        app.register_blueprint(blueprint)
    clients.register(app)

    @app.before_request
    def _start_timer() -> None:
        g.started = time.perf_counter()
        g.in_flight = True
        metrics.in_flight.inc()

    @app.teardown_request
    def _done(_: BaseException | None) -> None:
        if g.pop("in_flight", False):  # once per request, however often teardown runs (a stream's end)
            metrics.in_flight.dec()

    @app.after_request
    def _finish(response: Response) -> Response:
        route = request.url_rule.rule if request.url_rule else "unmatched"
        parked = g.get("parked", False)  # a long-poll's run that parked: its response is never sent
        if "started" in g:
            metrics.latency.labels(route, request.method, "parked" if parked else str(response.status_code)).observe(
                time.perf_counter() - g.started)
        who = g.get("caller")
        tenant = who.tenant if who is not None else None
        if tenant is not None and not parked:
            metrics.tenant_requests.labels(tenant.name, str(response.status_code)).inc()
            if response.status_code == 429:
                code = (response.get_json(silent=True) or {}).get("error", {}).get("code", "rate_limited")
                metrics.tenant_limited.labels(tenant.name, code).inc()
        origin = request.headers.get("Origin")
        if origin and ("*" in config.cors_origins or origin in config.cors_origins):
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Vary"] = "Origin"
            response.headers["Access-Control-Allow-Headers"] = "Authorization, Content-Type, Idempotency-Key, X-API-Key"
            response.headers["Access-Control-Allow-Methods"] = "GET, POST, PUT, PATCH, DELETE, OPTIONS"
            # what a client in that page must read of an answer: when to retry, the catalogue's version, why a
            # credential was refused (a browser hides every other header of a cross-origin answer)
            response.headers["Access-Control-Expose-Headers"] = "Retry-After, ETag, WWW-Authenticate"
        response.headers.setdefault("Cache-Control", "no-store")
        return response

    return app
