"""The file tools read and write text through the context's FileAccess (an editor's buffers),
and everything else about a file (existence, images, binaries) from the disk."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from agent_server.agent.tools import ToolContext, run_tool
from agent_server.agent.tools.edit import EditTool
from agent_server.agent.tools.files import DecodeErrors
from agent_server.agent.tools.read import ReadTool
from agent_server.agent.tools.write import WriteTool


class Buffers:
    """An editor: open buffers shadow the disk; writes go to the buffers only."""

    def __init__(self, buffers: dict[Path, str]) -> None:
        self.buffers = buffers
        self.reads: list[Path] = []
        self.writes: list[Path] = []

    async def read_text(
        self, path: Path, *, errors: DecodeErrors = "strict", hard_links_allowed: bool = False
    ) -> str:
        self.reads.append(path)
        if path in self.buffers:
            return self.buffers[path]
        data = await asyncio.to_thread(path.read_bytes)
        return data.decode("utf-8", errors=errors)

    async def write_text(
        self, path: Path, content: str, *, hard_links_allowed: bool = False
    ) -> None:
        self.writes.append(path)
        self.buffers[path] = content

    def holds(self, path: Path) -> bool:
        return True


async def test_read_sees_the_unsaved_buffer(ctx: ToolContext, real_workspace: Path) -> None:
    (real_workspace / "app.py").write_text("saved = 1\n")
    editor = Buffers({real_workspace / "app.py": "unsaved = 2\nmore = 3\n"})
    result = await run_tool(ReadTool(), {"path": "app.py"}, replace(ctx, files=editor))
    assert not result.is_error
    assert "unsaved = 2" in result.text and "saved = 1" not in result.text
    assert result.details is not None and result.details["totalLines"] == 2
    assert editor.reads == [real_workspace / "app.py"]


async def test_edit_reads_and_writes_through_the_editor(
    ctx: ToolContext, real_workspace: Path
) -> None:
    target = real_workspace / "app.py"
    target.write_text("value = 1\n")
    editor = Buffers({target: "value = 1\nbuffer_only = True\n"})
    result = await run_tool(
        EditTool(),
        {"path": "app.py", "oldText": "buffer_only = True", "newText": "buffer_only = False"},
        replace(ctx, files=editor),
    )
    assert not result.is_error, result.text
    assert editor.buffers[target] == "value = 1\nbuffer_only = False\n"
    assert target.read_text() == "value = 1\n"  # the editor decides when to save
    assert editor.writes == [target]


async def test_write_creates_through_the_editor_with_a_diff(
    ctx: ToolContext, real_workspace: Path
) -> None:
    editor = Buffers({})
    result = await run_tool(
        WriteTool(), {"path": "notes/new.md", "content": "# New\n"}, replace(ctx, files=editor)
    )
    assert not result.is_error, result.text
    assert editor.buffers[real_workspace / "notes" / "new.md"] == "# New\n"
    assert result.details is not None and "+# New" in result.details["diff"]


async def test_binary_and_missing_files_never_reach_the_editor(
    ctx: ToolContext, real_workspace: Path
) -> None:
    (real_workspace / "blob.bin").write_bytes(b"\x00\x01\x02")
    editor = Buffers({})
    files_ctx = replace(ctx, files=editor)
    binary = await run_tool(ReadTool(), {"path": "blob.bin"}, files_ctx)
    missing = await run_tool(ReadTool(), {"path": "nope.txt"}, files_ctx)
    assert binary.is_error and "binary" in binary.text
    assert missing.is_error and "not found" in missing.text
    assert editor.reads == []
