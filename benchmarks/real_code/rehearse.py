"""A dry run of a real-code scenario without any model or client: its calls run in order on a
fresh copy of the workspace (edits and writes applied, commands run), and every output fact
is checked against what its command printed when a step needed it, and every file fact
against the file as it stands when a step needs it (the lines it names hold its texts: a fact
declared before an edit of those lines is stale afterwards, and no client could find it again).
It proves that the script matches the code at its pinned version: the edits apply, and the
outputs and files say what the facts say they do."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_server.sim.knowledge import normalise
from agent_server.sim.scenario import Fact
from benchmarks.peers import COMMAND_ENV, NOT_IN_COMMAND_ENV
from benchmarks.real_code import ENVIRONMENT, RealWorkload


def _command_env() -> dict[str, str]:
    """What the clients' commands see (peers.COMMAND_ENV), with the suite's ENVIRONMENT."""
    kept = {k: v for k, v in os.environ.items() if k not in NOT_IN_COMMAND_ENV}
    return {**kept, **COMMAND_ENV, **ENVIRONMENT}


def _run(call: Mapping[str, Any], workspace: Path, outputs: dict[str, str]) -> str:
    name, arguments = call["name"], call["arguments"]
    if name == "bash":
        done = subprocess.run(["bash", "-c", arguments["command"]], cwd=workspace,
                              capture_output=True, text=True, timeout=600,
                              env=_command_env())
        outputs[arguments["command"]] = done.stdout + done.stderr
        return outputs[arguments["command"]]
    path = workspace / str(arguments.get("path", "."))
    if name == "edit":
        text = path.read_text(encoding="utf-8")
        if text.count(arguments["oldText"]) != 1:
            raise AssertionError(f"edit of {path.name}: old text found "
                                 f"{text.count(arguments['oldText'])} times")
        path.write_text(text.replace(arguments["oldText"], arguments["newText"], 1),
                        encoding="utf-8")
    elif name == "write":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(arguments["content"], encoding="utf-8")
    return ""


def rehearse(workload: RealWorkload) -> list[str]:
    """The problems found (empty when the script holds)."""
    problems: list[str] = []
    facts = workload.scenario.facts
    with tempfile.TemporaryDirectory() as scratch:
        workspace = Path(scratch) / "workspace"
        workload.write(workspace)
        outputs: dict[str, str] = {}
        for t_index, turn in enumerate(workload.scenario.turns):
            for s_index, step in enumerate(turn.steps):
                for need in step.needs:
                    shown = _shown(facts[need], workspace, outputs)
                    if shown is None:
                        continue
                    missing = [t for t in facts[need].texts
                               if normalise(t) not in normalise(shown)]
                    if missing:
                        problems.append(f"turn {t_index} step {s_index}: {need}: {missing} "
                                        f"not in what shows it now ({shown[-300:]!r})")
                for tool in step.tools:
                    _run({"name": tool.name, "arguments": tool.arguments}, workspace, outputs)
    return problems


def _shown(fact: Fact, workspace: Path, outputs: Mapping[str, str]) -> str | None:
    """What shows `fact` at this point of the session: the output its command printed last,
    or the lines of the file it names as the file stands now (None: nothing to check)."""
    if fact.fetch is None:
        return None
    arguments = fact.fetch.arguments
    if fact.kind == "output":
        return outputs.get(str(arguments.get("command")), "")
    if fact.kind != "file" or fact.fetch.name != "read":
        return None
    path = workspace / str(arguments["path"])
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    first = int(arguments.get("offset", 1))
    return "\n".join(lines[first - 1 : first - 1 + int(arguments.get("limit", len(lines)))])
