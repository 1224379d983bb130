"""The entry types of a session ledger and their JSON form.

A ledger is a JSONL file: a `session` header line, then one entry per line. Every entry has
an `id` (short hex, unique within the file), a `parentId` (the entry it follows; None for the
first) and an ISO 8601 UTC `timestamp`; together the parent links form a tree, and the path
from the root to the current leaf is the conversation. JSON keys are camelCase.

Types this version does not know are loaded as `UnknownEntry` and written back untouched, so
that an older server never destroys what a newer one wrote.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, Literal, TypeAlias, TypeVar, cast, get_args

from agent_server.errors import LedgerFormatError
from agent_server.llm.messages import (
    CompactionContent,
    Message,
    MessageFormatError,
    ToolSpec,
    Usage,
    content_from_json,
    content_to_json,
    message_from_json,
    message_to_json,
    usage_from_json,
    usage_to_json,
)
from agent_server.llm.stream import CacheRetention

LEDGER_VERSION = 1

CACHE_RETENTIONS: frozenset[str] = frozenset(get_args(CacheRetention))
CompactionReason: TypeAlias = Literal[
    "threshold", "overflow", "truncation", "manual", "idle", "requested"
]
COMPACTION_REASONS: frozenset[str] = frozenset(get_args(CompactionReason))
PinKind: TypeAlias = Literal["rule", "fact"]
"""What a pinned text is: a rule the agent must follow, or a fact it must not forget."""
PinAuthor: TypeAlias = Literal["user", "model"]
PinAction: TypeAlias = Literal["add", "remove"]
PlanStatus: TypeAlias = Literal["pending", "in_progress", "completed"]
PlanPriority: TypeAlias = Literal["high", "medium", "low"]


def utc_timestamp(moment: datetime | None = None) -> str:
    """ISO 8601 UTC with milliseconds, e.g. 2025-01-31T12:00:00.123Z."""
    moment = moment or datetime.now(UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def timestamp_seconds(timestamp: str) -> float | None:
    """An entry's timestamp as seconds since the epoch; None when it is not ISO 8601."""
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


# --- header ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionHeader:
    """The first line of a ledger."""

    session_id: str
    workspace: str
    created_at: str
    version: int = LEDGER_VERSION
    title: str | None = None
    model: str | None = None  # the model the session was created with, for the session list


def header_to_json(header: SessionHeader) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "session",
        "version": header.version,
        "id": header.session_id,
        "workspace": header.workspace,
        "createdAt": header.created_at,
    }
    if header.title is not None:
        out["title"] = header.title
    if header.model is not None:
        out["model"] = header.model
    return out


def header_from_json(data: Mapping[str, Any]) -> SessionHeader:
    if data.get("type") != "session":
        raise LedgerFormatError("the first line is not a session header (type 'session')")
    version = data.get("version")
    if not isinstance(version, int) or version < 1:
        raise LedgerFormatError("the session header has no valid 'version'")
    title = data.get("title")
    model = data.get("model")
    return SessionHeader(
        session_id=_str(data, "id"),
        workspace=_str(data, "workspace"),
        created_at=_str(data, "createdAt"),
        version=version,
        title=title if isinstance(title, str) else None,
        model=model if isinstance(model, str) else None,
    )


# --- entries --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MessageEntry:
    """A message. A model's answer records the cache retention its call used (None: not
    known, as in ledgers written before it was recorded); with the entry's timestamp, that
    says whether the cache is still warm when the session is opened again."""

    id: str
    parent_id: str | None
    timestamp: str
    message: Message
    cache_retention: CacheRetention | None = None


@dataclass(frozen=True, slots=True)
class CompactionDetails:
    """Files the summarised history touched, carried from compaction to compaction."""

    read_files: tuple[str, ...] = ()
    modified_files: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Pin:
    """A rule or a fact pinned for the session: carried verbatim across every compaction."""

    id: str
    kind: PinKind
    text: str
    by: PinAuthor


