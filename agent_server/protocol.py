"""The editor protocol, described once: every custom method's name, params and result, every
notification's params, and the value sets they carry.

The shapes are TypedDicts, keys exactly as sent (camelCase); a field's docstring follows it.
The server's handlers (lsp/handlers.py) are registered from the table at the end and answer
with these types; the agent layer takes its wire value sets from here. What reads this:

- client-vscode/src/protocol/types.ts is generated from it (`make protocol`, by
  lsp/typescript.py), and so is the method table of docs/protocol.md; the test suite fails
  when either is out of date;
- tests/lsp check every result and notification the server sends against it.

It sits between `context` and `agent`: it reads the value sets of the layers below (a
compaction's reason, a context decision, an attachment's kind) and imports nothing above.
"""

# No `from __future__ import annotations`: TypedDict reads NotRequired from evaluated
# annotations only.
from dataclasses import dataclass
from typing import Any, Literal, NewType, NotRequired, TypeAlias, TypedDict

from agent_server.context.decision import ContextAction, DecisionReason

# CompactionEngine re-exported: a setting's value set (lsp/typescript.py reads it here).
from agent_server.context.trigger import CompactionEngine as CompactionEngine
from agent_server.llm.messages import AttachmentKind
from agent_server.llm.stream import ThinkingLevel as ThinkingLevel
from agent_server.session.entries import CompactionReason, PinAuthor, PlanPriority, PlanStatus
from agent_server.session.entries import PinKind as PinKind
from agent_server.session.index import IssueAction

# --- value sets ------------------------------------------------------------------------------

PermissionMode: TypeAlias = Literal["ask", "allowReads", "allowAll"]
"""When the agent asks before running a tool."""
# Each mode's name and what it means, wherever a user picks one: the editor's settings and
# mode picker (generated: client-vscode/src/protocol/settings.ts), ACP's modes, the terminal.
PERMISSION_MODE_NAMES: dict[str, tuple[str, str]] = {
    "ask": ("Ask every time", "Every tool call asks first, reads too"),
    "allowReads": ("Allow reads", "Reads and searches run; writes, edits and commands ask first"),
    "allowAll": ("Allow all", "Nothing asks first (commands still run in the sandbox)"),
}
PermissionOptionKind: TypeAlias = Literal[
    "allow_once", "allow_always", "reject_once", "reject_always"
]
RestoreChoice: TypeAlias = Literal["conversation", "files", "both"]
"""What a rewind puts back."""
FileAction: TypeAlias = Literal["restore", "delete"]
"""What a restore does to a file: put it back, or delete it (it did not exist then)."""
ToolKind: TypeAlias = Literal["read", "edit", "search", "execute", "other"]
"""The Agent Client Protocol's tool kinds; the editor picks an icon by it."""
ToolCallStatus: TypeAlias = Literal["pending", "in_progress", "completed", "failed"]
ToolProgress: TypeAlias = Literal["in_progress", "completed", "failed"]
NoticeLevel: TypeAlias = Literal["info", "warning", "error"]
TurnStopReason: TypeAlias = Literal[
    "end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error"
]
CompactionEnd: TypeAlias = Literal["completed", "failed", "cancelled"]
CompactionStatus: TypeAlias = Literal["started", CompactionEnd]
OverflowKind: TypeAlias = Literal["truncated", "rejected", "estimated"]
"""truncated: the last answer was cut off by the window; rejected: the provider refused the
request as too long; estimated: not sent, its estimate over the window or holding one
already rejected."""
OverflowAction: TypeAlias = Literal["compacting", "retrying", "gaveUp"]
McpServerState: TypeAlias = Literal["starting", "ready", "failed", "stopped"]
McpTransport: TypeAlias = Literal["stdio", "http", "sse"]
CacheRetentionSetting: TypeAlias = Literal["none", "short", "long", "auto"]
"""`auto`: short, or long while the user is away and after a pause past the short one."""
SandboxMode: TypeAlias = Literal["auto", "always", "off"]
"""Whether shell commands run in the sandbox (`auto`: every command where the machine can, the
user may let one out; `always`: every command, or none; `off`)."""
ProviderName = NewType("ProviderName", str)
"""A value of the setting `provider` (llm/providers.py; the extension's providers.ts)."""

