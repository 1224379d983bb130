"""Harness time per agent step, seen from the simulator, agent-server beside pi on the same steps.

A step is one model call inside a turn after the first: the client got the previous answer,
ran its tool calls and sent the next request. Its harness time is the time from the moment
the simulator handed over the last byte of the previous answer to the moment the next
request arrived (both read by an ASGI wrapper around the simulator's app, on this process's
clock): reading the stream, running the tools, writing the session, building the request.
The first request of each turn is left out (pi starts a process per turn).

Both clients run the simulator's default scenario (18 turns about the sample workspace, 47
steps after a turn's first call) on sim-large over the Anthropic Messages API, each with a
fresh copy of the workspace and a fresh simulator in this process:

- agent-server: `agent-server serve` driven over stdio by a raw JSON-RPC client, as an
  editor drives it (provider `anthropic` with a placeholder key and the simulator's base URL,
  `permissions.mode` allowAll, so that bash runs in its sandbox);
- pi (`@mariozechner/pi-coding-agent`, the version `agent-server bench peers` pins and
  installs): one `pi --mode rpc` process for the session, a `prompt` command a turn
  (benchmarks/pi_rpc.py), configured as the peer benchmark does.

Runs alternate (`--runs` of each); the figure is the median step over all runs, and the
median per tool kind.

    .venv/bin/python -m benchmarks.step_time_bench [--runs 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_server.llm.models import BUILTIN_MODELS, ModelRegistry
from agent_server.sim.scenario import default_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from agent_server.sim.workspace import write_sample_workspace
from benchmarks.long_session_bench import SERVE, RawClient
from benchmarks.peers import PEERS, _clean_env, _pi_setup, cache_dir, install, pi_command
from benchmarks.pi_rpc import PiRpc

MODEL = "sim-large"
PLACEHOLDER_KEY = "sk-ant-placeholder-not-a-key"


@dataclass
class Exchange:
    """One Messages request as the simulator saw it (perf_counter seconds)."""

    arrived: float
    answered: float = 0.0


def timed(app: ASGIApp, exchanges: list[Exchange]) -> ASGIApp:
    """`app`, noting when each Messages request arrived and when its last byte went out."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).endswith("/messages"):
            await app(scope, receive, send)
            return
        exchange = Exchange(time.perf_counter())
        exchanges.append(exchange)

        async def probe(message: Message) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                exchange.answered = time.perf_counter()

        await app(scope, receive, probe)

    return wrapped


def step_times(simulator: Simulator, exchanges: list[Exchange]) -> list[dict[str, Any]]:
    """Each step's harness time, with the tools the previous answer called."""
    records = [r for r in simulator.records if r.api == "anthropic-messages"]
    if len(records) != len(exchanges):
        raise RuntimeError(f"{len(records)} records for {len(exchanges)} requests")
    steps = []
    for number in range(1, len(records)):
        source = records[number].source or ""
        if not source.startswith("scenario:") or source.endswith(":0"):
            continue  # the first call of a turn, or not a scripted step
        previous = records[number - 1]
        steps.append(
            {
                "source": source,
                "seconds": exchanges[number].arrived - exchanges[number - 1].answered,
                "tools": _tools_called(previous.source or ""),
            }
        )
    return steps


def _tools_called(source: str) -> str:
    """The tools the scripted step `source` ("scenario:<turn>:<step>") calls, joined."""
    _, turn, step = source.split(":")
    planned = default_scenario().turns[int(turn)].steps[int(step)]
    return "+".join(sorted({tool.name for tool in planned.tools})) or "none"


