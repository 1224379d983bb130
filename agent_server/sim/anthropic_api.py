"""The Anthropic Messages API: validation, prompt rendering, responses and SSE streams.

Rendering (what a request costs, and its cache blocks, in prefix order):
- each tool: 12 + name + description + JSON of `input_schema`;
- each system block: 2 + text (the first one 3 more for the system header);
- each message content block: text 1 + text; image or document 1600; tool_use 6 + name + JSON
  input; tool_result 5 + its text (+1600 per image); thinking 2 + thinking; the first block of
  each message 3 more for the role header.
`tool_choice` and `thinking` (and the effort of `output_config`, which sets how hard an
adaptive model thinks) are part of the identity of every message block (changing them
invalidates the cached messages but not the cached tools and system, as documented).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_server.llm.models import ModelInfo, ModelRegistry
from agent_server.sim.anthropic_context import (
    COMPACTION_BETAS,
    Applied,
    ContextManagement,
    OnDemand,
    Rendered,
    after_latest_compaction,
    apply_clearing,
    check_compaction_blocks,
    check_compaction_request,
    has_content_to_summarise,
    invalid,
    parse_context_management,
    parse_on_demand,
)
from agent_server.sim.cache import ANTHROPIC_TTL_1H, ANTHROPIC_TTL_5M, CacheUsage, PromptBlock
from agent_server.sim.compaction import handed_over, summary_tokens
from agent_server.sim.fields import FieldPath, FieldProblem, dotted, get_field
from agent_server.sim.generation import Generation
from agent_server.sim.rejection import RequestRejected
from agent_server.sim.sse import sse_event
from agent_server.sim.tokenizer import count_tokens, split_tokens
from agent_server.sim.tool_schemas import anthropic_schema_problem
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

MAX_CACHE_BREAKPOINTS = 4
IMAGE_TOKENS = 1600
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_USER_BLOCKS = frozenset(("text", "image", "document", "tool_result", "search_result"))
_ASSISTANT_BLOCKS = frozenset(
    ("text", "thinking", "redacted_thinking", "tool_use", "server_tool_use",
     "web_search_tool_result", "compaction")
)
_ALL_BLOCKS = _USER_BLOCKS | _ASSISTANT_BLOCKS
# The request fields the API accepts (those of anthropic 2.16's MessageCreateParams, plus the
# sampling parameters older clients send); anything else is "Extra inputs are not permitted".
_REQUEST_FIELDS = frozenset((
    "model", "messages", "max_tokens", "system", "tools", "tool_choice", "thinking", "stream",
    "metadata", "stop_sequences", "cache_control", "container", "diagnostics", "inference_geo",
    "output_config", "service_tier", "speed", "user_profile_id", "workspace_id", "temperature",
    "top_p", "top_k", "context_management", "mcp_servers", "compaction",
))
_STOP_REASONS = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "context_window": "model_context_window_exceeded",
    "pause_turn": "pause_turn",
    "compaction": "compaction",
}


@dataclass(frozen=True, slots=True)
class MessagesRequest:
    """A request as the API reads it: its prompt blocks and transcript are what the model
    renders (after the latest compaction block, with the clearing edits applied)."""

    model: ModelInfo
    max_tokens: int
    stream: bool
    thinking: bool  # extended thinking enabled
    blocks: tuple[PromptBlock, ...]
    transcript: Transcript
    context: ContextManagement | None = None
    on_demand: OnDemand | None = None  # a compaction request (`compaction: summarize`)
    applied_edits: tuple[Applied, ...] = ()
    prefix_blocks: int = 0  # how many of `blocks` are tools and system (before the messages)
    header: str = ""  # what makes tool_choice and thinking part of the messages' identity

    @property
    def prompt_tokens(self) -> int:
        return sum(block.tokens for block in self.blocks)


# --- errors ---------------------------------------------------------------------------------


def error_body(rejection: RequestRejected, request_id: str) -> dict[str, Any]:
    error: dict[str, Any] = {"type": rejection.error_type, "message": rejection.message}
    if rejection.error_code is not None:
        error["details"] = {"error_code": rejection.error_code}
    return {"type": "error", "error": error, "request_id": request_id}


def prompt_too_long(prompt_tokens: int, window: int) -> RequestRejected:
    return invalid(f"prompt is too long: {prompt_tokens} tokens > {window} maximum")


def field_rejection(problem: FieldProblem) -> RequestRejected:
    where = dotted(problem.path)
    if problem.kind == "missing":
        return invalid(f"{where}: Field required")
    expected = "dictionary" if problem.expected == "object" else problem.expected
    return invalid(f"{where}: Input should be a valid {expected}")


# --- parsing and validation -----------------------------------------------------------------


def parse_request(
    body: Any, registry: ModelRegistry, *, count_only: bool = False,
    betas: frozenset[str] | None = None,
) -> MessagesRequest:
    """The validated request; raises RequestRejected with the real API's wording.

    `betas` are the request's `anthropic-beta` values; None checks none (a request already
    accepted, read again from the log)."""
    try:
        return _parse(body, registry, count_only, betas)
    except FieldProblem as problem:
        raise field_rejection(problem) from None


def betas_of(header: str | None) -> frozenset[str]:
    """The values of an `anthropic-beta` header (comma-separated, as the SDKs send it)."""
    return frozenset(part.strip() for part in (header or "").split(",") if part.strip())


@dataclass
class _Prompt:
    """The request's prompt blocks as they are read, in prefix order, with the cache
    breakpoints counted and their TTL order checked."""

    blocks: list[PromptBlock] = field(default_factory=list)
    breakpoints: int = 0
    order: _TtlOrder = field(default_factory=lambda: _TtlOrder())
    betas: frozenset[str] | None = None

    def marked(self, block: Mapping[str, Any], path: FieldPath) -> float | None:
        """The TTL of `block`'s cache_control (checked and counted), or None."""
        ttl = _cache_ttl(block, path)
        self.order.check(ttl, path)
        self.breakpoints += ttl is not None
        return ttl


