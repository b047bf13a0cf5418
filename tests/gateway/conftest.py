"""Real parts for gateway tests: a redis-server and a gRPC rules server on free ports, the gateway over HTTP.

Every test that takes ``redis_url`` or ``own_redis_url`` runs twice: on one redis-server and on a real
local Redis Cluster (3 primaries, from the same binaries), so a cross-slot script, pipeline or command
anywhere in the store, gateway, bot workers or timekeeper fails here.

Every JSON response a test receives through :class:`Api` is validated against the OpenAPI document the gateway
serves (generated from ``services/contract``), and every gateway of these tests (in process, or a gunicorn
subprocess) runs the contract strictly: a response field the contract does not declare is a 500, not dropped.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
import requests
from jsonschema import Draft202012Validator
from werkzeug.serving import BaseWSGIServer, make_server

from services.bots.worker import Worker
from services.contract import validation
from services.contract.openapi import document, response_of
from services.core.config import Config
from services.gateway.app import create_app
from services.rules.server import serve, shutdown
from tooling.rediscluster import LocalCluster, single_redis
from tooling.stack import GUNICORN_CONF, ROOT, free_port, http_ok, wait_until

OPENAPI = document()
os.environ["MEEPLE_CONTRACT_STRICT"] = "1"  # gateways started as subprocesses
validation.STRICT = True  # and the ones in this process


def _operation(method: str, path: str) -> dict[str, Any] | None:
    for template, ops in OPENAPI["paths"].items():
        pattern = "^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$"
        if re.match(pattern, path) and method.lower() in ops:
            op: dict[str, Any] = ops[method.lower()]
            return op
    return None


def check_against_openapi(method: str, url: str, response: requests.Response) -> None:
    """The response's status must be documented and its JSON body must match the documented schema."""
    path = "/" + url.split("/", 3)[3].split("?")[0]
    op = _operation(method, path)
    assert op is not None, f"{method} {path} is not in the OpenAPI document"
    assert str(response.status_code) in op["responses"], \
        f"{method} {path} returned undocumented status {response.status_code}: {response.text}"
    spec = response_of(OPENAPI, op, response.status_code)
    content = spec.get("content", {}).get("application/json")
    if content is None:
        return
    schema = {**content["schema"], "components": OPENAPI["components"]}
    Draft202012Validator(schema).validate(response.json())


@dataclass
class Api:
    """A tiny HTTP client that validates every response against the OpenAPI document."""

    base: str
    session: requests.Session = field(default_factory=requests.Session)
    checked: int = 0

    def call(self, method: str, path: str, token: str | None = None, **kwargs: Any) -> requests.Response:
        headers = dict(kwargs.pop("headers", {}))
        if token:
            headers["Authorization"] = f"Bearer {token}"
        response = self.session.request(method, self.base + path, headers=headers, timeout=40, **kwargs)
        check_against_openapi(method, self.base + path, response)
        self.checked += 1
        return response

    def get(self, path: str, token: str | None = None, **kw: Any) -> requests.Response:
        return self.call("GET", path, token, **kw)

    def post(self, path: str, token: str | None = None, **kw: Any) -> requests.Response:
        return self.call("POST", path, token, **kw)


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A real redis-server on a free port, gone afterwards; yields its URL."""
    with single_redis() as url:
        yield url


@contextlib.contextmanager
def redis_cluster(primaries: int = 3, replicas: int = 0, node_timeout_ms: int = 1500) -> Iterator[LocalCluster]:
    """A real Redis Cluster on free loopback ports, gone afterwards."""
    with tempfile.TemporaryDirectory() as data:
        cluster = LocalCluster(primaries, replicas, Path(data), node_timeout_ms=node_timeout_ms)
        try:
            yield cluster.start()
        finally:
            cluster.stop()


REDIS_KINDS = ("single", "cluster")


@pytest.fixture(scope="session", params=REDIS_KINDS)
def redis_url(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "cluster":
        with redis_cluster() as cluster:
            yield cluster.url
    else:
        with redis_server() as url:
            yield url


@pytest.fixture(scope="session")
def spare_cluster() -> Iterator[LocalCluster]:
    """A cluster emptied before each test that needs a store of its own (see ``own_redis_url``)."""
    with redis_cluster() as cluster:
        yield cluster


@pytest.fixture(params=REDIS_KINDS)
def own_redis_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A Redis of the test's own, for tests whose workers must see no other test's bot jobs or deadlines
    (on a cluster: the spare cluster, emptied first — forming one per test would take seconds)."""
    if request.param == "cluster":
        cluster: LocalCluster = request.getfixturevalue("spare_cluster")
        for node in cluster.primary_nodes():
            node.client().flushall()
        yield cluster.url
    else:
        with redis_server() as url:
            yield url


