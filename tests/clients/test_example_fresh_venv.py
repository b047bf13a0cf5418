"""``examples/play_vs_bot.py`` runs from a fresh virtualenv that holds only the SDK (no server code)."""

from __future__ import annotations

import subprocess
import venv
from pathlib import Path

from .conftest import Stack

SDK = Path(__file__).resolve().parents[2] / "clients" / "python"


def test_play_vs_bot_example_finishes_a_clash_game_from_a_venv_with_only_the_sdk(stack: Stack, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    install = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(SDK)],
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    # The server's packages are not importable there: the SDK stands alone.
    alone = subprocess.run([str(py), "-c", "import meeple_client, importlib.util as u; "
                                           "print(u.find_spec('services'), u.find_spec('flask'))"],
                           capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert alone.stdout.split() == ["None", "None"], alone.stdout + alone.stderr
    run = subprocess.run([str(py), str(SDK / "examples" / "play_vs_bot.py"), stack.url, "--level", "easy"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "finished after" in run.stdout
