"""`agent-server chat` as a person uses it: in a terminal (a pseudo-terminal), against a
simulator that plays a scripted model, answering the permission questions by keyboard."""

from __future__ import annotations

import json
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer, ThreadedSimServer
from agent_server.sim.simulator import Simulator
from tests.console.tmux_screen import WAIT, process_report, wait_reading_keys

# A model that tries to hide part of a command from the person approving it: Rich markup,
# an escape sequence that clears the screen, a bidi override.
HOSTILE = "grep -o 'ERROR [a-z]*: [a-z ]*' logs/app.log \x1b[2J[bold]x[/bold] \u202e"
NOTE = "# Notes\n\n[red]ANSI[/red] \x1b[31m here\n"
SCENARIO = {
    "name": "terminal",
    "turns": [
        {
            "user": "check the log",
            "steps": [
                {"tools": [{"name": "bash", "arguments": {"command": HOSTILE}}]},
                {"text": "The log has **two** kinds of error:\n\n- `parse`\n- `io`\n"},
            ],
        },
        {
            "user": "write a note",
            "steps": [
                {"tools": [{"name": "write", "arguments": {"path": "notes/todo.md", "content": NOTE}}]},
                {"text": "I did not write it."},
            ],
        },
    ],
}
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedSimServer]:
    handle = SimServer(Simulator(scenario=parse_scenario(SCENARIO))).run_in_thread()
    yield handle
    handle.stop()


def spawn_chat(
    sim: ThreadedSimServer, tmp_path: Path, *extra: str, sigint_ignored: bool = False
) -> pexpect.spawn:
    """`sigint_ignored`: started as a script's background job starts it (SIGINT ignored)."""
    workspace = tmp_path / "ws"
    (workspace / "logs").mkdir(parents=True, exist_ok=True)
    (workspace / "logs" / "app.log").write_text("ERROR parse: bad row\nERROR io: disk full\n")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agent_server", "chat", "--provider", "sim", "--base-url", sim.base_url,
         "--sessions-dir", str(tmp_path / "sessions"), *extra],
        cwd=str(workspace),
        encoding="utf-8",
        codec_errors="replace",
        dimensions=(40, 160),
        timeout=120,
        env={"TERM": "xterm-256color", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored
        else None,
    )
    child.expect("you ›")
    return child


def interrupt(child: pexpect.spawn, expected: object) -> None:
    """Ctrl-C once the chat waits for a key, then `expected`. CPython's readline loop takes a
    SIGINT that arrives between printing the prompt and waiting for a key only with the next
    key; a person cannot press that fast, a test can: so it waits until the chat waits."""
    wait_reading_keys(child.pid)
    child.sendintr()
    if child.expect([expected, pexpect.TIMEOUT], timeout=WAIT) == 1:
        raise AssertionError(
            f"Ctrl-C never led to {expected!r}; the chat:\n{process_report(child.pid)}"
        )


class Recorder:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, data: str) -> None:
        self.parts.append(data)

    def flush(self) -> None:
        pass

    @property
    def text(self) -> str:
        return ANSI.sub("", "".join(self.parts))


