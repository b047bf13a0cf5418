"""``meeple loadtest``: boot the whole stack, drive it with Locust, and write a report.

The stack is the one ``meeple run`` starts (a fresh embedded Redis of its own, rules replicas, the gateway
under gunicorn, bot workers), on free loopback ports. Locust runs headless in its own process for
``--duration`` seconds (and stops earlier at the request cap); meanwhile a progress line shows the
throughput and the move latency. Afterwards the runner scrapes every process's /metrics, stops the
writers, replays every match in the store from its seed and move log (``corrupted_matches``), checks that
every move a Locust user saw acknowledged is in the store (``lost_acknowledged_moves``), and writes
``report.md``, Locust's CSVs, ``metrics/*.prom`` and ``plot.png`` to the report directory.

``--redis-cluster N [--replicas R]`` runs the stack on a local Redis Cluster; ``--chaos`` kills, once each
during the run, a Redis primary (``kill -9``; it is started again 15 s later and rejoins as a replica), a
rules replica, a bot worker and a gateway worker (``kill -9``, a crash), then stops another gateway worker
the way an operator does (``SIGTERM``: a graceful restart), and the summary shows, per fault, the errors
that followed it: how many users saw and how many the SDK's retries absorbed, their kinds and their window;
the seconds human moves stalled; and, from an observer that reads every bot match's version in the store every
0.5 s (``loadtests/botstall.py``), the seconds bot matches stalled, per class: on healthy primaries, on the
killed primary, with only their job stream on it.

``--baseline DIR [--rounds N]`` drives the same load (this checkout's Locust scenario, the same options) at this
checkout's stack and then at the stack of the checkout in ``DIR`` (its code, run by its own ``.venv``), each run
audited by its own checkout's code and reported in ``OUT/now`` and ``OUT/baseline``, and prints the server CPU per
human move of both with the ratios now / baseline (``loadtests/compare.py``; issue 47 asks for half of a commit's).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from services import redisconn
from tooling import promtext
from tooling.bench import parse_option
from tooling.stack import ROOT, Stack, StackConfig, http_ok, wait_until

from . import botstall
from .audit import Audit, stored_match_ids
from .compare import compare, comparison_lines
from .names import MOVE, MOVE_AND_WAIT

LOCUSTFILE = Path(__file__).with_name("locustfile.py")
#: The ids of the matches Locust's people started against bots (one a line), in the report directory.
BOT_MATCHES = "bot_matches.txt"
BASELINE = "baseline"


def gateway_workers_for(cores: int | None, chaos: bool = False) -> int:
    """The gateway processes a load test starts unless told: one per two cores, at least one (two with
    ``--chaos``, which kills one and restarts another). On one machine the gateway shares the cores with the rules
    service, Redis, the bots and Locust, and each gateway process more costs CPU of its own (its subscriber wakes
    for every event, its threads contend): on the 2-core machine, two pairs of ``make loadtest`` on 2026-11-29
    spent 5.4-5.6 ms of gateway CPU per human move with one worker against 6.3-6.6 ms with two."""
    return max(2 if chaos else 1, (cores or 2) // 2)


@dataclass
class LoadConfig:
    users: int = 50
    spawn_rate: float = 10.0
    duration_s: int = 180
    out: Path | None = None
    #: 0: :func:`gateway_workers_for` this machine's cores (and ``chaos``), set when the config is made
    gateway_workers: int = 0
    rules_replicas: int = 1
    bot_workers: int = 1
    #: the bot workers' ``--nice`` (see ``StackConfig.bot_nice``)
    bot_nice: int = 10
    bot_level: str = "easy"
    #: "min": bot matches with as few seats as the game allows; "max": table sizes up to full.
    bot_players: str = "min"
    #: 0 = a generous default from users and duration.
    max_requests: int = 0
    max_requests_per_user: int = 100_000
    #: A person's think time before a move. 0-40 ms lets 50 users offer more than the 150 moves/s the
    #: target asks about; at 0-100 ms they cannot (people matched together wait on each other's thinking,
    #: so the users, not the server, cap the rate near 120/s).
    think_s: tuple[float, float] = (0.0, 0.04)
    #: The share of REST matches whose person sends each move with ``wait`` (one request a turn, see locustfile).
    move_wait_share: float = 0.5
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    weights: dict[str, int] = field(default_factory=lambda: {"bots": 3, "pairs": 3, "spectators": 1})
    bot_fill_s: int = 5
    quiet: bool = False
    #: > 0: a local Redis Cluster of this many primaries, ``replicas`` replicas each
    redis_cluster: int = 0
    replicas: int = 0
    chaos: bool = False
    #: > 0: half the run on the empty store, then this many matches copied in, then the other half
    preload: int = 0
    #: The checkout whose server stack the load drives (None: this one); Locust and its scenario are always this
    #: checkout's (``--baseline DIR``).
    root: Path | None = None

    def request_cap(self) -> int:
        return self.max_requests or max(10_000, self.users * self.duration_s * 60)

    def __post_init__(self) -> None:
        if not self.gateway_workers:
            self.gateway_workers = gateway_workers_for(os.cpu_count(), self.chaos)


@dataclass
class Progress:
    """The live figures, from the tail of Locust's history CSV and the bot workers' gauges."""

    queue_depths: list[tuple[float, float]] = field(default_factory=list)

    def line(self, cfg: LoadConfig, elapsed: float, history: Path, bots: list[str]) -> str:
        rows = last_rows(history)
        total, move = rows.get("Aggregated", {}), rows.get(MOVE, {})
        depth = 0.0
        for url in bots:
            with contextlib.suppress(OSError):
                depth = max(depth, promtext.value(promtext.scrape(url, timeout=1), "meeple_bot_queue_length"))
        self.queue_depths.append((elapsed, depth))
        return (f"[{elapsed:5.0f}/{cfg.duration_s} s] users {total.get('User Count', '0'):>3}  "
                f"req/s {_f(total.get('Requests/s')):6.1f}  moves/s {_f(move.get('Requests/s')):6.1f}  "
                f"move p50 {move.get('50%', 'N/A'):>4} ms p99 {move.get('99%', 'N/A'):>4} ms  "
                f"failures {total.get('Total Failure Count', '0')}  bot queue {depth:.0f}")


def _f(text: str | None) -> float:
    try:
        return float(text or 0)
    except ValueError:
        return 0.0


def last_rows(history: Path) -> dict[str, dict[str, str]]:
    """The rows of the newest whole second in Locust's ``_stats_history.csv``, by request name.

    Locust writes a second's rows with ``Aggregated`` last, and the file is read while Locust's buffered
    writes land: its tail is often a second cut short, which would show no users and no requests.
    """
    if not history.exists():
        return {}
    with history.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    whole = [row["Timestamp"] for row in rows if row["Name"] == "Aggregated"]
    if not whole:
        return {}
    newest = whole[-1]
    return {row["Name"]: row for row in rows if row["Timestamp"] == newest}


def host_speed_ms(rounds: int = 7) -> float:
    """Milliseconds a fixed pure-Python loop takes on this machine now (the median of ``rounds``).

    A shared or virtual machine's speed drifts: the same code on the same host gave move p50s 30% apart
    an hour apart. Taken before and after a run (both idle), it says which runs may be compared.
    """
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        total = 0
        for i in range(300_000):
            total += i % 7
        times.append((time.perf_counter() - start) * 1000)
    return sorted(times)[rounds // 2]


def scrape_all(targets: dict[str, str]) -> dict[str, promtext.Samples]:
    return {name: promtext.scrape(url) for name, url in targets.items()}


def raw_metrics(targets: dict[str, str]) -> dict[str, str]:
    texts = {}
    for name, url in targets.items():
        try:
            with urllib_open(url) as response:
                texts[name] = response.read().decode()
        except OSError:  # a process the chaos killed: its figures are gone with it
            continue
    return texts


def urllib_open(url: str) -> Any:
    import urllib.request

    return urllib.request.urlopen(url, timeout=5)


def history_rows(history: Path, name: str) -> list[dict[str, str]]:
    """The rows of ``name`` in Locust's ``_stats_history.csv`` (one a second; none if the file is missing)."""
    if not history.exists():
        return []
    with history.open(newline="") as handle:
        return [r for r in csv.DictReader(handle) if r["Name"] == name]