@dataclass
class _Turns:
    """Tool pairing across the messages: consecutive messages of one role are one turn (the
    API combines them), so the calls of an assistant turn must be answered by the tool
    results that open the next user turn."""

    role: str | None = None
    start: int = 0
    to_answer: list[str] = field(default_factory=list)  # the previous assistant turn's calls
    calls: list[str] = field(default_factory=list)
    answered: list[str] = field(default_factory=list)
    leading_results: bool = True
    seen_ids: set[str] = field(default_factory=set)

    def enter(self, role: str, m_index: int) -> None:
        if role == self.role:
            return
        self.check_answered()
        self.to_answer = self.calls if self.role == "assistant" else []
        self.role, self.start = role, m_index
        self.calls, self.answered, self.leading_results = [], [], True

    def check_answered(self) -> None:
        if self.role == "user" and self.to_answer:
            missing = [i for i in self.to_answer if i not in self.answered]
            if missing:
                raise _unanswered(self.start - 1, missing)


def _parse(body: Any, registry: ModelRegistry, count_only: bool, betas: frozenset[str] | None
           ) -> MessagesRequest:
    model, max_tokens, stream, messages = _parse_top(body, registry, count_only)
    thinking = _thinking(body, max_tokens)
    _check_output_config(body)
    tool_choice = _tool_choice(body)
    on_demand = parse_on_demand(body, betas)
    context = parse_context_management(body, betas, thinking)
    prompt = _Prompt(betas=betas)
    specs = _parse_tools(body, prompt)
    system_text = _parse_system(body, prompt)
    if not messages:
        raise invalid("messages: at least one message is required")
    if on_demand is not None:
        check_compaction_request(messages)
    header = "messages|" + _canonical(
        {
            "tool_choice": tool_choice,
            "thinking": body.get("thinking"),
            "effort": (body.get("output_config") or {}).get("effort"),
        }
    )
    rendered = _parse_messages(messages, prompt)
    _check_final_assistant(messages)
    check_compaction_blocks(rendered, context)
    rendered = after_latest_compaction(rendered)
    if on_demand is not None and not has_content_to_summarise(rendered):
        raise invalid("messages: there is no `user` or `assistant` content to summarize",
                      "compaction_nothing_to_summarize")
    prefix_blocks = len(prompt.blocks)
    prefix_tokens = sum(block.tokens for block in prompt.blocks)
    rendered, applied = apply_clearing(
        rendered, context, prefix_tokens + sum(item.tokens for item in rendered)
    )
    parts = _render_messages(rendered, prompt, header, system_text)
    top_level = body.get("cache_control")
    if top_level is not None:
        ttl = _cache_ttl(body, ())
        prompt.order.check(ttl, ())
        if ttl is not None and prompt.blocks and prompt.blocks[-1].breakpoint_ttl is None:
            last = prompt.blocks[-1]
            prompt.blocks[-1] = PromptBlock(last.canonical, last.tokens, ttl)
            prompt.breakpoints += 1
    if prompt.breakpoints > MAX_CACHE_BREAKPOINTS:
        raise invalid(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {prompt.breakpoints}."
        )
    transcript = Transcript(
        system="\n\n".join(system_text), tools=tuple(specs), messages=freeze(parts)
    )
    return MessagesRequest(model=model, max_tokens=max_tokens, stream=stream,
                           thinking=thinking, blocks=tuple(prompt.blocks),
                           transcript=transcript, context=context, on_demand=on_demand,
                           applied_edits=applied, prefix_blocks=prefix_blocks, header=header)


