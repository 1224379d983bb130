"""The first request of a process, and memory over many turns, measured from outside.

Every figure is taken by a raw JSON-RPC client of its own (the bytes on the pipe, no SDK of
the protocol in between), against `agent-server` spawned fresh, with the server's CPU time
(user + system, from /proc/<pid>/stat) beside the wall time, since wall time on a shared
machine says more about the neighbours than about the server:

- first session: `agent-server acp` (newline-delimited JSON-RPC) and `agent-server serve`
  (LSP framing), `session/new` (ACP) or `agent/session/new` (LSP) sent right after
  `initialize` (ACP) or `initialized` (LSP), as an editor does when it opens; then a second
  one in the same process. The provider is `anthropic` with a placeholder key and a base URL
  nobody listens on (nothing is sent: creating a session calls no model), the provider most
  users have; median of `--runs` fresh processes;
- memory over turns: `agent-server serve` against `agent-server sim` (their own processes),
  one session of N turns (a prompt, one or two tool calls on the sample workspace, an
  answer of ~150 tokens; on sim-small, so that it compacts every few turns as long sessions
  do); the server's resident memory (VmRSS) after each turn, and its slope by least squares
  from turn 50 to the last, in kB per turn; and the server's CPU per turn from the second
  turn on, once the server has settled after the first (what a process does once, such as
  importing the provider's SDK, at start before this work and at the first call after it,
  is left out on both sides).

    .venv/bin/python -m benchmarks.first_request_bench [--runs 5] [--turns 200 1000]
        [--only first|turns] [--model sim-small] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.long_session_bench import SERVE, RawClient, settled, sim_process

PLACEHOLDER_KEY = "sk-ant-placeholder-not-a-key"
NOWHERE = "http://127.0.0.1:9"


def _proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _environment(home: Path) -> dict[str, str]:
    """No settings file of the user's, a placeholder key."""
    return {
        **os.environ,
        "XDG_CONFIG_HOME": str(home / "config"),
        "ANTHROPIC_API_KEY": PLACEHOLDER_KEY,
    }


# --- ACP: newline-delimited JSON-RPC ------------------------------------------------------------


