"""The summary prompt: how a compaction asks the model for a summary.

SUMMARY_REQUEST_MARKER appears in every summary request (the fresh prompt and the final
instruction appended to the cached context). The built-in simulator looks for it to answer
with a deterministic extractive summary; a real model just reads it as a heading.

Two ways to ask (the agent chooses):
- `build_summary_instruction`: one final user instruction appended after the current context,
  so that the request reuses the cached prefix (cheap: the history is already in the cache);
- `build_summary_prompt`: a fresh prompt holding the serialised conversation and the previous
  summary (for a different summary model, or when the context itself does not fit).
Either way a later compaction summarises only the previous summary plus what came after it
(invariant 7): its cost does not grow with the session.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from agent_server.llm.messages import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
)
from agent_server.session.entries import CompactionDetails, CompactionEntry

SUMMARY_REQUEST_MARKER = "<agent-server:summary-request>"
SUMMARY_OPEN = "<summary>"
SUMMARY_CLOSE = "</summary>"
# How a summary appears at the head of a compacted context.
SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
)
# Heading of a split turn's early part inside the summary block.
SPLIT_TURN_HEADING = "## Current turn so far (its early part, summarised)"

DEFAULT_MAX_TOOL_RESULT_CHARS = 2000

SUMMARY_CONTRACT = """\
Write the summary in exactly these sections, in this order, as Markdown headings. Be concrete
and complete: whoever continues has nothing but this summary and the messages kept after it.

## Goal
What the user wants overall, in one to three sentences.

## Constraints and preferences
The user's instructions, requirements and preferences, quoted verbatim ("...") where they gave
them; include every one still in force.

## Progress
### Done
What is finished, with the outcome.
### In progress
What was being worked on when the history was cut, and how far it got.
### Blocked
What is stuck and why (or "Nothing").

## Key decisions
Choices made and the reason for each.

## Files read
Exact paths, one per line.

## Files modified
Exact paths, one per line, with what changed. Keep every path listed in an earlier summary.

## Next steps
What to do next, in order.

## Critical context
Exact names (functions, classes, variables, commands), error messages, numbers, ids, URLs and
values that the work depends on, copied exactly."""

FOLD_INSTRUCTION = (
    "The previous summary covers everything before the conversation above. Fold it into one "
    "complete summary: keep what still matters from it, update what changed, and do not "
    "refer back to it."
)


# --- the summary as it appears in a compacted context ---------------------------------------


def summary_message_text(summary: str, split_turn_summary: str | None = None) -> str:
    """The text that carries a compaction's summary at the head of the projection."""
    body = summary.strip()
    if split_turn_summary:
        body = f"{body}\n\n{SPLIT_TURN_HEADING}\n{split_turn_summary.strip()}"
    return f"{SUMMARY_PREFIX}\n\n{SUMMARY_OPEN}\n{body}\n{SUMMARY_CLOSE}"


def previous_summary_text(compaction: CompactionEntry | None) -> str | None:
    """What the next compaction folds in: the summary and any split-turn summary."""
    if compaction is None:
        return None
    if compaction.split_turn_summary:
        return f"{compaction.summary.strip()}\n\n{SPLIT_TURN_HEADING}\n" + (
            compaction.split_turn_summary.strip()
        )
    return compaction.summary


# --- serialisation --------------------------------------------------------------------------


def serialize_conversation(
    messages: Iterable[Message], *, max_tool_result_chars: int = DEFAULT_MAX_TOOL_RESULT_CHARS
) -> str:
    """The conversation as plain text for a summary prompt.

    `[User]: ...`, `[Assistant]: ...`, `[Assistant thinking]: ...`,
    `[Assistant tool call]: read(path="a.py")`, `[Tool result read]: ...` (tool results cut
    to `max_tool_result_chars`; the ledger keeps them whole).
    """
    lines: list[str] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, TextContent):
                    if block.text.strip():
                        lines.append(f"[Assistant]: {block.text}")
                elif isinstance(block, ThinkingContent):
                    if block.thinking.strip():
                        lines.append(f"[Assistant thinking]: {block.thinking}")
                elif isinstance(block, ToolCall):
                    lines.append(f"[Assistant tool call]: {format_tool_call(block)}")
            if message.stop_reason == "error" and message.error_message:
                lines.append(f"[Assistant error]: {message.error_message}")
        elif isinstance(message, ToolResultMessage):
            label = f"[Tool result {message.tool_name}{' (error)' if message.is_error else ''}]"
            text = _truncate(_content_text(message.content), max_tool_result_chars)
            lines.append(f"{label}: {text}")
        else:
            lines.append(f"[User]: {_content_text(message.content)}")
    return "\n\n".join(lines)


def format_tool_call(call: ToolCall) -> str:
    arguments = ", ".join(
        f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in call.arguments.items()
    )
    return f"{call.name}({arguments})"


def _content_text(content: Sequence[UserContent]) -> str:
    parts: list[str] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent):
            parts.append(f"[image {block.mime_type}]")
    return "\n".join(parts)


def _truncate(text: str, limit: int) -> str:
    if limit < 0 or len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters not shown]"


# --- prompts --------------------------------------------------------------------------------


def _file_lists(file_operations: CompactionDetails | None) -> str | None:
    if file_operations is None or not (
        file_operations.read_files or file_operations.modified_files
    ):
        return None
    parts = ["Files touched so far (carry every path into the summary's file sections):"]
    if file_operations.read_files:
        parts.append("Read: " + ", ".join(file_operations.read_files))
    if file_operations.modified_files:
        parts.append("Modified: " + ", ".join(file_operations.modified_files))
    return "\n".join(parts)


