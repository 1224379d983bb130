"""The OpenAI Responses API: stateless requests (`store: false`), streamed answers.

Nothing is stored server-side, so each request carries the whole conversation, reasoning
included: a reasoning model's reasoning items come back with their encrypted content
(`include: ["reasoning.encrypted_content"]`), are kept verbatim as the signature of a
thinking block, and are sent back inline in later requests. `build_request` is pure and
deterministic; usage is normalised as for Chat Completions.

A compaction request (`CallOptions.compaction`) goes to `POST /responses/compact` (the
standalone endpoint Codex's remote compaction uses): its `output`, the user messages and one
opaque, encrypted `compaction` item, is kept as returned (its raw JSON, not the SDK's
models) and sent back in place of what it summarised (a CompactionContent opening the
messages).

A server that ignores `stream: true` and answers with a whole `response` object (a JSON body;
the SDK's stream reads no event in it) is read as the events its stream would have been
(`_stream_of_response`), by the same translator.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from openai import AsyncStream

from agent_server.errors import ProviderError
from agent_server.llm.cost import priced_usage
from agent_server.llm.history import arguments_json, prepare_history
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
)
from agent_server.llm.models import ModelInfo, speaks_openai_extensions
from agent_server.llm.openai_client import (
    RESPONSES_LONG_CACHE_TTL,
    OpenAIClientProvider,
    cache_fields,
    data_url,
    write_retention,
)
from agent_server.llm.provider_errors import (
    ErrorContext,
    error_from_body,
    is_provider_failure,
    to_provider_error,
)
from agent_server.llm.provider_stream import EventDicts, run_provider_stream
from agent_server.llm.providers import OPENAI_RESPONSES
from agent_server.llm.stream import (
    CacheRetention,
    CallOptions,
    MessageAssembler,
    MessageDone,
    ProviderCompacted,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ThinkingSignature,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    parse_tool_arguments,
)

API = OPENAI_RESPONSES.name

INCOMPLETE_REASONS: Mapping[str, StopReason] = {
    "max_output_tokens": "length",
    "content_filter": "refusal",
}


# --- request building (pure) ----------------------------------------------------------------


def build_request(model: ModelInfo, context: Context, options: CallOptions) -> dict[str, Any]:
    """The exact parameters of a streaming Responses call for `context`.

    `input` comes last, so that the JSON of a request whose history only grew begins with
    the JSON of the request before it (up to its closing brackets).
    """
    params: dict[str, Any] = {"model": model.id}
    if context.system_prompt:
        params["instructions"] = context.system_prompt
    if context.tools:
        params["tools"] = [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": dict(tool.parameters),
                "strict": False,
            }
            for tool in context.tools
        ]
        if options.tool_choice == "none":
            params["tool_choice"] = "none"
    params["max_output_tokens"] = options.max_tokens or model.max_output
    params["store"] = False
    if model.reasoning:
        # Without an effort the model's default applies (none from GPT-5.1 on).
        effort = {} if options.thinking == "off" else {"effort": options.thinking}
        params["reasoning"] = {**effort, "summary": "auto"}
        params["include"] = ["reasoning.encrypted_content"]
    params.update(cache_fields(model, options, RESPONSES_LONG_CACHE_TTL))
    params["stream"] = True
    params["input"] = convert_messages(context.messages)
    return params


def convert_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Neutral messages as Responses input items, in order."""
    items: list[dict[str, Any]] = []
    for message in prepare_history(messages):
        if isinstance(message, AssistantMessage) and _compaction_of(message) is not None:
            compaction = _compaction_of(message)
            assert compaction is not None
            items.extend(dict(item) for item in compaction.items)  # as the API returned them
            message = AssistantMessage(message.content[1:], message.stop_reason, message.usage,
                                       message.model, message.api)
        if isinstance(message, UserMessage):
            content = _input_content(message.content)
            if content:
                items.append({"role": "user", "content": content})
        elif isinstance(message, ToolResultMessage):
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id,
                    "output": _tool_output(message),
                }
            )
        elif isinstance(message, AssistantMessage):
            items.extend(_assistant_items(message))
    return items