def _parse_top(body: Any, registry: ModelRegistry, count_only: bool
               ) -> tuple[ModelInfo, int, bool, list[Any]]:
    """(model, max_tokens, stream, messages), the top-level fields checked."""
    if not isinstance(body, dict):
        raise invalid("The request body must be a JSON object")
    for key in body:
        if key not in _REQUEST_FIELDS:
            raise invalid(f"{key}: Extra inputs are not permitted")
    model_id = get_field(body, "model", (), "string", required=True)
    messages = get_field(body, "messages", (), "list", required=True)
    max_tokens = get_field(body, "max_tokens", (), "integer", required=not count_only)
    stream = get_field(body, "stream", (), "boolean") or False
    model = registry.get(model_id)
    if model is None:
        raise RequestRejected(404, f"model: {model_id}", "not_found_error")
    if max_tokens is None:
        max_tokens = model.max_output
    if max_tokens < 1:
        raise invalid("max_tokens: Input should be greater than or equal to 1")
    if max_tokens > model.max_output:
        raise invalid(
            f"max_tokens: {max_tokens} > {model.max_output}, which is the maximum allowed "
            f"number of output tokens for {model.id}"
        )
    return model, max_tokens, stream, messages


def _tool_choice(body: Mapping[str, Any]) -> Any:
    tool_choice = get_field(body, "tool_choice", (), "object")
    if tool_choice is not None:
        choice_type = tool_choice.get("type")
        if choice_type not in ("auto", "any", "tool", "none"):
            raise invalid(
                "tool_choice.type: Input tag "
                f"'{choice_type}' found using 'type' does not match any of the expected tags: "
                "'auto', 'any', 'tool', 'none'"
            )
        if choice_type == "tool":
            get_field(tool_choice, "name", ("tool_choice",), "string", required=True)
    return tool_choice


def _parse_tools(body: Mapping[str, Any], prompt: _Prompt) -> list[ToolSpec]:
    tools = get_field(body, "tools", (), "list") or []
    tool_names: list[str] = []
    specs: list[ToolSpec] = []
    for index, tool in enumerate(tools):
        path: FieldPath = ("tools", index)
        if not isinstance(tool, dict):
            raise FieldProblem(path, "type", "object", tool)
        name = get_field(tool, "name", path, "string", required=True)
        tool_type = tool.get("type")
        if tool_type in (None, "custom"):
            if not _TOOL_NAME.match(name):
                raise invalid(
                    f"tools.{index}.custom.name: String should match pattern "
                    "'^[a-zA-Z0-9_-]{1,128}$'"
                )
            schema = get_field(tool, "input_schema", path, "object", required=True)
            get_field(tool, "description", path, "string")
            if (problem := anthropic_schema_problem(schema)) is not None:
                raise invalid(f"tools.{index}.custom.input_schema: {problem}")
        if name in tool_names:
            raise invalid("tools: Tool names must be unique.")
        tool_names.append(name)
        schema = tool.get("input_schema")
        specs.append(ToolSpec(name, schema if isinstance(schema, dict) else {},
                              str(tool.get("description") or "")))
        ttl = prompt.marked(tool, path)
        description = tool.get("description") or ""
        encoded = json.dumps(tool.get("input_schema", {}), sort_keys=True, separators=(",", ":"))
        tokens = 12 + count_tokens(name) + count_tokens(str(description)) + count_tokens(encoded)
        prompt.blocks.append(PromptBlock("tool|" + _canonical(tool), tokens, ttl))
    return specs


def _parse_system(body: Mapping[str, Any], prompt: _Prompt) -> list[str]:
    system = body.get("system")
    system_text: list[str] = []
    if isinstance(system, str):
        if system:
            prompt.blocks.append(PromptBlock(
                "system|" + _canonical({"type": "text", "text": system}),
                5 + count_tokens(system)))
            system_text.append(system)
    elif isinstance(system, list):
        for index, block in enumerate(system):
            path: FieldPath = ("system", index)
            text, ttl = _system_text(block, path, prompt)
            tokens = 2 + count_tokens(text) + (3 if index == 0 else 0)
            prompt.blocks.append(PromptBlock("system|" + _canonical(block), tokens, ttl))
            system_text.append(text)
    elif system is not None:
        raise invalid("system: Input should be a valid string or a valid list")
    return system_text


def _parse_messages(messages: list[Any], prompt: _Prompt) -> list[Rendered]:
    """Every message block, checked (the whole request, what the API drops included), as
    the prompt renders it."""
    rendered: list[Rendered] = []
    turns = _Turns()
    for m_index, message in enumerate(messages):
        role, content_blocks = _message_shape(message, m_index, len(messages))
        path: FieldPath = ("messages", m_index)
        if role == "system":
            # A mid-conversation system message (SystemMessageParam): text only, and no place
            # for one between tool calls and their results.
            if turns.role == "assistant" and turns.calls:
                raise _unanswered(m_index - 1, turns.calls)
            rendered.extend(_system_message(content_blocks, path, prompt))
            continue
        turns.enter(role, m_index)
        for b_index, block in enumerate(content_blocks):
            rendered.append(_message_block(block, role, (*path, "content", b_index), m_index,
                                           b_index, prompt, turns))
    turns.check_answered()
    if turns.role == "assistant" and turns.calls:
        raise _unanswered(len(messages) - 1, turns.calls)
    return rendered


