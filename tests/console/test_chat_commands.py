"""`agent-server chat`'s commands as a person types them (in a pseudo-terminal): /help,
unknown commands, /mode, /model, /rewind with its choices, `@path` (Tab-completed) and a
pasted image path."""

from __future__ import annotations

import base64
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from agent_server.agent.tools.sandbox import sandbox_status
from agent_server.sim.server import SimServer, ThreadedSimServer
from agent_server.sim.simulator import Simulator
from tests.console.test_chat import Recorder
from tests.lsp.test_peer_methods import WRITER

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|[\x07\x08]")
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


@pytest.fixture(scope="module")
def simulator() -> Iterator[tuple[Simulator, ThreadedSimServer]]:
    sim = Simulator(scenario=WRITER)  # a write, then an edit and a command
    handle = SimServer(sim).run_in_thread()
    yield sim, handle
    handle.stop()


class Screen(Recorder):
    """What the terminal showed, from a mark on (line editing's bells and backspaces too)."""

    def since(self, mark: int) -> str:
        return ANSI.sub("", "".join(self.parts[mark:]))

    @property
    def mark(self) -> int:
        return len(self.parts)


def test_commands_are_answered_and_rewind_restores_files_and_gives_the_prompt_back(
    simulator: tuple[Simulator, ThreadedSimServer], tmp_path: Path
) -> None:
    sim, handle = simulator
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Demo\n\nA demo project.\n")
    (workspace / "shot.png").write_bytes(PNG)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agent_server", "chat", "--provider", "sim", "--base-url", handle.base_url,
         "--sessions-dir", str(tmp_path / "sessions"), "--yes"],
        cwd=str(workspace),
        encoding="utf-8",
        codec_errors="replace",
        dimensions=(50, 200),
        timeout=120,
        env={"TERM": "xterm-256color", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    screen = Screen()
    child.logfile_read = screen
    child.expect("you ›")

    def command(line: str) -> str:
        mark = screen.mark
        child.sendline(line)
        child.expect("you ›")
        return screen.since(mark)

    shown = command("/help")
    for name in ("/model", "/mode", "/rewind", "/compact", "/usage", "/sessions", "/quit", "@path"):
        assert name in shown, name
    requests = len(sim.records)
    assert "unknown command /frobnicate: nothing was sent" in command("/frobnicate now")
    assert len(sim.records) == requests  # not sent to the model
    # Words after a command that takes none are neither dropped unsaid nor sent.
    refused = command("/new fix the parser")
    assert "/new takes nothing after it: nothing was done and nothing sent" in refused
    assert "continues it" not in refused and len(sim.records) == requests
    assert "takes nothing after it" in command("/quit now")  # the chat goes on: a prompt
    assert "mode: allowReads" in command("/mode")
    # tools.sandbox "auto": sandboxed in every mode, or told why not on this machine
    sandboxed = "commands: sandboxed" if sandbox_status().available else "commands: not sandboxed: "
    assert sandboxed in command("/mode")
    switched_all = command("/mode all")
    assert "mode: allowAll" in switched_all
    assert sandboxed in switched_all
    assert "unknown mode" in command("/mode yolo")
    models = command("/model")
    assert "sim-small" in models and "sim-large" in models and "200k" in models
    switched = command("/model sim-large")
    assert "model: sim-large" in switched and "cache" in switched

    # @path with Tab completion, and an image by its path.
    mark = screen.mark
    child.send("Explain @READ\t")
    child.expect("README.md")
    child.send("\r")
    child.expect("you ›")
    assert "attached README.md (3 lines)" in screen.since(mark)
    pasted = command(f"What is in {workspace / 'shot.png'}?")
    assert "attached image 1:" in pasted and "image/png" in pasted
    image_request = sim.records[-1].request
    assert "[image 1: shot.png]" in str(image_request["messages"])

    command("write the plan")
    command("extend the plan")
    assert (workspace / "plan.md").read_text() == "one\ntwo\n"

    mark = screen.mark
    child.sendline("/rewind")
    child.expect("before which prompt")
    listing = screen.since(mark)
    numbers = dict(re.findall(r"^\s+(\d) (.+?)\s*$", listing, re.M))
    target = next(n for n, text in numbers.items() if text == "extend the plan")
    child.sendline(target)
    child.expect("what goes back")
    plan = screen.since(mark)
    assert "plan.md: restore" in plan
    assert "ran: touch built.txt" in plan and "built.txt (changed by a command" in plan
    child.sendline("1")  # conversation and files
    child.expect("you ›")
    assert "restored plan.md" in screen.since(mark)
    assert (workspace / "plan.md").read_text() == "one\n"
    # The prompt is back in the input line, to edit or send as it is.
    child.expect("extend the plan")
    child.send("\r")
    child.expect("you ›")
    assert (workspace / "plan.md").read_text() == "one\ntwo\n"

    child.sendline("/quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "Traceback" not in screen.since(0)


def test_remember_pins_forget_removes_and_the_model_is_told(
    simulator: tuple[Simulator, ThreadedSimServer], tmp_path: Path
) -> None:
    sim, handle = simulator
    workspace = tmp_path / "ws"
    workspace.mkdir()
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agent_server", "chat", "--provider", "sim", "--base-url", handle.base_url,
         "--sessions-dir", str(tmp_path / "sessions"), "--yes"],
        cwd=str(workspace), encoding="utf-8", codec_errors="replace", dimensions=(50, 200),
        timeout=120, env={"TERM": "xterm-256color", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    screen = Screen()
    child.logfile_read = screen
    child.expect("you ›")

    def command(line: str) -> str:
        mark = screen.mark
        child.sendline(line)
        child.expect("you ›")
        return screen.since(mark)

    assert "nothing pinned" in command("/pins")
    pinned = command("/remember never edit CHANGELOG")
    match = re.search(r"pinned rule ([0-9a-f]{8}): never edit CHANGELOG", pinned)
    assert match, pinned
    assert "pinned fact" in command("/remember fact: the port is 8123")
    listed = command("/pins")
    assert "never edit CHANGELOG" in listed and "fact, by the user: the port is 8123" in listed
    assert "removed rule" in command(f"/forget {match.group(1)}")
    assert "is not a pin in force" in command("/forget nope")
    assert "/forget takes a pin's id" in command("/forget")
    assert "never edit CHANGELOG" not in command("/pins")
    command("write the plan")
    told = str(sim.records[-2].request["messages"])  # the turn's first request
    assert "The user pinned a fact for the rest of this session: the port is 8123" in told
    assert "removed the pinned rule" in told
    child.sendline("/quit")
    child.expect(pexpect.EOF)
