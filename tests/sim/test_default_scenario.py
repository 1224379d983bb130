"""The built-in scenario, played in full against the sample workspace by a minimal agent loop:
every tool call succeeds, and the tool output is big enough to fill sim-small's window several
times over (so that a real session must compact)."""

from __future__ import annotations

import fnmatch
import re
import subprocess
from pathlib import Path
from typing import Any

from anthropic import AsyncAnthropic

from agent_server.llm.models import ModelRegistry
from agent_server.sim.scenario import default_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from agent_server.sim.tokenizer import count_tokens
from agent_server.sim.workspace import BAD_ROW, write_sample_workspace
from tests.sim.builders import anthropic_tools

SKIP_DIRS = {".git", "__pycache__", ".pytest_cache"}


class ToolError(Exception):
    pass


def files(root: Path, under: Path) -> list[Path]:
    if under.is_file():
        return [under]
    return sorted(
        path for path in under.rglob("*")
        if path.is_file() and not SKIP_DIRS & set(path.relative_to(root).parts)
    )


def run_tool(root: Path, name: str, arguments: dict[str, Any]) -> str:
    """Just enough of the agent's tools to play the scenario."""
    path = root / str(arguments.get("path", "."))
    if name == "ls":
        return "\n".join(p.name + ("/" if p.is_dir() else "") for p in sorted(path.iterdir()))
    if name == "read":
        lines = path.read_text().splitlines()
        start = int(arguments.get("offset", 1)) - 1
        limit = int(arguments.get("limit", 2000))
        return "\n".join(lines[start : start + limit])
    if name == "grep":
        pattern = re.compile(str(arguments["pattern"]))
        glob = arguments.get("glob")
        hits = []
        for file in files(root, path):
            if glob and not fnmatch.fnmatch(file.name, str(glob)):
                continue
            for number, line in enumerate(file.read_text().splitlines(), start=1):
                if pattern.search(line):
                    hits.append(f"{file.relative_to(root)}:{number}: {line}")
        return "\n".join(hits) or "(no matches)"
    if name == "find":
        pattern = str(arguments["pattern"])
        found = [str(f.relative_to(root)) for f in files(root, path)
                 if fnmatch.fnmatch(f.name, pattern)]
        return "\n".join(found)
    if name == "write":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(arguments["content"]))
        return f"wrote {path.relative_to(root)}"
    if name == "edit":
        text = path.read_text()
        old = str(arguments["oldText"])
        if old not in text:
            raise ToolError(f"oldText not found in {path.relative_to(root)}")
        path.write_text(text.replace(old, str(arguments["newText"]), 1))
        return f"edited {path.relative_to(root)}"
    if name == "bash":
        done = subprocess.run(str(arguments["command"]), shell=True, cwd=root, text=True,
                              capture_output=True, timeout=int(arguments.get("timeout", 60)))
        return done.stdout + done.stderr
    raise ToolError(f"unknown tool {name}")


async def test_the_default_scenario_plays_through_on_the_sample_workspace(tmp_path: Path) -> None:
    write_sample_workspace(tmp_path)
    assert f"{BAD_ROW}" in (tmp_path / "logs" / "app.log").read_text()
    scenario = default_scenario()
    simulator = Simulator()  # the built-in scenario
    tool_tokens = 0
    failures: list[str] = []
    calls = 0
    async with SimServer(simulator) as server:
        client = AsyncAnthropic(base_url=server.base_url, api_key="k", max_retries=0)
        messages: list[dict[str, Any]] = []
        for prompt in scenario.prompts:
            messages.append({"role": "user", "content": prompt})
            while True:
                message = await client.messages.create(
                    model="sim-large", max_tokens=8000, messages=messages,
                    tools=anthropic_tools(),
                )
                calls += 1
                messages.append({"role": "assistant", "content": [
                    block.model_dump(exclude_none=True, exclude={"caller"})
                    for block in message.content
                ]})
                if message.stop_reason != "tool_use":
                    assert message.stop_reason == "end_turn"
                    break
                results = []
                for block in message.content:
                    if block.type != "tool_use":
                        continue
                    try:
                        output = run_tool(tmp_path, block.name, dict(block.input))
                        error = False
                    except (OSError, ToolError, KeyError) as exc:
                        output, error = str(exc), True
                        failures.append(f"{block.name} {block.input}: {exc}")
                    tool_tokens += count_tokens(output)
                    results.append({"type": "tool_result", "tool_use_id": block.id,
                                    "content": output or "(empty)", "is_error": error})
                messages.append({"role": "user", "content": results})
        await client.close()

    assert failures == []
    assert calls == sum(len(turn.steps) for turn in scenario.turns) >= 60
    assert [r.source for r in simulator.records if r.source][:2] == ["scenario:0:0",
                                                                     "scenario:0:1"]
    window = ModelRegistry().get("sim-small")
    assert window is not None
    assert tool_tokens > 2 * window.context_window
    notes = (tmp_path / "notes" / "findings.md").read_text()
    assert "4. Some journal lines" in notes
    assert "## Plan" in notes
