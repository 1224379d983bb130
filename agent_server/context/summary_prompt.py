"""The summary prompt: how a compaction asks the model for a summary.

SUMMARY_REQUEST_MARKER appears in every summary request (the fresh prompt and the final
instruction appended to the cached context); a model reads it as a heading. The built-in
simulator does not look for it: it recognises a summary request from its words, as it does
every client's (docs/simulator.md).

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
from collections.abc import Callable, Iterable, Sequence

from agent_server.llm.messages import (
    AssistantMessage,
    CompactionContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from agent_server.session.entries import (
    Carried,
    CompactionDetails,
    CompactionEntry,
    Failure,
    PlanItem,
)

SUMMARY_REQUEST_MARKER = "<agent-server:summary-request>"
SUMMARY_OPEN = "<summary>"
SUMMARY_CLOSE = "</summary>"
# How a summary appears at the head of a compacted context.
SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary "
    "(the history itself is kept: the recall tool searches its prompts, answers and tool "
    "results):"
)
# Heading of a split turn's early part inside the summary block.
SPLIT_TURN_HEADING = "## Current turn so far (its early part, summarised)"

DEFAULT_MAX_TOOL_RESULT_CHARS = 2000

SUMMARY_SYSTEM_PROMPT = (
    "You summarise a coding agent's conversation so that the agent can continue the work "
    "from the summary alone. Be exact: keep file paths, names, numbers and error messages "
    "verbatim. Answer with the summary only."
)
# The most a summary may take (its output budget), and how much a fresh summary prompt may
# take at most: what the summary model's window leaves after that budget and a margin for the
# estimate's error (chars/4 counts dense content low).
SUMMARY_OUTPUT_TOKENS = 8192
PROMPT_MARGIN_TOKENS = 4096
# The cached summary request is the context plus an instruction (about this many tokens),
# and its answer must fit in what is left of the window: at least MIN_SUMMARY_TOKENS.
INSTRUCTION_TOKENS = 1024
MIN_SUMMARY_TOKENS = 2048
CHARS_PER_TOKEN = 4
CONVERSATION_TAGS = "<conversation>\n\n</conversation>"

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


# What stands for a provider's compaction that only the provider can read.
ENCRYPTED_SUMMARY_NOTE = (
    "(The earlier conversation was compacted by the provider; its summary is encrypted, and "
    "only that provider's API can read it.)"
)


def summary_message_text(
    summary: str, split_turn_summary: str | None = None, carried: Carried | None = None
) -> str:
    """The text that carries a compaction's summary at the head of the projection: the
    summary, then what the compaction carries verbatim (context/carried.py), one text."""
    body = summary.strip()
    if split_turn_summary:
        body = f"{body}\n\n{SPLIT_TURN_HEADING}\n{split_turn_summary.strip()}"
    text = f"{SUMMARY_PREFIX}\n\n{SUMMARY_OPEN}\n{body}\n{SUMMARY_CLOSE}"
    block = render_carried(carried) if carried is not None else ""
    return f"{text}\n\n{block}" if block else text


CARRIED_OPEN = "<carried-context>"
CARRIED_CLOSE = "</carried-context>"
CARRIED_INTRO = (
    "Carried verbatim by agent-server across every compaction; it holds whatever the summary "
    "above says."
)


def render_carried(carried: Carried) -> str:
    """The carried block as the model reads it, right after the summary ("" when empty)."""
    if carried.empty:
        return ""
    parts = [CARRIED_OPEN, CARRIED_INTRO]
    parts += _messages("user-messages", "the user's own words", carried.user_messages,
                       carried.user_messages_left_out,
                       "where two disagree, the later one stands; ")
    parts += _messages("assistant-messages", "your own words before this point", carried.said,
                       carried.said_left_out)
    if carried.pins:
        parts.append("<pinned> (rules and facts pinned for this session)")
        parts += [f"- [{pin.kind}, pinned by the {pin.by}] {pin.text}" for pin in carried.pins]
        parts.append("</pinned>")
    if carried.plan:
        parts.append("<plan> (the task's plan as last written)")
        parts += [_plan_line(item) for item in carried.plan]
        parts.append("</plan>")
    if carried.failures:
        more = (
            f"; {carried.failures_left_out} older ones left out"
            if carried.failures_left_out
            else ""
        )
        parts.append(f"<failed> (tool calls that failed, oldest first{more})")
        parts += [failure_line(failure) for failure in carried.failures]
        parts.append("</failed>")
    if carried.worked:
        parts.append(
            "<worked> (shell commands that succeeded, each once, newest last; after → how "
            "its output ended: a short one whole, else its last line)"
        )
        parts += [f"- {command}".replace("\n", "\n    ") for command in carried.worked]
        parts.append("</worked>")
    parts.append(CARRIED_CLOSE)
    return "\n".join(parts)


def _messages(
    tag: str, whose: str, texts: Sequence[str], left_out: int, rule: str = ""
) -> list[str]:
    """A part of the carried block that holds messages verbatim, oldest first."""
    if not texts:
        return []
    more = f"; {left_out} older ones left out" if left_out else ""
    heading = f"<{tag}> ({whose}, oldest first{more}; {rule}a long one cut: recall finds it whole)"
    return [heading, *(f"<message>\n{text}\n</message>" for text in texts), f"</{tag}>"]


def _plan_line(item: PlanItem) -> str:
    priority = f" ({item.priority} priority)" if item.priority != "medium" else ""
    return f"- [{item.status}] {item.content}{priority}"


def failure_line(failure: Failure) -> str:
    line = f"- {failure.call} failed: {failure.error}"
    return f"{line}\n  Then: {failure.then}" if failure.then else line


def compaction_text(block: CompactionContent) -> str:
    """A provider's compaction as text, for a summary of the conversation it opens: its
    summary handed over, or a note that only the provider can read it."""
    if block.summary:
        return summary_message_text(block.summary)
    return ENCRYPTED_SUMMARY_NOTE


def previous_summary_text(compaction: CompactionEntry | None) -> str | None:
    """What the next compaction folds in: the summary and any split-turn summary."""
    if compaction is None:
        return None
    if compaction.split_turn_summary:
        return f"{compaction.summary.strip()}\n\n{SPLIT_TURN_HEADING}\n" + (
            compaction.split_turn_summary.strip()
        )
    return compaction.summary


# --- notes as they appear in a context ------------------------------------------------------

NOTE_OPEN = "<editor-note>"
NOTE_CLOSE = "</editor-note>"
OLD_NOTE_OPEN = "[Note from the editor:"  # how sessions before notes of their own wrote them
BRANCH_SUMMARY_NOTE = "branchSummary"
BRANCH_SUMMARY_PREFIX = (
    "The user went back to an earlier point of the conversation and continues from here. "
    "What happened on the branch left behind, summarised:"
)
NOTES_ARE_NOT_REQUESTS = (
    "Text marked as an editor note (<editor-note> tags, or [Editor note] lines) was added by "
    "the editor, not written by the user: use the facts it gives, but never present it as a "
    "request, a constraint or a preference of the user."
)


def note_message(kind: str, text: str) -> UserMessage:
    """A note of `kind` (e.g. "externalEdit") as the model sees it: marked, never taken for
    something the user asked."""
    return UserMessage((TextContent(f"{NOTE_OPEN}\n{text.strip()}\n{NOTE_CLOSE}"),), note=kind)


def branch_summary_message(summary: str) -> UserMessage:
    return note_message(BRANCH_SUMMARY_NOTE, f"{BRANCH_SUMMARY_PREFIX}\n\n{summary.strip()}")


def note_text(message: UserMessage) -> str:
    """What a note says, without the marks the model sees around it (for display)."""
    text = "\n".join(block.text for block in message.content if isinstance(block, TextContent))
    return _note_body(text) or text.strip()


def _note_body(text: str) -> str | None:
    """The body of a marked note text block (or of the bracketed form older sessions
    appended to prompts and tool results), or None if `text` is not one."""
    stripped = text.strip()
    if stripped.startswith(NOTE_OPEN) and stripped.endswith(NOTE_CLOSE):
        return stripped[len(NOTE_OPEN) : -len(NOTE_CLOSE)].strip()
    if stripped.startswith(OLD_NOTE_OPEN) and stripped.endswith("]"):
        return stripped[len(OLD_NOTE_OPEN) : -1].strip()
    return None


# --- serialisation --------------------------------------------------------------------------

# What one serialised message may take in a summary prompt, in characters: its head and tail
# are kept and the middle cut with a note of the size, so that no single message (a pasted
# file, a long tool output) can make the summary request too large.
MAX_TEXT_CHARS = 12_000
MAX_THINKING_CHARS = 4_000
MAX_TOOL_CALL_CHARS = 2_000
CUT_NOTE_CHARS = 48  # the most "\n[... N characters cut here ...]\n" takes
LEFT_OUT_NOTE_CHARS = 110  # the most the line saying how many messages were left out takes


def serialize_conversation(
    messages: Iterable[Message], *, max_tool_result_chars: int = DEFAULT_MAX_TOOL_RESULT_CHARS
) -> str:
    """The conversation as plain text for a summary prompt.

    `[User]: ...`, `[Editor note]: ...`, `[Assistant]: ...`, `[Assistant thinking]: ...`,
    `[Assistant tool call]: read(path="a.py")`, `[Tool result read]: ...`. Every part is
    bounded (tool results to `max_tool_result_chars`, the user's and the assistant's text to
    MAX_TEXT_CHARS, ...): its head and tail are kept and the cut is said; the ledger keeps
    everything whole.
    """
    return "\n\n".join(line for message in messages for line in serialize_message(
        message, max_tool_result_chars=max_tool_result_chars
    ))


def serialize_message(
    message: Message, *, max_tool_result_chars: int = DEFAULT_MAX_TOOL_RESULT_CHARS
) -> list[str]:
    """The lines of one message in a serialised conversation (see serialize_conversation)."""
    lines: list[str] = []
    if isinstance(message, AssistantMessage):
        for block in message.content:
            if isinstance(block, TextContent):
                if block.text.strip():
                    lines.append(f"[Assistant]: {bound_text(block.text, MAX_TEXT_CHARS)}")
            elif isinstance(block, ThinkingContent):
                if block.thinking.strip():
                    thinking = bound_text(block.thinking, MAX_THINKING_CHARS)
                    lines.append(f"[Assistant thinking]: {thinking}")
            elif isinstance(block, ToolCall):
                call = bound_text(format_tool_call(block), MAX_TOOL_CALL_CHARS)
                lines.append(f"[Assistant tool call]: {call}")
            elif isinstance(block, CompactionContent):
                lines.append(f"[User]: {compaction_text(block)}")
        if message.stop_reason == "error" and message.error_message:
            lines.append(f"[Assistant error]: {message.error_message}")
    elif isinstance(message, ToolResultMessage):
        label = f"[Tool result {message.tool_name}{' (error)' if message.is_error else ''}]"
        parts: list[str] = []
        for part in message.content:
            body = _note_body(part.text) if isinstance(part, TextContent) else None
            if body is not None:  # a note the editor appended to the result (older sessions)
                lines.append(f"[Editor note]: {bound_text(body, MAX_TEXT_CHARS)}")
            else:
                parts.append(_block_text(part))
        text = bound_text("\n".join(parts), max_tool_result_chars)
        lines.insert(0, f"{label}: {text}")
    else:
        prompt: list[str] = []
        for piece in message.content:
            body = _note_body(piece.text) if isinstance(piece, TextContent) else None
            if body is not None or (message.note is not None and isinstance(piece, TextContent)):
                note = body if body is not None else _block_text(piece)
                lines.append(f"[Editor note]: {bound_text(note, MAX_TEXT_CHARS)}")
            else:
                prompt.append(_block_text(piece))
        if prompt:
            text = bound_text("\n".join(prompt), MAX_TEXT_CHARS)
            lines.append(f"[User]: {text}")
    return lines


def bound_text(text: str, limit: int) -> str:
    """`text` if it has at most `limit` characters; else its head and tail (about half the
    limit each, cut at line ends where one is near) around a note of what was cut."""
    if limit < 0 or len(text) <= limit:
        return text
    half = max((limit - CUT_NOTE_CHARS) // 2, 1)
    head, tail = text[:half], text[len(text) - half :]
    newline = head.rfind("\n")
    if newline >= half * 3 // 4:
        head = head[: newline + 1]
    newline = tail.find("\n")
    if 0 <= newline <= half // 4:
        tail = tail[newline + 1 :]
    cut = len(text) - len(head) - len(tail)
    return f"{head}\n[... {cut} characters cut here ...]\n{tail}"


def format_tool_call(call: ToolCall) -> str:
    arguments = ", ".join(
        f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in call.arguments.items()
    )
    return f"{call.name}({arguments})"


def _block_text(block: UserContent) -> str:
    if isinstance(block, TextContent):
        return block.text
    return f"[image {block.mime_type}]"


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


def _carried_note(carried: Carried | None) -> str | None:
    """What the summary need not repeat: the parts the compaction carries verbatim after it;
    and the plan's step in progress, which the summary names."""
    if carried is None or carried.empty:
        return None
    parts = [
        name
        for name, present in (
            (_newest("the user's own messages", "the user's", "messages",
                     len(carried.user_messages), carried.user_messages_left_out),
             bool(carried.user_messages)),
            (_newest("the assistant's own messages", "the assistant's", "messages",
                     len(carried.said), carried.said_left_out),
             bool(carried.said)),
            ("the pinned rules and facts", bool(carried.pins)),
            ("the plan", bool(carried.plan)),
            (_newest("the tool calls that failed", "the", "failed tool calls",
                     len(carried.failures), carried.failures_left_out),
             bool(carried.failures)),
            ("the shell commands that worked", bool(carried.worked)),
        )
        if present
    ]
    listed = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    note = (
        f"After the summary, agent-server carries verbatim {listed}: refer to them briefly "
        "instead of copying them out."
    )
    if carried.user_messages_left_out or carried.said_left_out or carried.failures_left_out:
        # What is left out of the block is in no later context but the summary's.
        note += (
            " Older ones are not carried: keep in the summary what the older messages asked, "
            "ruled, found and decided and what the older failed calls tried."
        )
    step = next((item.content for item in carried.plan if item.status == "in_progress"), None)
    if step:
        note += f' The plan\'s step in progress is "{step}": name it under ### In progress.'
    return note


