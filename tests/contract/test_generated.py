"""What scripts/gen_contract.py generates from the contract is up to date: the Python SDK's types and operation
table, the TypeScript client's copy of the document, the docs' error and settings tables. (make test also runs
the script's ``--check``; this keeps the suite alone honest.)"""

from __future__ import annotations

import subprocess
import sys

from tooling.stack import ROOT


def test_every_generated_file_matches_the_contract() -> None:
    run = subprocess.run([sys.executable, "scripts/gen_contract.py", "--check"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_sdk_types_carry_the_models_fields_and_their_optionality() -> None:
    from typing import get_type_hints

    from meeple_client import models
    from meeple_client.operations import OPERATIONS

    hints = get_type_hints(models.MatchDoc)
    assert "token" in models.MatchDoc.__optional_keys__ and "view" in models.MatchDoc.__required_keys__
    assert set(hints) >= {"id", "version", "seats", "view", "legal_moves", "token"}
    assert OPERATIONS["move"].headers == ("Idempotency-Key",) and OPERATIONS["move"].idempotent
    assert OPERATIONS["create_match"].key and not OPERATIONS["get_match"].key