# --- content ---------------------------------------------------------------------------------


class TextContent(TypedDict):
    type: Literal["text"]
    text: str


class ImageContent(TypedDict):
    type: Literal["image"]
    mimeType: str
    data: str


PromptBlock: TypeAlias = TextContent | ImageContent

# --- usage -----------------------------------------------------------------------------------


class LastTurnUsage(TypedDict):
    """Tokens and cost of some model calls (`cost` in USD; `calls` where several are summed)."""

    input: int
    cacheRead: int
    cacheWrite: int
    output: int
    cost: float
    calls: NotRequired[int]


class UsageSnapshot(TypedDict):
    """`agent/usage` notification params and the `usage` of several results."""

    sessionId: str
    used: int
    size: int
    compactAt: int
    windowNumber: int
    lastCall: LastTurnUsage
    """The last model call."""
    lastTurn: LastTurnUsage
    """The running turn, or the last one: its own calls (answers and compaction summaries)."""
    session: LastTurnUsage
    """Every call of the session."""
    cacheHitRate: float
    cost: float


UsageNotificationParams: TypeAlias = UsageSnapshot

# --- the live stream (agent/update) and the transcript ---------------------------------------


class PromptAttachment(TypedDict):
    """What a prompt's @-mention attached (the attached text itself is for the model)."""

    path: str
    kind: AttachmentKind
    detail: NotRequired[str]


class ToolCallLocation(TypedDict):
    path: str
    line: NotRequired[int]


class ToolCallTextContent(TypedDict):
    """What the tool returned: its text, or an image (an MCP tool's screenshot)."""

    type: Literal["content"]
    content: TextContent | ImageContent


class ToolCallDiffContent(TypedDict):
    """The Agent Client Protocol's diff (`oldText` null for a new file), plus `diff`: the
    server's unified diff of the two."""

    type: Literal["diff"]
    path: str
    oldText: str | None
    newText: str
    diff: NotRequired[str]


ToolCallContent: TypeAlias = ToolCallTextContent | ToolCallDiffContent


class UserMessageUpdate(TypedDict):
    kind: Literal["userMessage"]
    entryId: str
    parentId: str | None
    """The entry the prompt follows: rewinding there lets the user ask again differently."""
    content: list[PromptBlock]
    """What the user typed or pasted."""
    attachments: NotRequired[list[PromptAttachment]]
    """What its @-mentions attached."""


class MessageChunkUpdate(TypedDict):
    kind: Literal["messageChunk"]
    messageId: str
    content: TextContent


class ThoughtChunkUpdate(TypedDict):
    kind: Literal["thoughtChunk"]
    messageId: str
    content: TextContent


class MessageDiscardedUpdate(TypedDict):
    """Live only: a model call failed after part of its answer had streamed, and is retried.
    The chunks of `messageId` (text and thoughts) are abandoned, never recorded (a reload does
    not show them); the retried answer streams from its start under another id."""

    kind: Literal["messageDiscarded"]
    messageId: str


class ToolCallUpdateStart(TypedDict):
    kind: Literal["toolCall"]
    toolCallId: str
    title: str
    toolKind: ToolKind
    status: Literal["pending"]
    rawInput: Any
    locations: NotRequired[list[ToolCallLocation]]


class ToolCallProgressUpdate(TypedDict):
    kind: Literal["toolCallUpdate"]
    toolCallId: str
    status: NotRequired[ToolProgress]
    content: NotRequired[list[ToolCallContent]]
    rawOutput: NotRequired[Any]


class RetryInfo(TypedDict):
    """A failed model call about to be tried again: attempt `attempt` of `attempts`, after
    `wait` seconds."""

    attempt: int
    attempts: int
    wait: float


class NoticeUpdate(TypedDict):
    kind: Literal["notice"]
    level: NoticeLevel
    message: str
    retry: NotRequired[RetryInfo]
    """A model call being retried after a provider error: the notice is over once a later
    update of the turn comes."""
    entryId: NotRequired[str]
    """In a loaded transcript, an editor note the model was given (an external edit, a branch
    summary): its entry and kind."""
    note: NotRequired[str]