def _newest(whole: str, owner: str, things: str, carried: int, left_out: int) -> str:
    """How the note names a part of the carried block: whole, or its newest `carried` when
    older ones were left out ("the user's 7 newest messages")."""
    return f"{owner} {carried} newest {things}" if left_out else whole


def _user_instructions(instructions: str | None) -> str | None:
    if not instructions or not instructions.strip():
        return None
    return f"Additional instructions for this summary:\n{instructions.strip()}"


def fresh_prompt_tokens(context_window: int, max_output: int) -> int:
    """The most a fresh summary prompt may take on a model: its window less the summary's
    output budget and a margin."""
    output = min(SUMMARY_OUTPUT_TOKENS, max_output)
    return max(context_window - output - PROMPT_MARGIN_TOKENS, 1024)


def fit_conversation(
    messages: Sequence[Message],
    *,
    max_chars: int | None = None,
    max_tool_result_chars: int = DEFAULT_MAX_TOOL_RESULT_CHARS,
) -> str:
    """The serialised conversation, at most `max_chars` long: each message bounded, then the
    oldest messages left out (and said to be) until the rest fits, as Codex trims the oldest
    items of a summary request that does not fit."""
    parts = [
        "\n\n".join(lines)
        for message in messages
        if (lines := serialize_message(message, max_tool_result_chars=max_tool_result_chars))
    ]
    if max_chars is None:
        return "\n\n".join(parts)
    total = sum(len(part) for part in parts) + 2 * max(len(parts) - 1, 0)
    dropped = 0
    room = max_chars
    while total > room and dropped < len(parts) - 1:
        total -= len(parts[dropped]) + 2
        dropped += 1
        room = max_chars - LEFT_OUT_NOTE_CHARS
    kept = parts[dropped:]
    if kept and total > room:
        kept[0] = bound_text(kept[0], max(room - (total - len(kept[0])), 200))
    if dropped:
        kept.insert(
            0,
            f"[{dropped} older message{'s' if dropped != 1 else ''} left out here: the summary "
            "request has to fit the model's window]",
        )
    return "\n\n".join(kept)


