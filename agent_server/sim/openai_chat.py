"""The OpenAI Chat Completions API: validation, rendering, responses and chunk streams.

Rendering, in prefix order: each tool (8 + JSON of its definition), then each message (4 +
its text; an assistant's tool calls 6 + name + arguments each; a tool message 4 + its text;
images 1600). Every tool and every message is one cache block.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_server.llm.models import ModelInfo, ModelRegistry
from agent_server.sim.cache import CacheUsage, OpenAICacheRequest, PromptBlock
from agent_server.sim.fields import FieldPath, FieldProblem, bracketed, get_field
from agent_server.sim.generation import Generation
from agent_server.sim.openai_cache_fields import (
    CHAT_CACHE_OPTIONS,
    CHAT_CACHE_TTLS,
    parse_cache_fields,
)
from agent_server.sim.openai_errors import (
    check_function,
    check_reasoning_effort,
    field_rejection,
    find_model,
    invalid,
)
from agent_server.sim.rejection import RequestRejected
from agent_server.sim.sse import sse_event
from agent_server.sim.tokenizer import count_tokens, split_tokens
from agent_server.sim.transcript import (
    ImagePart,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
    append_part,
    freeze,
)

IMAGE_TOKENS = 1600
_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
# The parameters of openai 3.57's chat CompletionCreateParams, plus `stream`.
_REQUEST_FIELDS = frozenset((
    "model", "messages", "stream", "stream_options", "audio", "frequency_penalty",
    "function_call", "functions", "logit_bias", "logprobs", "max_completion_tokens", "max_tokens",
    "metadata", "modalities", "moderation", "n", "parallel_tool_calls", "prediction",
    "presence_penalty", "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention",
    "reasoning_effort", "response_format", "safety_identifier", "seed", "service_tier", "stop",
    "store", "temperature", "tool_choice", "tools", "top_logprobs", "top_p", "user", "verbosity",
    "web_search_options",
))
_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length",
           "context_window": "length"}


@dataclass(frozen=True, slots=True)
class ChatRequest:
    model: ModelInfo
    max_tokens: int
    stream: bool
    include_usage: bool
    cache: OpenAICacheRequest
    blocks: tuple[PromptBlock, ...]
    transcript: Transcript

    @property
    def prompt_tokens(self) -> int:
        return sum(block.tokens for block in self.blocks)


def context_length_exceeded(prompt_tokens: int, window: int) -> RequestRejected:
    return invalid(
        f"This model's maximum context length is {window} tokens. However, your messages "
        f"resulted in {prompt_tokens} tokens. Please reduce the length of the messages.",
        "messages",
        "context_length_exceeded",
    )


def parse_request(body: Any, registry: ModelRegistry) -> ChatRequest:
    try:
        return _parse(body, registry)
    except FieldProblem as problem:
        raise field_rejection(problem) from None


@dataclass
class _Reading:
    """What is gathered while the messages are read: the transcript's parts, the system
    texts, and the tool calls still to be answered."""

    parts: list[tuple[Literal["user", "assistant"], list[Part]]] = field(default_factory=list)
    system: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # the last tool_calls not yet answered
    pending_at: int = -1
    answerable: list[str] = field(default_factory=list)


def _parse(body: Any, registry: ModelRegistry) -> ChatRequest:
    if not isinstance(body, dict):
        raise invalid("The request body must be a JSON object.")
    for key in body:
        if key not in _REQUEST_FIELDS:
            raise invalid(f"Unrecognized request argument supplied: {key}")
    model_id = get_field(body, "model", (), "string", required=True)
    messages = get_field(body, "messages", (), "list", required=True)
    stream = get_field(body, "stream", (), "boolean") or False
    options = get_field(body, "stream_options", (), "object") or {}
    include_usage = bool(options.get("include_usage", False))
    model = find_model(registry, model_id)
    check_reasoning_effort(model, body.get("reasoning_effort"), "reasoning_effort")
    cache = parse_cache_fields(body, model, CHAT_CACHE_TTLS, CHAT_CACHE_OPTIONS)
    max_tokens = _max_tokens(body, model)
    if not messages:
        raise invalid(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got "
            "an empty array instead.", "messages", "empty_array",
        )
    blocks, specs = _parse_tools(body)
    reading = _Reading()
    for m_index, message in enumerate(messages):
        blocks.append(_parse_message(message, m_index, reading))
    if reading.pending:
        raise _unanswered(reading.pending, reading.pending_at)
    transcript = Transcript(
        system="\n\n".join(reading.system), tools=tuple(specs), messages=freeze(reading.parts)
    )
    return ChatRequest(model=model, max_tokens=max_tokens, stream=stream,
                       include_usage=include_usage, cache=cache, blocks=tuple(blocks),
                       transcript=transcript)


def _parse_tools(body: Mapping[str, Any]) -> tuple[list[PromptBlock], list[ToolSpec]]:
    blocks: list[PromptBlock] = []
    specs: list[ToolSpec] = []
    for index, tool in enumerate(get_field(body, "tools", (), "list") or []):
        path: FieldPath = ("tools", index)
        if not isinstance(tool, dict):
            raise FieldProblem(path, "type", "object", tool)
        function = get_field(tool, "function", path, "object", required=True)
        name = get_field(function, "name", (*path, "function"), "string", required=True)
        parameters = function.get("parameters")
        check_function(name, parameters, f"tools[{index}].function")
        specs.append(ToolSpec(name, parameters if isinstance(parameters, dict) else {},
                              str(function.get("description") or "")))
        encoded = _canonical(tool)
        blocks.append(PromptBlock("tool|" + encoded, 8 + count_tokens(encoded)))
    return blocks, specs


def _parse_message(message: Any, m_index: int, reading: _Reading) -> PromptBlock:
    """One message, checked and added to `reading`; its prompt block."""
    path: FieldPath = ("messages", m_index)
    if not isinstance(message, dict):
        raise FieldProblem(path, "type", "object", message)
    role = get_field(message, "role", path, "string", required=True)
    if role not in _ROLES:
        raise invalid(
            f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', "
            "'function', 'tool', and 'developer'.", f"{bracketed(path)}.role", "invalid_value",
        )
    if role != "tool" and reading.pending:
        raise _unanswered(reading.pending, reading.pending_at)
    tokens = 4
    if role in ("system", "developer"):
        texts, extra = _content_text(message, path, required=True)
        reading.system.append("\n".join(texts))
        tokens += _tokens(texts) + extra
        reading.answerable = []
    elif role == "user":
        texts, extra = _content_text(message, path, required=True)
        for text in texts:
            append_part(reading.parts, "user", TextPart(text))
        if extra:
            append_part(reading.parts, "user", ImagePart())
        tokens += _tokens(texts) + extra
        reading.answerable = []
    elif role == "assistant":
        tokens += _assistant_message(message, path, m_index, reading)
    elif role == "tool":
        tokens += _tool_message(message, path, reading)
    else:
        raise invalid("The 'function' role is deprecated; use 'tool' messages instead.",
                      f"{bracketed(path)}.role", "invalid_value")
    return PromptBlock(f"{role}|{_canonical(message)}", tokens)


def _assistant_message(message: Mapping[str, Any], path: FieldPath, m_index: int,
                       reading: _Reading) -> int:
    """An assistant message's text and tool calls into `reading`; its tokens."""
    texts, extra = _content_text(message, path, required=False)
    tokens = _tokens(texts) + extra
    for text in texts:
        append_part(reading.parts, "assistant", TextPart(text))
    calls = get_field(message, "tool_calls", path, "list") or []
    if not texts and not calls:
        raise invalid(
            f"Invalid value for '{bracketed(path)}.content': expected a string, got null.",
            f"{bracketed(path)}.content", None,
        )
    ids: list[str] = []
    for c_index, call in enumerate(calls):
        c_path = (*path, "tool_calls", c_index)
        if not isinstance(call, dict):
            raise FieldProblem(c_path, "type", "object", call)
        call_id = get_field(call, "id", c_path, "string", required=True)
        function = get_field(call, "function", c_path, "object", required=True)
        name = get_field(function, "name", (*c_path, "function"), "string", required=True)
        arguments = get_field(function, "arguments", (*c_path, "function"), "string",
                              required=True)
        try:
            decoded = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            decoded = {}
        append_part(reading.parts, "assistant", ToolCallPart(
            call_id, name, decoded if isinstance(decoded, dict) else {}))
        tokens += 6 + count_tokens(name) + count_tokens(arguments)
        ids.append(call_id)
    reading.pending, reading.pending_at, reading.answerable = list(ids), m_index, list(ids)
    return tokens


