"""The file tools refuse what is not a regular file, and ask before using a hard-linked one."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agent_server.agent.events import AgentEvent, ToolCallUpdated
from agent_server.agent.permissions import PermissionGate, PermissionRequest
from agent_server.agent.tool_runner import ToolRunner
from agent_server.agent.tools import ToolContext, ToolResult, default_tools, find_tool, run_tool
from agent_server.llm.messages import ToolCall, ToolResultMessage

TOOLS = default_tools()
HANG_GUARD = 30.0  # a FIFO used to block the turn forever: fail instead of hanging


def text_of(path: Path) -> str:
    return path.read_text()


def tool(name: str) -> Any:
    found = find_tool(TOOLS, name)
    assert found is not None
    return found


async def call(name: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return await asyncio.wait_for(run_tool(tool(name), arguments, ctx), HANG_GUARD)


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("read", {"path": "pipe"}),
        ("write", {"path": "pipe", "content": "x"}),
        ("edit", {"path": "pipe", "oldText": "a", "newText": "b"}),
        ("grep", {"pattern": "x", "path": "pipe"}),
    ],
)
async def test_a_named_pipe_is_refused_at_once(
    name: str, arguments: dict[str, Any], ctx: ToolContext, workspace: Path
) -> None:
    os.mkfifo(workspace / "pipe")
    result = await call(name, arguments, ctx)
    assert result.is_error
    assert "pipe is a named pipe (FIFO), not a regular file" in result.text


async def test_a_socket_and_a_device_are_refused(ctx: ToolContext, workspace: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(workspace / "sock"))
    try:
        result = await call("read", {"path": "sock"}, ctx)
        assert result.is_error and "is a socket" in result.text
    finally:
        server.close()
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    os.mknod(workspace / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    for name, arguments in (
        ("read", {"path": "null"}),
        ("write", {"path": "null", "content": "x"}),
    ):
        result = await call(name, arguments, ctx)
        assert result.is_error and "is a character device" in result.text, result.text


async def test_grep_skips_special_files_when_walking(ctx: ToolContext, workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    (workspace / "a.txt").write_text("needle\n")
    result = await call("grep", {"pattern": "needle"}, ctx)
    assert not result.is_error and result.text == "a.txt\n1:needle"


@pytest.fixture
def linked(workspace: Path, tmp_path: Path) -> Path:
    """A file outside the workspace, hard-linked into it as notes.txt."""
    outside = tmp_path / "outside-secret.txt"
    outside.write_text("private outside text\n")
    os.link(outside, workspace / "notes.txt")
    return outside


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("read", {"path": "notes.txt"}),
        ("write", {"path": "notes.txt", "content": "overwritten"}),
        ("edit", {"path": "notes.txt", "oldText": "private", "newText": "public"}),
        ("grep", {"pattern": "private", "path": "notes.txt"}),
    ],
)
async def test_a_hard_linked_file_is_not_used_without_permission(
    name: str, arguments: dict[str, Any], ctx: ToolContext, linked: Path
) -> None:
    result = await call(name, arguments, ctx)
    assert result.is_error and "has 2 hard links" in result.text
    assert "private outside text" not in result.text
    assert text_of(linked) == "private outside text\n"


class Asker:
    """Answers permission questions as a user would, and remembers them."""

    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.asked: list[PermissionRequest] = []

    async def __call__(self, request: PermissionRequest) -> str | None:
        self.asked.append(request)
        return self.answer


async def run_calls(
    gate: PermissionGate, ctx: ToolContext, calls: Sequence[ToolCall]
) -> tuple[dict[str, ToolResultMessage], list[AgentEvent]]:
    events: list[AgentEvent] = []
    runner = ToolRunner(lambda: TOOLS, gate, lambda on_output: ctx, events.append)
    results: dict[str, ToolResultMessage] = {}
    await runner.run("t1", calls, results)
    return results, events


@pytest.mark.parametrize("answer", ["allow_once", "reject_once"])
async def test_even_allow_all_asks_before_a_hard_linked_file(
    answer: str, ctx: ToolContext, linked: Path
) -> None:
    asker = Asker(answer)
    gate = PermissionGate("allowAll", asker)
    plain = ToolCall("c0", "ls", {"path": "."})
    read = ToolCall("c1", "read", {"path": "notes.txt"})
    results, _ = await run_calls(gate, ctx, [plain, read])
    assert [r.tool_call.id for r in asker.asked] == ["c1"]  # ls ran without a question
    assert "notes.txt has 2 hard links (another may be outside)" in asker.asked[0].title
    if answer == "allow_once":
        assert not results["c1"].is_error and "private outside text" in results["c1"].text
    else:
        assert results["c1"].is_error and "private outside text" not in results["c1"].text


async def test_always_allow_does_not_spare_the_hard_link_question(
    ctx: ToolContext, linked: Path
) -> None:
    asker = Asker("allow_always")
    gate = PermissionGate("ask", asker)
    (ctx.workspace / "plain.txt").write_text("plain\n")
    await run_calls(gate, ctx, [ToolCall("c1", "read", {"path": "plain.txt"})])
    await run_calls(gate, ctx, [ToolCall("c2", "read", {"path": "plain.txt"})])
    await run_calls(gate, ctx, [ToolCall("c3", "read", {"path": "notes.txt"})])
    assert [r.tool_call.id for r in asker.asked] == ["c1", "c3"]


async def test_with_nobody_to_ask_a_hard_linked_file_is_refused(
    ctx: ToolContext, linked: Path
) -> None:
    results, events = await run_calls(
        PermissionGate("allowAll"), ctx, [ToolCall("c1", "read", {"path": "notes.txt"})]
    )
    assert results["c1"].is_error and "no one to ask" in results["c1"].text
    assert "private outside text" not in "".join(
        e.output or "" for e in events if isinstance(e, ToolCallUpdated)
    )


async def test_after_a_rejected_read_grep_of_the_workspace_leaves_the_file_out(
    ctx: ToolContext, linked: Path
) -> None:
    asker = Asker("reject_once")
    read = ToolCall("c1", "read", {"path": "notes.txt"})
    grep = ToolCall("c2", "grep", {"pattern": "private"})
    results, _ = await run_calls(PermissionGate("allowAll", asker), ctx, [read, grep])
    assert [r.tool_call.id for r in asker.asked] == ["c1"]
    assert results["c1"].is_error
    assert "private outside text" not in results["c2"].text
    assert "hard-linked file(s), which may also exist outside the workspace: notes.txt" in (
        results["c2"].text
    )


async def test_the_permission_preview_of_a_write_to_a_pipe_does_not_block(
    ctx: ToolContext, workspace: Path
) -> None:
    # The question for a write or edit shows the change, which reads the file first.
    os.mkfifo(workspace / "pipe")
    asker = Asker("allow_once")
    calls = [
        ToolCall("c1", "write", {"path": "pipe", "content": "x"}),
        ToolCall("c2", "edit", {"path": "pipe", "oldText": "a", "newText": "b"}),
    ]
    results, _ = await asyncio.wait_for(run_calls(PermissionGate("ask", asker), ctx, calls), 30)
    assert all("named pipe (FIFO)" in results[c.id].text for c in calls)
