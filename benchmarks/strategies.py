"""The context strategies the cost benchmark compares, each plugged into the same turn loop.

Three are settings of the product's own harness:

- `default`: append-only history, cache breakpoints, one compaction near the window whose
  summary request shares the cached prefix;
- `fresh-summary`: the same, with the summary asked for in a fresh prompt (the seed's way);
- `no-cache`: the same history with no cache breakpoints (`cache_retention="none"`).

Three are the strategies agents used before prompt caching, as `ContextPolicy`s (the seam of
agent_server/agent/context_manager.py, where the product's own strategy is the default
policy), with the product's compaction turned off so that each is measured on its own terms.
They follow the seed chapter's descriptions:

- `SweAgentPolicy` (SWE-agent, 2024): at every step, tool outputs older than the last 5 are
  replaced in place by a one-line stub, "Old output omitted (N lines)."; breakpoints on;
- `AutoGptPolicy` (AutoGPT 0.4, 2023): a FIFO of the last 9 messages, and a rolling summary at
  the head that a model call updates each time a batch of 5 more messages has fallen out of
  that window (until then they are in neither);
- `MemGptPolicy` (MemGPT, 2023): a memory-pressure warning appended once the context passes
  70% of the window; when it would no longer leave room for an answer (the same threshold at
  which the product compacts), the oldest half of the message queue is evicted into a
  recursive summary (the previous summary plus the evicted messages).

The policies count tokens with the simulated model's own tokenizer, as AutoGPT and MemGPT
counted with tiktoken, so they never send a request they know to be too long. None of them
ever sends a tool result whose call is not in the message before it: window and eviction
boundaries move back to the assistant message that made the calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from agent_server.agent.context_manager import ContextManager, ContextPolicy, ContextView
from agent_server.agent.settings import CacheRetentionName
from agent_server.context.trigger import CompactionSettings, compaction_threshold
from agent_server.llm.messages import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from agent_server.llm.models import ModelInfo
from agent_server.sim.tokenizer import count_tokens


@dataclass(frozen=True, slots=True)
class Strategy:
    name: str
    label: str
    cache_retention: CacheRetentionName = "short"
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    policy: Callable[[], ContextPolicy] | None = None  # a fresh policy per run


OFF = CompactionSettings(enabled=False)


def strategies() -> list[Strategy]:
    return [
        Strategy("default", "default (append-only, compaction, cached summary)"),
        Strategy(
            "fresh-summary",
            "default with a fresh summary prompt",
            compaction=CompactionSettings(summary="fresh"),
        ),
        Strategy("no-cache", "no caching (same history, no breakpoints)", cache_retention="none"),
        Strategy(
            "swe-agent", "observation collapsing (SWE-agent)", compaction=OFF, policy=SweAgentPolicy
        ),
        Strategy(
            "autogpt", "FIFO + rolling summary (AutoGPT)", compaction=OFF, policy=AutoGptPolicy
        ),
        Strategy(
            "memgpt", "memory pressure + eviction (MemGPT)", compaction=OFF, policy=MemGptPolicy
        ),
    ]


# --- shared pieces --------------------------------------------------------------------------


def message_tokens(message: Message) -> int:
    """What `message` costs in the simulated model's tokenizer (Anthropic rendering)."""
    total = 3
    if isinstance(message, ToolResultMessage):
        total += 5
        blocks: Sequence[object] = message.content
    else:
        blocks = message.content
    for block in blocks:
        if isinstance(block, TextContent):
            total += 1 + count_tokens(block.text)
        elif isinstance(block, ThinkingContent):
            total += 2 + count_tokens(block.thinking)
        elif isinstance(block, ToolCall):
            total += 6 + count_tokens(block.name)
            total += count_tokens(json.dumps(block.arguments, separators=(",", ":")))
        elif isinstance(block, ImageContent):
            total += 1600
    return total


def prefix_tokens(system_prompt: str, tools: Sequence[ToolSpec]) -> int:
    total = 5 + count_tokens(system_prompt)
    for tool in tools:
        schema = json.dumps(tool.parameters, sort_keys=True, separators=(",", ":"))
        total += 12 + count_tokens(tool.name) + count_tokens(tool.description)
        total += count_tokens(schema)
    return total


def request_tokens(view: ContextView, messages: Sequence[Message]) -> int:
    return prefix_tokens(view.system_prompt, view.tools) + sum(map(message_tokens, messages))


def safe_start(messages: Sequence[Message], start: int) -> int:
    """`start`, moved back to the assistant message whose calls the results at `start`
    answer, so that a history beginning there has no orphaned tool result."""
    while 0 < start < len(messages) and isinstance(messages[start], ToolResultMessage):
        start -= 1
    return start


def with_head(text: str, messages: Sequence[Message]) -> tuple[Message, ...]:
    """`text` at the head of `messages`: the first text of a leading user message (so that
    two user messages never sit in a row and a prompt stays its message's last text), or a
    user message of its own."""
    if messages and isinstance(messages[0], UserMessage):
        first = messages[0]
        return (UserMessage((TextContent(text), *first.content)), *messages[1:])
    return (UserMessage.of_text(text), *messages)


def usable_window(model: ModelInfo) -> int:
    """The product's compaction threshold: the window less room for an answer."""
    return compaction_threshold(model, CompactionSettings())


# --- SWE-agent ------------------------------------------------------------------------------

SWE_KEEP_OBSERVATIONS = 5


