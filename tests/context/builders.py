"""Small message and entry builders for the context tests."""

from __future__ import annotations

from typing import Any

from agent_server.llm.messages import (
    AssistantMessage,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agent_server.session.entries import CompactionEntry, MessageEntry


def user(text: str) -> UserMessage:
    return UserMessage.of_text(text)


def assistant(
    text: str = "",
    *calls: ToolCall,
    stop: StopReason | None = None,
    usage: Usage | None = None,
    model: str = "",
) -> AssistantMessage:
    content: tuple[TextContent | ToolCall, ...] = ((TextContent(text),) if text else ()) + calls
    return AssistantMessage(
        content=content,
        stop_reason=stop or ("toolUse" if calls else "stop"),
        usage=usage,
        model=model,
    )


def call(call_id: str, name: str = "read", **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, arguments)


def result(
    call_id: str, text: str, name: str = "read", *, error: bool = False
) -> ToolResultMessage:
    return ToolResultMessage(call_id, name, (TextContent(text),), is_error=error)


def entries_of(*messages: object, start: int = 0) -> list[MessageEntry]:
    """A linear path of message entries with ids m0, m1, ..."""
    out: list[MessageEntry] = []
    parent: str | None = None
    for index, message in enumerate(messages, start):
        entry = MessageEntry(f"m{index}", parent, "2025-01-01T00:00:00.000Z", message)  # type: ignore[arg-type]
        out.append(entry)
        parent = entry.id
    return out


def compaction(
    entry_id: str,
    parent: str | None,
    first_kept: str | None,
    summary: str = "SUMMARY",
    split: str | None = None,
) -> CompactionEntry:
    return CompactionEntry(
        entry_id,
        parent,
        "2025-01-01T00:00:00.000Z",
        summary=summary,
        first_kept_entry_id=first_kept,
        tokens_before=1000,
        tokens_after=100,
        reason="threshold",
        split_turn_summary=split,
    )