def _input_content(content: Sequence[UserContent]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "input_text", "text": block.text})
        else:
            parts.append(_input_image(block))
    return parts


def _input_image(image: ImageContent) -> dict[str, Any]:
    return {
        "type": "input_image",
        "image_url": data_url(image.mime_type, image.data),
        "detail": "auto",
    }


def _tool_output(message: ToolResultMessage) -> str | list[dict[str, Any]]:
    if not any(isinstance(block, ImageContent) for block in message.content):
        return message.text
    return _input_content(message.content)


def _assistant_items(message: AssistantMessage) -> list[dict[str, Any]]:
    same_api = message.api in ("", API)
    items: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            item = reasoning_item(block) if same_api else None
            if item is not None:
                items.append(item)
        elif isinstance(block, TextContent):
            if block.text:
                items.append({"role": "assistant", "content": block.text})
        elif isinstance(block, ToolCall):
            items.append(
                {
                    "type": "function_call",
                    "call_id": block.id,
                    "name": block.name,
                    "arguments": arguments_json(block.arguments),
                }
            )
    return items


def _compaction_of(message: AssistantMessage) -> CompactionContent | None:
    first = message.content[0] if message.content else None
    return first if isinstance(first, CompactionContent) and first.api == API else None


def build_compact_request(model: ModelInfo, context: Context, options: CallOptions
                          ) -> dict[str, Any]:
    """The parameters of a `POST /responses/compact` call for `context`: the same
    instructions and input as a turn's request, so that the cached prefix is read; no tools
    (the endpoint takes none)."""
    params: dict[str, Any] = {"model": model.id}
    if context.system_prompt:
        params["instructions"] = context.system_prompt
    params.update({key: value for key, value in cache_fields(
        model, options, RESPONSES_LONG_CACHE_TTL).items()
        if key in ("prompt_cache_key", "prompt_cache_retention", "prompt_cache_options")})
    params["input"] = convert_messages(context.messages)
    return params


def reasoning_item(block: ThinkingContent) -> dict[str, Any] | None:
    """The reasoning item kept as `block`'s signature, or None if it holds none."""
    if not block.signature:
        return None
    try:
        item = json.loads(block.signature)
    except json.JSONDecodeError:
        return None
    if not isinstance(item, dict) or item.get("type") != "reasoning":
        return None
    return item