class ModelChangeMarker(TypedDict):
    kind: Literal["modelChange"]
    entryId: str
    provider: str
    model: str
    thinking: NotRequired[ThinkingLevel]
    """How hard the model thinks from here on (absent in sessions from before it was kept:
    off)."""


class ModelChangeUpdate(ModelChangeMarker):
    """The session goes on with another model or thinking level from this turn, because a
    setting changed (a switch the user asked for is answered by its own request): the
    transcript's marker, with the model's name and window and what the change costs."""

    modelInfo: "ModelRef"
    note: str


class PlanEntry(TypedDict):
    """One step of the task's plan (the Agent Client Protocol's plan entry)."""

    content: str
    status: PlanStatus
    priority: PlanPriority


class PlanUpdate(TypedDict):
    """The model wrote the task's plan: the whole list, replacing the one shown."""

    kind: Literal["plan"]
    entries: list[PlanEntry]


class PinInfo(TypedDict):
    """A rule or a fact pinned for the session: carried verbatim across every compaction."""

    id: str
    kind: PinKind
    text: str
    by: PinAuthor


class PinsUpdate(TypedDict):
    """The pins in force, after the user or the model added or removed one."""

    kind: Literal["pins"]
    pins: list[PinInfo]


SessionUpdate: TypeAlias = (
    UserMessageUpdate
    | MessageChunkUpdate
    | ThoughtChunkUpdate
    | MessageDiscardedUpdate
    | ToolCallUpdateStart
    | ToolCallProgressUpdate
    | NoticeUpdate
    | ModelChangeUpdate
    | PlanUpdate
    | PinsUpdate
)


class CompactionMarker(TypedDict):
    kind: Literal["compaction"]
    entryId: str
    status: Literal["completed"]
    reason: CompactionReason
    tokensBefore: int
    tokensAfter: NotRequired[int]
    summary: str
    firstKeptEntryId: str | None
    """null: the compaction kept nothing verbatim."""


class BranchMarker(TypedDict):
    kind: Literal["branch"]
    entryId: str
    targetId: str | None
    """The entry the conversation continued from (null: the very start)."""
    summary: NotRequired[str]
    """A summary of the branch left behind, when the rewind asked for one."""


class RestoredFile(TypedDict):
    """What a restore did to one file: put back, or deleted (it did not exist at that point)."""

    path: str
    action: FileAction


class FileRestoreMarker(TypedDict):
    kind: Literal["fileRestore"]
    entryId: str
    targetId: str
    """The entry the files were put back to."""
    files: list[RestoredFile]


TranscriptItem: TypeAlias = (
    SessionUpdate | CompactionMarker | BranchMarker | ModelChangeMarker | FileRestoreMarker
)
"""One item of a loaded transcript: exactly a live `agent/update` update, or a marker."""

# --- sessions --------------------------------------------------------------------------------


class ModelRef(TypedDict):
    """The model a session uses."""

    id: str
    name: str
    contextWindow: int


class SandboxState(TypedDict):
    """How a session's shell commands run; `reason` when a wanted sandbox is missing."""

    sandboxed: bool
    network: bool
    reason: NotRequired[str]


class SessionState(TypedDict):
    """A session's model, thinking level and mode (also in the session/new and session/load
    results)."""

    model: ModelRef
    thinking: ThinkingLevel
    canThink: bool
    """Whether the session's model takes a thinking level on its provider's API."""
    mode: PermissionMode
    sandbox: SandboxState
    """How the session's commands run (whatever the permission mode)."""


class McpServer(TypedDict):
    name: str
    state: McpServerState
    transport: McpTransport
    target: str
    """The command line or URL, secrets scrubbed."""
    tools: list[str]
    """The server's own tool names, as it lists them now."""
    trusted: bool
    source: str
    error: NotRequired[str]
    stderrTail: NotRequired[str]


class McpToolsChange(TypedDict):
    """A change of the tool list waiting for the user (names as the model sees them)."""

    added: list[str]
    removed: list[str]
    changed: list[str]
    tokens: int
    """What the next request re-reads without the cache if the change is accepted."""