@dataclass(frozen=True, slots=True)
class PlanItem:
    """One step of the task's plan (the Agent Client Protocol's plan entry)."""

    content: str
    status: PlanStatus
    priority: PlanPriority = "medium"


@dataclass(frozen=True, slots=True)
class Failure:
    """A tool call that failed: the call as the summary prompt writes it, its failing line,
    and what the model said next (its first sentences; "" when it said nothing)."""

    call: str
    error: str
    then: str = ""


@dataclass(frozen=True, slots=True)
class Carried:
    """What a compaction carries verbatim after its summary, computed from the ledger
    (context/carried.py): the user's own messages not kept verbatim in the tail (oldest
    first; how many older ones were left out), the pins in force, the latest plan, and the
    failed calls (oldest first; how many were left out), and the shell commands that
    worked."""

    user_messages: tuple[str, ...] = ()
    user_messages_left_out: int = 0
    pins: tuple[Pin, ...] = ()
    plan: tuple[PlanItem, ...] = ()
    failures: tuple[Failure, ...] = ()
    failures_left_out: int = 0
    # Shell commands that succeeded, each once, oldest first (the newest within a budget).
    worked: tuple[str, ...] = ()
    # The text of the model's messages, oldest first (the newest within a budget).
    said: tuple[str, ...] = ()
    said_left_out: int = 0

    @property
    def empty(self) -> bool:
        return not (
            self.user_messages or self.pins or self.plan or self.failures or self.worked
            or self.said
        )


@dataclass(frozen=True, slots=True)
class CompactionEntry:
    """History before `first_kept_entry_id` is replaced by `summary` in the projection.

    `first_kept_entry_id` None means nothing was kept: the projection is the summary plus what
    came after this entry. `split_turn_summary` summarises the early part of a turn that was
    too large to keep whole (its later part starts at `first_kept_entry_id`).

    `provider` is set when the provider compacted (the setting `compaction.engine:
    "provider"`): its block or items exactly as returned, sent back to that API byte for byte
    in place of `summary` (context/projection.py). `summary` is then its readable text, or,
    for an encrypted one, a note saying so.
    """

    id: str
    parent_id: str | None
    timestamp: str
    summary: str
    first_kept_entry_id: str | None
    tokens_before: int
    tokens_after: int | None
    reason: CompactionReason
    details: CompactionDetails = field(default_factory=CompactionDetails)
    split_turn_summary: str | None = None
    model: str | None = None
    # What the summary calls cost: they are billed like any call, but leave no message.
    usage: Usage | None = None
    # What the projection carries verbatim after the summary (None: a ledger written before
    # compactions carried anything).
    carried: Carried | None = None
    provider: CompactionContent | None = None


@dataclass(frozen=True, slots=True)
class PinEntry:
    """A pin added or removed (`action`), by the user or the model: the pins in force are
    the latest compaction's carried ones with the pin entries after it applied in order."""

    id: str
    parent_id: str | None
    timestamp: str
    pin_id: str
    action: PinAction
    kind: PinKind
    text: str
    by: PinAuthor


@dataclass(frozen=True, slots=True)
class PlanEntry:
    """The task's plan as the model last wrote it (the whole list, replacing the previous)."""

    id: str
    parent_id: str | None
    timestamp: str
    items: tuple[PlanItem, ...]


@dataclass(frozen=True, slots=True)
class ModelChangeEntry:
    """The model the session's requests go to from here on, and how hard it thinks
    (`thinking`, a ThinkingLevel; None in ledgers written before it was recorded: "off")."""

    id: str
    parent_id: str | None
    timestamp: str
    provider: str
    model: str
    thinking: str | None = None


@dataclass(frozen=True, slots=True)
class BranchEntry:
    """A rewind: the conversation continues from `target_id` (this entry's parent).

    `target_id` None means back to the very start, before the first entry.
    """

    id: str
    parent_id: str | None
    timestamp: str
    target_id: str | None
    summary: str | None = None


