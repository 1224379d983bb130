"""What a compaction carries verbatim after its summary: invariant 9 of DESIGN.md.

The summary is the summariser's; what must survive any summary, however lossy, is carried by
the structure of the projection instead: computed at compaction time, deterministically from
the ledger, stored on the compaction entry (`CompactionEntry.carried`) and rendered right
after the summary, in the same text block (`render_carried`), so the projection stays byte
for byte the same for the whole cache cycle. Nothing of it goes in the system prompt. Each
part has its own budget:

- **the user's own words**: every prompt (what the user typed, without what its @-mentions
  attached; never an editor note), newest first within `user_tokens` (Codex keeps up to 20k
  tokens of user messages, codex-rs/core/src/compact.rs), the short ones before the pastes
  (each paste as its head and tail), rendered oldest first. The newest
  prompt, the latest request or the correction after it, is never dropped: when it alone is
  over the budget its head and tail are kept around a note of the cut. A prompt kept verbatim
  in the tail after the compaction is not repeated. The next compaction folds this list with
  the prompts since, so the words survive any number of compactions while they fit;
- **pins**: the rules and facts pinned by the user or the model, all of them (their total is
  bounded where they are made: `pins_budget`);
- **the plan**: the task's plan as the model last wrote it (its size is bounded by the plan
  tool), unless that plan entry is itself kept in the tail;
- **what worked**: each shell command whose result was not an error, with how its output
  ended (a short output whole, a reproduction's few lines; a long one's last line, a run's
  verdict), once for each ending (where it last ran; the time a run took is no other
  ending), newest first within `worked_tokens`, rendered oldest first (the command that
  worked, not a guess at one, and what it said before a fix as well as after);
- **what the model said**: the text of each of its messages (its findings, decisions and
  answers, not its calls; not the words of a message whose calls only look something up,
  "let me read the parser again", which say what it is about to see, not what it saw), each
  once, newest first within `said_tokens`, the short ones
  before the long (each long one as its head and tail), rendered oldest first: what it
  concluded from a file or an output, and what it decided, outlive any summary the way the
  user's words do. They are the first part to yield where a compaction would not make the
  context smaller with them (agent/compactor.py);
- **what failed**: each tool call whose result was an error (a command's non-zero exit, an
  edit that did not apply, a denied call), with its failing line and what the model said
  next, from the summarised part only (the kept tail shows its own), deduplicated, newest
  first within `failure_tokens`, rendered oldest first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from agent_server.context.estimate import estimate_text_tokens
from agent_server.context.projection import compaction_window, is_prompt
from agent_server.context.summary_prompt import (
    READ_KINDS,
    CallFiles,
    bound_text,
    failure_line,
    format_tool_call,
    no_files,
)
from agent_server.llm.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    calls_that_succeeded,
)
from agent_server.session.entries import (
    Carried,
    Entry,
    Failure,
    MessageEntry,
    Pin,
    PinEntry,
    PlanEntry,
    PlanItem,
)

# Codex keeps at most this many tokens of the user's messages after a compaction.
MAX_USER_TOKENS = 20_000
USER_SHARE_OF_THRESHOLD = 10  # and at most a tenth of the threshold here
MAX_FAILURE_TOKENS = 2_000
FAILURE_SHARE_OF_THRESHOLD = 40
MAX_WORKED_TOKENS = 1_200
WORKED_SHARE_OF_THRESHOLD = 40
MAX_PIN_TOKENS = 2_000
PIN_SHARE_OF_THRESHOLD = 12
MAX_SAID_TOKENS = 2_000
SAID_SHARE_OF_THRESHOLD = 40
# An older prompt longer than this (a pasted report, a log) is carried as its head and tail.
LONG_MESSAGE_TOKENS = 512
MIN_CUT_CHARS = 200
CALL_CHARS = 240
ERROR_CHARS = 240
THEN_CHARS = 320

# Error results that say a call never ran (or its end is unknown): no approach failed there
# (the turn loop's "Not run: ...", the ledger's and the projection's "No result: ...", the
# default aborted result).
_NOT_RUN = ("Not run", "No result", "The tool call was aborted")
_ERROR_LINE = re.compile(  # case matters: "FAILED test_x", not pytest's "1 failed in 2s"
    r"\b\w*(?:Error|Exception)\b|\bFAILED\b|\bFAIL\b|\b[Ee]rror:|\b[Ff]atal:|Traceback"
    r"|\bnot found\b|\bdenied\b|\bNo such\b|^E\s"
)
_NOTE_LINE = re.compile(r"^(?:Exit code -?\d+\.|\[Output truncated.*\])$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
# The model saying an approach it tried failed although its calls succeeded.
_NO_HELP = re.compile(
    r"\b(?:did not|didn't|does not|doesn't|did nothing to) (?:help|work|fix|change)\b"
    r"|\bmade no difference\b|\bhad no effect\b",
    re.IGNORECASE,
)
_ENDS = " → "  # between a command that worked and how its output ended
# A duration a run prints ("in 0.16s", "Ran 5 tests in 0.002s", "(0:00:01)", "12 ms").
_DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|secs?|seconds?)\b|\(\d+:\d\d:\d\d\)")
_CONDITION = re.compile(r"\b(?:if|unless|whether|in case)\b", re.IGNORECASE)  # not a result

@dataclass(frozen=True, slots=True)
class CarriedBudgets:
    """Token budgets of the parts a compaction carries (pins are bounded when made)."""

    user_tokens: int
    failure_tokens: int
    worked_tokens: int = 0
    said_tokens: int = 0


def carried_budgets(threshold: int) -> CarriedBudgets:
    return CarriedBudgets(
        user_tokens=min(MAX_USER_TOKENS, threshold // USER_SHARE_OF_THRESHOLD),
        failure_tokens=min(MAX_FAILURE_TOKENS, threshold // FAILURE_SHARE_OF_THRESHOLD),
        worked_tokens=min(MAX_WORKED_TOKENS, threshold // WORKED_SHARE_OF_THRESHOLD),
        said_tokens=min(MAX_SAID_TOKENS, threshold // SAID_SHARE_OF_THRESHOLD),
    )


def pins_budget(threshold: int) -> int:
    """The most all the pins of a session may take together, in tokens."""
    return min(MAX_PIN_TOKENS, threshold // PIN_SHARE_OF_THRESHOLD)


# --- the state in force -----------------------------------------------------------------------


def current_pins(entries: Sequence[Entry]) -> tuple[Pin, ...]:
    """The pins in force at the end of the path `entries` (or EntryTree.projection_entries):
    the latest compaction's carried pins, then the pin entries after it, in order."""
    window = compaction_window(entries)
    pins: dict[str, Pin] = {}
    start = 0
    if window.compaction is not None and window.compaction_index is not None:
        carried = window.compaction.carried
        pins = {pin.id: pin for pin in (carried.pins if carried else ())}
        start = window.compaction_index + 1
    for entry in entries[start:]:
        if isinstance(entry, PinEntry):
            if entry.action == "add":
                pins[entry.pin_id] = Pin(entry.pin_id, entry.kind, entry.text, entry.by)
            else:
                pins.pop(entry.pin_id, None)
    return tuple(pins.values())


