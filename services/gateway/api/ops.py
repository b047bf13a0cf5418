"""Operations: liveness, readiness, Prometheus metrics and the OpenAPI document (its page: api/clients.py)."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess

from services.core.metrics import MatchStatsCollector

from ..context import gateway
from ..errors import error_response
from ..metrics import multiprocess_enabled
from ..openapi import document

bp = Blueprint("ops", __name__)


@bp.get("/healthz")
def healthz() -> Response:
    return jsonify({"status": "ok"})


@bp.get("/readyz")
def readyz() -> Response:
    gw = gateway()
    checks = {"redis": False, "rules": gw.rules.ready()}
    try:
        checks["redis"] = bool(gw.store.redis.ping())
    except Exception:
        checks["redis"] = False
    if all(checks.values()):
        return jsonify({"status": "ready", "checks": checks})
    down = ", ".join(name for name, ok in checks.items() if not ok)
    return error_response(503, "not_ready", f"dependency down: {down}")


@bp.get("/metrics")
def metrics() -> Response:
    gw = gateway()
    if multiprocess_enabled():  # gunicorn workers: add up every worker's files, whichever worker answers
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        registry.register(MatchStatsCollector(gw.store.redis))
    else:
        registry = gw.metrics.registry
    return Response(generate_latest(registry), mimetype=CONTENT_TYPE_LATEST)


@bp.get("/v1/openapi.json")
def openapi() -> Response:
    return jsonify(document())
