"""What an agent session tells the outside world while it works, and what it told.

A UI (the LSP layer, ACP, the terminal) subscribes with a callback and renders these; none of
them is needed to run the agent. They are plain frozen data, in the order they happen. A
stored session's history is the same events (agent/transcript.py makes them from the ledger),
plus the markers the live stream says by other means (`BranchTaken`, `FilesRestored`,
`ModelRecorded`): each front end has one translator, for live updates and replay alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from agent_server.llm.messages import Attachment, ImageContent, ToolCall, Usage, UserContent
from agent_server.protocol import (
    CompactionEnd,
    NoticeLevel,
    OverflowAction,
    OverflowKind,
    ToolProgress,
)
from agent_server.protocol import TurnStopReason as TurnStopReason

if TYPE_CHECKING:  # annotations only: the server imports this module before it answers
    from agent_server.agent.mcp.session_tools import McpStatus
    from agent_server.context.decision import ContextDecision
    from agent_server.llm.models import ModelInfo
    from agent_server.llm.stream import ThinkingLevel
    from agent_server.session.entries import CompactionReason, FileVersion, Pin, PlanItem

CompactionStatus: TypeAlias = CompactionEnd
ToolStatus: TypeAlias = ToolProgress


@dataclass(frozen=True, slots=True)
class UsageSnapshot:
    """The context meter: how full the window is, and what the turn and the session cost.

    `turn` sums the calls of the running turn, or of the last one between turns (its answers
    and the summaries of compactions it ran); `session` sums every call of the session.
    """

    used: int  # estimated tokens of the context the next call would send
    size: int  # the model's context window
    compact_at: int  # above it the next call compacts first (the threshold; the window when
    # automatic compaction is off)
    window_number: int  # the cache cycle: compactions on the branch + 1
    last_call: Usage | None
    cache_hit_rate: float  # session cache-read share of prompt tokens, 0..1
    cost: float  # session cost, USD
    calls: int  # session calls
    turn: Usage = field(default_factory=Usage)
    turn_calls: int = 0
    session: Usage = field(default_factory=Usage)


@dataclass(frozen=True, slots=True)
class TurnStarted:
    turn_id: str
    entry_id: str
    content: tuple[UserContent, ...]  # what the user typed or pasted
    parent_id: str | None = None  # the entry the prompt follows (a rewind there retries it)
    attachments: tuple[Attachment, ...] = ()  # what its @-mentions attached


@dataclass(frozen=True, slots=True)
class TextChunk:
    turn_id: str
    message_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingChunk:
    turn_id: str
    message_id: str
    text: str


@dataclass(frozen=True, slots=True)
class AnswerDiscarded:
    """A model call failed after part of its answer (text, thinking) had streamed under
    `message_id`, and is retried: that partial answer is abandoned (never recorded in the
    ledger), and the retried answer streams from its start under another id."""

    turn_id: str
    message_id: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    turn_id: str
    tool_call: ToolCall
    title: str
    kind: str  # read, edit, search, execute, other
    locations: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ToolCallUpdated:
    turn_id: str
    tool_call_id: str
    status: ToolStatus
    output: str | None = None  # the text the model gets back (or a streamed fragment)
    details: Mapping[str, Any] | None = None  # e.g. {"diff": ..., "path": ...}
    images: tuple[ImageContent, ...] = ()  # images the tool returned (an MCP screenshot)


@dataclass(frozen=True, slots=True)
class UsageUpdated:
    snapshot: UsageSnapshot


@dataclass(frozen=True, slots=True)
class CompactionStarted:
    compaction_id: str
    reason: CompactionReason
    tokens_before: int


@dataclass(frozen=True, slots=True)
class CompactionFinished:
    compaction_id: str
    reason: CompactionReason
    status: CompactionStatus
    tokens_before: int
    tokens_after: int | None = None
    summary: str | None = None
    first_kept_entry_id: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ContextDecided:
    """The decision taken on the context before a model call (or a manual compaction), with
    the estimate and the threshold it was taken on: where context management says what it
    does and why."""

    turn_id: str | None
    decision: ContextDecision


@dataclass(frozen=True, slots=True)
class OverflowHappened:
    """`kind` "truncated": the last answer was cut off by the window; "rejected": the provider
    refused the request as too long; "estimated": the request was not sent, its estimate being
    over the window or at least the size of one already rejected."""

    turn_id: str
    kind: OverflowKind
    action: OverflowAction
    message: str


@dataclass(frozen=True, slots=True)
class Retry:
    """A failed model call about to be tried again: attempt `attempt` of `attempts`, after
    `wait` seconds. A notice that carries it is over once the call goes through."""

    attempt: int
    attempts: int
    wait: float


@dataclass(frozen=True, slots=True)
class Notice:
    turn_id: str | None
    level: NoticeLevel
    message: str
    retry: Retry | None = None
    # What it is about, for a front end that words it its own way: "toolsChanged" (the
    # MCP tools changed; McpStatusChanged, sent just before, has the change).
    topic: str | None = None
    # In a stored session's history, an editor note the model was given (an external edit, a
    # branch summary): its entry and kind.
    entry_id: str | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class McpStatusChanged:
    """The session's MCP servers (state, tools, stderr tail of a failed one) and a waiting
    change of the tool list, whenever any of it changes."""

    status: McpStatus


@dataclass(frozen=True, slots=True)
class ModelChanged:
    """The session goes on with another model, or thinks at another level, from the next
    request: the ledger's model change entry (`entry_id`), and what the change costs in
    words (`note`), whoever made it (the user's switch, or a changed setting)."""

    turn_id: str | None
    entry_id: str
    provider: str  # the API, as the ledger records it
    model: ModelInfo
    thinking: ThinkingLevel
    note: str


@dataclass(frozen=True, slots=True)
class PinsChanged:
    """The pins in force after one was added or removed (by the user or the model)."""

    turn_id: str | None
    pins: tuple[Pin, ...]


@dataclass(frozen=True, slots=True)
class PlanUpdated:
    """The model wrote the task's plan (the whole list)."""

    turn_id: str | None
    items: tuple[PlanItem, ...]


@dataclass(frozen=True, slots=True)
class TurnEnded:
    turn_id: str
    stop_reason: TurnStopReason
    usage: Usage  # summed over the turn's model calls
    error: str | None = None
    error_code: str | None = None


@dataclass(frozen=True, slots=True)
class BranchTaken:
    """History: the conversation went on from an earlier entry (a rewind; live, the rewind's
    own answer says it), with what was left behind when it was summarised."""

    entry_id: str
    target_id: str | None  # None: back to the very start
    summary: str | None


@dataclass(frozen=True, slots=True)
class FilesRestored:
    """History: the files a rewind put back (restored, or deleted: absent then)."""

    entry_id: str
    target_id: str
    files: tuple[FileVersion, ...]


@dataclass(frozen=True, slots=True)
class ModelRecorded:
    """History: the session went on with this model and thinking level from here (live, the
    switch's answer or `ModelChanged` says it, with the model's description and cost)."""

    entry_id: str
    provider: str
    model_id: str
    thinking: str | None


AgentEvent: TypeAlias = (
    TurnStarted
    | TextChunk
    | ThinkingChunk
    | AnswerDiscarded
    | ToolCallStarted
    | ToolCallUpdated
    | UsageUpdated
    | CompactionStarted
    | CompactionFinished
    | ContextDecided
    | OverflowHappened
    | Notice
    | McpStatusChanged
    | ModelChanged
    | PinsChanged
    | PlanUpdated
    | TurnEnded
    | BranchTaken
    | FilesRestored
    | ModelRecorded
)
EventSink: TypeAlias = Callable[[AgentEvent], None]


def ignore_events(_event: AgentEvent) -> None:
    """An EventSink for headless runs that render nothing."""