@dataclass(frozen=True, slots=True)
class FileVersion:
    """One file's content before and after a change, as digests of the checkpoint store
    (agent/checkpoints.py); None: the file did not exist."""

    path: str  # relative to the workspace, POSIX
    before: str | None
    after: str | None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "before": self.before, "after": self.after}

    @staticmethod
    def from_json(data: object) -> FileVersion:
        if not isinstance(data, Mapping):
            raise LedgerFormatError("a file version must be an object")
        before, after = data.get("before"), data.get("after")
        if not (before is None or isinstance(before, str)) or not (
            after is None or isinstance(after, str)
        ):
            raise LedgerFormatError("a file version's before and after must be digests or null")
        return FileVersion(_str(data, "path"), before, after)


@dataclass(frozen=True, slots=True)
class FileRestoreEntry:
    """Files put back as they were at an earlier point of the session (`target_id`, the
    entry rewound to): each file's content before the restore and after it, so that a
    later rewind can undo the restore too."""

    id: str
    parent_id: str | None
    timestamp: str
    target_id: str
    files: tuple[FileVersion, ...]


@dataclass(frozen=True, slots=True)
class TitleEntry:
    id: str
    parent_id: str | None
    timestamp: str
    title: str


@dataclass(frozen=True, slots=True)
class SystemPromptEntry:
    """The system prompt the session's requests start with, recorded so that the prefix
    stays byte-identical across restarts (invariant 1)."""

    id: str
    parent_id: str | None
    timestamp: str
    text: str


ToolListReason: TypeAlias = Literal["start", "accepted", "compaction"]
TOOL_LIST_REASONS: frozenset[str] = frozenset(get_args(ToolListReason))


@dataclass(frozen=True, slots=True)
class McpToolSource:
    """Where a tool of the list comes from: `tool` of the MCP server `server`, sent as `name`."""

    name: str
    server: str
    tool: str
    # The server's readOnlyHint when the list was fixed: the call's kind (a read) is the
    # same live and when the session is reloaded without the server running.
    read_only_hint: bool = False


@dataclass(frozen=True, slots=True)
class ToolListEntry:
    """The tool list the session's requests send, exactly, from this entry on (the latest one
    in the file is in force), so that the prefix stays byte-identical across restarts and
    whatever the MCP servers do (invariant 1). `reason`: the session's first request
    ("start"), a change the user accepted, or a compaction that took the change in."""

    id: str
    parent_id: str | None
    timestamp: str
    tools: tuple[ToolSpec, ...]
    mcp: tuple[McpToolSource, ...] = ()
    reason: ToolListReason = "start"


@dataclass(frozen=True, slots=True)
class UnknownEntry:
    """An entry of a type this version does not know; `raw` is written back unchanged."""

    raw: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.raw["id"])

    @property
    def parent_id(self) -> str | None:
        parent = self.raw.get("parentId")
        return parent if isinstance(parent, str) else None

    @property
    def timestamp(self) -> str:
        value = self.raw.get("timestamp")
        return value if isinstance(value, str) else ""

    @property
    def type(self) -> str:
        return str(self.raw.get("type"))


Entry: TypeAlias = (
    MessageEntry
    | CompactionEntry
    | ModelChangeEntry
    | BranchEntry
    | TitleEntry
    | SystemPromptEntry
    | FileRestoreEntry
    | ToolListEntry
    | PinEntry
    | PlanEntry
    | UnknownEntry
)

# --- on disk: each kind's row, and the envelope every entry shares --------------------------


@dataclass(frozen=True, slots=True)
class Envelope:
    """What every entry's line has besides its own fields: its id, parent and timestamp."""

    id: str
    parent_id: str | None
    timestamp: str


E = TypeVar("E")


