"""find: files (and directories) under a directory whose path matches a glob."""

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
    str_arg,
)
from agent_server.agent.tools.output import bound_output
from agent_server.agent.tools.paths import display_path, resolve_in_workspace
from agent_server.agent.tools.walk import compile_glob, walk_files
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
                "description": (
                    "Directory to search, relative to the workspace root (default: the root)"
                ),
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
        if not top.exists():
            raise ToolError(f"Directory not found: {shown_top}.")
        if not top.is_dir():
            raise ToolError(f"{shown_top} is a file, not a directory.")
        matcher = compile_glob(pattern)
        found: list[str] = []
        total = 0
        for path in walk_files(top, include_dirs=True):
            relative = path.relative_to(top).as_posix()
            if not matcher.fullmatch(relative):
                continue
            total += 1
            if len(found) < MAX_RESULTS:
                suffix = "/" if path.is_dir() else ""
                found.append(display_path(ctx.workspace, path) + suffix)
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
