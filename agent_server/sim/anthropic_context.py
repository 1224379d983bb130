"""Anthropic's context management, as the Messages API documents it: the request fields, the
compaction blocks a conversation carries, and the edits applied before the model reads it.

- `context_management.edits`: `clear_tool_uses_20250919` (trigger, keep, clear_at_least,
  exclude_tools, clear_tool_inputs), `clear_thinking_20251015` (keep) and `compact_20260112`
  (trigger, at least 50,000 input tokens, default 150,000; pause_after_compaction;
  instructions), the last behind the beta `compact-2026-01-12`;
- `compaction: {type: "summarize", instructions}` (beta `compact-2026-09-04`): an on-demand
  compaction, never together with `context_management`;
- `compaction` blocks in assistant messages: everything before the last one with content is
  dropped by the API; a signed one (on demand) must open the conversation and be sent back
  as it came.

The edits work on the request's rendered blocks (`Rendered`), in the order listed; what they
change (a tool result replaced by a placeholder, a thinking block removed) changes the prompt
from that block on, so the prompt cache is read up to it and written again after it, as the
documentation warns. The API is stateless: every request is edited afresh from what it
carries. docs/simulator.md says which wordings and behaviours the documentation leaves open and
what the simulator assumes there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from agent_server.sim.compaction import signature_problem
from agent_server.sim.fields import FieldPath, FieldProblem, dotted, get_field
from agent_server.sim.rejection import RequestRejected
from agent_server.sim.tokenizer import count_tokens
from agent_server.sim.transcript import Part, ThinkingPart, ToolCallPart, ToolResultPart

COMPACT_BETA = "compact-2026-01-12"
ON_DEMAND_BETA = "compact-2026-09-04"
COMPACTION_BETAS = frozenset((COMPACT_BETA, ON_DEMAND_BETA))
COMPACT_EDIT = "compact_20260112"
CLEAR_TOOL_USES = "clear_tool_uses_20250919"
CLEAR_THINKING = "clear_thinking_20251015"
COMPACT_MIN_TRIGGER = 50_000
COMPACT_DEFAULT_TRIGGER = 150_000
CLEAR_DEFAULT_TRIGGER = 100_000
CLEAR_DEFAULT_KEEP = 3
# What a cleared tool result holds (the documentation says "placeholder text"; its words are
# the simulator's).
CLEARED_TOOL_RESULT = "[This tool result was cleared to save context.]"


def invalid(message: str, error_code: str | None = None) -> RequestRejected:
    return RequestRejected(400, message, "invalid_request_error", error_code=error_code)


# --- the edits ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompactEdit:
    trigger: int = COMPACT_DEFAULT_TRIGGER
    pause: bool = False
    instructions: str | None = None


@dataclass(frozen=True, slots=True)
class ClearToolUses:
    trigger_kind: Literal["input_tokens", "tool_uses"] = "input_tokens"
    trigger: int = CLEAR_DEFAULT_TRIGGER
    keep: int = CLEAR_DEFAULT_KEEP
    clear_at_least: int = 0
    exclude: frozenset[str] = frozenset()
    clear_inputs: bool | frozenset[str] = False


@dataclass(frozen=True, slots=True)
class ClearThinking:
    keep: int | None = None  # thinking turns kept; None: all of them


Edit = CompactEdit | ClearToolUses | ClearThinking


@dataclass(frozen=True, slots=True)
class ContextManagement:
    edits: tuple[Edit, ...]

    @property
    def compact(self) -> CompactEdit | None:
        return next((edit for edit in self.edits if isinstance(edit, CompactEdit)), None)


@dataclass(frozen=True, slots=True)
class OnDemand:
    """`compaction: {type: "summarize"}`: the request is a compaction request."""

    instructions: str | None = None


def parse_context_management(body: Mapping[str, Any], betas: frozenset[str] | None,
                             thinking: bool) -> ContextManagement | None:
    config = get_field(body, "context_management", (), "object")
    if config is None:
        return None
    for key in config:
        if key != "edits":
            raise invalid(f"context_management.{key}: Extra inputs are not permitted")
    edits_data = get_field(config, "edits", ("context_management",), "list") or []
    edits: list[Edit] = []
    allowed = [CLEAR_TOOL_USES, CLEAR_THINKING]
    if betas is None or COMPACT_BETA in betas:
        allowed.append(COMPACT_EDIT)
    for index, data in enumerate(edits_data):
        path: FieldPath = ("context_management", "edits", index)
        if not isinstance(data, dict):
            raise FieldProblem(path, "type", "object", data)
        kind = data.get("type")
        if kind not in allowed:
            tags = ", ".join(f"'{tag}'" for tag in allowed)
            raise invalid(f"{dotted(path)}.type: Input tag '{kind}' found using 'type' does not "
                          f"match any of the expected tags: {tags}")
        if kind == COMPACT_EDIT:
            edits.append(_compact_edit(data, path))
        elif kind == CLEAR_TOOL_USES:
            edits.append(_clear_tool_uses(data, path))
        else:
            if not thinking:
                raise invalid(f"{dotted(path)}: `{CLEAR_THINKING}` requires thinking to be "
                              "enabled")
            edits.append(_clear_thinking(data, path))
    kinds = [type(edit) for edit in edits]
    if len(set(kinds)) < len(kinds):
        raise invalid("context_management.edits: each strategy may be listed only once")
    if ClearThinking in kinds and kinds[0] is not ClearThinking:
        raise invalid(f"context_management.edits: `{CLEAR_THINKING}` must be the first edit "
                      "when it is combined with others")
    return ContextManagement(tuple(edits))


def _only(data: Mapping[str, Any], path: FieldPath, known: tuple[str, ...]) -> None:
    for key in data:
        if key not in known:
            raise invalid(f"{dotted((*path, key))}: Extra inputs are not permitted")


def _count(data: Mapping[str, Any], key: str, path: FieldPath, kinds: tuple[str, ...],
           minimum: int = 0) -> tuple[str, int] | None:
    """A `{type, value}` count such as `{"type": "input_tokens", "value": 100000}`."""
    value = get_field(data, key, path, "object")
    if value is None:
        return None
    where = (*path, key)
    _only(value, where, ("type", "value"))
    kind = get_field(value, "type", where, "string", required=True)
    if kind not in kinds:
        expected = " or ".join(f"'{k}'" for k in kinds)
        raise invalid(f"{dotted(where)}.type: Input should be {expected}")
    number = get_field(value, "value", where, "integer", required=True)
    if number < minimum:
        raise invalid(f"{dotted(where)}.value: Input should be greater than or equal to "
                      f"{minimum}")
    return kind, number


def _compact_edit(data: Mapping[str, Any], path: FieldPath) -> CompactEdit:
    _only(data, path, ("type", "trigger", "pause_after_compaction", "instructions"))
    trigger = _count(data, "trigger", path, ("input_tokens",), COMPACT_MIN_TRIGGER)
    pause = get_field(data, "pause_after_compaction", path, "boolean") or False
    instructions = get_field(data, "instructions", path, "string")
    return CompactEdit(trigger[1] if trigger else COMPACT_DEFAULT_TRIGGER, pause, instructions)


def _clear_tool_uses(data: Mapping[str, Any], path: FieldPath) -> ClearToolUses:
    _only(data, path, ("type", "trigger", "keep", "clear_at_least", "exclude_tools",
                       "clear_tool_inputs"))
    trigger = _count(data, "trigger", path, ("input_tokens", "tool_uses"), 1)
    keep = _count(data, "keep", path, ("tool_uses",))
    at_least = _count(data, "clear_at_least", path, ("input_tokens",))
    exclude = get_field(data, "exclude_tools", path, "list") or []
    if not all(isinstance(name, str) for name in exclude):
        raise invalid(f"{dotted((*path, 'exclude_tools'))}: Input should be a valid list of "
                      "strings")
    inputs = data.get("clear_tool_inputs", False)
    clear_inputs: bool | frozenset[str]
    if inputs is None or isinstance(inputs, bool):
        clear_inputs = bool(inputs)
    elif isinstance(inputs, list) and all(isinstance(name, str) for name in inputs):
        clear_inputs = frozenset(inputs)
    else:
        raise invalid(f"{dotted((*path, 'clear_tool_inputs'))}: Input should be a valid "
                      "boolean or a valid list of strings")
    return ClearToolUses(
        trigger_kind="tool_uses" if trigger and trigger[0] == "tool_uses" else "input_tokens",
        trigger=trigger[1] if trigger else CLEAR_DEFAULT_TRIGGER,
        keep=keep[1] if keep else CLEAR_DEFAULT_KEEP,
        clear_at_least=at_least[1] if at_least else 0,
        exclude=frozenset(exclude),
        clear_inputs=clear_inputs,
    )


def _clear_thinking(data: Mapping[str, Any], path: FieldPath) -> ClearThinking:
    _only(data, path, ("type", "keep"))
    keep = data.get("keep")
    if keep is None or keep == "all" or (isinstance(keep, dict) and keep.get("type") == "all"):
        return ClearThinking(None)
    turns = _count(data, "keep", path, ("thinking_turns",))
    assert turns is not None
    return ClearThinking(turns[1])


def parse_on_demand(body: Mapping[str, Any], betas: frozenset[str] | None) -> OnDemand | None:
    config = body.get("compaction")
    if config is None:
        return None
    if betas is not None and ON_DEMAND_BETA not in betas:
        raise invalid("compaction: Extra inputs are not permitted")
    if not isinstance(config, dict):
        raise FieldProblem(("compaction",), "type", "object", config)
    _only(config, ("compaction",), ("type", "instructions"))
    if config.get("type") != "summarize":
        raise invalid("compaction.type: Input should be 'summarize'")
    if body.get("context_management") is not None:
        raise invalid("compaction: cannot be used together with `context_management`")
    if body.get("stop_sequences"):
        raise invalid("compaction: cannot be used together with `stop_sequences`")
    tool_choice = body.get("tool_choice")
    if isinstance(tool_choice, dict) and tool_choice.get("type") in ("any", "tool"):
        raise invalid("compaction: cannot be used with a `tool_choice` that forces a tool")
    instructions = get_field(config, "instructions", ("compaction",), "string")
    return OnDemand(instructions if instructions and instructions.strip() else None)


# --- the conversation as rendered -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rendered:
    """One block of the request's messages as the prompt renders it: the block as sent (its
    cache identity), its tokens without the role header, its TTL when it is a breakpoint, and
    what the model reads of it."""

    role: str  # user, assistant, or system (a mid-conversation system message)
    kind: str
    source: Mapping[str, Any]
    tokens: int
    ttl: float | None
    part: Part | None
    m_index: int
    b_index: int
    summary: str | None = None  # a compaction block's content


def after_latest_compaction(rendered: Sequence[Rendered]) -> list[Rendered]:
    """What the API renders: from the last compaction block with content on (everything
    before it is dropped); compaction blocks without content are no-ops."""
    start = 0
    for index, item in enumerate(rendered):
        if item.kind == "compaction" and item.summary is not None:
            start = index
    return [item for item in rendered[start:]
            if not (item.kind == "compaction" and item.summary is None)]


# --- compaction blocks -----------------------------------------------------------------------


def check_signature(content: str, signature: str, where: FieldPath) -> None:
    problem = signature_problem(content, signature)
    if problem == "invalid":
        raise invalid(f"{dotted(where)}: Invalid `signature` in `compaction` block",
                      "compaction_signature_invalid")
    if problem == "mismatch":
        raise invalid(f"{dotted(where)}: the `compaction` block's content differs from the "
                      "one its signature was made for; send the block back as it was returned",
                      "compaction_content_mismatch")


def check_compaction_blocks(rendered: Sequence[Rendered], context: ContextManagement | None
                            ) -> None:
    """Where compaction blocks may be, and with what."""
    signed = [item for item in rendered
              if item.kind == "compaction" and item.summary is not None
              and item.source.get("signature") is not None]
    unsigned = [item for item in rendered
                if item.kind == "compaction" and item.summary is not None
                and item.source.get("signature") is None]
    if len(signed) > 1:
        raise invalid("messages: more than one `compaction` block with content; send only the "
                      "one the conversation returned last", "compaction_block_ambiguous")
    for item in signed:
        where: FieldPath = ("messages", item.m_index, "content", item.b_index)
        if (item.m_index, item.b_index) != (0, 0):
            raise invalid(f"{dotted(where)}: a `compaction` block must be the first block of "
                          "the conversation", "compaction_block_misplaced")
        check_signature(str(item.summary), str(item.source.get("signature")), where)
        if context is not None and context.compact is not None:
            raise invalid(f"{dotted(where)}: a `compaction` block returned by `compaction` "
                          f"cannot be sent with a `{COMPACT_EDIT}` edit")
    if unsigned and (context is None or context.compact is None):
        where = ("messages", unsigned[0].m_index, "content", unsigned[0].b_index)
        raise invalid(f"{dotted(where)}: a `compaction` block needs the `{COMPACT_EDIT}` edit "
                      "in `context_management.edits`")


def check_compaction_request(messages: Sequence[Any]) -> None:
    """An on-demand compaction cannot end on an unfinished assistant turn."""
    last = messages[-1] if messages else None
    if not isinstance(last, dict) or last.get("role") != "assistant":
        return
    content = last.get("content")
    if isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_use" for block in content
    ):
        raise invalid("messages: the compaction request ends on an `assistant` turn that is "
                      "not finished (its tool calls have no results)",
                      "compaction_incomplete_turn")


def has_content_to_summarise(rendered: Sequence[Rendered]) -> bool:
    return any(item.part is not None and item.role in ("user", "assistant") for item in rendered)


# --- the clearing edits ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Applied:
    """One edit that changed the prompt, as `context_management.applied_edits` reports it."""

    type: str
    cleared: int  # tool uses, or thinking turns
    cleared_input_tokens: int

    def to_json(self) -> dict[str, Any]:
        count = "cleared_tool_uses" if self.type == CLEAR_TOOL_USES else "cleared_thinking_turns"
        return {"type": self.type, count: self.cleared,
                "cleared_input_tokens": self.cleared_input_tokens}


def apply_clearing(rendered: list[Rendered], context: ContextManagement | None,
                   prompt_tokens: int) -> tuple[list[Rendered], tuple[Applied, ...]]:
    """The clearing edits, in the order listed, on the rendered messages of a prompt of
    `prompt_tokens` tokens (system and tools included)."""
    if context is None:
        return rendered, ()
    applied: list[Applied] = []
    for edit in context.edits:
        if isinstance(edit, ClearThinking):
            rendered, done = _clear_thinking_blocks(rendered, edit)
        elif isinstance(edit, ClearToolUses):
            rendered, done = _clear_tool_results(rendered, edit, prompt_tokens)
        else:
            continue
        if done is not None:
            applied.append(done)
            prompt_tokens -= done.cleared_input_tokens
    return rendered, tuple(applied)


def _clear_thinking_blocks(rendered: list[Rendered], edit: ClearThinking
                           ) -> tuple[list[Rendered], Applied | None]:
    if edit.keep is None:
        return rendered, None
    turns = sorted({item.m_index for item in rendered
                    if item.role == "assistant" and isinstance(item.part, ThinkingPart)})
    cleared_turns = set(turns[: max(len(turns) - edit.keep, 0)])
    if not cleared_turns:
        return rendered, None
    kept = [item for item in rendered
            if not (item.m_index in cleared_turns and item.kind in ("thinking",
                                                                      "redacted_thinking"))]
    cleared = sum(item.tokens for item in rendered) - sum(item.tokens for item in kept)
    return kept, Applied(CLEAR_THINKING, len(cleared_turns), cleared)


def _clear_tool_results(rendered: list[Rendered], edit: ClearToolUses, prompt_tokens: int
                        ) -> tuple[list[Rendered], Applied | None]:
    uses = [item for item in rendered if item.kind == "tool_use"]
    if edit.trigger_kind == "tool_uses":
        triggered = len(uses) > edit.trigger
    else:
        triggered = prompt_tokens > edit.trigger
    if not triggered:
        return rendered, None
    names = {str(item.source.get("id")): str(item.source.get("name")) for item in uses}
    clearable = [str(item.source.get("id")) for item in uses
                 if str(item.source.get("name")) not in edit.exclude]
    targets = set(clearable[: max(len(clearable) - edit.keep, 0)])
    out: list[Rendered] = []
    cleared_ids: set[str] = set()
    saved = 0
    for item in rendered:
        changed = _cleared(item, targets, names, edit)
        if changed is not item:
            saved += item.tokens - changed.tokens
            if item.kind == "tool_result":
                cleared_ids.add(str(item.source.get("tool_use_id")))
        out.append(changed)
    if not cleared_ids or saved < edit.clear_at_least:
        return rendered, None
    return out, Applied(CLEAR_TOOL_USES, len(cleared_ids), saved)


def _cleared(item: Rendered, targets: set[str], names: Mapping[str, str],
             edit: ClearToolUses) -> Rendered:
    """`item` with its tool result (or input) cleared, when the edit clears it."""
    if item.kind == "tool_result" and str(item.source.get("tool_use_id")) in targets:
        call_id = str(item.source.get("tool_use_id"))
        source: dict[str, Any] = {
            "type": "tool_result", "tool_use_id": call_id,
            "content": [{"type": "text", "text": CLEARED_TOOL_RESULT}],
        }
        if item.source.get("is_error"):
            source["is_error"] = True
        part = ToolResultPart(call_id, CLEARED_TOOL_RESULT, bool(item.source.get("is_error")))
        return replace(item, source=source, tokens=5 + count_tokens(CLEARED_TOOL_RESULT),
                       part=part)
    if item.kind == "tool_use" and str(item.source.get("id")) in targets:
        clear = edit.clear_inputs
        name = names.get(str(item.source.get("id")), "")
        if clear is True or (isinstance(clear, frozenset) and name in clear):
            call = ToolCallPart(str(item.source.get("id")), name, {})
            return replace(item, source={**item.source, "input": {}},
                           tokens=6 + count_tokens(name) + 1, part=call)
    return item