class McpStatusParams(TypedDict):
    """`agent/mcp/status` notification params, and the answer to `agent/mcp/servers`."""

    sessionId: str
    servers: list[McpServer]
    toolsChange: McpToolsChange | None
    toolCount: int


class SessionNewParams(TypedDict):
    workspaceUri: str
    model: NotRequired[str]
    title: NotRequired[str]


class SessionNewResult(SessionState):
    sessionId: str
    usage: UsageSnapshot
    mcp: McpStatusParams


class SessionListParams(TypedDict):
    workspaceUri: str


class SessionSummary(TypedDict):
    sessionId: str
    title: str | None
    model: str | None
    createdAt: str
    updatedAt: str
    entryCount: int
    firstPrompt: str | None
    """The first prompt (its first 200 characters): tells apart sessions with one title."""
    promptCount: int


class SessionListResult(TypedDict):
    sessions: list[SessionSummary]


class SessionLoadParams(TypedDict):
    sessionId: str
    limit: NotRequired[int]
    """Entries in the first page (default 100)."""


class SessionForkParams(TypedDict):
    sessionId: str
    limit: NotRequired[int]
    """Entries in the first page of the fork's transcript (default 100)."""


class SessionRenameParams(TypedDict):
    sessionId: str
    title: str
    """Kept on one line (each run of white space becomes a space), at most 1,000 characters."""


class SessionRenameResult(TypedDict):
    sessionId: str
    title: str
    """The title as kept."""


class SessionDeleteParams(TypedDict):
    sessionId: str


class RepairIssue(TypedDict):
    line: int
    offset: int
    reason: str
    action: IssueAction


class LedgerRepair(TypedDict):
    """What opening a damaged ledger repaired (docs/protocol.md)."""

    message: str
    keptEntries: int
    issues: list[RepairIssue]
    truncatedBytes: int
    abortedToolCalls: list[str]


class SessionLoadResult(SessionState):
    sessionId: str
    title: str | None
    leafId: str | None
    transcript: list[TranscriptItem]
    """The latest page of the current branch, oldest first."""
    cursor: str | None
    """Pass as `before` to agent/session/history for the page before; null: nothing older."""
    usage: UsageSnapshot
    repair: NotRequired[LedgerRepair]
    mcp: McpStatusParams
    pins: list[PinInfo]
    """The pins in force."""
    plan: list[PlanEntry]
    """The task's plan as the model last wrote it (empty: none)."""


class SessionHistoryParams(TypedDict):
    sessionId: str
    before: str
    limit: NotRequired[int]


class SessionHistoryResult(TypedDict):
    sessionId: str
    transcript: list[TranscriptItem]
    cursor: str | None


# --- turns -----------------------------------------------------------------------------------


class TurnParams(TypedDict):
    sessionId: str
    prompt: str | list[PromptBlock]
    workDoneToken: NotRequired[str | int]


class TurnError(TypedDict):
    code: str | None
    message: str


class TurnResult(TypedDict):
    turnId: str
    stopReason: TurnStopReason
    usage: UsageSnapshot
    error: NotRequired[TurnError]


class SessionParams(TypedDict):
    """The params of a request about one session and nothing else."""

    sessionId: str


InterruptParams: TypeAlias = SessionParams
UsageParams: TypeAlias = SessionParams


class EmptyResult(TypedDict):
    pass


InterruptResult: TypeAlias = EmptyResult


class ToolInputParams(TypedDict):
    """`agent/tool/input`: what the user typed into a running command (the editor's terminal
    of the session, with `tools.terminal.visible` on): `data` is written to the command's
    standard input as UTF-8; `end` closes that input after it (Ctrl-D); `interrupt` sends
    the command's processes SIGINT instead (Ctrl-C: the command stops, the turn goes on; `data`
    is then not written). Input for a call that is not running, or with the setting off, is
    ignored."""

    sessionId: str
    toolCallId: str
    data: str
    end: NotRequired[bool]
    interrupt: NotRequired[bool]


class UserIdleParams(TypedDict):
    """`agent/userIdle`: whether the user is away (the window lost focus); `cacheRetention:
    "auto"` then keeps the prompt cache for the long retention."""

    idle: bool


