"""A tiny WSGI app to test the gunicorn worker on its own: it tells which thread served, sleeps, echoes, fails."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

StartResponse = Callable[[str, list[tuple[str, str]]], Any]
#: ``/hold`` waits until ``/release`` (a request the test controls, instead of a sleep it would have to time).
_released = threading.Event()


def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
    path, query = environ["PATH_INFO"], parse_qs(environ.get("QUERY_STRING", ""))
    if path == "/boom":
        raise RuntimeError("the app failed")
    if path == "/sleep":
        time.sleep(float(query["s"][0]))
    if path == "/hold":
        _released.wait(60)
    if path == "/release":
        _released.set()
    body = environ["wsgi.input"].read() if path == "/echo" else threading.current_thread().name.encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
