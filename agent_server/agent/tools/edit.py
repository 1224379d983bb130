"""edit: replace one exact, unique piece of text in a file."""

from __future__ import annotations

import re
import stat
from collections.abc import Mapping
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
from agent_server.agent.tools.paths import (
    check_hard_links,
    display_path,
    file_info,
    resolve_in_workspace,
)
from agent_server.agent.tools.read import refuse_redacted, refuse_repeat_notes
from agent_server.errors import InvalidToolArgumentsError, ToolError
from agent_server.literal import from_pictures
from agent_server.llm.messages import ToolSpec

SPEC = ToolSpec(
    name="edit",
    description=(
        "Edit a file in the workspace by replacing exact text: oldText must match the file "
        "exactly (including whitespace and indentation) and occur exactly once; include enough "
        "surrounding lines to make it unique. To create a file or replace all of it, use write."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "File path",
            },
            "oldText": {
                "type": "string",
                "description": "The exact text to replace",
            },
            "newText": {"type": "string", "description": "The text to put in its place"},
        },
        "required": ["path", "oldText", "newText"],
    },
)


class EditTool:
    spec = SPEC
    read_only = False
    kind: ToolKind = "edit"

    def paths(self, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        return path_of(arguments)

    def title(self, arguments: Mapping[str, Any]) -> str:
        return f"Edit {display_arg(arguments, 'path', '?')}"

    async def preview(self, arguments: Mapping[str, Any], ctx: ToolContext) -> FileChange | None:
        """What the call would do to the file (as the editor holds it, when it does), for the
        permission question; None when the edit would fail: the text is not found, or not
        once."""
        try:
            # The question warns of hard links itself: the preview may show the file.
            return (await _planned(arguments, ctx, hard_links_allowed=True))[1]
        except (ToolError, InvalidToolArgumentsError, OSError):
            return None

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        path, change, start, old_text, new_text = await _planned(
            arguments, ctx, hard_links_allowed=ctx.hard_links_allowed
        )
        await ctx.files.write_text(
            path, change.new_text, hard_links_allowed=ctx.hard_links_allowed
        )
        content = change.old_text or ""
        line = content.count("\n", 0, start) + 1
        old_lines = old_text.count("\n") + 1
        new_lines = new_text.count("\n") + 1
        return ToolResult.of_text(
            f"Edited {change.path}: replaced {old_lines} line{'s' if old_lines != 1 else ''} "
            f"at line {line} with {new_lines} line{'s' if new_lines != 1 else ''}.",
            details={
                "path": change.path,
                "line": line,
                "diff": change.diff,
                "change": change.to_json(),
            },
        )


async def _planned(
    arguments: Mapping[str, Any], ctx: ToolContext, *, hard_links_allowed: bool
) -> tuple[Path, FileChange, int, str, str]:
    """The file, its change, where the replaced text starts, and the texts as matched."""
    workspace = ctx.workspace
    path = resolve_in_workspace(workspace, str_arg(arguments, "path"))
    old_text = str_arg(arguments, "oldText")
    new_text = str_arg(arguments, "newText")
    shown = display_path(workspace, path)
    info = file_info(path, shown)
    if info is None:
        raise ToolError(f"File not found: {shown}. To create a new file, use write.")
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{shown} is a directory, not a file.")
    check_hard_links(info, shown, hard_links_allowed)
    if not old_text:
        raise ToolError(
            "oldText is empty. Give the exact text to replace; to create or "
            "replace a whole file, use write."
        )
    if old_text == new_text:
        raise ToolError("oldText and newText are the same; the edit would change nothing.")
    try:
        content = await ctx.files.read_text(path, hard_links_allowed=hard_links_allowed)
    except UnicodeDecodeError as exc:
        raise ToolError(f"{shown} is not a UTF-8 text file; it cannot be edited.") from exc
    refuse_repeat_notes(new_text, content, shown)
    refuse_redacted(new_text, content, shown)
    # read and grep show a control character as its picture (an ESC as `␛`): text copied
    # from them means the character itself, unless the file holds the picture as written.
    if old_text not in content and from_pictures(old_text) != old_text:
        old_text, new_text = from_pictures(old_text), from_pictures(new_text)
    # A file with Windows line endings, and text the model wrote with "\n": match anyway.
    crlf = "\r\n" in content and "\r\n" not in old_text and old_text not in content
    if crlf:
        old_text = _with_crlf(old_text)
    # The file's line breaks for the new lines too, when the file is all CRLF.
    if crlf or ("\r\n" in content and content.count("\n") == content.count("\r\n")):
        new_text = _with_crlf(new_text)
    starts = _occurrences(content, old_text)
    matches = len(starts)
    if matches == 0:
        raise ToolError(
            f"oldText was not found in {shown}. It must match the file exactly, including "
            "whitespace, indentation and line breaks. Read the file again and copy the text."
        )
    if matches > 1:
        raise ToolError(
            f"oldText occurs {matches} times in {shown} (at lines "
            f"{_match_lines(content, starts)}); it must be unique. Include more "
            "surrounding lines in oldText so that it matches one place only."
        )
    start = starts[0]
    updated = content[:start] + new_text + content[start + len(old_text) :]
    return path, FileChange(shown, content, updated), start, old_text, new_text


def _occurrences(content: str, text: str) -> list[int]:
    """Where `text` starts in `content`, overlapping occurrences included (`aa` is twice in
    `aaa`): an edit whose text overlaps a second copy of itself is as ambiguous as one with a
    separate copy."""
    starts: list[int] = []
    start = content.find(text)
    while start != -1:
        starts.append(start)
        start = content.find(text, start + 1)
    return starts


def _with_crlf(text: str) -> str:
    """`text` with every line break a CRLF (one already CRLF kept as it is)."""
    return re.sub(r"\r?\n", "\r\n", text)


def _match_lines(content: str, starts: list[int], shown: int = 10) -> str:
    lines = [content.count("\n", 0, start) + 1 for start in starts[:shown]]
    return ", ".join(str(n) for n in lines) + (", ..." if len(starts) > shown else "")
