"""A session's permission mode and "always" answers outlive the process that held it
(issue 48: a loaded session forgot its mode; issue 47: "Always allow this command" was
forgotten after Reload Window while the session went on). Saved beside the ledger when the
session is let go; taken back by the next process that opens it."""

from __future__ import annotations

import json
from pathlib import Path

from agent_server.agent.permissions import (
    CHOICES_FILE,
    PermissionChoices,
    PermissionRule,
    load_choices,
    save_choices,
)
from agent_server.agent.settings import AgentSettings
from agent_server.agent.workspace import WorkspaceAgent
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.agent.conftest import FAST_RETRY

RULES = (
    PermissionRule("bash", True, command="make test"),
    PermissionRule("bash", True, prefix=("npm", "run")),
    PermissionRule("bash", True, command="npm ci", outside=True),
    PermissionRule("write", False),
)


def test_choices_round_trip_and_the_mode_holds_until_the_setting_changes(
    tmp_path: Path,
) -> None:
    save_choices(tmp_path, PermissionChoices("ask", RULES), "allowReads")
    assert load_choices(tmp_path, "allowReads") == PermissionChoices("ask", RULES)
    # The setting changed since: the answers stay, the mode switched to does not.
    assert load_choices(tmp_path, "allowAll") == PermissionChoices(None, RULES)
    # Nothing to keep: no file.
    save_choices(tmp_path, PermissionChoices(None, ()), "allowReads")
    assert not (tmp_path / CHOICES_FILE).exists()
    assert load_choices(tmp_path, "allowReads") is None


def test_a_damaged_choices_file_is_ignored(tmp_path: Path) -> None:
    for damaged in ("{not json", '{"mode": "allowAll"}', '{"mode": "yolo", "rules": []}', "[]"):
        (tmp_path / CHOICES_FILE).write_text(damaged)
        loaded = load_choices(tmp_path, "allowReads")
        assert loaded is None or loaded == PermissionChoices(None, ())


async def test_a_reopened_session_has_its_mode_and_answers_back(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with SimServer(Simulator()) as server:
        settings = AgentSettings().with_overrides(
            provider="sim", base_url=server.base_url, sessions_dir=str(tmp_path / "sessions")
        )
        first = WorkspaceAgent(workspace, settings, retry=FAST_RETRY)
        session = first.create()
        await session.run_turn("hello")
        session.set_mode("ask")
        session.gate.remember(RULES)
        session_id = session.session_id
        await first.close()
        saved = json.loads(next((tmp_path / "sessions").rglob(CHOICES_FILE)).read_text())
        assert saved["mode"] == "ask"
        # Another process (another WorkspaceAgent) opens it.
        second = WorkspaceAgent(workspace, settings, retry=FAST_RETRY)
        try:
            reopened = second.open(session_id)
            assert reopened.mode == "ask"
            assert reopened.gate.rules == RULES
        finally:
            await second.close()
        # With another configured mode, the mode switched to gives way to it.
        third = WorkspaceAgent(
            workspace, settings.with_overrides(permissions_mode="allowAll"), retry=FAST_RETRY
        )
        try:
            reopened = third.open(session_id)
            assert reopened.mode == "allowAll" and reopened.gate.rules == RULES
        finally:
            await third.close()