UserIdleResult: TypeAlias = EmptyResult


class CompactParams(TypedDict):
    sessionId: str
    instructions: NotRequired[str]


class CompactResult(TypedDict):
    outcome: Literal["compacted", "noop", "failed"]
    tokensBefore: int
    tokensAfter: int
    windowNumber: int
    error: NotRequired[str]


class RewindParams(TypedDict):
    sessionId: str
    entryId: str
    """A prompt: go to just before it (to ask again); any other entry: continue after it."""
    summarize: NotRequired[bool]
    """Leave the model a short summary of the branch left behind (one model call)."""
    restore: NotRequired[RestoreChoice]
    """What goes back: the conversation (default), the files the agent changed since, or both."""


class RewindResult(TypedDict):
    leafId: str | None
    prompt: NotRequired[list[PromptBlock]]
    """The prompt rewound from, to edit and send again (when the conversation went back)."""
    summary: NotRequired[str]
    files: list[RestoredFile]
    """The files put back."""
    problems: NotRequired[list[str]]
    """Files that could not be put back, and why."""


class RewindPreviewParams(TypedDict):
    sessionId: str
    entryId: str


class PlannedFile(TypedDict):
    path: str
    action: FileAction
    changedSince: bool
    """Edited after the agent's change too: restoring discards that."""


class NotRestorable(TypedDict):
    """What a restore cannot put back: commands run since, files they (or someone) changed."""

    commands: list[str]
    files: list[str]
    moreFiles: int


class RewindPreviewResult(TypedDict):
    """What a rewind to an entry would do, before the user confirms."""

    entryId: str
    prompt: NotRequired[list[PromptBlock]]
    """When the entry is a prompt: the prompt that would come back to the input box."""
    files: list[PlannedFile]
    """Files a restore would change."""
    notRestorable: NotRestorable


class RewindChangesParams(TypedDict):
    sessionId: str
    entryId: str


class FileThen(TypedDict):
    """A file the agent changed since an entry, as it was at that entry."""

    path: str
    existed: bool
    """False: it did not exist then (the agent made it since)."""
    text: NotRequired[str]
    """Its content then, when it existed and is text of at most 1 MiB."""
    omitted: NotRequired[str]
    """Why `text` is left out though the file existed: "binary" or "over 1 MiB"."""


class RewindChangesResult(TypedDict):
    """What the agent changed since an entry, to show as a diff against the files now: the
    files a restore would put back (`agent/rewind/preview`'s), each as it was then."""

    entryId: str
    files: list[FileThen]


# --- models, modes, mentions -----------------------------------------------------------------


class ModelPricing(TypedDict):
    """US dollars per million tokens."""

    input: float
    output: float
    cacheRead: float
    cacheWrite: float


class ModelChoice(ModelRef):
    """A model the picker offers (`agent/model/list`)."""

    vendor: str
    maxOutput: int
    pricing: ModelPricing
    images: bool
    thinking: bool
    """It takes a thinking level on the provider's API."""
    source: Literal["builtin", "user"]
    """`user`: from the user's models file."""
    current: bool


class ModelListParams(TypedDict):
    sessionId: NotRequired[str]
    workspaceUri: NotRequired[str]


class ModelListResult(TypedDict):
    provider: str
    current: str
    models: list[ModelChoice]


class ModelSetParams(TypedDict):
    sessionId: str
    model: str


class SwitchCost(TypedDict):
    """What a switch costs at the next request, at list prices."""

    tokens: int
    switchedCost: float
    stayedCost: float
    compacts: bool
    compactAt: int
    window: int
    warm: int
    """Tokens at the start of the context that the new model's cache still holds (a switch
    back within its cache lifetime): read, not written, at the next request."""


class ModelSetResult(TypedDict):
    model: ModelRef
    entryId: str | None
    """The ledger's modelChange entry (null: already that model)."""
    cost: SwitchCost
    note: str
    """The cost in words, for the transcript."""
    usage: UsageSnapshot


class ModeSetParams(TypedDict):
    sessionId: str
    mode: PermissionMode


ModeSetResult: TypeAlias = SessionState


class ThinkingSetParams(TypedDict):
    sessionId: str
    thinking: ThinkingLevel