def sustained_rate(history: Path, name: str, users: int) -> float:
    """Successful requests per second of ``name`` once every user runs (the ramp-up left out)."""
    rows = history_rows(history, name)
    steady = [r for r in rows if int(r["User Count"] or 0) >= users] or rows
    if len(steady) < 2:
        return 0.0
    first, last = steady[0], steady[-1]
    seconds = int(last["Timestamp"]) - int(first["Timestamp"])
    done = ((int(last["Total Request Count"]) - int(last["Total Failure Count"]))
            - (int(first["Total Request Count"]) - int(first["Total Failure Count"])))
    return done / seconds if seconds > 0 else 0.0


def read_stats(path: Path) -> dict[str, dict[str, str]]:
    if not path.exists():
        return {}
    with path.open(newline="") as handle:
        return {row["Name"]: row for row in csv.DictReader(handle)}


def read_failures(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _ms(row: dict[str, str], column: str) -> float | None:
    raw = row.get(column, "N/A")
    return None if raw in ("N/A", "", None) else float(raw)


def summarize(cfg: LoadConfig, stats: dict[str, dict[str, str]], duration_s: float, moves_per_s: float,
              corrupted: int) -> dict[str, Any]:
    """The ``--json`` object."""
    aggregated = stats.get("Aggregated", {})
    endpoints = {
        name: {"p50_ms": _ms(row, "50%"), "p95_ms": _ms(row, "95%"), "p99_ms": _ms(row, "99%"),
               "rps": round(_f(row.get("Requests/s")), 2)}
        for name, row in sorted(stats.items()) if name not in ("Aggregated", BASELINE)
    }
    base = stats.get(BASELINE, {})
    return {
        "users": cfg.users,
        "gateway_workers": cfg.gateway_workers,
        "duration_s": round(duration_s, 1),
        "requests": int(aggregated.get("Request Count", 0) or 0),
        "failures": int(aggregated.get("Failure Count", 0) or 0),
        "moves_per_s": round(moves_per_s, 2),
        "endpoints": endpoints,
        "baseline": {"p50_ms": _ms(base, "50%"), "p99_ms": _ms(base, "99%"),
                     "rps": round(_f(base.get("Requests/s")), 2)},
        "corrupted_matches": corrupted,
        "move_wait_share": cfg.move_wait_share,
        "redis": {"cluster_primaries": cfg.redis_cluster, "replicas_per_primary": cfg.replicas},
    }


def run_loadtest(cfg: LoadConfig) -> tuple[dict[str, Any], Path]:
    """Boot, drive, measure, audit, report; returns the summary and the report directory."""
    from .report import write_report

    out = cfg.out or ROOT / "var" / "loadtests" / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics").mkdir(exist_ok=True)
    data_dir = Path(tempfile.mkdtemp(prefix="meeple-load-"))
    stack = Stack(StackConfig(
        http_port=0, rules_port=0, rules_replicas=cfg.rules_replicas, gateway_workers=cfg.gateway_workers,
        bot_workers=cfg.bot_workers, bot_nice=cfg.bot_nice, use_env_redis=False,
        redis_cluster=cfg.redis_cluster, redis_replicas=cfg.replicas,
        data_dir=data_dir, root=cfg.root or ROOT,
        # --preload holds GBs: the embedded Redis's default cap (512 MB, noeviction) would refuse the copies
        redis_maxmemory="0" if cfg.preload else StackConfig().redis_maxmemory,
        log_dir=out / "logs",
        env={"MEEPLE_RATE_LIMIT_PER_MINUTE": "1000000",  # the limiter still runs (its cost is real); no 429s
             # every Locust user is 127.0.0.1: the per-IP quotas (checked all the same) must not refuse them
             "MEEPLE_MAX_ACTIVE_MATCHES_PER_IP": "1000000", "MEEPLE_MAX_BOT_SEATS_PER_IP": "1000000",
             "MEEPLE_MAX_HARD_BOTS_PER_IP": "1000000", "MEEPLE_BOT_FILL_S": str(cfg.bot_fill_s)},
    ))
    served_by = checkout(stack.config.root)
    info: dict[str, Any] = {"config": cfg, "started": time.strftime("%Y-%m-%d %H:%M:%S"), "server": served_by,
                            "load_before": os.getloadavg(), "cores": os.cpu_count(), "speed_before": host_speed_ms()}
    try:
        stack.start()
        for name, url in stack.metrics.items():
            wait_until(lambda u=url: http_ok(u), f"{name} metrics")  # type: ignore[misc]
        assert stack.gateway_url is not None, "the load test needs the gateway"
        info.update(gateway_url=stack.gateway_url, rules=stack.rules_addresses)
        before = scrape_all(stack.metrics)
        cpu_before = stack.cpu_seconds()
        children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        chaos = Chaos(stack, cfg.duration_s) if cfg.chaos else None
        if chaos is not None:  # bot matches' versions, read from the store every 0.5 s (see botstall)
            chaos.observer = botstall.Observer(botstall.connect(stack.redis_url),
                                               discover=LineTail(out / BOT_MATCHES)).start()
        if cfg.preload:
            cfg = dataclasses.replace(cfg, duration_s=max(10, cfg.duration_s // 2))
            drive_locust(cfg, stack, out, prefix="empty_locust")
            halves = [(before, cpu_before), (scrape_all(stack.metrics), stack.cpu_seconds())]
            info["preload"] = preload(redisconn.connect(stack.redis_url), cfg.preload)
            halves.append((scrape_all(stack.metrics), stack.cpu_seconds()))
        try:
            elapsed, stop_reason, progress = drive_locust(cfg, stack, out, chaos)
        finally:
            if chaos is not None and chaos.observer is not None:
                chaos.observer.stop()
                with (out / "bot_samples.jsonl").open("wb") as handle:  # for a second look at the figures
                    for at, table in chaos.observer.tables:
                        handle.write(botstall.encode_table(at, table) + b"\n")
                    for sample in chaos.observer.samples:
                        handle.write(botstall.encode_sample(sample) + b"\n")
        children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        texts = raw_metrics(stack.metrics)
        for name, text in texts.items():
            (out / "metrics" / f"{name}.prom").write_text(text)
        after = {name: promtext.parse(text) for name, text in texts.items()}
        cpu_end = stack.cpu_seconds()
        cpu = {name: max(0.0, cpu_end[name] - cpu_before.get(name, 0.0)) for name in cpu_end}
        cpu["locust"] = ((children_after.ru_utime + children_after.ru_stime)
                         - (children_before.ru_utime + children_before.ru_stime))
        # Nothing may write while the matches are replayed: stop everyone but Redis first.
        stack.stop(keep=("redis",))
        if stack.cluster is not None:
            stack.cluster.wait_healthy()
        audits, lost = audit_run(stack.config, stack.redis_url, out / "acknowledged.jsonl")
    finally:
        stack.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    info["speed_after"] = host_speed_ms()
    history = out / "locust_stats_history.csv"
    stats = read_stats(out / "locust_stats.csv")
    moves_per_s = sustained_rate(history, MOVE, cfg.users) + sustained_rate(history, MOVE_AND_WAIT, cfg.users)
    corrupted = [a for a in audits if not a.ok]
    summary = summarize(cfg, stats, elapsed, moves_per_s, len(corrupted))
    summary["lost_acknowledged_moves"] = len(lost)
    summary["server"] = served_by
    summary["acknowledged_moves"] = sum(1 for _ in read_jsonl(out / "acknowledged.jsonl"))
    summary["failures_by_error"] = failures_by_error(read_failures(out / "locust_failures.csv"))
    errors = read_jsonl(out / "errors.jsonl")
    summary["sdk_retries"] = retries_by_error(errors)
    if chaos is not None:
        summary["chaos"] = chaos.report(failure_times(history), errors, completions(history, MOVE))
    if cfg.preload:
        empty = read_stats(out / "empty_locust_stats.csv").get(MOVE, {})
        loaded = stats.get(MOVE, {})
        p50s = (_ms(empty, "50%"), _ms(loaded, "50%"))
        summary["preload"] = {**info["preload"], "empty_move_p50_ms": p50s[0], "loaded_move_p50_ms": p50s[1],
                              "empty_moves_per_s": round(sustained_rate(out / "empty_locust_stats_history.csv",
                                                                        MOVE, cfg.users), 2),
                              "ratio": round(p50s[1] / p50s[0], 2) if p50s[0] and p50s[1] else None,
                              # the same halves seen from the server, and what each process spent per move
                              "empty": half_figures(*halves[0], *halves[1], _f(empty.get("Request Count"))),
                              "loaded": half_figures(*halves[2], after, cpu_end, _f(loaded.get("Request Count")))}
        server = [summary["preload"][half]["server_move_p50_ms"] for half in ("empty", "loaded")]
        summary["preload"]["server_ratio"] = round(server[1] / server[0], 2) if all(server) else None
    if lost:
        (out / "lost_acknowledged.json").write_bytes(orjson.dumps(lost, option=orjson.OPT_INDENT_2))
    info.update(elapsed=elapsed, stop_reason=stop_reason, cpu=cpu, audits=audits, queue_depths=progress.queue_depths)
    deltas = {name: promtext.delta(after[name], before.get(name, {})) for name in after}
    summary["per_human_move"] = per_human_move(deltas, cpu, summary["acknowledged_moves"])
    write_report(out, summary, info, stats, read_failures(out / "locust_failures.csv"), deltas, history)
    (out / "summary.json").write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))
    return summary, out


def audit_run(config: StackConfig, redis_url: str, acknowledged: Path
              ) -> tuple[list[Audit], list[dict[str, Any]]]:
    """The store's matches replayed (the ``--preload`` copies left out) and the acknowledged moves it lost, by
    the code of the checkout that served the run: another commit's store, views and rules are its own business
    (this checkout's engines read a baseline's cached views as corrupted where the two commits' views differ).
    One way for every checkout, this one included: ``-c`` with the checkout as cwd, so its own ``loadtests.audit``
    and ``services`` run, as its own ``meeple loadtest`` runs them."""
    done = subprocess.run([config.python, "-c", AUDIT_IN_CHECKOUT, redis_url, str(acknowledged), PRELOAD_PREFIX],
                          cwd=config.root, env={**os.environ, **config.env}, capture_output=True, check=False)
    if done.returncode:
        raise RuntimeError(f"the audit in {config.root} failed: {done.stderr.decode(errors='replace')[-2000:]}")
    found = orjson.loads(done.stdout)
    return [Audit(*row) for row in found["audits"]], found["lost"]


#: :func:`audit_run` in a checkout: its audit (the same functions since before issue 47) as one JSON object.
AUDIT_IN_CHECKOUT = """
import sys
from pathlib import Path

import orjson

from loadtests.audit import audit_store, lost_acknowledged, stored_match_ids
from services import redisconn

url, acknowledged, skip = sys.argv[1:4]
store = redisconn.connect(url)
audits = audit_store(store, [m for m in stored_match_ids(store) if not m.startswith(skip)])
acks = Path(acknowledged).read_bytes().splitlines() if Path(acknowledged).exists() else []
lost = lost_acknowledged(store, [orjson.loads(line) for line in acks if line.strip()])
rows = [[a.match_id, a.game, a.status, a.moves, a.problem] for a in audits]
sys.stdout.buffer.write(orjson.dumps({"audits": rows, "lost": lost}))
"""


def checkout(root: Path) -> dict[str, str]:
    """The server's checkout: its directory and commit (with ``+changes`` when its tree differs from it)."""
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10,
                                  check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    commit = git("rev-parse", "--short", "HEAD")
    if commit and git("status", "--porcelain", "--untracked-files=no"):
        commit += "+changes"
    return {"root": str(root), "commit": commit or "unknown"}


#: The processes a request runs through (the gateway, every rules replica, every Redis node): the server. Locust, the
#: bot workers, the timekeeper and the webhook worker are not, and a peer's "server CPU per move" has none of them.
SERVER_PROCESSES = ("gateway", "rules", "redis")


def is_server(process: str) -> bool:
    """``rules-0``, ``redis-2``, ``redis-1-again`` (a cluster node started again after the chaos) are the server."""
    return process.split("-", 1)[0] in SERVER_PROCESSES


def per_human_move(deltas: dict[str, promtext.Samples], cpu: dict[str, float], moves: int) -> dict[str, Any]:
    """What one acknowledged human move cost the stack: each process's CPU (ms), the server's in all
    (``server_cpu_ms``: :data:`SERVER_PROCESSES`, issue 47's figure), and the counts that drive it --
    gateway requests (a parked long-poll counts twice: it runs once to park, once to answer), rules calls, the
    gateway's Redis round trips (blocking reads left out) and bot moves. The counts hardly move with the
    machine's speed, so they compare runs where the CPU figures drift."""
    if not moves:
        return {}
    gateway = deltas.get("gateway", {})
    rules = promtext.merge(samples for name, samples in deltas.items() if name.startswith("rules"))
    bots = promtext.merge(samples for name, samples in deltas.items() if name.startswith("bots"))
    requests = sum(promtext.totals(gateway, "meeple_gateway_request_seconds_count", ("route",)).values())
    calls = sum(promtext.totals(rules, "meeple_rules_rpc_seconds_count", ("method", "game")).values())
    trips = sum(n for (command,), n in promtext.totals(gateway, "meeple_redis_command_seconds_count",
                                                       ("command",)).items() if command not in BLOCKING)
    played = promtext.totals(bots, "meeple_bot_jobs_total", ("outcome",)).get(("played",), 0.0)
    server = sum(seconds for name, seconds in cpu.items() if is_server(name))
    return {"cpu_ms": {name: round(seconds * 1000 / moves, 2) for name, seconds in sorted(cpu.items())},
            "server_cpu_ms": round(server * 1000 / moves, 2),
            "gateway_requests": round(requests / moves, 3), "rules_calls": round(calls / moves, 3),
            "gateway_redis_round_trips": round(trips / moves, 3), "bot_moves": round(played / moves, 3)}


#: Redis commands that wait on purpose (long-polls, idle workers): not round trips a move pays for.
BLOCKING = {"XREAD", "XREADGROUP", "BLPOP", "BRPOP", "BZPOPMIN"}


def half_figures(metrics_before: dict[str, promtext.Samples], cpu_before: dict[str, float],
                 metrics_after: dict[str, promtext.Samples], cpu_after: dict[str, float], moves: float
                 ) -> dict[str, Any]:
    """One half of a ``--preload`` run from the server's side: the gateway's move p50, the Redis
    compare-and-set's (``EVALSHA``) p50 and each process's CPU per human move."""
    gateway = promtext.delta(metrics_after.get("gateway", {}), metrics_before.get("gateway", {}))
    routes = promtext.histograms(gateway, "meeple_gateway_request_seconds", ("method", "route"))
    move = next((h for (method, route), h in routes.items() if method == "POST" and route.endswith("/moves")), None)
    cas = promtext.histograms(gateway, "meeple_redis_command_seconds", ("command",)).get(("EVALSHA",))
    return {"server_move_p50_ms": None if move is None else round(move.p50 * 1000, 2),
            "redis_cas_p50_ms": None if cas is None else round(cas.p50 * 1000, 3),
            "cpu_ms_per_move": {name: round((cpu_after.get(name, 0.0) - cpu) * 1000 / moves, 2)
                                for name, cpu in cpu_before.items() if moves and name in cpu_after}}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """One JSON object a line: the moves Locust's users saw acknowledged (``MEEPLE_LOAD_ACKS``), the errors
    their SDK calls met (``MEEPLE_LOAD_ERRORS``)."""
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def retries_by_error(errors: list[dict[str, Any]]) -> dict[str, int]:
    """Errors the SDK absorbed by retrying (users never saw them), by request and error kind."""
    counts: dict[str, int] = {}
    for error in errors:
        if error["retried"]:
            key = f"{error['name']}: {error['error']}"
            counts[key] = counts.get(key, 0) + 1
    return counts


def failures_by_error(rows: list[dict[str, str]]) -> dict[str, int]:
    """Failed requests by the error Locust recorded (a clean outage is ``503``)."""
    counts: dict[str, int] = {}
    for row in rows:
        key = f"{row.get('Name')}: {row.get('Error')}"
        counts[key] = counts.get(key, 0) + int(row.get("Occurrences") or 0)
    return counts


def failure_times(history: Path) -> list[tuple[float, int]]:
    """(unix time, new failures) for each history row in which the failure count grew."""
    out, before = [], 0
    for row in history_rows(history, "Aggregated"):
        total = int(row["Total Failure Count"] or 0)
        if total > before:
            out.append((float(row["Timestamp"]), total - before))
        before = total
    return out


def completions(history: Path, name: str) -> list[tuple[float, int]]:
    """(unix time, successful ``name`` requests completed since the row before): the throughput each second."""
    out, before = [], None
    for row in history_rows(history, name):
        done = int(row["Total Request Count"] or 0) - int(row["Total Failure Count"] or 0)
        if before is not None:
            out.append((float(row["Timestamp"]), done - before))
        before = done
    return out


#: A second in which fewer moves completed than this share of the 10 s before a fault counts as stalled.
STALLED_BELOW = 0.5


@dataclass
class LineTail:
    """The lines added to a file since the last call (a complete line only: one being written waits)."""

    path: Path
    offset: int = 0

    def __call__(self) -> list[str]:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        done = chunk.rfind(b"\n") + 1
        self.offset += done
        return [line.decode() for line in chunk[:done].splitlines() if line.strip()]


@dataclass
class Chaos:
    """Kills (``kill -9``), once each, a Redis primary, a rules replica, a bot worker and a gateway worker, then
    stops a gateway worker gracefully (``SIGTERM``, what an operator's restart does), spread over the run (at
    30, 45, 60, 75 and 85% of it); the killed primary is started again 15 s later."""

    stack: Stack
    duration_s: float
    events: list[tuple[float, str]] = field(default_factory=list)
    _done: set[str] = field(default_factory=set)
    _dead_primary: Any = None
    #: the port of the primary the chaos killed (its bot matches are told apart from the others')
    killed_port: int | None = None
    observer: botstall.Observer | None = None

    def tick(self, elapsed: float) -> None:
        plan = (("redis", 0.30), ("rules", 0.45), ("bots", 0.60), ("gateway", 0.75), ("gateway_gracefully", 0.85))
        for what, at in plan:
            if what not in self._done and elapsed >= at * self.duration_s:
                self._done.add(what)
                done = getattr(self, f"_kill_{what}")()
                if done:
                    self.events.append((time.time(), done))
        if self._dead_primary is not None and time.time() - self.events[0][0] >= 15:
            self.stack.cluster.restart(self._dead_primary)
            self.events.append((time.time(), f"redis node {self._dead_primary.port} started again"))
            self._dead_primary = None

    def _kill(self, name: str) -> str | None:
        for proc_name, proc in self.stack.procs:
            if proc_name == name and proc.poll() is None:
                self.stack.expected_exits.add(proc.pid)
                proc.send_signal(signal.SIGKILL)
                return f"kill -9 {name} (pid {proc.pid})"
        return None

    def _kill_redis(self) -> str | None:
        cluster = self.stack.cluster
        if cluster is None:
            return None  # one Redis: killing it is an outage, not a failover
        node = cluster.primary_nodes()[0]
        if node.proc is not None:
            self.stack.expected_exits.add(node.proc.pid)
        cluster.kill(node)
        self._dead_primary = node
        self.killed_port = node.port
        return f"kill -9 redis primary :{node.port}"

    def _kill_rules(self) -> str | None:
        names = [name for name, _ in self.stack.procs if name.startswith("rules-")]
        return self._kill(names[-1]) if len(names) > 1 else None

    def _kill_bots(self) -> str | None:
        names = [name for name, _ in self.stack.procs if name.startswith("bots-")]
        return self._kill(names[-1]) if len(names) > 1 else None

    def _kill_gateway(self, graceful: bool = False) -> str | None:
        import psutil

        for name, proc in self.stack.procs:
            if name == "gateway" and proc.poll() is None:
                workers = psutil.Process(proc.pid).children()
                if workers:  # gunicorn starts a new worker in its place
                    if graceful:
                        workers[0].terminate()
                        return f"SIGTERM gateway worker (pid {workers[0].pid}): graceful restart"
                    workers[0].kill()
                    return f"kill -9 gateway worker (pid {workers[0].pid})"
        return None

    def _kill_gateway_gracefully(self) -> str | None:
        return self._kill_gateway(graceful=True)

    def report(self, failures: list[tuple[float, int]], errors: list[dict[str, Any]] | None = None,
               moves: list[tuple[float, int]] | None = None) -> dict[str, Any]:
        """The kills, the failures in windows (failures less than 5 s apart share a window), and per fault the
        errors (``errors.jsonl``) from it to the next: users' failures, the SDK's retries, kinds, window, and
        how long completed moves (``moves``: per second) stayed under half their rate before the fault
        (a failover the retries ride out shows as a stall, not as failures)."""
        start = self.events[0][0] if self.events else 0.0
        windows: list[dict[str, float]] = []
        for at, count in failures:
            if windows and at - windows[-1]["to_unix"] <= 5:
                windows[-1]["to_unix"] = at
                windows[-1]["failures"] += count
            else:
                windows.append({"from_unix": at, "to_unix": at, "failures": count})
        for window in windows:
            window["from_s"] = round(window["from_unix"] - start, 1)
            window["to_s"] = round(window["to_unix"] - start, 1)
            window["length_s"] = round(window["to_unix"] - window["from_unix"] + 1, 1)
        return {"events": [{"at_s": round(at - start, 1), "what": what} for at, what in self.events],
                "failure_windows": windows, "faults": self.faults(errors or [], moves or []),
                "note": "times are seconds after the first kill; Locust's history has one row a second"}


    def faults(self, errors: list[dict[str, Any]], moves: list[tuple[float, int]] | None = None
               ) -> list[dict[str, Any]]:
        """Each fault (a kill or a stop) with the errors that came after it and before the next one, and the
        seconds in that time when completed moves fell under :data:`STALLED_BELOW` of their rate before it."""
        kills = [(at, what) for at, what in self.events if what.startswith(("kill", "SIGTERM"))]
        out = []
        for i, (at, what) in enumerate(kills):
            until = kills[i + 1][0] if i + 1 < len(kills) else float("inf")
            mine = [e for e in errors if at <= e["at"] < until]
            kinds: dict[str, int] = {}
            for e in mine:
                key = f"{e['error']} ({'retried' if e['retried'] else 'failed'})"
                kinds[key] = kinds.get(key, 0) + 1
            fault: dict[str, Any] = {"what": what, "failed": sum(1 for e in mine if not e["retried"]),
                                     "retried": sum(1 for e in mine if e["retried"]), "kinds": kinds}
            if mine:
                first, last = min(e["at"] for e in mine), max(e["at"] for e in mine)
                fault.update(first_error_s=round(first - at, 1), last_error_s=round(last - at, 1),
                             window_s=round(last - first, 1))
            fault.update(_stall(moves or [], at, until))
            bots = self.bot_matches(at, until, killed=what.startswith("kill -9 redis primary"))
            if bots:
                fault["bot_matches"] = bots
            out.append(fault)
        return out

    def bot_matches(self, at: float, until: float, killed: bool) -> dict[str, dict[str, Any]]:
        """The bot matches' stall after a fault, per class (see :mod:`loadtests.botstall`): by the primary that
        held each match's slot and its job stream's just before it, when the fault killed a primary."""
        observer = self.observer
        if observer is None or not observer.samples:
            return {}
        samples, tables = list(observer.samples), list(observer.tables)
        table = botstall.table_at(tables, at)
        port = self.killed_port
        name = (botstall.node_named(table, lambda node: node.rsplit(":", 1)[-1] == str(port))
                if killed and port is not None else None)
        # (after the observer's last round nothing is known: no stall is read into the silence)
        return botstall.fault_figures(samples, tables, at, min(until, samples[-1].at), name)


def _stall(moves: list[tuple[float, int]], at: float, until: float) -> dict[str, Any]:
    """The seconds after a fault at ``at`` (and before ``until``) in which moves stalled: ``stalled_s`` of them,
    the first from ``stall_from_s`` to the last ending at ``stall_to_s`` (s after the fault)."""
    before = sorted(n for t, n in moves if at - 10 <= t < at)
    if not before:
        return {}
    usual = before[len(before) // 2]
    slow = [t for t, n in moves if at <= t < min(until, at + 60) and n < STALLED_BELOW * usual]
    if not slow:
        return {"stalled_s": 0, "moves_per_s_before": usual}
    return {"stalled_s": len(slow), "stall_from_s": round(slow[0] - 1 - at, 1), "stall_to_s": round(slow[-1] - at, 1),
            "moves_per_s_before": usual}


PRELOAD_PREFIX = "preload-"  # match ids never hold a '-': these cannot collide with real ones


def preload(client: Any, count: int, batch: int = 500) -> dict[str, Any]:
    """Copy matches the first half of the run played (finished and active ones) ``count`` times over under
    new ids (``DUMP``/``RESTORE`` of each key, TTLs kept; idempotency records and presence left out), so the
    second half runs against a store holding ``count`` more matches. The audit skips the copies."""
    from services.core.record.store import KEY_SUFFIXES, keys

    started = time.monotonic()
    templates = []
    for match_id in stored_match_ids(client):
        meta = client.get(keys(match_id)[1])
        if meta and orjson.loads(meta).get("status") in ("finished", "active"):
            dumps = [(client.dump(key), client.pttl(key)) for key in keys(match_id)]
            if all(dump is not None for dump, _ in dumps):
                templates.append(dumps)
        if len(templates) >= 200:
            break
    if not templates:
        raise RuntimeError("nothing to preload from: the first half played no match")
    made = 0
    while made < count:
        pipe = client.pipeline(transaction=False)
        for i in range(made, min(count, made + batch)):
            for suffix, (dump, ttl) in zip(KEY_SUFFIXES, templates[i % len(templates)], strict=True):
                pipe.restore(f"match:{{{PRELOAD_PREFIX}{i}}}:{suffix}", max(0, ttl), dump, replace=True)
        pipe.execute()
        made = min(count, made + batch)
    copied = time.monotonic() - started
    info: Any = client.info("memory")
    used = (sum(int(v["used_memory"]) for v in info.values()) if isinstance(next(iter(info.values())), dict)
            else int(info["used_memory"]))
    return {"matches": count, "templates": len(templates), "seconds": round(copied, 1),
            "redis_used_memory_bytes": used, "aof_rewrite_s": round(settle_aof(client), 1)}


def settle_aof(client: Any, timeout_s: float = 900.0) -> float:
    """Rewrite every node's append-only file after the copy and wait until it is done; the seconds it took.

    The copy writes GBs in a minute, so Redis's automatic rewrite (at each doubling of the file) would fork and
    rewrite the whole store during the measured half: a one-off of the burst, which a store that grew to this
    size over days went through long before. Rewritten now, the file holds the store and the half's own
    writes are far from doubling it."""
    started = time.monotonic()
    nodes = client.get_nodes() if hasattr(client, "get_nodes") else [None]

    def run(node: Any, *args: str) -> Any:
        reply = client.execute_command(*args) if node is None else client.execute_command(*args, target_nodes=node)
        if isinstance(reply, dict) and len(reply) == 1 and isinstance(next(iter(reply.values())), dict):
            reply = next(iter(reply.values()))  # a cluster client's answer keyed by the node
        return reply

    pending = list(nodes)
    while pending and time.monotonic() - started < timeout_s:
        waiting = []
        for node in pending:
            info = run(node, "INFO", "persistence")
            if not int(info.get("aof_enabled", 0)):
                continue
            if int(info["aof_rewrite_in_progress"]) or int(info["aof_rewrite_scheduled"]):
                waiting.append(node)
            elif int(info["aof_current_size"]) > 1.2 * int(info["aof_base_size"]):
                with contextlib.suppress(Exception):  # one may have started since the INFO
                    run(node, "BGREWRITEAOF")
                waiting.append(node)
        pending = waiting
        if pending:
            time.sleep(0.5)
    return time.monotonic() - started


def drive_locust(cfg: LoadConfig, stack: Stack, out: Path, chaos: Chaos | None = None, prefix: str = "locust"
                 ) -> tuple[float, str, Progress]:
    """Run Locust headless against the stack; print a progress line; returns (seconds, why it stopped)."""
    env = {**os.environ,
           "MEEPLE_LOAD_BOT_LEVEL": cfg.bot_level,
           "MEEPLE_LOAD_BOT_PLAYERS": cfg.bot_players,
           "MEEPLE_LOAD_MAX_REQUESTS": str(cfg.request_cap()),
           "MEEPLE_LOAD_MAX_REQUESTS_PER_USER": str(cfg.max_requests_per_user),
           "MEEPLE_LOAD_OPTIONS": orjson.dumps(cfg.options).decode(),
           "MEEPLE_LOAD_THINK_S": orjson.dumps(list(cfg.think_s)).decode(),
           "MEEPLE_LOAD_MOVE_WAIT_SHARE": str(cfg.move_wait_share),
           "MEEPLE_LOAD_WEIGHTS": orjson.dumps(cfg.weights).decode(),
           "MEEPLE_LOAD_ACKS": str(out / "acknowledged.jsonl"),
           "MEEPLE_LOAD_ERRORS": str(out / "errors.jsonl"),
           "MEEPLE_LOAD_BOT_MATCHES": str(out / BOT_MATCHES)}
    argv = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--only-summary",
            "-u", str(cfg.users), "-r", str(cfg.spawn_rate), "-t", f"{cfg.duration_s}s",
            "--host", str(stack.gateway_url), "--csv", str(out / prefix), "--csv-full-history",
            "--stop-timeout", "0", "--exit-code-on-error", "0", "--loglevel", "WARNING"]
    progress = Progress()
    bots = [url for name, url in stack.metrics.items() if name.startswith("bots")]
    tty = sys.stderr.isatty()
    with (out / "logs" / "locust.log").open("ab") as log:
        start = time.monotonic()
        locust = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)
        reason = "duration reached"
        last_print = 0.0
        try:
            while locust.poll() is None:
                time.sleep(2.0)
                elapsed = time.monotonic() - start
                if chaos is not None:
                    chaos.tick(elapsed)
                problem = stack.failed()
                if problem:
                    reason = f"aborted: {problem}"
                    break
                if elapsed > cfg.duration_s + 60:
                    reason = "aborted: Locust did not stop on time"
                    break
                line = progress.line(cfg, elapsed, out / f"{prefix}_stats_history.csv", bots)
                if not cfg.quiet and (tty or elapsed - last_print >= 10):
                    print(("\r" if tty else "") + line, end="" if tty else "\n", file=sys.stderr, flush=True)
                    last_print = elapsed
        finally:
            if locust.poll() is None:
                locust.send_signal(signal.SIGINT)  # Locust writes its CSVs on the way out
                try:
                    locust.wait(20)
                except subprocess.TimeoutExpired:
                    locust.kill()
                    locust.wait()
        elapsed = time.monotonic() - start
    if not cfg.quiet and tty:
        print(file=sys.stderr)
    if reason == "duration reached" and elapsed < cfg.duration_s - 2:
        reason = "request cap reached" if locust.returncode == 0 else f"Locust exited with {locust.returncode}"
    return min(elapsed, float(cfg.duration_s)) if reason == "duration reached" else elapsed, reason, progress


