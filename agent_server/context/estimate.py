"""How many tokens a context holds, without a tokenizer.

Invariant 3 of DESIGN.md: the last real `usage` the provider reported (the exact size of the
context after that call) plus chars/4 for the messages after it; never below the chars/4
estimate of the whole context; the chars/4 estimate alone when there is no usage, or when the
usage was measured before the latest compaction (the context it measured is gone).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from agent_server.llm.messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolSpec,
)

CHARS_PER_TOKEN = 4
# What an image costs, whatever its size (providers scale images to about this).
IMAGE_TOKENS = 1200


def _tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)  # rounded up


def message_chars(message: Message) -> int:
    """Characters that count for a message; an image counts as IMAGE_TOKENS * 4."""
    chars = 0
    if isinstance(message, AssistantMessage):
        for block in message.content:
            if isinstance(block, TextContent):
                chars += len(block.text)
            elif isinstance(block, ThinkingContent):
                # A redacted block carries its encrypted payload in `signature`.
                chars += len(block.signature or "") if block.redacted else len(block.thinking)
            elif isinstance(block, ToolCall):
                chars += len(block.name) + len(
                    json.dumps(block.arguments, ensure_ascii=False, separators=(",", ":"))
                )
        return chars
    for part in message.content:
        if isinstance(part, TextContent):
            chars += len(part.text)
        elif isinstance(part, ImageContent):
            chars += IMAGE_TOKENS * CHARS_PER_TOKEN
    return chars


def estimate_tokens(message: Message) -> int:
    """chars/4, rounded up, of one message's text, thinking, tool calls and tool results."""
    return _tokens(message_chars(message))


def estimate_tool_tokens(tool: ToolSpec) -> int:
    schema = json.dumps(tool.parameters, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return _tokens(len(tool.name) + len(tool.description) + len(schema))


def estimate_prefix_tokens(system_prompt: str, tools: tuple[ToolSpec, ...]) -> int:
    """The system prompt and the tool definitions."""
    return _tokens(len(system_prompt)) + sum(estimate_tool_tokens(t) for t in tools)


def estimate_full(context: Context) -> int:
    """chars/4 of everything: system prompt, tools, every message."""
    return estimate_prefix_tokens(context.system_prompt, context.tools) + sum(
        estimate_tokens(m) for m in context.messages
    )


def has_real_usage(message: Message) -> bool:
    """An assistant message carrying the provider's bill for a completed call."""
    return (
        isinstance(message, AssistantMessage)
        and message.usage is not None
        and message.usage.total_tokens > 0
        and message.stop_reason not in ("error", "aborted")
    )


def find_last_usage_index(messages: tuple[Message, ...], fresh_from: int = 0) -> int | None:
    """Index of the last message at or after `fresh_from` with real usage, if any."""
    for index in range(len(messages) - 1, max(fresh_from, 0) - 1, -1):
        if has_real_usage(messages[index]):
            return index
    return None


@dataclass(frozen=True, slots=True)
class ContextEstimate:
    """`tokens` is the number to compare with the threshold.

    `usage_tokens` is the provider's total at `last_usage_index` and `trailing_tokens` the
    chars/4 of the messages after it (both 0 and the index None when no usable usage exists);
    `full_estimate` is chars/4 of the whole context.
    """

    tokens: int
    usage_tokens: int
    trailing_tokens: int
    full_estimate: int
    last_usage_index: int | None

    @property
    def from_usage(self) -> bool:
        return self.last_usage_index is not None


def estimate_context_tokens(context: Context, *, fresh_from: int = 0) -> ContextEstimate:
    """The size of `context` per invariant 3.

    `fresh_from` is the index of the first message appended after the latest compaction
    (Projection.fresh_from): usage on messages before it measured a context that no longer
    exists, so it is ignored.
    """
    full = estimate_full(context)
    index = find_last_usage_index(context.messages, fresh_from)
    if index is None:
        return ContextEstimate(full, 0, 0, full, None)
    message = context.messages[index]
    assert isinstance(message, AssistantMessage)
    assert message.usage is not None
    usage = message.usage.total_tokens
    trailing = sum(estimate_tokens(m) for m in context.messages[index + 1 :])
    return ContextEstimate(max(usage + trailing, full), usage, trailing, full, index)