@dataclass(frozen=True, slots=True)
class EntryKind(Generic[E]):
    """One entry type as the ledger writes it: its `type`, its class, and how its own fields
    are written (after the envelope's, in this order) and read back (raising
    LedgerFormatError saying what is wrong)."""

    name: str
    cls: type[E]
    write: Callable[[E], dict[str, Any]]
    read: Callable[[Mapping[str, Any], Envelope], E]


def _write_message(entry: MessageEntry) -> dict[str, Any]:
    out: dict[str, Any] = {"message": message_to_json(entry.message)}
    if entry.cache_retention is not None:
        out["cacheRetention"] = entry.cache_retention
    return out


def _read_message(data: Mapping[str, Any], at: Envelope) -> MessageEntry:
    try:
        parsed = message_from_json(message_object(data))
    except MessageFormatError as exc:
        raise LedgerFormatError(f"bad message: {exc}") from exc
    retention = data.get("cacheRetention")  # one this version does not know: unknown
    known = (
        cast(CacheRetention, retention)
        if isinstance(retention, str) and retention in CACHE_RETENTIONS
        else None
    )
    return MessageEntry(at.id, at.parent_id, at.timestamp, parsed, known)


def _write_compaction(entry: CompactionEntry) -> dict[str, Any]:
    out: dict[str, Any] = {
        "summary": entry.summary,
        "firstKeptEntryId": entry.first_kept_entry_id,
        "tokensBefore": entry.tokens_before,
        "tokensAfter": entry.tokens_after,
        "reason": entry.reason,
        "details": {
            "readFiles": list(entry.details.read_files),
            "modifiedFiles": list(entry.details.modified_files),
        },
    }
    if entry.split_turn_summary is not None:
        out["splitTurnSummary"] = entry.split_turn_summary
    if entry.model is not None:
        out["model"] = entry.model
    if entry.usage is not None:
        out["usage"] = usage_to_json(entry.usage)
    if entry.carried is not None:
        out["carried"] = carried_to_json(entry.carried)
    if entry.provider is not None:
        out["provider"] = content_to_json(entry.provider)
    return out


def _read_compaction(data: Mapping[str, Any], at: Envelope) -> CompactionEntry:
    reason = data.get("reason")
    if reason not in COMPACTION_REASONS:
        raise LedgerFormatError(f"unknown compaction reason {reason!r}")
    first_kept = data.get("firstKeptEntryId")
    if first_kept is not None and not isinstance(first_kept, str):
        raise LedgerFormatError("firstKeptEntryId must be a string or null")
    details = data.get("details") or {}
    if not isinstance(details, Mapping):
        raise LedgerFormatError("compaction details must be an object")
    tokens_after = data.get("tokensAfter")
    split = data.get("splitTurnSummary")
    model = data.get("model")
    usage = data.get("usage")
    carried = data.get("carried")
    return CompactionEntry(
        id=at.id,
        parent_id=at.parent_id,
        timestamp=at.timestamp,
        summary=_str(data, "summary"),
        first_kept_entry_id=first_kept,
        tokens_before=_int(data, "tokensBefore"),
        tokens_after=tokens_after if isinstance(tokens_after, int) else None,
        reason=reason,
        details=CompactionDetails(
            read_files=_str_tuple(details, "readFiles"),
            modified_files=_str_tuple(details, "modifiedFiles"),
        ),
        split_turn_summary=split if isinstance(split, str) else None,
        model=model if isinstance(model, str) else None,
        usage=usage_from_json(usage) if isinstance(usage, Mapping) else None,
        carried=carried_from_json(carried) if carried is not None else None,
        provider=_provider_compaction(data.get("provider")),
    )


def _write_model_change(entry: ModelChangeEntry) -> dict[str, Any]:
    out: dict[str, Any] = {"provider": entry.provider, "model": entry.model}
    if entry.thinking is not None:
        out["thinking"] = entry.thinking
    return out


