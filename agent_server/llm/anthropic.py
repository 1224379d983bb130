"""The Anthropic Messages API: requests that keep the prompt cache warm, streamed answers.

`build_request` is pure: the same context and options give the same parameters, and so the
same bytes, every time. The prefix order is tools, system, messages; cache breakpoints
(invariant 2 of DESIGN.md) sit on

1. the last tool definition,
2. the end of the system prompt,
3. the last content block of the last user/tool-result message,
4. only when the last breakpoint lies more than 20 blocks after the previous request's (one
   step added many blocks, e.g. parallel tool calls, and the provider's 20-block lookback
   would miss the previous cache entry): the end of the user message the last assistant
   message answered, which is where the previous request put its breakpoint 3.

The provider's own context management (beta features, sent through the SDK's `betas`):
- on-demand compaction (`compaction: {type: "summarize"}`, beta `compact-2026-09-04`) when
  `CallOptions.compaction` asks: the answer is one signed `compaction` block, which later
  requests send back first, as it came (a CompactionContent opening the messages);
- context editing (`clear_tool_uses_20250919`, beta `context-management-2025-06-27`) when
  `CallOptions.clear_tool_results` asks; what it cleared comes back as ContextEdited.
Usage sums `usage.iterations` when the answer has them: a compaction's tokens are billed but
not in the top-level fields.

A proxy or compatible server that ignores `stream: true` and answers with a whole `message`
(a JSON body; the SDK's stream reads no event in it) is read as the events its stream would
have been (`_stream_of_message`), by the same translator.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import anthropic
from anthropic import AsyncStream

from agent_server.llm.cost import priced_usage
from agent_server.llm.credentials import PLACEHOLDER_API_KEY
from agent_server.llm.history import prepare_history
from agent_server.llm.messages import (
    AssistantMessage,
    CompactionContent,
    Context,
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserContent,
    UserMessage,
    canonical_arguments,
)
from agent_server.llm.models import ModelInfo
from agent_server.llm.provider_errors import ErrorContext
from agent_server.llm.provider_stream import EventDicts, SdkStream, run_provider_stream
from agent_server.llm.providers import ANTHROPIC_KEY, ANTHROPIC_MESSAGES, http_client_options
from agent_server.llm.stream import (
    CacheRetention,
    CacheUse,
    CallOptions,
    ContextEdited,
    MessageAssembler,
    MessageDone,
    ProviderCompacted,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ThinkingLevel,
    ThinkingSignature,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    parse_tool_arguments,
)

API = ANTHROPIC_MESSAGES.name
# How far back from a breakpoint the provider looks for an earlier cache entry, in blocks.
LOOKBACK_BLOCKS = 20
MAX_BREAKPOINTS = 4
# Anthropic rejects empty text blocks; an empty tool result or user text is sent as this.
EMPTY_TEXT = "(empty)"

STOP_REASONS: Mapping[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    # A long-running turn paused by the API: sending the answer back as it is continues it.
    "pause_turn": "pauseTurn",
    "max_tokens": "length",
    "model_context_window_exceeded": "contextOverflow",
    "tool_use": "toolUse",
    "refusal": "refusal",
    "compaction": "stop",  # a compaction request's answer: the compaction block alone
}
ON_DEMAND_COMPACTION_BETA = "compact-2026-09-04"
CONTEXT_EDITING_BETA = "context-management-2025-06-27"
CLEAR_TOOL_USES = "clear_tool_uses_20250919"


# --- request building (pure) ----------------------------------------------------------------


def cache_control(retention: CacheRetention) -> dict[str, str] | None:
    """The cache_control mark for a retention; None for `none`."""
    if retention == "none":
        return None
    if retention == "long":
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


# The thinking budget of each level for a model that thinks on a budget ("budget"), at most
# half the model's output limit (Claude Code's "think", "think hard" and "ultrathink" are 4k,
# 10k and 32k). The API takes 1024 at least, and less than max_tokens.
THINKING_BUDGETS: Mapping[ThinkingLevel, int] = {"low": 4_096, "medium": 10_000, "high": 32_000}
MIN_THINKING_BUDGET = 1024


def thinking_fields(
    model: ModelInfo, level: ThinkingLevel, max_tokens: int
) -> tuple[dict[str, Any], int]:
    """The request fields that ask `model` to think at `level`, and the max_tokens to send
    with them (a budget is part of max_tokens: a call that asks for less output than the
    budget gets the budget on top, within the model's limit). The same level gives the same
    fields on every call of a session, so that they share the cached messages."""
    if level == "off" or model.thinking is None:
        return {}, max_tokens
    if model.thinking == "adaptive":
        # Opus 4.7 and later omit the thinking text unless asked for its summary.
        return {
            "thinking": {"type": "adaptive", "display": "summarized"},
            "output_config": {"effort": level},
        }, max_tokens
    budget = min(THINKING_BUDGETS[level], model.max_output // 2)
    if budget < MIN_THINKING_BUDGET:
        return {}, max_tokens
    return (
        {"thinking": {"type": "enabled", "budget_tokens": budget}},
        min(model.max_output, max_tokens + budget),
    )


def build_request(model: ModelInfo, context: Context, options: CallOptions) -> dict[str, Any]:
    """The exact parameters of a streaming Messages API call for `context`."""
    mark = cache_control(options.cache_retention) if options.cache != "none" else None
    thinking, max_tokens = thinking_fields(
        model, options.thinking, options.max_tokens or model.max_output
    )
    params: dict[str, Any] = {
        "model": model.id,
        "max_tokens": max_tokens,
        "stream": True,
        **thinking,
    }
    if context.tools:
        tools = [
            {
                "name": tool.name,
                "description": tool.description,
                "input_schema": dict(tool.parameters),
            }
            for tool in context.tools
        ]
        if mark is not None:
            tools[-1]["cache_control"] = dict(mark)
        params["tools"] = tools
        if options.tool_choice == "none":
            params["tool_choice"] = {"type": "none"}
    if context.system_prompt:
        system: dict[str, Any] = {"type": "text", "text": context.system_prompt}
        if mark is not None:
            system["cache_control"] = dict(mark)
        params["system"] = [system]
    messages = convert_messages(context.messages)
    if mark is not None:
        for message_index, block_index in message_breakpoints(messages, options.cache):
            messages[message_index]["content"][block_index]["cache_control"] = dict(mark)
    params["messages"] = messages
    betas = _context_management(params, context, options)
    if betas:
        params["betas"] = betas
    return params


def _context_management(params: dict[str, Any], context: Context, options: CallOptions
                        ) -> list[str]:
    """The beta fields of the request (on-demand compaction, or context editing), added to
    `params`; the betas they need."""
    betas: list[str] = []
    if options.compaction is not None:
        compaction: dict[str, Any] = {"type": "summarize"}
        if options.compaction.instructions:
            compaction["instructions"] = options.compaction.instructions
        params["compaction"] = compaction
        betas.append(ON_DEMAND_COMPACTION_BETA)
    elif options.clear_tool_results is not None:
        clearing = options.clear_tool_results
        params["context_management"] = {"edits": [{
            "type": CLEAR_TOOL_USES,
            "trigger": {"type": "input_tokens", "value": clearing.trigger},
            "keep": {"type": "tool_uses", "value": clearing.keep},
            "clear_at_least": {"type": "input_tokens", "value": clearing.clear_at_least},
        }]}
        betas.append(CONTEXT_EDITING_BETA)
    if ON_DEMAND_COMPACTION_BETA not in betas and any(
        isinstance(block, CompactionContent) and block.api == API
        for message in context.messages if isinstance(message, AssistantMessage)
        for block in message.content
    ):
        betas.append(ON_DEMAND_COMPACTION_BETA)
    return betas


def message_breakpoints(
    messages: Sequence[Mapping[str, Any]], cache: CacheUse = "write"
) -> list[tuple[int, int]]:
    """(message, block) indexes of the API message blocks that get a cache breakpoint (at most
    two), for a request that uses the cache as `cache` says (see CacheUse).

    "write": the last block of the last user message always; and the last block of the user
    message the last assistant message answered (the previous request's breakpoint) when it
    lies more than LOOKBACK_BLOCKS blocks back.
    "read": only the previous request's breakpoint: the request reads what is cached and
    writes nothing.
    "extend": the block before the final one, where the previous request ended.
    """
    if cache == "none" or not messages:
        return []
    if cache == "extend" and messages[-1]["role"] == "user" and len(messages[-1]["content"]) > 1:
        return [(len(messages) - 1, len(messages[-1]["content"]) - 2)]
    user_indexes = [i for i, message in enumerate(messages) if message["role"] == "user"]
    if not user_indexes:
        return []
    last = user_indexes[-1]
    assistants = [i for i in range(last) if messages[i]["role"] == "assistant"]
    tail = cache == "write"
    if not assistants:
        return [(last, -1)] if tail else []
    previous = [i for i in user_indexes if i < assistants[-1]]
    if not tail:
        return [(index, -1) for index in previous[-1:]]
    if not previous:
        return [(last, -1)]
    ends = _block_ends(messages)
    if ends[last] - ends[previous[-1]] > LOOKBACK_BLOCKS:
        return [(previous[-1], -1), (last, -1)]
    return [(last, -1)]


def _block_ends(messages: Sequence[Mapping[str, Any]]) -> list[int]:
    """For each message, the position of its last content block in the whole message list."""
    ends: list[int] = []
    position = -1
    for message in messages:
        position += len(message["content"])
        ends.append(position)
    return ends


def convert_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Neutral messages as Messages API messages.

    Tool results and the user message after them become one user message, tool_result
    blocks first; thinking goes back with its signature (unsigned thinking, which the API
    would reject, is left out); tool arguments in canonical key order.
    """
    out: list[dict[str, Any]] = []
    # Blocks of the user message being gathered: tool results first, then the rest.
    results: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []

    def flush_user() -> None:
        if results or others:
            out.append({"role": "user", "content": [*results, *others]})
            results.clear()
            others.clear()

    for message in prepare_history(messages):
        if isinstance(message, ToolResultMessage):
            results.append(_tool_result_block(message))
        elif isinstance(message, UserMessage):
            others.extend(_user_blocks(message.content))
        elif isinstance(message, AssistantMessage):
            blocks = _assistant_blocks(message)
            if not blocks:
                continue
            flush_user()
            if out and out[-1]["role"] == "assistant":
                out[-1]["content"].extend(blocks)  # roles must alternate
            else:
                out.append({"role": "assistant", "content": blocks})
    flush_user()
    if out and out[-1]["role"] == "assistant":
        _trim_final_assistant(out)
    return out


def _trim_final_assistant(messages: list[dict[str, Any]]) -> None:
    """The API refuses a request that ends with an assistant message (a paused turn sent back
    to continue) whose text ends in whitespace: "messages: final assistant content cannot end
    with trailing whitespace". The trimmed text lies after the last cache breakpoint, so the
    cached prefix is the same either way."""
    blocks = messages[-1]["content"]
    last = blocks[-1]
    if last["type"] != "text":
        return
    text = last["text"].rstrip()
    if text:
        blocks[-1] = {**last, "text": text}
        return
    del blocks[-1]
    if not blocks:
        del messages[-1]


def _user_blocks(content: Sequence[UserContent]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            if block.text.strip():  # the API refuses empty and whitespace-only text
                blocks.append({"type": "text", "text": block.text})
        else:
            blocks.append(_image_block(block))
    return blocks


def _image_block(image: ImageContent) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": image.mime_type, "data": image.data},
    }


def _tool_result_block(message: ToolResultMessage) -> dict[str, Any]:
    content = _user_blocks(message.content) or [{"type": "text", "text": EMPTY_TEXT}]
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": content,
    }
    if message.is_error:
        block["is_error"] = True
    return block


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    same_api = message.api in ("", API)
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            # Signatures are only valid for the API (and model family) that made them.
            if not same_api or not block.signature:
                continue
            if block.redacted:
                blocks.append({"type": "redacted_thinking", "data": block.signature})
            else:
                blocks.append(
                    {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
                )
        elif isinstance(block, ToolCall):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": block.id,
                    "name": block.name,
                    "input": canonical_arguments(block.arguments),
                }
            )
        elif isinstance(block, CompactionContent) and block.api == API:
            blocks.extend(dict(item) for item in block.items)  # as the API returned it
    return blocks


