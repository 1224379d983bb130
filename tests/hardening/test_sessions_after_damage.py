"""A ledger stays consistent when the server is killed, and the editor hears of every repair.

Over real stdio: a server killed (SIGKILL) while a tool runs leaves a tool call without a
result; the next server that opens the session appends an aborted result, and tells the
editor in the `agent/session/load` result and with a notice. A ledger damaged by hand (a
corrupt line, a torn last line) is reported the same way, with what was kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import signal
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agent_server.session.entries import MessageEntry
from agent_server.session.store import SessionStore
from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.session.builders import assistant, call, result, user

from .raw import RawServer, request

TOKEN = f"hardening-{uuid.uuid4().hex[:8]}"
SLOW = f"sleep 120; : {TOKEN}"
SCENARIO = {
    "name": "slow",
    "turns": [
        {
            "user": "Run the slow command.",
            "steps": [
                {"tools": [{"name": "bash", "arguments": {"command": SLOW}}]},
                {"text": "It finished."},
            ],
        }
    ],
}


@pytest.fixture
async def sim() -> AsyncIterator[SimServer]:
    async with SimServer(Simulator(scenario=parse_scenario(SCENARIO))) as server:
        yield server


def settings(sim: SimServer, tmp_path: Path) -> dict[str, Any]:
    return {
        "provider": "sim",
        "baseUrl": sim.base_url,
        "sessionsDir": str(tmp_path / "sessions"),
        "permissions": {"mode": "allowAll"},
    }


def kill_leftovers() -> None:
    """The killed server's command (its whole process group), found by its marker."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if TOKEN.encode() in cmdline and int(name) != os.getpid():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(os.getpgid(int(name)), signal.SIGKILL)


def text_of(item: dict[str, Any]) -> str:
    """The text a transcript item shows (a prompt, an answer)."""
    content = item.get("content")
    if isinstance(content, dict):
        return str(content.get("text", ""))
    if isinstance(content, list) and content and "text" in content[0]:
        return str(content[0]["text"])
    return ""


def notices(server: RawServer) -> list[dict[str, Any]]:
    return [
        m["params"]["update"]
        for m in server.messages
        if m.get("method") == "agent/update" and m["params"]["update"]["kind"] == "notice"
    ]


