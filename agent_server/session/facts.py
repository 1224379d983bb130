"""What the ledger's index and the session list keep of each entry, and the one-letter kinds.

`facts_of` reads them from an entry; `message_facts` from a message line's JSON object
without building the message (a rebuild of the index reads every line of the file, and a
message is most of them: its content is checked when the entry is read); `line_facts` from a
message line's bytes without building its content at all (msgspec checks the whole line's
JSON but builds only the fields named here), for the lines it is sure of.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec

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


class CostCounts(msgspec.Struct, frozen=True, gc=False):
    """A call's cost as a ledger line records it, read by msgspec (`UsageCounts`)."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = msgspec.field(default=0.0, name="cacheRead")
    cache_write: float = msgspec.field(default=0.0, name="cacheWrite")


class UsageCounts(msgspec.Struct, frozen=True, gc=False):
    """A call's usage as a ledger line records it, read by msgspec without building a
    `Usage`: the same names, so that the index sums either. Only plain numbers of the
    right kinds are read this way; a line with any other is read by `usage_from_json`."""

    input: int = 0
    output: int = 0
    cache_read: int = msgspec.field(default=0, name="cacheRead")
    cache_write: int = msgspec.field(default=0, name="cacheWrite")
    cost: CostCounts = msgspec.field(default_factory=CostCounts)


class EntryFacts(msgspec.Struct, frozen=True, gc=False):
    """What the ledger's index and the session list keep of one entry: read from the entry
    (`facts_of`), from its line's object without building it (`message_facts`), or from its
    line's bytes without building its content (`line_facts`). A msgspec struct: made in C,
    100k of them for a rebuild of the index."""

    id: str
    parent_id: str | None
    timestamp: str
    kind: str  # one letter (session/index.py)
    usage: Usage | UsageCounts | None = None  # a model call's answer, a compaction's summaries
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
            retained=_retained(data.get("cacheRetention")),
            model=str(message.get("model", "")) or None,
        )
    if kind == USER and not isinstance(message.get("note"), str):
        return EntryFacts(entry_id, parent_id, timestamp, kind, prompt=_first_typed_text(message))
    return EntryFacts(entry_id, parent_id, timestamp, kind)


class _MessageHead(msgspec.Struct, kw_only=True, gc=False):
    """What `message_facts` reads of a message object, typed so that msgspec refuses what
    it would not take as is; `content` is left as its bytes."""

    role: Literal["assistant", "toolResult", "user"]
    content: msgspec.Raw
    usage: UsageCounts | None = None
    model: Any = ""
    note: Any = None
    attachments: Any = None


class _Block(msgspec.Struct, gc=False):
    """What a prompt's first typed text needs of a content block."""

    type: Any = None
    text: Any = None


_BLOCKS = msgspec.json.Decoder(list[_Block])


class _LineHead(msgspec.Struct, kw_only=True, gc=False):
    """What `message_facts` reads of a message line's object (in any key order: a ledger
    written by another version, or by hand, reads the same)."""

    type: Literal["message"]
    id: Annotated[str, msgspec.Meta(min_length=1)]
    parent_id: str | None = msgspec.field(default=None, name="parentId")
    timestamp: str
    message: _MessageHead
    cache_retention: Any = msgspec.field(default=None, name="cacheRetention")


_LINE_HEAD = msgspec.json.Decoder(_LineHead)


def line_facts(raw: bytes | memoryview) -> EntryFacts | None:
    """`message_facts` of the line `raw` (valid UTF-8: the caller checks), read without
    building the message's content (but a prompt's blocks' type and text): for a message
    line whose fields are the plain kinds the ledger writes. None for any other line, which
    the caller decodes in full (so that whatever is wrong with it is found and said one
    way, by `message_facts` or `entry_from_json`). msgspec checks the JSON of the whole
    line, the content it skips included."""
    try:
        line = _LINE_HEAD.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None  # not JSON, or not a message line of the plain kinds: decoded in full
    message = line.message
    if memoryview(message.content)[:1].tobytes() != b"[":
        return None
    kind = _ROLE_KINDS[message.role]
    if kind == ASSISTANT:
        return EntryFacts(
            line.id,
            line.parent_id,
            line.timestamp,
            kind,
            usage=message.usage,
            retained=_retained(line.cache_retention),
            model=str(message.model) or None,
        )
    if kind == USER and type(message.note) is not str:
        try:  # a prompt: its first typed text is wanted (the blocks must all be objects)
            blocks = _BLOCKS.decode(message.content)
        except (msgspec.DecodeError, RecursionError):
            return None
        prompt = _typed_text([(b.type, b.text) for b in blocks], message.attachments)
        return EntryFacts(line.id, line.parent_id, line.timestamp, kind, prompt=prompt)
    return EntryFacts(line.id, line.parent_id, line.timestamp, kind)


def _retained(retention: object) -> bool:
    """Whether an answer's `cacheRetention` is one this version knows (any JSON value)."""
    return type(retention) is str and retention in CACHE_RETENTIONS


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
    blocks = [
        (block.get("type"), block.get("text"))
        for block in message["content"]
        if isinstance(block, Mapping)
    ]
    return _typed_text(blocks, message.get("attachments"))


def _typed_text(blocks: list[tuple[Any, Any]], attachments: Any) -> str:
    """The first text of `blocks` (the type and text of each object block of a prompt's
    content) after the blocks `attachments` added, "" if none."""
    skip = 0
    if isinstance(attachments, list):
        for attachment in attachments:
            count = attachment.get("blocks", 1) if isinstance(attachment, Mapping) else 1
            skip += count if isinstance(count, int) else 1
    for kind, text in blocks[skip:]:
        if kind == "text":
            return text if isinstance(text, str) else ""
    return ""


def usage_of(entry: Entry) -> Usage | None:
    """The usage a ledger entry records: a model call's answer, or a compaction's summaries."""
    if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
        return entry.message.usage
    if isinstance(entry, CompactionEntry):
        return entry.usage
    return None