def _with_conversation(
    head: Sequence[str | None],
    messages: Sequence[Message],
    tail: Sequence[str | None],
    max_tokens: int | None,
    max_tool_result_chars: int,
) -> str:
    """`head`, the serialised `messages` in <conversation> tags, then `tail`; with
    `max_tokens`, the conversation is fitted so that the whole stays within it (chars/4)."""
    room = None
    if max_tokens is not None:
        fixed = sum(len(part) + 2 for part in (*head, *tail) if part) + len(CONVERSATION_TAGS)
        room = max(max_tokens * CHARS_PER_TOKEN - fixed, 400)
    conversation = fit_conversation(
        messages, max_chars=room, max_tool_result_chars=max_tool_result_chars
    )
    parts = [*head, f"<conversation>\n{conversation}\n</conversation>", *tail]
    return "\n\n".join(part for part in parts if part)


def build_summary_prompt(
    messages: Sequence[Message],
    *,
    previous_summary: str | None = None,
    instructions: str | None = None,
    file_operations: CompactionDetails | None = None,
    max_tool_result_chars: int = DEFAULT_MAX_TOOL_RESULT_CHARS,
    max_tokens: int | None = None,
    carried: Carried | None = None,
    previous_carried: Carried | None = None,
) -> str:
    """A self-contained summary request: `messages` are only those after the previous
    compaction's kept point (the previous summary covers the rest). With `max_tokens`, the
    prompt is kept within that many tokens (chars/4) by leaving the oldest messages out.
    `previous_carried` is the block that followed the previous summary, given as the model
    read it in the context: what this compaction no longer carries is only there."""
    head = [
        SUMMARY_REQUEST_MARKER,
        "Summarise the conversation below so that the work can continue from the summary "
        "alone. Do not continue the conversation and do not call tools.",
    ]
    tail: list[str | None] = [
        f"<previous-summary>\n{previous_summary.strip()}\n</previous-summary>"
        if previous_summary
        else None,
        render_carried(previous_carried) if previous_carried is not None else None,
        SUMMARY_CONTRACT,
        FOLD_INSTRUCTION if previous_summary else None,
        NOTES_ARE_NOT_REQUESTS,
        _file_lists(file_operations),
        _carried_note(carried),
        _user_instructions(instructions),
        "Answer with the summary only.",
    ]
    return _with_conversation(head, messages, tail, max_tokens, max_tool_result_chars)


