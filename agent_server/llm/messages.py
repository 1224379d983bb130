"""Provider-neutral messages, content blocks, usage and cost.

These are the types a session stores and a provider turns into its own wire format. They are
frozen dataclasses: a message, once made, never changes (the ledger is append-only and the
request prefix must stay byte-identical). `to_json`/`from_json` give the one JSON form used by
the ledger and the editor protocol (camelCase keys).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, cast, get_args

StopReason: TypeAlias = Literal[
    "stop",  # the model finished its answer
    "length",  # the output hit max_tokens
    "toolUse",  # the model asks for tool calls
    "contextOverflow",  # the output was cut off by the context window
    # The provider paused a long-running turn (Anthropic `pause_turn`): sending the
    # conversation back with this message at its end lets the model continue.
    "pauseTurn",
    "refusal",  # the model declined
    "error",  # the call failed; `error_message` says why
    "aborted",  # the user interrupted; the content is what arrived before
]
STOP_REASONS: frozenset[str] = frozenset(get_args(StopReason))


# --- content blocks -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextContent:
    text: str
    type: Literal["text"] = "text"


# The image types every provider API takes (Anthropic's and OpenAI's common set).
IMAGE_TYPES: tuple[str, ...] = ("image/png", "image/jpeg", "image/gif", "image/webp")


def is_base64(data: str) -> bool:
    """Whether an image's data is base64, as every provider requires: an image that is not
    would fail every later request of the session, since the ledger keeps it."""
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


@dataclass(frozen=True, slots=True)
class ImageContent:
    data: str  # base64, without a data: prefix
    mime_type: str
    type: Literal["image"] = "image"


@dataclass(frozen=True, slots=True)
class ThinkingContent:
    thinking: str
    # The provider's opaque signature; Anthropic requires it back unchanged. For redacted
    # thinking the encrypted payload is kept here and `thinking` is empty.
    signature: str | None = None
    redacted: bool = False
    type: Literal["thinking"] = "thinking"


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: Mapping[str, Any]
    type: Literal["toolCall"] = "toolCall"

    def strings(self) -> str:
        """Every string the arguments hold (an edit's old and new text too), a line each."""
        out: list[str] = []

        def walk(value: Any) -> None:
            if isinstance(value, str):
                out.append(value)
            elif isinstance(value, Mapping):
                for inner in value.values():
                    walk(inner)
            elif isinstance(value, list | tuple):
                for inner in value:
                    walk(inner)

        walk(self.arguments)
        return "\n".join(out)


@dataclass(frozen=True, slots=True)
class CompactionContent:
    """A provider's own compaction, as it returned it: `items` are its JSON, sent back to the
    API that made it (`api`) unchanged, in place of the history it stands for (an Anthropic
    `compaction` block; OpenAI's user messages and `compaction` item). `summary` is its
    readable text ("" when the provider keeps it encrypted: then only that API can use it).
    It is only ever the first block of the projection's first message (context/projection.py)."""

    api: str
    items: tuple[Mapping[str, Any], ...]
    summary: str = ""
    type: Literal["compaction"] = "compaction"


UserContent: TypeAlias = TextContent | ImageContent
AssistantContent: TypeAlias = TextContent | ThinkingContent | ToolCall | CompactionContent


def canonical_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Tool arguments with keys sorted at every depth.

    Models stream arguments in whatever key order they like; a prefix that must be
    byte-identical across requests cannot depend on it.
    """
    return dict(json.loads(json.dumps(arguments, sort_keys=True, ensure_ascii=False)))


# --- usage and cost -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cost:
    """US dollars, per usage category."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0

    @property
    def total(self) -> float:
        return self.input + self.output + self.cache_read + self.cache_write

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
        )


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one model call, normalised across providers.

    `input` is the uncached input only; `cache_read` and `cache_write` are the cached parts;
    input + cache_read + cache_write + output = total_tokens, the size of the context after
    the call.
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: Cost = field(default_factory=Cost)

    @property
    def total_tokens(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    @property
    def prompt_tokens(self) -> int:
        return self.input + self.cache_read + self.cache_write

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.cost + other.cost,
        )


# --- messages -------------------------------------------------------------------------------


AttachmentKind: TypeAlias = Literal["file", "directory", "image"]


@dataclass(frozen=True, slots=True)
class Attachment:
    """What the first `blocks` content blocks of a prompt not yet claimed by an earlier
    attachment are: a workspace file, a folder's listing or an image the user mentioned
    (`@path`), attached for the model rather than typed. `detail` says what was attached
    ("120 lines", "14 entries", "lines 1-2000 of 5234") for display."""

    path: str
    kind: AttachmentKind
    blocks: int = 1
    detail: str = ""


