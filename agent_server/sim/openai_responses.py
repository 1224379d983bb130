"""The OpenAI Responses API: validation, rendering, response objects and event streams.

Rendering, in prefix order: `instructions` (4 + text), each tool (8 + JSON of its definition),
then each input item (a message 4 + its text, a function_call 6 + name + arguments, a
function_call_output 5 + output, a reasoning item 2 + its summary). Every one is a cache block.
With `previous_response_id`, the stored input and output of that response come first.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_server.llm.models import ModelInfo, ModelRegistry
from agent_server.sim.cache import CacheUsage, OpenAICacheRequest, PromptBlock
from agent_server.sim.compaction import (
    handed_over,
    invalid_encrypted_content_message,
    seal,
    summary_tokens,
    unseal,
)
from agent_server.sim.fields import FieldPath, FieldProblem, bracketed, get_field
from agent_server.sim.generation import Generation
from agent_server.sim.openai_cache_fields import (
    RESPONSES_CACHE_OPTIONS,
    RESPONSES_CACHE_TTLS,
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
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
    append_part,
    freeze,
)

IMAGE_TOKENS = 1600
MIN_OUTPUT_TOKENS = 16
# The parameters of openai 3.57's ResponseCreateParams, plus `stream` and `client_metadata`
# (which Codex, OpenAI's own client, sends on every request to OpenAI's API).
_REQUEST_FIELDS = frozenset((
    "client_metadata",
    "model", "input", "stream", "stream_options", "access_programs", "background",
    "background_options", "context_management", "conversation", "image", "include",
    "instructions", "max_output_tokens", "max_tool_calls", "metadata", "moderation",
    "parallel_tool_calls", "previous_response_id", "prompt", "prompt_cache_key",
    "prompt_cache_options", "prompt_cache_retention", "reasoning", "safety_identifier",
    "service_tier", "store", "temperature", "text", "tool_choice", "tools", "top_logprobs",
    "top_p", "truncation", "user",
))
# The parameters of `POST /responses/compact` (openai 3.60's ResponseCompactParams).
COMPACT_FIELDS = frozenset((
    "model", "input", "instructions", "previous_response_id", "prompt_cache_key",
    "prompt_cache_options", "prompt_cache_retention", "safety_identifier", "image",
))


@dataclass(frozen=True, slots=True)
class ResponsesRequest:
    model: ModelInfo
    max_output_tokens: int
    stream: bool
    store: bool
    instructions: str | None
    tools: tuple[dict[str, Any], ...]
    tool_choice: Any
    reasoning: dict[str, Any] | None
    include_encrypted_reasoning: bool
    cache: OpenAICacheRequest
    previous_response_id: str | None
    items: tuple[dict[str, Any], ...]  # the full input, previous response's items included
    blocks: tuple[PromptBlock, ...]
    transcript: Transcript
    metadata: dict[str, Any] = field(default_factory=dict)
    # `context_management: [{type: "compaction", compact_threshold}]`: compact past it.
    compact_threshold: int | None = None
    # The user messages the model reads (those before the latest compaction item included),
    # as a compaction's output carries them forward.
    user_items: tuple[dict[str, Any], ...] = ()
    prefix_blocks: int = 0  # how many of `blocks` are the instructions and tools

    @property
    def prompt_tokens(self) -> int:
        return sum(block.tokens for block in self.blocks)

    @property
    def shows_reasoning_summary(self) -> bool:
        return bool(self.reasoning and self.reasoning.get("summary"))


def context_length_exceeded() -> RequestRejected:
    return invalid(
        "Your input exceeds the context window of this model. Please adjust your input and "
        "try again.",
        "input",
        "context_length_exceeded",
    )


PreviousLookup = Callable[[str], Sequence[dict[str, Any]] | None]


def parse_request(body: Any, registry: ModelRegistry, previous: PreviousLookup, *,
                  compact: bool = False) -> ResponsesRequest:
    """A `POST /responses` body, or with `compact` a `POST /responses/compact` one."""
    try:
        return _parse(body, registry, previous, COMPACT_FIELDS if compact else _REQUEST_FIELDS)
    except FieldProblem as problem:
        raise field_rejection(problem) from None


def _parse(body: Any, registry: ModelRegistry, previous: PreviousLookup,
           fields: frozenset[str]) -> ResponsesRequest:
    if not isinstance(body, dict):
        raise invalid("The request body must be a JSON object.")
    for key in body:
        if key not in fields:
            raise invalid(f"Unknown parameter: '{key}'.", key, "unknown_parameter")
    model_id = get_field(body, "model", (), "string", required=True)
    raw_input = body.get("input")
    if raw_input is None:
        raise FieldProblem(("input",), "missing", "list")
    if not isinstance(raw_input, str | list):
        raise FieldProblem(("input",), "type", "list", raw_input)
    stream = get_field(body, "stream", (), "boolean") or False
    store = get_field(body, "store", (), "boolean")
    instructions = get_field(body, "instructions", (), "string")
    reasoning = get_field(body, "reasoning", (), "object")
    include = get_field(body, "include", (), "list") or []
    previous_id = get_field(body, "previous_response_id", (), "string")
    metadata = get_field(body, "metadata", (), "object") or {}
    model = find_model(registry, model_id)
    check_reasoning_effort(model, (reasoning or {}).get("effort"), "reasoning.effort")
    cache = parse_cache_fields(body, model, RESPONSES_CACHE_TTLS, RESPONSES_CACHE_OPTIONS)
    max_output = _max_output(body, model)
    compact_threshold = _compact_threshold(body)
    items = _items(raw_input, previous_id, previous)
    blocks: list[PromptBlock] = []
    if instructions:
        blocks.append(PromptBlock("instructions|" + instructions, 4 + count_tokens(instructions)))
    tools, specs = _parse_tools(body, blocks)
    prefix_blocks = len(blocks)
    reading = _Reading(system=[instructions] if instructions else [])
    first_new = len(items) - (len(raw_input) if isinstance(raw_input, list) else 1)
    item_blocks: list[PromptBlock] = []
    for index, item in enumerate(items):
        path: FieldPath = ("input", max(index - first_new, 0))
        kind = item.get("type", "message")
        reading.item_parts.append([])
        tokens = _parse_item(item, kind, index, path, reading)
        item_blocks.append(PromptBlock(f"{kind}|{_canonical(_identity(item))}", tokens))
    for call_id in reading.calls:
        if call_id not in reading.answered:
            raise invalid(f"No tool output found for function call {call_id}.", "input", None)
    rendered = _rendered_items(items)
    parts: list[tuple[Literal["user", "assistant"], list[Part]]] = []
    for index in rendered:
        blocks.append(item_blocks[index])
        for role, part in reading.item_parts[index]:
            append_part(parts, role, part)
    transcript = Transcript(
        system="\n\n".join(reading.system), tools=tuple(specs), messages=freeze(parts)
    )
    return ResponsesRequest(
        model=model,
        max_output_tokens=max_output,
        stream=stream,
        store=store is not False,
        instructions=instructions,
        tools=tuple(tools),
        tool_choice=body.get("tool_choice", "auto"),
        reasoning=reasoning,
        include_encrypted_reasoning="reasoning.encrypted_content" in include,
        cache=cache,
        previous_response_id=previous_id,
        items=tuple(items),
        blocks=tuple(blocks),
        transcript=transcript,
        metadata=metadata,
        compact_threshold=compact_threshold,
        user_items=tuple(items[i] for i in rendered if _is_user_message(items[i])),
        prefix_blocks=prefix_blocks,
    )


def _compact_threshold(body: Mapping[str, Any]) -> int | None:
    """`context_management`: a list of entries; the one type there is, "compaction", with
    its `compact_threshold` (tokens of the rendered input)."""
    entries = get_field(body, "context_management", (), "list")
    threshold: int | None = None
    for index, entry in enumerate(entries or []):
        path: FieldPath = ("context_management", index)
        if not isinstance(entry, dict):
            raise FieldProblem(path, "type", "object", entry)
        kind = get_field(entry, "type", path, "string", required=True)
        if kind != "compaction":
            raise invalid(f"Invalid value: '{kind}'. Supported values are: 'compaction'.",
                          f"{bracketed(path)}.type", "invalid_value")
        for key in entry:
            if key not in ("type", "compact_threshold"):
                raise invalid(f"Unknown parameter: '{bracketed((*path, key))}'.",
                              bracketed((*path, key)), "unknown_parameter")
        value = get_field(entry, "compact_threshold", path, "integer")
        if value is not None and value < 1:
            raise invalid(
                f"Invalid '{bracketed((*path, 'compact_threshold'))}': integer below minimum "
                f"value. Expected a value >= 1, but got {value} instead.",
                bracketed((*path, "compact_threshold")), "integer_below_min_value",
            )
        if threshold is not None:
            raise invalid("Only one 'compaction' entry is supported in 'context_management'.",
                          "context_management", "invalid_value")
        threshold = value if value is not None else 0
    return threshold


def _is_user_message(item: Mapping[str, Any]) -> bool:
    return item.get("type", "message") == "message" and item.get("role") == "user"


def _rendered_items(items: Sequence[Mapping[str, Any]]) -> list[int]:
    """The indexes of the items the model reads. A compaction item stands for what came
    before it, except the user's messages (a compaction's output is "all user messages,
    followed by a single compaction item"): the items before the latest one are left out,
    those messages aside."""
    latest = max((i for i, item in enumerate(items) if item.get("type") == "compaction"),
                 default=None)
    if latest is None:
        return list(range(len(items)))
    return [i for i, item in enumerate(items) if i >= latest or _is_user_message(item)]


def _max_output(body: Mapping[str, Any], model: ModelInfo) -> int:
    max_output = get_field(body, "max_output_tokens", (), "integer")
    if max_output is None:
        return model.max_output
    if max_output < MIN_OUTPUT_TOKENS:
        raise invalid(
            "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= "
            f"{MIN_OUTPUT_TOKENS}, but got {max_output} instead.", "max_output_tokens",
            "integer_below_min_value",
        )
    if max_output > model.max_output:
        raise invalid(
            f"max_output_tokens is too large: {max_output}. This model supports at most "
            f"{model.max_output} output tokens, whereas you provided {max_output}.",
            "max_output_tokens", "invalid_value",
        )
    return int(max_output)


def _items(raw_input: str | list[Any], previous_id: str | None, previous: PreviousLookup
           ) -> list[dict[str, Any]]:
    """The input items, after those of the stored response it continues, if any."""
    items: list[dict[str, Any]] = []
    if previous_id is not None:
        stored = previous(previous_id)
        if stored is None:
            raise invalid(f"Previous response with id '{previous_id}' not found.",
                          "previous_response_id", "previous_response_not_found")
        items.extend(stored)
    if isinstance(raw_input, str):
        items.append({"type": "message", "role": "user", "content": raw_input})
    else:
        for index, item in enumerate(raw_input):
            if not isinstance(item, dict):
                raise FieldProblem(("input", index), "type", "object", item)
            items.append(item)
    return items


def _parse_tools(body: Mapping[str, Any], blocks: list[PromptBlock]
                 ) -> tuple[list[dict[str, Any]], list[ToolSpec]]:
    tools: list[dict[str, Any]] = []
    specs: list[ToolSpec] = []
    for index, tool in enumerate(get_field(body, "tools", (), "list") or []):
        path: FieldPath = ("tools", index)
        if not isinstance(tool, dict):
            raise FieldProblem(path, "type", "object", tool)
        kind = get_field(tool, "type", path, "string", required=True)
        if kind == "function":
            parameters = tool.get("parameters")
            name = get_field(tool, "name", path, "string", required=True)
            check_function(name, parameters, f"tools[{index}]")
            specs.append(ToolSpec(name, parameters if isinstance(parameters, dict) else {},
                                  str(tool.get("description") or "")))
        tools.append(tool)
        encoded = _canonical(tool)
        blocks.append(PromptBlock("tool|" + encoded, 8 + count_tokens(encoded)))
    return tools, specs


@dataclass
class _Reading:
    """What is gathered while the input items are read."""

    system: list[str]
    # What the model reads of each item, by item index.
    item_parts: list[list[tuple[Literal["user", "assistant"], Part]]] = field(
        default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)  # call_id -> item index
    answered: set[str] = field(default_factory=set)

    def add(self, role: Literal["user", "assistant"], part: Part) -> None:
        self.item_parts[-1].append((role, part))


def _parse_item(item: Mapping[str, Any], kind: str, index: int, path: FieldPath,
                reading: _Reading) -> int:
    """One input item, checked and added to `reading`; its tokens."""
    if kind == "message":
        return _message_item(item, path, reading)
    if kind == "function_call":
        call_id = get_field(item, "call_id", path, "string", required=True)
        name = get_field(item, "name", path, "string", required=True)
        arguments = get_field(item, "arguments", path, "string", required=True)
        try:
            decoded = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            decoded = {}
        reading.calls[call_id] = index
        reading.add("assistant",
                    ToolCallPart(call_id, name, decoded if isinstance(decoded, dict) else {}))
        return 6 + count_tokens(name) + count_tokens(arguments)
    if kind == "function_call_output":
        return _output_item(item, path, reading)
    if kind == "compaction":
        token = get_field(item, "encrypted_content", path, "string", required=True)
        carried = unseal(token)
        if carried is None:
            raise invalid(invalid_encrypted_content_message(token), "input",
                          "invalid_encrypted_content")
        reading.add("user", handed_over(carried))
        return summary_tokens(carried)
    if kind == "reasoning":
        summary = item.get("summary") or []
        text = "\n".join(str(s.get("text", "")) for s in summary if isinstance(s, dict))
        if text:
            reading.add("assistant", ThinkingPart(text))
        return 2 + count_tokens(text)
    raise invalid(
        f"Invalid value: '{kind}'. This simulator supports input items of type "
        "'message', 'function_call', 'function_call_output', 'reasoning' and 'compaction'.",
        f"{bracketed(path)}.type", "invalid_value",
    )


def _message_item(item: Mapping[str, Any], path: FieldPath, reading: _Reading) -> int:
    role = get_field(item, "role", path, "string", required=True)
    if role not in ("user", "assistant", "system", "developer"):
        raise invalid(
            f"Invalid value: '{role}'. Supported values are: 'assistant', 'system', "
            "'developer', and 'user'.", f"{bracketed(path)}.role", "invalid_value",
        )
    texts, extra = _content_text(item, path)
    if role in ("system", "developer"):
        reading.system.append("\n".join(texts))
    else:
        who: Literal["user", "assistant"] = "user" if role == "user" else "assistant"
        for text in texts:
            reading.add(who, TextPart(text))
        if extra:
            reading.add(who, ImagePart())
    return 4 + sum(count_tokens(text) for text in texts) + extra


def _output_item(item: Mapping[str, Any], path: FieldPath, reading: _Reading) -> int:
    call_id = get_field(item, "call_id", path, "string", required=True)
    if call_id not in reading.calls:
        raise invalid(
            f"No tool call found for function call output with call_id {call_id}.",
            "input", None,
        )
    reading.answered.add(call_id)
    output = item.get("output")
    if isinstance(output, str):
        text, extra = output, 0
    elif isinstance(output, list):
        texts, extra = _parts_text(output, (*path, "output"))
        text = "\n".join(texts)
    else:
        raise FieldProblem((*path, "output"), "missing" if output is None else "type",
                           "string", output)
    reading.add("user", ToolResultPart(call_id, text))
    return 5 + count_tokens(text) + extra


def _identity(item: Mapping[str, Any]) -> dict[str, Any]:
    """An item without the fields that do not reach the model (ids and statuses)."""
    return {k: v for k, v in item.items() if k not in ("id", "status")}


def _content_text(item: Mapping[str, Any], path: FieldPath) -> tuple[list[str], int]:
    content = item.get("content")
    if content is None:
        raise FieldProblem((*path, "content"), "missing", "string")
    if isinstance(content, str):
        return ([content] if content else []), 0
    if not isinstance(content, list):
        raise FieldProblem((*path, "content"), "type", "string", content)
    return _parts_text(content, (*path, "content"))


def _parts_text(content: list[Any], path: FieldPath) -> tuple[list[str], int]:
    texts: list[str] = []
    extra = 0
    for index, part in enumerate(content):
        p_path = (*path, index)
        if not isinstance(part, dict):
            raise FieldProblem(p_path, "type", "object", part)
        kind = part.get("type")
        if kind in ("input_text", "output_text"):
            texts.append(get_field(part, "text", p_path, "string", required=True))
        elif kind == "refusal":
            texts.append(get_field(part, "refusal", p_path, "string", required=True))
        elif kind in ("input_image", "input_file", "input_audio"):
            extra += IMAGE_TOKENS
        else:
            raise invalid(
                f"Invalid value: '{kind}'. Supported values are: 'input_text', 'input_image', "
                "'output_text', 'refusal', 'input_file', and 'input_audio'.",
                f"{bracketed(p_path)}.type", "invalid_value",
            )
    return [text for text in texts if text], extra


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


# --- output ---------------------------------------------------------------------------------


def usage_json(usage: CacheUsage, generation: Generation) -> dict[str, Any]:
    return tokens_usage_json(usage, generation.output_tokens, generation.reasoning_tokens)


def tokens_usage_json(usage: CacheUsage, output_tokens: int, reasoning_tokens: int = 0
                      ) -> dict[str, Any]:
    prompt = usage.prompt_tokens
    return {
        "input_tokens": prompt,
        "input_tokens_details": {
            "cached_tokens": usage.cache_read,
            "cache_write_tokens": usage.cache_write,
            # The short TTL (30m) and the long one (12h).
            "cache_write_tokens_details": {
                "ttl_30m_tokens": usage.cache_write_5m,
                "ttl_12h_tokens": usage.cache_write_1h,
            },
        },
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": prompt + output_tokens,
    }


def compaction_item(response_id: str, summary: str) -> dict[str, Any]:
    """The opaque item a compaction returns: its summary sealed under the simulator's key."""
    return {"id": f"cmp_{response_id.removeprefix('resp_')}", "type": "compaction",
            "encrypted_content": seal(summary)}