# --- streaming ------------------------------------------------------------------------------


@dataclass
class _Block:
    kind: Literal["text", "thinking", "redacted_thinking", "tool_use", "compaction", "other"]
    tool_id: str = ""
    tool_name: str = ""
    arguments: str = ""  # the streamed JSON text of a tool call's input
    initial: str = ""  # a tool call's input as given in content_block_start
    signature: str = ""
    raw: dict[str, Any] | None = None  # a compaction block as received


@dataclass
class _UsageSoFar:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cache_write_5m: int | None = None
    cache_write_1h: int | None = None

    def update(self, usage: Mapping[str, Any]) -> None:
        iterations = usage.get("iterations")
        if isinstance(iterations, list) and iterations:
            # A compaction's tokens are only in the iterations: bill them all.
            self._add_iterations([i for i in iterations if isinstance(i, Mapping)])
            return
        self.input = _int(usage.get("input_tokens"), self.input)
        self.output = _int(usage.get("output_tokens"), self.output)
        self.cache_read = _int(usage.get("cache_read_input_tokens"), self.cache_read)
        self.cache_write = _int(usage.get("cache_creation_input_tokens"), self.cache_write)
        split = usage.get("cache_creation")
        if isinstance(split, Mapping):
            self.cache_write_5m = _int(split.get("ephemeral_5m_input_tokens"), 0)
            self.cache_write_1h = _int(split.get("ephemeral_1h_input_tokens"), 0)

    def _add_iterations(self, iterations: list[Mapping[str, Any]]) -> None:
        def total(key: str) -> int:
            return sum(_int(i.get(key), 0) for i in iterations)

        def split(key: str) -> int:
            return sum(_int((i.get("cache_creation") or {}).get(key), 0) for i in iterations)

        self.input = total("input_tokens")
        self.output = total("output_tokens")
        self.cache_read = total("cache_read_input_tokens")
        self.cache_write = total("cache_creation_input_tokens")
        self.cache_write_5m = split("ephemeral_5m_input_tokens")
        self.cache_write_1h = split("ephemeral_1h_input_tokens")

    def priced(self, model: ModelInfo, retention: CacheRetention) -> Usage:
        if (
            self.cache_write_5m is not None
            and self.cache_write_1h is not None
            and (self.cache_write_5m + self.cache_write_1h == self.cache_write)
        ):
            short, long = self.cache_write_5m, self.cache_write_1h
        elif retention == "long":
            short, long = 0, self.cache_write
        else:
            short, long = self.cache_write, 0
        return priced_usage(
            model,
            input=self.input,
            output=self.output,
            cache_read=self.cache_read,
            cache_write_short=short,
            cache_write_long=long,
        )


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