def build_summary_instruction(
    *,
    kept_messages: int,
    previous_summary_in_context: bool,
    instructions: str | None = None,
    file_operations: CompactionDetails | None = None,
    carried: Carried | None = None,
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
        NOTES_ARE_NOT_REQUESTS,
        _file_lists(file_operations),
        _carried_note(carried),
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
    max_tokens: int | None = None,
) -> str:
    """A summary request for the early part of a turn too large to keep whole (the later
    part is kept verbatim after the summary)."""
    head = [
        SUMMARY_REQUEST_MARKER,
        "The messages below are the early part of the current turn; the turn is too large to "
        "keep whole, and its later part stays verbatim after this summary. Summarise the early "
        "part so that the later part can be understood without it. Do not call tools.",
    ]
    tail = [
        TURN_PREFIX_CONTRACT,
        NOTES_ARE_NOT_REQUESTS,
        _user_instructions(instructions),
        "Answer with the summary only.",
    ]
    return _with_conversation(head, messages, tail, max_tokens, max_tool_result_chars)


BRANCH_SUMMARY_CONTRACT = """\
Write a short summary (at most about 300 words) in these sections, as Markdown headings:

## Tried
What was asked and done on that branch: exact paths, names, commands and errors.

## Learned
Facts found there that still hold (what works, what does not, and why).

## Left behind
Changes made there that may still be on disk (files written or edited), so that they are
not taken for the user's own."""


