"""The coding tools the agent runs in the user's workspace (see docs/tools.md).

Run a call with `run_tool(tool, arguments, ctx)`; it validates, runs, bounds and scrubs, and
never raises except CancelledError.
"""

from agent_server.agent.tools.base import Tool, ToolContext, ToolKind, ToolResult
from agent_server.agent.tools.paths import display_path, resolve_in_workspace
from agent_server.agent.tools.registry import (
    default_tools,
    find_tool,
    tool_specs,
    unknown_tool_result,
)
from agent_server.agent.tools.runner import run_tool, scrub_result

__all__ = [
    "Tool",
    "ToolContext",
    "ToolKind",
    "ToolResult",
    "default_tools",
    "display_path",
    "find_tool",
    "resolve_in_workspace",
    "run_tool",
    "scrub_result",
    "tool_specs",
    "unknown_tool_result",
]
