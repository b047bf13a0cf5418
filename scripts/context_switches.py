"""How often the processes matching a pattern switch threads, per CPU second they burn: run it beside a load.

    .venv/bin/python scripts/context_switches.py [--pattern 'gunicorn.*services.gateway'] [--seconds 10] [--json]

Reads every thread's ``voluntary_ctxt_switches`` and ``nonvoluntary_ctxt_switches`` (``/proc/<pid>/task/*/status``)
and the process's CPU (``/proc/<pid>/stat``) before and after the window, for each process whose command line
matches (gunicorn's master included: it barely moves). A thread that blocks on a socket or waits for the GIL
switches voluntarily; one preempted, involuntarily. CPU per switch says how much work a process does between two
wake-ups.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path


def matching(pattern: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if re.search(pattern, cmdline):
                found.append(int(entry.name))
    return sorted(found)


def sample(pid: int) -> dict[str, float]:
    voluntary = involuntary = threads = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = (task / "status").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        threads += 1
        voluntary += int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", status, re.M).group(1))  # type: ignore[union-attr]
        involuntary += int(re.search(r"^nonvoluntary_ctxt_switches:\s+(\d+)", status, re.M).group(1))  # type: ignore[union-attr]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return {"threads": threads, "voluntary": voluntary, "involuntary": involuntary, "cpu_s": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pattern", default=r"gunicorn.*services\.gateway")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    pids = matching(args.pattern)
    before = {pid: sample(pid) for pid in pids}
    time.sleep(args.seconds)
    rows = []
    for pid in pids:
        try:
            after = sample(pid)
        except OSError:
            continue
        cpu = after["cpu_s"] - before[pid]["cpu_s"]
        switches = (after["voluntary"] - before[pid]["voluntary"]) + (after["involuntary"] - before[pid]["involuntary"])
        rows.append({"pid": pid, "threads": after["threads"], "cpu_s": round(cpu, 2),
                     "voluntary_per_s": round((after["voluntary"] - before[pid]["voluntary"]) / args.seconds),
                     "involuntary_per_s": round((after["involuntary"] - before[pid]["involuntary"]) / args.seconds),
                     "cpu_us_per_switch": round(cpu / switches * 1e6, 1) if switches else None})
    if args.json:
        print(json.dumps({"seconds": args.seconds, "processes": rows}))
        return
    for row in rows:
        print(" ".join(f"{key}={value}" for key, value in row.items()))


if __name__ == "__main__":
    main()
