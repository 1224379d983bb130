"""The transcript: the current branch as the events the live session sent.

A live turn sends agent events (agent/events.py); a loaded session is the same events made
from its ledger entries (`entry_events`), plus the markers the live stream says by other
means (`BranchTaken`, `FilesRestored`, `ModelRecorded`, a completed `CompactionFinished`). Each
front end turns both with one translator (lsp/wire.py's items, acp/updates.py's updates), and
never reads ledger entries.

Paging walks parent links from the leaf (or from a cursor) through the ledger's index, so a
page costs its own size whatever the length of the session: `page(ledger, tools)` is the
latest page, `page(ledger, tools, before=cursor)` the one before a cursor. A cursor is the id
of the first entry of the page it came with; a page never starts with a tool result (its call
would be on the page before).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_server.agent.events import (
    AgentEvent,
    BranchTaken,
    CompactionFinished,
    FilesRestored,
    ModelRecorded,
    Notice,
    PlanUpdated,
    TextChunk,
    ThinkingChunk,
    ToolCallStarted,
    ToolCallUpdated,
    ToolStatus,
    TurnStarted,
)
from agent_server.context.summary_prompt import note_text
from agent_server.errors import EntryNotFoundError
from agent_server.llm.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agent_server.session import facts as kinds
from agent_server.session.entries import (
    BranchEntry,
    CompactionEntry,
    Entry,
    FileRestoreEntry,
    MessageEntry,
    ModelChangeEntry,
    PlanEntry,
)

if TYPE_CHECKING:  # the live stream describes calls without loading every tool
    from agent_server.agent.tools import Tool
    from agent_server.session.ledger import Ledger

DEFAULT_PAGE = 100  # entries per page unless the editor asks otherwise
# Entry kinds an editor shows (system prompts, titles and unknown future types are not).
SHOWN = frozenset("".join((kinds.USER, kinds.ASSISTANT, kinds.TOOL_RESULT, kinds.COMPACTION)))
SHOWN |= {kinds.BRANCH, kinds.MODEL_CHANGE, kinds.FILE_RESTORE, kinds.PLAN}

_JSON_TYPES = (str, int, float, bool, list, dict)
INTERRUPTED = "Interrupted: the answer stops where it was cut."


@dataclass(frozen=True, slots=True)
class Page:
    events: list[AgentEvent]
    cursor: str | None  # pass as `before` for the page before this one; None: at the start


def describe_call(call: ToolCall, tool: Tool | None) -> tuple[str, str, tuple[str, ...]]:
    """A tool call's title ("Read README.md"), kind and paths, as its tool describes them."""
    if tool is None:
        return call.name, "other", ()
    return tool.title(call.arguments), tool.kind, tool.paths(call.arguments)


def json_details(details: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON values of a tool's details (anything else is left out)."""
    return {k: v for k, v in details.items() if v is None or isinstance(v, _JSON_TYPES)}


def entry_events(entry: Entry, tools: Mapping[str, Tool]) -> list[AgentEvent]:
    """The events one ledger entry shows as (none for what an editor does not show)."""
    if isinstance(entry, MessageEntry):
        message = entry.message
        if isinstance(message, UserMessage):
            if message.note is not None:  # the editor's note (an external edit, a branch
                # summary), not something the user typed: shown as the live notice was
                return [Notice(None, "info", note_text(message), entry_id=entry.id,
                               note=message.note)]
            return [TurnStarted("", entry.id, message.typed, entry.parent_id,
                                message.attachments)]
        if isinstance(message, AssistantMessage):
            return _assistant_events(entry.id, message, tools)
        assert isinstance(message, ToolResultMessage)
        images = tuple(block for block in message.content if isinstance(block, ImageContent))
        status: ToolStatus = "failed" if message.is_error else "completed"
        return [ToolCallUpdated("", message.tool_call_id, status, message.text, message.details,
                                images)]
    if isinstance(entry, CompactionEntry):
        return [CompactionFinished(entry.id, entry.reason, "completed", entry.tokens_before,
                                   entry.tokens_after, entry.summary, entry.first_kept_entry_id)]
    if isinstance(entry, BranchEntry):
        return [BranchTaken(entry.id, entry.target_id, entry.summary)]
    if isinstance(entry, ModelChangeEntry):
        return [ModelRecorded(entry.id, entry.provider, entry.model, entry.thinking)]
    if isinstance(entry, FileRestoreEntry):
        return [FilesRestored(entry.id, entry.target_id, tuple(entry.files))]
    if isinstance(entry, PlanEntry):
        return [PlanUpdated(None, tuple(entry.items))]
    return []


def _assistant_events(
    entry_id: str, message: AssistantMessage, tools: Mapping[str, Tool]
) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    thinking = "".join(b.thinking for b in message.content if isinstance(b, ThinkingContent))
    if thinking:
        events.append(ThinkingChunk("", entry_id, thinking))
    text = "".join(b.text for b in message.content if isinstance(b, TextContent))
    if text:
        events.append(TextChunk("", entry_id, text))
    for call in message.tool_calls:
        title, kind, paths = describe_call(call, tools.get(call.name))
        events.append(ToolCallStarted("", call, title, kind, paths))
    if message.error_message:
        events.append(Notice(None, "error", message.error_message))
    elif message.stop_reason == "aborted":
        events.append(Notice(None, "info", INTERRUPTED))
    return events


# --- pages --------------------------------------------------------------------------------------


def page(
    ledger: Ledger,
    tools: Sequence[Tool],
    *,
    before: str | None = None,
    limit: int = DEFAULT_PAGE,
) -> Page:
    """Up to `limit` shown entries of the current branch as events, oldest first: the latest
    ones, or (`before`, a cursor) those on the path leading to that entry, before it."""
    if before is not None and before not in ledger.tree:
        raise EntryNotFoundError(
            f"no entry {before} in session {ledger.session_id}: the cursor is not from this session"
        )
    ids: list[str] = []
    oldest = ""
    reached_root = True
    for entry_id, kind in ledger.tree.walk_back(before):
        if entry_id == before or kind not in SHOWN:
            continue
        if len(ids) >= limit and oldest != kinds.TOOL_RESULT:
            reached_root = False
            break
        ids.append(entry_id)
        oldest = kind
    ids.reverse()
    by_name = {tool.spec.name: tool for tool in tools}
    events = [event for entry in ledger.tree.read(ids) for event in entry_events(entry, by_name)]
    cursor = None if reached_root or not ids else ids[0]
    return Page(events, cursor)
