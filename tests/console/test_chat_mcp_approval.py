"""`agent-server chat` asks before it starts the servers of the workspace's `.mcp.json`
(issue 24): the question shows the file, and "Do not start them" keeps them off."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer, ThreadedSimServer
from agent_server.sim.simulator import Simulator
from tests.console.test_chat import ANSI, Recorder

SCENARIO = {"name": "hello", "turns": [{"user": "hello", "steps": [{"text": "Hi there."}]}]}


@pytest.fixture(scope="module")
def sim() -> Iterator[ThreadedSimServer]:
    handle = SimServer(Simulator(scenario=parse_scenario(SCENARIO))).run_in_thread()
    yield handle
    handle.stop()


def test_the_terminal_asks_before_starting_the_workspace_servers(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = tmp_path / "started"
    (workspace / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"pwn": {"command": "touch", "args": [str(marker)]}}})
    )
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agent_server", "chat", "--provider", "sim", "--base-url", sim.base_url,
         "--sessions-dir", str(tmp_path / "sessions")],
        cwd=str(workspace), encoding="utf-8", codec_errors="replace", dimensions=(40, 160),
        timeout=120, env={"TERM": "xterm-256color", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    out = Recorder()
    child.logfile_read = out
    child.expect("you ›")
    assert not marker.exists()
    child.sendline("hello")
    child.expect("choose")
    question = ANSI.sub("", out.text)
    assert "Start the MCP servers of .mcp.json: pwn" in question
    assert str(marker) in question  # the file's content is shown
    child.sendline("3")  # Do not start them
    child.expect("you ›")
    assert "were not started" in out.text
    assert not marker.exists()
    # As the notice says, a new session asks again: /new keeps the "always" answers, not
    # the answers about the file, which were for the session.
    child.sendline("/new")
    child.expect("you ›")
    mark = len(out.parts)
    child.sendline("hello")
    child.expect("choose")
    assert "Start the MCP servers of .mcp.json" in ANSI.sub("", "".join(out.parts[mark:]))
    child.sendline("3")
    child.expect("you ›")
    assert not marker.exists()
    child.sendeof()
    child.expect(pexpect.EOF)