def test_a_terminal_session_shows_what_runs_literally_and_quits_cleanly(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    child = spawn_chat(sim, tmp_path)
    out = Recorder()
    child.logfile_read = out

    # Ctrl-C at the idle prompt: a hint, no traceback, still running.
    interrupt(child, r"Ctrl-C again or Ctrl-D to quit")
    child.expect("you ›")

    child.sendline("check the log")
    child.expect("choose")
    question = out.text
    # The whole command, literally: the markup is not eaten, the escapes are named.
    assert "'ERROR [a-z]*: [a-z ]*' logs/app.log" in question
    assert "\\x1b[2J[bold]x[/bold] \\u202e" in question
    assert "\u202e" not in question and "\x1b[2J" not in "".join(out.parts)
    assert "Always allow `grep:*` (this session)" in question
    assert "Always reject bash (this session)" in question
    child.sendline("1")
    child.expect("you ›")
    answer = out.text
    # Markdown rendered; the prompt shown once (as typed), not echoed again.
    assert "The log has two kinds of error:" in answer
    assert "**two**" not in answer
    assert "• parse" in answer
    assert answer.count("check the log") == 1

    child.sendline("write a note")
    child.expect("choose")
    question = out.text.split("write a note", 1)[1]
    assert "new file notes/todo.md" in question
    assert "[red]ANSI[/red] \\x1b[31m here" in question
    options = re.findall(r"^\s+(\d) (.+?)\s*$", question, re.M)
    reject = next(number for number, name in options if name == "Reject")
    child.sendline(reject)
    child.expect("you ›")
    assert "not run: the user rejected write" in out.text
    assert not (tmp_path / "ws" / "notes" / "todo.md").exists()

    child.sendline("/usage")
    child.expect("you ›")
    usage = out.text.split("/usage", 1)[1]
    for row in ("model calls", "cache reads", "cache writes", "output", "cost", "last turn", "session"):
        assert row in usage, row

    interrupt(child, "Ctrl-C again")
    interrupt(child, pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "Traceback" not in out.text


def test_ctrl_d_quits_and_an_unused_session_is_not_kept(sim: ThreadedSimServer, tmp_path: Path) -> None:
    child = spawn_chat(sim, tmp_path)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert list((tmp_path / "sessions").rglob("*.jsonl")) == []


def test_ctrl_c_at_a_question_rejects_and_stops_the_turn(sim: ThreadedSimServer, tmp_path: Path) -> None:
    child = spawn_chat(sim, tmp_path)
    out = Recorder()
    child.logfile_read = out
    child.sendline("check the log")
    child.expect("choose")
    interrupt(child, "rejected; stopping the turn")
    child.expect("you ›")
    assert "turn ended: cancelled" in out.text
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "Traceback" not in out.text
    # The session had a prompt: it is kept.
    ledgers = list((tmp_path / "sessions").rglob("*.jsonl"))
    assert len(ledgers) == 1
    lines = [json.loads(line) for line in ledgers[0].read_text().splitlines()]
    assert any(line.get("message", {}).get("role") == "user" for line in lines)


def test_ctrl_c_during_compact_stops_it_and_the_chat_goes_on(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    # Keep nothing but the last turn, so that /compact has something to summarise.
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"compaction": {"keepRecentTokens": 1, "keepRecentTurns": 1}}))
    child = spawn_chat(sim, tmp_path, "--yes", "--config", str(config))
    out = Recorder()
    child.logfile_read = out
    for prompt in ("check the log", "write a note"):
        child.sendline(prompt)
        child.expect("you ›")
    sim.simulator.set_faults("slow@1:60")  # the summary request hangs until Ctrl-C stops it
    try:
        child.sendline("/compact")
        child.expect("⟳ compacting")  # the summary is asked for
        interrupt(child, "compaction cancelled: the history is unchanged")
    finally:
        sim.simulator.set_faults(None)
    child.expect("you ›")
    # Said once, as no failure: the user stopped it.
    assert out.text.count("compaction cancelled") == 1, out.text
    child.sendline("/usage")
    child.expect("you ›")
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "interrupted" not in out.text and "Traceback" not in out.text
    ledger = next((tmp_path / "sessions").rglob("*.jsonl")).read_text()
    assert '"type": "compaction"' not in ledger and '"type":"compaction"' not in ledger


def test_a_failing_compaction_hook_is_shown_once_and_shortened(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    """A before hook that exits with another code than 0 or 2: one warning in the chat (the
    server's log, which shares the terminal, does not repeat it), its stderr cut."""
    script = tmp_path / "notes.sh"
    script.write_text(
        "echo 'the notes disk is full' >&2\nhead -c 3000 /dev/zero | tr '\\0' x >&2\nexit 3\n"
    )
    hook = f"sh {script}"
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"compaction": {
        "keepRecentTokens": 1, "keepRecentTurns": 1, "hooks": {"before": [hook]},
    }}))
    child = spawn_chat(sim, tmp_path, "--yes", "--config", str(config))
    out = Recorder()
    child.logfile_read = out
    for prompt in ("check the log", "write a note"):
        child.sendline(prompt)
        child.expect("you ›")
    child.sendline("/compact")
    child.expect("compacted")
    child.expect("you ›")
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    text = " ".join(out.text.split())  # as one line, however Rich wrapped it
    assert "Compaction hook failed" in text and "exited with code 3" in text
    assert text.count("the notes disk is full") == 1, out.text
    # The stderr cut once (the hook's name may be cut too, where the temporary path is long).
    said = text.split("exited with code 3:", 1)[1]
    assert said.count("more characters]") == 1 and "x" * 400 not in text, out.text


def test_ctrl_c_at_the_prompt_works_when_the_chat_was_started_with_sigint_ignored(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    """A chat started from a script's background job inherits SIGINT ignored; Python keeps
    it so, and Ctrl-C at the prompt did nothing (while it did stop turns and questions)."""
    child = spawn_chat(sim, tmp_path, sigint_ignored=True)
    interrupt(child, "Ctrl-C again or Ctrl-D to quit")
    interrupt(child, pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_ctrl_c_clears_a_typed_line_and_typing_breaks_the_quitting_pair(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    child = spawn_chat(sim, tmp_path)
    out = Recorder()
    child.logfile_read = out
    interrupt(child, "Ctrl-C again or Ctrl-D to quit")
    child.send("half a prom")
    child.expect("half a prom")
    interrupt(child, "you ›")  # clears the line; the chat goes on
    interrupt(child, "Ctrl-C again or Ctrl-D to quit")  # a new pair begins
    child.sendline("/quit")  # the line is empty: nothing of "half a prom" is sent with it
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "unknown command" not in out.text and "Traceback" not in out.text