class AnthropicProvider:
    """The Anthropic Messages API through the official SDK (`AsyncAnthropic`).

    The SDK's own retries are off (`max_retries=0`): the agent layer retries with its own
    backoff and tells the user. `client_options` go to `AsyncAnthropic` (timeout,
    http_client, default_headers, ...).
    """

    api = API

    def __init__(
        self,
        api_key: str | None,
        base_url: str | None = None,
        *,
        api_key_env: str | None = ANTHROPIC_KEY.variable,
        provider_name: str = "Anthropic",
        **client_options: Any,
    ) -> None:
        client_options["max_retries"] = 0
        if "http_client" not in client_options:
            options = http_client_options(base_url)
            client_options["http_client"] = anthropic.DefaultAsyncHttpxClient(**options)
        key = api_key or PLACEHOLDER_API_KEY
        self._client = anthropic.AsyncAnthropic(api_key=key, base_url=base_url, **client_options)
        self._errors = ErrorContext(
            provider=provider_name,
            api_key_env=api_key_env,
            base_url=base_url,
            secrets=() if key == PLACEHOLDER_API_KEY else (key,),
        )

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        return self._client

    async def aclose(self) -> None:
        await self._client.close()

    def stream(
        self,
        model: ModelInfo,
        context: Context,
        options: CallOptions,
        assembler: MessageAssembler | None = None,
    ) -> AsyncIterator[StreamEvent]:
        params = build_request(model, context, options)

        async def open_stream() -> AsyncStream[Any]:
            # The SDK's request (auth, retries, errors); its body's events are read by
            # run_provider_stream as the JSON objects they arrive as: no typed model built
            # per event and converted back (most of a streamed answer's cost, issue 31). The beta
            # features go where the SDK's beta endpoint sends them, with their betas' header.
            betas = params.pop("betas", None)
            stream: AsyncStream[Any] = await self._client.post(
                "/v1/messages?beta=true" if betas else "/v1/messages",
                body=params,
                cast_to=object,
                options={"headers": {"anthropic-beta": ",".join(betas)}} if betas else {},
                stream=True,
                stream_cls=AsyncStream[object],
            )
            return stream

        def translate(
            events: EventDicts, assembler: MessageAssembler
        ) -> AsyncGenerator[StreamEvent, None]:
            return _translate(events, model, options, assembler)

        return run_provider_stream(
            open_stream,
            translate,
            replace(self._errors, model=model.id),
            "message_stop",
            model.context_window,
            assembler,
            error_event=self._error_event,
            unstreamed=_stream_of_message,
        )

    def _error_event(self, stream: SdkStream, event: str | None, data: Any) -> Exception | None:
        """An `error` event, as the SDK's stream raises it: its status error for the body; a
        JSON body instead of a stream (no event name) that is an error object, the same."""
        is_error_body = event is None and isinstance(data, Mapping) and data.get("type") == "error"
        if event != "error" and not is_error_body:
            return None
        response = stream.response
        message = (data if isinstance(data, str) else f"{data}") or (
            f"Error code: {response.status_code}"
        )
        # The SDK's own stream raises its client's `_make_status_error` (the status error
        # class for the body's type); a private name, so a later SDK without it still gives
        # the plain status error rather than an AttributeError.
        make = getattr(self._client, "_make_status_error", None)
        if callable(make):
            error = make(message, body=data, response=response)
            if isinstance(error, Exception):
                return error
        return anthropic.APIStatusError(message, response=response, body=data)