def _render_messages(rendered: list[Rendered], prompt: _Prompt, header: str,
                     system_text: list[str]
                     ) -> list[tuple[Literal["user", "assistant"], list[Part]]]:
    """The prompt blocks and the transcript of the messages the model reads. The header
    (tool_choice and thinking) is part of the first message block's identity; a compaction
    block reads as a summary handed over."""
    parts: list[tuple[Literal["user", "assistant"], list[Part]]] = []
    lead = header
    for item in rendered:
        first = item.b_index == 0
        if item.role == "system":
            system_text.append(str(item.source.get("text", "")))
            canonical = f"system-message|{int(first)}|{_canonical(item.source)}"
        else:
            canonical = f"{lead}{item.role}|{int(first)}|{_canonical(item.source)}"
            lead = ""
        prompt.blocks.append(PromptBlock(canonical, item.tokens + (3 if first else 0),
                                         item.ttl))
        if item.part is not None and item.role != "system":
            role: Literal["user", "assistant"] = (
                "user" if item.role == "user" or item.kind == "compaction" else "assistant"
            )
            append_part(parts, role, item.part)
    return parts


def _message_shape(message: Any, m_index: int, count: int) -> tuple[Any, list[Any]]:
    """(role, content blocks) of a message, its keys, role and content checked."""
    path: FieldPath = ("messages", m_index)
    if not isinstance(message, dict):
        raise FieldProblem(path, "type", "object", message)
    for key in message:
        if key not in ("role", "content"):
            raise invalid(f"messages.{m_index}.{key}: Extra inputs are not permitted")
    role = message.get("role")
    if role is None:
        raise FieldProblem((*path, "role"), "missing", "string")
    if role not in ("user", "assistant", "system"):
        raise invalid(
            f"messages.{m_index}.role: Input should be 'user', 'assistant' or 'system'"
        )
    if m_index == 0 and role != "user" and not _opens_with_compaction(message):
        raise invalid('messages: first message must use the "user" role')
    content = message.get("content")
    if content is None:
        raise FieldProblem((*path, "content"), "missing", "list")
    if isinstance(content, str):
        content_blocks: list[Any] = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        content_blocks = content
    else:
        raise invalid(f"messages.{m_index}.content: Input should be a valid list")
    if not content_blocks and not (role == "assistant" and m_index == count - 1):
        raise invalid(f"messages.{m_index}: all messages must have non-empty content "
                      "except for the optional final assistant message")
    return role, content_blocks


def _opens_with_compaction(message: Mapping[str, Any]) -> bool:
    """An assistant message that opens with a compaction block may open the conversation."""
    content = message.get("content")
    return (message.get("role") == "assistant" and isinstance(content, list) and bool(content)
            and isinstance(content[0], dict) and content[0].get("type") == "compaction")


def _system_text(block: Any, path: FieldPath, prompt: _Prompt) -> tuple[str, float | None]:
    """A system block (top-level or a system message's): text only; (its text, its TTL)."""
    if not isinstance(block, dict):
        raise FieldProblem(path, "type", "object", block)
    if block.get("type") != "text":
        raise invalid(f"{dotted(path)}.type: Input should be 'text'")
    text = get_field(block, "text", path, "string", required=True)
    _check_text(text, path, block)
    return text, prompt.marked(block, path)


def _system_message(content_blocks: list[Any], path: FieldPath, prompt: _Prompt
                    ) -> list[Rendered]:
    out: list[Rendered] = []
    for b_index, block in enumerate(content_blocks):
        b_path = (*path, "content", b_index)
        text, ttl = _system_text(block, b_path, prompt)
        out.append(Rendered("system", "text", block, 1 + count_tokens(text), ttl, None,
                            int(path[1]), b_index))
    return out


