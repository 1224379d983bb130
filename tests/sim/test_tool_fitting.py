"""Scenario calls fitted to the tools a real client declares (schemas as pi 0.73, Claude Code
2.1 and Codex 0.171 send them, trimmed to their properties), and the shell commands that stand
in when a client has no tool for a capability: run here, for real, on the sample workspace."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_server.sim.tool_fitting import fit_call, shell_command, working_directory
from agent_server.sim.transcript import TextPart, ToolSpec, Transcript, TranscriptMessage
from agent_server.sim.workspace import write_sample_workspace


def _spec(name: str, properties: dict[str, Any], required: tuple[str, ...] = ()) -> ToolSpec:
    return ToolSpec(name, {"type": "object", "properties": properties,
                           "required": list(required)})


def _s(description: str = "") -> dict[str, Any]:
    return {"type": "string", "description": description}


CLAUDE_CODE = (
    _spec("Bash", {"command": _s("The command to execute"), "timeout": {"type": "number"},
                   "description": _s()}, ("command",)),
    _spec("Edit", {"file_path": _s("The absolute path to the file to modify"),
                   "old_string": _s("The text to replace"),
                   "new_string": _s("The text to replace it with"),
                   "replace_all": {"type": "boolean"}},
          ("file_path", "old_string", "new_string")),
    _spec("Glob", {"pattern": _s("The glob pattern to match files against"),
                   "path": _s("The directory to search in.")}, ("pattern",)),
    _spec("Grep", {"pattern": _s(), "path": _s("File or directory to search in"),
                   "glob": _s(), "output_mode": {"type": "string", "enum": [
                       "content", "files_with_matches", "count"]},
                   "-n": {"type": "boolean"}}, ("pattern",)),
    _spec("Read", {"file_path": _s("The absolute path to the file to read"),
                   "offset": {"type": "integer"}, "limit": {"type": "integer"}}, ("file_path",)),
    _spec("Write", {"file_path": _s("The absolute path to the file to write (must be absolute, "
                                    "not relative)"), "content": _s()},
          ("file_path", "content")),
)
PI = (
    _spec("read", {"path": _s("Path to the file to read (relative or absolute)"),
                   "offset": {"type": "number"}, "limit": {"type": "number"}}, ("path",)),
    _spec("bash", {"command": _s("Bash command to execute"), "timeout": {"type": "number"}},
          ("command",)),
    _spec("edit", {"path": _s("Path to the file to edit (relative or absolute)"),
                   "edits": {"type": "array", "items": {"type": "object", "properties": {
                       "oldText": _s(), "newText": _s()}}}}, ("path", "edits")),
    _spec("write", {"path": _s("Path to the file to write (relative or absolute)"),
                    "content": _s()}, ("path", "content")),
)
CODEX = (
    _spec("exec_command", {"cmd": _s("Shell command to execute."), "workdir": _s(),
                           "yield_time_ms": {"type": "number"}}, ("cmd",)),
    _spec("write_stdin", {"session_id": {"type": "number"}, "chars": _s()}, ("session_id",)),
    _spec("view_image", {"path": _s("Local filesystem path to an image file.")}, ("path",)),
)
CWD = "/work/space"


@pytest.mark.parametrize(
    ("tools", "name", "arguments", "expected"),
    [
        # Claude Code: its own names, absolute paths, grep in content mode.
        (CLAUDE_CODE, "read", {"path": "src/app.py", "offset": 10, "limit": 5},
         ("Read", {"file_path": "/work/space/src/app.py", "offset": 10, "limit": 5})),
        (CLAUDE_CODE, "grep", {"pattern": "ERROR", "path": "logs/app.log"},
         ("Grep", {"pattern": "ERROR", "path": "logs/app.log", "output_mode": "content",
                   "-n": True})),
        (CLAUDE_CODE, "find", {"pattern": "*.py"}, ("Glob", {"pattern": "**/*.py"})),
        (CLAUDE_CODE, "edit", {"path": "notes.md", "oldText": "a", "newText": "b"},
         ("Edit", {"file_path": "/work/space/notes.md", "old_string": "a", "new_string": "b"})),
        (CLAUDE_CODE, "write", {"path": "notes/f.md", "content": "x"},
         ("Write", {"file_path": "/work/space/notes/f.md", "content": "x"})),
        (CLAUDE_CODE, "ls", {"path": "."}, ("Bash", {"command": "ls -la ."})),
        (CLAUDE_CODE, "bash", {"command": "pytest -q", "timeout": 60},
         ("Bash", {"command": "pytest -q", "timeout": 60})),
        # pi: relative paths as written, an edit as a list of edits, a shell for the rest.
        (PI, "read", {"path": "README.md"}, ("read", {"path": "README.md"})),
        (PI, "edit", {"path": "n.md", "oldText": "a", "newText": "b"},
         ("edit", {"path": "n.md", "edits": [{"oldText": "a", "newText": "b"}]})),
        (PI, "grep", {"pattern": "^def ", "path": "src", "glob": "*.py"},
         ("bash", {"command": "grep -rnE --include='*.py' '^def ' src"})),
        # Codex: only a shell.
        (CODEX, "read", {"path": "data/stock.csv", "limit": 60},
         ("exec_command", {"cmd": "cat -n data/stock.csv | sed -n '1,60p'"})),
        (CODEX, "find", {"pattern": "*.py"},
         ("exec_command", {"cmd": "find . -type f -name '*.py'"})),
        # A declared tool with the scenario's own name gets the arguments as written.
        ((_spec("read", {"path": _s()}),), "read", {"path": "a", "extra": 1},
         ("read", {"path": "a", "extra": 1})),
        # A patch tool gets the edit as a patch.
        ((_spec("apply_patch", {"input": _s()}),), "edit",
         {"path": "n.md", "oldText": "a", "newText": "b"},
         ("apply_patch", {"input": "*** Begin Patch\n*** Update File: n.md\n@@\n-a\n+b\n"
                                   "*** End Patch"})),
    ],
)
def test_calls_fit_the_declared_tools(
    tools: tuple[ToolSpec, ...], name: str, arguments: dict[str, Any],
    expected: tuple[str, dict[str, Any]],
) -> None:
    assert fit_call(name, arguments, tools, CWD) == expected


def test_no_tool_for_the_capability_and_no_shell_leaves_the_call_out() -> None:
    tools = (_spec("view_image", {"path": _s()}),)
    assert fit_call("read", {"path": "a"}, tools, CWD) is None
    assert fit_call("bash", {"command": "ls"}, tools, CWD) is None
    assert fit_call("read", {"path": "a"}, (), CWD) is None
    assert fit_call("deploy", {}, CLAUDE_CODE, CWD) is None


def test_a_shell_taking_an_argv_gets_one() -> None:
    tools = (_spec("shell", {"command": {"type": "array", "items": {"type": "string"}}}),)
    assert fit_call("ls", {"path": "src"}, tools, CWD) == (
        "shell", {"command": ["bash", "-lc", "ls -la src"]}
    )


@pytest.mark.parametrize(
    "text",
    [
        "# Environment\n - Primary working directory: /work/space\n - Is a git repository: no",
        "<environment_context>\n  <cwd>/work/space</cwd>\n  <shell>bash</shell>",
        "Current date: 2026-12-03\nCurrent working directory: /work/space",
    ],
)
def test_the_working_directory_is_read_from_what_the_client_says(text: str) -> None:
    transcript = Transcript(system="", tools=(), messages=(
        TranscriptMessage("user", (TextPart(text), TextPart("hello"))),
    ))
    assert working_directory(transcript) == CWD
    assert working_directory(Transcript(system=text, tools=(), messages=())) == CWD
    assert working_directory(Transcript(system="nothing here", tools=(), messages=())) is None


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sample")
    write_sample_workspace(root)
    return root


def _run(command: str, cwd: Path) -> str:
    done = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True,
                          timeout=30, check=True)
    return done.stdout


def test_the_shell_stand_ins_do_what_the_tools_would(workspace: Path) -> None:
    listing = _run(shell_command("list", {"path": "."}), workspace)
    assert "README.md" in listing and "src" in listing
    lines = _run(shell_command("read", {"path": "README.md", "offset": 2, "limit": 3}),
                 workspace).splitlines()
    readme = (workspace / "README.md").read_text().splitlines()
    assert [line.split("\t", 1)[1] for line in lines] == readme[1:4]
    found = _run(shell_command("find", {"pattern": "*.py"}), workspace)
    assert "./src/inventory/models.py" in found.splitlines()
    matches = _run(shell_command("search", {"pattern": "^class |^def ",
                                            "path": "src/inventory/models.py"}), workspace)
    assert matches and all(":" in line for line in matches.splitlines())
    content = "# Findings\n\nRow 214 has a bad quantity: '12a'.\n"
    _run(shell_command("write", {"path": "notes/findings.md", "content": content}), workspace)
    assert (workspace / "notes" / "findings.md").read_text() == content
    _run(shell_command("edit", {"path": "notes/findings.md", "oldText": "'12a'",
                                "newText": json.dumps("12a, \"quoted\" $HOME")}), workspace)
    assert (workspace / "notes" / "findings.md").read_text() == (
        "# Findings\n\nRow 214 has a bad quantity: \"12a, \\\"quoted\\\" $HOME\".\n"
    )
