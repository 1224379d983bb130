"""Neutral stream events, the assembler that turns them into an assistant message, and the
`Provider` protocol every provider module implements.

A provider's `stream()` is an async iterator of events ending with exactly one `MessageDone`.
A failed call raises a `ProviderError` (agent_server.errors) instead; cancelling the consumer
closes the HTTP response. Each answer is assembled once, by the provider, into the assembler
the caller may pass: a caller that needs what arrived before a failure or a cancel passes its
own and reads it afterwards.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias, cast, get_args

from agent_server.errors import ConfigError
from agent_server.llm.messages import (
    AssistantContent,
    AssistantMessage,
    CompactionContent,
    Context,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
    canonical_arguments,
)
from agent_server.llm.models import ModelInfo

CacheRetention: TypeAlias = Literal["none", "short", "long"]
# How hard the model thinks before it answers, where the model can (providers.can_think):
# "off" sends nothing (the provider's default: no thinking on Anthropic); the others are
# Anthropic's effort or thinking budget, OpenAI's reasoning effort.
ThinkingLevel: TypeAlias = Literal["off", "low", "medium", "high"]
THINKING_LEVELS: tuple[str, ...] = get_args(ThinkingLevel)


def parse_thinking(value: str) -> ThinkingLevel:
    if value in THINKING_LEVELS:
        return cast(ThinkingLevel, value)
    raise ConfigError(
        f"Unknown thinking level {value!r}; use one of {', '.join(THINKING_LEVELS)}."
    )


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingSignature:
    """The signature of the thinking block in progress (Anthropic sends it at the end).

    A signature closes its thinking block: thinking that follows starts a new block. With
    `redacted`, the signature is the encrypted payload of a redacted thinking block (it may
    arrive with no thinking text at all). OpenAI Responses reasoning items travel the same
    way: the signature is the item, which must be sent back verbatim.
    """

    signature: str
    redacted: bool = False


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    id: str
    arguments_json: str  # a fragment of the arguments' JSON text


@dataclass(frozen=True, slots=True)
class ToolCallEnd:
    tool_call: ToolCall


@dataclass(frozen=True, slots=True)
class ProviderCompacted:
    """The provider compacted the conversation (a compaction request's answer): its block or
    items, as returned."""

    compaction: CompactionContent


@dataclass(frozen=True, slots=True)
class ContextEdited:
    """The provider cleared old tool results (or thinking) before the model read the request
    (Anthropic's context editing): how many, how many tokens, and what the call wrote to the
    cache (the prompt after the first cleared block is written again)."""

    cleared_tool_uses: int
    cleared_thinking_turns: int
    cleared_tokens: int
    cache_written: int


@dataclass(frozen=True, slots=True)
class MessageDone:
    message: AssistantMessage


StreamEvent: TypeAlias = (
    TextDelta | ThinkingDelta | ThinkingSignature | ToolCallStart | ToolCallDelta | ToolCallEnd
    | ProviderCompacted | ContextEdited | MessageDone
)


# How one request uses the session's prompt cache:
# - "write": reads what is cached and writes its own tail for the next request (every request
#   of the turn loop);
# - "read": reads what the previous request cached and writes nothing: the message breakpoint
#   stays where the previous request put its last one (a summary request, whose tail no later
#   request begins with);
# - "extend": as "read", for a request that is the previous request's messages plus one final
#   block (a summary instruction): the breakpoint sits on the block before that one, so all
#   of the previous request is read and only the final block is new;
# - "none": no cache marks at all (the "no caching" baseline, a one-off fresh prompt).
CacheUse: TypeAlias = Literal["write", "read", "extend", "none"]


@dataclass(frozen=True, slots=True)
class CallOptions:
    """How to make one model call, apart from what is in the context."""

    session_id: str = ""
    cache_retention: CacheRetention = "short"
    max_tokens: int | None = None  # None: the model's max output
    # "auto" lets the model choose; "none" forbids tool calls while keeping the tool list (and
    # so the cached prefix) unchanged.
    tool_choice: Literal["auto", "none"] = "auto"
    cache: CacheUse = "write"
    # Part of the prefix on Anthropic (a change re-reads the messages without the cache):
    # the calls that share a prefix share it.
    thinking: ThinkingLevel = "off"
    # A compaction request: the provider summarises the context itself (its answer is one
    # CompactionContent), for providers that can (llm/providers.py, WireApi.compaction).
    compaction: CompactionCall | None = None
    # The provider clears old tool results before the model reads the request (Anthropic's
    # context editing), for providers that can (WireApi.context_editing).
    clear_tool_results: ToolResultClearing | None = None


@dataclass(frozen=True, slots=True)
class CompactionCall:
    """What a compaction request asks: `instructions` replace the provider's own summary
    prompt (None: its default)."""

    instructions: str | None = None


@dataclass(frozen=True, slots=True)
class ToolResultClearing:
    """Clear the oldest tool results once the prompt passes `trigger` tokens, keeping the
    last `keep` tool uses, and only when at least `clear_at_least` tokens go."""

    trigger: int
    keep: int
    clear_at_least: int


class Provider(Protocol):
    """One provider API. Implementations: anthropic, openai_chat, openai_responses."""

    api: str

    def stream(
        self,
        model: ModelInfo,
        context: Context,
        options: CallOptions,
        assembler: MessageAssembler | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """The answer's events. `assembler`, when given, is the one the answer is assembled
        in (MessageDone's message comes from it); else the provider makes its own."""
        ...

    async def aclose(self) -> None: ...


class MessageAssembler:
    """Collects stream events into the content of an assistant message, in arrival order."""

    def __init__(self) -> None:
        self._blocks: list[AssistantContent | _OpenBlock] = []

    def apply(self, event: StreamEvent) -> None:
        match event:
            case TextDelta(text):
                self._open("text").parts.append(text)
            case ThinkingDelta(text):
                self._open("thinking").parts.append(text)
            case ThinkingSignature(signature, redacted):
                thinking = self._open("thinking")
                thinking.signature = signature
                thinking.redacted = redacted
            case ToolCallStart(call_id, name):
                self._blocks.append(_OpenBlock("toolCall", call_id=call_id, name=name))
            case ToolCallDelta(call_id, fragment):
                block = self._find_call(call_id)
                if block is not None:
                    block.parts.append(fragment)
            case ProviderCompacted(compaction):
                self._blocks.append(compaction)
            case ToolCallEnd(tool_call):
                for index, existing in enumerate(self._blocks):
                    if isinstance(existing, _OpenBlock) and existing.call_id == tool_call.id:
                        self._blocks[index] = tool_call
                        break
                else:
                    self._blocks.append(tool_call)
            case MessageDone() | ContextEdited():
                pass

    def content(self) -> tuple[AssistantContent, ...]:
        """The content so far; an unfinished tool call is dropped (it cannot be answered)."""
        out: list[AssistantContent] = []
        for block in self._blocks:
            if not isinstance(block, _OpenBlock):
                out.append(block)
            elif block.kind == "text":
                out.append(TextContent("".join(block.parts)))
            elif block.kind == "thinking":
                out.append(
                    ThinkingContent(
                        "".join(block.parts), signature=block.signature, redacted=block.redacted
                    )
                )
        return tuple(out)

    def message(
        self,
        stop_reason: StopReason,
        *,
        usage: Usage | None = None,
        model: str = "",
        api: str = "",
        error_message: str | None = None,
    ) -> AssistantMessage:
        return AssistantMessage(
            content=self.content(),
            stop_reason=stop_reason,
            usage=usage,
            model=model,
            api=api,
            error_message=error_message,
        )

    @property
    def has_output(self) -> bool:
        return bool(self._blocks)

    def _open(self, kind: Literal["text", "thinking"]) -> _OpenBlock:
        last = self._blocks[-1] if self._blocks else None
        # A signed thinking block is complete: what follows is a new block.
        if isinstance(last, _OpenBlock) and last.kind == kind and last.signature is None:
            return last
        block = _OpenBlock(kind)
        self._blocks.append(block)
        return block

    def _find_call(self, call_id: str) -> _OpenBlock | None:
        for block in reversed(self._blocks):
            if isinstance(block, _OpenBlock) and block.call_id == call_id:
                return block
        return None


class _OpenBlock:
    __slots__ = ("call_id", "kind", "name", "parts", "redacted", "signature")

    def __init__(self, kind: str, call_id: str = "", name: str = "") -> None:
        self.kind = kind
        self.call_id = call_id
        self.name = name
        self.parts: list[str] = []
        self.signature: str | None = None
        self.redacted = False


def parse_tool_arguments(text: str) -> dict[str, object]:
    """The complete JSON text of a tool call's arguments, canonicalised.

    Invalid JSON (a model that emitted garbage, or output cut off mid-call) becomes an empty
    object with the raw text kept under `_raw`, so the tool can report the problem.
    """
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {"_raw": text}
    if not isinstance(value, dict):
        return {"_raw": text}
    return canonical_arguments(value)
