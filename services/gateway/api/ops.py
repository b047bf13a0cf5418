"""Operations: liveness, readiness, Prometheus metrics and the OpenAPI document generated from the contract (its
page, Swagger UI: api/clients.py)."""

from __future__ import annotations

from flask import Blueprint, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from services.contract.openapi import document_bytes

from ..context import gateway
from ..errors import error_response
from ..metrics import WithoutTenants, gateway_registry, multiprocess_enabled
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
    """The metrics without the tenants' series; none at all when they have a port of their own (see
    ``..metrics``)."""
    gw = gateway()
    if gw.config.metrics_port:
        return error_response(404, "not_found", "no such path")
    # gunicorn workers: add up every worker's files, whichever worker answers
    registry = gateway_registry(gw.core.redis) if multiprocess_enabled() else gw.metrics.registry
    return Response(generate_latest(WithoutTenants(registry)),  # type: ignore[arg-type]
                    content_type=CONTENT_TYPE_LATEST)  # (mimetype= adds a 2nd charset)


@bp.get("/v1/openapi.json")
def openapi() -> Response:
    """The document generated from the contract (``services/contract``), encoded once per process."""
    return Response(document_bytes(), mimetype="application/json")
