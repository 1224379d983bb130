"""What the ledger's index and the session list keep of each entry, and the one-letter kinds.

`facts_of` reads them from an entry; `message_facts` from a message line's JSON object
without building the message (a rebuild of the index reads every line of the file, and a
message is most of them: its content is checked when the entry is read).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_server.errors import LedgerFormatError
from agent_server.llm.messages import (
    AssistantMessage,
    TextContent,
    ToolResultMessage,
    Usage,
    UserMessage,
    usage_from_json,
)
from agent_server.session.entries import (
    CACHE_RETENTIONS,
    BranchEntry,
    CompactionEntry,
    Entry,
    FileRestoreEntry,
    MessageEntry,
    ModelChangeEntry,
    PinEntry,
    PlanEntry,
    SystemPromptEntry,
    TitleEntry,
    ToolListEntry,
    entry_envelope,
    entry_from_json,
    message_object,
)

# One letter per entry kind (messages by role): what paging and walking need without parsing.
USER, ASSISTANT, TOOL_RESULT, COMPACTION, BRANCH, MODEL_CHANGE, TITLE, SYSTEM, TOOLS, UNKNOWN = (
    "U",
    "A",
    "R",
    "C",
    "B",
    "M",
    "T",
    "S",
    "L",
    "X",
)
# A file restore (a sidecar built before this kind existed indexed such lines as UNKNOWN;
# readers that look for restores read those too).
FILE_RESTORE = "F"
# Pins and plans (a sidecar built before these kinds existed indexed them as UNKNOWN).
PIN, PLAN = "P", "N"


_ENTRY_KINDS: dict[type, str] = {
    CompactionEntry: COMPACTION,
    BranchEntry: BRANCH,
    ModelChangeEntry: MODEL_CHANGE,
    TitleEntry: TITLE,
    SystemPromptEntry: SYSTEM,
    FileRestoreEntry: FILE_RESTORE,
    ToolListEntry: TOOLS,
    PinEntry: PIN,
    PlanEntry: PLAN,
}
_MESSAGE_KINDS: dict[type, str] = {
    UserMessage: USER,
    AssistantMessage: ASSISTANT,
    ToolResultMessage: TOOL_RESULT,
}


MESSAGES = USER + ASSISTANT + TOOL_RESULT
_ROLE_KINDS: dict[object, str] = {"user": USER, "assistant": ASSISTANT, "toolResult": TOOL_RESULT}


@dataclass(frozen=True, slots=True)
class EntryFacts:
    """What the ledger's index and the session list keep of one entry: read from the entry
    (`index.facts_of`), or from its line without building it (`index.message_facts`)."""

    id: str
    parent_id: str | None
    timestamp: str
    kind: str  # one letter (session/index.py)
    usage: Usage | None = None  # a model call's answer, a compaction's summaries
    retained: bool = False  # an answer that recorded its cache retention
    prompt: str | None = None  # a prompt's first typed text ("" if none); None: no prompt
    model: str | None = None  # a model change's model, an answer's
    title: str | None = None  # a title entry's
    target_id: str | None = None  # a branch's target


def kind_of(entry: Entry) -> str:
    if isinstance(entry, MessageEntry):
        return _MESSAGE_KINDS.get(type(entry.message), UNKNOWN)
    return _ENTRY_KINDS.get(type(entry), UNKNOWN)


def facts_of(entry: Entry) -> EntryFacts:
    """What the index and the session list keep of `entry`."""
    kind = kind_of(entry)
    if isinstance(entry, MessageEntry):
        message = entry.message
        if isinstance(message, AssistantMessage):
            return EntryFacts(
                entry.id,
                entry.parent_id,
                entry.timestamp,
                kind,
                usage=message.usage,
                retained=entry.cache_retention is not None,
                model=message.model or None,
            )
        if isinstance(message, UserMessage) and message.note is None:
            texts = [b.text for b in message.typed if isinstance(b, TextContent)]
            return EntryFacts(
                entry.id, entry.parent_id, entry.timestamp, kind, prompt=texts[0] if texts else ""
            )
    elif isinstance(entry, CompactionEntry):
        return EntryFacts(entry.id, entry.parent_id, entry.timestamp, kind, usage=entry.usage)
    elif isinstance(entry, ModelChangeEntry):
        return EntryFacts(entry.id, entry.parent_id, entry.timestamp, kind, model=entry.model)
    elif isinstance(entry, TitleEntry):
        return EntryFacts(entry.id, entry.parent_id, entry.timestamp, kind, title=entry.title)
    elif isinstance(entry, BranchEntry):
        return EntryFacts(
            entry.id, entry.parent_id, entry.timestamp, kind, target_id=entry.target_id
        )
    return EntryFacts(entry.id, entry.parent_id, entry.timestamp, kind)


def message_facts(data: Mapping[str, Any]) -> EntryFacts:
    """`facts_of` the message entry whose line's object is `data`, read without building
    the message: its envelope, and a `message` object with a known role and a content list,
    checked as `entry_from_json` checks them (LedgerFormatError); its content blocks are
    checked when the entry is read."""
    _, entry_id, parent_id = entry_envelope(data)
    timestamp = data.get("timestamp")
    if not isinstance(timestamp, str):
        raise LedgerFormatError("'timestamp' must be a string")
    message = message_object(data)
    content = message.get("content")
    if not isinstance(content, list):
        raise LedgerFormatError("bad message: message.content must be a list")
    role = message.get("role")
    kind = _ROLE_KINDS.get(role) if isinstance(role, str) else None
    if kind is None:
        raise LedgerFormatError(f"bad message: unknown message role {role!r}")
    if kind == ASSISTANT:
        usage = message.get("usage")
        try:
            used = (
                usage_from_json(usage)
                if type(usage) is dict or isinstance(usage, Mapping)
                else None
            )
        except ValueError as error:
            raise LedgerFormatError(f"bad message: {error}") from error
        return EntryFacts(
            entry_id,
            parent_id,
            timestamp,
            kind,
            usage=used,
            retained=data.get("cacheRetention") in CACHE_RETENTIONS,
            model=str(message.get("model", "")) or None,
        )
    if kind == USER and not isinstance(message.get("note"), str):
        return EntryFacts(entry_id, parent_id, timestamp, kind, prompt=_first_typed_text(message))
    return EntryFacts(entry_id, parent_id, timestamp, kind)


def facts_of_json(data: object) -> EntryFacts:
    """The facts of one line's object: a message's read without building it (see
    `message_facts`), any other entry's from the entry. LedgerFormatError (or ValueError)
    when it is not an entry."""
    if isinstance(data, dict) and data.get("type") == "message":
        return message_facts(data)
    if not isinstance(data, Mapping):
        raise LedgerFormatError("an entry must be a JSON object")
    return facts_of(entry_from_json(data))


def _first_typed_text(message: Mapping[str, Any]) -> str:
    """The first text block the user typed (after the attachments' blocks), "" if none."""
    blocks = [block for block in message["content"] if isinstance(block, Mapping)]
    attachments = message.get("attachments")
    skip = 0
    if isinstance(attachments, list):
        for attachment in attachments:
            count = attachment.get("blocks", 1) if isinstance(attachment, Mapping) else 1
            skip += count if isinstance(count, int) else 1
    for block in blocks[skip:]:
        if block.get("type") == "text":
            text = block.get("text")
            return text if isinstance(text, str) else ""
    return ""


def usage_of(entry: Entry) -> Usage | None:
    """The usage a ledger entry records: a model call's answer, or a compaction's summaries."""
    if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
        return entry.message.usage
    if isinstance(entry, CompactionEntry):
        return entry.usage
    return None