@dataclass(frozen=True, slots=True)
class UserMessage:
    """A message in the user's role. `note` is None for what the user wrote; for a note the
    editor or the agent adds (an external edit, a branch summary) it names the kind, so that
    displays and summaries can tell it from a request. A prompt's `attachments` (its
    @-mentions) are its first content blocks; what the user typed follows them (`typed`)."""

    content: tuple[UserContent, ...]
    note: str | None = None
    attachments: tuple[Attachment, ...] = ()
    role: Literal["user"] = "user"

    @staticmethod
    def of_text(text: str) -> UserMessage:
        return UserMessage((TextContent(text),))

    @property
    def typed(self) -> tuple[UserContent, ...]:
        """The blocks the user typed or pasted, without the attachments before them."""
        return self.content[sum(a.blocks for a in self.attachments) :]


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    content: tuple[AssistantContent, ...]
    stop_reason: StopReason
    # The provider's bill for this call; None when the call produced none (an error before
    # the first byte, a synthetic message).
    usage: Usage | None = None
    model: str = ""
    api: str = ""
    error_message: str | None = None
    role: Literal["assistant"] = "assistant"

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(block for block in self.content if isinstance(block, ToolCall))

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content if isinstance(block, TextContent))


@dataclass(frozen=True, slots=True)
class ToolResultMessage:
    tool_call_id: str
    tool_name: str
    content: tuple[UserContent, ...]
    is_error: bool = False
    role: Literal["toolResult"] = "toolResult"
    # What the tool reported for the editor (a diff, line ranges): kept in the ledger so a
    # reloaded transcript shows what the live one did; never sent to a model as such (a
    # compaction carries a command's `ending`, output the model saw).
    details: Mapping[str, Any] | None = None

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content if isinstance(block, TextContent))


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage


# --- requests -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it: name, fixed description, JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Context:
    """What one model call is made of, in prefix order: tools, system prompt, messages."""

    system_prompt: str
    tools: tuple[ToolSpec, ...]
    messages: tuple[Message, ...]


# --- JSON form (ledger and wire) ------------------------------------------------------------


def calls_that_succeeded(
    messages: Sequence[Message],
) -> list[tuple[ToolCall, ToolResultMessage]]:
    """Each tool call in `messages` whose result is there and not an error, with that
    result, in the order of the results."""
    calls: dict[str, ToolCall] = {}
    out: list[tuple[ToolCall, ToolResultMessage]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            calls.update((call.id, call) for call in message.tool_calls)
        elif isinstance(message, ToolResultMessage) and not message.is_error:
            call = calls.get(message.tool_call_id)
            if call is not None:
                out.append((call, message))
    return out


class MessageFormatError(ValueError):
    """A stored or received message does not have the expected shape."""


def content_to_json(block: UserContent | AssistantContent) -> dict[str, Any]:
    """A block's JSON; a compaction's items as the provider returned them."""
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, ImageContent):
        return {"type": "image", "mimeType": block.mime_type, "data": block.data}
    if isinstance(block, CompactionContent):
        return {"type": "compaction", "api": block.api, "items": [dict(i) for i in block.items],
                "summary": block.summary}
    if isinstance(block, ThinkingContent):
        out: dict[str, Any] = {"type": "thinking", "thinking": block.thinking}
        if block.signature is not None:
            out["signature"] = block.signature
        if block.redacted:
            out["redacted"] = True
        return out
    return {"type": "toolCall", "id": block.id, "name": block.name, "arguments": block.arguments}


def content_from_json(data: Mapping[str, Any]) -> UserContent | AssistantContent:
    kind = data.get("type")
    if kind == "text":
        return TextContent(_str(data, "text"))
    if kind == "image":
        return ImageContent(data=_str(data, "data"), mime_type=_str(data, "mimeType"))
    if kind == "thinking":
        signature = data.get("signature")
        return ThinkingContent(
            thinking=_str(data, "thinking"),
            signature=signature if isinstance(signature, str) else None,
            redacted=bool(data.get("redacted", False)),
        )
    if kind == "compaction":
        items = data.get("items")
        if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
            raise MessageFormatError("compaction.items must be a list of objects")
        return CompactionContent(_str(data, "api"), tuple(items), str(data.get("summary", "")))
    if kind == "toolCall":
        arguments = data.get("arguments", {})
        if not isinstance(arguments, Mapping):
            raise MessageFormatError("toolCall.arguments must be an object")
        return ToolCall(
            id=_str(data, "id"), name=_str(data, "name"), arguments=canonical_arguments(arguments)
        )
    raise MessageFormatError(f"unknown content block type {kind!r}")


def usage_to_json(usage: Usage) -> dict[str, Any]:
    return {
        "input": usage.input,
        "output": usage.output,
        "cacheRead": usage.cache_read,
        "cacheWrite": usage.cache_write,
        "totalTokens": usage.total_tokens,
        "cost": {
            "input": usage.cost.input,
            "output": usage.cost.output,
            "cacheRead": usage.cost.cache_read,
            "cacheWrite": usage.cost.cache_write,
            "total": usage.cost.total,
        },
    }