def _message_block(block: Any, role: str, b_path: FieldPath, m_index: int, b_index: int,
                   prompt: _Prompt, turns: _Turns) -> Rendered:
    """One content block of a user or assistant message: checked, tool pairing followed; as
    the prompt renders it."""
    if not isinstance(block, dict):
        raise FieldProblem(b_path, "type", "object", block)
    kind = block.get("type")
    if kind is None:
        raise FieldProblem((*b_path, "type"), "missing", "string")
    if kind not in _ALL_BLOCKS or (
        kind == "compaction" and prompt.betas is not None
        and not prompt.betas & COMPACTION_BETAS
    ):
        raise invalid(
            f"{dotted(b_path)}.type: Input tag '{kind}' found using 'type' does not match "
            "any of the expected tags"
        )
    allowed = _USER_BLOCKS if role == "user" else _ASSISTANT_BLOCKS
    if kind not in allowed:
        raise invalid(f"{dotted(b_path)}: `{kind}` blocks are not allowed in `{role}` "
                      "messages")
    ttl = prompt.marked(block, b_path)
    if kind == "tool_result":
        inner = _inner_cache_ttl(block, b_path, prompt.order)
        ttl = inner if ttl is None else ttl
    tokens, part = _block(block, kind, b_path, m_index, b_index)
    if kind == "tool_result":
        assert isinstance(part, ToolResultPart)
        if part.tool_call_id not in turns.to_answer:
            raise invalid(
                f"messages.{m_index}.content.{b_index}: unexpected `tool_use_id` found in "
                f"`tool_result` blocks: {part.tool_call_id}. Each `tool_result` block must "
                "have a corresponding `tool_use` block in the previous message."
            )
        if turns.leading_results:
            turns.answered.append(part.tool_call_id)
        prompt.breakpoints += _inner_cache_controls(block)
    else:
        turns.leading_results = False
    if kind == "tool_use":
        assert isinstance(part, ToolCallPart)
        if part.id in turns.seen_ids:
            raise invalid(f"{dotted(b_path)}: `tool_use` ids must be unique")
        turns.seen_ids.add(part.id)
        turns.calls.append(part.id)
    summary = block.get("content") if kind == "compaction" else None
    return Rendered(role, kind, block, tokens, ttl, part, m_index, b_index,
                    summary if isinstance(summary, str) else None)


def _unanswered(m_index: int, ids: list[str]) -> RequestRejected:
    return invalid(
        f"messages.{m_index}: `tool_use` ids were found without `tool_result` blocks immediately "
        f"after: {', '.join(ids)}. Each `tool_use` block must have a corresponding `tool_result` "
        "block in the next message."
    )


def _thinking(body: Mapping[str, Any], max_tokens: int) -> bool:
    thinking = get_field(body, "thinking", (), "object")
    if thinking is None:
        return False
    kind = thinking.get("type")
    allowed = _THINKING_FIELDS.get(kind) if isinstance(kind, str) else None
    if allowed is not None:
        for key in thinking:
            if key not in allowed:
                raise invalid(f"thinking.{kind}.{key}: Extra inputs are not permitted")
        display = thinking.get("display")
        if display is not None and display not in ("summarized", "omitted"):
            raise invalid(
                f"thinking.{kind}.display: Input should be 'summarized' or 'omitted'"
            )
    if kind == "disabled":
        return False
    if kind in ("adaptive", "between_tools"):
        return True
    if kind != "enabled":
        raise invalid(
            f"thinking.type: Input tag '{kind}' found using 'type' does not match any of the "
            "expected tags: 'enabled', 'disabled', 'adaptive', 'between_tools'"
        )
    budget = get_field(thinking, "budget_tokens", ("thinking", "enabled"), "integer", required=True)
    if budget < 1024:
        raise invalid(
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        )
    if max_tokens <= budget:
        raise invalid(
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
            "documentation at https://docs.claude.com/en/docs/build-with-claude/"
            "extended-thinking#max-tokens-and-context-window-size"
        )
    return True


# The fields of each kind of `thinking` (anthropic 2.x's ThinkingConfig*Param).
_THINKING_FIELDS: Mapping[str, frozenset[str]] = {
    "enabled": frozenset(("type", "budget_tokens", "display")),
    "adaptive": frozenset(("type", "display")),
    "disabled": frozenset(("type",)),
    "between_tools": frozenset(("type",)),
}
_EFFORTS = ("low", "medium", "high", "xhigh", "max")


def _check_output_config(body: Mapping[str, Any]) -> None:
    """`output_config.effort`, how much the model spends on an answer (an adaptive model's
    thinking among it): one of the documented levels."""
    config = get_field(body, "output_config", (), "object")
    if config is None:
        return
    effort = config.get("effort")
    if effort is not None and effort not in _EFFORTS:
        listed = ", ".join(f"'{e}'" for e in _EFFORTS[:-1])
        raise invalid(f"output_config.effort: Input should be {listed} or '{_EFFORTS[-1]}'")


def _check_text(text: str, path: FieldPath, block: Mapping[str, Any]) -> None:
    if not text:
        if "cache_control" in block:
            raise invalid(f"{dotted(path)}.text: cache_control cannot be set for empty text blocks")
        raise invalid(f"{path[0]}: text content blocks must be non-empty")
    if not text.strip():
        raise invalid(f"{path[0]}: text content blocks must contain non-whitespace text")


def _cache_ttl(block: Mapping[str, Any], path: FieldPath) -> float | None:
    control = block.get("cache_control")
    if control is None:
        return None
    if not isinstance(control, dict):
        raise FieldProblem((*path, "cache_control"), "type", "object", control)
    if control.get("type") != "ephemeral":
        raise invalid(f"{dotted((*path, 'cache_control', 'type'))}: Input should be 'ephemeral'")
    ttl = control.get("ttl", "5m")
    if ttl == "5m":
        return ANTHROPIC_TTL_5M
    if ttl == "1h":
        return ANTHROPIC_TTL_1H
    raise invalid(f"{dotted((*path, 'cache_control', 'ttl'))}: Input should be '5m' or '1h'")


