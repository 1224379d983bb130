"""What a workspace's size costs: the harness on trees of 133 to about 114,000 files
(`agent-server bench scale`, or `make bench-scale`; issue 49).

Three workspaces, built once into a cache (`~/.cache/agent-server/scale`, or
`$AGENT_SERVER_SCALE_CACHE`) from real sdists (benchmarks/real_code/sources.py: pinned by
version and hash) and synthetic trees:

- `one-sdist`: click 8.1.7 (133 files);
- `five-sdists`: Django 5.1.4, SymPy 1.13.3, Twisted 24.11.0, SQLAlchemy 2.0.36 and requests
  2.32.3 in one git repository (about 11,500 files, and git's objects);
- `monorepo`: that, plus a node_modules-like tree (75,000 files), a .venv-like tree (25,000),
  four nested git repositories (click, requests, SQLAlchemy and Twisted again, each its own
  repository) and a 200 MB log.

Each figure is taken in a fresh process (so that one's memory is not another's), through the
tools' own code as the server runs it:

- a page of the log read by the read tool and recorded by the file watch, and the memory it
  adds (the monorepo only);
- the file watch while the log grows ten lines a second for 10 s (a writer in another process):
  the watching process's CPU, and the notices it gives;
- an @-mention keystroke (the completion after the index is built; its first build apart);
- repo_map's first call, second call (nothing changed) and a call after one file changed, and
  the memory held after them;
- a sandboxed `true` against an unsandboxed one;
- grep (a whole-workspace search with no match) and find (`*.py`) against `rg` and `find` run
  directly with the same skips (the directories walk.SKIPPED_DIRS names).

Times are medians of several runs; nothing is asserted (a shared machine is noisy).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.real_code.sources import Source, extract

CLICK = Source("click", "8.1.7",
               "ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de",
               "BSD-3-Clause")
REQUESTS = Source("requests", "2.32.3",
                  "55365417734eb18255590a9ff9eb97e9e1da868d4ccd6402399eaf68af20a760",
                  "Apache-2.0")
SQLALCHEMY = Source("sqlalchemy", "2.0.36",
                    "7f2767680b6d2398aea7082e45a774b2b0767b5c8d8ffb9c8b683088ea9b29c5", "MIT")
TWISTED = Source("twisted", "24.11.0",
                 "695d0556d5ec579dcc464d2856b634880ed1319f45b10d19043f2b57eb0115b5", "MIT")
FIVE = (
    Source("Django", "5.1.4",
           "de450c09e91879fa5a307f696e57c851955c910a438a35e6b4c895e86bedc82a", "BSD-3-Clause"),
    Source("sympy", "1.13.3",
           "b27fd2c6530e0ab39e275fc9b683895367e51d5da91baa8d3d64db2565fec4d9", "BSD-3-Clause"),
    TWISTED,
    SQLALCHEMY,
    REQUESTS,
)
NESTED = (CLICK, REQUESTS, SQLALCHEMY, TWISTED)
WORKSPACES = ("one-sdist", "five-sdists", "monorepo")
NODE_MODULES_FILES = 75_000
VENV_FILES = 25_000
LOG = "logs/server.log"
LOG_BYTES = 200 * 1024 * 1024
NO_MATCH = "zq_no_such_identifier_qz"
GROWING_SECONDS = 10.0
SKIPS = (".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache",
         ".pytest_cache", ".ruff_cache", ".tox", ".nox", ".gradle", ".next", ".cache")


def cache_dir() -> Path:
    configured = os.environ.get("AGENT_SERVER_SCALE_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "agent-server" / "scale"


# --- the workspaces ---------------------------------------------------------------------------


def workspace(name: str, cache: Path | None = None) -> Path:
    """The workspace `name`, built on first use (a `.built` file marks a finished one)."""
    root = (cache or cache_dir()) / name
    if (root / ".built").is_file():
        return root
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    if name == "one-sdist":
        extract(CLICK, root)
    else:
        for source in FIVE:
            extract(source, root / source.name.lower())
        _git(root, "init", "-q")
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", "five sdists")
    if name == "monorepo":
        _synthetic(root / "node_modules", NODE_MODULES_FILES, _node_file)
        _synthetic(root / ".venv" / "lib" / "python3.11" / "site-packages", VENV_FILES,
                   _venv_file)
        for source in NESTED:
            nested = root / "vendor" / source.name.lower()
            extract(source, nested)
            _git(nested, "init", "-q")
            _git(nested, "add", "-A")
            _git(nested, "commit", "-q", "-m", source.requirement)
        _log(root / LOG, LOG_BYTES)
    (root / ".built").write_text("", encoding="utf-8")
    return root


def _git(where: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost",
                    "-c", "init.defaultBranch=main", *args], cwd=where, check=True)


def _synthetic(top: Path, files: int, content: Callable[[int, int], tuple[str, str]]) -> None:
    """`files` files in packages of 50 (each package a directory with a nested one)."""
    for index in range(files):
        package, member = divmod(index, 50)
        relative, text = content(package, member)
        path = top / f"pkg{package:04d}" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _node_file(package: int, member: int) -> tuple[str, str]:
    if member == 0:
        return "package.json", json.dumps({"name": f"pkg{package}", "version": "1.0.0",
                                           "main": "index.js"}) + "\n"
    folder = "lib" if member % 2 else "dist"
    text = "".join(f"export function f{package}_{member}_{k}(a, b) {{ return a + b * {k}; }}\n"
                   for k in range(20))
    return f"{folder}/m{member}.js", text


def _venv_file(package: int, member: int) -> tuple[str, str]:
    text = "".join(f"def f{package}_{member}_{k}(a, b):\n    return a + b * {k}\n\n"
                   for k in range(15))
    return f"sub/m{member}.py", text


def _log(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        written = line = 0
        while written < size:
            chunk = "".join(
                f"2026-11-0{1 + n % 9}T12:{n % 60:02d}:{n % 59:02d}Z INFO request {n} "
                f"GET /api/items/{n % 997} 200 {n % 311} ms\n"
                for n in range(line, line + 10_000))
            out.write(chunk)
            written += len(chunk)
            line += 10_000


def count_files(root: Path) -> int:
    """The files of the tree, git's own (.git) and the bench's marker left out."""
    total = 0
    for _top, dirs, files in os.walk(root):
        dirs[:] = [name for name in dirs if name != ".git"]
        total += len(files)
    return total - (root / ".built").is_file()


# --- the figures, each in a process of its own ---------------------------------------------------


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _median_ms(run: Callable[[], object], times: int) -> float:
    taken = []
    for _ in range(times):
        start = time.perf_counter()
        run()
        taken.append((time.perf_counter() - start) * 1000)
    return statistics.median(taken)


@functools.cache
def _spill() -> tempfile.TemporaryDirectory[str]:
    """One spill directory for the run's tool contexts, removed when the process ends."""
    return tempfile.TemporaryDirectory(prefix="scale-spill-")


