"""remember: the model pins a rule or a fact for the rest of the session (agent/memory.py).

A pinned text is carried verbatim across every compaction (context/carried.py), so the model
uses it for what must not be lost to a summary: a rule the user set, a decision taken, a
value later steps need. The user's own pins come from the editor or `/remember`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast, get_args

from agent_server.agent.tools.base import ToolContext, ToolKind, ToolResult, display_arg, str_arg
from agent_server.errors import ToolError
from agent_server.llm.messages import ToolSpec
from agent_server.session.entries import PIN_KINDS, PinKind

SPEC = ToolSpec(
    name="remember",
    description=(
        "Pin a rule or a fact for the rest of this session: it stays verbatim in your "
        "context however long the session gets, while older messages are summarised. Pin "
        "what must not be lost (a rule the user set, a decision, a value later steps need), "
        "one short sentence each."
    ),
    parameters={
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "The rule or fact, in one sentence"},
            "kind": {
                "type": "string",
                "enum": list(get_args(PinKind)),
                "description": "rule: to follow; fact: to know",
            },
        },
        "required": ["text", "kind"],
    },
)


class RememberTool:
    spec = SPEC
    read_only = True  # it changes nothing in the workspace
    session_only = True  # nor reads it: never asked about (agent/permissions.py)
    kind: ToolKind = "other"

    def paths(self, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        return ()

    def title(self, arguments: Mapping[str, Any]) -> str:
        return f"Remember: {display_arg(arguments, 'text')}"

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        if ctx.memory is None:
            raise ToolError("remember is not available here: there is no session to pin to.")
        kind = str_arg(arguments, "kind")
        if kind not in PIN_KINDS:
            raise ToolError(f"kind must be one of {', '.join(sorted(PIN_KINDS))}")
        pin = ctx.memory.pin(cast(PinKind, kind), str_arg(arguments, "text"), "model")
        return ToolResult.of_text(
            f"Pinned ({pin.kind}): it is kept verbatim for the rest of the session.",
            details={"pin": {"id": pin.id, "kind": pin.kind, "text": pin.text}},
        )
