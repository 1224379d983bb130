"""The workspace's `.mcp.json` starts nothing until the user approved its exact content
(issue 24): asked at the next prompt, once for good ("always"), and again when it changes.

Before: whatever `.mcp.json` named started with the session, unasked, outside any sandbox.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_server.agent import events
from agent_server.agent.mcp.approval import APPROVALS_FILE, approvals_path
from agent_server.session.store import default_sessions_root
from tests.agent.mcp_tools.conftest import FIXTURE_SERVER, McpRun, call, mcp_run, turn


def write_mcp(workspace: Path, *extra_args: str) -> str:
    data = {"mcpServers": {"fx": {"command": sys.executable,
                                  "args": [str(FIXTURE_SERVER), *extra_args]}}}
    text = json.dumps(data, indent=2) + "\n"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / ".mcp.json").write_text(text)
    return text


SCENARIO: dict[str, Any] = {
    "turns": [
        turn("Shout hello.", call("mcp__fx__shout", text="hello")),
        turn("Shout again.", call("mcp__fx__shout", text="again")),
    ]
}


def server_state(run: McpRun) -> tuple[str, str | None]:
    (server,) = run.session.tools.status().servers
    return server.state, server.error


async def test_nothing_starts_before_the_user_approves_and_always_lasts_until_a_change(
    tmp_path: Path, own_user_config: Path
) -> None:
    text = write_mcp(tmp_path / "workspace")
    async with mcp_run(tmp_path, {}, SCENARIO) as run:
        state, error = server_state(run)
        assert state == "failed" and error is not None and "waiting for your approval" in error
        run.answer = "allow_always"
        await run.session.run_turn("Shout hello.")
        question = run.asked[0]
        assert question.title == "Start the MCP servers of .mcp.json: fx"
        assert question.command == text  # the exact content approved
        assert [o.option_id for o in question.options] == [
            "allow_once", "allow_always", "reject_once"
        ]
        assert "mcp__fx__shout" in run.tool_names()
        assert server_state(run)[0] == "ready"
        session_id = run.session.session_id
        # Another session of the workspace: approved for good, not asked.
        asked = len(run.asked)
        await run.reopen()
        assert run.session.session_id == session_id
        await run.session.run_turn("Shout again.")
        assert not any("MCP servers" in q.title for q in run.asked[asked:])
        assert server_state(run)[0] == "ready"
    # Kept in the user's config directory, not the sessions directory (which a workspace's
    # settings can put inside the workspace).
    assert not (tmp_path / "sessions" / APPROVALS_FILE).exists()
    approvals = json.loads(approvals_path().read_text())
    assert approvals_path().is_relative_to(own_user_config)
    assert approvals[str((tmp_path / "workspace").resolve())][".mcp.json"]


def shipped_approval(folder: Path, workspace: Path, mcp_text: str) -> Path:
    """An `approved-mcp.json` naming `workspace` and its `.mcp.json`'s exact digest, as a
    repository (or a command the model ran) would write it."""
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(mcp_text.encode()).hexdigest()
    path = folder / APPROVALS_FILE
    path.write_text(json.dumps({str(workspace.resolve()): {".mcp.json": digest}}))
    return path


async def test_an_approval_in_a_sessions_dir_inside_the_workspace_is_not_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 44: `sessionsDir` can be set by the workspace's settings, inside it; a
    repository that shipped `approved-mcp.json` there with its `.mcp.json`'s digest had the
    servers started with the session, unasked. Now they wait for the user."""
    workspace = tmp_path / "workspace"
    text = write_mcp(workspace)
    shipped = shipped_approval(workspace / ".agent-sessions", workspace, text)
    caplog.set_level(logging.WARNING, "agent_server")
    async with mcp_run(tmp_path, {}, SCENARIO, sessions=workspace / ".agent-sessions") as run:
        state, error = server_state(run)
        assert state == "failed" and "waiting for your approval" in (error or "")
        run.answer = "reject_once"
        await run.session.run_turn("Shout hello.")
        assert file_questions(run, 0) == [text]
        assert "mcp__fx__shout" not in run.tool_names()
    told = [r.getMessage() for r in caplog.records if str(shipped) in r.getMessage()]
    assert len(told) == 1 and "inside the workspace" in told[0]