def _signature_of(item: Mapping[str, Any]) -> str:
    """A reasoning item as stored: the fields the API takes back, canonical JSON."""
    kept = {key: item[key] for key in ("id", "type", "summary", "encrypted_content") if key in item}
    if item.get("content"):
        kept["content"] = item["content"]
    return json.dumps(kept, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


# --- usage ----------------------------------------------------------------------------------


def normalise_usage(usage: Mapping[str, Any], model: ModelInfo, retention: CacheRetention) -> Usage:
    """Responses usage as neutral usage (input_tokens counts cached and written tokens)."""
    total_input = _int(usage.get("input_tokens"))
    details = usage.get("input_tokens_details")
    details = details if isinstance(details, Mapping) else {}
    cached = min(_int(details.get("cached_tokens")), total_input)
    written = min(_int(details.get("cache_write_tokens")), total_input - cached)
    split = details.get("cache_write_tokens_details")
    if isinstance(split, Mapping) and (
        _int(split.get("ttl_30m_tokens")) + _int(split.get("ttl_12h_tokens")) == written
    ):
        short, long = _int(split.get("ttl_30m_tokens")), _int(split.get("ttl_12h_tokens"))
    elif retention == "long":
        short, long = 0, written
    else:
        short, long = written, 0
    return priced_usage(
        model,
        input=total_input - cached - written,
        output=_int(usage.get("output_tokens")),
        cache_read=cached,
        cache_write_short=short,
        cache_write_long=long,
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# --- streaming ------------------------------------------------------------------------------


class OpenAIResponsesProvider(OpenAIClientProvider):
    """The Responses API through the official SDK (`AsyncOpenAI`)."""

    api = API

    def stream(
        self,
        model: ModelInfo,
        context: Context,
        options: CallOptions,
        assembler: MessageAssembler | None = None,
    ) -> AsyncIterator[StreamEvent]:
        where = replace(self._errors, model=model.id)
        if options.compaction is not None:
            return self._compact(model, context, options, assembler or MessageAssembler(),
                                 where)
        params = build_request(model, context, options)

        async def open_stream() -> AsyncStream[Any]:
            # The SDK's request with its events as plain JSON objects (see anthropic.py).
            stream: AsyncStream[Any] = await self._client.post(
                "/responses",
                body=params,
                cast_to=object,
                stream=True,
                stream_cls=AsyncStream[object],
            )
            return stream

        end = "response.completed" if speaks_openai_extensions(model) else "a final event"
        return run_provider_stream(
            open_stream,
            lambda events, assembler: _translate(events, assembler, model, options, where),
            where,
            end,
            model.context_window,
            assembler,
            error_event=self._error_event,
            unstreamed=_stream_of_response,
        )

    async def _compact(
        self,
        model: ModelInfo,
        context: Context,
        options: CallOptions,
        assembler: MessageAssembler,
        where: ErrorContext,
    ) -> AsyncGenerator[StreamEvent, None]:
        """A compaction request: `POST /responses/compact` (not streamed); its output as one
        CompactionContent, kept as the raw JSON the API returned."""
        params = build_compact_request(model, context, options)
        try:
            raw = await self._client.responses.with_raw_response.compact(**params)
            body = json.loads(raw.http_response.text)
        except Exception as exc:
            if not is_provider_failure(exc):
                raise
            raise to_provider_error(exc, where) from exc
        output = body.get("output") if isinstance(body, Mapping) else None
        if not isinstance(output, list) or not any(
            isinstance(item, Mapping) and item.get("type") == "compaction" for item in output
        ):
            raise ProviderError("the compaction returned no compaction item", provider=API)
        event = ProviderCompacted(CompactionContent(API, tuple(output)))
        assembler.apply(event)
        yield event
        usage = body.get("usage")
        retention = write_retention(options, RESPONSES_LONG_CACHE_TTL)
        priced = normalise_usage(usage, model, retention) if isinstance(usage, Mapping) else None
        yield MessageDone(assembler.message("stop", usage=priced, model=model.id, api=API))


async def _translate(
    events: EventDicts,
    assembler: MessageAssembler,
    model: ModelInfo,
    options: CallOptions,
    where: ErrorContext,
) -> AsyncGenerator[StreamEvent, None]:
    """The Responses API's stream events as the provider-neutral ones."""
    call_ids: dict[str, str] = {}  # item id -> call id
    names: dict[str, str] = {}  # call id -> tool name
    ended: set[str] = set()

    def emit(event: StreamEvent) -> StreamEvent:
        assembler.apply(event)
        return event

    async for event in events:
        kind = event.get("type")
        if kind == "response.output_item.added":
            item = event.get("item") or {}
            if item.get("type") == "function_call":
                call_id = str(item.get("call_id") or item.get("id") or "")
                call_ids[str(item.get("id") or call_id)] = call_id
                names[call_id] = str(item.get("name") or "")
                yield emit(ToolCallStart(call_id, names[call_id]))
        elif kind == "response.output_text.delta":
            if event.get("delta"):
                yield emit(TextDelta(str(event["delta"])))
        elif kind in (
            "response.reasoning_summary_text.delta",
            "response.reasoning_text.delta",
        ):
            if event.get("delta"):
                yield emit(ThinkingDelta(str(event["delta"])))
        elif kind == "response.reasoning_summary_part.added":
            if _int(event.get("summary_index")) > 0:
                yield emit(ThinkingDelta("\n\n"))
        elif kind == "response.function_call_arguments.delta":
            delta_call = call_ids.get(str(event.get("item_id") or ""))
            if delta_call is not None and event.get("delta"):
                yield emit(ToolCallDelta(delta_call, str(event["delta"])))
        elif kind == "response.output_item.done":
            item = event.get("item") or {}
            if item.get("type") == "function_call":
                call_id = str(item.get("call_id") or item.get("id") or "")
                ended.add(call_id)
                arguments = parse_tool_arguments(str(item.get("arguments") or ""))
                name = str(item.get("name") or names.get(call_id, ""))
                yield emit(ToolCallEnd(ToolCall(call_id, name, arguments)))
            elif item.get("type") == "reasoning":
                yield emit(ThinkingSignature(_signature_of(item)))
        elif kind in ("response.completed", "response.incomplete"):
            response = event.get("response") or {}
            stop_reason: StopReason = "toolUse" if ended else "stop"
            if kind == "response.incomplete":
                details = response.get("incomplete_details") or {}
                stop_reason = INCOMPLETE_REASONS.get(str(details.get("reason")), "length")
            usage = response.get("usage")
            retention = write_retention(options, RESPONSES_LONG_CACHE_TTL)
            priced = (
                normalise_usage(usage, model, retention)
                if isinstance(usage, Mapping)
                else None
            )
            yield MessageDone(
                assembler.message(stop_reason, usage=priced, model=model.id, api=API)
            )
            return
        elif kind == "response.failed":
            response = event.get("response") or {}
            error = response.get("error")
            raise error_from_body(
                error if isinstance(error, Mapping) else {"message": "response failed"},
                where,
            )
        elif kind == "error":
            raise error_from_body(event, where)


def _stream_of_response(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The stream events of a whole `response` (the SDK's `Response`): for each output item
    `response.output_item.added`, the deltas of its text, reasoning (each summary part
    added) and arguments, `response.output_item.done`; then the event of its status
    (`response.completed`, `response.incomplete`, `response.failed`; none for another),
    numbered as a stream numbers them."""
    events: list[dict[str, Any]] = []
    output = response.get("output")
    for index, item in enumerate(output if isinstance(output, list) else ()):
        if isinstance(item, Mapping):
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": dict(item)})
            events += _item_deltas(item, index)
            events.append({"type": "response.output_item.done", "output_index": index,
                           "item": dict(item)})
    status = response.get("status")
    if status in ("completed", "incomplete", "failed"):
        events.append({"type": f"response.{status}", "response": dict(response)})
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def _item_deltas(item: Mapping[str, Any], index: int) -> list[dict[str, Any]]:
    """The delta events of one whole output item, as its stream sends them between its
    `added` and `done`."""
    where = {"item_id": item.get("id"), "output_index": index}
    kind = item.get("type")
    if kind == "function_call" and item.get("arguments"):
        return [{"type": "response.function_call_arguments.delta", **where,
                 "delta": item["arguments"]}]
    events: list[dict[str, Any]] = []
    if kind == "message":
        for part_index, part in enumerate(_parts(item.get("content"))):
            if part.get("type") == "output_text" and part.get("text"):
                events.append({"type": "response.output_text.delta", **where,
                               "content_index": part_index, "delta": part["text"],
                               "logprobs": []})
    elif kind == "reasoning":
        for summary_index, part in enumerate(_parts(item.get("summary"))):
            events.append({"type": "response.reasoning_summary_part.added", **where,
                           "summary_index": summary_index, "part": dict(part)})
            if part.get("text"):
                events.append({"type": "response.reasoning_summary_text.delta", **where,
                               "summary_index": summary_index, "delta": part["text"]})
        for content_index, part in enumerate(_parts(item.get("content"))):
            if part.get("type") == "reasoning_text" and part.get("text"):
                events.append({"type": "response.reasoning_text.delta", **where,
                               "content_index": content_index, "delta": part["text"]})
    return events


def _parts(value: object) -> list[Mapping[str, Any]]:
    """The objects of an item's list of parts (content, summary)."""
    return [part for part in value if isinstance(part, Mapping)] if isinstance(value, list) else []
