"""The load test's report: ``report.md`` (client- and server-side figures) and ``plot.png`` (over time)."""

from __future__ import annotations

import csv
import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tooling import promtext

from .names import MOVE

MOVE_ROUTE = ("POST", "/v1/matches/<match_id>/moves")
TARGETS = {"users": 50, "duration_s": 180, "move_p50_ms": 15.0, "move_p99_ms": 100.0, "moves_per_s": 150.0}


def _num(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def _cpu_ms(value: float | None) -> str:
    return "-" if value is None else f"**{value:.2f} ms**"


def _ms(seconds: float) -> str:
    return _num(seconds * 1000, 2 if seconds < 0.01 else 1)


def _table(header: Iterable[str], rows: Iterable[Iterable[Any]]) -> list[str]:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return [*lines, ""]


def _merged(deltas: dict[str, promtext.Samples], prefix: str) -> promtext.Samples:
    return promtext.merge(samples for name, samples in deltas.items() if name.startswith(prefix))


def _ratio(value: float | None, base: float | None) -> str:
    if value is None or not base:
        return "-"
    return f"{value / base:.1f}x"


def write_report(out: Path, summary: dict[str, Any], info: dict[str, Any], stats: dict[str, dict[str, str]],
                 failures: list[dict[str, str]], deltas: dict[str, promtext.Samples], history: Path) -> None:
    cfg = info["config"]
    elapsed = float(info["elapsed"])
    lines = [f"# Load test report — {info['started']}", ""]
    lines += [
        f"**{cfg.users} users** (spawn rate {cfg.spawn_rate}/s) for **{elapsed:.0f} s** ({info['stop_reason']}); "
        f"{info['cores']} cores, load average before the run {', '.join(f'{x:.2f}' for x in info['load_before'])}; "
        f"host speed check (a fixed Python loop on the idle machine, lower is faster) {info['speed_before']:.1f} ms "
        f"before the run and {info['speed_after']:.1f} ms after: compare runs only at similar figures.",
        f"Stack: gateway {cfg.gateway_workers} gunicorn workers (a thread per connection), "
        f"{cfg.rules_replicas} rules replica(s), {cfg.bot_workers} bot worker(s) at nice {cfg.bot_nice}, "
        "embedded Redis (AOF on), "
        f"all on this machine together with Locust. Bots `{cfg.bot_level}` ({cfg.bot_players} seats); user mix "
        f"{cfg.weights}; "
        f"think time {cfg.think_s[0]}-{cfg.think_s[1]} s; options {cfg.options or 'catalogue defaults'}.",
        f"Server: the checkout in `{info['server']['root']}` at {info['server']['commit']} (Locust and its scenario: "
        "this command's checkout).",
        "",
    ]
    lines += _summary(summary, deltas, elapsed)
    lines += _targets(summary, cfg)
    lines += _client_side(summary, stats)
    lines += _errors(failures)
    lines += _server_side(deltas, elapsed)
    lines += _bots(deltas, info, elapsed)
    lines += _cpu(info, elapsed)
    lines += _per_move(summary)
    lines += _audit(info["audits"])
    lines += ["## Files", "",
              "* `locust_stats.csv`, `locust_stats_history.csv`, `locust_failures.csv`, `locust_exceptions.csv`: "
              "Locust's raw figures (the history has one row per second and request name)",
              "* `metrics/<process>.prom`: every process's /metrics at the end of the run",
              "* `plot.png`: move latency percentiles and throughput over time", "* `logs/`: every process's output",
              "* `summary.json`: the `--json` summary",
              "* `bot_matches.txt`, `bot_samples.jsonl` (`--chaos`): the matches started against bots, and what the "
              "observer read of them (slot tables and samples, `loadtests/botstall.py`)", ""]
    (out / "report.md").write_text("\n".join(lines))
    plot(history, out / "plot.png")


def _summary(summary: dict[str, Any], deltas: dict[str, promtext.Samples], elapsed: float) -> list[str]:
    rules = _merged(deltas, "rules")
    gateway = deltas.get("gateway", {})
    applied = sum(promtext.totals(rules, "meeple_rules_moves_applied_total", ()).values())
    bots = _merged(deltas, "bots")
    bot_moves = promtext.totals(bots, "meeple_bot_jobs_total", ("outcome",)).get(("played",), 0.0)
    created = sum(promtext.totals(gateway, "meeple_matches_created_total", ()).values())
    finished = sum(promtext.totals(gateway, "meeple_matches_finished_total", ()).values())
    move = summary["endpoints"].get(MOVE, {})
    rows = [
        ("requests / failures", f"{summary['requests']} / **{summary['failures']}**"),
        ("errors the SDK's retries absorbed (users never saw them)", f"{sum(summary.get('sdk_retries', {}).values())}"),
        ("human moves per second (REST `move`, steady state)", f"**{summary['moves_per_s']:.1f}**"),
        ("server CPU per human move (gateway + rules + Redis; \"Per human move\" below)",
         _cpu_ms((summary.get("per_human_move") or {}).get("server_cpu_ms"))),
        ("`move` p50 / p95 / p99 (client side)",
         f"**{_num(move.get('p50_ms'), 0)} / {_num(move.get('p95_ms'), 0)} / {_num(move.get('p99_ms'), 0)} ms**"),
        ("baseline `/healthz` p50 / p99",
         f"{_num(summary['baseline']['p50_ms'], 0)} / {_num(summary['baseline']['p99_ms'], 0)} ms"),
        ("moves applied by the rules service (humans + bots)", f"{applied:.0f} ({applied / elapsed:.1f}/s)"),
        ("moves played by bots", f"{bot_moves:.0f} ({bot_moves / elapsed:.1f}/s)"),
        ("matches created / finished", f"{created:.0f} / {finished:.0f}"),
        ("corrupted matches (replay differs from the store)", f"**{summary['corrupted_matches']}**"),
        ("lost acknowledged moves (a user was told it applied; the store lacks it)",
         f"**{summary.get('lost_acknowledged_moves', 0)}** of {summary.get('acknowledged_moves', 0)}"),
        ("Redis", (f"cluster of {summary['redis']['cluster_primaries']} primaries, "
                   f"{summary['redis']['replicas_per_primary']} replica(s) each")
         if summary.get("redis", {}).get("cluster_primaries") else "one server"),
    ]
    lines = ["## Summary", "", *_table(["figure", "value"], rows)]
    chaos = summary.get("chaos")
    if chaos:
        lines += ["", "### Chaos (seconds after the first kill)", "",
                  *_table(["at s", "what"], [(e["at_s"], e["what"]) for e in chaos["events"]]), "",
                  *_table(["failures from s", "to s", "failures"],
                          [(w["from_s"], w["to_s"], w["failures"]) for w in chaos["failure_windows"]]), "",
                  "Per fault, the errors from it to the next fault: the calls users saw fail, the attempts the "
                  "SDK retried (users never saw them), their kinds, and their window (s after the fault); and the "
                  "seconds in which fewer than half as many moves completed as in the 10 s before it (a failover "
                  "that the retries ride out is a stall, not failures).", "",
                  *_table(["fault", "failed", "retried", "window s", "kinds", "moves stalled (s after the fault)"],
                          [(f["what"], f["failed"], f["retried"],
                            f"{f['first_error_s']} to {f['last_error_s']}" if "window_s" in f else "-",
                            ", ".join(f"{k}: {n}" for k, n in f["kinds"].items()) or "-", _stalled(f))
                           for f in chaos.get("faults", [])]),
                  "", "Bot matches per fault (loadtests/botstall.py: versions and status read from the store every "
                  "0.5 s; each match classed by the primary that held its slot, and its job stream's, just before "
                  "the fault): the versions the class made per second in the 10 s before, the seconds after the "
                  "fault in which it made fewer than half of that (counted in bins of `bin` s when the class makes "
                  "few), and the longest "
                  "a match active at the fault went without a new version, and waited on a bot (a bot seat to act, "
                  "no new version), in the 10 s after the fault / the 10 s before it.", "",
                  *_table(["fault", "bot matches", "active at the fault", "versions/s before", "stalled",
                           "longest idle after / before s", "longest wait on a bot after / before s"],
                          [(f["what"], cls.replace("_", " "), b["matches"], _num(b["versions_per_s_before"]),
                            _stalled(b) + (f" (bin {b['bin_s']} s)" if b.get("bin_s", 1) > 1 else ""),
                            f"{b.get('longest_idle_s', '-')} / {b.get('longest_idle_before_s', '-')}",
                            f"{b.get('longest_bot_wait_s', '-')} / {b.get('longest_bot_wait_before_s', '-')}")
                           for f in chaos.get("faults", []) for cls, b in f.get("bot_matches", {}).items()])]
    if summary.get("sdk_retries"):
        lines += ["", "Errors the SDK absorbed by retrying (by request and error): "
                  + ", ".join(f"{k}: {n}" for k, n in summary["sdk_retries"].items())]
    return lines


def _stalled(fault: dict[str, Any]) -> str:
    if fault.get("stalled_s") is None:
        return "-"
    if not fault["stalled_s"]:
        return "none"
    return f"{fault['stalled_s']} s, from {fault['stall_from_s']} to {fault['stall_to_s']}"


def _targets(summary: dict[str, Any], cfg: Any) -> list[str]:
    move = summary["endpoints"].get(MOVE, {})
    p50, p99 = move.get("p50_ms"), move.get("p99_ms")

    def verdict(ok: bool | None) -> str:
        return "-" if ok is None else ("met" if ok else "**missed**")

    rows = [
        ("0 failed requests", summary["failures"], verdict(summary["failures"] == 0)),
        ("0 corrupted matches", summary["corrupted_matches"], verdict(summary["corrupted_matches"] == 0)),
        ("`move` p50 ≤ 15 ms", _num(p50, 0), verdict(None if p50 is None else p50 <= TARGETS["move_p50_ms"])),
        ("`move` p99 ≤ 100 ms", _num(p99, 0), verdict(None if p99 is None else p99 <= TARGETS["move_p99_ms"])),
        ("≥ 150 moves/s sustained", _num(summary["moves_per_s"]),
         verdict(summary["moves_per_s"] >= TARGETS["moves_per_s"])),
    ]
    lines = ["## Targets", ""]
    if cfg.users != TARGETS["users"] or cfg.duration_s < TARGETS["duration_s"]:
        lines += [f"The targets are set for {TARGETS['users']} users over {TARGETS['duration_s']} s; this run "
                  f"had {cfg.users} users for {cfg.duration_s} s, so the verdicts are indicative only.", ""]
    return lines + _table(["target", "measured", "verdict"], rows)


def _client_side(summary: dict[str, Any], stats: dict[str, dict[str, str]]) -> list[str]:
    base = summary["baseline"]
    rows = []
    for name, row in sorted(stats.items(), key=lambda kv: (kv[0] == "Aggregated", kv[0])):
        p50 = None if row.get("50%") in (None, "N/A") else float(row["50%"])
        p99 = None if row.get("99%") in (None, "N/A") else float(row["99%"])
        rows.append((f"`{name}`" if name != "Aggregated" else "**all**", row.get("Type", ""),
                     row.get("Request Count"), row.get("Failure Count"), row.get("50%"), row.get("95%"),
                     row.get("99%"), row.get("Max Response Time", "").split(".")[0], _num(float(row["Requests/s"]), 1),
                     _ratio(p50, base["p50_ms"]), _ratio(p99, base["p99_ms"])))
    intro = ("Milliseconds as Locust measured them, including its own scheduling on the shared cores. "
             "`events (...)` and `matchmaking poll` are long-polls: they wait on purpose (for bots, another "
             "person, the watched match or a partner to match with) and their latency is that wait. "
             "The last columns divide by the baseline (`/healthz`, same run) to "
             "show what each endpoint costs above the bare HTTP stack.")
    header = ["endpoint", "method", "requests", "failures", "p50", "p95", "p99", "max", "req/s", "p50 / baseline",
              "p99 / baseline"]
    return ["## Latency and throughput per endpoint (Locust, client side)", "", intro, "", *_table(header, rows)]


def _errors(failures: list[dict[str, str]]) -> list[str]:
    lines = ["## Errors", ""]
    if not failures:
        return [*lines, "None.", ""]
    rows = [(f.get("Method"), f"`{f.get('Name')}`", f.get("Error", "")[:160].replace("|", "\\|"), f.get("Occurrences"))
            for f in failures]
    return lines + _table(["method", "endpoint", "error", "count"], rows)


def _server_side(deltas: dict[str, promtext.Samples], elapsed: float) -> list[str]:
    gateway = deltas.get("gateway", {})
    lines = ["## Server side (Prometheus histograms, this run only)", "",
             "Percentiles are estimated inside the histogram buckets the way PromQL's `histogram_quantile` does.",
             "", "### Gateway requests by route (all gunicorn workers)", ""]
    routes = promtext.histograms(gateway, "meeple_gateway_request_seconds", ("method", "route"))
    statuses = promtext.totals(gateway, "meeple_gateway_request_seconds_count", ("method", "route", "status"))
    rows: list[tuple[Any, ...]] = []
    for (method, route), h in sorted(routes.items(), key=lambda kv: -kv[1].count):
        codes = sorted((status, n) for (m, r, status), n in statuses.items() if (m, r) == (method, route) and n)
        rows.append((method, f"`{route}`", f"{h.count:.0f}", _ms(h.mean), _ms(h.p50), _ms(h.p95), _ms(h.p99),
                     ", ".join(f"{s}: {n:.0f}" for s, n in codes)))
    lines += _table(["method", "route", "requests", "mean ms", "p50 ms", "p95 ms", "p99 ms", "statuses"], rows)

    rules = _merged(deltas, "rules")
    lines += ["### Rules service RPCs by method and game (all replicas)", ""]
    rpcs = promtext.histograms(rules, "meeple_rules_rpc_seconds", ("method", "game"))
    rows = [(method, game or "-", f"{h.count:.0f}", _ms(h.mean), _ms(h.p50), _ms(h.p95), _ms(h.p99))
            for (method, game), h in sorted(rpcs.items(), key=lambda kv: -kv[1].count)]
    lines += _table(["method", "game", "calls", "mean ms", "p50 ms", "p95 ms", "p99 ms"], rows)

    lines += ["### Moves by game and outcome", ""]
    applied = promtext.totals(rules, "meeple_rules_moves_applied_total", ("game",))
    illegal = promtext.totals(rules, "meeple_rules_illegal_moves_total", ("game", "reason"))
    http = promtext.totals(gateway, "meeple_gateway_moves_total", ("game", "outcome"))
    rows = [(game, "rules service", "applied", f"{n:.0f}") for (game,), n in sorted(applied.items()) if n]
    rows += [(game, "rules service", f"rejected: {reason}", f"{n:.0f}") for (game, reason), n in sorted(illegal.items())
             if n]
    rows += [(game, "gateway (HTTP)", outcome, f"{n:.0f}") for (game, outcome), n in sorted(http.items()) if n]
    lines += _table(["game", "counted by", "outcome", "moves"], rows)

    lines += ["### Redis round trips by command", "",
              "`XREAD`/`XREADGROUP` block on purpose (long-polls, idle bot workers).", ""]
    rows = []
    for who, samples in (("gateway", gateway), ("bots", _merged(deltas, "bots"))):
        for (command,), h in sorted(promtext.histograms(samples, "meeple_redis_command_seconds", ("command",)).items(),
                                    key=lambda kv: -kv[1].count):
            rows.append((who, command, f"{h.count:.0f}", f"{h.count / elapsed:.0f}", _ms(h.mean), _ms(h.p50),
                         _ms(h.p99)))
    lines += _table(["client", "command", "calls", "per s", "mean ms", "p50 ms", "p99 ms"], rows)

    matches = [(status, game, f"{n:.0f}") for status in ("created", "active", "finished")
               for (game,), n in sorted(promtext.totals(
                   gateway, f"meeple_matches_{status}{'' if status == 'active' else '_total'}", ("game",)).items())]
    lines += ["### Matches (from the store's counters)", ""]
    lines += _table(["status", "game", "matches"], matches)
    return lines


def _bots(deltas: dict[str, promtext.Samples], info: dict[str, Any], elapsed: float) -> list[str]:
    bots = _merged(deltas, "bots")
    think = promtext.histograms(bots, "meeple_bot_think_seconds", ("game", "level"))
    iterations = promtext.totals(bots, "meeple_bot_iterations_total", ("game", "level"))
    rows = [(game, level, f"{h.count:.0f}", _ms(h.mean), _ms(h.p50), _ms(h.p99),
             _num(iterations.get((game, level), 0) / h.count, 0), f"{h.total / elapsed * 100:.0f}%")
            for (game, level), h in sorted(think.items())]
    jobs = promtext.totals(bots, "meeple_bot_jobs_total", ("outcome",))
    depths = [d for _, d in info.get("queue_depths", [])]
    lines = ["## Bot load", ""]
    lines += _table(["game", "level", "moves", "think mean ms", "think p50 ms", "think p99 ms", "iterations / move",
                     "busy (of one core)"], rows)
    lines += [f"Jobs by outcome: {', '.join(f'{o}: {n:.0f}' for (o,), n in sorted(jobs.items()) if n) or 'none'}. "
              f"Queue depth (jobs no worker has taken yet), sampled every 2 s: max {max(depths, default=0):.0f}, "
              f"mean {sum(depths) / len(depths) if depths else 0:.1f}.", ""]
    return lines


def _cpu(info: dict[str, Any], elapsed: float) -> list[str]:
    cpu: dict[str, float] = info["cpu"]
    cores = info["cores"] or 1
    rows = [(name, f"{seconds:.1f}", f"{seconds / elapsed * 100:.0f}%", f"{seconds / (elapsed * cores) * 100:.0f}%")
            for name, seconds in sorted(cpu.items(), key=lambda kv: -kv[1])]
    total = sum(cpu.values())
    rows.append(("**all**", f"{total:.1f}", f"{total / elapsed * 100:.0f}%", f"{total / (elapsed * cores) * 100:.0f}%"))
    intro = ("CPU seconds per process during the load (gunicorn: master and workers together). Other people's "
             "work on this machine is not in the table but competes for the same cores.")
    return ["## Where the CPU went", "", intro, "", *_table(["process", "CPU s", "of one core",
                                                             f"of all {cores} cores"], rows)]


def _per_move(summary: dict[str, Any]) -> list[str]:
    per = summary.get("per_human_move") or {}
    if not per:
        return []
    intro = ("What one acknowledged human move cost (`per_human_move` in `summary.json`). The counts hardly move "
             "with the machine's speed: compare runs by them where the CPU figures drift. A parked long-poll is two "
             "gateway requests (it runs once to park and once to answer); blocking Redis reads are not round trips.")
    rows = [(f"CPU of {name}", f"{ms:.2f} ms") for name, ms in per["cpu_ms"].items()]
    rows.append(("**server CPU** (gateway + rules + Redis: without Locust, the bots and the workers)",
                 f"**{per['server_cpu_ms']:.2f} ms**"))
    rows += [("gateway requests", f"{per['gateway_requests']:.3f}"), ("rules calls", f"{per['rules_calls']:.3f}"),
             ("gateway Redis round trips", f"{per['gateway_redis_round_trips']:.3f}"),
             ("bot moves", f"{per['bot_moves']:.3f}")]
    return ["## Per human move", "", intro, "", *_table(["figure", "per human move"], rows)]


def _audit(audits: list[Any]) -> list[str]:
    by_game: Counter[tuple[str, str]] = Counter((a.game, a.status) for a in audits)
    bad = [a for a in audits if not a.ok]
    lines = ["## Match audit", "",
             f"Every match in the run's store ({len(audits)}) was replayed from its seed and move log with the "
             "engines of the server's checkout and "
             f"compared with the stored state, `to_act`, status and result: **{len(bad)} corrupted**.", ""]
    lines += _table(["game", "status", "matches"], [(g, s, n) for (g, s), n in sorted(by_game.items())])
    lines += [f"* `{a.match_id}` ({a.game}, {a.moves} moves): {a.problem}" for a in bad[:20]]
    return [*lines, ""] if bad else lines


def _series(history: Path) -> dict[str, dict[str, list[float]]]:
    series: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    if not history.exists():
        return series
    with history.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        return series
    t0 = int(rows[0]["Timestamp"])
    for row in rows:
        data = series[row["Name"]]
        data["t"].append(int(row["Timestamp"]) - t0)
        data["users"].append(float(row["User Count"] or 0))
        data["rps"].append(float(row["Requests/s"] or 0))
        for column in ("50%", "95%", "99%"):
            raw = row.get(column, "N/A")
            empty = raw in ("N/A", "") or not int(row.get("Total Request Count") or 0)
            data[column].append(math.nan if empty else float(raw))
    return series


def plot(history: Path, target: Path) -> None:
    """Move latency percentiles (and the baseline's) over time above throughput and users."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = _series(history)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    move, base, total = series.get(MOVE, {}), series.get("baseline", {}), series.get("Aggregated", {})
    for column, style in (("50%", "-"), ("95%", "--"), ("99%", ":")):
        if move:
            top.plot(move["t"], move[column], style, color="tab:blue", label=f"move p{column[:-1]}")
        if base and column != "95%":
            top.plot(base["t"], base[column], style, color="tab:gray", label=f"baseline p{column[:-1]}")
    top.axhline(15, color="tab:green", linewidth=0.8, alpha=0.6, label="p50 target")
    top.axhline(100, color="tab:red", linewidth=0.8, alpha=0.6, label="p99 target")
    top.set_ylabel("latency (ms, last ~10 s)")
    top.set_yscale("symlog", linthresh=10)
    top.legend(loc="upper left", fontsize=8, ncol=3)
    top.grid(alpha=0.3)
    if total:
        bottom.plot(total["t"], total["rps"], color="tab:purple", label="all requests/s")
    if move:
        bottom.plot(move["t"], move["rps"], color="tab:blue", label="moves/s")
    bottom.set_ylabel("requests per second")
    bottom.set_xlabel("seconds since start")
    bottom.grid(alpha=0.3)
    if total:
        users = bottom.twinx()
        users.plot(total["t"], total["users"], color="tab:orange", alpha=0.6, label="users")
        users.set_ylabel("users")
        users.legend(loc="lower right", fontsize=8)
    bottom.legend(loc="upper left", fontsize=8)
    fig.suptitle("Meeple load test")
    fig.tight_layout()
    fig.savefig(target, dpi=100)
    plt.close(fig)
