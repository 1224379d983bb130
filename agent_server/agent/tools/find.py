"""find: files (and directories) under a directory whose path matches a glob, listed as
paths.listed_path shows them (a name with a control character quoted)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from agent_server.agent.tools.base import (
    ToolContext,
    ToolKind,
    ToolResult,
    display_arg,
    optional_str_arg,
    str_arg,
)
from agent_server.agent.tools.output import bound_output
from agent_server.agent.tools.paths import (
    display_path,
    listed_path,
    open_directory,
    resolve_in_workspace,
)
from agent_server.agent.tools.walk import compile_glob, walk_directory
from agent_server.errors import ToolError
from agent_server.llm.messages import ToolSpec

MAX_RESULTS = 1000

SPEC = ToolSpec(
    name="find",
    description=(
        "Find files in the workspace by glob pattern. A pattern without '/' matches file names "
        "at any depth ('*.py', 'test_*'); one with '/' matches the path relative to the "
        "searched directory ('src/**/*.ts'). '**' spans directories, '{a,b}' alternates. "
        "Directories match too and end with '/'. Skips .git, node_modules, .venv, __pycache__ "
        f"and similar. At most {MAX_RESULTS} results, as paths relative to the workspace root."
    ),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Glob pattern, e.g. '**/*.py'"},
            "path": {
                "type": "string",
                "description": "Directory to search (default: the workspace root)",
            },
        },
        "required": ["pattern"],
    },
)


class FindTool:
    spec = SPEC
    read_only = True
    kind: ToolKind = "search"

    def paths(self, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        return ()

    def title(self, arguments: Mapping[str, Any]) -> str:
        where = display_arg(arguments, "path")
        return f"Find {display_arg(arguments, 'pattern', '?')}" + (f" in {where}" if where else "")

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._find, arguments, ctx)

    def _find(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        pattern = str_arg(arguments, "pattern").strip()
        if not pattern:
            raise ToolError("pattern is empty. Give a glob such as '**/*.py'.")
        top = resolve_in_workspace(ctx.workspace, optional_str_arg(arguments, "path") or ".")
        shown_top = display_path(ctx.workspace, top)
        matcher = compile_glob(pattern)
        found: list[str] = []
        total = 0
        with _opened_directory(top, shown_top) as directory:  # walked as opened, no link followed
            for entry in walk_directory(directory, include_dirs=True):
                if not matcher.fullmatch(entry.relative):
                    continue
                total += 1
                if len(found) < MAX_RESULTS:
                    suffix = "/" if entry.is_dir else ""
                    shown = display_path(ctx.workspace, top / entry.relative)
                    found.append(listed_path(shown) + suffix)
        details = {"pattern": pattern, "path": shown_top, "matches": total}
        if not found:
            return ToolResult.of_text(
                f"No files match {pattern!r} under {shown_top}.", details=details
            )
        text = "\n".join(found)
        if total > len(found):
            text += (
                f"\n\n[{total - len(found)} more matches not shown ({total} in all). "
                "Narrow the pattern or the path.]"
            )
        bounded = bound_output(
            text, spill_dir=ctx.spill_dir, tool_name="find", secrets=ctx.secrets, limits=ctx.limits
        )
        return ToolResult.of_text(bounded.text, details={**details, **bounded.details()})


@contextlib.contextmanager
def _opened_directory(top: Path, shown: str) -> Iterator[int]:
    """The directory `top` (checked) opened without following a link, closed after."""
    try:
        fd = open_directory(top, shown)
    except FileNotFoundError:
        raise ToolError(f"Directory not found: {shown}.") from None
    except NotADirectoryError:
        raise ToolError(f"{shown} is a file, not a directory.") from None
    try:
        yield fd
    finally:
        os.close(fd)
