"""The conversation as the simulated model reads it, whatever API it came through.

Each API module parses its request into a `Transcript`: user and assistant messages made of
text, thinking, tool calls and tool results. Tool results sit in user messages, as in the
Anthropic API (OpenAI `tool` messages and `function_call_output` items are grouped into one).
The responder and the summariser work on this view only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingPart:
    text: str


@dataclass(frozen=True, slots=True)
class ImagePart:
    pass


@dataclass(frozen=True, slots=True)
class ToolCallPart:
    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResultPart:
    tool_call_id: str
    text: str
    is_error: bool = False


Part: TypeAlias = TextPart | ThinkingPart | ImagePart | ToolCallPart | ToolResultPart


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the request declares: its name, its JSON schema for the arguments and its
    description."""

    name: str
    schema: Mapping[str, Any]
    description: str = ""


@dataclass(frozen=True, slots=True)
class TranscriptMessage:
    role: Literal["user", "assistant"]
    parts: tuple[Part, ...]

    @property
    def texts(self) -> list[str]:
        return [part.text for part in self.parts if isinstance(part, TextPart)]

    @property
    def tool_results(self) -> list[ToolResultPart]:
        return [part for part in self.parts if isinstance(part, ToolResultPart)]

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        return [part for part in self.parts if isinstance(part, ToolCallPart)]


@dataclass(frozen=True, slots=True)
class Transcript:
    system: str
    tools: tuple[ToolSpec, ...]
    messages: tuple[TranscriptMessage, ...]

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(tool.name for tool in self.tools)

    def tool_call(self, call_id: str) -> ToolCallPart | None:
        for message in self.messages:
            for call in message.tool_calls:
                if call.id == call_id:
                    return call
        return None

    def latest_prompt(self) -> str:
        """The text the user last typed: the last text of the last user message that is not
        only tool results, or "" when there is none."""
        for message in reversed(self.messages):
            if message.role != "user":
                continue
            if message.tool_results:
                continue
            texts = [text for text in message.texts if text.strip()]
            if texts:
                return texts[-1]
        return ""


def append_part(
    messages: list[tuple[Literal["user", "assistant"], list[Part]]],
    role: Literal["user", "assistant"],
    part: Part,
) -> None:
    """Add `part` to the last message if it has `role`, else open a new message."""
    if messages and messages[-1][0] == role:
        messages[-1][1].append(part)
    else:
        messages.append((role, [part]))


def freeze(
    messages: list[tuple[Literal["user", "assistant"], list[Part]]],
) -> tuple[TranscriptMessage, ...]:
    return tuple(TranscriptMessage(role=role, parts=tuple(parts)) for role, parts in messages)


def trailing_texts(message: TranscriptMessage) -> list[str]:
    """The non-blank texts of `message` after its last tool result: in a user turn that the API
    combined from several messages, what the user (or the client) said after the results."""
    texts: list[str] = []
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            texts = []
        elif isinstance(part, TextPart) and part.text.strip():
            texts.append(part.text)
    return texts


# A block a client adds around the user's words (Claude Code's <system-reminder>, Codex's
# <environment_context>): context, not a request.
_CONTEXT_BLOCK = re.compile(r"^<([a-z_-]+)>.*</\1>$", re.DOTALL)


def is_context_block(text: str) -> bool:
    return _CONTEXT_BLOCK.match(text.strip()) is not None
