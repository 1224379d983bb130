"""Small message builders for the session tests."""

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