class AcpClient:
    """JSON-RPC over `agent-server acp`'s pipes, one JSON object a line."""

    def __init__(self, command: Sequence[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._next_id = 0

    def request(self, method: str, params: Any) -> tuple[Any, float, float]:
        """The result, the wall seconds and the server's CPU seconds until it was read."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self._next_id += 1
        number = self._next_id
        cpu = _proc_cpu(self.process.pid)
        started = time.perf_counter()
        line = json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()
        while True:
            raw = self.process.stdout.readline()
            if not raw:
                raise EOFError(f"the agent closed its output before answering {method}")
            message = json.loads(raw)
            if message.get("id") == number and "method" not in message:
                seconds = time.perf_counter() - started
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result"), seconds, _proc_cpu(self.process.pid) - cpu
            if "method" in message and "id" in message:  # a request to the client
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": None}
                self.process.stdin.write(json.dumps(answer).encode() + b"\n")
                self.process.stdin.flush()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def acp_first_session(scratch: Path) -> dict[str, float]:
    workspace = scratch / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "agent_server",
        "acp",
        "--provider",
        "anthropic",
        "--base-url",
        NOWHERE,
        "--sessions-dir",
        str(scratch / "sessions"),
    ]
    client = AcpClient(command, _environment(scratch))
    try:
        client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        params = {"cwd": str(workspace), "mcpServers": []}
        _, seconds, cpu = client.request("session/new", params)
        _, again, again_cpu = client.request("session/new", params)
    finally:
        client.close()
    return {"seconds": seconds, "cpu_seconds": cpu, "again_s": again, "again_cpu_s": again_cpu}


def lsp_first_session(scratch: Path) -> dict[str, float]:
    workspace = scratch / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    client = RawClient(SERVE, env=_environment(scratch))
    try:
        settings = {
            "provider": "anthropic",
            "baseUrl": NOWHERE,
            "sessionsDir": str(scratch / "sessions"),
        }
        client.request(
            "initialize",
            {
                "processId": None,
                "rootUri": workspace.as_uri(),
                "capabilities": {},
                "initializationOptions": {"settings": settings},
            },
        )
        cpu = client.cpu_seconds()
        started = time.perf_counter()
        client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        params = {"workspaceUri": workspace.as_uri()}
        client.request("agent/session/new", params)
        seconds = time.perf_counter() - started
        cpu = client.cpu_seconds() - cpu
        again_cpu = client.cpu_seconds()
        _, _, again = client.request("agent/session/new", params)
        again_cpu = client.cpu_seconds() - again_cpu
    finally:
        client.close()
    return {"seconds": seconds, "cpu_seconds": cpu, "again_s": again, "again_cpu_s": again_cpu}


def first_sessions(runs: int) -> dict[str, Any]:
    """Both front ends, `runs` fresh processes each, alternated; medians and all values."""
    samples: dict[str, list[dict[str, float]]] = {"acp": [], "lsp": []}
    for _ in range(runs):
        for name, measure in (("acp", acp_first_session), ("lsp", lsp_first_session)):
            with tempfile.TemporaryDirectory(prefix=f"first-{name}-") as scratch:
                samples[name].append(measure(Path(scratch)))
    return {
        name: {
            **{
                key: statistics.median(sample[key] for sample in values)
                for key in ("seconds", "cpu_seconds", "again_s", "again_cpu_s")
            },
            "samples": values,
        }
        for name, values in samples.items()
    }


# --- memory over turns ------------------------------------------------------------------------

FILES = (
    "src/inventory/models.py",
    "src/inventory/storage.py",
    "src/inventory/reports.py",
    "src/inventory/cli.py",
    "src/inventory/config.py",
    "docs/architecture.md",
    "README.md",
    "tests/test_models.py",
    "tests/test_storage.py",
)


def turns_scenario(turns: int) -> dict[str, Any]:
    """`turns` turns over the sample workspace: a read (and every third turn a grep), then an
    answer of ~150 tokens."""
    script = []
    for number in range(turns):
        path = FILES[number % len(FILES)]
        steps: list[dict[str, Any]] = [
            {"text": f"Reading {path}.", "tools": [{"name": "read", "arguments": {"path": path}}]}
        ]
        if number % 3 == 2:
            grep = {"name": "grep", "arguments": {"pattern": "def ", "path": "src"}}
            steps.append({"tools": [grep]})
        steps.append({"text": f"Turn {number}: what {path} does, in short.", "textTokens": 150})
        script.append({"user": f"Turn {number}: explain {path}.", "steps": steps})
    return {"name": "turns-bench", "turns": script}


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def slope(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of y over x."""
    mean_x = statistics.fmean(x for x, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else 0.0


def turns_memory(turns: int, model: str = "sim-small") -> dict[str, Any]:
    from agent_server.sim.workspace import write_sample_workspace

    with tempfile.TemporaryDirectory(prefix="turns-bench-") as scratch_dir:
        scratch = Path(scratch_dir)
        script = scratch / "scenario.json"
        script.write_text(json.dumps(turns_scenario(turns)), "utf-8")
        with sim_process(script) as base:
            workspace = scratch / "workspace"
            write_sample_workspace(workspace)
            client = RawClient(
                SERVE, env=_environment(scratch)
            )
            try:
                return _drive_turns(client, workspace, scratch, base, model, turns)
            finally:
                client.close()


def _drive_turns(
    client: RawClient, workspace: Path, scratch: Path, base: str, model: str, turns: int
) -> dict[str, Any]:
    settings = {
        "provider": "sim",
        "baseUrl": base,
        "model": model,
        "sessionsDir": str(scratch / "sessions"),
        "permissions": {"mode": "allowAll"},
    }
    client.initialize(workspace, settings)
    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    created, _, _ = client.request("agent/session/new", {"workspaceUri": workspace.as_uri()})
    session = created["sessionId"]
    rss: list[int] = []
    compactions = 0
    started = time.perf_counter()
    cpu = 0.0
    for number in range(turns):
        if number == 1:
            # What a process does once (importing the SDK, at start or at the first call)
            # left out of the CPU per turn: the server finishes it, then the count starts.
            settled(client)
            started, cpu = time.perf_counter(), client.cpu_seconds()
        path = FILES[number % len(FILES)]
        result, _, _ = client.request(
            "agent/turn", {"sessionId": session, "prompt": f"Turn {number}: explain {path}."}
        )
        if result.get("stopReason") != "end_turn":
            raise RuntimeError(f"turn {number} stopped: {result.get('stopReason')}")
        rss.append(_rss_kb(client.process.pid))
    usage, _, _ = client.request("agent/usage", {"sessionId": session})
    compactions = int(usage.get("windowNumber", 1)) - 1
    start = min(50, turns // 4)
    return {
        "turns": turns,
        "model": model,
        "compactions": compactions,
        "rss_kb": {"first": rss[0], "at_start": rss[start], "last": rss[-1]},
        "kb_per_turn": slope([(n, rss[n]) for n in range(start, turns)]),
        "kb_per_turn_second_half": slope([(n, rss[n]) for n in range(turns // 2, turns)]),
        "seconds": time.perf_counter() - started,
        "cpu_seconds": client.cpu_seconds() - cpu,  # turns 1 to the last
        "cpu_ms_per_turn": (client.cpu_seconds() - cpu) / max(1, turns - 1) * 1e3,
        "series_kb": rss[:: max(1, turns // 50)],
    }


def format_report(result: dict[str, Any]) -> str:
    lines = []
    first = result.get("first")
    if first:
        for name, label in (("acp", "ACP session/new"), ("lsp", "LSP agent/session/new")):
            figure = first[name]
            lines.append(
                f"first {label}, right after start: {figure['seconds']:.3f} s "
                f"(server CPU {figure['cpu_seconds']:.2f} s); the next: {figure['again_s']:.3f} s "
                f"(CPU {figure['again_cpu_s']:.2f} s); median of {len(figure['samples'])}"
            )
    for figure in result.get("turns", []):
        lines.append(
            f"{figure['turns']} turns over LSP ({figure['model']}, {figure['compactions']} "
            f"compactions): RSS {figure['rss_kb']['at_start'] / 1e3:.1f} MB at turn "
            f"{min(50, figure['turns'] // 4)} -> "
            f"{figure['rss_kb']['last'] / 1e3:.1f} MB; {figure['kb_per_turn']:+.2f} kB a turn "
            f"({figure['kb_per_turn_second_half']:+.2f} over the second half); server CPU "
            f"{figure['cpu_ms_per_turn']:.0f} ms a turn after the first"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--turns", type=int, nargs="*", default=[200, 1000])
    parser.add_argument("--only", choices=("first", "turns"))
    parser.add_argument(
        "--model",
        default="sim-small",
        help="the turns' model (sim-small compacts every ~20 turns; sim-large not in 200)",
    )
    parser.add_argument("--json", type=Path)
    options = parser.parse_args(argv)
    result: dict[str, Any] = {}
    if options.only != "turns":
        result["first"] = first_sessions(options.runs)
    if options.only != "first":
        result["turns"] = [turns_memory(count, options.model) for count in options.turns]
    print(format_report(result))
    if options.json:
        options.json.write_text(json.dumps(result, indent=2) + "\n", "utf-8")


if __name__ == "__main__":
    main()