def usage_from_json(data: Mapping[str, Any]) -> Usage:
    """MessageFormatError when a count or a cost is not a number."""
    cost = data.get("cost") or {}
    try:
        return Usage(
            input=int(data.get("input", 0)),
            output=int(data.get("output", 0)),
            cache_read=int(data.get("cacheRead", 0)),
            cache_write=int(data.get("cacheWrite", 0)),
            cost=Cost(
                input=float(cost.get("input", 0.0)),
                output=float(cost.get("output", 0.0)),
                cache_read=float(cost.get("cacheRead", 0.0)),
                cache_write=float(cost.get("cacheWrite", 0.0)),
            ),
        )
    except (TypeError, ValueError, AttributeError, OverflowError) as error:
        raise MessageFormatError(f"usage must hold numbers ({error})") from error


def message_to_json(message: Message) -> dict[str, Any]:
    if isinstance(message, UserMessage):
        user: dict[str, Any] = {
            "role": "user",
            "content": [content_to_json(b) for b in message.content],
        }
        if message.note is not None:
            user["note"] = message.note
        if message.attachments:
            user["attachments"] = [attachment_to_json(a) for a in message.attachments]
        return user
    if isinstance(message, ToolResultMessage):
        out: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": message.tool_call_id,
            "toolName": message.tool_name,
            "content": [content_to_json(b) for b in message.content],
        }
        if message.is_error:
            out["isError"] = True
        if message.details:
            out["details"] = dict(message.details)
        return out
    result: dict[str, Any] = {
        "role": "assistant",
        "content": [content_to_json(b) for b in message.content],
        "stopReason": message.stop_reason,
    }
    if message.usage is not None:
        result["usage"] = usage_to_json(message.usage)
    if message.model:
        result["model"] = message.model
    if message.api:
        result["api"] = message.api
    if message.error_message is not None:
        result["errorMessage"] = message.error_message
    return result


def message_from_json(data: Mapping[str, Any]) -> Message:
    role = data.get("role")
    blocks = data.get("content")
    if not isinstance(blocks, list):
        raise MessageFormatError("message.content must be a list")
    content = tuple(content_from_json(b) for b in blocks if isinstance(b, Mapping))
    if role == "user":
        note = data.get("note")
        user_content = _user_content(content)
        return UserMessage(
            user_content,
            note=note if isinstance(note, str) else None,
            attachments=_attachments(data.get("attachments"), len(user_content)),
        )
    if role == "toolResult":
        return ToolResultMessage(
            tool_call_id=_str(data, "toolCallId"),
            tool_name=str(data.get("toolName", "")),
            content=_user_content(content),
            is_error=bool(data.get("isError", False)),
            details=details if isinstance(details := data.get("details"), Mapping) else None,
        )
    if role == "assistant":
        stop_reason = data.get("stopReason", "stop")
        if stop_reason not in STOP_REASONS:
            raise MessageFormatError(f"unknown stopReason {stop_reason!r}")
        usage = data.get("usage")
        error_message = data.get("errorMessage")
        assistant_content = tuple(
            b for b in content
            if isinstance(b, TextContent | ThinkingContent | ToolCall | CompactionContent)
        )
        return AssistantMessage(
            content=assistant_content,
            stop_reason=stop_reason,
            usage=usage_from_json(usage) if isinstance(usage, Mapping) else None,
            model=str(data.get("model", "")),
            api=str(data.get("api", "")),
            error_message=error_message if isinstance(error_message, str) else None,
        )
    raise MessageFormatError(f"unknown message role {role!r}")


def attachment_to_json(attachment: Attachment) -> dict[str, Any]:
    out: dict[str, Any] = {"path": attachment.path, "kind": attachment.kind}
    if attachment.blocks != 1:
        out["blocks"] = attachment.blocks
    if attachment.detail:
        out["detail"] = attachment.detail
    return out


def _attachments(data: object, block_count: int) -> tuple[Attachment, ...]:
    if data is None:
        return ()
    if not isinstance(data, list):
        raise MessageFormatError("message.attachments must be a list")
    out: list[Attachment] = []
    for item in data:
        if not isinstance(item, Mapping):
            raise MessageFormatError("an attachment must be an object")
        kind = item.get("kind")
        if kind not in get_args(AttachmentKind):
            raise MessageFormatError(f"unknown attachment kind {kind!r}")
        blocks = item.get("blocks", 1)
        if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 0:
            raise MessageFormatError("attachment.blocks must be a count")
        detail = item.get("detail", "")
        out.append(
            Attachment(
                _str(item, "path"),
                cast(AttachmentKind, kind),
                blocks,
                detail if isinstance(detail, str) else "",
            )
        )
    if sum(a.blocks for a in out) > block_count:
        raise MessageFormatError("the attachments claim more blocks than the message has")
    return tuple(out)


def _user_content(content: tuple[UserContent | AssistantContent, ...]) -> tuple[UserContent, ...]:
    out: list[UserContent] = []
    for block in content:
        if not isinstance(block, TextContent | ImageContent):
            raise MessageFormatError(f"{block.type} blocks belong to assistant messages only")
        out.append(block)
    return tuple(out)


def _str(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise MessageFormatError(f"{key} must be a string")
    return value
