"""The TypeScript client (clients/typescript) against a live stack, with Node's own test runner.

The stacks are this directory's: ``ws_stack`` (gunicorn with the gateway's worker: WebSockets) and
``plain_stack`` (no WebSocket: ``/ws`` answers 501, so events fall back to long-polls), and one of the test's own
whose rate limit is 2 requests a minute (a socket move refused 429 with ``retry_after``). ``node --test`` runs the
compiled tests, which play whole CLASH games against bots through the client and its example. Node and npm come
from ``make test-tools`` (apt-get when missing); the packages from ``npm ci`` (package-lock.json).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from tests.gateway.conftest import RulesProcess
from tooling.stack import ROOT

from .conftest import Stack, gunicorn_stack
from .test_sdk_backends import new_key, started_swiss

TS = ROOT / "clients" / "typescript"


def _run(argv: list[str], env: dict[str, str] | None = None, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=TS, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_typescript_client_plays_clash_against_a_bot_over_websocket_and_long_poll(
        ws_stack: Stack, plain_stack: Stack, rules: RulesProcess) -> None:
    assert shutil.which("node") and shutil.which("npm"), "node and npm are missing: run make test-tools"
    if not (TS / "node_modules" / ".package-lock.json").exists():
        installed = _run(["npm", "ci", "--no-audit", "--no-fund"])
        assert installed.returncode == 0, installed.stdout + installed.stderr
    built = _run(["npm", "run", "build"])
    assert built.returncode == 0, built.stdout + built.stderr
    key, _ = new_key(ws_stack)  # a backend's: a Swiss of three whose first round is made (tournamentRounds)
    env = {**os.environ, "MEEPLE_URL": ws_stack.url, "MEEPLE_PLAIN_URL": plain_stack.url, "MEEPLE_KEY": key,
           "MEEPLE_TOURNAMENT": started_swiss(ws_stack, rules, key, ["ann", "ben", "cat"])}
    with gunicorn_stack(rules.port, MEEPLE_RATE_LIMIT_PER_MINUTE="2") as limited:
        env["MEEPLE_LIMITED_URL"] = limited.url
        run = _run(["node", "--experimental-websocket", "--test", "--test-reporter=spec", "dist/test/"], env, 600)
    print(run.stdout[-4000:])
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    counts = dict(re.findall(r"\b(tests|pass|fail) (\d+)", run.stdout))
    assert counts.get("fail") == "0" and counts.get("pass") == counts.get("tests") != "0", run.stdout[-3000:]
