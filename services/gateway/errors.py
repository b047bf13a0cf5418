"""The one error shape of the API: ``{"error": {"code", "message"}}`` with the contract's status."""

from __future__ import annotations

import logging
from typing import Any

import redis
from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from services.redisconn import UNAVAILABLE

log = logging.getLogger("meeple.gateway")


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers or {}


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    response = jsonify({"error": {"code": code, "message": message}})
    response.status_code = status
    for key, value in (headers or {}).items():
        response.headers[key] = value
    return response


#: Werkzeug's own errors keep their status; these names become the codes.
_HTTP_CODES = {400: "malformed_request", 404: "not_found", 405: "method_not_allowed",
               413: "body_too_large", 415: "unsupported_media_type"}


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(ApiError)
    def _api(err: ApiError) -> Response:
        return error_response(err.status, err.code, err.message, err.headers)

    @app.errorhandler(HTTPException)
    def _http(err: HTTPException) -> Response:
        status = err.code or 500
        message = err.description or err.name
        if status == 413:
            message = f"request body too large (limit {app.config['MAX_CONTENT_LENGTH'] - 1} bytes)"
        allow = {k: v for k, v in err.get_headers() if k == "Allow"}  # a 405 says what the path takes
        return error_response(status, _HTTP_CODES.get(status, "http_error"), message, allow)

    @app.errorhandler(redis.exceptions.ResponseError)
    def _redis_refused(err: redis.exceptions.ResponseError) -> Response:
        if not is_out_of_memory(err):
            return _crash(err)
        log.warning("redis is full: %s", err)
        return store_full()

    def _redis_down(err: Exception) -> Response:
        log.warning("redis unavailable: %s", err)
        return error_response(503, "store_unavailable", "the match store is unavailable; try again shortly",
                              {"Retry-After": "1"})

    for unavailable in UNAVAILABLE:  # down, or a cluster failing over
        app.register_error_handler(unavailable, _redis_down)

    @app.errorhandler(Exception)
    def _crash(err: Exception) -> Any:  # never leak a trace to a client
        log.exception("unhandled error", exc_info=err)
        return error_response(500, "internal_error", "internal server error")


def is_out_of_memory(err: Exception) -> bool:
    """Redis refused a write at ``maxmemory`` (directly, or inside a script)."""
    return isinstance(err, redis.exceptions.OutOfMemoryError) or "OOM command not allowed" in str(err)


def store_full() -> Response:
    return error_response(503, "store_full", "the match store is full: no new matches for now (running matches "
                          "go on); retry later", {"Retry-After": "60"})
