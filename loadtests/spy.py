"""The move path as production runs it, sampled with py-spy: a gunicorn worker and the rules server.

Part of ``meeple loadtest --profile`` when ``py-spy`` is installed (it is in the ``dev`` extra; it needs
ptrace, which some containers forbid: then this part is skipped with a note). Human-vs-human matches are
played over real HTTP (legal moves, the move, the other seat's long-poll) while py-spy samples, with
``--gil``, only the threads that hold the GIL: Python CPU work, not threads waiting on sockets. Each sample
is charged to the innermost library its stack is in (gateway) or to the engine call the servicer made
(rules server).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import requests

from tooling.stack import GUNICORN_CONF, ROOT, free_port, http_ok, wait_until

GATEWAY_CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Redis client (redis-py, hiredis)", ("redis/", "hiredis")),
    ("gRPC client (grpcio, protobuf)", ("grpc/", "_pb2", "google/protobuf")),
    ("prometheus-client (metrics)", ("prometheus_client/",)),
    ("Flask / Werkzeug", ("flask/", "werkzeug/")),
    ("gunicorn (HTTP parsing, worker)", ("gunicorn/", "gunicorn_worker.py")),
    ("gateway code (handlers, store, moves, rate limit)", ("services/gateway/",)),
)
#: The engine entry points the servicer calls, by function name.
ENGINE_CALLS = {"decode": "engine: decode state", "encode": "engine: encode state",
                "apply_in_place": "engine: apply", "apply": "engine: apply", "view": "engine: view",
                "legal_moves": "engine: legal moves"}


class HttpClient:
    """Just enough of Flask's test client over real HTTP for :class:`driver.Driver`."""

    def __init__(self, base: str) -> None:
        self.base, self.session = base, requests.Session()

    def get(self, path: str, **kwargs: Any) -> Any:
        return _Reply(self.session.get(self.base + path, timeout=30, **kwargs))

    def post(self, path: str, **kwargs: Any) -> Any:
        return _Reply(self.session.post(self.base + path, timeout=30, **kwargs))


class _Reply:
    def __init__(self, response: requests.Response) -> None:
        self.response, self.status_code = response, response.status_code

    def get_json(self) -> Any:
        return self.response.json()

    def get_data(self, as_text: bool = False) -> Any:
        return self.response.text if as_text else self.response.content


def py_spy() -> str | None:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    return found if Path(found).exists() else None


def categorize(lines: Iterable[str], rules: bool) -> Counter[str]:
    """Samples per category from py-spy's raw (collapsed-stack) output."""
    spent: Counter[str] = Counter()
    pending = ""
    for line in lines:
        # A frame's label can span lines (py-spy prints a local's repr, and a werkzeug proxy's repr outside a
        # request is an error text with newlines): a record ends at the line that ends with its count.
        record = pending + line.rstrip()
        stack, _, count = record.rpartition(" ")
        if not count.isdigit():
            pending = record + " "
            continue
        pending = ""
        if not stack:
            continue
        frames = stack.split(";")
        spent[_rules_category(frames) if rules else _gateway_category(frames)] += int(count)
    return spent


def _gateway_category(frames: list[str]) -> str:
    for frame in reversed(frames):
        for name, needles in GATEWAY_CATEGORIES:
            if any(needle in frame for needle in needles):
                return name
    return "other (threads, sockets, stdlib)"


def _rules_category(frames: list[str]) -> str:
    for frame in frames:  # outermost engine frame: the call the servicer made
        if "services/rules/games/" in frame:
            return ENGINE_CALLS.get(frame.split(" ", 1)[0].rsplit(".", 1)[-1], "engine: to_act, result, other")
    for frame in reversed(frames):
        if "prometheus_client/" in frame:
            return "prometheus-client (metrics)"
        if "services/rules/server.py" in frame:
            return "servicer (JSON, protobuf messages)"
        if "grpc/" in frame or "_pb2" in frame or "google/protobuf" in frame:
            return "gRPC server (grpcio, thread pool)"
    return "other (threads, stdlib)"