async def _translate(
    events: EventDicts,
    model: ModelInfo,
    options: CallOptions,
    assembler: MessageAssembler,
) -> AsyncGenerator[StreamEvent, None]:
    """SDK stream events to neutral events; ends with MessageDone once message_stop arrives."""
    blocks: dict[int, _Block] = {}
    usage = _UsageSoFar()
    stop_reason: StopReason = "stop"
    edited: Mapping[str, Any] | None = None

    def emit(event: StreamEvent) -> StreamEvent:
        assembler.apply(event)
        return event

    async for event in events:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            if isinstance(message.get("usage"), Mapping):
                usage.update(message["usage"])
        elif kind == "content_block_start":
            index = _int(event.get("index"), len(blocks))
            blocks[index], opening = _opened(event.get("content_block") or {})
            if opening is not None:
                yield emit(opening)
        elif kind == "content_block_delta":
            current = blocks.get(_int(event.get("index"), -1))
            delta = event.get("delta") or {}
            delta_type = delta.get("type")
            if current is None:
                continue
            if delta_type == "text_delta" and delta.get("text"):
                yield emit(TextDelta(str(delta["text"])))
            elif delta_type == "thinking_delta" and delta.get("thinking"):
                yield emit(ThinkingDelta(str(delta["thinking"])))
            elif delta_type == "signature_delta":
                current.signature += str(delta.get("signature", ""))
            elif delta_type == "compaction_delta" and current.raw is not None:
                # The whole block in one delta: what it carries replaces the start's.
                for key in ("content", "encrypted_content"):
                    if delta.get(key) is not None:
                        current.raw[key] = delta[key]
            elif delta_type == "input_json_delta" and current.kind == "tool_use":
                fragment = str(delta.get("partial_json", ""))
                if fragment:
                    current.arguments += fragment
                    yield emit(ToolCallDelta(current.tool_id, fragment))
        elif kind == "content_block_stop":
            current = blocks.get(_int(event.get("index"), -1))
            if current is None:
                continue
            if current.kind == "tool_use":
                yield emit(
                    ToolCallEnd(
                        ToolCall(
                            current.tool_id,
                            current.tool_name,
                            parse_tool_arguments(current.arguments or current.initial),
                        )
                    )
                )
            elif current.kind == "thinking" and current.signature:
                yield emit(ThinkingSignature(current.signature))
            elif current.kind == "redacted_thinking" and current.signature:
                yield emit(ThinkingSignature(current.signature, redacted=True))
            elif current.kind == "compaction" and current.raw is not None:
                summary = current.raw.get("content")
                yield emit(ProviderCompacted(CompactionContent(
                    API, (current.raw,), summary if isinstance(summary, str) else "")))
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            reason = delta.get("stop_reason")
            if isinstance(reason, str):
                stop_reason = STOP_REASONS.get(reason, "stop")
            if isinstance(event.get("usage"), Mapping):
                usage.update(event["usage"])
            if isinstance(event.get("context_management"), Mapping):
                edited = event["context_management"]
        elif kind == "message_stop":
            if edited is not None:
                cleared = _cleared(edited, usage.cache_write)
                if cleared is not None:
                    yield cleared
            priced = usage.priced(model, options.cache_retention)
            yield MessageDone(assembler.message(stop_reason, usage=priced, model=model.id, api=API))
            return


