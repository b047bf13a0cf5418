"""gunicorn settings for the gateway: ``gunicorn -c python:services.gateway.gunicorn_conf services.gateway.wsgi:app``.

They make Prometheus multiprocess mode hold: ``PROMETHEUS_MULTIPROC_DIR`` is set before prometheus-client is
imported anywhere (a fresh directory unless the environment names one), the directory holds no files of an
earlier run when the workers start, and a worker's live gauges disappear when it exits.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="meeple-prom-"))

# must come after the variable is set:
from prometheus_client import multiprocess

#: One thread per connection that reads, runs the app and writes (``gunicorn_worker.py`` says why it is not
#: gthread); ``--workers`` processes of it, each taking up to ``worker_connections`` connections at once.
worker_class = "services.gateway.gunicorn_worker.ConnectionThreads"
#: Open connections per worker process: parked waiters (long-polls, streams, WebSockets) are sockets, not
#: threads, so a worker holds many (``MEEPLE_GATEWAY_CONNECTIONS``; the worker raises its file limit to fit).
worker_connections = int(os.environ.get("MEEPLE_GATEWAY_CONNECTIONS", "20000"))

#: gunicorn (25.1+) binds a control socket at one path per user (``$XDG_RUNTIME_DIR`` or ``~/.gunicorn``):
#: two gateways on one host would fight over it. Off unless ``MEEPLE_GUNICORN_CONTROL_SOCKET`` names a path
#: of this instance's own (then ``gunicornc`` can manage it there).
control_socket_disable = not os.environ.get("MEEPLE_GUNICORN_CONTROL_SOCKET")
if not control_socket_disable:
    control_socket = os.environ["MEEPLE_GUNICORN_CONTROL_SOCKET"]


def on_starting(server: Any) -> None:
    """Start from an empty metrics directory: counters of a previous run must not leak into this one."""
    directory = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink()


def when_ready(server: Any) -> None:
    """With ``MEEPLE_METRICS_PORT``, the master serves the metrics there (every worker's added up, the tenants'
    series included), before any worker starts: the API port's ``/metrics`` is then 404."""
    from services.core.config import Config
    from services.gateway.metrics import LazyClient, gateway_registry, serve_metrics

    config = Config.from_env()
    if config.metrics_port:
        serve_metrics(config.metrics_port, gateway_registry(LazyClient(config.redis_url)))


def child_exit(server: Any, worker: Any) -> None:
    """Drop a dead worker's live gauges (in-flight requests, waiting long-polls); its counters stay."""
    multiprocess.mark_process_dead(worker.pid)