def _context(root: Path, **options: Any) -> Any:
    from agent_server.agent.tools import ToolContext

    return ToolContext(root, Path(_spill().name), **options)


def _tool(tool: Any, arguments: dict[str, Any], ctx: Any) -> Any:
    from agent_server.agent.tools import run_tool

    result = asyncio.run(run_tool(tool, arguments, ctx))
    if result.is_error:
        raise RuntimeError(f"{tool.spec.name} failed: {result.text[:300]}")
    return result


def measure_log_page(root: Path) -> dict[str, float]:
    from agent_server.agent.file_watch import FileWatch
    from agent_server.agent.tools.read import ReadTool

    watch = FileWatch(root)
    ctx = _context(root)
    lines = (root / LOG).stat().st_size // 70  # about its middle

    def page() -> None:
        _tool(ReadTool(), {"path": LOG, "offset": lines // 2, "limit": 200}, ctx)
        watch.record(LOG)

    peak = _peak_mb()
    first = _median_ms(page, 1)  # counts the file's lines once (tools/line_index.py)
    taken = _median_ms(page, 5)
    return {"log_first_page_ms": first, "log_page_ms": taken,
            "log_page_peak_mb": _peak_mb() - peak}


def measure_growing_log(root: Path) -> dict[str, float]:
    """The watch of a log that grows ten lines a second for 10 s (written by another process):
    this process's CPU share over that time, the notices to the editor, and the notes the
    next turn's check gives the model (at most one)."""
    from agent_server.agent.file_watch import FileWatch

    notices: list[str] = []
    seconds = GROWING_SECONDS

    async def run() -> float:
        watch = FileWatch(root, notices.append)
        watch.record(LOG)
        watch.start()
        await asyncio.sleep(0.5)
        writer = await asyncio.create_subprocess_exec(
            sys.executable, "-c",
            "import sys, time\n"
            "with open(sys.argv[1], 'a') as f:\n"
            "    for n in range(int(float(sys.argv[2]) * 10)):\n"
            "        f.write(f'appended line {n}\\n'); f.flush(); time.sleep(0.1)\n",
            str(root / LOG), str(seconds))
        cpu = time.process_time()
        await writer.wait()
        await asyncio.sleep(0.5)
        used = time.process_time() - cpu
        noted.extend(watch.take_changes())  # the turn's own check
        await watch.stop()
        return used / (seconds + 0.5)

    noted: list[str] = []
    share = asyncio.run(run())
    return {"growing_log_cpu_pct": share * 100, "growing_log_notices": float(len(notices)),
            "growing_log_notes": float(len(noted))}


def measure_mentions(root: Path) -> dict[str, float]:
    from agent_server.agent import mentions

    start = time.perf_counter()
    mentions.complete(root, "")
    first = (time.perf_counter() - start) * 1000
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the index is built behind the first answers
        time.sleep(0.2)
        if _median_ms(lambda: mentions.complete(root, "zzz"), 1) < first / 2 or first < 40:
            break
    queries = ["u", "ut", "uti", "util", "utils", "mod", "model", "models", "test_q", "readme"]
    taken = [_median_ms(functools.partial(mentions.complete, root, query), 3)
             for query in queries]
    return {"mention_first_ms": first, "mention_keystroke_ms": statistics.median(taken)}


def measure_repo_map(root: Path) -> dict[str, float]:
    from agent_server.agent.tools.repo_map import RepoMapTool, mapped_files

    ctx = _context(root, session_files=())
    before = _rss_mb()
    out: dict[str, float] = {}
    for key in ("repo_map_first_s", "repo_map_second_s"):
        start = time.perf_counter()
        _tool(RepoMapTool(), {}, ctx)
        out[key] = time.perf_counter() - start
    files, _more = mapped_files(root)
    changed = root / next(path for path in files if path.endswith(".py"))
    original = changed.read_bytes()
    try:
        changed.write_bytes(original + b"\ndef scale_bench_added():\n    return 1\n")
        start = time.perf_counter()
        _tool(RepoMapTool(), {"focus": ["scale_bench_added"]}, ctx)
        out["repo_map_changed_s"] = time.perf_counter() - start
    finally:
        changed.write_bytes(original)
    out["repo_map_held_mb"] = _rss_mb() - before
    return out


def measure_sandbox(root: Path) -> dict[str, float]:
    from agent_server.agent.tools.bash import BashTool
    from agent_server.agent.tools.sandbox import confinement

    sandboxed = _context(root, confinement=confinement("auto", False))
    plain = _context(root, confinement=confinement("off", False))
    if not sandboxed.confinement.sandboxed:
        return {}
    _tool(BashTool(), {"command": "true"}, sandboxed)
    return {
        "sandboxed_true_ms": _median_ms(lambda: _tool(BashTool(), {"command": "true"},
                                                      sandboxed), 9),
        "unsandboxed_true_ms": _median_ms(lambda: _tool(BashTool(), {"command": "true"},
                                                        plain), 9),
    }


def measure_search(root: Path) -> dict[str, float]:
    from agent_server.agent.tools.find import FindTool

    ctx = _context(root)
    skips = [arg for name in SKIPS for arg in ("-g", f"!{name}/")]
    rg = ["rg", "--hidden", "--no-ignore", "--no-messages", "-n", *skips, NO_MATCH, "."]
    prune = [arg for name in SKIPS for arg in ("-name", name, "-o")][:-1]
    find = ["find", ".", "(", *prune, ")", "-prune", "-o", "-name", "*.py", "-print"]
    runs = 7

    def direct(argv: list[str]) -> Callable[[], object]:
        return lambda: subprocess.run(argv, cwd=root, stdout=subprocess.DEVNULL, check=False)

    asyncio.run(_grep(ctx))  # warm: the jail is tried once per process
    out = {
        "grep_ms": _median_ms(lambda: asyncio.run(_grep(ctx)), runs),
        "rg_ms": _median_ms(direct(rg), runs),
        "find_ms": _median_ms(lambda: _tool(FindTool(), {"pattern": "*.py"}, ctx), runs),
        "find_direct_ms": _median_ms(direct(find), runs),
    }
    return out


async def _grep(ctx: Any) -> None:
    from agent_server.agent.tools import run_tool
    from agent_server.agent.tools.grep import GrepTool

    await run_tool(GrepTool(), {"pattern": NO_MATCH}, ctx)  # "no matches" is not an error


MEASURES: dict[str, Callable[[Path], dict[str, float]]] = {
    "log_page": measure_log_page,
    "growing_log": measure_growing_log,
    "mentions": measure_mentions,
    "repo_map": measure_repo_map,
    "sandbox": measure_sandbox,
    "search": measure_search,
}
LOG_ONLY = ("log_page", "growing_log")


def _measure_in_child(measure: str, root: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.scale", "--measure", measure, str(root)],
        capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent,
    )
    if done.returncode != 0:
        print(f"  {measure} failed: {done.stderr.strip()[-800:]}", file=sys.stderr)
        return {}
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


# --- the report ------------------------------------------------------------------------------

ROWS = (
    ("files", "files in the tree", "{:,.0f}"),
    ("log_first_page_ms", "the first page of the 200 MB log (ms)", "{:.1f}"),
    ("log_page_ms", "a page of the 200 MB log (ms)", "{:.1f}"),
    ("log_page_peak_mb", "  memory it adds at peak (MB)", "{:+.0f}"),
    ("growing_log_cpu_pct", "the log growing 10 lines/s: CPU (% of a core)", "{:.1f}"),
    ("growing_log_notices", "  notices to the editor in 10 s", "{:.0f}"),
    ("growing_log_notes", "  notes to the model at the next turn", "{:.0f}"),
    ("mention_first_ms", "@-mention: first keystroke (ms)", "{:.0f}"),
    ("mention_keystroke_ms", "@-mention: a keystroke, index built (ms)", "{:.1f}"),
    ("repo_map_first_s", "repo_map: first call (s)", "{:.2f}"),
    ("repo_map_second_s", "repo_map: second call (s)", "{:.2f}"),
    ("repo_map_changed_s", "repo_map: after one file changed (s)", "{:.2f}"),
    ("repo_map_held_mb", "repo_map: memory held after (MB)", "{:+.0f}"),
    ("sandboxed_true_ms", "sandboxed `true` (ms)", "{:.0f}"),
    ("unsandboxed_true_ms", "unsandboxed `true` (ms)", "{:.0f}"),
    ("grep_ms", "grep, no match (ms)", "{:.0f}"),
    ("rg_ms", "  rg directly, same skips (ms)", "{:.0f}"),
    ("find_ms", "find *.py (ms)", "{:.0f}"),
    ("find_direct_ms", "  find directly, same skips (ms)", "{:.0f}"),
)


def report(results: dict[str, dict[str, float]]) -> str:
    names = [name for name in WORKSPACES if name in results]
    lines = ["| figure | " + " | ".join(names) + " | growth |",
             "|---|" + "---:|" * (len(names) + 1)]
    for key, label, form in ROWS:
        values = [results[name].get(key) for name in names]
        if all(value is None for value in values):
            continue
        cells = [form.format(value) if value is not None else "-" for value in values]
        known = [value for value in values if value is not None]
        growth = (f"{known[-1] / known[0]:.1f}x" if len(known) > 1 and known[0] > 0
                  and not key.endswith("_mb") else "")
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {growth} |")
    ratios = []
    for name in names:
        figures = results[name]
        for key, base, what in (("sandboxed_true_ms", "unsandboxed_true_ms", "sandboxed true"),
                                ("grep_ms", "rg_ms", "grep/rg"),
                                ("find_ms", "find_direct_ms", "find/find")):
            if figures.get(key) and figures.get(base):
                ratios.append(f"{name} {what} {figures[key] / figures[base]:.2f}x")
    return "\n".join(lines) + ("\n\nratios: " + "; ".join(ratios) if ratios else "")


def run(names: list[str] | None = None, measures: list[str] | None = None,
        json_path: Path | None = None) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    for name in names or list(WORKSPACES):
        root = workspace(name)
        figures: dict[str, float] = {"files": float(count_files(root))}
        print(f"{name}: {figures['files']:,.0f} files at {root}", file=sys.stderr)
        for measure in measures or list(MEASURES):
            if measure in LOG_ONLY and not (root / LOG).is_file():
                continue
            figures.update(_measure_in_child(measure, root))
        results[name] = figures
    print(report(results))
    if json_path is not None:
        json_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return results


def main(names: list[str] | None = None, measures: list[str] | None = None,
         json_path: Path | None = None) -> int:
    run(names, measures, json_path)
    return 0


def _child(argv: list[str]) -> None:
    measure, root = argv[1], Path(argv[2])
    print(json.dumps(MEASURES[measure](root)))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--measure":
        _child(sys.argv[1:])
    else:
        sys.exit(main())