def current_plan(entries: Sequence[Entry]) -> tuple[PlanItem, ...]:
    """The plan in force at the end of the path: the latest plan entry on it, else the
    latest compaction's carried plan (its plan entry was summarised)."""
    for entry in reversed(entries):
        if isinstance(entry, PlanEntry):
            return entry.items
    compaction = compaction_window(entries).compaction
    carried = compaction.carried if compaction is not None else None
    return carried.plan if carried is not None else ()


# --- what a compaction carries --------------------------------------------------------------


def carry(
    entries: Sequence[Entry],
    summarized: Sequence[MessageEntry],
    kept: Sequence[MessageEntry],
    budgets: CarriedBudgets,
    files_of: CallFiles = no_files,
) -> Carried:
    """What a compaction of the path `entries` carries, `summarized` being the message
    entries its summary replaces (the cut's summarised part and split-turn prefix) and `kept`
    those it keeps verbatim (find_cut_point's); `files_of` says each call's tool kind."""
    window = compaction_window(entries)
    previous = window.compaction.carried if window.compaction is not None else None
    previous = previous or Carried()
    summarized_messages = [entry.message for entry in summarized]
    prompts = [
        user_text(message)
        for message in summarized_messages
        if isinstance(message, UserMessage) and is_prompt(message)
    ]
    words, left_out = _words_within([*previous.user_messages, *prompts], budgets.user_tokens)
    said, said_left_out = _words_within(
        _latest_once([*previous.said, *model_words(summarized_messages, files_of)]),
        budgets.said_tokens,
    )
    failures, failures_left_out = _newest_within(
        _dedupe([*previous.failures, *failures_in(summarized_messages)]),
        budgets.failure_tokens,
    )
    plan_in_tail = bool(kept) and _latest_plan_after(entries, kept[0].id)
    worked = _newest_commands(
        [*previous.worked, *commands_that_worked(summarized_messages)], budgets.worked_tokens
    )
    return Carried(
        user_messages=words,
        user_messages_left_out=previous.user_messages_left_out + left_out,
        pins=current_pins(entries),
        plan=() if plan_in_tail else current_plan(entries),
        failures=failures,
        failures_left_out=previous.failures_left_out + failures_left_out,
        worked=worked,
        said=said,
        said_left_out=previous.said_left_out + said_left_out,
    )