def build_branch_summary_prompt(
    messages: Sequence[Message],
    *,
    max_tool_result_chars: int = DEFAULT_MAX_TOOL_RESULT_CHARS,
    max_tokens: int | None = None,
) -> str:
    """A summary request for a branch the user left by rewinding (as pi does on tree
    navigation): the conversation continues from an earlier point, and this short summary
    tells the model what happened on the branch it no longer sees."""
    head = [
        SUMMARY_REQUEST_MARKER,
        "The user went back to an earlier point of the conversation. The messages below are "
        "the branch they left. Summarise it briefly so that the conversation can continue "
        "from the earlier point knowing what was tried. Do not call tools.",
    ]
    tail = [BRANCH_SUMMARY_CONTRACT, NOTES_ARE_NOT_REQUESTS, "Answer with the summary only."]
    return _with_conversation(head, messages, tail, max_tokens, max_tool_result_chars)


# --- file operations ------------------------------------------------------------------------

# How a tool call touches files, as its tool declares: the tool's kind (the Agent Client
# Protocol's: "read", "search", "edit", "execute", "other") and the paths the call names.
CallFiles = Callable[[ToolCall], tuple[str, Sequence[str]]]
READ_KINDS = frozenset(("read", "search"))
WRITE_KINDS = frozenset(("edit",))