class ThinkingSetResult(TypedDict):
    thinking: ThinkingLevel
    canThink: bool
    entryId: str | None
    """The ledger's modelChange entry that records it (null: already that level)."""
    cost: SwitchCost
    """As for a model switch, of the session's messages (the prefix Anthropic caches per
    thinking setting)."""
    note: str
    """The cost in words, for the transcript."""


class MentionCompleteParams(TypedDict):
    workspaceUri: str
    query: str
    limit: NotRequired[int]


class MentionItem(TypedDict):
    path: str
    """Workspace-relative; a folder ends with `/`."""
    kind: Literal["file", "directory"]


class MentionCompleteResult(TypedDict):
    items: list[MentionItem]


ProblemSeverity: TypeAlias = Literal["error", "warning"]


class Problem(TypedDict):
    """One of the editor's diagnostics (agent/problems.py)."""

    line: int
    """1-based."""
    severity: ProblemSeverity
    message: str
    source: NotRequired[str]
    """The language server that reports it (Pylance, eslint, ...)."""


class ProblemsParams(TypedDict):
    sessionId: str
    path: str
    """The file the agent wrote or edited, workspace-relative (as its tool call named it)."""
    problems: list[Problem]
    """What the editor reports for it now that it did not before the agent's change."""


class CommandListParams(TypedDict):
    workspaceUri: str


# Whose folder a prompt command comes from (agent/prompt_commands.py): the user's wins.
CommandOrigin: TypeAlias = Literal["user", "workspace"]


class PromptCommandItem(TypedDict):
    name: str
    """Typed as `/name` at the start of a prompt (agent/prompt_commands.py)."""
    description: str
    hint: str
    """What to type after the name ("" when the command takes no words)."""
    origin: CommandOrigin


class CommandListResult(TypedDict):
    commands: list[PromptCommandItem]


# --- MCP servers (docs/mcp.md) ---------------------------------------------------------------


McpServersParams: TypeAlias = SessionParams
McpAcceptToolsParams: TypeAlias = SessionParams


class McpAcceptToolsResult(TypedDict):
    accepted: bool
    deferred: bool
    tokens: int


class McpRestartParams(TypedDict):
    sessionId: str
    name: str


McpRestartResult: TypeAlias = EmptyResult

# --- pins ------------------------------------------------------------------------------------


PinsListParams: TypeAlias = SessionParams


class PinsResult(TypedDict):
    pins: list[PinInfo]
    """The pins in force, oldest first."""


class PinsAddParams(TypedDict):
    sessionId: str
    text: str
    """The rule or fact, at most 2,000 characters."""
    kind: NotRequired[PinKind]
    """Default `rule`."""


class PinsAddResult(PinsResult):
    pin: PinInfo
    """The new pin."""


class PinsRemoveParams(TypedDict):
    sessionId: str
    pinId: str
    """A pin's id, or a start of it that only one pin's id has."""


class PinsRemoveResult(PinsResult):
    pin: PinInfo
    """The pin removed."""


# --- notifications ---------------------------------------------------------------------------


class AgentUpdateParams(TypedDict):
    sessionId: str
    turnId: str
    seq: int
    update: SessionUpdate


class CompactionParams(TypedDict):
    sessionId: str
    compactionId: str
    status: CompactionStatus
    reason: CompactionReason
    tokensBefore: int
    tokensAfter: NotRequired[int]
    summary: NotRequired[str]
    firstKeptEntryId: NotRequired[str]
    error: NotRequired[str]


class OverflowParams(TypedDict):
    sessionId: str
    turnId: str
    kind: OverflowKind
    action: OverflowAction
    message: str


class ContextDecisionParams(TypedDict):
    """`agent/context`: the decision taken on the context before a model call, and why."""

    sessionId: str
    turnId: str | None
    action: ContextAction
    reason: DecisionReason | None
    tokens: int
    threshold: int
    window: int


# --- requests from the server ----------------------------------------------------------------


class PermissionOption(TypedDict):
    optionId: str
    name: str
    kind: PermissionOptionKind


