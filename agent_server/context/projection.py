"""What the model sees: the projection of a ledger path (invariants 5 and 6).

The latest compaction's summary, then the message entries from its first kept entry on, then
everything appended after it. The summary is one user message,
`SUMMARY_PREFIX + "\\n\\n" + SUMMARY_OPEN ... SUMMARY_CLOSE`, followed in the same text by
what the compaction carries verbatim (its `carried` block: the user's own words, pins, the
plan, what failed; context/carried.py), or, when the kept tail starts with a user message,
the first text block of that message (never two user messages in a row). Without a
compaction the projection is every message on the path. A provider's compaction
(`CompactionEntry.provider`) projected for the API that made it opens the projection as that
API returned it: one assistant message holding the CompactionContent, which the provider
module sends back unchanged, then the carried block as a user message; for any other API it
is its readable summary, like ours (agent/provider_compaction.py says which compactions an
API can read).

Notes (`UserMessage.note` set: an external edit the editor saw, the summary of a branch left
behind by a rewind) are user-role messages whose text is wrapped in `<editor-note>` tags, so
the model, the summariser and a display can tell them from what the user asked. A rewind
with a summary (`BranchEntry.summary`) takes part in the projection as such a note, at its
place on the path.

The projection is always a valid request, whatever the ledger holds (rewinds can leave a tool
call without its result, a lost line can leave a result without its call):
- a tool result whose call is not in the assistant message just before its run of results is
  dropped (no orphaned tool result, ever);
- a tool call left unanswered when another message follows gets a synthetic error result
  (the calls of a final assistant message are left alone: the turn is running them);
- consecutive user messages are merged into one.
All of this is a deterministic function of the path, so the prefix stays byte-identical from
request to request (invariant 1).

Cost: linear in `entries`, which EntryTree.projection_entries keeps to what the model sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeGuard

from agent_server.context.summary_prompt import (
    branch_summary_message,
    render_carried,
    summary_message_text,
)
from agent_server.llm.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from agent_server.session.entries import BranchEntry, Carried, CompactionEntry, Entry, MessageEntry

INTERRUPTED_TOOL_RESULT = (
    "No result: this tool call did not complete (the turn was interrupted or rewound)."
)
def is_prompt(message: Message) -> TypeGuard[UserMessage]:
    """What the user asked: a user message that is not a note."""
    return isinstance(message, UserMessage) and message.note is None


@dataclass(frozen=True, slots=True)
class CompactionWindow:
    """A path split at its latest compaction.

    `kept` are the message entries from the compaction's first kept entry up to it, `after`
    the message entries appended after it, each with its index in the path. Without a
    compaction, `kept` is empty and `after` holds every message entry.
    """

    compaction: CompactionEntry | None
    compaction_index: int | None
    kept: tuple[tuple[int, MessageEntry], ...]
    after: tuple[tuple[int, MessageEntry], ...]

    @property
    def messages(self) -> tuple[tuple[int, MessageEntry], ...]:
        return self.kept + self.after


def compaction_window(entries: Sequence[Entry]) -> CompactionWindow:
    """Split a root-to-leaf path (or EntryTree.projection_entries) at its latest compaction."""
    index: int | None = None
    for position in range(len(entries) - 1, -1, -1):
        if isinstance(entries[position], CompactionEntry):
            index = position
            break
    if index is None:
        return CompactionWindow(None, None, (), _message_entries(entries, 0, len(entries)))
    compaction = entries[index]
    assert isinstance(compaction, CompactionEntry)
    kept: tuple[tuple[int, MessageEntry], ...] = ()
    if compaction.first_kept_entry_id is not None:
        for position in range(index - 1, -1, -1):
            if entries[position].id == compaction.first_kept_entry_id:
                kept = _message_entries(entries, position, index)
                break
    return CompactionWindow(
        compaction, index, kept, _message_entries(entries, index + 1, len(entries))
    )


def _message_entries(
    entries: Sequence[Entry], start: int, stop: int
) -> tuple[tuple[int, MessageEntry], ...]:
    """The entries in [start, stop) that the model sees, as message entries: messages, and
    rewinds that carry a summary of the branch they left (as a note with the rewind's id)."""
    out: list[tuple[int, MessageEntry]] = []
    for position in range(start, stop):
        entry = entries[position]
        if isinstance(entry, MessageEntry):
            out.append((position, entry))
        elif isinstance(entry, BranchEntry) and entry.summary:
            note = branch_summary_message(entry.summary)
            out.append((position, MessageEntry(entry.id, entry.parent_id, entry.timestamp, note)))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Projection:
    """The messages of the next request, and where they came from.

    `entry_ids[i]` is the ledger entry message i starts with (a merged message: the first
    merged entry; the summary merged into a user message: that message's entry), None for a
    synthetic message (the standalone summary, a synthetic tool result). `fresh_from` is the
    index of the first message appended after the latest compaction (0 without one;
    len(messages) when nothing came after it): usage before it is stale.
    """

    messages: tuple[Message, ...]
    entry_ids: tuple[str | None, ...]
    compaction: CompactionEntry | None
    fresh_from: int

    def message_index(self, entry_id: str) -> int | None:
        """Index of the message that holds entry `entry_id`'s message (it starts with it)."""
        for index, candidate in enumerate(self.entry_ids):
            if candidate == entry_id:
                return index
        return None

    def count_from(self, entry_id: str | None) -> int:
        """How many messages, from the one holding `entry_id` to the end (0 for None or an
        entry not in the projection): `kept_messages` for build_summary_instruction when
        `entry_id` is the cut's first kept entry."""
        if entry_id is None:
            return 0
        index = self.message_index(entry_id)
        return 0 if index is None else len(self.messages) - index


@dataclass(slots=True)
class _Item:
    entry_id: str | None
    message: Message
    fresh: bool


def project(entries: Sequence[Entry], api: str | None = None) -> Projection:
    """The projection of a root-to-leaf path, or of EntryTree.projection_entries's tail of it,
    for a request to `api` (None: in text only)."""
    window = compaction_window(entries)
    items = [_Item(e.id, e.message, window.compaction is None) for _, e in window.kept]
    items += [_Item(e.id, e.message, True) for _, e in window.after]
    items = _repair_tool_pairs(items)
    compaction = window.compaction
    if compaction is not None:
        items[:0] = [_Item(None, message, False) for message in _summary_messages(compaction, api)]
    items = _merge_user_runs(items)
    if compaction is None:
        fresh_from = 0
    else:
        fresh_from = next((i for i, item in enumerate(items) if item.fresh), len(items))
    return Projection(
        messages=tuple(item.message for item in items),
        entry_ids=tuple(item.entry_id for item in items),
        compaction=compaction,
        fresh_from=fresh_from,
    )


def _summary_messages(compaction: CompactionEntry, api: str | None) -> list[Message]:
    """What stands for the history a compaction folded: the provider's own block or items for
    the API that made them, then what the compaction carries; else the summary as text, with
    what it carries."""
    provider = compaction.provider
    if provider is not None and provider.api == api:
        native: list[Message] = [AssistantMessage((provider,), "stop", api=provider.api)]
        block = render_carried(compaction.carried) if compaction.carried is not None else ""
        return [*native, UserMessage((TextContent(block),))] if block else native
    text = summary_message_text(
        compaction.summary, compaction.split_turn_summary, compaction.carried
    )
    return [UserMessage((TextContent(text),))]


def project_messages(entries: Sequence[Entry]) -> tuple[Message, ...]:
    return project(entries).messages


def build_compacted_messages(
    summary: str,
    tail: Sequence[Message],
    *,
    split_turn_summary: str | None = None,
    carried: Carried | None = None,
) -> list[Message]:
    """`summary` (and what the compaction carries) at the head of `tail`: merged into tail[0]
    as its first text block when that is a user message, else a user message of its own."""
    text = summary_message_text(summary, split_turn_summary, carried)
    summary_message = UserMessage((TextContent(text),))
    if tail and isinstance(tail[0], UserMessage):
        return [_merge_users(summary_message, tail[0]), *tail[1:]]
    return [summary_message, *tail]


def _merge_users(first: UserMessage, second: UserMessage) -> UserMessage:
    """One user message; a note only when both were (it holds no prompt)."""
    note = first.note if first.note is not None and second.note is not None else None
    return UserMessage(first.content + second.content, note=note)


def _merge_user_runs(items: list[_Item]) -> list[_Item]:
    out: list[_Item] = []
    for item in items:
        previous = out[-1] if out else None
        if (
            previous is not None
            and isinstance(previous.message, UserMessage)
            and isinstance(item.message, UserMessage)
        ):
            out[-1] = _Item(
                previous.entry_id if previous.entry_id is not None else item.entry_id,
                _merge_users(previous.message, item.message),
                previous.fresh or item.fresh,
            )
        else:
            out.append(item)
    return out


def _repair_tool_pairs(items: list[_Item]) -> list[_Item]:
    """Drop orphaned tool results; answer calls that another message interrupted."""
    out: list[_Item] = []
    pending: dict[str, str] = {}  # call id -> tool name, of the latest assistant message
    owner_fresh = False
    for item in items:
        message = item.message
        if isinstance(message, ToolResultMessage):
            if message.tool_call_id in pending:
                del pending[message.tool_call_id]
                out.append(item)
            continue
        for call_id, name in pending.items():
            out.append(_Item(None, _interrupted_result(call_id, name), owner_fresh))
        pending = {}
        out.append(item)
        if isinstance(message, AssistantMessage):
            pending = {call.id: call.name for call in message.tool_calls}
            owner_fresh = item.fresh
    return out


def _interrupted_result(call_id: str, name: str) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id,
        tool_name=name,
        content=(TextContent(INTERRUPTED_TOOL_RESULT),),
        is_error=True,
    )