def _inner_cache_ttl(
    block: Mapping[str, Any], path: FieldPath, order: _TtlOrder
) -> float | None:
    """A tool_result whose content carries cache_control is a breakpoint at the tool_result."""
    content = block.get("content")
    present: list[float] = []
    for index, item in enumerate(content if isinstance(content, list) else []):
        if not isinstance(item, dict):
            continue
        item_path = (*path, "content", index)
        ttl = _cache_ttl(item, item_path)
        order.check(ttl, item_path)
        if ttl is not None:
            present.append(ttl)
    return max(present) if present else None


class _TtlOrder:
    """The API processes blocks in the order tools, system, messages, and refuses a 1-hour
    breakpoint that comes after a 5-minute one (the real wording, e.g. in
    cnighswonger/claude-code-cache-fix#44)."""

    def __init__(self) -> None:
        self._short_seen = False

    def check(self, ttl: float | None, path: FieldPath) -> None:
        if ttl is None:
            return
        if ttl < ANTHROPIC_TTL_1H:
            self._short_seen = True
        elif self._short_seen:
            where = dotted((*path, "cache_control", "ttl"))
            raise invalid(
                f"{where}: a ttl='1h' cache_control block must not come after a ttl='5m' "
                "cache_control block. Note that blocks are processed in the following order: "
                "`tools`, `system`, `messages`."
            )


def _check_final_assistant(messages: Sequence[Any]) -> None:
    """A request may end with an assistant message (a prefill, or a paused turn sent back to
    continue), but its text must not end in whitespace."""
    last = messages[-1] if messages else None
    if not isinstance(last, dict) or last.get("role") != "assistant":
        return
    content = last.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list) or not blocks or not isinstance(blocks[-1], dict):
        return
    text = blocks[-1].get("text")
    if blocks[-1].get("type") == "text" and isinstance(text, str) and text != text.rstrip():
        raise invalid("messages: final assistant content cannot end with trailing whitespace")


def _inner_cache_controls(block: Mapping[str, Any]) -> int:
    content = block.get("content")
    if not isinstance(content, list):
        return 0
    return sum(1 for item in content if isinstance(item, dict) and "cache_control" in item)


def _block(
    block: Mapping[str, Any], kind: str, path: FieldPath, m_index: int, b_index: int
) -> tuple[int, Part | None]:
    """(tokens, transcript part) of one message content block, validating it."""
    if kind == "text":
        text = get_field(block, "text", path, "string", required=True)
        _check_text(text, path, block)
        return 1 + count_tokens(text), TextPart(text)
    if kind in ("image", "document"):
        get_field(block, "source", path, "object", required=True)
        return IMAGE_TOKENS, ImagePart()
    if kind == "tool_use":
        call_id = get_field(block, "id", path, "string", required=True)
        name = get_field(block, "name", path, "string", required=True)
        arguments = get_field(block, "input", path, "object", required=True)
        encoded = json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        tokens = 6 + count_tokens(name) + count_tokens(encoded)
        return tokens, ToolCallPart(call_id, name, arguments)
    if kind == "tool_result":
        call_id = get_field(block, "tool_use_id", path, "string", required=True)
        is_error = bool(block.get("is_error", False))
        content = block.get("content", "")
        texts: list[str] = []
        tokens = 5
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for index, item in enumerate(content):
                i_path = (*path, "content", index)
                if not isinstance(item, dict):
                    raise FieldProblem(i_path, "type", "object", item)
                if item.get("type") == "text":
                    text = get_field(item, "text", i_path, "string", required=True)
                    _check_text(text, i_path, item)
                    texts.append(text)
                elif item.get("type") in ("image", "document", "search_result"):
                    tokens += IMAGE_TOKENS
                else:
                    raise invalid(
                        f"{dotted(i_path)}.type: Input tag '{item.get('type')}' found using "
                        "'type' does not match any of the expected tags: 'text', 'image', "
                        "'search_result', 'document'"
                    )
        else:
            raise invalid(f"{dotted(path)}.content: Input should be a valid string or list")
        text = "\n".join(texts)
        return tokens + count_tokens(text), ToolResultPart(call_id, text, is_error)
    if kind == "thinking":
        thinking = get_field(block, "thinking", path, "string", required=True)
        signature = get_field(block, "signature", path, "string", required=True)
        if signature != thinking_signature(thinking):
            raise invalid(f"messages.{m_index}.content.{b_index}: Invalid `signature` in "
                          "`thinking` block")
        return 2 + count_tokens(thinking), ThinkingPart(thinking)
    if kind == "redacted_thinking":
        data = get_field(block, "data", path, "string", required=True)
        return 2 + count_tokens(data) // 4, None
    if kind == "compaction":
        content = get_field(block, "content", path, "string")
        if content is not None and not content:
            raise invalid(f"{dotted(path)}.content: a `compaction` block's content must not be "
                          "empty (null marks a compaction that failed)")
        for key in ("signature", "encrypted_content"):
            get_field(block, key, path, "string")
        get_field(block, "tool_changes", path, "list")
        if content is None:
            return 0, None
        return summary_tokens(content), handed_over(content)
    return 4 + count_tokens(_canonical(block)), None


