"""Operations: liveness, readiness, Prometheus metrics, the OpenAPI document and its docs page."""

from __future__ import annotations

import os
from importlib import resources

from flask import Blueprint, Response, jsonify
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess

from ..context import gateway
from ..errors import error_response
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
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # gunicorn workers: aggregate every process's files
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = gateway().metrics.registry
    return Response(generate_latest(registry), mimetype=CONTENT_TYPE_LATEST)


@bp.get("/v1/openapi.json")
def openapi() -> Response:
    return jsonify(document())


@bp.get("/docs")
def docs() -> Response:
    page = resources.files("services.gateway").joinpath("static/docs.html").read_text()
    return Response(page, mimetype="text/html")
