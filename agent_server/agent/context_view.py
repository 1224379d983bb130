"""A context the next model call could send, what a compaction of it did, and the tool list
its prefix starts with: what the context manager (agent/context_manager.py) and its parts
(agent/compactor.py, agent/overflow_recovery.py, agent/prefix_cache.py) share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from agent_server.context.estimate import ContextEstimate
from agent_server.context.projection import Projection
from agent_server.llm.messages import AssistantMessage, Context, Message, ToolSpec
from agent_server.llm.models import ModelInfo
from agent_server.session.entries import CompactionEntry, CompactionReason, Entry

Outcome = Literal["compacted", "noop", "failed", "cancelled"]


@dataclass(frozen=True, slots=True)
class ContextView:
    """A context the next call could send, projected once and estimated once.

    `entries` and `projection` are where it came from (Ledger.projection_entries and its
    projection); a policy's own context has neither.
    """

    context: Context
    estimate: ContextEstimate
    model: ModelInfo
    entries: tuple[Entry, ...] = ()
    projection: Projection | None = None

    @property
    def tokens(self) -> int:
        return self.estimate.tokens

    @property
    def messages(self) -> tuple[Message, ...]:
        return self.context.messages

    @property
    def system_prompt(self) -> str:
        return self.context.system_prompt

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        return self.context.tools

    @property
    def compaction(self) -> CompactionEntry | None:
        """The latest compaction the view starts from, if any."""
        return self.projection.compaction if self.projection is not None else None

    @property
    def answer_tokens(self) -> int:
        """The output of the answer whose usage the estimate starts from: with the messages
        after it, what the last step added."""
        index = self.estimate.last_usage_index
        message = self.messages[index] if index is not None else None
        if isinstance(message, AssistantMessage) and message.usage is not None:
            return message.usage.output
        return 0


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What a compaction did. `view` is the context after it (the one before when nothing
    was compacted)."""

    outcome: Outcome
    reason: CompactionReason
    tokens_before: int
    tokens_after: int
    view: ContextView
    entry: CompactionEntry | None = None
    error: str | None = None


class ToolListSource(Protocol):
    """The session's tool list: the first part of every request's prefix (invariant 1). It
    changes only between calls (the user accepted a change: agent/mcp/session_tools.py) or in
    a compaction, which rebuilds the prefix anyway and so takes a waiting change in."""

    def specs(self) -> tuple[ToolSpec, ...]:
        """The list the next request sends."""
        ...

    def after_compaction(self) -> None:
        """A compaction was just recorded: take a waiting change of the list in, if any."""
        ...


@dataclass(frozen=True, slots=True)
class FixedTools:
    """A tool list that never changes (the built-in tools alone, the benchmarks)."""

    tools: tuple[ToolSpec, ...]

    def specs(self) -> tuple[ToolSpec, ...]:
        return self.tools

    def after_compaction(self) -> None:
        return None
