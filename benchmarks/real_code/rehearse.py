"""A dry run of a real-code scenario without any model or client: its calls run in order on a
fresh copy of the workspace (edits and writes applied, commands run), and every output fact
is checked against what its command printed when a step needed it, and every file fact
against the file as it stands when a step needs it (the lines it names hold its texts: a fact
declared before an edit of those lines is stale afterwards, and no client could find it again).
It proves that the script matches the code at its pinned version: the edits apply, the
outputs and files say what the facts say they do, and the lines a step reads to see all of
(`Step.sees`) are where it says.

An output fact may be needed after the code changed under it (the error a reverted attempt
raised, the test that failed before the fix): its texts must be in an output its command
printed before, and the command is run again at that point to see whether it still prints
them. A need it no longer prints is `unrederivable`: only the session's history holds it,
and a model that lost it from its request can recall it or lose it, not fetch it."""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_server.sim.knowledge import normalise
from agent_server.sim.scenario import Fact, Location
from benchmarks.peers import COMMAND_ENV, NOT_IN_COMMAND_ENV
from benchmarks.real_code import ENVIRONMENT, RealWorkload


def _command_env() -> dict[str, str]:
    """What the clients' commands see (peers.COMMAND_ENV), with the suite's ENVIRONMENT."""
    kept = {k: v for k, v in os.environ.items() if k not in NOT_IN_COMMAND_ENV}
    return {**kept, **COMMAND_ENV, **ENVIRONMENT}


def _shell(command: str, workspace: Path) -> str:
    done = subprocess.run(["bash", "-c", command], cwd=workspace, capture_output=True,
                          text=True, timeout=600, env=_command_env())
    return done.stdout + done.stderr


@dataclass
class Outputs:
    """What each command printed so far, and on which content of the workspace. A command
    run again on content it ran on prints what it printed then (its facts are texts that do
    not change between runs: no timings), so that output is used instead (pyparsing-perf's
    rehearsal: 73 s where running every command took 97 s)."""

    printed: dict[str, list[str]] = field(default_factory=dict)
    on: dict[tuple[str, str], str] = field(default_factory=dict)  # (command, content) -> output

    def again(self, command: str, workspace: Path) -> str:
        key = (command, _content(workspace))
        if key not in self.on:
            self.on[key] = _shell(command, workspace)
        return self.on[key]


_CACHES = frozenset(("__pycache__", ".pytest_cache", ".mypy_cache", ".venv", ".git"))


def _content(workspace: Path) -> str:
    """A digest of the workspace's files (not the caches its commands write)."""
    digest = hashlib.sha1()
    for root, dirs, files in os.walk(workspace):
        dirs[:] = sorted(d for d in dirs if d not in _CACHES)
        for name in sorted(files):
            path = Path(root, name)
            digest.update(str(path.relative_to(workspace)).encode() + b"\0")
            if not path.is_symlink():
                digest.update(path.read_bytes())
    return digest.hexdigest()


def _run(call: Mapping[str, Any], workspace: Path, outputs: Outputs) -> str:
    name, arguments = call["name"], call["arguments"]
    if name == "bash":
        printed = outputs.again(arguments["command"], workspace)
        outputs.printed.setdefault(arguments["command"], []).append(printed)
        return printed
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


@dataclass
class Rehearsal:
    problems: list[str] = field(default_factory=list)  # empty when the script holds
    unrederivable: list[str] = field(default_factory=list)  # "turn T step S: fact"


def rehearse(workload: RealWorkload) -> Rehearsal:
    """What the dry run found: the script's problems, and the needs only history can meet."""
    found = Rehearsal()
    facts = workload.scenario.facts
    with tempfile.TemporaryDirectory() as scratch:
        workspace = Path(scratch) / "workspace"
        workload.write(workspace)
        outputs = Outputs()
        for t_index, turn in enumerate(workload.scenario.turns):
            for s_index, step in enumerate(turn.steps):
                for need in step.needs:
                    _check(facts[need], f"turn {t_index} step {s_index}: {need}", workspace,
                           outputs, found)
                _check_seen(step.sees, f"turn {t_index} step {s_index}", workspace, found)
                for tool in step.tools:
                    _run({"name": tool.name, "arguments": tool.arguments}, workspace, outputs)
    return found


def _check_seen(sees: tuple[Location, ...], where: str, workspace: Path,
                found: Rehearsal) -> None:
    """Each line a step reads to see (`Step.sees`) is on its line of the file as it stands
    (each file read once)."""
    files: dict[str, list[str]] = {}
    for place in sees:
        if place.path not in files:
            path = workspace / place.path
            files[place.path] = (path.read_text(encoding="utf-8").splitlines()
                                 if path.is_file() else [])
        lines, line = files[place.path], place.line or 0
        if not 1 <= line <= len(lines) or normalise(lines[line - 1]) != normalise(place.text or ""):
            found.problems.append(f"{where}: sees {place.text!r} on line {line} of "
                                  f"{place.path}, which does not hold it")


def _holds(fact: Fact, shown: str) -> bool:
    return all(normalise(text) in normalise(shown) for text in fact.texts)


def _check(fact: Fact, where: str, workspace: Path, outputs: Outputs,
           found: Rehearsal) -> None:
    if fact.kind == "output" and fact.fetch is not None:
        command = str(fact.fetch.arguments.get("command"))
        printed = outputs.printed.get(command, [])
        if not any(_holds(fact, shown) for shown in printed):
            found.problems.append(f"{where}: {list(fact.texts)} not in any output of its "
                                  f"command so far ({(printed or [''])[-1][-300:]!r})")
        elif not _holds(fact, outputs.again(command, workspace)):
            found.unrederivable.append(where)
        return
    shown = _shown(fact, workspace)
    missing = [t for t in fact.texts if normalise(t) not in normalise(shown or "")]
    if shown is not None and missing:
        found.problems.append(f"{where}: {missing} not in what shows it now "
                              f"({shown[-300:]!r})")


def _shown(fact: Fact, workspace: Path) -> str | None:
    """The lines of the file a file fact names, as the file stands now (None: nothing to
    check)."""
    if fact.fetch is None or fact.kind != "file" or fact.fetch.name != "read":
        return None
    arguments = fact.fetch.arguments
    path = workspace / str(arguments["path"])
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    first = int(arguments.get("offset", 1))
    return "\n".join(lines[first - 1 : first - 1 + int(arguments.get("limit", len(lines)))])
