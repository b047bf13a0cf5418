"""Schemathesis against the live gateway (gunicorn, its own worker, real Redis and rules service).

Every operation of the OpenAPI document gets schema-driven requests, valid and invalid ones (its
``examples``, ``coverage`` and ``fuzzing`` phases), once without a token and once with a real seat token
for a real match. The event stream is left out (a stream answers for as long as it is open: its own tests
cover it). Every check runs but one: ``positive_data_acceptance`` demands that any request the
schema admits succeeds, and the game rules (which game ids exist, each game's player range and options,
``seats`` listing exactly ``players``) are the rules service's, not the schema's: such requests get a
precise 400, which is the contract. So the run requires 0 server errors (5xx) and 0 responses the
document does not describe (status, content type, headers, body schema), with bounded examples and a
fixed seed (reproducible: ``st run ... --seed 19``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tooling.stack import GUNICORN_CONF, ROOT, free_port, http_ok, wait_until

SCHEMATHESIS = [sys.executable, "-m", "schemathesis.cli"]
#: Per operation; the whole run (two of them) stays well under a minute on the 2-core machine.
MAX_EXAMPLES = "12"


@pytest.fixture()
def live_gateway(own_redis_url: str, rules: object, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "HOME": str(tmp_path), "REDIS_URL": own_redis_url,
           "MEEPLE_RULES_ADDR": f"127.0.0.1:{rules.port}",  # type: ignore[attr-defined]
           "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prom"), "MEEPLE_RATE_LIMIT_PER_MINUTE": "1000000",
           "MEEPLE_MAX_ACTIVE_MATCHES_PER_IP": "0", "MEEPLE_MAX_BOT_SEATS_PER_IP": "0",
           "MEEPLE_MAX_HARD_BOTS_PER_IP": "0", "MEEPLE_HINT_WAIT_S": "0.2"}
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", GUNICORN_CONF, "--workers", "1",
                             "--bind", f"127.0.0.1:{port}", "services.gateway.wsgi:app"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: http_ok(f"http://127.0.0.1:{port}/healthz"), "gateway", proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)


def fuzz(url: str, tmp_path: Path, match_id: str, headers: list[str]) -> subprocess.CompletedProcess[str]:
    # Long-polls are pinned short (each would otherwise hold the run for up to 30 s);
    # every match-scoped operation aims at one real match, so the requests reach the handlers' logic.
    config = tmp_path / "schemathesis.toml"
    config.write_text(f'[parameters]\nmatch_id = "{match_id}"\nwait = 0\n')
    argv = [*SCHEMATHESIS, "--config-file", str(config), "run", f"{url}/v1/openapi.json", "--checks", "all",
            "--exclude-checks", "positive_data_acceptance", "--phases", "examples,coverage,fuzzing",
            "--max-examples", MAX_EXAMPLES, "--seed", "19", "--workers", "1", "--no-color",
            "--exclude-path", "/metrics", "--exclude-path-regex", "events/stream",
            "--request-timeout", "20", "--generation-database", "none"]
    for header in headers:
        argv += ["-H", header]
    return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=400)


@pytest.mark.parametrize("with_token", [False, True], ids=["anonymous", "seat-token"])
def test_schemathesis_finds_no_server_error_and_no_response_outside_the_contract(
        live_gateway: str, tmp_path: Path, with_token: bool) -> None:
    created = requests.post(f"{live_gateway}/v1/matches", json={"game": "clash", "players": 2, "join": True},
                            timeout=10).json()
    requests.post(f"{live_gateway}/v1/matches/{created['id']}/join", json={}, timeout=10)
    headers = [f"Authorization: Bearer {created['token']}"] if with_token else []
    run = fuzz(live_gateway, tmp_path, created["id"], headers)
    report = run.stdout[-6000:]
    assert run.returncode == 0, report
    counts = re.search(r"(\d+) generated, (\d+) passed", run.stdout)
    assert counts is not None and counts.group(1) == counts.group(2) and int(counts.group(1)) > 300, report