def _tool_message(message: Mapping[str, Any], path: FieldPath, reading: _Reading) -> int:
    """A tool message, checked against the calls it may answer, into `reading`; its tokens."""
    if not reading.answerable:
        raise invalid(
            "Invalid parameter: messages with role 'tool' must be a response to a "
            "preceeding message with 'tool_calls'.", f"{bracketed(path)}.role", None,
        )
    call_id = get_field(message, "tool_call_id", path, "string", required=True)
    if call_id not in reading.answerable:
        raise invalid(
            f"Invalid parameter: 'tool_call_id' of '{call_id}' not found in "
            "'tool_calls' of previous message.", f"{bracketed(path)}.tool_call_id", None,
        )
    if call_id in reading.pending:
        reading.pending.remove(call_id)
    texts, extra = _content_text(message, path, required=True)
    append_part(reading.parts, "user", ToolResultPart(call_id, "\n".join(texts)))
    return _tokens(texts) + extra


def _max_tokens(body: Mapping[str, Any], model: ModelInfo) -> int:
    for key in ("max_completion_tokens", "max_tokens"):
        value = get_field(body, key, (), "integer")
        if value is None:
            continue
        if value < 1:
            raise invalid(
                f"Invalid '{key}': integer below minimum value. Expected a value >= 1, but got "
                f"{value} instead.", key, "integer_below_min_value",
            )
        if value > model.max_output:
            raise invalid(
                f"{key} is too large: {value}. This model supports at most {model.max_output} "
                f"completion tokens, whereas you provided {value}.", key, "invalid_value",
            )
        return int(value)
    return model.max_output


