"""compact: the model asks for its history to be compacted, at a natural break.

A model that has finished a step of its task (and whose next step does not need the file
contents and outputs of the earlier ones) may ask. The harness decides: the request is kept
(the result's details carry COMPACTION_REQUEST_DETAIL, and the next call compacts, reason
"requested") only when the context is past REQUESTED_SHARE of the compaction threshold, where
a compaction pays for its summary call and for writing the smaller prefix again; below it, or
with automatic compaction off, the answer says so and nothing happens. Either way the call
marks a natural break (BREAK_DETAIL): past the threshold, a compaction waiting for one runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_server.agent.tools.base import ToolContext, ToolKind, ToolResult, optional_str_arg
from agent_server.context.trigger import BREAK_DETAIL, COMPACTION_REQUEST_DETAIL, REQUESTED_SHARE
from agent_server.llm.messages import ToolSpec

SPEC = ToolSpec(
    name="compact",
    description=(
        "At a natural break (a step done; the next needs none of its file contents or "
        "outputs), ask for the conversation to be summarised before your next step. Runs "
        f"only past {REQUESTED_SHARE:.0%} of the compaction threshold; the answer says."
    ),
    parameters={
        "type": "object",
        "properties": {
            "focus": {
                "type": "string",
                "description": "What the summary must keep (optional)",
            },
        },
        "required": [],
    },
)


class CompactTool:
    spec = SPEC
    read_only = True
    session_only = True  # acts on the session alone: never asked about (agent/permissions.py)
    kind: ToolKind = "other"

    def paths(self, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        return ()

    def title(self, arguments: Mapping[str, Any]) -> str:
        return "Ask for a compaction"

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        focus = (optional_str_arg(arguments, "focus") or "").strip() or None
        share = ctx.context_share()
        if share is None:
            return ToolResult.of_text(
                "Not compacted: automatic compaction is off in this session. Go on.",
                details={BREAK_DETAIL: True},
            )
        if share <= REQUESTED_SHARE:
            return ToolResult.of_text(
                f"Not compacted: the context is at {share:.0%} of the compaction threshold, "
                f"and a compaction pays only past {REQUESTED_SHARE:.0%}. Go on.",
                details={BREAK_DETAIL: True},
            )
        return ToolResult.of_text(
            f"The history will be compacted before your next step (the context is at "
            f"{share:.0%} of the compaction threshold): a summary, then the recent messages "
            "as they are. Go on with the next step.",
            details={BREAK_DETAIL: True, COMPACTION_REQUEST_DETAIL: {"focus": focus}},
        )
