"""agent-server's benchmarks: what a long session costs, strategy by strategy; the harness at
scale; the editor path. `agent-server bench [--quick] [--json FILE]` runs them (from a source
checkout) and prints the tables; BENCHMARKS.md holds the latest figures.

- `workload`: the deterministic coding session and the workspace it reads;
- `strategies`: the context strategies compared (the product's settings, and the SWE-agent,
  AutoGPT and MemGPT policies);
- `cost_bench`: each strategy through the real harness, SDKs and simulator; bills, lower bound;
- `harness_bench`: per-turn harness time, open time and memory at 100 to 100k ledger entries;
- `editor_bench`: `agent/update` throughput and added latency over stdio;
- `long_session_bench`: opening, loading and paging a 100k-entry session (also right after
  start, and with its index removed), notifications at the server, a streamed answer's
  server CPU per event, cold start;
- `first_request_bench`: the first `session/new` of a process (ACP and LSP), and memory and
  CPU per turn over hundreds of LSP turns (scripts of their own, outside `bench`);
- `step_time_bench`: harness time per agent step at the simulator, beside pi;
- `ledger_bench`: the ledger's own speed (a script of its own, reused by harness_bench);
- `peers`: pi, Claude Code and Codex beside agent-server on one scripted session
  (`agent-server bench peers`);
- `real_code`, `recall`: sessions on code fetched from PyPI, and what forgetting costs each
  client there (`agent-server bench recall`);
- `conformance`: compaction-conformance-kit through the product's compaction
  (`agent-server bench conformance`);
- `report`: tables and goals.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["main", "run"]


def machine() -> dict[str, Any]:
    """Where the figures come from."""
    import anthropic
    import openai

    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gb = 0.0
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                memory_gb = int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    try:
        revision = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=Path(__file__).resolve().parent.parent,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        revision = ""
    return {
        "cpu": cpu,
        "cpus": (
            len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        ),
        "memory_gb": memory_gb,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "anthropic": anthropic.__version__,
        "openai": openai.__version__,
        "revision": f"git {revision}" if revision else "not a git checkout",
    }


def run(quick: bool = False, progress: Any = None) -> dict[str, Any]:
    """Every benchmark; the result as JSON-ready data (and `goals`, checked)."""
    from benchmarks import cost_bench, editor_bench, harness_bench, long_session_bench, report
    from benchmarks.workload import FULL, QUICK, build_workload

    started = time.perf_counter()
    workload = build_workload(QUICK if quick else FULL)
    cost_started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="agent-server-bench-") as scratch:
        apis = cost_bench.run(workload, Path(scratch), progress=progress)
    cost = {
        "workload": apis[0].workload,
        "apis": [
            {
                "api": a.api,
                "strategies": [vars(f) for f in a.figures],
                "lowerBound": a.lower_bound,
                "seconds": a.seconds,
            }
            for a in apis
        ],
        "defaultCheck": apis[0].default_check,
        "seconds": time.perf_counter() - cost_started,
    }
    sizes = harness_bench.QUICK_SIZES if quick else harness_bench.SIZES
    harness = harness_bench.run(
        sizes, repeat=60 if quick else 200, progress=progress, full_window=not quick
    )
    harness["sizes"] = list(sizes)
    if progress is not None:
        progress("editor: agent-server serve over stdio")
    editor = editor_bench.run(quick)
    long_sessions = long_session_bench.run(
        5_000 if quick else 100_000, None, progress or (lambda _message: None), quick=quick
    )
    result: dict[str, Any] = {
        "quick": quick,
        "command": "agent-server bench" + (" --quick" if quick else ""),
        "meta": machine(),
        "cost": cost,
        "harness": harness,
        "editor": editor,
        "longSessions": long_sessions,
        "seconds": time.perf_counter() - started,
    }
    result["goals"] = report.goals(result) + long_session_bench.goals(long_sessions)
    return result


def main(quick: bool = False, json_path: Path | None = None) -> int:
    """Run, print the tables, optionally write the JSON. Figures are printed, not asserted:
    the exit status is 0 whether goals are met or not."""
    from rich.console import Console

    from benchmarks import report

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 150)
    started = time.perf_counter()

    def progress(message: str) -> None:
        print(f"[{time.perf_counter() - started:5.1f}s] {message}", file=sys.stderr, flush=True)

    result = run(quick, progress=progress)
    report.print_report(result, console)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        console.print(f"results written to {json_path}")
    return 0
