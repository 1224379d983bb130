"""The command line as a user runs it: real subprocesses, the simulator, a sample workspace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agent_server.sim.scenario import default_scenario
from agent_server.sim.workspace import write_sample_workspace


def agent_server(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_server", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )


def test_demo_runs_to_the_end_and_shows_a_compaction(tmp_path: Path) -> None:
    log = tmp_path / "sim.jsonl"
    done = agent_server("demo", "--log", str(log), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "compacted (threshold)" in out
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