def _user_instructions(instructions: str | None) -> str | None:
    if not instructions or not instructions.strip():
        return None
    return f"Additional instructions for this summary:\n{instructions.strip()}"


def build_summary_prompt(
    messages: Sequence[Message],
    *,
    previous_summary: str | None = None,
    instructions: str | None = None,
    file_operations: CompactionDetails | None = None,
    max_tool_result_chars: int = DEFAULT_MAX_TOOL_RESULT_CHARS,
) -> str:
    """A self-contained summary request: `messages` are only those after the previous
    compaction's kept point (the previous summary covers the rest)."""
    conversation = serialize_conversation(messages, max_tool_result_chars=max_tool_result_chars)
    parts: list[str | None] = [
        SUMMARY_REQUEST_MARKER,
        "Summarise the conversation below so that the work can continue from the summary "
        "alone. Do not continue the conversation and do not call tools.",
        f"<conversation>\n{conversation}\n</conversation>",
        f"<previous-summary>\n{previous_summary.strip()}\n</previous-summary>"
        if previous_summary
        else None,
        SUMMARY_CONTRACT,
        FOLD_INSTRUCTION if previous_summary else None,
        _file_lists(file_operations),
        _user_instructions(instructions),
        "Answer with the summary only.",
    ]
    return "\n\n".join(part for part in parts if part)


def build_summary_instruction(
    *,
    kept_messages: int,
    previous_summary_in_context: bool,
    instructions: str | None = None,
    file_operations: CompactionDetails | None = None,
) -> str:
    """The one instruction appended after the current context to ask for a summary while
    reusing the cached prefix. The last `kept_messages` messages stay verbatim after the
    compaction, so they are left out of the summary."""
    if kept_messages > 0:
        scope = (
            f"Summarise the conversation above except its last {kept_messages} "
            f"message{'s' if kept_messages != 1 else ''}: "
            f"{'those stay' if kept_messages != 1 else 'that one stays'} verbatim after the "
            "summary, so do not summarise them."
        )
    else:
        scope = "Summarise the whole conversation above."
    parts: list[str | None] = [
        SUMMARY_REQUEST_MARKER,
        "The conversation is about to be compacted. " + scope,
        "The summary at the head of the conversation covers everything before it: fold it "
        "into one complete summary, keeping what still matters and updating what changed."
        if previous_summary_in_context
        else None,
        "Do not call tools and do not continue the task; answer only with the summary.",
        SUMMARY_CONTRACT,
        _file_lists(file_operations),
        _user_instructions(instructions),
    ]
    return "\n\n".join(part for part in parts if part)


TURN_PREFIX_CONTRACT = """\
Write it in these sections, as Markdown headings:

## Request
What the user asked for in this turn (quote their words where they matter).

## Done so far in this turn
Tool calls made and what they found or changed: exact paths, names, errors and values.

## State at the cut
What was about to happen next, so that the kept messages that follow make sense."""


def build_turn_prefix_prompt(
    messages: Sequence[Message],
    *,
    instructions: str | None = None,
    max_tool_result_chars: int = DEFAULT_MAX_TOOL_RESULT_CHARS,
) -> str:
    """A summary request for the early part of a turn too large to keep whole (the later
    part is kept verbatim after the summary)."""
    conversation = serialize_conversation(messages, max_tool_result_chars=max_tool_result_chars)
    parts: list[str | None] = [
        SUMMARY_REQUEST_MARKER,
        "The messages below are the early part of the current turn; the turn is too large to "
        "keep whole, and its later part stays verbatim after this summary. Summarise the early "
        "part so that the later part can be understood without it. Do not call tools.",
        f"<conversation>\n{conversation}\n</conversation>",
        TURN_PREFIX_CONTRACT,
        _user_instructions(instructions),
        "Answer with the summary only.",
    ]
    return "\n\n".join(part for part in parts if part)


# --- file operations ------------------------------------------------------------------------

READ_TOOLS: frozenset[str] = frozenset(("read", "ls", "grep", "find", "glob"))
WRITE_TOOLS: frozenset[str] = frozenset(("write", "edit", "multi_edit", "multiedit"))
_PATH_KEYS = ("path", "file_path", "filePath")


def extract_file_operations(
    messages: Iterable[Message], previous: CompactionDetails | None = None
) -> CompactionDetails:
    """Paths read (read/ls/grep/find) and modified (write/edit) by the tool calls in
    `messages`, unioned with the previous compaction's, sorted and deduplicated.

    A call whose result is an error does not count. A modified file is listed as modified
    only, not also as read.
    """
    read: set[str] = set(previous.read_files) if previous else set()
    modified: set[str] = set(previous.modified_files) if previous else set()
    calls: dict[str, tuple[str, str]] = {}  # call id -> (kind, path)
    failed: set[str] = set()
    for message in messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                name = call.name.lower()
                kind = "read" if name in READ_TOOLS else "write" if name in WRITE_TOOLS else None
                path = next(
                    (
                        call.arguments[k]
                        for k in _PATH_KEYS
                        if isinstance(call.arguments.get(k), str)
                    ),
                    None,
                )
                if kind is not None and path:
                    calls[call.id] = (kind, path)
        elif isinstance(message, ToolResultMessage) and message.is_error:
            failed.add(message.tool_call_id)
    for call_id, (kind, path) in calls.items():
        if call_id in failed:
            continue
        (read if kind == "read" else modified).add(path)
    return CompactionDetails(
        read_files=tuple(sorted(read - modified)), modified_files=tuple(sorted(modified))
    )
