"""``meeple loadtest --baseline DIR`` (issue 47: the server CPU per human move against an earlier commit's, in the
same session): the baseline's stack runs that checkout's code with its Python in its directory, the same load
drives both stacks in turn, each run is audited, and the two are printed side by side with their ratios."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import orjson
import psutil
import pytest

from loadtests.audit import Audit
from loadtests.compare import compare, comparison_lines
from loadtests.runner import audit_run, checkout_dir, round_dir
from services.cli import main
from tooling.rediscluster import single_redis
from tooling.stack import ROOT, Stack, StackConfig, http_ok


def other_checkout(where: Path, copied: tuple[str, ...] = ()) -> Path:
    """This checkout's files seen from another directory, with a ``.venv`` of its own (this interpreter's): a
    second checkout as the stack sees one, without copying the tree (but the ``copied`` entries, to edit)."""
    where.mkdir()
    for entry in ROOT.iterdir():
        if entry.name in copied:
            shutil.copytree(entry, where / entry.name, ignore=shutil.ignore_patterns("__pycache__"))
        elif entry.name not in (".git", ".venv", "var"):
            (where / entry.name).symlink_to(entry)
    (where / ".venv").symlink_to(sys.prefix)
    return where


def summary(server_cpu_ms: float | None, moves_per_s: float, move_p50_ms: float | None, commit: str = "abc1234",
            corrupted: int = 0, lost: int = 0) -> dict[str, Any]:
    """The part of a run's ``--json`` summary the comparison reads."""
    return {"moves_per_s": moves_per_s, "endpoints": {"move": {"p50_ms": move_p50_ms}},
            "per_human_move": {} if server_cpu_ms is None else {"server_cpu_ms": server_cpu_ms},
            "corrupted_matches": corrupted, "lost_acknowledged_moves": lost,
            "server": {"root": "/x", "commit": commit}}


def test_a_stack_of_another_checkout_runs_its_modules_with_its_python_in_its_directory(tmp_path: Path) -> None:
    root = other_checkout(tmp_path / "base")
    python = str(root / ".venv" / "bin" / "python")
    config = StackConfig(root=root, http_port=0, rules_port=0, gateway_workers=1, bot_workers=1,
                         use_env_redis=False, data_dir=tmp_path / "data", log_dir=tmp_path / "logs")
    assert config.python == python  # DIR/.venv/bin/python, as `bench floor --baseline` runs DIR
    stack = Stack(config)
    try:
        stack.start()
        assert stack.gateway_url is not None and http_ok(f"{stack.gateway_url}/healthz")
        started = {name: psutil.Process(proc.pid) for name, proc in stack.procs}
        assert {"redis", "rules-0", "gateway", "bots-0", "timekeeper", "webhooks"} <= set(started)
        for name, proc in started.items():
            if name != "redis":  # this checkout's binary either way, in its --dir
                assert Path(proc.cwd()) == root and proc.cmdline()[0] == python, (name, proc.cmdline())
        assert started["rules-0"].cmdline()[1:3] == ["-m", "services.rules.server"]
        assert started["gateway"].cmdline()[-1] == "services.gateway.wsgi:app"
    finally:
        stack.stop()


def test_this_checkout_s_stack_keeps_this_interpreter_and_directory() -> None:
    config = StackConfig()
    assert config.root == ROOT and config.python == sys.executable


