"""``meeple loadtest --baseline DIR``: the runs of this checkout and of the baseline's, side by side.

Issue 47 asks for the server CPU per human move at half of an earlier commit's, measured in the same session: on a
shared machine only runs close in time compare. The runner drives the same load at both stacks in turns; these
functions read the figures out of the runs' summaries and put them next to each other (pure: no stack, no files).
"""

from __future__ import annotations

from statistics import median
from typing import Any

from .names import MOVE

#: The figures compared, each read from a run's summary, and how the table names them.
FIGURES = ("server_cpu_ms", "moves_per_s", "move_p50_ms")


def figures(summary: dict[str, Any]) -> dict[str, float | None]:
    """A run's server CPU per acknowledged human move (ms), human moves per second and move p50 (ms)."""
    per = summary.get("per_human_move") or {}
    move = (summary.get("endpoints") or {}).get(MOVE) or {}
    return {"server_cpu_ms": per.get("server_cpu_ms"), "moves_per_s": summary.get("moves_per_s"),
            "move_p50_ms": move.get("p50_ms")}


def medians(summaries: list[dict[str, Any]]) -> dict[str, float | None]:
    """Each figure's median over the runs that have it (None when none has)."""
    out: dict[str, float | None] = {}
    for name in FIGURES:
        values = [v for v in (figures(s)[name] for s in summaries) if v is not None]
        out[name] = round(median(values), 2) if values else None
    return out


def ratio(now: float | None, base: float | None) -> float | None:
    return round(now / base, 3) if now is not None and base else None


def compare(now: list[dict[str, Any]], baseline: list[dict[str, Any]], baseline_dir: str) -> dict[str, Any]:
    """The ``--json`` object: both sides' summaries (one per round, in run order), their medians and the ratios
    now / baseline of the medians, and the audits' totals over every run."""
    mid = {"now": medians(now), "baseline": medians(baseline)}
    runs = [*now, *baseline]
    return {"baseline_dir": baseline_dir, "rounds": len(now), "now": now, "baseline": baseline, "medians": mid,
            "ratios": {name: ratio(mid["now"][name], mid["baseline"][name]) for name in FIGURES},
            "corrupted_matches": sum(s["corrupted_matches"] for s in runs),
            "lost_acknowledged_moves": sum(s["lost_acknowledged_moves"] for s in runs)}


def _cell(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:.2f}{unit}"


def comparison_lines(comparison: dict[str, Any]) -> list[str]:
    """The table the command prints: a row per run, the medians when there are several rounds, the ratios."""
    rows = [("run", "server CPU / human move", "human moves/s", "move p50", "corrupted / lost")]
    for side in ("now", "baseline"):
        for i, summary in enumerate(comparison[side], 1):
            f = figures(summary)
            commit = (summary.get("server") or {}).get("commit", "")
            rows.append((f"{side} {i} ({commit})" if commit else f"{side} {i}", _cell(f["server_cpu_ms"], " ms"),
                         _cell(f["moves_per_s"]), _cell(f["move_p50_ms"], " ms"),
                         f"{summary['corrupted_matches']} / {summary['lost_acknowledged_moves']}"))
    if comparison["rounds"] > 1:
        for side in ("now", "baseline"):
            m = comparison["medians"][side]
            rows.append((f"{side} (median)", _cell(m["server_cpu_ms"], " ms"), _cell(m["moves_per_s"]),
                         _cell(m["move_p50_ms"], " ms"), ""))
    r = comparison["ratios"]
    rows.append(("now / baseline", _cell(r["server_cpu_ms"]), _cell(r["moves_per_s"]), _cell(r["move_p50_ms"]), ""))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [f"server CPU per human move, this checkout (now) against {comparison['baseline_dir']} (baseline); "
             "the server is the gateway, the rules service and Redis:"]
    lines += ["  " + "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in
                               enumerate(zip(row, widths, strict=True))).rstrip() for row in rows]
    return lines
