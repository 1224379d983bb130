"""The OpenAI Chat Completions API (and every OpenAI-compatible server): requests, streaming.

`build_request` is pure and deterministic: the same context and options give the same
parameters, tool arguments in canonical key order. Usage is normalised: `input` excludes
cached tokens, `cacheRead` is the cached tokens, `cacheWrite` what the provider reports
writing (models from GPT-5.6 on).

An answer is complete when the stream ends cleanly (the SDK stops at `[DONE]` or at the end of
the body) after a `finish_reason`, the usage chunk, or any output: some OpenAI-compatible
servers never send a `finish_reason` (an OpenRouter provider was seen sending a whole tool
call, the usage chunk and `[DONE]` with `finish_reason: null` in every chunk); the stop reason
is then read off the content (tool calls: `toolUse`, else `stop`). OpenAI itself always ends
with the usage chunk this provider asks for, so from OpenAI a stream without it was cut off.
A connection that breaks mid-way is an error of the transport, never a clean end: it is
retried. A server that ignores `stream: true` and answers with a whole completion (JSON) is
read as a stream of that one chunk.

Some servers at a base URL refuse `stream_options` (Mistral's API: a 422 "Extra inputs are
not permitted" at `body.stream_options`; Azure OpenAI before api-version 2024-09-01-preview: a
400 "Unrecognized request argument supplied: stream_options"). Such a refusal is answered by
asking once more without it, and the provider leaves it out from then on; usage then comes
from a chunk that carries it anyway (Mistral's last one), else there is none and the context
is estimated.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import openai
from openai import AsyncStream

from agent_server.llm.cost import priced_usage
from agent_server.llm.history import arguments_json, prepare_history
from agent_server.llm.messages import (
    AssistantMessage,
    Context,
    ImageContent,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserContent,
    UserMessage,
)
from agent_server.llm.models import ModelInfo, speaks_openai_extensions
from agent_server.llm.openai_client import (
    SHORT_CACHE_TTL,
    OpenAIClientProvider,
    cache_fields,
    data_url,
    write_retention,
)
from agent_server.llm.provider_errors import error_from_body
from agent_server.llm.provider_stream import EventDicts, run_provider_stream
from agent_server.llm.providers import OPENAI_CHAT
from agent_server.llm.stream import (
    CacheRetention,
    CallOptions,
    MessageAssembler,
    MessageDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    parse_tool_arguments,
)

API = OPENAI_CHAT.name

FINISH_REASONS: Mapping[str, StopReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "content_filter": "refusal",
}
# How near the window prompt and output must come for a `length` before the output limit to be
# the window filling (see `_cut_by_window`): servers count a template's tokens differently, and
# llama.cpp stops a token or two short of its window.
WINDOW_FILLED_SHARE = 0.99


# --- request building (pure) ----------------------------------------------------------------


def build_request(model: ModelInfo, context: Context, options: CallOptions) -> dict[str, Any]:
    """The exact parameters of a streaming Chat Completions call for `context`.

    `messages` comes last, so that the JSON of a request whose history only grew begins with
    the JSON of the request before it (up to its closing brackets).
    """
    params: dict[str, Any] = {"model": model.id}
    if context.tools:
        params["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": dict(tool.parameters),
                },
            }
            for tool in context.tools
        ]
        if options.tool_choice == "none":
            params["tool_choice"] = "none"
    max_tokens = options.max_tokens or model.max_output
    if speaks_openai_extensions(model):
        params["max_completion_tokens"] = max_tokens
    else:
        params["max_tokens"] = max_tokens
    if model.reasoning and options.thinking != "off":
        params["reasoning_effort"] = options.thinking
    # Chat Completions keeps `prompt_cache_options` entries 30 minutes only.
    params.update(cache_fields(model, options, SHORT_CACHE_TTL))
    params["stream"] = True
    params["stream_options"] = {"include_usage": True}
    messages: list[dict[str, Any]] = []
    if context.system_prompt:
        messages.append({"role": "system", "content": context.system_prompt})
    messages.extend(convert_messages(context.messages))
    params["messages"] = messages
    return params


def convert_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Neutral messages as Chat Completions messages.

    Thinking is not sent back (the API has no place for it). Tool results are `tool`
    messages; images in tool results follow them in one user message.
    """
    out: list[dict[str, Any]] = []
    pending_images: list[dict[str, Any]] = []

    def flush_images() -> None:
        if pending_images:
            out.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Images returned by the tools above:"},
                        *pending_images,
                    ],
                }
            )
            pending_images.clear()

    for message in prepare_history(messages):
        if isinstance(message, ToolResultMessage):
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id,
                    "content": message.text,
                }
            )
            pending_images.extend(
                _image_part(block) for block in message.content if isinstance(block, ImageContent)
            )
            continue
        flush_images()
        if isinstance(message, UserMessage):
            content = _user_content(message.content)
            if content:
                out.append({"role": "user", "content": content})
        elif isinstance(message, AssistantMessage):
            converted = _assistant_message(message)
            if converted is not None:
                out.append(converted)
    flush_images()
    return out