def opening_block(header: str, block: Mapping[str, Any], tokens: int) -> PromptBlock:
    """The prompt block of `block` when it opens the messages (a compaction block the
    answer begins with, as the next request will render it)."""
    return PromptBlock(f"{header}assistant|1|{_canonical(block)}", tokens + 3)


def _canonical(block: Mapping[str, Any]) -> str:
    return json.dumps(_without_cache_control(block), sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))


def _without_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(item) for item in value]
    return value


def thinking_signature(thinking: str) -> str:
    """The signature the simulator gives a thinking block, and checks when it comes back."""
    digest = hashlib.sha256(b"agent-server-sim:thinking:" + thinking.encode("utf-8")).digest()
    return base64.b64encode(digest * 2).decode()


# --- responses ------------------------------------------------------------------------------


def usage_json(usage: CacheUsage, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": usage.input,
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.cache_write_5m,
            "ephemeral_1h_input_tokens": usage.cache_write_1h,
        },
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def iteration_json(kind: str, usage: CacheUsage, output_tokens: int) -> dict[str, Any]:
    """One entry of `usage.iterations`: a sampling iteration ("message") or the compaction
    that preceded it ("compaction")."""
    entry = usage_json(usage, output_tokens)
    del entry["service_tier"]
    return {"type": kind, **entry}


def compacted_usage_json(compaction: dict[str, Any], message: dict[str, Any] | None
                         ) -> dict[str, Any]:
    """The usage of an answer that compacted: the top-level fields are the message
    iteration's (zero when none followed), the compaction's tokens are only in `iterations`."""
    top = usage_json(CacheUsage(), 0) if message is None else {
        **{k: v for k, v in message.items() if k != "type"}, "service_tier": "standard"}
    return {**top, "iterations": [compaction, *([message] if message is not None else [])]}


def stop_reason(generation: Generation) -> str:
    return _STOP_REASONS[generation.stop]


def content_blocks(generation: Generation) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if generation.thinking:
        out.append({"type": "thinking", "thinking": generation.thinking,
                    "signature": thinking_signature(generation.thinking)})
    if generation.text:
        out.append({"type": "text", "text": generation.text})
    for call in generation.calls:
        out.append({"type": "tool_use", "id": call.id, "name": call.name,
                    "input": dict(call.arguments)})
    return out


@dataclass(frozen=True, slots=True)
class MessageAnswer:
    """What one answer holds: a compaction block that opens it (when the API compacted), the
    generated blocks (None: the answer stops after the compaction), its usage as answered,
    its stop reason, and `context_management` (the edits applied) when the request had one."""

    generation: Generation | None
    usage: dict[str, Any]
    stop_reason: str
    compaction: dict[str, Any] | None = None
    context_management: dict[str, Any] | None = None

    @staticmethod
    def of(generation: Generation, usage: CacheUsage, request: MessagesRequest
           ) -> MessageAnswer:
        return MessageAnswer(generation, usage_json(usage, generation.output_tokens),
                             stop_reason(generation),
                             context_management=context_management_json(request))

    def content(self) -> list[dict[str, Any]]:
        blocks = [self.compaction] if self.compaction is not None else []
        return blocks + (content_blocks(self.generation) if self.generation is not None else [])


def context_management_json(request: MessagesRequest) -> dict[str, Any] | None:
    if request.context is None:
        return None
    return {"applied_edits": [edit.to_json() for edit in request.applied_edits]}


def message_json(message_id: str, model_id: str, answer: MessageAnswer) -> dict[str, Any]:
    out = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model_id,
        "content": answer.content(),
        "stop_reason": answer.stop_reason,
        "stop_sequence": None,
        "usage": answer.usage,
    }
    if answer.context_management is not None:
        out["context_management"] = answer.context_management
    return out


def text_chunks(text: str, tokens_per_chunk: int = 8) -> list[str]:
    """`text` in pieces of a few tokens, as a model streams it."""
    pieces = split_tokens(text)
    return ["".join(pieces[i : i + tokens_per_chunk]) for i in range(0, len(pieces),
                                                                        tokens_per_chunk)]