async def test_a_tool_call_cut_by_sigkill_gets_an_aborted_result_and_the_editor_is_told(
    sim: SimServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    first = await RawServer.start()
    try:
        await first.initialize(workspace, settings(sim, tmp_path))
        await first.send_message(request("new", "agent/session/new", {"workspaceUri": workspace.as_uri()}))
        session_id = (await first.answer("new"))["result"]["sessionId"]
        await first.send_message(
            request("turn", "agent/turn", {"sessionId": session_id, "prompt": "Run the slow command."})
        )
        running = await first.wait_for(
            lambda m: m.get("method") == "agent/update"
            and m["params"]["update"]["kind"] == "toolCallUpdate"
            and m["params"]["update"].get("status") == "in_progress",
            "the bash call to start",
        )
        call_id = running["params"]["update"]["toolCallId"]
        first.process.send_signal(signal.SIGKILL)
        await first.process.wait()
    finally:
        kill_leftovers()
        await first.close()

    second = await RawServer.start()
    try:
        await second.initialize(workspace, settings(sim, tmp_path))
        await second.send_message(request("load", "agent/session/load", {"sessionId": session_id}))
        loaded = (await second.answer("load"))["result"]
        repair = loaded["repair"]
        assert repair["abortedToolCalls"] == [call_id]
        assert "marked as aborted" in repair["message"]
        last = loaded["transcript"][-1]
        assert last["kind"] == "toolCallUpdate" and last["toolCallId"] == call_id
        assert last["status"] == "failed"
        assert "may or may not have run" in last["content"][0]["content"]["text"]
        notice = await second.wait_for(
            lambda m: m.get("method") == "agent/update"
            and m["params"]["update"]["kind"] == "notice",
            "the repair notice",
        )
        assert notice["params"]["update"]["level"] == "warning"
        assert notice["params"]["update"]["message"] == repair["message"]
        # Loading again: the repair was reported once, and the file needs none now.
        await second.send_message(request("again", "agent/session/load", {"sessionId": session_id}))
        await second.answer("again")
        assert len(notices(second)) == 1
    finally:
        await second.close()
    store = SessionStore(tmp_path / "sessions", workspace)
    with store.open(session_id) as ledger:
        assert ledger.load_report.clean


async def test_a_damaged_ledger_is_reported_with_what_was_kept(
    sim: SimServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    store = SessionStore(tmp_path / "sessions", workspace)
    with store.create(title="damaged") as ledger:
        ledger.append_message(user("first"))
        ledger.append_message(assistant("", call("c1", "read", path="a")))
        ledger.append_message(result("c1", "text"))
        ledger.append_message(assistant("an answer"))
        session_id, path = ledger.session_id, ledger.path
    lines = path.read_bytes().split(b"\n")
    lines[2] = b"{not json"  # line 3: the assistant's tool call
    path.write_bytes(b"\n".join(lines) + b'{"type":"message","id":"torn')
    server = await RawServer.start()
    try:
        await server.initialize(workspace, settings(sim, tmp_path))
        await server.send_message(request("load", "agent/session/load", {"sessionId": session_id}))
        loaded = (await server.answer("load"))["result"]
        repair = loaded["repair"]
        actions = {(i["line"], i["action"]) for i in repair["issues"]}
        assert (3, "skipped") in actions
        assert any(action == "truncated" for _, action in actions)
        assert repair["truncatedBytes"] == len(b'{"type":"message","id":"torn')
        assert "line 3 skipped (not valid JSON)" in repair["message"]
        assert (4, "reattached") in actions  # its result lost its parent
        assert repair["keptEntries"] == 3
        texts = [text_of(item) for item in loaded["transcript"]]
        assert "first" in texts and "an answer" in texts
        await server.wait_for(
            lambda m: m.get("method") == "agent/update"
            and m["params"]["update"]["kind"] == "notice"
            and "line 3 skipped" in m["params"]["update"]["message"],
            "the repair notice",
        )
    finally:
        await server.close()


async def test_a_clean_session_reports_no_repair(sim: SimServer, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    store = SessionStore(tmp_path / "sessions", workspace)
    with store.create() as ledger:
        ledger.append_message(user("hello"))
        session_id = ledger.session_id
    server = await RawServer.start()
    try:
        await server.initialize(workspace, settings(sim, tmp_path))
        await server.send_message(request("load", "agent/session/load", {"sessionId": session_id}))
        loaded = (await server.answer("load"))["result"]
        assert "repair" not in loaded
        await asyncio.sleep(0)  # nothing to wait for: a notice would have come before the answer
        assert notices(server) == []
    finally:
        await server.close()


@contextlib.asynccontextmanager
async def loaded_after(
    sim: SimServer, tmp_path: Path, damage: Callable[[Path, str], None]
) -> AsyncIterator[tuple[RawServer, dict[str, Any]]]:
    """A session of one prompt ("first") whose ledger `damage(path, first_id)` changed, and
    the answer a server gives to loading it."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with SessionStore(tmp_path / "sessions", workspace).create() as ledger:
        first = ledger.append_message(user("first"))
        session_id, path = ledger.session_id, ledger.path
    damage(path, first.id)
    server = await RawServer.start()
    try:
        await server.initialize(workspace, settings(sim, tmp_path))
        await server.send_message(request("load", "agent/session/load", {"sessionId": session_id}))
        yield server, await server.answer("load")
    finally:
        await server.close()


def appended(*entries: dict[str, Any]) -> Callable[[Path, str], None]:
    def damage(path: Path, first_id: str) -> None:
        with path.open("a") as handle:
            for entry in entries:
                handle.write(json.dumps(entry).replace("FIRST", first_id) + "\n")

    return damage


async def repair_notice(server: RawServer, fragment: str) -> None:
    await server.wait_for(
        lambda m: (
            m.get("method") == "agent/update"
            and m["params"]["update"]["kind"] == "notice"
            and fragment in m["params"]["update"]["message"]
        ),
        "the repair notice",
    )


async def test_an_entry_of_unknown_type_is_reported_and_kept(
    sim: SimServer, tmp_path: Path
) -> None:
    """It was left out of view without a word; every other line loading cannot use is
    reported. Now it is reported too, and kept (the tree goes through it)."""
    future = {"type": "bookmark", "id": "f0000001", "parentId": "FIRST", "timestamp": ""}
    after = {
        "type": "message", "id": "f0000002", "parentId": "f0000001", "timestamp": "",
        "message": {"role": "user", "content": [{"type": "text", "text": "after"}]},
    }
    async with loaded_after(sim, tmp_path, appended(future, after)) as (server, answer):
        loaded = answer["result"]
        (issue,) = loaded["repair"]["issues"]
        assert issue["action"] == "unknownType" and "'bookmark'" in issue["reason"]
        assert "kept but not shown" in loaded["repair"]["message"]
        texts = [text_of(item) for item in loaded["transcript"]]
        assert texts.index("first") < texts.index("after")
        await repair_notice(server, "kept but not shown")


async def test_a_message_whose_content_cannot_be_read_is_reported_and_kept(
    sim: SimServer, tmp_path: Path
) -> None:
    """The index reads a message's envelope, not its blocks: a bad block is found when the
    entry is read. It was logged only; the editor is told, as of any other such line."""
    bad = {
        "type": "message", "id": "bb000001", "parentId": "FIRST", "timestamp": "",
        "message": {"role": "user", "content": [{"type": "text", "text": 5}]},
    }
    async with loaded_after(sim, tmp_path, appended(bad)) as (server, answer):
        loaded = answer["result"]
        (issue,) = loaded["repair"]["issues"]
        assert issue["action"] == "unknownType" and issue["line"] == 3
        assert "text must be a string" in issue["reason"]
        shown = [item for item in loaded["transcript"] if item["kind"] == "userMessage"]
        assert [text_of(item) for item in shown] == ["first"]
        await repair_notice(server, "line 3 kept but not shown")


async def test_a_ledger_whose_header_is_damaged_is_its_own_error_not_a_bug(
    sim: SimServer, tmp_path: Path
) -> None:
    """Nothing in a file whose header cannot be read says whose session it is: the load is
    refused, with -33006 (a damaged file), not -32603 (which says: a bug in the server)."""

    def garbled_header(path: Path, first_id: str) -> None:
        lines = path.read_bytes().split(b"\n")
        path.write_bytes(b"\n".join([b"{garbage header", *lines[1:]]))

    async with loaded_after(sim, tmp_path, garbled_header) as (_, answer):
        error = answer["error"]
        assert error["code"] == -33006 and error["data"]["code"] == "ledger_format"
        assert "not a session ledger" in error["message"]


async def test_a_tool_result_that_could_not_be_saved_is_recorded_as_aborted_once_it_can(
    tmp_path: Path,
) -> None:
    """The session file cannot grow while a tool runs (a full disk, played by the server's
    RLIMIT_FSIZE: its writes past the limit fail as ENOSPC's would). The turn fails; the
    tool call was left without a result until the next open. Now the next turn, once the
    file can be written again, first records it as aborted."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    go = workspace / "go"  # in the workspace: the sandbox has a /tmp of its own
    wait = "while [ ! -e go ]; do sleep 0.1; done; echo ran"
    scenario = {
        "name": "full-disk",
        "turns": [
            {
                "user": "Run it.",
                "steps": [
                    {"tools": [{"name": "bash", "arguments": {"command": wait}}]},
                    {"text": "It ran."},
                ],
            },
            {"user": "Again?", "steps": [{"text": "Yes."}]},
        ],
    }
    async with SimServer(Simulator(scenario=parse_scenario(scenario))) as sim:
        server = await RawServer.start()
        try:
            await server.initialize(workspace, settings(sim, tmp_path))
            session_id = await server.new_session(workspace)
            await server.send_message(
                request("t1", "agent/turn", {"sessionId": session_id, "prompt": "Run it."})
            )
            running = await server.wait_for(
                lambda m: (
                    m.get("method") == "agent/update"
                    and m["params"]["update"]["kind"] == "toolCallUpdate"
                    and m["params"]["update"].get("status") == "in_progress"
                ),
                "the bash call to start",
            )
            call_id = running["params"]["update"]["toolCallId"]
            (ledger_path,) = (tmp_path / "sessions").rglob(f"{session_id}.jsonl")
            full = ledger_path.stat().st_size
            pid = server.process.pid
            soft, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (full, hard))
            go.touch()
            first = (await server.answer("t1"))["result"]
            assert first["stopReason"] == "error"
            assert ledger_path.stat().st_size == full  # nothing could be saved
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (soft, hard))  # room again
            await server.send_message(
                request("t2", "agent/turn", {"sessionId": session_id, "prompt": "Again?"})
            )
            second = (await server.answer("t2"))["result"]
            assert second["stopReason"] == "end_turn"
            await server.wait_for(
                lambda m: (
                    m.get("method") == "agent/update"
                    and m["params"]["update"]["kind"] == "notice"
                    and "could not be saved" in m["params"]["update"]["message"]
                ),
                "the notice",
            )
        finally:
            await server.close()
    with SessionStore(tmp_path / "sessions", workspace).open(session_id) as ledger:
        assert ledger.load_report.clean
        kinds = [
            (type(e.message).__name__, getattr(e.message, "tool_call_id", None))
            for e in ledger.tree.branch()
            if isinstance(e, MessageEntry)
        ]
    at = kinds.index(("ToolResultMessage", call_id))
    assert kinds[at - 1][0] == "AssistantMessage"  # right after the call
    assert kinds[at + 1][0] == "UserMessage"  # before the next prompt
