"""Issue 44, item 1, tried as a hostile model would over real stdio: the user answered the
first `git grep` with "always allow `git grep:*`"; the next commands start with `git grep`
(or an approved prefix) and carry an option that runs a program or writes elsewhere.

Before: each ran, unasked and outside the sandbox (`permissions.mode: allowReads`, where an
approved command is not sandboxed), and wrote its marker. After: each is asked about again,
the question saying why; rejected, nothing runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator

from .raw import RawServer, request


def attacks(marker: Path) -> list[str]:
    return [
        f"git grep --open-files-in-pager='touch {marker}-pager' TODO",
        f"git grep -O'touch {marker}-O' TODO",
        f"git diff --output={marker}-diff",
        f"git log --output={marker}-log",
    ]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A repository with one file holding a TODO."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    (folder / "a.py").write_text("# TODO: nothing\n")
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    subprocess.run(["git", "add", "a.py"], cwd=folder, check=True)
    return folder


def markers(tmp_path: Path) -> list[Path]:
    return list(tmp_path.glob("ran*"))


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
async def test_an_approved_prefix_does_not_cover_options_that_run_or_write_elsewhere(
    tmp_path: Path, workspace: Path
) -> None:
    marker = tmp_path / "ran"
    commands = ["git grep -n TODO", *attacks(marker)]
    scenario = {"name": "prefix", "turns": [{"user": "Look for the TODOs.", "steps": [
        *({"tools": [{"name": "bash", "arguments": {"command": c}}]} for c in commands),
        {"text": "Done."},
    ]}]}
    async with SimServer(Simulator(scenario=parse_scenario(scenario))) as sim:
        server = await RawServer.start({**os.environ, "HOME": str(tmp_path)})
        try:
            await server.initialize(
                workspace,
                {"provider": "sim", "baseUrl": sim.base_url,
                 "sessionsDir": str(tmp_path / "sessions")},
                request_permission=True,
            )
            session_id = await server.new_session(workspace)
            await server.send_message(request(
                "turn", "agent/turn", {"sessionId": session_id, "prompt": "Look for the TODOs."}
            ))
            asked: list[dict[str, Any]] = []
            for n in range(len(commands)):
                question = await server.wait_for(
                    lambda m, n=n: m.get("method") == "agent/requestPermission"
                    and m["id"] not in {q["id"] for q in asked},
                    f"question {n + 1}",
                )
                asked.append(question)
                options = [o["optionId"] for o in question["params"]["options"]]
                # The first: "always allow `git grep:*`"; every later one is rejected.
                choice = "allow_prefix:git grep" if n == 0 else "reject_once"
                assert choice in options, options
                await server.send_message(
                    {"jsonrpc": "2.0", "id": question["id"],
                     "result": {"outcome": {"selected": choice}}}
                )
            await server.answer("turn")
        finally:
            await server.close()
    titles = [q["params"]["toolCall"]["title"] for q in asked]
    for title in titles[1:3]:
        assert "not covered by `git grep:*`" in title, titles
    assert not markers(tmp_path), "a command ran that the user was not asked about"