@dataclass
class RulesProcess:
    """A real rules server that tests can stop and start again on the same port."""

    port: int
    server: grpc.Server | None = None

    def start(self) -> None:
        self.server, _ = serve(f"127.0.0.1:{self.port}")

    def stop(self) -> None:
        if self.server is not None:
            shutdown(self.server, grace=0.2)
            self.server = None


@pytest.fixture(scope="session")
def rules() -> Iterator[RulesProcess]:
    proc = RulesProcess(free_port())
    proc.start()
    yield proc
    proc.stop()


@dataclass
class GatewayServer:
    url: str
    server: BaseWSGIServer
    thread: threading.Thread

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join(5)


#: Every test client is 127.0.0.1: tests of other things must not trip the per-IP limits and quotas.
UNLIMITED = {"rate_limit_per_minute": 100_000, "max_active_matches_per_ip": 0, "max_bot_seats_per_ip": 0,
             "max_hard_bots_per_ip": 0}


@contextlib.contextmanager
def bot_worker_thread(redis_url: str, rules_port: int, name: str, claim_idle_ms: int = 60_000,
                      join_s: float = 10.0) -> Iterator[Worker]:
    """A bot worker taking jobs in a thread of the test's process, stopped (and waited for) on the way out."""
    worker = Worker(redis_url, f"127.0.0.1:{rules_port}", name=name, claim_idle_ms=claim_idle_ms)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.stopping.set()
        thread.join(join_s)


def start_gateway(redis_url: str, rules_port: int, **overrides: Any) -> GatewayServer:
    config = Config(redis_url=redis_url, rules_addr=f"127.0.0.1:{rules_port}", rules_timeout_s=2.0,
                           rules_retries=2, **{**UNLIMITED, **overrides})
    server = make_server("127.0.0.1", 0, create_app(config), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return GatewayServer(f"http://127.0.0.1:{server.server_port}", server, thread)


@pytest.fixture(scope="session")
def gateway_server(redis_url: str, rules: RulesProcess) -> Iterator[GatewayServer]:
    gw = start_gateway(redis_url, rules.port)
    yield gw
    gw.stop()


@pytest.fixture()
def api(gateway_server: GatewayServer) -> Api:
    return Api(gateway_server.url)


@dataclass
class Node:
    url: str
    proc: subprocess.Popen[bytes]


@contextlib.contextmanager
def gunicorn_gateway(redis_url: str, rules_port: int, **env: str) -> Iterator[Node]:
    """The gateway as deployed — gunicorn with the gateway's worker (it holds WebSockets) — on ``redis_url``,
    the per-address limits lifted (every test client is 127.0.0.1); ``env`` adds settings."""
    with tempfile.TemporaryDirectory(prefix="meeple-matrix-") as prom:
        port = free_port()
        full = {**os.environ, "REDIS_URL": redis_url, "MEEPLE_RULES_ADDR": f"127.0.0.1:{rules_port}",
                "PROMETHEUS_MULTIPROC_DIR": prom, "MEEPLE_RATE_LIMIT_PER_MINUTE": "0",
                "MEEPLE_MAX_ACTIVE_MATCHES_PER_IP": "0", "MEEPLE_MAX_BOT_SEATS_PER_IP": "0",
                "MEEPLE_MAX_HARD_BOTS_PER_IP": "0", "MEEPLE_WEBHOOK_ALLOW_PRIVATE": "all", "MEEPLE_HINT_WAIT_S": "1",
                **env}
        proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", GUNICORN_CONF, "--workers", "1",
                                 "--bind", f"127.0.0.1:{port}", "--graceful-timeout", "2",
                                 "services.gateway.wsgi:app"], cwd=ROOT, env=full,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until(lambda: http_ok(f"{url}/healthz"), "gunicorn", proc)
            yield Node(url, proc)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(15)
