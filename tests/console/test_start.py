"""`agent-server chat` starts without loading what its first screen does not need: the first
prompt line comes from a module that loads no agent, no provider SDK and no LSP machinery,
and the chat itself never loads lsprotocol (it once cost a second of every start). The
figures are in BENCHMARKS.md (benchmarks/chat_startup.py); these tests check the cause, not
the time."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("lsprotocol", "pygls", "anthropic", "openai", "agent_server.agent.session",
         "agent_server.console.render", "markdown_it")


def loaded_after(statement: str) -> set[str]:
    code = f"{statement}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(run.stdout.splitlines()[-1]))


def test_the_first_screen_loads_no_agent_sdk_or_lsp() -> None:
    modules = loaded_after("import agent_server.cli, agent_server.console.chat_start")
    assert [name for name in HEAVY if name in modules] == []


def test_the_chat_loads_no_lsp_machinery() -> None:
    modules = loaded_after("import agent_server.console.chat")
    assert "agent_server.agent.session" in modules  # it is the chat
    assert not {"lsprotocol", "lsprotocol.types", "pygls"} & modules


def test_quit_as_the_first_line_leaves_without_a_session(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pexpect

    child = pexpect.spawn(
        sys.executable,
        ["-m", "agent_server", "chat", "--provider", "sim", "--sessions-dir", str(tmp_path / "s")],
        cwd=str(tmp_path), encoding="utf-8", timeout=120, dimensions=(40, 80),
        env={"TERM": "xterm-256color", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    child.expect("the built-in simulator, not a model")  # its filler said to be on purpose
    child.expect("you ›")
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert not list((tmp_path / "s").rglob("*.jsonl"))


class Reader:
    """Types the lines given, noting what was put back on the input line before each."""

    def __init__(self, *lines: str | None) -> None:
        self.lines = list(lines)
        self.prefill = ""
        self.prefilled: list[str] = []

    def read(self) -> str | None:
        self.prefilled.append(self.prefill)
        self.prefill = ""
        return self.lines.pop(0)


class Loading:
    """An agent still loading when Ctrl-C is pressed the first `interrupts` times."""

    def __init__(self, interrupts: int) -> None:
        self.interrupts = interrupts

    def join(self) -> None:
        if self.interrupts:
            self.interrupts -= 1
            raise KeyboardInterrupt


def test_ctrl_c_while_the_agent_loads_sends_nothing_and_puts_the_prompt_back() -> None:
    import io

    from rich.console import Console

    from agent_server.console.chat_start import first_line

    out = io.StringIO()
    reader = Reader("explain the build", "explain the build, briefly")
    line = first_line(Console(file=out, width=200), reader, Loading(1))  # type: ignore[arg-type]
    assert line == "explain the build, briefly"  # the chat went on; the edited prompt is sent
    assert reader.prefilled == ["", "explain the build"]
    assert "stopped while the agent was loading: nothing was sent" in out.getvalue()
    assert first_line(Console(file=io.StringIO()), Reader("/quit"), Loading(0)) is None  # type: ignore[arg-type]