def run_agent_server(scratch: Path) -> list[dict[str, Any]]:
    exchanges: list[Exchange] = []
    simulator = Simulator()
    simulator.app = timed(simulator.app, exchanges)
    workspace = scratch / "workspace"
    write_sample_workspace(workspace)
    handle = SimServer(simulator).run_in_thread()
    env = _clean_env(scratch / "home", {"ANTHROPIC_API_KEY": PLACEHOLDER_KEY})
    (scratch / "home").mkdir()
    client = RawClient(SERVE, env=env)
    try:
        settings = {
            "provider": "anthropic",
            "baseUrl": handle.base_url,
            "model": MODEL,
            "sessionsDir": str(scratch / "sessions"),
            "permissions": {"mode": "allowAll"},
        }
        client.initialize(workspace, settings)
        client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        created, _, _ = client.request("agent/session/new", {"workspaceUri": workspace.as_uri()})
        for prompt in default_scenario().prompts:
            result, _, _ = client.request(
                "agent/turn", {"sessionId": created["sessionId"], "prompt": prompt}
            )
            if result.get("stopReason") != "end_turn":
                raise RuntimeError(f"agent-server stopped: {result.get('stopReason')}")
    finally:
        client.close()
        handle.stop()
        simulator.close()
    return step_times(simulator, exchanges)


def run_pi(scratch: Path) -> list[dict[str, Any]]:
    peer = next(p for p in PEERS if p.name == "pi")
    executable = install(peer, cache_dir())
    model = ModelRegistry(BUILTIN_MODELS).require(MODEL)
    exchanges: list[Exchange] = []
    simulator = Simulator()
    simulator.app = timed(simulator.app, exchanges)
    workspace = scratch / "workspace"
    write_sample_workspace(workspace)
    home = scratch / "home"
    home.mkdir()
    handle = SimServer(simulator).run_in_thread()
    try:
        extra, pi_args = _pi_setup(home, handle.base_url, model)
        env = _clean_env(home, extra)
        rpc = PiRpc(pi_command(executable, pi_args), workspace, env, sys.stderr)
        try:
            for prompt in default_scenario().prompts:
                outcome = rpc.turn(prompt, 600)
                if not outcome.ok:
                    raise RuntimeError(f"pi's turn failed: {outcome.error}")
        finally:
            rpc.close()
    finally:
        handle.stop()
        simulator.close()
    return step_times(simulator, exchanges)


def summary(steps: list[dict[str, Any]]) -> dict[str, Any]:
    by_tools: dict[str, list[float]] = {}
    for step in steps:
        by_tools.setdefault(step["tools"], []).append(step["seconds"])
    return {
        "steps": len(steps),
        "median_ms": statistics.median(s["seconds"] for s in steps) * 1e3,
        "mean_ms": statistics.fmean(s["seconds"] for s in steps) * 1e3,
        "by_tools_median_ms": {
            tools: statistics.median(values) * 1e3 for tools, values in sorted(by_tools.items())
        },
    }


def run(runs: int) -> dict[str, Any]:
    samples: dict[str, list[dict[str, Any]]] = {"agent-server": [], "pi": []}
    for _ in range(runs):
        for name, measure in (("agent-server", run_agent_server), ("pi", run_pi)):
            with tempfile.TemporaryDirectory(prefix=f"steps-{name}-") as scratch:
                samples[name] += measure(Path(scratch))
    result = {name: summary(steps) for name, steps in samples.items()}
    result["ratio_median"] = result["agent-server"]["median_ms"] / result["pi"]["median_ms"]
    result["ratio_mean"] = result["agent-server"]["mean_ms"] / result["pi"]["mean_ms"]
    return result


def format_report(result: dict[str, Any]) -> str:
    ours, pi = result["agent-server"], result["pi"]
    lines = [
        f"harness time per step (simulator side, {ours['steps']} steps of agent-server, "
        f"{pi['steps']} of pi): median {ours['median_ms']:.1f} ms against pi's "
        f"{pi['median_ms']:.1f} ms ({result['ratio_median']:.2f}x); mean "
        f"{ours['mean_ms']:.1f} against {pi['mean_ms']:.1f} ms ({result['ratio_mean']:.2f}x)",
    ]
    for tools, value in ours["by_tools_median_ms"].items():
        theirs = pi["by_tools_median_ms"].get(tools)
        against = f"{theirs:.1f} ms" if theirs is not None else "-"
        lines.append(f"  after {tools}: {value:.1f} ms against pi's {against}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args(argv)
    result = run(options.runs)
    print(format_report(result))
    if options.json:
        options.json.write_text(json.dumps(result, indent=2) + "\n", "utf-8")


if __name__ == "__main__":
    main()
