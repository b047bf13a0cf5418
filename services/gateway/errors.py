"""The one place where a refusal becomes HTTP: a domain error's kind is its status (the table :data:`STATUS`,
in ``statuses.py``), and the one error shape ``{"error": {"code", "message"}}`` goes out with the contract's
headers.

The WebSocket puts the same status in its ``reply`` (:func:`status_of`), so a move answers alike on both doors.
"""

from __future__ import annotations

import logging
from typing import Any

import redis
from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from services.contract.statuses import HTTP_CODES, STATUS
from services.core.errors import DomainError, Kind
from services.redisconn import UNAVAILABLE

log = logging.getLogger("meeple.gateway")

#: Credentials that were presented and refused say so in their challenge (RFC 6750).
_INVALID_CREDENTIAL = ("wrong_token", "invalid_api_key")


def status_of(err: DomainError) -> int:
    return STATUS[err.kind]


def headers_of(err: DomainError) -> dict[str, str]:
    headers = {}
    if err.retry_after is not None:
        headers["Retry-After"] = str(err.retry_after)
    if err.kind is Kind.UNAUTHENTICATED:
        headers["WWW-Authenticate"] = 'Bearer error="invalid_token"' if err.code in _INVALID_CREDENTIAL else "Bearer"
    if err.kind is Kind.UPGRADE_REQUIRED:
        headers["Upgrade"] = "websocket"
    return headers


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    response = jsonify({"error": {"code": code, "message": message}})
    response.status_code = status
    for key, value in (headers or {}).items():
        response.headers[key] = value
    return response


def refusal(err: DomainError) -> Response:
    return error_response(status_of(err), err.code, err.message, headers_of(err))


def answer_to(err: BaseException) -> tuple[int, dict[str, Any], dict[str, str]]:
    """The status, error body and headers every door answers a failure with (HTTP, and the WebSocket's
    ``reply``): a refusal by its kind, a full or unreachable store as 503, anything else as a logged 500."""
    if isinstance(err, DomainError):
        return status_of(err), err.doc(), headers_of(err)
    if isinstance(err, redis.exceptions.ResponseError) and is_out_of_memory(err):
        log.warning("redis is full: %s", err)
        return 503, _doc("store_full", "the match store is full: no new matches for now (running matches go on); "
                                       "retry later"), {"Retry-After": "60"}
    if isinstance(err, UNAVAILABLE):  # down, or a cluster failing over
        log.warning("redis unavailable: %s", err)
        return 503, _doc("store_unavailable", "the match store is unavailable; try again shortly"), {"Retry-After": "1"}
    log.exception("unhandled error", exc_info=err)  # never leak a trace to a client
    return 500, _doc("internal_error", "internal server error"), {}


def _doc(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(HTTPException)
    def _http(err: HTTPException) -> Response:
        status = err.code or 500
        message = err.description or err.name
        if status == 413:
            message = f"request body too large (limit {app.config['MAX_CONTENT_LENGTH'] - 1} bytes)"
        allow = {k: v for k, v in err.get_headers() if k == "Allow"}  # a 405 says what the path takes
        return error_response(status, HTTP_CODES.get(status, "http_error"), message, allow)

    @app.errorhandler(Exception)
    def _failed(err: Exception) -> Response:
        status, body, headers = answer_to(err)
        return error_response(status, body["error"]["code"], body["error"]["message"], headers)


def is_out_of_memory(err: Exception) -> bool:
    """Redis refused a write at ``maxmemory`` (directly, or inside a script)."""
    return isinstance(err, redis.exceptions.OutOfMemoryError) or "OOM command not allowed" in str(err)
