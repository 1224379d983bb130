"""The tool set: the default tools in their fixed order, and lookup by name.

The order and every spec are fixed: the tool list is part of the cached prompt prefix, so it
must be byte-identical from one request to the next.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_server.agent.tools.base import Tool, ToolResult
from agent_server.agent.tools.bash import BashTool
from agent_server.agent.tools.compact import CompactTool
from agent_server.agent.tools.edit import EditTool
from agent_server.agent.tools.find import FindTool
from agent_server.agent.tools.grep import GrepTool
from agent_server.agent.tools.ls import LsTool
from agent_server.agent.tools.plan import PlanTool
from agent_server.agent.tools.read import ReadTool
from agent_server.agent.tools.recall import RecallTool
from agent_server.agent.tools.remember import RememberTool
from agent_server.agent.tools.repo_map import RepoMapTool
from agent_server.agent.tools.write import WriteTool
from agent_server.llm.messages import ToolSpec

_DEFAULT_TOOLS: tuple[Tool, ...] = (
    ReadTool(),
    WriteTool(),
    EditTool(),
    LsTool(),
    FindTool(),
    GrepTool(),
    BashTool(),
    PlanTool(),
    RememberTool(),
    RecallTool(),
    CompactTool(),
)


# Offered after the others when the `tools.repoMap` setting asks for it (docs/tools.md).
REPO_MAP: Tool = RepoMapTool()


def default_tools(*, repo_map: bool = False) -> tuple[Tool, ...]:
    """read, write, edit, ls, find, grep, bash, plan, remember, recall, compact, and repo_map when
    asked for: always the same instances, in this order."""
    return (*_DEFAULT_TOOLS, REPO_MAP) if repo_map else _DEFAULT_TOOLS


def tool_specs(tools: Sequence[Tool]) -> tuple[ToolSpec, ...]:
    return tuple(tool.spec for tool in tools)


def find_tool(tools: Sequence[Tool], name: str) -> Tool | None:
    return next((tool for tool in tools if tool.spec.name == name), None)


def unknown_tool_result(name: str, tools: Sequence[Tool]) -> ToolResult:
    """The error result for a call to a tool that does not exist."""
    names = ", ".join(tool.spec.name for tool in tools)
    return ToolResult.error(f"There is no tool named {name!r}. The available tools are: {names}.")
