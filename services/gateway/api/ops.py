"""Operations: liveness, readiness, Prometheus metrics and the OpenAPI document generated from the contract (its
page, Swagger UI: api/clients.py)."""

from __future__ import annotations

from flask import Blueprint, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess

from services.contract.openapi import document_bytes
from services.core.metrics import MatchStatsCollector

from ..context import gateway
from ..errors import error_response
from ..metrics import multiprocess_enabled
from .common import answer

bp = Blueprint("ops", __name__)


@bp.get("/healthz")
def healthz() -> Response:
    return answer({"status": "ok"})


@bp.get("/readyz")
def readyz() -> Response:
    gw = gateway()
    checks = {"redis": False, "rules": gw.core.rules.ready()}
    try:
        checks["redis"] = bool(gw.core.redis.ping())
    except Exception:
        checks["redis"] = False
    if all(checks.values()):
        return answer({"status": "ready", "checks": checks})
    down = ", ".join(name for name, ok in checks.items() if not ok)
    return error_response(503, "not_ready", f"dependency down: {down}")


@bp.get("/metrics")
def metrics() -> Response:
    gw = gateway()
    if multiprocess_enabled():  # gunicorn workers: add up every worker's files, whichever worker answers
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        registry.register(MatchStatsCollector(gw.core.redis))
    else:
        registry = gw.metrics.registry
    return Response(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)  # (mimetype= adds a 2nd charset)


@bp.get("/v1/openapi.json")
def openapi() -> Response:
    """The document generated from the contract (``services/contract``), encoded once per process."""
    return Response(document_bytes(), mimetype="application/json")
