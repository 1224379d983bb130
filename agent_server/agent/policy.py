"""Context policies: what each model call sends, given the session's history.

The product has one policy, built into the harness: append only, compact once near the window
(agent/compaction.py). Other policies exist to be measured against it (benchmarks/): they plug
into the same turn loop through `ContextPolicy`, see the history the harness would send, may
ask for summaries (billed like any call), and return the messages to send instead. They keep
their own state; the ledger stays the full, append-only record either way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from agent_server.llm.messages import Message, ToolSpec
from agent_server.llm.models import ModelInfo

# Summarise `messages` (folding in `previous`, if any) with a fresh summary prompt.
Summarise = Callable[[Sequence[Message], str | None], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class PolicyView:
    """What a policy sees before a call."""

    messages: tuple[Message, ...]  # the whole history, as the default projection gives it
    system_prompt: str
    tools: tuple[ToolSpec, ...]
    model: ModelInfo
    summarise: Summarise


class ContextPolicy(Protocol):
    name: str

    async def prepare(self, view: PolicyView) -> tuple[Message, ...]:
        """The messages the next call sends."""
        ...
