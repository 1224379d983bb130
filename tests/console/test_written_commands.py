"""Commands the user writes, in `agent-server chat` as a person types them (a pseudo-terminal):
listed by /help, completed by Tab, and sent as their prompt; a word that is no command still
is answered."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect

from agent_server.agent.prompt_commands import WORKSPACE_FOLDER
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.console.test_chat_commands import Screen


def chat(home: Path, workspace: Path, base_url: str) -> tuple[pexpect.spawn, Screen]:
    """`agent-server chat` on the simulator at `base_url`, at its first prompt (`home`: HOME,
    so the user's folders are below it)."""
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agent_server", "chat", "--provider", "sim", "--base-url", base_url,
         "--sessions-dir", str(home / "sessions"), "--yes"],
        cwd=str(workspace), encoding="utf-8", codec_errors="replace", dimensions=(50, 200),
        timeout=120, env={"TERM": "xterm-256color", "PATH": "/usr/bin:/bin", "HOME": str(home)},
    )
    screen = Screen()
    child.logfile_read = screen
    child.expect("you ›")
    return child, screen


def test_a_written_command_is_listed_completed_and_sent(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / WORKSPACE_FOLDER).mkdir(parents=True)
    (workspace / WORKSPACE_FOLDER / "hello.md").write_text(
        "---\ndescription: Greet someone\nargument-hint: <name>\n---\nSay hello to $1.\n")
    user = tmp_path / ".config" / "agent-server" / "commands"  # HOME below: the user's folder
    user.mkdir(parents=True)
    (user / "hello.md").write_text("The user's greeting for $1.\n")
    sim = Simulator()
    handle = SimServer(sim).run_in_thread()
    try:
        child, screen = chat(tmp_path, workspace, handle.base_url)
        mark = screen.mark
        child.sendline("/help")
        child.expect("you ›")
        assert "/hello" in screen.since(mark) and "(user's command)" in screen.since(mark)
        child.send("/hell\t")  # "/hel" is also /help: a bell
        child.expect("/hello")
        child.send(" Ada\r")
        child.expect("you ›")
        assert "The user's greeting for Ada." in str(sim.records[-1].request["messages"])
        requests = len(sim.records)
        child.sendline("/nosuch x")
        child.expect("unknown command /nosuch")
        child.expect("you ›")
        assert len(sim.records) == requests
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        handle.stop()


def test_fork_goes_on_in_a_copy_and_keeps_the_session(tmp_path: Path) -> None:
    """`/fork`: the chat goes on in a copy of the session (the model gets the conversation so
    far); the session left is kept as it was, and the chat says how to go back to it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sim = Simulator()
    handle = SimServer(sim).run_in_thread()
    try:
        child, screen = chat(tmp_path, workspace, handle.base_url)
        child.sendline("first question")
        child.expect("you ›")
        [source] = list((tmp_path / "sessions").rglob("*.jsonl"))
        mark = screen.mark
        child.sendline("/fork")
        child.expect("you ›")
        assert source.stem in screen.since(mark)  # how to go on with the one left
        child.sendline("second question")
        child.expect("you ›")
        sent = str(sim.records[-1].request["messages"])
        assert "first question" in sent and "second question" in sent
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        handle.stop()
    ledgers = {p.stem: p.read_text() for p in (tmp_path / "sessions").rglob("*.jsonl")}
    assert len(ledgers) == 2
    assert "second question" not in ledgers[source.stem]
