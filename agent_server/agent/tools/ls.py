"""ls: the entries of one directory, sorted, directories marked with a trailing '/', each
name as a listing shows it (paths.listed_path: one with a control character quoted)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from agent_server.agent.tools.base import (
    ToolContext,
    ToolKind,
    ToolResult,
    display_arg,
    optional_str_arg,
)
from agent_server.agent.tools.output import bound_output
from agent_server.agent.tools.paths import (
    directory_names,
    display_path,
    listed_path,
    resolve_in_workspace,
)
from agent_server.errors import ToolError
from agent_server.llm.messages import ToolSpec

MAX_ENTRIES = 500

SPEC = ToolSpec(
    name="ls",
    description=(
        "List a directory in the workspace: its entries sorted by name, including hidden "
        f"ones, with a trailing '/' on directories; at most {MAX_ENTRIES} entries. Use find to "
        "search recursively."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "Directory (default: the workspace root)",
            },
        },
        "required": [],
    },
)


class LsTool:
    spec = SPEC
    read_only = True
    kind: ToolKind = "read"

    def paths(self, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        return ()

    def title(self, arguments: Mapping[str, Any]) -> str:
        return f"List {display_arg(arguments, 'path', '.') or '.'}"

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._list, arguments, ctx)

    def _list(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        path = resolve_in_workspace(ctx.workspace, optional_str_arg(arguments, "path") or ".")
        shown = display_path(ctx.workspace, path)
        if not path.exists():
            raise ToolError(f"Directory not found: {shown}.")
        if not path.is_dir():
            raise ToolError(f"{shown} is a file, not a directory. Use read to see its content.")
        names = sorted(
            (
                listed_path(name) + ("/" if is_dir else "")
                for name, is_dir in directory_names(path, shown)
            ),
            key=lambda name: (name.casefold(), name),
        )
        details = {"path": shown, "entries": len(names)}
        if not names:
            return ToolResult.of_text(f"{shown} is empty.", details=details)
        text = "\n".join(names[:MAX_ENTRIES])
        if len(names) > MAX_ENTRIES:
            text += (
                f"\n\n[{len(names) - MAX_ENTRIES} more entries not shown ({len(names)} in all). "
                "Use find with a pattern to narrow the listing.]"
            )
        bounded = bound_output(
            text, spill_dir=ctx.spill_dir, tool_name="ls", secrets=ctx.secrets, limits=ctx.limits
        )
        return ToolResult.of_text(bounded.text, details={**details, **bounded.details()})