class PermissionToolCall(TypedDict):
    toolCallId: str
    title: str
    toolKind: ToolKind
    rawInput: Any
    content: NotRequired[list[ToolCallContent]]
    """The file change a write or edit would make."""


class RequestPermissionParams(TypedDict):
    sessionId: str
    toolCall: PermissionToolCall
    options: list[PermissionOption]


class SelectedOption(TypedDict):
    selected: str
    message: NotRequired[str]
    """With a rejection: what the agent should do instead."""
    newText: NotRequired[str]
    """With an allowance of a file change: the file's content as the user revised it,
    written instead of the proposal."""


class RequestPermissionResult(TypedDict):
    outcome: SelectedOption | Literal["cancelled"]


# --- initialization and settings -------------------------------------------------------------


AgentSettings = NewType("AgentSettings", dict[str, Any])
"""The `agent` settings section (workspace/configuration or initializationOptions.settings):
its keys are described once, as the fields of agent_server/agent/settings.py (the README's
table, types.ts's `AgentSettings`)."""


class ClientCapabilities(TypedDict):
    requestPermission: bool


class AgentInitializationOptions(TypedDict):
    settings: AgentSettings
    clientCapabilities: ClientCapabilities


# --- errors ----------------------------------------------------------------------------------

# JSON-RPC's and LSP's codes the editor tells apart, then ours: a block outside JSON-RPC's
# reserved -32768..-32000 (where LSP has -32002 and -32001) and LSP's -32899..-32800.
ERROR_CODES: dict[str, int] = {
    "InvalidParams": -32602,
    "RequestCancelled": -32800,
    "UnknownSession": -33001,
    "SessionBusy": -33002,
    "UnknownWorkspace": -33003,
    "UnknownEntry": -33004,
    "SessionLocked": -33005,
    "SessionDamaged": -33006,
    "ConfigurationError": -33010,
}

# --- the methods -----------------------------------------------------------------------------


Sender: TypeAlias = Literal["client", "server"]


@dataclass(frozen=True, slots=True)
class Method:
    """One method: who sends it, its params and its result (None: a notification)."""

    name: str
    sender: Sender
    params: Any
    result: Any
    summary: str

    @property
    def notification(self) -> bool:
        return self.result is None


METHODS: list[Method] = []


def _method(name: str, sender: Sender, params: Any, result: Any, summary: str) -> Method:
    method = Method(name, sender, params, result, summary)
    METHODS.append(method)
    return method