async def test_approvals_kept_in_the_old_default_place_are_still_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before issue 44 "Always" was kept in the default sessions directory (the user data
    directory, outside the workspace): those answers still hold."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    workspace = tmp_path / "workspace"
    text = write_mcp(workspace)
    shipped_approval(default_sessions_root(), workspace, text)
    async with mcp_run(tmp_path, {}, SCENARIO) as run:
        await run.session.run_turn("Shout hello.")
        assert file_questions(run, 0) == []
        assert server_state(run)[0] == "ready"


async def test_a_changed_file_is_held_and_asked_about_again(tmp_path: Path) -> None:
    write_mcp(tmp_path / "workspace")
    async with mcp_run(tmp_path, {}, SCENARIO) as run:
        run.answer = "allow_always"
        await run.session.run_turn("Shout hello.")
        assert server_state(run)[0] == "ready"
        write_mcp(run.workspace, "--name", "changed")  # anything that writes the workspace
        asked = len(run.asked)
        run.answer = "reject_once"
        await run.reopen()
        assert "waiting for your approval" in (server_state(run)[1] or "")
        await run.session.run_turn("Shout again.")
        question = run.asked[asked]
        assert question.title.endswith("(it changed since you approved it)")
        assert "--name" in (question.command or "")
        state, error = server_state(run)
        assert state == "failed" and "you did not approve" in (error or "")
        notices = [e.message for e in run.of(events.Notice)]
        assert any("were not started" in n for n in notices)


async def test_without_anyone_to_ask_the_servers_stay_off(tmp_path: Path) -> None:
    write_mcp(tmp_path / "workspace")
    async with mcp_run(tmp_path, {}, SCENARIO) as run:
        run.session.gate.set_ask(None)  # headless
        await run.session.run_turn("Shout hello.")
        assert server_state(run)[0] == "failed"
        assert "mcp__fx__shout" not in run.tool_names()


THREE_TURNS: dict[str, Any] = {
    "turns": [*SCENARIO["turns"], turn("Shout more.", call("mcp__fx__shout", text="more"))]
}


def file_questions(run: McpRun, since: int) -> list[str]:
    """The commands of the questions about `.mcp.json` asked since the `since`th question."""
    return [q.command or "" for q in run.asked[since:] if "MCP servers" in q.title]


async def test_allow_for_the_session_holds_when_the_server_closes_and_reopens_it(
    tmp_path: Path,
) -> None:
    """The LSP server closes the least recently used sessions and reopens them on their next
    request: the editor shows the same session, so "Allow" (this session) still holds; a
    changed file is another content, asked about again."""
    write_mcp(tmp_path / "workspace")
    async with mcp_run(tmp_path, {}, THREE_TURNS) as run:
        run.answer = "allow_once"
        await run.session.run_turn("Shout hello.")
        assert len(file_questions(run, 0)) == 1 and server_state(run)[0] == "ready"
        asked = len(run.asked)
        run.evict_and_open()
        await run.session.run_turn("Shout again.")
        assert file_questions(run, asked) == []
        assert server_state(run)[0] == "ready" and "mcp__fx__shout" in run.tool_names()
        # For this session only: another one is asked.
        other = run.agent.create(emit=run.emit, ask=run.ask)
        assert "waiting for your approval" in (other.tools.status().servers[0].error or "")
        write_mcp(run.workspace, "--name", "changed")
        asked = len(run.asked)
        run.evict_and_open()
        assert "waiting for your approval" in (server_state(run)[1] or "")
        await run.session.run_turn("Shout more.")
        (question,) = file_questions(run, asked)
        assert "--name" in question


async def test_reject_for_the_session_holds_when_the_server_closes_and_reopens_it(
    tmp_path: Path,
) -> None:
    write_mcp(tmp_path / "workspace")
    async with mcp_run(tmp_path, {}, THREE_TURNS) as run:
        run.answer = "reject_once"
        await run.session.run_turn("Shout hello.")
        assert len(file_questions(run, 0)) == 1
        asked = len(run.asked)
        run.evict_and_open()
        state, error = server_state(run)
        assert state == "failed" and "you did not approve" in (error or "")
        await run.session.run_turn("Shout again.")
        assert file_questions(run, asked) == []
        assert "mcp__fx__shout" not in run.tool_names()
        write_mcp(run.workspace, "--name", "changed")
        run.answer = "allow_once"
        run.evict_and_open()
        await run.session.run_turn("Shout more.")
        (question,) = file_questions(run, asked)
        assert "--name" in question
