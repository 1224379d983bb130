"""Every editor snippet in docs/acp.md starts an agent that answers `initialize`.

The command line is read from the snippet itself (JSON for Zed and JetBrains, the Lua table
for CodeCompanion, the keyword arguments for agent-shell); `agent-server` is this checkout's.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
from pathlib import Path

from acp import PROTOCOL_VERSION, spawn_agent_process

from tests.acp.conftest import SHUTDOWN_WAIT, RecordingClient

DOC = Path(__file__).resolve().parents[2] / "docs" / "acp.md"


def snippets() -> dict[str, list[str]]:
    """Editor -> the command line its snippet starts."""
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"^### (.+?)\n.*?```(\w+)\n(.*?)```", text, flags=re.S | re.M)
    commands: dict[str, list[str]] = {}
    for editor, language, body in blocks:
        if language == "json":
            servers = json.loads(body)["agent_servers"]
            (entry,) = servers.values()
            commands[editor] = [entry["command"], *entry["args"]]
        elif language == "lua":
            match = re.search(r"default = \{([^}]*)\}", body)
            assert match, f"{editor}: no command in the snippet"
            commands[editor] = re.findall(r'"([^"]+)"', match.group(1))
        elif language == "elisp":
            command = re.search(r':command "([^"]+)"', body)
            params = re.search(r":command-params '\(([^)]*)\)", body)
            assert command and params, f"{editor}: no command in the snippet"
            commands[editor] = [command.group(1), *re.findall(r'"([^"]+)"', params.group(1))]
    return commands


def test_the_doc_has_a_snippet_per_editor() -> None:
    assert set(snippets()) == {
        "Zed",
        "JetBrains IDEs",
        "Neovim (CodeCompanion)",
        "Emacs (agent-shell)",
    }
    assert all(command[1:] == ["acp"] for command in snippets().values())


async def test_each_snippet_starts_an_agent_that_answers_initialize(tmp_path: Path) -> None:
    installed = shutil.which("agent-server", path=str(Path(sys.executable).parent))
    assert installed, "agent-server is installed next to this Python"
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}

    async def initialize(command: list[str]) -> str:
        program = installed if command[0].endswith("agent-server") else command[0]
        with (tmp_path / "stderr.log").open("ab") as stderr:
            async with spawn_agent_process(
                RecordingClient(), program, *command[1:], env=env,
                transport_kwargs={"stderr": stderr.fileno(), "shutdown_timeout": SHUTDOWN_WAIT},
            ) as (conn, _process):
                answer = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert answer.agent_info is not None
        return answer.agent_info.name

    names = await asyncio.gather(*(initialize(c) for c in snippets().values()))
    assert names == ["agent-server"] * 4
