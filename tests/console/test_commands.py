"""The command line as a user runs it: real subprocesses, the simulator, a sample workspace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pexpect

from agent_server.sim.scenario import default_scenario, parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from agent_server.sim.workspace import write_sample_workspace
from tests import forked_agent

# A command whose output would retitle the terminal, clear it and reverse what follows.
BANNER = r"printf '\033]0;pwned\007\033[2J\342\200\256done\n'"
HOSTILE_OUTPUT = {
    "name": "hostile output",
    "turns": [
        {
            "user": "print the banner",
            "steps": [
                {"tools": [{"name": "bash", "arguments": {"command": BANNER}}]},
                # The command's output reaches the model (and the ledger) as text, its escape
                # sequences out (tools/bash.py); the model's answer is recorded as it came.
                {"text": "Printed: \x1b]0;pwned\x07\x1b[2J\u202edone"},
            ],
        }
    ],
}


def agent_server(
    *args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`stdin`: text piped in (else /dev/null: a one-shot chat reads a piped stdin). The
    agent is forked from one that has imported it (tests/forked_agent.py)."""
    return subprocess.run(
        forked_agent.command(*args),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
        **({"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}),
    )


def test_demo_runs_to_the_end_and_shows_a_compaction(tmp_path: Path) -> None:
    log = tmp_path / "sim.jsonl"
    done = agent_server("demo", "--log", str(log), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "compacted: " in out
    assert "past the compaction point" in out or "near the compaction point" in out
    assert "saved by caching" in out
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert sum(1 for r in records if r.get("source") == "summary") >= 1
    assert len(records) >= 60


def test_chat_one_shot_then_sessions_list_show_export(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    write_sample_workspace(workspace)
    sessions = str(tmp_path / "sessions")
    prompt = default_scenario().prompts[0]
    chat = agent_server("chat", "--provider", "sim", "--sessions-dir", sessions, "--yes", prompt, cwd=workspace)
    assert chat.returncode == 0, chat.stderr
    assert "stockroom" in chat.stdout and "context" in chat.stdout

    listed = agent_server("sessions", "list", "--sessions-dir", sessions, cwd=workspace)
    assert listed.returncode == 0
    ledgers = list(Path(sessions).rglob("*.jsonl"))
    assert len(ledgers) == 1
    session_id = ledgers[0].stem
    assert session_id[:8] in listed.stdout

    shown = agent_server("sessions", "show", session_id, "--sessions-dir", sessions, cwd=workspace)
    assert shown.returncode == 0 and "you ›" in shown.stdout

    raw = agent_server("sessions", "export", session_id, "--format", "jsonl", "--sessions-dir", sessions, cwd=workspace)
    assert raw.stdout == ledgers[0].read_text()
    markdown = agent_server("sessions", "export", session_id, "--sessions-dir", sessions, cwd=workspace)
    assert markdown.stdout.startswith("## You") and prompt in markdown.stdout
    # The second step reads README.md and lists src/inventory in parallel: each call is
    # followed by its own output, labelled, before the next call.
    read = markdown.stdout.index("**Tool call: Read README.md** (`read`)")
    ls = markdown.stdout.index("**Tool call: List src/inventory** (`ls`)")
    between = markdown.stdout[read:ls]
    assert "Arguments:" in between and "Output:" in between and "stockroom" in between.lower()
    assert "models.py" in markdown.stdout[ls:]

    missing = agent_server("sessions", "show", "nope", "--sessions-dir", sessions, cwd=workspace)
    assert missing.returncode == 1 and "nope" in missing.stderr


def test_chat_without_a_key_says_which_variable_to_set(tmp_path: Path) -> None:
    env = {k: v for k, v in __import__("os").environ.items() if not k.endswith("_API_KEY")}
    done = agent_server(
        "chat", "--provider", "anthropic", "--sessions-dir", str(tmp_path / "s"), "hello",
        cwd=tmp_path, env=env,
    )
    assert done.returncode == 1
    assert "ANTHROPIC_API_KEY" in done.stdout and '"provider": "sim"' in done.stdout


def test_an_unrecoverable_overflow_is_printed_once_and_names_the_model(tmp_path: Path) -> None:
    huge = "lorem ipsum dolor sit amet " * 8000  # ~40k tokens: larger than sim-small's window
    done = agent_server(
        "chat", "--provider", "sim", "--sessions-dir", str(tmp_path / "s"), *huge.split(), cwd=tmp_path
    )  # as words: one argument may not be longer than 128 KiB
    assert done.returncode == 1
    out = done.stdout
    # Too large for the window even alone: refused before sending, said once, naming the model.
    assert out.count("Your message is too large to send") == 1, out[-3000:]
    assert "sim-small" in out
    # The simulator's stand-in key is not a secret: nothing is scrubbed to "[redacted]".
    assert "[redacted]" not in out + done.stderr


def test_sessions_are_told_apart_and_found_by_a_prefix_of_their_whole_id(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sessions = str(tmp_path / "sessions")
    prompt = "Explain the build"
    ids = []
    for _ in range(2):
        chat = agent_server("chat", "--provider", "sim", "--sessions-dir", sessions, "--yes", prompt, cwd=workspace)
        assert chat.returncode == 0, chat.stderr
    ids = sorted(p.stem for p in Path(sessions).rglob("*.jsonl"))
    assert len(ids) == 2
    env = dict(__import__("os").environ, COLUMNS="80")
    listed = agent_server("sessions", "list", "--sessions-dir", sessions, cwd=workspace, env=env)
    assert listed.returncode == 0
    for session_id in ids:
        assert session_id in listed.stdout  # the whole id, even at 80 columns
    assert "prompts" in listed.stdout and "entries" not in listed.stdout

    # A unique prefix works; an ambiguous or unknown one says what to do.
    common = 0
    while ids[0][common] == ids[1][common]:
        common += 1
    shown = agent_server("sessions", "show", ids[0][: common + 1], "--sessions-dir", sessions, cwd=workspace)
    assert shown.returncode == 0 and prompt in shown.stdout
    if common:
        ambiguous = agent_server("sessions", "show", ids[0][:common], "--sessions-dir", sessions, cwd=workspace)
        assert ambiguous.returncode == 1 and ids[0] in ambiguous.stderr and ids[1] in ambiguous.stderr
    unknown = agent_server("sessions", "show", "zz", "--sessions-dir", sessions, cwd=workspace)
    assert unknown.returncode == 1 and "sessions list" in unknown.stderr
    again = agent_server(
        "chat", "--provider", "sim", "--sessions-dir", sessions, "--session", ids[1][: common + 1],
        "--yes", prompt, cwd=workspace,
    )
    assert again.returncode == 0 and f"session {ids[1]}" in again.stdout


def test_remember_pins_a_rule_unless_it_says_fact() -> None:
    from agent_server.agent.memory import pin_argument

    assert pin_argument("never edit CHANGELOG") == ("rule", "never edit CHANGELOG")
    assert pin_argument("fact: the port is 8123") == ("fact", "the port is 8123")
    assert pin_argument("Rule:  keep the API ") == ("rule", "keep the API")
    assert pin_argument("note: this stays") == ("rule", "note: this stays")


def hostile_session(tmp_path: Path) -> tuple[Path, str]:
    """A workspace with one session whose command printed escape sequences, and whose model
    answered with them: (workspace, id)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sessions = str(tmp_path / "sessions")
    handle = SimServer(Simulator(scenario=parse_scenario(HOSTILE_OUTPUT))).run_in_thread()
    try:
        chat = agent_server(
            "chat", "--provider", "sim", "--base-url", handle.base_url, "--sessions-dir",
            sessions, "--yes", "print the banner", cwd=workspace,
        )
    finally:
        handle.stop()
    assert chat.returncode == 0, chat.stdout + chat.stderr
    return workspace, next(Path(sessions).rglob("*.jsonl")).stem


def test_sessions_export_shows_escapes_literally_on_a_terminal_and_raw_in_a_pipe(
    tmp_path: Path,
) -> None:
    workspace, session_id = hostile_session(tmp_path)
    sessions = str(tmp_path / "sessions")
    piped = agent_server("sessions", "export", session_id, "--sessions-dir", sessions, cwd=workspace)
    assert piped.returncode == 0 and "\x1b]0;pwned\x07\x1b[2J\u202edone" in piped.stdout
    for fmt in ("markdown", "jsonl"):
        child = pexpect.spawn(
            sys.executable,
            ["-m", "agent_server", "sessions", "export", session_id, "--format", fmt,
             "--sessions-dir", sessions],
            cwd=str(workspace), encoding="utf-8", timeout=120,
            env={"TERM": "xterm-256color", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        )
        on_screen = child.read()
        child.close()
        assert child.exitstatus == 0, on_screen
        assert "\x1b" not in on_screen and "\u202e" not in on_screen, fmt
        # (JSON writes the control characters as \\u001b already; not U+202E.)
        shown = "\\x1b]0;pwned\\x07\\x1b[2J" if fmt == "markdown" else "\\u0007\\u001b[2J"
        assert shown + "\\u202edone" in on_screen, fmt


def test_sessions_export_ends_quietly_on_a_closed_pipe_and_names_a_path_it_cannot_write(
    tmp_path: Path,
) -> None:
    workspace, session_id = hostile_session(tmp_path)
    sessions = str(tmp_path / "sessions")
    export = [sys.executable, "-m", "agent_server", "sessions", "export", session_id,
              "--sessions-dir", sessions]
    for fmt in ("markdown", "jsonl"):
        # A reader that has stopped already (`| head -1` on a long session, at its end).
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            done = subprocess.run([*export, "--format", fmt], cwd=workspace, stdout=write_end,
                                  stderr=subprocess.PIPE, text=True, timeout=300, check=False)
        finally:
            os.close(write_end)
        assert done.stderr == "", fmt
    nowhere = tmp_path / "nonexistent" / "dir" / "x.md"
    failed = agent_server("sessions", "export", session_id, "-o", str(nowhere),
                          "--sessions-dir", sessions, cwd=workspace)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert failed.stderr == f"cannot write {nowhere}: No such file or directory\n"


def test_chat_refuses_a_workspace_that_is_not_a_folder_before_recording_anything(
    tmp_path: Path,
) -> None:
    sessions = tmp_path / "sessions"
    (tmp_path / "README.md").write_text("# not a folder\n")
    for given, said in (("nonexistent", "no such folder"), ("README.md", "not a folder")):
        done = agent_server("chat", "--provider", "sim", "--sessions-dir", str(sessions),
                            "--workspace", given, "--yes", "hi", cwd=tmp_path)
        assert done.returncode == 2, done.stdout
        assert done.stderr.startswith(f"--workspace {given}: {said}") and done.stdout == ""
    assert not list(sessions.rglob("*.jsonl"))