def _read_model_change(data: Mapping[str, Any], at: Envelope) -> ModelChangeEntry:
    thinking = data.get("thinking")
    return ModelChangeEntry(
        at.id, at.parent_id, at.timestamp, provider=_str(data, "provider"),
        model=_str(data, "model"), thinking=thinking if isinstance(thinking, str) else None,
    )


def _write_branch(entry: BranchEntry) -> dict[str, Any]:
    out: dict[str, Any] = {"targetId": entry.target_id}
    if entry.summary is not None:
        out["summary"] = entry.summary
    return out


def _read_branch(data: Mapping[str, Any], at: Envelope) -> BranchEntry:
    target = data.get("targetId")
    if target is not None and not isinstance(target, str):
        raise LedgerFormatError("targetId must be a string or null")
    summary = data.get("summary")
    return BranchEntry(at.id, at.parent_id, at.timestamp, target_id=target,
                       summary=summary if isinstance(summary, str) else None)


def _read_file_restore(data: Mapping[str, Any], at: Envelope) -> FileRestoreEntry:
    files = data.get("files")
    if not isinstance(files, list):
        raise LedgerFormatError("a fileRestore entry needs a 'files' list")
    return FileRestoreEntry(
        at.id, at.parent_id, at.timestamp, target_id=_str(data, "targetId"),
        files=tuple(FileVersion.from_json(item) for item in files),
    )


def _write_tool_list(entry: ToolListEntry) -> dict[str, Any]:
    return {
        "reason": entry.reason,
        "tools": [
            {"name": t.name, "description": t.description, "inputSchema": t.parameters}
            for t in entry.tools
        ],
        "mcp": [
            {"name": s.name, "server": s.server, "tool": s.tool}
            | ({"readOnlyHint": True} if s.read_only_hint else {})
            for s in entry.mcp
        ],
    }


def _read_pin(data: Mapping[str, Any], at: Envelope) -> PinEntry:
    return PinEntry(at.id, at.parent_id, at.timestamp, pin_id=_str(data, "pinId"),
                    action=cast(PinAction, _choice(data, "action", PIN_ACTIONS)),
                    kind=cast(PinKind, _choice(data, "kind", PIN_KINDS)),
                    text=_str(data, "text"),
                    by=cast(PinAuthor, _choice(data, "by", PIN_AUTHORS)))


ENTRY_KINDS: tuple[EntryKind[Any], ...] = (
    EntryKind("message", MessageEntry, _write_message, _read_message),
    EntryKind("compaction", CompactionEntry, _write_compaction, _read_compaction),
    EntryKind("modelChange", ModelChangeEntry, _write_model_change, _read_model_change),
    EntryKind("branch", BranchEntry, _write_branch, _read_branch),
    EntryKind(
        "title", TitleEntry, lambda e: {"title": e.title},
        lambda data, at: TitleEntry(at.id, at.parent_id, at.timestamp, _str(data, "title")),
    ),
    EntryKind(
        "systemPrompt", SystemPromptEntry, lambda e: {"text": e.text},
        lambda data, at: SystemPromptEntry(at.id, at.parent_id, at.timestamp, _str(data, "text")),
    ),
    EntryKind(
        "fileRestore", FileRestoreEntry,
        lambda e: {"targetId": e.target_id, "files": [v.to_json() for v in e.files]},
        _read_file_restore,
    ),
    EntryKind("toolList", ToolListEntry, _write_tool_list, lambda data, at: _read_tool_list(
        data, at.id, at.parent_id, at.timestamp)),
    EntryKind(
        "pin", PinEntry,
        lambda e: {"pinId": e.pin_id, "action": e.action, "kind": e.kind, "text": e.text,
                   "by": e.by},
        _read_pin,
    ),
    EntryKind(
        "plan", PlanEntry, lambda e: {"entries": [plan_item_to_json(i) for i in e.items]},
        lambda data, at: PlanEntry(at.id, at.parent_id, at.timestamp,
                                   plan_from_json(data.get("entries"))),
    ),
)
_BY_NAME: dict[str, EntryKind[Any]] = {kind.name: kind for kind in ENTRY_KINDS}
_BY_CLASS: dict[type, EntryKind[Any]] = {kind.cls: kind for kind in ENTRY_KINDS}
KNOWN_ENTRY_TYPES: frozenset[str] = frozenset(_BY_NAME)


