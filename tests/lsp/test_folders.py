"""Workspace folders added and removed at runtime (workspace/didChangeWorkspaceFolders), over
real stdio with a raw client, which answers the server's workspace/configuration requests when
the test says so."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_server.sim.server import SimServer
from agent_server.sim.workspace import write_sample_workspace
from tests.hardening.raw import RawServer, request
from tests.lsp.conftest import sim_settings
from tests.lsp.test_turns import OVERVIEW


def folder_event(added: list[str] = [], removed: list[str] = []) -> dict[str, Any]:  # noqa: B006
    def folders(uris: list[str]) -> list[dict[str, str]]:
        return [{"uri": uri, "name": uri.rsplit("/", 1)[-1]} for uri in uris]

    return {
        "jsonrpc": "2.0",
        "method": "workspace/didChangeWorkspaceFolders",
        "params": {"event": {"added": folders(added), "removed": folders(removed)}},
    }


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[RawServer]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["XDG_DATA_HOME"] = str(tmp_path / "data-home")  # the default sessions dir, if used
    started = await RawServer.start(env)
    yield started
    await started.close()


async def initialize(server: RawServer, folder: Path, settings: dict[str, Any]) -> None:
    """With settings in initializationOptions, and a client that answers
    workspace/configuration (when the test answers)."""
    params = {
        "processId": None,
        "rootUri": folder.as_uri(),
        "workspaceFolders": [{"uri": folder.as_uri(), "name": folder.name}],
        "capabilities": {"workspace": {"configuration": True, "workspaceFolders": True}},
        "initializationOptions": {"settings": settings},
    }
    await server.send_message(request("init", "initialize", params))
    assert "result" in await server.answer("init")
    await server.send_message({"jsonrpc": "2.0", "method": "initialized", "params": {}})


async def answer_configuration(server: RawServer, settings: dict[str, Any], scope: str) -> None:
    asked = await server.wait_for(
        lambda m: m.get("method") == "workspace/configuration"
        and m["params"]["items"][0].get("scopeUri") == scope,
        f"workspace/configuration for {scope}",
    )
    await server.send_message({"jsonrpc": "2.0", "id": asked["id"], "result": [settings]})


def make_folder(path: Path) -> Path:
    path.mkdir()
    write_sample_workspace(path)
    return path


async def test_a_folder_added_at_runtime_has_the_settings_before_the_editor_answers(
    server: RawServer, workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    settings = sim_settings(sim, tmp_path)
    added = make_folder(tmp_path / "added")
    await initialize(server, workspace, settings)
    await answer_configuration(server, settings, workspace.as_uri())
    await server.send_message(folder_event(added=[added.as_uri()]))
    # Its workspace/configuration is not answered yet: the initializationOptions' settings
    # hold (the simulator, the sessions dir), not the defaults (Anthropic, no key).
    await server.wait_for(
        lambda m: m.get("method") == "workspace/configuration"
        and m["params"]["items"][0].get("scopeUri") == added.as_uri(),
        "the added folder's configuration request",
    )
    await server.send_message(request(1, "agent/session/new", {"workspaceUri": added.as_uri()}))
    made = await server.answer(1)
    assert "result" in made, made
    await answer_configuration(server, settings, added.as_uri())
    await server.send_message(request(2, "agent/session/list", {"workspaceUri": added.as_uri()}))
    listed = (await server.answer(2))["result"]["sessions"]
    assert [s["sessionId"] for s in listed] == [made["result"]["sessionId"]]


async def test_a_folder_that_is_no_file_is_skipped_and_the_others_are_opened(
    server: RawServer, workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    settings = sim_settings(sim, tmp_path)
    first, second = make_folder(tmp_path / "first"), make_folder(tmp_path / "second")
    await initialize(server, workspace, settings)
    await answer_configuration(server, settings, workspace.as_uri())
    await server.send_message(
        folder_event(added=["untitled:Untitled-1", first.as_uri()], removed=["vsls:/shared"])
    )
    await answer_configuration(server, settings, first.as_uri())
    await server.send_message(
        folder_event(added=[second.as_uri()], removed=["untitled:x", first.as_uri()])
    )
    await answer_configuration(server, settings, second.as_uri())
    await server.send_message(request(1, "agent/session/new", {"workspaceUri": second.as_uri()}))
    assert "result" in await server.answer(1)
    await server.send_message(request(2, "agent/session/new", {"workspaceUri": first.as_uri()}))
    assert (await server.answer(2))["error"]["code"] == -33003  # removed
    log = server.log.decode()
    assert "untitled:Untitled-1" in log and "Traceback" not in log
    assert "InternalError" not in log


async def test_a_folder_added_while_the_user_is_away_knows_it(
    server: RawServer, workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    settings = sim_settings(sim, tmp_path, cacheRetention="auto")
    added = make_folder(tmp_path / "added")
    await initialize(server, workspace, settings)
    await answer_configuration(server, settings, workspace.as_uri())
    await server.send_message(request(1, "agent/userIdle", {"idle": True}))
    assert (await server.answer(1))["result"] == {}
    await server.send_message(folder_event(added=[added.as_uri()]))
    await answer_configuration(server, settings, added.as_uri())
    await server.send_message(request(2, "agent/session/new", {"workspaceUri": added.as_uri()}))
    session_id = (await server.answer(2))["result"]["sessionId"]
    await server.send_message(
        request(3, "agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
    )
    assert (await server.answer(3))["result"]["stopReason"] == "end_turn"
    marks = [
        block["cache_control"]
        for record in sim.simulator.records
        for message in record.request.get("messages", [])
        if isinstance(message["content"], list)
        for block in message["content"]
        if "cache_control" in block
    ]
    assert marks and all(mark.get("ttl") == "1h" for mark in marks)  # "auto" while away