SESSION_NEW = _method(
    "agent/session/new", "client", SessionNewParams, SessionNewResult,
    "a new session in a workspace folder",
)
SESSION_LIST = _method(
    "agent/session/list", "client", SessionListParams, SessionListResult,
    "the folder's sessions, newest first",
)
SESSION_LOAD = _method(
    "agent/session/load", "client", SessionLoadParams, SessionLoadResult,
    "open a session: its latest transcript page and state",
)
SESSION_FORK = _method(
    "agent/session/fork", "client", SessionForkParams, SessionLoadResult,
    "a new session going on from this one: opened, as session/load answers",
)
SESSION_RENAME = _method(
    "agent/session/rename", "client", SessionRenameParams, SessionRenameResult,
    "give a session a title (the session list shows it)",
)
SESSION_DELETE = _method(
    "agent/session/delete", "client", SessionDeleteParams, EmptyResult,
    "remove a session for good (closed first if it is open, its turn ended)",
)
SESSION_HISTORY = _method(
    "agent/session/history", "client", SessionHistoryParams, SessionHistoryResult,
    "the transcript page before a cursor",
)
TURN = _method(
    "agent/turn", "client", TurnParams, TurnResult,
    "run a prompt; answered when the turn ends",
)
INTERRUPT = _method(
    "agent/interrupt", "client", InterruptParams, InterruptResult, "end the running turn",
)
TOOL_INPUT = _method(
    "agent/tool/input", "client", ToolInputParams, None,
    "keys typed into a running command: to its standard input (`tools.terminal.visible`)",
)
COMPACT = _method(
    "agent/compact", "client", CompactParams, CompactResult, "compact now; answered when done",
)
REWIND = _method(
    "agent/rewind", "client", RewindParams, RewindResult,
    "continue from an earlier entry, and/or put the files back",
)
REWIND_PREVIEW = _method(
    "agent/rewind/preview", "client", RewindPreviewParams, RewindPreviewResult,
    "what a rewind would change",
)
REWIND_CHANGES = _method(
    "agent/rewind/changes", "client", RewindChangesParams, RewindChangesResult,
    "the files the agent changed since an entry, as they were then",
)
USAGE = _method(
    "agent/usage", "client", UsageParams, UsageSnapshot, "the usage snapshot",
)
USER_IDLE = _method(
    "agent/userIdle", "client", UserIdleParams, UserIdleResult,
    "whether the user is away (for `cacheRetention: auto`)",
)
MODEL_LIST = _method(
    "agent/model/list", "client", ModelListParams, ModelListResult,
    "the models the session's provider serves",
)
MODEL_SET = _method(
    "agent/model/set", "client", ModelSetParams, ModelSetResult,
    "go on with another model, and what that costs",
)
MODE_SET = _method(
    "agent/mode/set", "client", ModeSetParams, ModeSetResult, "the permission mode",
)
THINKING_SET = _method(
    "agent/thinking/set", "client", ThinkingSetParams, ThinkingSetResult,
    "how hard the model thinks, and what the change costs",
)
MENTION_COMPLETE = _method(
    "agent/mention/complete", "client", MentionCompleteParams, MentionCompleteResult,
    "workspace paths for an `@` being typed",
)
PROBLEMS = _method(
    "agent/problems", "client", ProblemsParams, EmptyResult,
    "what an agent's change broke, as the editor sees it: a note for its next request",
)
COMMAND_LIST = _method(
    "agent/command/list", "client", CommandListParams, CommandListResult,
    "the user's and the workspace's prompt commands, for a `/` menu",
)
MCP_SERVERS = _method(
    "agent/mcp/servers", "client", McpServersParams, McpStatusParams,
    "the session's MCP servers",
)
MCP_ACCEPT_TOOLS = _method(
    "agent/mcp/acceptTools", "client", McpAcceptToolsParams, McpAcceptToolsResult,
    "take a waiting tool-list change in",
)
MCP_RESTART = _method(
    "agent/mcp/restart", "client", McpRestartParams, McpRestartResult,
    "restart one MCP server",
)
PINS_LIST = _method(
    "agent/pins/list", "client", PinsListParams, PinsResult, "the pins in force",
)
PINS_ADD = _method(
    "agent/pins/add", "client", PinsAddParams, PinsAddResult,
    "pin a rule or a fact for the session",
)
PINS_REMOVE = _method(
    "agent/pins/remove", "client", PinsRemoveParams, PinsRemoveResult, "remove a pin",
)
UPDATE = _method(
    "agent/update", "server", AgentUpdateParams, None,
    "what a turn streams: prompts, text, thoughts, tool calls, notices, plan, pins",
)
USAGE_CHANGED = _method(
    "agent/usage", "server", UsageNotificationParams, None,
    "the usage snapshot, after every call and change (not again when unchanged: a turn's "
    "end after its last call sends none)",
)
COMPACTION = _method(
    "agent/compaction", "server", CompactionParams, None,
    "a compaction started, and how it ended",
)
OVERFLOW = _method(
    "agent/overflow", "server", OverflowParams, None,
    "a context overflow and what is done about it",
)
CONTEXT = _method(
    "agent/context", "server", ContextDecisionParams, None,
    "each decision on the context before a call",
)
MCP_STATUS = _method(
    "agent/mcp/status", "server", McpStatusParams, None,
    "MCP server states and a waiting tool-list change",
)
REQUEST_PERMISSION = _method(
    "agent/requestPermission", "server", RequestPermissionParams, RequestPermissionResult,
    "ask the user before a tool call runs",
)

CLIENT_REQUESTS: tuple[Method, ...] = tuple(
    m for m in METHODS if m.sender == "client" and not m.notification
)
CLIENT_NOTIFICATIONS: tuple[Method, ...] = tuple(
    m for m in METHODS if m.sender == "client" and m.notification
)
NOTIFICATIONS: tuple[Method, ...] = tuple(m for m in METHODS if m.notification)
