"""write: create or overwrite a file with the given content."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_server.agent.tools.base import (
    ToolContext,
    ToolKind,
    ToolResult,
    display_arg,
    path_of,
    str_arg,
)
from agent_server.agent.tools.diff import unified_diff
from agent_server.agent.tools.output import count_lines
from agent_server.agent.tools.paths import display_path, resolve_in_workspace
from agent_server.errors import ToolError
from agent_server.llm.messages import ToolSpec

SPEC = ToolSpec(
    name="write",
    description=(
        "Write a file in the workspace: creates it (and any missing parent directories) or "
        "replaces its whole content. Prefer edit for changing part of an existing file."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "File path, relative to the workspace root (or absolute inside it)",
            },
            "content": {"type": "string", "description": "The complete new content of the file"},
        },
        "required": ["path", "content"],
    },
)


class WriteTool:
    spec = SPEC
    read_only = False
    kind: ToolKind = "edit"

    def paths(self, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        return path_of(arguments)

    def title(self, arguments: Mapping[str, Any]) -> str:
        return f"Write {display_arg(arguments, 'path', '?')}"

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        path = resolve_in_workspace(ctx.workspace, str_arg(arguments, "path"))
        content = str_arg(arguments, "content")
        shown = display_path(ctx.workspace, path)
        if path.is_dir():
            raise ToolError(f"{shown} is a directory; give the path of a file inside it.")
        created = not path.exists()
        old: str | None = None
        if not created:
            try:
                old = await ctx.files.read_text(path)
            except (UnicodeDecodeError, OSError):
                old = None  # binary or unreadable: overwritten, no diff
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8")
        await ctx.files.write_text(path, content)
        lines = count_lines(content)
        verb = "Created" if created else "Overwrote"
        details: dict[str, Any] = {
            "path": shown,
            "created": created,
            "bytes": len(data),
            "lines": lines,
        }
        if old is not None or created:
            details["diff"] = unified_diff(old or "", content, shown, created=created)
        return ToolResult.of_text(
            f"{verb} {shown}: wrote {len(data)} bytes ({lines} lines).", details=details
        )