def entry_type(entry: Entry) -> str:
    """The `type` field this entry has on disk."""
    if isinstance(entry, UnknownEntry):
        return entry.type
    return _BY_CLASS[type(entry)].name


def entry_to_json(entry: Entry) -> dict[str, Any]:
    if isinstance(entry, UnknownEntry):
        return copy.deepcopy(entry.raw)
    kind = _BY_CLASS[type(entry)]
    return {
        "type": kind.name,
        "id": entry.id,
        "parentId": entry.parent_id,
        "timestamp": entry.timestamp,
        **kind.write(entry),
    }


def entry_envelope(data: object) -> tuple[str, str, str | None]:
    """The type, id and parent of one ledger line's object, checked as `entry_from_json`
    checks them; raises LedgerFormatError saying what is wrong."""
    if type(data) is not dict and not isinstance(data, Mapping):
        raise LedgerFormatError("an entry must be a JSON object")
    kind = data.get("type")
    if not isinstance(kind, str):
        raise LedgerFormatError("the entry has no 'type'")
    entry_id = _str(data, "id")
    if not entry_id:
        raise LedgerFormatError("the entry has an empty 'id'")
    parent = data.get("parentId")
    if parent is not None and not isinstance(parent, str):
        raise LedgerFormatError("parentId must be a string or null")
    return kind, entry_id, parent


