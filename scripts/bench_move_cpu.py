"""The gateway's CPU per move, two checkouts side by side: the same moves, over real HTTP, against each one's
gateway (gunicorn with its worker, one process), sharing one redis-server and one rules server.

    .venv/bin/python scripts/bench_move_cpu.py OTHER_CHECKOUT [--rounds 12] [--moves 150] [--json]

``OTHER_CHECKOUT`` is another worktree with its own ``.venv`` (``git worktree add ../base <commit>`` and ``make
install`` there); this checkout is the second. In each round every gateway in turn (the order alternates) plays
``--moves`` moves of 2-player CLASH between two humans with the same seed and the same choices: read the status
with the legal moves of the seat to act (``?include=legal_moves``), submit one (``?include=legal_moves``, an
``Idempotency-Key``), and a long-poll (``wait=0``) of the other seat. The figure is the gateway worker's own CPU
time (``/proc/<pid>/stat``: user + system, all its threads) per move, the median over the rounds; the driver's
and the servers' CPU are not in it. A loaded machine slows both alike within a round: compare the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tooling.stack import GUNICORN_CONF, free_port, grpc_serving, http_ok, redis_server_binary, wait_until  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime of every thread


def worker_of(master: int) -> int:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


class Gateway:
    def __init__(self, root: Path, stack: ExitStack, redis_url: str, rules: str, prom: Path) -> None:
        self.root, self.port = root, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "REDIS_URL": redis_url, "MEEPLE_RULES_ADDR": rules, "PROMETHEUS_MULTIPROC_DIR": str(prom),
               "MEEPLE_RATE_LIMIT_PER_MINUTE": "0", "MEEPLE_MAX_ACTIVE_MATCHES_PER_IP": "0",
               "MEEPLE_MAX_BOT_SEATS_PER_IP": "0", "MEEPLE_MAX_HARD_BOTS_PER_IP": "0"}
        env.pop("MEEPLE_CONTRACT_STRICT", None)
        prom.mkdir()
        argv = [str(root / ".venv" / "bin" / "python"), "-m", "gunicorn", "-c", GUNICORN_CONF, "--workers", "1",
                "--bind", f"127.0.0.1:{self.port}", "services.gateway.wsgi:app"]
        self.proc = subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stack.callback(self.stop)
        wait_until(lambda: http_ok(f"{self.url}/healthz"), f"the gateway of {root}", self.proc)
        self.worker = worker_of(self.proc.pid)
        self.http = requests.Session()

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(20)

    def call(self, method: str, path: str, token: str | None = None, **kw: Any) -> Any:
        headers = {**kw.pop("headers", {}), **({"Authorization": f"Bearer {token}"} if token else {})}
        reply = self.http.request(method, self.url + path, headers=headers, timeout=30, **kw)
        assert reply.status_code < 300, (path, reply.status_code, reply.text)
        return reply.json()

    def play(self, moves: int, seed: int) -> tuple[float, float]:
        """``moves`` moves; returns (worker CPU s, wall s)."""
        rng = random.Random(seed)
        cpu, wall, played = cpu_s(self.worker), time.perf_counter(), 0
        while played < moves:
            made = self.call("POST", "/v1/matches", json={"game": "clash", "players": 2, "seed": rng.randrange(2**31),
                                                          "join": True, "options": {"match": "single"}})
            tokens = [made["token"], self.call("POST", f"/v1/matches/{made['id']}/join", json={})["token"]]
            path = f"/v1/matches/{made['id']}"
            doc = self.call("GET", path + "?include=legal_moves", tokens[0])
            while doc["status"] == "active" and played < moves:
                seat = doc["to_act"][0]
                doc = self.call("GET", path + "?include=legal_moves", tokens[seat])
                move = rng.choice(doc["legal_moves"])
                doc = self.call("POST", path + "/moves?include=legal_moves", tokens[seat],
                                json={"move": move, "version": doc["version"]},
                                headers={"Idempotency-Key": uuid.UUID(int=rng.getrandbits(128)).hex})
                self.call("GET", path + f"/events?after={doc['version'] - 1}&wait=0", tokens[1 - seat])
                played += 1
        return cpu_s(self.worker) - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("other", type=Path, help="the other checkout (with its own .venv)")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--moves", type=int, default=150, help="per gateway per round")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    roots = {"other": args.other.resolve(), "this": ROOT}
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="meeple-cpu-") as tmp:
        redis_port, rules_port = free_port(), free_port()
        redis_proc = subprocess.Popen([redis_server_binary(), "--port", str(redis_port), "--save", "", "--appendonly",
                                       "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stack.callback(redis_proc.terminate)
        rules_proc = subprocess.Popen([sys.executable, "-m", "services.cli", "serve", "rules", "--port",
                                       str(rules_port)], cwd=ROOT, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
        stack.callback(rules_proc.terminate)
        rules = f"127.0.0.1:{rules_port}"
        wait_until(lambda: grpc_serving(rules), "the rules server", rules_proc)
        gateways = {name: Gateway(root, stack, f"redis://127.0.0.1:{redis_port}/0", rules, Path(tmp) / name)
                    for name, root in roots.items()}
        for gw in gateways.values():
            gw.play(20, 0)  # warm up: imports, connections, caches
        cpu: dict[str, list[float]] = {name: [] for name in gateways}
        rate: dict[str, list[float]] = {name: [] for name in gateways}
        for n in range(args.rounds):
            order = list(gateways) if n % 2 == 0 else list(reversed(gateways))
            for name in order:
                spent, wall = gateways[name].play(args.moves, seed=n)
                cpu[name].append(spent * 1000 / args.moves)
                rate[name].append(args.moves / wall)
    load = os.getloadavg()
    figures = {name: (statistics.median(cpu[name]), statistics.median(rate[name])) for name in roots}
    ratio = figures["this"][0] / figures["other"][0]
    result: dict[str, Any] = {name: {"cpu_ms_per_move": round(ms, 3), "moves_per_s": round(per_s, 1),
                                     "root": str(roots[name])} for name, (ms, per_s) in figures.items()}
    result.update(ratio_this_to_other=round(ratio, 3), rounds=args.rounds, moves_per_round=args.moves,
                  load_average_after=[round(x, 2) for x in load])
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for name, (ms, per_s) in figures.items():
        print(f"{name:<6} {ms:7.3f} ms CPU per move  {per_s:6.1f} moves/s  ({roots[name]})")
    print(f"this / other: {ratio:.3f}  (median of {args.rounds} rounds of {args.moves} moves; "
          f"load average {load[0]:.1f})")


if __name__ == "__main__":
    main()
