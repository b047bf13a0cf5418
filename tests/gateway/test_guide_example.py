"""The guide's complete tournament example (docs/guides/leaderboards-tournaments.md), run as written.

The ``bash`` block is taken from the page and run by bash with curl and jq against a real gateway, a real Redis
and the real rules service; only its first line's address and key and the hook's URL (a real local receiver
instead of ``api.example.com``) are replaced. Then time is moved past ``starts_at`` as a deployment's timekeeper
would see it, and what the page says happens next is checked: ``tournament.started`` and a ``round.started``
of five tables, one of them a bye's bot, delivered signed to the hook.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from services.stack import ROOT, free_port
from services.webhooks.worker import WebhookWorker

from .conftest import GatewayServer, RulesProcess, start_gateway
from .test_backends import as_key, new_key
from .test_tournaments import keeper_of
from .test_webhooks import ALLOW, LOCAL, Receiver

GUIDE = ROOT / "docs" / "guides" / "leaderboards-tournaments.md"
EXAMPLE_HEADING = "### A complete example (Swiss, 9 players, 2 per table)"
DOC_HOOK = "https://api.example.com/meeple"


def guide_example() -> str:
    """The bash block under the example's heading, exactly as the page shows it."""
    text = GUIDE.read_text()
    after = text.split(EXAMPLE_HEADING, 1)[1]
    match = re.search(r"```bash\n(.*?)```", after, re.S)
    assert match, "the guide's example lost its bash block"
    return match.group(1)


@pytest.fixture()
def gateway(own_redis_url: str, rules: RulesProcess) -> Iterator[GatewayServer]:
    server = start_gateway(own_redis_url, rules.port, anonymous=False, webhook_allow_private=LOCAL)
    yield server
    server.stop()


@pytest.fixture()
def receiver() -> Iterator[Receiver]:
    rec = Receiver(free_port())
    rec.start()
    yield rec
    rec.stop()


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")), reason="the guide's example needs curl and jq")
def test_the_guides_swiss_example_runs_as_written_and_its_first_round_starts_with_a_bye_bot(
        gateway: GatewayServer, own_redis_url: str, rules: RulesProcess, receiver: Receiver) -> None:
    script = guide_example()
    first, rest = script.split("\n", 1)
    assert first.startswith("API=http://127.0.0.1:8080/v1; KEY=mk_..."), first
    assert DOC_HOOK in rest
    key = new_key(own_redis_url, "acme")["key"]
    hook_url = f"http://127.0.0.1:{receiver.port}/"
    program = (f"set -euo pipefail\nAPI={gateway.url}/v1; KEY={key}\n"
               + rest.replace(DOC_HOOK, hook_url) + '\necho "TID=$TID"\n')
    ran = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    tid = ran.stdout.strip().rsplit("TID=", 1)[1]
    assert tid and tid != "null", ran.stdout

    headers = as_key(key)
    hooks = gateway_get(gateway, "/v1/webhooks", headers)
    hook = next(h for h in hooks["webhooks"] if h["url"] == hook_url)
    assert sorted(hook["events"]) == ["round.finished", "round.started", "tournament.finished", "tournament.started"]
    view = gateway_get(gateway, f"/v1/tournaments/{tid}", headers)
    assert view["status"] == "registering" and view["game"] == "clash" and view["rated"] is True
    assert view["format"]["kind"] == "swiss" and view["format"]["rounds"] == 3
    assert sorted(p["player"] for p in view["standings"]) == sorted(f"u{i}" for i in range(1, 10))

    # At starts_at (ten minutes on): the timekeeper starts it, the webhook worker delivers what it announced.
    later = view["starts_at"] + 1
    keeper_of(own_redis_url, rules).run_once(now=later)
    started = gateway_get(gateway, f"/v1/tournaments/{tid}", headers)
    assert started["status"] == "running" and len(started["tables"]) == 5
    # the hook's signing secret, shown once: in what the example's first curl printed
    receiver.secret = re.search(r'"secret":\s*"([^"]+)"', ran.stdout).group(1)  # type: ignore[union-attr]
    worker = WebhookWorker(own_redis_url, allow=ALLOW, backoff_s=0.1)
    for _ in range(100):
        worker.run_once(now=later)
        if any(d["event"] == "round.started" for d in receiver.delivered().values()):
            break
        time.sleep(0.05)
    got = sorted(receiver.delivered().values(), key=lambda d: d["body"]["id"])
    assert [d["event"] for d in got] == ["tournament.started", "round.started"], got
    assert all(d["valid"] for d in got)
    rounds = [d for d in got if d["event"] == "round.started"]
    data = rounds[0]["body"]["data"]
    assert data["tournament_id"] == tid and data["round"] == 1 and len(data["tables"]) == 5
    byes = [t for t in data["tables"] if any("bot" in seat for seat in t["seats"])]
    assert len(byes) == 1 and all(t["match_id"] for t in data["tables"])


def gateway_get(gateway: GatewayServer, path: str, headers: dict[str, str]) -> dict[str, Any]:
    reply = requests.get(gateway.url + path, headers=headers, timeout=10)
    assert reply.status_code == 200, reply.text
    return dict(reply.json())