def run_spy(redis_url: str, rules_addr: str, rules_pid: int, out: Path, seconds: int = 15) -> str:
    """Markdown with both breakdowns, or a note saying why there is none."""
    from .driver import Driver, post_move

    spy = py_spy()
    if spy is None:
        return "py-spy is not installed (`pip install -e '.[dev]'`): no sampling of the real gunicorn worker.\n"
    port = free_port()
    env = {**os.environ, "REDIS_URL": redis_url, "MEEPLE_RULES_ADDR": rules_addr,
           "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="meeple-prom-"),
           "MEEPLE_RATE_LIMIT_PER_MINUTE": str(10**9), "MEEPLE_MAX_ACTIVE_MATCHES_PER_IP": "0",
           "MEEPLE_MAX_BOT_SEATS_PER_IP": "0", "MEEPLE_MAX_HARD_BOTS_PER_IP": "0"}
    gunicorn = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", GUNICORN_CONF, "--workers", "1",
                                 "--bind", f"127.0.0.1:{port}", "services.gateway.wsgi:app"],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stop = threading.Event()
    moves = [0]
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: http_ok(f"{url}/healthz"), "gunicorn", gunicorn)
        worker = int(Path(f"/proc/{gunicorn.pid}/task/{gunicorn.pid}/children").read_text().split()[0])

        def drive() -> None:
            client = HttpClient(url)
            driver = Driver(client)  # type: ignore[arg-type]
            n = 0
            while not stop.is_set():
                slot = n % 8
                path, token, body = driver.next_move(slot)
                reply = post_move(client, path, token, body, f"spy-{n}")  # type: ignore[arg-type]
                driver.record(slot, reply)
                other = next(t for t in driver.matches[slot]["tokens"] if t != token)
                client.get(f"{path.rsplit('/', 1)[0]}/events?after={reply['version'] - 1}&wait=5",
                           headers={"Authorization": f"Bearer {other}"})
                n += 1
                moves[0] = n

        thread = threading.Thread(target=drive, daemon=True)
        thread.start()
        files = {name: out / f"py-spy-{name}.txt" for name in ("gateway", "rules")}
        recorders = [subprocess.Popen([spy, "record", "--pid", str(pid), "--duration", str(seconds), "--rate", "250",
                                       "--gil", "--nonblocking", "--format", "raw", "--output", str(files[name])],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                     for name, pid in (("gateway", worker), ("rules", rules_pid))]
        errors = [r.communicate(timeout=seconds + 60)[1].decode() for r in recorders]
        stop.set()
        thread.join(30)
        if not all(path.exists() for path in files.values()):
            return f"py-spy could not sample (ptrace not allowed here?): {' '.join(errors).strip()[:300]}\n"
        gateway = categorize(files["gateway"].read_text().splitlines(), rules=False)
        rules = categorize(files["rules"].read_text().splitlines(), rules=True)
    finally:
        stop.set()
        gunicorn.send_signal(signal.SIGTERM)
        gunicorn.wait(15)
    return render(gateway, rules, moves[0], seconds)


def render(gateway: Counter[str], rules: Counter[str], moves: int, seconds: int) -> str:
    lines = [
        "## The real thing: gunicorn worker and rules server under py-spy", "",
        f"{moves} move cycles in {seconds} s over HTTP (legal moves, the move, the other seat's long-poll), "
        "gunicorn with one worker process. Shares of each process's Python CPU (py-spy `--gil`: only the "
        "thread holding the GIL is sampled, so waiting on Redis or the network is not counted).", "",
    ]
    for title, spent in (("gateway worker", gateway), ("rules server", rules)):
        total = sum(spent.values()) or 1
        lines += [f"| {title}: where the CPU goes | share |", "|---|---:|"]
        lines += [f"| {name} | {count / total:.0%} |" for name, count in spent.most_common()]
        lines.append("")
    return "\n".join(lines)
