"""Where a compaction cuts: invariant 5 of DESIGN.md.

The window is the current projection's message entries: from the latest compaction's first
kept entry on (everything before is already in its summary). A turn starts at a prompt (a user
message that is not a note), or at the notes right before it; messages before the window's
first prompt are the tail of a turn that a previous compaction split, and count as a turn.

The rule:
1. keep the last `keep_recent_turns` turns (2) verbatim if they fit in the budget
   (`keep_recent_tokens`, 8k, capped by `max_kept_tokens`); else as many whole recent turns
   as fit. A prompt not answered yet (a compaction at a natural break, before the turn's first
   call) is kept beside them and is not one of them: a compaction that waited for the break
   keeps at least as much of the history as one in the middle of the turn, and older whole
   turns too while the budget holds them (all but the window's first);
2. when even the last turn does not fit, split it: keep its longest tail that fits and starts
   at an assistant message; its early part (`turn_prefix`) is summarised separately;
3. when not even that fits, keep the last step (assistant message and its tool results) if it
   is below `last_step_tokens` (the caller passes half the threshold); when the last turn has
   no answer yet, its prompt is that step (the model must read it verbatim to answer it), kept
   up to `prompt_tokens` (the caller passes what the summary leaves below the threshold);
   else keep nothing.
The kept tail therefore never starts with a tool result and never separates an assistant's
tool calls from their results (a cut is only ever made before a user or assistant message).
Token counts are the trigger's (estimate_weighted_tokens), so the budgets mean about what the
provider will count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent_server.context.estimate import estimate_weighted_tokens
from agent_server.context.projection import compaction_window, is_prompt
from agent_server.context.trigger import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_KEEP_RECENT_TURNS
from agent_server.llm.messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from agent_server.session.entries import CompactionEntry, Entry, MessageEntry


@dataclass(frozen=True, slots=True)
class CutPoint:
    """A compaction plan over `entries` (indices refer to the list given to find_cut_point).

    - `first_kept_index`/`first_kept_entry_id`: the first entry kept verbatim; None when
      nothing is kept.
    - `turn_start_index`: set when a turn is split: the entry starting that turn.
    - `summarize`: the message entries to fold into the main summary (with `previous`'s).
    - `turn_prefix`: the split turn's early part, summarised separately.
    - `kept`: the message entries kept verbatim.
    - `previous`: the compaction whose summary the new one folds in, if any.
    """

    first_kept_index: int | None
    first_kept_entry_id: str | None
    turn_start_index: int | None
    summarize: tuple[MessageEntry, ...]
    turn_prefix: tuple[MessageEntry, ...]
    kept: tuple[MessageEntry, ...]
    kept_tokens: int
    summarize_tokens: int
    previous: CompactionEntry | None

    @property
    def is_split_turn(self) -> bool:
        return self.turn_start_index is not None

    @property
    def can_compact(self) -> bool:
        """False when there is nothing to summarise (the whole window would be kept)."""
        return bool(self.summarize or self.turn_prefix)

    @property
    def summarize_messages(self) -> list[Message]:
        return [entry.message for entry in self.summarize]

    @property
    def turn_prefix_messages(self) -> list[Message]:
        return [entry.message for entry in self.turn_prefix]


def _turn_starts(messages: Sequence[Message]) -> list[int]:
    """Where each turn starts: at its prompt, or at the notes right before it."""
    starts: list[int] = []
    for index, message in enumerate(messages):
        if not is_prompt(message):
            continue
        start = index
        while (
            start > 0
            and (not starts or start - 1 > starts[-1])
            and isinstance(messages[start - 1], UserMessage)
            and not is_prompt(messages[start - 1])
        ):
            start -= 1
        starts.append(start)
    return starts


def _is_safe_start(message: Message) -> bool:
    """A kept tail may start here: never at a tool result, whose call would be summarised."""
    return not isinstance(message, ToolResultMessage)


def find_cut_point(
    entries: Sequence[Entry],
    *,
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
    keep_recent_turns: int = DEFAULT_KEEP_RECENT_TURNS,
    max_kept_tokens: int | None = None,
    last_step_tokens: int | None = None,
    prompt_tokens: int | None = None,
) -> CutPoint:
    """Plan a compaction of the path `entries` (a branch or EntryTree.projection_entries).

    `last_step_tokens`: when not even a split of the last turn fits the budget, the most recent
    step (the last assistant message and the tool results after it) is still kept whole if it
    is at most this many tokens, so that the model does not lose the output it just asked for
    (a large file read right before the window filled).
    """
    window = compaction_window(entries)
    positions = [position for position, _ in window.messages]
    messages = [entry for _, entry in window.messages]
    count = len(messages)
    budget = (
        keep_recent_tokens if max_kept_tokens is None else min(keep_recent_tokens, max_kept_tokens)
    )
    suffix = [0] * (count + 1)
    for index in range(count - 1, -1, -1):
        suffix[index] = suffix[index + 1] + estimate_weighted_tokens(messages[index].message)

    starts = _turn_starts([entry.message for entry in messages])
    if count and (not starts or starts[0] != 0):
        starts.insert(0, 0)  # the window opens inside a turn a previous compaction split

    def plan(keep_from: int | None, turn_start: int | None) -> CutPoint:
        summarize_end = turn_start if turn_start is not None else keep_from
        if summarize_end is None:
            summarize_end = count
        kept_from = keep_from if keep_from is not None else count
        return CutPoint(
            first_kept_index=positions[keep_from] if keep_from is not None else None,
            first_kept_entry_id=messages[keep_from].id if keep_from is not None else None,
            turn_start_index=positions[turn_start] if turn_start is not None else None,
            summarize=tuple(messages[:summarize_end]),
            turn_prefix=tuple(messages[summarize_end:kept_from]),
            kept=tuple(messages[kept_from:]),
            kept_tokens=suffix[kept_from],
            summarize_tokens=suffix[0] - suffix[kept_from],
            previous=window.compaction,
        )

    if count == 0:
        return plan(None, None)

    # 1. Whole turns, newest first, while they fit. A prompt not answered yet (a compaction at
    # a natural break, before the turn's first call) is not one of the kept turns: the last
    # `keep_recent_turns` answered turns stay beside it, as they do in the middle of a turn,
    # and so do older finished turns while the budget holds them (never the window's first
    # turn: something is left to summarise). At a break every kept turn is finished, and the
    # reads the next turns build on (the file an edit was made from) are in the turns before;
    # in the middle of a turn, the turn in progress takes that room.
    pending = not any(isinstance(m.message, AssistantMessage) for m in messages[starts[-1]:])
    reach = max(keep_recent_turns + 1, len(starts) - 1) if pending else keep_recent_turns
    keep_from: int | None = None
    for start in reversed(starts[-reach:]):
        if suffix[start] > budget or not _is_safe_start(messages[start].message):
            break
        keep_from = start
    if keep_from is not None:
        return plan(keep_from, None)

    # 2. Split the last turn: its longest tail that fits and starts at an assistant message.
    last_start = starts[-1]
    for index in range(last_start + 1, count):
        if suffix[index] <= budget and isinstance(messages[index].message, AssistantMessage):
            return plan(index, last_start)

    # 3. The last step alone, when it is not too large for the window; a prompt not
    # answered yet is its turn's only step.
    if last_step_tokens is not None:
        prompt_limit = max(last_step_tokens, prompt_tokens or 0)
        for index in range(count - 1, last_start, -1):
            if isinstance(messages[index].message, AssistantMessage):
                if suffix[index] <= last_step_tokens:
                    return plan(index, last_start)
                break
        else:
            if suffix[last_start] <= prompt_limit and _is_safe_start(
                messages[last_start].message
            ):
                return plan(last_start, None)

    # 4. Nothing fits: keep nothing.
    return plan(None, None)