class SweAgentPolicy:
    """Tool outputs older than the last 5 collapse in place to one line, at every step."""

    name = "swe-agent"

    async def prepare(self, view: ContextView, manager: ContextManager) -> ContextView:
        results = [i for i, m in enumerate(view.messages) if isinstance(m, ToolResultMessage)]
        old = set(results[:-SWE_KEEP_OBSERVATIONS])
        out: list[Message] = []
        for index, message in enumerate(view.messages):
            if index in old and isinstance(message, ToolResultMessage):
                lines = message.text.count("\n") + 1
                stub = TextContent(f"Old output omitted ({lines} lines).")
                out.append(replace(message, content=(stub,)))
            else:
                out.append(message)
        return manager.view_of(out)


# --- AutoGPT --------------------------------------------------------------------------------

AUTOGPT_WINDOW = 9
AUTOGPT_BATCH = 5
AUTOGPT_HEAD = "This reminds you of these events from your past:\n{summary}"


@dataclass
class AutoGptPolicy:
    """The last 9 messages (a FIFO), and a rolling summary of what fell out at the head."""

    name: str = "autogpt"
    summary: str | None = None
    summarised_upto: int = 0  # view.messages[:summarised_upto] are in the summary

    async def prepare(self, view: ContextView, manager: ContextManager) -> ContextView:
        messages = view.messages
        window = safe_start(messages, max(0, len(messages) - AUTOGPT_WINDOW))
        # Messages that left the window wait, unseen, until a batch of them is folded in.
        if window - self.summarised_upto >= AUTOGPT_BATCH:
            fallen = messages[self.summarised_upto : window]
            self.summary = await manager.summarise(fallen, self.summary)
            self.summarised_upto = window
        # Before the first summary there is no head to open the request with: nothing is
        # hidden yet.
        kept = messages[window:] if self.summary is not None else messages
        sent = self._render(kept)
        # AutoGPT trimmed its history to the token budget too; this seldom binds.
        budget = usable_window(view.model)
        start = 0
        while request_tokens(view, sent) > budget and start + 1 < len(kept):
            start = _next_start(kept, start + 1)
            sent = self._render(kept[start:])
        return manager.view_of(sent)

    def _render(self, kept: Sequence[Message]) -> tuple[Message, ...]:
        if self.summary is None:
            return tuple(kept)
        return with_head(AUTOGPT_HEAD.format(summary=self.summary), kept)


def _next_start(messages: Sequence[Message], start: int) -> int:
    """The first index at or after `start` that is not a tool result (or the last message)."""
    while start < len(messages) - 1 and isinstance(messages[start], ToolResultMessage):
        start += 1
    return start


# --- MemGPT ---------------------------------------------------------------------------------

MEMGPT_WARNING_FRACTION = 0.7
MEMGPT_WARNING = (
    "[System] Memory pressure warning: the conversation history will soon reach its maximum "
    "length and be trimmed. Make sure to save any important information from the "
    "conversation to your memory before it is removed."
)
MEMGPT_HEAD = (
    "Note: prior messages ({hidden} of {total} total messages) have been hidden from view due "
    "to conversation memory constraints.\nThe following is a summary of the previous "
    "messages:\n{summary}"
)


@dataclass
class MemGptPolicy:
    """A warning at 70% of the window; the oldest half evicted into a summary when full."""

    name: str = "memgpt"
    summary: str | None = None
    kept_from: int = 0  # view.messages[kept_from:] is the message queue
    total_at_eviction: int = 0  # the head note's "N of M total messages", fixed when written
    warning_at: int | None = None  # the warning sits before view.messages[warning_at]

    async def prepare(self, view: ContextView, manager: ContextManager) -> ContextView:
        messages = view.messages
        full = usable_window(view.model)
        sent = self._render(messages)
        for _ in range(8):
            if request_tokens(view, sent) <= full:
                break
            if not await self._evict_half(view, manager):
                break
            sent = self._render(messages)
        if (
            self.warning_at is None
            and request_tokens(view, sent) > MEMGPT_WARNING_FRACTION * view.model.context_window
        ):
            # Appended as the newest message; a pending prompt stays the last text sent.
            last = len(messages) - 1
            self.warning_at = last if isinstance(messages[last], UserMessage) else len(messages)
            sent = self._render(messages)
        return manager.view_of(sent)

    async def _evict_half(self, view: ContextView, manager: ContextManager) -> bool:
        messages = view.messages
        queue = len(messages) - self.kept_from
        cut = safe_start(messages, self.kept_from + queue // 2)
        if cut <= self.kept_from:
            cut = _next_start(messages, self.kept_from + 1)
            if cut >= len(messages) - 1:
                return False
        evicted = messages[self.kept_from : cut]
        self.summary = await manager.summarise(evicted, self.summary)
        self.kept_from = cut
        self.total_at_eviction = len(messages)
        self.warning_at = None  # the pressure is relieved; warn again when it returns
        return True

    def _render(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        queue: list[Message] = list(messages[self.kept_from :])
        if self.warning_at is not None and self.warning_at >= self.kept_from:
            position = self.warning_at - self.kept_from
            warning = UserMessage.of_text(MEMGPT_WARNING)
            if position < len(queue) and isinstance(queue[position], UserMessage):
                target = queue[position]
                assert isinstance(target, UserMessage)
                queue[position] = UserMessage((*warning.content, *target.content))
            else:
                queue.insert(position, warning)
        if self.summary is None:
            return tuple(queue)
        head = MEMGPT_HEAD.format(
            hidden=self.kept_from, total=self.total_at_eviction, summary=self.summary
        )
        return with_head(head, queue)


def is_orphan_free(messages: Sequence[Message]) -> bool:
    """Every tool result answers a call of the assistant message before its run of results."""
    calls: set[str] = set()
    for message in messages:
        if isinstance(message, AssistantMessage):
            calls = {call.id for call in message.tool_calls}
        elif isinstance(message, ToolResultMessage):
            if message.tool_call_id not in calls:
                return False
        else:
            calls = set()
    return True
