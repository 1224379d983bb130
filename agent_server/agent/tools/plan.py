"""plan: the model writes the task's plan, the whole list each time (as Claude Code's
TodoWrite and Codex's update_plan), in the Agent Client Protocol's plan entries (content,
status, priority).

The latest plan is shown live (an `agent/update` of kind `plan`, ACP's plan update, the
terminal), carried verbatim across compactions (context/carried.py), and a compaction's
summary names its step in progress.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast, get_args

from agent_server.agent.tools.base import ToolContext, ToolKind, ToolResult
from agent_server.errors import InvalidToolArgumentsError, ToolError
from agent_server.llm.messages import ToolSpec
from agent_server.session.entries import (
    PLAN_PRIORITIES,
    PLAN_STATUSES,
    PlanItem,
    PlanPriority,
    PlanStatus,
)

MAX_STEPS = 30
MAX_STEP_CHARS = 300

SPEC = ToolSpec(
    name="plan",
    description=(
        "Write the plan of a task of several steps: the whole list each time, replacing the "
        "previous one; each step pending, in_progress (one at a time) or completed. Update "
        "it as steps finish. The user sees it, and it is kept verbatim across compactions."
    ),
    parameters={
        "type": "object",
        "properties": {
            "entries": {
                "type": "array",
                "description": "Every step of the plan, in order",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string"},
                        "status": {"type": "string", "enum": list(get_args(PlanStatus))},
                        "priority": {"type": "string", "enum": list(get_args(PlanPriority))},
                    },
                    "required": ["content", "status"],
                },
            },
        },
        "required": ["entries"],
    },
)


class PlanTool:
    spec = SPEC
    read_only = True  # it changes nothing in the workspace
    session_only = True  # nor reads it: never asked about (agent/permissions.py)
    kind: ToolKind = "other"

    def paths(self, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        return ()

    def title(self, arguments: Mapping[str, Any]) -> str:
        entries = arguments.get("entries") if isinstance(arguments, Mapping) else None
        count = len(entries) if isinstance(entries, list) else 0
        return f"Plan: {count} step{'s' if count != 1 else ''}"

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        if ctx.memory is None:
            raise ToolError("plan is not available here: there is no session to plan in.")
        items = plan_items(arguments.get("entries"))
        ctx.memory.set_plan(items)
        done = sum(item.status == "completed" for item in items)
        current = next((item.content for item in items if item.status == "in_progress"), None)
        text = f"Plan updated: {done} of {len(items)} steps completed."
        if current:
            text += f" In progress: {current}"
        return ToolResult.of_text(text)


def plan_items(value: object) -> tuple[PlanItem, ...]:
    """The plan entries of a call, checked one by one (the argument check stops at the
    list)."""
    if not isinstance(value, list):
        raise InvalidToolArgumentsError("'entries' must be a list of steps")
    if len(value) > MAX_STEPS:
        raise InvalidToolArgumentsError(f"a plan has at most {MAX_STEPS} steps ({len(value)})")
    items = tuple(_item(number, entry) for number, entry in enumerate(value, 1))
    if sum(item.status == "in_progress" for item in items) > 1:
        raise InvalidToolArgumentsError("at most one step may be in_progress")
    return items


def _item(number: int, entry: object) -> PlanItem:
    if not isinstance(entry, Mapping):
        raise InvalidToolArgumentsError(f"step {number} must be an object {{content, status}}")
    content = entry.get("content")
    if not isinstance(content, str) or not content.strip() or len(content) > MAX_STEP_CHARS:
        raise InvalidToolArgumentsError(
            f"step {number} needs a content of 1 to {MAX_STEP_CHARS} characters"
        )
    status = entry.get("status")
    if status not in PLAN_STATUSES:
        raise InvalidToolArgumentsError(
            f"step {number}: status must be one of {', '.join(sorted(PLAN_STATUSES))}"
        )
    priority = entry.get("priority") or "medium"
    if priority not in PLAN_PRIORITIES:
        raise InvalidToolArgumentsError(
            f"step {number}: priority must be one of {', '.join(sorted(PLAN_PRIORITIES))}"
        )
    return PlanItem(content.strip(), cast(PlanStatus, status), cast(PlanPriority, priority))