def compacted_output(response_id: str, request: ResponsesRequest, summary: str
                     ) -> list[dict[str, Any]]:
    """What `POST /responses/compact` returns as `output`: the user messages the model read,
    then one compaction item."""
    suffix = response_id.removeprefix("resp_")
    users = [
        {"id": f"msg_{suffix}_{index}", "type": "message", "status": "completed",
         "role": "user", "content": _input_parts(item.get("content"))}
        for index, item in enumerate(request.user_items)
    ]
    return [*users, compaction_item(response_id, summary)]


def _input_parts(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    return list(content) if isinstance(content, list) else []


def compacted_response_json(response_id: str, created: float, request: ResponsesRequest,
                            output: list[dict[str, Any]], usage: dict[str, Any]
                            ) -> dict[str, Any]:
    """The CompactedResponse of `POST /responses/compact`."""
    return {"id": response_id, "object": "response.compaction", "created_at": int(created),
            "output": output, "usage": usage, "model": request.model.id}


def output_items(response_id: str, request: ResponsesRequest, generation: Generation,
                 compaction: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The finished output items: a compaction (when the server compacted), reasoning,
    message, function calls."""
    suffix = response_id.removeprefix("resp_")
    status = "incomplete" if generation.truncated else "completed"
    items: list[dict[str, Any]] = [compaction] if compaction is not None else []
    if request.model.reasoning and generation.reasoning_tokens:
        reasoning: dict[str, Any] = {
            "id": f"rs_{suffix}",
            "type": "reasoning",
            "summary": (
                [{"type": "summary_text", "text": generation.thinking}]
                if generation.thinking else []
            ),
        }
        if request.include_encrypted_reasoning:
            digest = hashlib.sha256(generation.thinking.encode()).digest()
            reasoning["encrypted_content"] = base64.b64encode(b"sim-reasoning:" + digest).decode()
        items.append(reasoning)
    if generation.text:
        items.append({
            "id": f"msg_{suffix}",
            "type": "message",
            "role": "assistant",
            "status": status,
            "content": [{"type": "output_text", "text": generation.text, "annotations": [],
                         "logprobs": []}],
        })
    for index, call in enumerate(generation.calls):
        items.append({
            "id": f"fc_{suffix}_{index}",
            "type": "function_call",
            "call_id": call.id,
            "name": call.name,
            "arguments": json.dumps(dict(call.arguments), ensure_ascii=False),
            "status": "completed",
        })
    return items


def response_json(
    response_id: str,
    created: float,
    request: ResponsesRequest,
    generation: Generation | None,
    usage: dict[str, Any] | None,
    output: list[dict[str, Any]],
) -> dict[str, Any]:
    """A Response object; without a generation it is the in-progress snapshot."""
    if generation is None:
        status = "in_progress"
    else:
        status = "incomplete" if generation.truncated else "completed"
    return {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": (
            {"reason": "max_output_tokens"} if status == "incomplete" else None
        ),
        "instructions": request.instructions,
        "max_output_tokens": request.max_output_tokens,
        "max_tool_calls": None,
        "model": request.model.id,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": request.previous_response_id,
        "prompt_cache_key": request.cache.key,
        "prompt_cache_retention": request.cache.retention,
        "reasoning": {
            "effort": (request.reasoning or {}).get("effort"),
            "summary": (request.reasoning or {}).get("summary"),
        },
        "safety_identifier": None,
        "service_tier": "default",
        "store": request.store,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": request.tool_choice,
        "tools": [_tool_json(tool) for tool in request.tools],
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage if generation is not None else None,
        "user": None,
        "metadata": request.metadata,
        "completed_at": created if status == "completed" else None,
    }


def _tool_json(tool: Mapping[str, Any]) -> dict[str, Any]:
    if tool.get("type") != "function":
        return dict(tool)
    return {
        "type": "function",
        "name": tool.get("name"),
        "description": tool.get("description"),
        "parameters": tool.get("parameters"),
        "strict": tool.get("strict", True),
    }


def stream_events(response_id: str, created: float, request: ResponsesRequest,
                  generation: Generation, usage: dict[str, Any],
                  items: list[dict[str, Any]]) -> list[bytes]:
    """The SSE events of a streamed response, numbered by `sequence_number`. A compaction
    item is announced, then `response.compaction.compacting`, then done whole."""
    events: list[bytes] = []

    def emit(kind: str, data: dict[str, Any]) -> None:
        payload = {"type": kind, "sequence_number": len(events), **data}
        events.append(sse_event(kind, payload))

    start = response_json(response_id, created, request, None, None, [])
    emit("response.created", {"response": start})
    emit("response.in_progress", {"response": start})
    for index, item in enumerate(items):
        if item["type"] == "compaction":
            emit("response.output_item.added", {"output_index": index, "item": item})
            emit("response.compaction.compacting",
                 {"item_id": item["id"], "output_index": index})
        elif item["type"] == "reasoning":
            emit("response.output_item.added",
                 {"output_index": index, "item": {**item, "summary": []}})
            for s_index, summary in enumerate(item["summary"]):
                common = {"item_id": item["id"], "output_index": index, "summary_index": s_index}
                emit("response.reasoning_summary_part.added",
                     {**common, "part": {"type": "summary_text", "text": ""}})
                for chunk in _chunks(summary["text"]):
                    emit("response.reasoning_summary_text.delta", {**common, "delta": chunk})
                emit("response.reasoning_summary_text.done", {**common, "text": summary["text"]})
                emit("response.reasoning_summary_part.done",
                     {**common, "part": {"type": "summary_text", "text": summary["text"]}})
        elif item["type"] == "message":
            emit("response.output_item.added", {
                "output_index": index,
                "item": {**item, "status": "in_progress", "content": []},
            })
            part = item["content"][0]
            common = {"item_id": item["id"], "output_index": index, "content_index": 0}
            emit("response.content_part.added",
                 {**common, "part": {**part, "text": ""}})
            for chunk in _chunks(part["text"]):
                emit("response.output_text.delta", {**common, "delta": chunk, "logprobs": []})
            emit("response.output_text.done", {**common, "text": part["text"], "logprobs": []})
            emit("response.content_part.done", {**common, "part": part})
        else:
            emit("response.output_item.added", {
                "output_index": index,
                "item": {**item, "arguments": "", "status": "in_progress"},
            })
            arguments = item["arguments"]
            size = max(1, -(-len(arguments) // 4))
            for begin in range(0, len(arguments), size):
                emit("response.function_call_arguments.delta", {
                    "item_id": item["id"], "output_index": index,
                    "delta": arguments[begin : begin + size],
                })
            emit("response.function_call_arguments.done", {
                "item_id": item["id"], "output_index": index, "arguments": arguments,
                "name": item["name"],
            })
        emit("response.output_item.done", {"output_index": index, "item": item})
    final = response_json(response_id, created, request, generation, usage, items)
    emit("response.incomplete" if generation.truncated else "response.completed",
         {"response": final})
    return events


def _chunks(text: str, tokens_per_chunk: int = 8) -> list[str]:
    pieces = split_tokens(text)
    return ["".join(pieces[i : i + tokens_per_chunk])
            for i in range(0, len(pieces), tokens_per_chunk)]