def _latest_plan_after(entries: Sequence[Entry], entry_id: str) -> bool:
    """Whether the latest plan entry comes after the entry `entry_id` (the first one a
    compaction keeps: the plan's tool call is then shown verbatim in the tail)."""
    start = next((i for i, entry in enumerate(entries) if entry.id == entry_id), len(entries))
    return any(isinstance(entry, PlanEntry) for entry in entries[start:])


def user_text(message: UserMessage) -> str:
    """What the user typed or pasted in a prompt (images as a mark), without what its
    @-mentions attached."""
    parts = [
        block.text if isinstance(block, TextContent) else f"[image {block.mime_type}]"
        for block in message.typed
    ]
    return "\n".join(part for part in parts if part.strip()).strip()


def model_words(messages: Sequence[Message], files_of: CallFiles = no_files) -> list[str]:
    """The text of each of the model's messages in `messages` (its calls left out), in
    order; but for a message whose calls all only look something up (their tools' kind, as
    `files_of` says, is read or search: a read, a grep, a recall)."""
    texts = (
        _said(message)
        for message in messages
        if isinstance(message, AssistantMessage) and not _only_looks(message, files_of)
    )
    return [text for text in texts if text]


def _only_looks(message: AssistantMessage, files_of: CallFiles) -> bool:
    calls = message.tool_calls
    return bool(calls) and all(files_of(call)[0] in READ_KINDS for call in calls)


def _said(message: AssistantMessage) -> str:
    """What the model wrote in `message`: its text blocks, a line apart (its calls and its
    thinking left out)."""
    return "\n".join(
        block.text for block in message.content if isinstance(block, TextContent)
    ).strip()


def _latest_once(texts: Sequence[str], key: Callable[[str], str] = str) -> list[str]:
    """Each text once (texts with the same `key` are one), as and where it last appears
    ("Let me look." said ten times is one)."""
    latest = {key(text): index for index, text in enumerate(texts)}
    return [texts[index] for index in sorted(latest.values())]


def _without_timings(worked: str) -> str:
    """A command that worked with the durations its ending printed left out: the same run of
    `pytest -q` "in 0.16s" and "in 0.17s" is one ending (the command itself as it is)."""
    command, arrow, ending = worked.partition(_ENDS)
    return command + arrow + " ".join(_DURATION.sub("", ending).split())