def message_object(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """The `message` object of a message entry's line (LedgerFormatError when it has none)."""
    message = data.get("message")
    if type(message) is not dict and not isinstance(message, Mapping):
        raise LedgerFormatError("a message entry needs a 'message' object")
    return message


def entry_from_json(data: Mapping[str, Any]) -> Entry:
    """One ledger line's object as an entry; raises LedgerFormatError saying what is wrong."""
    name, entry_id, parent = entry_envelope(data)
    kind = _BY_NAME.get(name)
    if kind is None:
        return UnknownEntry(raw=copy.deepcopy(dict(data)))
    entry: Entry = kind.read(data, Envelope(entry_id, parent, _str(data, "timestamp")))
    return entry


def _provider_compaction(data: object) -> CompactionContent | None:
    if data is None:
        return None
    try:
        block = content_from_json(data) if isinstance(data, Mapping) else None
    except MessageFormatError as exc:
        raise LedgerFormatError(f"bad provider compaction: {exc}") from exc
    if not isinstance(block, CompactionContent):
        raise LedgerFormatError("a compaction's 'provider' must be a compaction block")
    return block


def _read_tool_list(
    data: Mapping[str, Any], entry_id: str, parent: str | None, timestamp: str
) -> ToolListEntry:
    reason = data.get("reason", "start")
    if reason not in TOOL_LIST_REASONS:
        raise LedgerFormatError(f"unknown tool list reason {reason!r}")
    tools_data = data.get("tools")
    if not isinstance(tools_data, list):
        raise LedgerFormatError("a toolList entry needs a 'tools' list")
    tools: list[ToolSpec] = []
    for tool in tools_data:
        schema = tool.get("inputSchema") if isinstance(tool, Mapping) else None
        if not isinstance(schema, Mapping):
            raise LedgerFormatError("each tool needs an 'inputSchema' object")
        tools.append(ToolSpec(_str(tool, "name"), _str(tool, "description"), dict(schema)))
    sources_data = data.get("mcp") or []
    if not isinstance(sources_data, list) or not all(
        isinstance(item, Mapping) for item in sources_data
    ):
        raise LedgerFormatError("'mcp' must be a list of {name, server, tool}")
    sources = tuple(
        McpToolSource(
            _str(item, "name"),
            _str(item, "server"),
            _str(item, "tool"),
            item.get("readOnlyHint") is True,
        )
        for item in sources_data
    )
    return ToolListEntry(entry_id, parent, timestamp, tuple(tools), sources, reason)


PIN_KINDS: frozenset[str] = frozenset(get_args(PinKind))
PIN_AUTHORS: frozenset[str] = frozenset(get_args(PinAuthor))
PIN_ACTIONS: frozenset[str] = frozenset(get_args(PinAction))
PLAN_STATUSES: frozenset[str] = frozenset(get_args(PlanStatus))
PLAN_PRIORITIES: frozenset[str] = frozenset(get_args(PlanPriority))


def plan_item_to_json(item: PlanItem) -> dict[str, Any]:
    return {"content": item.content, "status": item.status, "priority": item.priority}


def carried_to_json(carried: Carried) -> dict[str, Any]:
    return {
        "userMessages": list(carried.user_messages),
        "userMessagesLeftOut": carried.user_messages_left_out,
        "pins": [{"id": p.id, "kind": p.kind, "text": p.text, "by": p.by} for p in carried.pins],
        "plan": [plan_item_to_json(item) for item in carried.plan],
        "failures": [{"call": f.call, "error": f.error, "then": f.then}
                     for f in carried.failures],
        "failuresLeftOut": carried.failures_left_out,
        **({"worked": list(carried.worked)} if carried.worked else {}),
        **({"said": list(carried.said), "saidLeftOut": carried.said_left_out}
           if carried.said or carried.said_left_out else {}),
    }


def carried_from_json(data: object) -> Carried:
    """A compaction's carried block; keys a newer version added are ignored."""
    if not isinstance(data, Mapping):
        raise LedgerFormatError("a compaction's 'carried' must be an object")
    pins = _objects(data.get("pins"), "carried pins")
    failures = _objects(data.get("failures"), "carried failures")
    return Carried(
        user_messages=_str_tuple(data, "userMessages"),
        user_messages_left_out=_count(data, "userMessagesLeftOut"),
        pins=tuple(
            Pin(_str(p, "id"), cast(PinKind, _choice(p, "kind", PIN_KINDS)), _str(p, "text"),
                cast(PinAuthor, _choice(p, "by", PIN_AUTHORS)))
            for p in pins
        ),
        plan=plan_from_json(data.get("plan")),
        failures=tuple(
            Failure(_str(f, "call"), _str(f, "error"), _str(f, "then") if "then" in f else "")
            for f in failures
        ),
        failures_left_out=_count(data, "failuresLeftOut"),
        worked=_str_tuple(data, "worked"),
        said=_str_tuple(data, "said"),
        said_left_out=_count(data, "saidLeftOut"),
    )


def plan_from_json(value: object) -> tuple[PlanItem, ...]:
    return tuple(
        PlanItem(_str(item, "content"),
                 cast(PlanStatus, _choice(item, "status", PLAN_STATUSES)),
                 cast(PlanPriority, _choice(item, "priority", PLAN_PRIORITIES))
                 if "priority" in item else "medium")
        for item in _objects(value, "plan entries")
    )


def _objects(value: object, what: str) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
        raise LedgerFormatError(f"{what} must be a list of objects")
    return value


def _choice(data: Mapping[str, Any], key: str, allowed: frozenset[str]) -> str:
    value = data.get(key)
    if value not in allowed:
        raise LedgerFormatError(f"{key!r} must be one of {', '.join(sorted(allowed))}")
    return str(value)


def _count(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise LedgerFormatError(f"{key!r} must be a count")
    return value


def _str(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise LedgerFormatError(f"{key!r} must be a string")
    return value


def _int(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise LedgerFormatError(f"{key!r} must be an integer")
    return value


def _str_tuple(data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise LedgerFormatError(f"{key!r} must be a list of strings")
    return tuple(value)