def _stream_of_message(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The stream events of a whole `message` (the SDK's `Message`, `BetaMessage`):
    `message_start` with its usage, each content block whole in its `content_block_start`
    (as a stream's start may carry it) and its `content_block_stop`, `message_delta` with the
    stop reason and the context edits, `message_stop`. A body of another type is no answer:
    no event (the stream counts as dropped)."""
    if message.get("type") != "message":
        return []
    start = {key: value for key, value in message.items() if key != "context_management"}
    start.update(content=[], stop_reason=None, stop_sequence=None)
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    content = message.get("content")
    for index, block in enumerate(content if isinstance(content, list) else ()):
        if isinstance(block, Mapping):
            events.append({"type": "content_block_start", "index": index,
                           "content_block": dict(block)})
            events.append({"type": "content_block_stop", "index": index})
    delta: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": message.get("stop_reason"),
                  "stop_sequence": message.get("stop_sequence")},
    }
    if isinstance(message.get("usage"), Mapping):
        delta["usage"] = message["usage"]
    if isinstance(message.get("context_management"), Mapping):
        delta["context_management"] = message["context_management"]
    events += [delta, {"type": "message_stop"}]
    return events


def _opened(block: Mapping[str, Any]) -> tuple[_Block, StreamEvent | None]:
    """A content block that starts, and the event its start already carries."""
    block_type = block.get("type")
    if block_type == "text":
        return _Block("text"), TextDelta(str(block["text"])) if block.get("text") else None
    if block_type == "thinking":
        thinking = ThinkingDelta(str(block["thinking"])) if block.get("thinking") else None
        return _Block("thinking", signature=str(block.get("signature") or "")), thinking
    if block_type == "redacted_thinking":
        return _Block("redacted_thinking", signature=str(block.get("data", ""))), None
    if block_type == "compaction":
        return _Block("compaction", raw=dict(block)), None
    if block_type == "tool_use":
        call = _Block("tool_use", tool_id=str(block.get("id", "")),
                      tool_name=str(block.get("name", "")))
        initial = block.get("input")
        if isinstance(initial, Mapping) and initial:
            call.initial = json.dumps(initial)
        return call, ToolCallStart(call.tool_id, call.tool_name)
    return _Block("other"), None


def _cleared(context_management: Mapping[str, Any], cache_written: int) -> ContextEdited | None:
    """What the edits the API applied cleared (`context_management.applied_edits`)."""
    edits = [e for e in context_management.get("applied_edits") or [] if isinstance(e, Mapping)]
    if not edits:
        return None
    return ContextEdited(
        cleared_tool_uses=sum(_int(e.get("cleared_tool_uses"), 0) for e in edits),
        cleared_thinking_turns=sum(_int(e.get("cleared_thinking_turns"), 0) for e in edits),
        cleared_tokens=sum(_int(e.get("cleared_input_tokens"), 0) for e in edits),
        cache_written=cache_written,
    )