def _words_within(messages: Sequence[str], budget: int) -> tuple[tuple[str, ...], int]:
    """The messages carried within `budget` tokens (oldest first), and how many were left
    out. The newest is always there (unless the budget is none), cut to the budget if it
    must be (to half of it, when it is long and older ones wait). Then the older short ones,
    newest first, while they fit; then the older long ones (over LONG_MESSAGE_TOKENS: a
    paste, a long answer), each as its head and tail, newest first, in what is left: a long
    message never pushes a short one out, and recall finds it whole."""
    texts = [text for text in messages if text]
    if not texts or budget <= 0:
        return (), len(texts)
    *older, newest = texts
    room = budget
    if older and estimate_text_tokens(newest) > LONG_MESSAGE_TOKENS:
        room = min(budget, max(LONG_MESSAGE_TOKENS, budget // 2))
    if estimate_text_tokens(newest) > room:
        newest = _cut_to(newest, room)
    chosen = {len(older): newest}
    left = budget - estimate_text_tokens(newest)
    for pastes in (False, True):
        for index in range(len(older) - 1, -1, -1):
            text = older[index]
            if (estimate_text_tokens(text) > LONG_MESSAGE_TOKENS) != pastes:
                continue
            if pastes:
                text = _cut_to(text, LONG_MESSAGE_TOKENS)
            tokens = estimate_text_tokens(text)
            if tokens <= left:
                chosen[index] = text
                left -= tokens
    return tuple(chosen[index] for index in sorted(chosen)), len(texts) - len(chosen)


def _cut_to(text: str, tokens: int) -> str:
    """`text`'s head and tail within `tokens` tokens (or 200 characters), the cut said."""
    limit = tokens * len(text) // max(estimate_text_tokens(text), 1)
    cut = bound_text(text, max(limit, MIN_CUT_CHARS))
    while limit > MIN_CUT_CHARS and estimate_text_tokens(cut) > tokens:
        limit = limit * 9 // 10
        cut = bound_text(text, max(limit, MIN_CUT_CHARS))
    return cut


def failures_in(messages: Sequence[Message]) -> list[Failure]:
    """The failed tool calls in `messages`, in order: each with its failing line and the
    first sentences of what the model said after it (before the next prompt); and each
    approach the model itself said did not help (its calls succeeded: "Loosening the regex
    did not help"), with the sentence that says so, under the last call before it."""
    calls: dict[str, ToolCall] = {}
    found: list[Failure] = []
    last_call: ToolCall | None = None  # the latest call, unless it failed (carried as such)
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            said = _did_not_help(message)
            if said and last_call is not None:
                found.append(
                    Failure(call=bound_text(format_tool_call(last_call), CALL_CHARS),
                            error=said, then="")
                )
                last_call = None
            calls.update((call.id, call) for call in message.tool_calls)
            last_call = message.tool_calls[-1] if message.tool_calls else last_call
            continue
        if isinstance(message, UserMessage) and is_prompt(message):
            last_call = None  # a new request: what follows is not about the calls before it
        if not isinstance(message, ToolResultMessage) or not message.is_error:
            continue
        call = calls.get(message.tool_call_id)
        text = message.text.strip()
        if call is None or text.startswith(_NOT_RUN):
            continue
        last_call = None  # what the model says next is this failure's `then`
        found.append(
            Failure(
                call=bound_text(format_tool_call(call), CALL_CHARS),
                error=failing_line(text),
                then=_said_next(messages[index + 1 :]),
            )
        )
    return found


def _did_not_help(message: AssistantMessage) -> str:
    """The sentence in which the model says an approach did not help ("" when none)."""
    for sentence in _SENTENCE_END.split(" ".join(_said(message).split())):
        if _NO_HELP.search(sentence) and not _CONDITION.search(sentence):
            return bound_text(sentence, ERROR_CHARS)
    return ""


def commands_that_worked(messages: Sequence[Message]) -> list[str]:
    """The shell commands in `messages` whose result was not an error, in order: each with
    how its output ended after " → " (as the bash tool noted it: a short output whole, a
    long one's last line), when it did."""
    worked: list[str] = []
    for call, result in calls_that_succeeded(messages):
        command = call.arguments.get("command")
        if call.name != "bash" or not isinstance(command, str):
            continue
        line = bound_text(" ".join(command.split()), CALL_CHARS)
        details = result.details or {}
        end = details.get("ending", details.get("lastLine"))  # lastLine: an older result's
        worked.append(f"{line}{_ENDS}{end}" if isinstance(end, str) and end else line)
    return worked


def _newest_commands(commands: Sequence[str], budget: int) -> tuple[str, ...]:
    """Each command and ending once (where it last ran; an ending that differs only in the
    time a run took is the same), the newest within `budget` tokens, oldest first."""
    chosen: list[str] = []
    left = budget
    for command in reversed(_latest_once(commands, _without_timings)):  # newest first
        tokens = estimate_text_tokens(command) + 2
        if tokens > left:
            break
        chosen.append(command)
        left -= tokens
    return tuple(reversed(chosen))


def failing_line(text: str) -> str:
    """The line of an error result that says what went wrong: the last that names an
    error, else the last line that is not the harness's own note; with the exit code."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    exit_code = next((line for line in reversed(lines) if line.startswith("Exit code")), "")
    content = [line for line in lines if not _NOTE_LINE.match(line)]
    telling = [line for line in content if _ERROR_LINE.search(line)]
    line = (telling or content or [""])[-1]
    line = bound_text(line, ERROR_CHARS)
    return f"{line} ({exit_code.rstrip('.')})" if exit_code and line else line or exit_code


def _said_next(messages: Iterable[Message]) -> str:
    """The first sentences of the model's first text after a failed call, before the next
    prompt ("" when it said nothing)."""
    for message in messages:
        if isinstance(message, UserMessage) and is_prompt(message):
            return ""
        if isinstance(message, AssistantMessage) and (text := _said(message)):
            return _first_sentences(text, THEN_CHARS)
    return ""


def _first_sentences(text: str, limit: int) -> str:
    """Whole sentences from the start of `text`, at most `limit` characters (at least the
    first sentence, cut to the limit)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    out = ""
    for sentence in _SENTENCE_END.split(text):
        candidate = f"{out} {sentence}".strip()
        if len(candidate) > limit:
            break
        out = candidate
    return out or text[: limit - 1] + "…"


def _dedupe(failures: Sequence[Failure]) -> list[Failure]:
    """One failure per call and failing line: the latest (with what was said after it)."""
    latest: dict[tuple[str, str], Failure] = {}
    for failure in failures:
        latest.pop((failure.call, failure.error), None)
        latest[(failure.call, failure.error)] = failure
    return list(latest.values())


def _newest_within(failures: Sequence[Failure], budget: int) -> tuple[tuple[Failure, ...], int]:
    chosen: list[Failure] = []
    left = budget
    for failure in reversed(failures):
        tokens = estimate_text_tokens(failure_line(failure))
        if tokens > left:
            break
        chosen.append(failure)
        left -= tokens
    return tuple(reversed(chosen)), len(failures) - len(chosen)


def in_progress(plan: Sequence[PlanItem]) -> str | None:
    """The plan's step in progress, if any."""
    return next((item.content for item in plan if item.status == "in_progress"), None)
