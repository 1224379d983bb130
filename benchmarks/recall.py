"""The recall benchmark: what forgetting costs, client by client, on code no one here wrote.

`agent-server bench recall` runs agent-server (on the Responses API, and on the Messages API
as `agent-server-anthropic`) and the pinned peers (pi, Claude Code, Codex: `benchmarks.peers`)
on the real-code suite (`benchmarks.real_code`: a bugfix in tabulate, a feature across
sqlparse's modules, a debugging session in more-itertools), each on a 32k and a 200k window,
with the simulated model's faithful and its lossy summariser. The simulated model knows only
what its request holds (`agent_server.sim.knowledge`): a missing file or output is fetched
again (a recovery, billed), a missing rule, request, decision or failed approach is acted on
wrongly (a violation). Every client gets the same workspace, environment and simulator.

Per run: the bill; the facts its steps needed and found; recoveries (calls, tokens,
dollars); violations by kind; compactions; the completed steps and the bill per completed
step. `--strategies` runs agent-server under other strategies of benchmarks/strategies.py too
(the repo_map tool, Aider's repository map at the head), each a row of its own. `--quick`
(CI) runs agent-server alone, on the two smaller sessions and the 32k window:
its figures are printed, never asserted. `--omniscient` runs the same sessions with a model that
never misses what was dropped (every step's needs ignored), the scripted model every figure
before issue 25 came from: the bills beside the knowing model's say what forgetting costs.
A strategy may also be a design choice measured against the product's on the same suite
(issue 26: `restore-files`, Claude Code's restore of recent files after a compaction).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

from agent_server.sim.scenario import Scenario
from agent_server.sim.summary import SUMMARY_MODES, SummaryMode
from benchmarks import peers
from benchmarks.real_code import ENVIRONMENT, RECIPES, RealWorkload, workloads
from benchmarks.strategies import Strategy, strategies

MODELS = ("sim-small", "sim-large")
QUICK_CLIENTS = ("agent-server", "agent-server-anthropic")
QUICK_WORKLOADS = ("tabulate-bugfix", "sqlparse-feature")


def session_of(workload: RealWorkload) -> peers.Session:
    return peers.Session(workload.name, workload.scenario, workload.write, ENVIRONMENT)


def omniscient(scenario: Scenario) -> Scenario:
    """The scenario with no step naming a fact it needs: a model that knows it all."""
    turns = tuple(replace(turn, steps=tuple(replace(step, needs=()) for step in turn.steps))
                  for turn in scenario.turns)
    return replace(scenario, turns=turns)


def _run(client: str, workload: RealWorkload, model: str, summariser: SummaryMode,
         run_dir: Path, scratch: Path, executables: dict[str, Path],
         strategy: Strategy | None = None) -> peers.Figures:
    session = session_of(workload)
    if client.startswith("agent-server"):
        run = asyncio.run(peers._run_agent_server(client, model, run_dir, scratch, session,
                                                  summariser, strategy))
    else:
        peer = next(p for p in peers.PEERS if p.name == client)
        run = peers.run_peer(peer, executables[client], model, run_dir, scratch,
                             _progress, session, summariser)
    peers.write_tool_results(run, run_dir)
    return peers.figures(run)


def _runs(clients: Sequence[str], names: Sequence[str]
          ) -> list[tuple[str, Strategy | None]]:
    """Each client once, agent-server once per strategy named (benchmarks/strategies.py)."""
    chosen = [s for s in strategies() if s.name in names]
    return [(client, strategy) for client in clients
            for strategy in (chosen if client.startswith("agent-server") else [None])]


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _unknown(clients: Sequence[str], models: Sequence[str], summarisers: Sequence[str],
             names: Sequence[str], chosen: Sequence[str] = ()) -> list[str]:
    known = {recipe.name for recipe in RECIPES}
    return ([c for c in clients if c not in peers.CLIENTS]
            + [m for m in models if m not in MODELS]
            + [s for s in summarisers if s not in SUMMARY_MODES]
            + [n for n in names if n not in known]
            + [c for c in chosen if c not in {s.name for s in strategies()}])


def main(clients: Sequence[str] | None = None, models: Sequence[str] | None = None,
         summarisers: Sequence[str] | None = None, names: Sequence[str] | None = None,
         out_dir: Path | None = None, quick: bool = False, json_path: Path | None = None,
         strategy_names: Sequence[str] | None = None, knows_all: bool = False) -> int:
    from benchmarks.report import print_recall

    clients = clients or (QUICK_CLIENTS if quick else peers.CLIENTS)
    models = models or (("sim-small",) if quick else MODELS)
    modes = summarisers or SUMMARY_MODES
    names = names or (QUICK_WORKLOADS if quick else tuple(r.name for r in RECIPES))
    strategy_names = strategy_names or ("default",)
    unknown = _unknown(clients, models, modes, names, strategy_names)
    if unknown:
        print(f"agent-server bench recall: unknown {', '.join(unknown)}; clients are "
              f"{', '.join(peers.CLIENTS)}, models {', '.join(MODELS)}, summarisers "
              f"{', '.join(SUMMARY_MODES)}, sessions "
              f"{', '.join(r.name for r in RECIPES)}, strategies "
              f"{', '.join(s.name for s in strategies())}", file=sys.stderr)
        return 2
    if not peers.has_npm("recall", clients):
        return 2
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_root = (out_dir or Path(".bench") / "recall" / stamp).resolve()
    cache = peers.cache_dir()
    runs = cache.parent / "peer-runs"
    runs.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"recall-{stamp}-", dir=runs))
    rows: list[peers.Figures] = []
    try:
        _progress(f"preparing {', '.join(names)} (sources from PyPI and npm, cached)")
        prepared = workloads(tuple(names), trees=scratch / "trees")
        if knows_all:
            prepared = [replace(w, scenario=omniscient(w.scenario)) for w in prepared]
        executables = {peer.name: peers.install(peer, cache) for peer in peers.PEERS
                       if peer.name in clients}
        started = time.perf_counter()
        for workload in prepared:
            for model in models:
                for mode in (m for m in SUMMARY_MODES if m in modes):
                    run_dir = run_root / workload.name / mode
                    run_dir.mkdir(parents=True, exist_ok=True)
                    for client, strategy in _runs(clients, strategy_names):
                        shown = client if strategy is None else f"{client} ({strategy.name})"
                        _progress(f"{workload.name}, {model}, {mode}: {shown}")
                        rows.append(_run(client, workload, model, mode, run_dir, scratch,
                                         executables, strategy))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary = [asdict(row) for row in rows]
    (run_root / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    if json_path is not None:
        json_path.write_text(json.dumps(summary, indent=2), encoding="utf-8")
    print_recall(rows, run_root, time.perf_counter() - started)
    return 0