def test_a_root_starts_only_the_modules_it_has(tmp_path: Path) -> None:
    (tmp_path / "services" / "bots").mkdir(parents=True)
    (tmp_path / "services" / "bots" / "worker.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    (tmp_path / "services" / "gateway").mkdir()
    (tmp_path / "services" / "gateway" / "wsgi.py").write_text("")
    config = StackConfig(root=tmp_path)
    assert config.module("services.gateway.wsgi") == "services.gateway.wsgi"
    assert config.module("services.bots.worker") == "services.bots.worker"  # a compiled module counts
    assert config.module("services.rules.server") is None
    assert config.python == sys.executable  # no .venv of its own: this one


def test_a_baseline_run_is_audited_by_the_baseline_s_own_code(tmp_path: Path) -> None:
    """Another commit's cached views and rules are its own: this checkout's engines read a 7a6c581 store's
    fierce-women spectator views as corrupted. Here the baseline's audit adds a verdict of its own; it must reach
    the run's figures, with the acknowledged moves that baseline's store lost."""
    root = other_checkout(tmp_path / "base", copied=("loadtests",))
    with (root / "loadtests" / "audit.py").open("a") as audit:
        audit.write("\n\n_audit_store = audit_store\n\n\n"
                    "def audit_store(client, match_ids=None):\n"
                    "    return [*_audit_store(client, match_ids), Audit('x1', 'clash', 'finished', 3, 'its own')]\n")
    acknowledged = tmp_path / "acknowledged.jsonl"
    record = {"match_id": "nowhere", "seat": 0, "move": {"play": 1}, "version": 1}
    acknowledged.write_bytes(orjson.dumps(record) + b"\n")
    with single_redis() as url:
        audits, lost = audit_run(StackConfig(root=root), url, acknowledged)
        assert audits == [Audit("x1", "clash", "finished", 3, "its own")] and lost == [record]
        assert audit_run(StackConfig(), url, acknowledged) == ([], [record])  # this checkout's: by its own code


def test_the_comparison_puts_both_runs_side_by_side_with_now_over_baseline() -> None:
    result = compare([summary(4.0, 150.0, 10.0, "new")], [summary(8.0, 120.0, 12.5, "old")], "/tmp/base")
    assert result["ratios"] == {"server_cpu_ms": 0.5, "moves_per_s": 1.25, "move_p50_ms": 0.8}
    assert result["rounds"] == 1 and result["baseline_dir"] == "/tmp/base"
    assert result["now"][0]["server"]["commit"] == "new" and result["baseline"][0]["server"]["commit"] == "old"
    assert result["corrupted_matches"] == 0 and result["lost_acknowledged_moves"] == 0
    lines = comparison_lines(result)
    assert "/tmp/base" in lines[0]
    now_row = next(line for line in lines if line.strip().startswith("now 1 (new)"))
    assert "4.00 ms" in now_row and "150.00" in now_row and "10.00 ms" in now_row and "0 / 0" in now_row
    base_row = next(line for line in lines if line.strip().startswith("baseline 1 (old)"))
    assert "8.00 ms" in base_row and "12.50 ms" in base_row
    assert lines[-1].split()[-3:] == ["0.50", "1.25", "0.80"] and lines[-1].strip().startswith("now / baseline")
    assert not any("median" in line for line in lines)  # one round: the runs are the figures


def test_rounds_compare_by_medians_and_the_audits_add_up_over_every_run() -> None:
    now = [summary(4.0, 150.0, 10.0), summary(6.0, 140.0, 14.0, lost=1), summary(5.0, 100.0, 11.0)]
    base = [summary(10.0, 100.0, 12.0), summary(9.0, 120.0, 13.0, corrupted=2), summary(11.0, 110.0, 20.0)]
    result = compare(now, base, "b")
    assert result["medians"] == {"now": {"server_cpu_ms": 5.0, "moves_per_s": 140.0, "move_p50_ms": 11.0},
                                 "baseline": {"server_cpu_ms": 10.0, "moves_per_s": 110.0, "move_p50_ms": 13.0}}
    assert result["ratios"] == {"server_cpu_ms": 0.5, "moves_per_s": 1.273, "move_p50_ms": 0.846}
    assert result["corrupted_matches"] == 2 and result["lost_acknowledged_moves"] == 1  # no run's failure hides
    lines = comparison_lines(result)
    assert sum("median" in line for line in lines) == 2 and sum(" 3 (" in line for line in lines) == 2


def test_a_run_without_acknowledged_moves_has_no_figure_and_no_ratio() -> None:
    result = compare([summary(None, 0.0, None)], [summary(8.0, 120.0, 12.0)], "b")
    assert result["ratios"] == {"server_cpu_ms": None, "moves_per_s": 0.0, "move_p50_ms": None}
    assert comparison_lines(result)[-1].split()[-3:] == ["-", "0.00", "-"]


def test_the_baseline_must_be_a_checkout_and_its_reports_go_beside_this_checkout_s(tmp_path: Path) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="not a checkout"):
        checkout_dir(str(tmp_path))
    assert checkout_dir(str(ROOT)) == ROOT
    assert [round_dir(tmp_path, side, n).name for n in (1, 2) for side in ("now", "baseline")] == [
        "now", "baseline", "now-2", "baseline-2"]


def test_a_tiny_run_against_a_baseline_drives_both_stacks_audits_both_and_compares(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = other_checkout(tmp_path / "base")
    out = tmp_path / "report"
    # 12 s each, as the tiny run of test_runner.py (a shorter one may end before a move is acknowledged)
    code = main(["loadtest", "--users", "4", "--spawn-rate", "4", "--duration", "12", "--out", str(out), "--json",
                 "--quiet", "--think", "0,0.05", "--baseline", str(base)])
    printed = capsys.readouterr()
    result = orjson.loads(printed.out)
    assert code == 0, printed.err
    assert result["baseline_dir"] == str(base) and result["rounds"] == 1
    (now,), (baseline,) = result["now"], result["baseline"]
    assert now["server"]["root"] == str(ROOT) and baseline["server"]["root"] == str(base)
    for run, side in ((now, "now"), (baseline, "baseline")):  # each run audited and reported on its own
        assert run["acknowledged_moves"] > 0 and run["lost_acknowledged_moves"] == 0, side
        assert run["corrupted_matches"] == 0 and run["per_human_move"]["server_cpu_ms"] > 0, side
        assert orjson.loads((out / side / "summary.json").read_bytes()) == run
        assert f"`{run['server']['root']}`" in (out / side / "report.md").read_text()
        assert (out / side / "logs" / "gateway.log").exists()
    ratio = now["per_human_move"]["server_cpu_ms"] / baseline["per_human_move"]["server_cpu_ms"]
    assert result["ratios"]["server_cpu_ms"] == pytest.approx(ratio, abs=0.001)
    assert orjson.loads((out / "comparison.json").read_bytes()) == result
    assert "now / baseline" in printed.err and f"now 1: report: {out / 'now' / 'report.md'}" in printed.err
    assert set(os.listdir(out)) == {"now", "baseline", "comparison.json"}