def _user_content(content: Sequence[UserContent]) -> str | list[dict[str, Any]]:
    if len(content) == 1 and isinstance(content[0], TextContent):
        return content[0].text
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        else:
            parts.append(_image_part(block))
    return parts


def _image_part(image: ImageContent) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": data_url(image.mime_type, image.data)}}


def _assistant_message(message: AssistantMessage) -> dict[str, Any] | None:
    text = "".join(block.text for block in message.content if isinstance(block, TextContent))
    calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": arguments_json(call.arguments)},
        }
        for call in message.tool_calls
    ]
    if not text and not calls:
        return None
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        out["tool_calls"] = calls
    return out


# --- usage ----------------------------------------------------------------------------------


def normalise_usage(usage: Mapping[str, Any], model: ModelInfo, retention: CacheRetention) -> Usage:
    """Chat Completions usage as neutral usage: prompt tokens split into uncached input,
    cache reads and cache writes (prompt_tokens counts all three)."""
    prompt = _int(usage.get("prompt_tokens"))
    output = _int(usage.get("completion_tokens"))
    details = usage.get("prompt_tokens_details")
    details = details if isinstance(details, Mapping) else {}
    # DeepSeek and some compatible servers report hits at the top level.
    cached = _int(details.get("cached_tokens")) or _int(usage.get("prompt_cache_hit_tokens"))
    written = _int(details.get("cache_write_tokens"))
    cached = min(cached, prompt)
    written = min(written, prompt - cached)
    short, long = (0, written) if retention == "long" else (written, 0)
    return priced_usage(
        model,
        input=prompt - cached - written,
        output=output,
        cache_read=cached,
        cache_write_short=short,
        cache_write_long=long,
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


# --- streaming ------------------------------------------------------------------------------


@dataclass
class _OpenCall:
    id: str
    name: str
    arguments: list[str] = field(default_factory=list)

    def arguments_text(self) -> str:
        """The JSON text of the call's arguments: its fragments joined, unless the last one
        is the whole arguments sent again (some vLLM tool parsers, GLM's and xlam's, flush
        them so at the end after streaming them): then that one. Only when the joined text is
        not JSON, the last fragment is an object and the earlier ones are its start, or the
        same object: arguments that are valid as sent are never changed."""
        joined = "".join(self.arguments)
        last = self.arguments[-1].strip() if self.arguments else ""
        if len(self.arguments) < 2 or not (last.startswith("{") and last.endswith("}")):
            return joined
        if _json_value(joined) is not None:
            return joined
        whole = _json_value(last)
        before = "".join(self.arguments[:-1]).strip()
        if isinstance(whole, dict) and (last.startswith(before) or _json_value(before) == whole):
            return last
        return joined


def _json_value(text: str) -> object | None:
    """The value of a JSON text; None when it is not one."""
    try:
        value: object = json.loads(text)
    except ValueError:
        return None
    return value


class _StreamedCalls:
    """The tool calls of one streamed answer, put together from their fragments.

    OpenAI sends a call's `id` and name in its first fragment and its `index` in every one.
    Compatible servers differ: Gemini's OpenAI layer, mistral.rs, SGLang and some proxies send
    no `index` (then a fragment with a new `id`, or without an id a second name, opens a call,
    and one without continues the last); some gateways (Ollama behind LiteLLM, dynamo) give
    parallel calls one `index` (a new `id` there opens another call); some name a call only
    after its first fragment. Merging two calls would run neither: their arguments would be
    one invalid JSON text.
    """

    def __init__(self) -> None:
        self.calls: list[_OpenCall] = []
        self._at_index: dict[int, _OpenCall] = {}

    def add(self, fragment: Mapping[str, Any]) -> list[StreamEvent]:
        """The events one `tool_calls` fragment of a delta makes: a start, arguments."""
        index = fragment.get("index")
        index = index if isinstance(index, int) and not isinstance(index, bool) else None
        given_id = _text(fragment.get("id"))
        function = fragment.get("function") or {}
        name = _text(function.get("name"))
        events: list[StreamEvent] = []
        call = self._continued(index, given_id, name)
        if call is None:
            call = _OpenCall(self._new_id(given_id), name)
            self.calls.append(call)
            if index is not None:
                self._at_index[index] = call
            events.append(ToolCallStart(call.id, call.name))
        elif name and not call.name:
            call.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            call.arguments.append(arguments)
            events.append(ToolCallDelta(call.id, arguments))
        return events

    def _continued(self, index: int | None, given_id: str, name: str) -> _OpenCall | None:
        """The open call a fragment continues; None when it opens a new one."""
        if index is not None:
            call = self._at_index.get(index)
            if call is not None and given_id and given_id != call.id and call.arguments:
                return None  # the index was given to another call
            return call
        if given_id:
            return next((call for call in self.calls if call.id == given_id), None)
        last = self.calls[-1] if self.calls else None
        if last is not None and name and last.name:
            return None  # a second name: another call
        return last

    def _new_id(self, given_id: str) -> str:
        """The fragment's id, unless missing or taken: the results must find their call."""
        taken = {call.id for call in self.calls}
        if given_id and given_id not in taken:
            return given_id
        number = len(self.calls)
        while f"call_{number}" in taken:
            number += 1
        return f"call_{number}"


class OpenAIChatProvider(OpenAIClientProvider):
    """The Chat Completions API through the official SDK (`AsyncOpenAI`)."""

    api = API
    # Set once the server at the base URL refused `stream_options` (see the module docstring).
    _refuses_stream_options = False

    def stream(
        self,
        model: ModelInfo,
        context: Context,
        options: CallOptions,
        assembler: MessageAssembler | None = None,
    ) -> AsyncIterator[StreamEvent]:
        params = build_request(model, context, options)
        if self._refuses_stream_options:
            del params["stream_options"]
        max_tokens = _int(params.get("max_completion_tokens") or params.get("max_tokens"))
        local = not speaks_openai_extensions(model)  # OpenAI refuses a prompt over the window
        where = replace(self._errors, model=model.id)

        async def post() -> AsyncStream[Any]:
            # The SDK's request with its events as plain JSON objects (see anthropic.py).
            stream: AsyncStream[Any] = await self._client.post(
                "/chat/completions",
                body=params,
                cast_to=object,
                stream=True,
                stream_cls=AsyncStream[object],
            )
            return stream

        async def open_stream() -> AsyncStream[Any]:
            try:
                return await post()
            except openai.APIStatusError as exc:
                if "stream_options" not in params or not self._refused_stream_options(exc):
                    raise
            self._refuses_stream_options = True
            del params["stream_options"]
            return await post()

        async def translate(
            events: EventDicts, assembler: MessageAssembler
        ) -> AsyncGenerator[StreamEvent, None]:
            calls = _StreamedCalls()
            finish: str | None = None
            usage: Mapping[str, Any] | None = None

            def emit(event: StreamEvent) -> StreamEvent:
                assembler.apply(event)
                return event

            async for chunk in events:
                if isinstance(chunk.get("error"), Mapping):
                    raise error_from_body(chunk["error"], where)
                if isinstance(chunk.get("usage"), Mapping):
                    usage = chunk["usage"]
                for choice in chunk.get("choices") or ():
                    # A whole completion (a server that does not stream) is one chunk whose
                    # choice has the message where a chunk's has the delta.
                    delta = choice.get("delta") or choice.get("message") or {}
                    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                    if isinstance(reasoning, str) and reasoning:
                        yield emit(ThinkingDelta(reasoning))
                    content = delta.get("content")
                    if isinstance(content, str) and content:
                        yield emit(TextDelta(content))
                    for fragment in delta.get("tool_calls") or ():
                        if isinstance(fragment, Mapping):
                            for event in calls.add(fragment):
                                yield emit(event)
                    if choice.get("finish_reason"):
                        finish = str(choice["finish_reason"])
            usage_asked = "stream_options" in params
            if not _complete(finish, usage, assembler.has_output, model, usage_asked):
                return  # cut off: run_provider_stream reports a dropped connection
            for call in calls.calls:
                arguments = parse_tool_arguments(call.arguments_text())
                yield emit(ToolCallEnd(ToolCall(call.id, call.name, arguments)))
            stop_reason = FINISH_REASONS.get(finish or "stop", "stop")
            if calls.calls and stop_reason == "stop":
                # Some servers say "stop" after tool calls, or nothing at all.
                stop_reason = "toolUse"
            if stop_reason == "length" and local and _cut_by_window(
                usage, max_tokens, model.context_window
            ):
                stop_reason = "contextOverflow"
            priced = (
                normalise_usage(usage, model, write_retention(options, SHORT_CACHE_TTL))
                if usage is not None
                else None
            )
            yield MessageDone(assembler.message(stop_reason, usage=priced, model=model.id, api=API))

        end = "its usage chunk and [DONE]" if speaks_openai_extensions(model) else "any answer"
        return run_provider_stream(
            open_stream,
            translate,
            where,
            end,
            model.context_window,
            assembler,
            error_event=self._error_event,
        )

    def _refused_stream_options(self, exc: openai.APIStatusError) -> bool:
        """Whether a server at a base URL refused the request for `stream_options`: a 400 or
        422 whose body names it (api.openai.com takes it; other refusals are not retried)."""
        if self._errors.base_url is None or exc.status_code not in (400, 422):
            return False
        return "stream_options" in str(exc.body)  # the body as the SDK read it


def _cut_by_window(usage: Mapping[str, Any] | None, max_tokens: int, window: int) -> bool:
    """Whether a `length` finish came before the output limit because the context window
    filled. llama.cpp's server (and Ollama with its context shift off) stop so when prompt and
    output reach their window, with the finish_reason of the output limit. A server's own cap
    on the output (llama-server's `-n`, a proxy's limit) stops below `max_tokens` too: when
    the usage says prompt and output stayed short of the `window`, that is what it was."""
    if usage is None or not isinstance(usage.get("completion_tokens"), int):
        return False
    output = _int(usage.get("completion_tokens"))
    if output >= max_tokens:
        return False
    prompt = usage.get("prompt_tokens")
    if not isinstance(prompt, int) or isinstance(prompt, bool):
        return True  # nothing says the prompt fit
    return prompt + output >= window * WINDOW_FILLED_SHARE


def _complete(
    finish: str | None,
    usage: Mapping[str, Any] | None,
    has_output: bool,
    model: ModelInfo,
    usage_asked: bool,
) -> bool:
    """Whether a stream that ended cleanly carried a whole answer (see the module docstring);
    `usage_asked`: the request had `stream_options` (a server that refused it sends none)."""
    if speaks_openai_extensions(model) and usage_asked:
        return usage is not None
    return finish is not None or usage is not None or has_output
