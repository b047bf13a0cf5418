"""Every Meeple process starts grpcio on the engine that polls on the calling thread (``services/__init__.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import services

ROOT = Path(__file__).resolve().parent.parent
#: Imports our package, then grpcio, makes a channel (grpcio reads its experiments then) and prints the setting.
PROBE = ("import os, services, grpc; grpc.insecure_channel('127.0.0.1:1').close(); "
         "print(os.environ['GRPC_EXPERIMENTS'])")


def _start(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60, check=True)


def test_a_meeple_process_turns_grpcios_event_engine_off_and_grpcio_knows_both_experiments() -> None:
    env = {k: v for k, v in os.environ.items() if k != "GRPC_EXPERIMENTS"}
    done = _start(env)
    assert done.stdout.strip() == services.GRPC_EXPERIMENTS == "-event_engine_client,-event_engine_listener"
    # a grpcio that no longer has these experiments says so at start-up: measure again before upgrading
    assert "Unknown experiment" not in done.stderr, done.stderr


def test_an_operators_own_grpc_experiments_are_kept() -> None:
    done = _start({**os.environ, "GRPC_EXPERIMENTS": ""})
    assert done.stdout.strip() == ""
