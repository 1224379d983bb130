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
    child.expect("you ›")
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert not list((tmp_path / "s").rglob("*.jsonl"))
