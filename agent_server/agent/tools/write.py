"""write: create or overwrite a file with the given content."""

from __future__ import annotations

import asyncio
import contextlib
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_server.agent.tools.base import (
    ToolContext,
    ToolKind,
    ToolResult,
    display_arg,
    path_of,
    str_arg,
)
from agent_server.agent.tools.diff import FileChange
from agent_server.agent.tools.output import count_lines
from agent_server.agent.tools.paths import (
    check_hard_links,
    display_path,
    file_info,
    make_parent_directories,
    resolve_in_workspace,
)
from agent_server.agent.tools.read import refuse_redacted, refuse_repeat_notes
from agent_server.errors import InvalidToolArgumentsError, ToolError
from agent_server.literal import as_pictures, from_pictures
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
                "description": "File path",
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

    async def preview(self, arguments: Mapping[str, Any], ctx: ToolContext) -> FileChange | None:
        """What the call would do to the file (as the editor holds it, when it does), for the
        permission question; None when it cannot be known: bad arguments, a path outside the
        workspace, a binary file."""
        try:
            # The question warns of hard links itself: the preview may show the file.
            return (await _planned(arguments, ctx, hard_links_allowed=True)).change
        except (ToolError, InvalidToolArgumentsError, OSError):
            return None

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        plan = await _planned(arguments, ctx, hard_links_allowed=ctx.hard_links_allowed)
        await asyncio.to_thread(make_parent_directories, plan.path, plan.shown)
        data = plan.content.encode("utf-8")
        await ctx.files.write_text(
            plan.path, plan.content, hard_links_allowed=ctx.hard_links_allowed
        )
        lines = count_lines(plan.content)
        verb = "Created" if plan.created else "Overwrote"
        details: dict[str, Any] = {
            "path": plan.shown,
            "created": plan.created,
            "bytes": len(data),
            "lines": lines,
        }
        if plan.change is not None:  # None: a binary or unreadable file, overwritten
            details["diff"] = plan.change.diff
            details["change"] = plan.change.to_json()
        return ToolResult.of_text(
            f"{verb} {plan.shown}: wrote {len(data)} bytes ({lines} lines).", details=details
        )


@dataclass(frozen=True, slots=True)
class _Plan:
    path: Path
    shown: str
    content: str
    created: bool
    change: FileChange | None


async def _planned(
    arguments: Mapping[str, Any], ctx: ToolContext, *, hard_links_allowed: bool
) -> _Plan:
    workspace = ctx.workspace
    path = resolve_in_workspace(workspace, str_arg(arguments, "path"))
    content = str_arg(arguments, "content")
    shown = display_path(workspace, path)
    info = file_info(path, shown)
    old: str | None = None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{shown} is a directory; give the path of a file inside it.")
        check_hard_links(info, shown, hard_links_allowed)
        with contextlib.suppress(UnicodeDecodeError, OSError):  # binary or unreadable
            old = await ctx.files.read_text(path, hard_links_allowed=hard_links_allowed)
    refuse_repeat_notes(content, old, shown)
    refuse_redacted(content, old, shown)
    if old is not None and as_pictures(old) != old and from_pictures(old) == old:
        # The file held control characters (read showed them as pictures, `␛`) and no
        # pictures: the content's pictures are those characters.
        content = from_pictures(content)
    created = info is None
    change = FileChange(shown, old, content) if created or old is not None else None
    return _Plan(path, shown, content, created, change)