def json_fragments(encoded: str, parts: int = 4) -> list[str]:
    """A JSON document cut into a few fragments (never fewer than 2 when it is long enough)."""
    size = max(1, -(-len(encoded) // parts))
    return [encoded[i : i + size] for i in range(0, len(encoded), size)] or [""]


def stream_events(message_id: str, model_id: str, answer: MessageAnswer) -> list[bytes]:
    """The SSE events of a streamed answer, every one with its `event:` line. A compaction
    block comes whole in one `compaction_delta` (its signature, when it has one, with its
    start)."""
    events: list[bytes] = []

    def emit(kind: str, data: Mapping[str, Any]) -> None:
        events.append(sse_event(kind, data))

    start_usage = {k: v for k, v in answer.usage.items() if k != "iterations"}
    start_usage["output_tokens"] = 1
    emit("message_start", {
        "type": "message_start",
        "message": {
            "id": message_id, "type": "message", "role": "assistant", "model": model_id,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage,
        },
    })
    emit("ping", {"type": "ping"})
    index = 0
    if answer.compaction is not None:
        opening = {k: v for k, v in answer.compaction.items() if k != "content"}
        emit("content_block_start", {"type": "content_block_start", "index": index,
                                     "content_block": {**opening, "content": ""}})
        emit("content_block_delta", {
            "type": "content_block_delta", "index": index,
            "delta": {"type": "compaction_delta", "content": answer.compaction.get("content"),
                      "encrypted_content": answer.compaction.get("encrypted_content")},
        })
        emit("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    if answer.generation is not None:
        _generation_events(answer.generation, index, emit)
    final_usage = {k: v for k, v in answer.usage.items()
                   if k not in ("cache_creation", "service_tier")}
    delta: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": answer.stop_reason, "stop_sequence": None},
        "usage": final_usage,
    }
    if answer.context_management is not None:
        delta["context_management"] = answer.context_management
    emit("message_delta", delta)
    emit("message_stop", {"type": "message_stop"})
    return events


def _generation_events(generation: Generation, index: int,
                       emit: Callable[[str, Mapping[str, Any]], None]) -> None:
    if generation.thinking:
        emit("content_block_start", {"type": "content_block_start", "index": index,
                                     "content_block": {"type": "thinking", "thinking": "",
                                                       "signature": ""}})
        for chunk in text_chunks(generation.thinking):
            emit("content_block_delta", {"type": "content_block_delta", "index": index,
                                         "delta": {"type": "thinking_delta", "thinking": chunk}})
        emit("content_block_delta", {
            "type": "content_block_delta", "index": index,
            "delta": {"type": "signature_delta",
                      "signature": thinking_signature(generation.thinking)},
        })
        emit("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    if generation.text:
        emit("content_block_start", {"type": "content_block_start", "index": index,
                                     "content_block": {"type": "text", "text": ""}})
        for chunk in text_chunks(generation.text):
            emit("content_block_delta", {"type": "content_block_delta", "index": index,
                                         "delta": {"type": "text_delta", "text": chunk}})
        emit("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    for call in generation.calls:
        emit("content_block_start", {
            "type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}},
        })
        encoded = json.dumps(dict(call.arguments), ensure_ascii=False, separators=(",", ":"))
        for fragment in ["", *json_fragments(encoded)]:
            emit("content_block_delta", {"type": "content_block_delta", "index": index,
                                         "delta": {"type": "input_json_delta",
                                                   "partial_json": fragment}})
        emit("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1


def count_tokens_json(request: MessagesRequest) -> dict[str, Any]:
    return {"input_tokens": request.prompt_tokens}


def models_page(models: Sequence[ModelInfo], query: Mapping[str, str]) -> dict[str, Any]:
    """One page of the model list: `limit` (1-1000, default 20), `after_id` or `before_id`."""
    raw_limit = query.get("limit", "20")
    try:
        limit = int(raw_limit)
    except ValueError:
        raise invalid("limit: Input should be a valid integer") from None
    if not 1 <= limit <= 1000:
        raise invalid("limit: Input should be greater than or equal to 1 and less than or "
                      "equal to 1000")
    ids = [model.id for model in models]
    after, before = query.get("after_id"), query.get("before_id")
    start, end = 0, len(models)
    if after is not None:
        if after not in ids:
            raise invalid(f"after_id: no model with id {after}")
        start = ids.index(after) + 1
    if before is not None:
        if before not in ids:
            raise invalid(f"before_id: no model with id {before}")
        end = ids.index(before)
        start = max(start, end - limit)
    page = list(models[start:min(end, start + limit)])
    data = [model_json(model) for model in page]
    remaining = end > start + limit if before is None else start > 0
    return {
        "data": data,
        "has_more": remaining,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }


def model_json(model: ModelInfo) -> dict[str, Any]:
    return {
        "type": "model",
        "id": model.id,
        "display_name": model.name,
        "created_at": "2025-01-01T00:00:00Z",
        "lifecycle": "active",
        "max_input_tokens": model.context_window,
        "max_tokens": model.max_output,
    }