def no_files(call: ToolCall) -> tuple[str, Sequence[str]]:
    """For a caller that knows nothing of its tools: no call names a file."""
    return "other", ()


def extract_file_operations(
    messages: Iterable[Message],
    previous: CompactionDetails | None = None,
    files_of: CallFiles = no_files,
) -> CompactionDetails:
    """The paths read and modified by the tool calls in `messages`, as their tools declare
    them (`files_of`: a read or search tool's paths are read, an edit tool's modified),
    unioned with the previous compaction's, sorted and deduplicated.

    A call whose result is an error does not count. A modified file is listed as modified
    only, not also as read.
    """
    read: set[str] = set(previous.read_files) if previous else set()
    modified: set[str] = set(previous.modified_files) if previous else set()
    calls: dict[str, tuple[str, Sequence[str]]] = {}  # call id -> (kind, paths)
    failed: set[str] = set()
    for message in messages:
        if isinstance(message, AssistantMessage):
            calls.update((call.id, files_of(call)) for call in message.tool_calls)
        elif isinstance(message, ToolResultMessage) and message.is_error:
            failed.add(message.tool_call_id)
    for call_id, (kind, paths) in calls.items():
        if call_id in failed:
            continue
        if kind in READ_KINDS:
            read.update(paths)
        elif kind in WRITE_KINDS:
            modified.update(paths)
    return CompactionDetails(
        read_files=tuple(sorted(read - modified)), modified_files=tuple(sorted(modified))
    )