def _unanswered(pending: list[str], at: int) -> RequestRejected:
    return invalid(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to "
        "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(pending),
        f"messages.[{at}].role",
        None,
    )


def _content_text(
    message: Mapping[str, Any], path: FieldPath, *, required: bool
) -> tuple[list[str], int]:
    """(non-empty texts, extra tokens for images) of a message's content: a string or a list
    of parts."""
    content = message.get("content")
    if content is None:
        if required:
            raise FieldProblem((*path, "content"), "missing", "string")
        return [], 0
    if isinstance(content, str):
        return ([content] if content else []), 0
    if not isinstance(content, list):
        raise FieldProblem((*path, "content"), "type", "string", content)
    texts: list[str] = []
    extra = 0
    for index, part in enumerate(content):
        p_path = (*path, "content", index)
        if not isinstance(part, dict):
            raise FieldProblem(p_path, "type", "object", part)
        kind = part.get("type")
        if kind in ("text", "refusal"):
            texts.append(get_field(part, kind, p_path, "string", required=True))
        elif kind in ("image_url", "input_audio", "file"):
            extra += IMAGE_TOKENS
        else:
            raise invalid(
                f"Invalid value: '{kind}'. Supported values are: 'text', 'image_url', "
                "'input_audio', 'refusal', and 'file'.", f"{bracketed(p_path)}.type",
                "invalid_value",
            )
    return [text for text in texts if text], extra


def _tokens(texts: list[str]) -> int:
    return sum(count_tokens(text) for text in texts)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


# --- responses ------------------------------------------------------------------------------


def usage_json(usage: CacheUsage, generation: Generation) -> dict[str, Any]:
    prompt = usage.prompt_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": generation.output_tokens,
        "total_tokens": prompt + generation.output_tokens,
        "prompt_tokens_details": {
            "cached_tokens": usage.cache_read,
            "cache_write_tokens": usage.cache_write,
            "audio_tokens": 0,
        },
        "completion_tokens_details": {
            "reasoning_tokens": generation.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def finish_reason(generation: Generation) -> str:
    return _FINISH[generation.stop]


def _tool_calls(generation: Generation) -> list[dict[str, Any]]:
    return [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": _arguments(call.arguments)},
        }
        for call in generation.calls
    ]


def _arguments(arguments: Mapping[str, Any]) -> str:
    return json.dumps(dict(arguments), ensure_ascii=False)


def completion_json(completion_id: str, created: int, model_id: str, generation: Generation,
                    usage: CacheUsage) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": generation.text or None,
        "refusal": None,
        "annotations": [],
    }
    if generation.calls:
        message["tool_calls"] = _tool_calls(generation)
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model_id,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(generation),
                     "logprobs": None}],
        "usage": usage_json(usage, generation),
        "service_tier": "default",
        "system_fingerprint": "fp_agent_server_sim",
    }


def stream_chunks(completion_id: str, created: int, model_id: str, generation: Generation,
                  usage: CacheUsage, include_usage: bool) -> list[bytes]:
    """The `data:` lines of a streamed completion, ending with `data: [DONE]`."""
    chunks: list[bytes] = []

    def emit(delta: dict[str, Any], finish: str | None = None) -> None:
        chunk: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model_id,
            "service_tier": "default",
            "system_fingerprint": "fp_agent_server_sim",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            chunk["usage"] = None
        chunks.append(sse_event(None, chunk))

    emit({"role": "assistant", "content": "", "refusal": None})
    pieces = split_tokens(generation.text)
    for start in range(0, len(pieces), 8):
        emit({"content": "".join(pieces[start : start + 8])})
    for index, call in enumerate(generation.calls):
        emit({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                              "function": {"name": call.name, "arguments": ""}}]})
        encoded = _arguments(call.arguments)
        size = max(1, -(-len(encoded) // 4))
        for start in range(0, len(encoded), size):
            emit({"tool_calls": [{"index": index,
                                  "function": {"arguments": encoded[start : start + size]}}]})
    emit({}, finish_reason(generation))
    if include_usage:
        chunks.append(sse_event(None, {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model_id,
            "service_tier": "default",
            "system_fingerprint": "fp_agent_server_sim",
            "choices": [],
            "usage": usage_json(usage, generation),
        }))
    chunks.append(sse_event(None, "[DONE]"))
    return chunks