def parse_weights(text: str) -> dict[str, int]:
    try:
        pairs = (part.split("=", 1) for part in text.split(",") if part)
        weights = {key.strip(): int(value) for key, value in pairs}
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected bots=N,pairs=N,spectators=N, got {text!r}") from None
    if not set(weights) <= {"bots", "pairs", "spectators"} or not any(weights.values()):
        raise argparse.ArgumentTypeError("weights are bots, pairs and spectators; at least one above 0")
    return weights


def parse_think(text: str) -> tuple[float, float]:
    try:
        low, _, high = text.partition(",")
        pair = (float(low), float(high or low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LOW,HIGH seconds, got {text!r}") from None
    if not 0 <= pair[0] <= pair[1]:
        raise argparse.ArgumentTypeError("think time needs 0 <= LOW <= HIGH")
    return pair


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("loadtest", help="boot the stack, run Locust, write a latency/throughput report",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--spawn-rate", type=float, default=10.0, help="users started per second")
    parser.add_argument("--duration", type=int, default=180, help="seconds of load (the run stops by itself)")
    parser.add_argument("--out", type=Path, default=None, help="report directory (default var/loadtests/<time>)")
    parser.add_argument("--json", action="store_true", help="also print the summary as one JSON object")
    parser.add_argument("--gateway-workers", "--gateways", type=int, default=0,
                        help="gateway processes (gunicorn workers: each its own process with its own Redis clients; "
                             "default (0): one per two cores, at least one, two with --chaos)")
    parser.add_argument("--redis-cluster", type=int, default=0, metavar="N",
                        help="run on a local Redis Cluster of N primaries (at least 3)")
    parser.add_argument("--replicas", type=int, default=0, metavar="R", help="with --redis-cluster: replicas each")
    parser.add_argument("--chaos", action="store_true",
                        help="kill a Redis primary, a rules replica, a bot worker and a gateway worker during the run")
    parser.add_argument("--preload", type=int, default=0, metavar="N",
                        help="half the run on the empty store, then N matches copied in, then the other half; "
                             "the summary compares move p50 (preload.ratio)")
    parser.add_argument("--rules-replicas", type=int, default=1)
    parser.add_argument("--bot-workers", type=int, default=1)
    parser.add_argument("--bot-nice", type=int, default=10, help="bot workers' CPU priority below the request path")
    parser.add_argument("--bot-level", choices=("easy", "normal", "hard"), default="easy")
    parser.add_argument("--bot-players", choices=("min", "max"), default="min",
                        help="matches against bots: as few seats as the game allows, or any size up to full")
    parser.add_argument("--max-requests", type=int, default=0, help="stop the run after this many requests")
    parser.add_argument("--max-requests-per-user", type=int, default=100_000)
    parser.add_argument("--think", type=parse_think, default=(0.0, 0.04), metavar="LOW,HIGH",
                        help="seconds a person thinks before a move (uniform)")
    parser.add_argument("--move-wait-share", type=float, default=0.5, metavar="SHARE",
                        help="the share of REST matches played one request a turn (moves sent with wait); the "
                             "others send a move, then long-poll until=turn")
    parser.add_argument("--option", action="append", type=parse_option, default=[], metavar="GAME:KEY=JSON",
                        help="game option for the load's matches, e.g. clash:match=\"single\"")
    parser.add_argument("--weights", type=parse_weights, default={"bots": 3, "pairs": 3, "spectators": 1},
                        help="user mix, e.g. bots=3,pairs=3,spectators=1")
    parser.add_argument("--bot-fill", type=int, default=5, help="matchmaking fills seats with bots after S s")
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    parser.add_argument("--baseline", type=checkout_dir, default=None, metavar="DIR",
                        help="also drive the same load at the server stack of the checkout in DIR (its own gateway, "
                             "rules service, bots and Redis, run by DIR/.venv/bin/python when it has one), this "
                             "checkout first, and print the server CPU per human move side by side; reports go to "
                             "OUT/now and OUT/baseline")
    parser.add_argument("--rounds", type=int, default=1, metavar="N",
                        help="with --baseline: N turns of this checkout then the baseline (compared by medians)")
    parser.add_argument("--profile", action="store_true",
                        help="instead of a load test: profile the move path (writes profile.md, profile.html)")
    parser.add_argument("--moves", type=int, default=2000, help="with --profile: moves to measure")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.baseline is not None and (args.profile or args.rounds < 1):
        raise SystemExit("meeple loadtest: --baseline takes --rounds 1 or more, and no --profile")
    if args.profile:
        from .profile_move import main as profile

        return profile(args.moves, args.out or ROOT / "var" / "profiles" / time.strftime("%Y%m%d-%H%M%S"))
    options: dict[str, dict[str, Any]] = {}
    for gid, key, value in args.option:
        options.setdefault(gid, {})[key] = value
    cfg = LoadConfig(users=args.users, spawn_rate=args.spawn_rate, duration_s=args.duration, out=args.out,
                     gateway_workers=args.gateway_workers,
                     rules_replicas=args.rules_replicas, bot_workers=args.bot_workers, bot_nice=args.bot_nice,
                     bot_level=args.bot_level,
                     bot_players=args.bot_players,
                     max_requests=args.max_requests, max_requests_per_user=args.max_requests_per_user,
                     think_s=args.think, options=options, weights=args.weights, bot_fill_s=args.bot_fill,
                     quiet=args.quiet, redis_cluster=args.redis_cluster, replicas=args.replicas, chaos=args.chaos,
                     preload=args.preload, move_wait_share=args.move_wait_share)
    if args.baseline is not None:
        comparison = run_against_baseline(cfg, args.baseline, args.rounds)
        print("\n".join(comparison_lines(comparison)), file=sys.stderr)
        if args.json:
            print(orjson.dumps(comparison, option=orjson.OPT_INDENT_2).decode())
        return 1 if comparison["corrupted_matches"] or comparison["lost_acknowledged_moves"] else 0
    summary, out = run_loadtest(cfg)
    print_run(summary, out)
    if args.json:
        print(orjson.dumps(summary, option=orjson.OPT_INDENT_2).decode())
    return 1 if summary["corrupted_matches"] or summary["lost_acknowledged_moves"] else 0


def print_run(summary: dict[str, Any], out: Path, label: str = "") -> None:
    """The report's path and the server CPU per human move, on stderr (stdout is the ``--json`` object's)."""
    print(f"{label + ': ' if label else ''}report: {out / 'report.md'}", file=sys.stderr)
    per = summary.get("per_human_move") or {}
    if per:
        parts = ", ".join(f"{name} {ms:.2f}" for name, ms in per["cpu_ms"].items() if is_server(name))
        print(f"server CPU per human move: {per['server_cpu_ms']:.2f} ms ({parts}; without Locust and the bots), "
              f"{summary['moves_per_s']:.1f} human moves/s", file=sys.stderr)


def checkout_dir(text: str) -> Path:
    """``--baseline DIR``: a checkout of this project (its ``services`` package is what runs)."""
    root = Path(text).expanduser().resolve()
    if not (root / "services" / "__init__.py").is_file():
        raise argparse.ArgumentTypeError(f"{text}: not a checkout of meeple (no services/__init__.py)")
    return root


def round_dir(out: Path, side: str, number: int) -> Path:
    """``OUT/now`` and ``OUT/baseline`` for the first round, ``OUT/now-2``, ``OUT/baseline-2``... after it."""
    return out / (side if number == 1 else f"{side}-{number}")


def run_against_baseline(cfg: LoadConfig, baseline: Path, rounds: int) -> dict[str, Any]:
    """The same load (this checkout's Locust scenario, the same settings) at this checkout's stack, then at the one
    of the checkout in ``baseline``, ``rounds`` times in turn, each run audited and reported on its own; returns
    :func:`loadtests.compare.compare` of them, also written to ``OUT/comparison.json``."""
    out = cfg.out or ROOT / "var" / "loadtests" / time.strftime("%Y%m%d-%H%M%S")
    sides: dict[str, list[dict[str, Any]]] = {"now": [], "baseline": []}
    for number in range(1, rounds + 1):
        for side, root in (("now", None), ("baseline", baseline)):
            summary, report = run_loadtest(dataclasses.replace(cfg, out=round_dir(out, side, number), root=root))
            print_run(summary, report, f"{side} {number}")
            sides[side].append(summary)
    comparison = compare(sides["now"], sides["baseline"], str(baseline))
    (out / "comparison.json").write_bytes(orjson.dumps(comparison, option=orjson.OPT_INDENT_2))
    return comparison


__all__ = ["Audit", "LoadConfig", "add_parser", "run_loadtest"]
