"""The context strategies the cost benchmark compares, each plugged into the same turn loop.

Three are settings of the product's own harness:

- `default`: append-only history, cache breakpoints, one compaction near the window whose
  summary request shares the cached prefix;
- `fresh-summary`: the same, with the summary asked for in a fresh prompt (the seed's way);
- `no-cache`: the same history with no cache breakpoints (`cache_retention="none"`);
- `auto-retention`: the default with `cacheRetention: "auto"` (no editor here to say the user
  is away: the long retention for each turn that follows a pause past the short lifetime).

Three are the strategies agents used before prompt caching, as `ContextPolicy`s (the seam of
agent_server/agent/context_manager.py, where the product's own strategy is the default
policy), with the product's compaction turned off so that each is measured on its own terms.
Each follows its source:

- `SweAgentPolicy` (SWE-agent, `sweagent/agent/history_processors.py`, `LastNObservations`):
  all but the last 5 observations (tool outputs) are replaced in place by "Old environment
  output: (N lines omitted)", except the first observation, which it never removes (in
  SWE-agent that is the instance template). Its `polling` setting moves the cut only every
  `polling` observations (`last_removed_idx = (len(observations) // polling) * polling - n`):
  "useful for caching ... we will now keep between n and n+polling observations". Measured at
  polling 1 (the default), 5 and 10;
- `AutoGptPolicy` (AutoGPT 0.4, `autogpt/llm/chat.py` `chat_with_ai` and
  `autogpt/memory/message_history.py`): the newest messages, as many as fit the send budget
  (the model's token limit less 1,000 tokens reserved for the answer), and a running summary,
  "This reminds you of these events from your past:", into which a model call folds the
  messages that fell out of the budget since the last update;
- `MemGptPolicy` (MemGPT, arXiv:2310.08560, section 2.2, the queue manager): a memory-pressure
  warning once the prompt passes the warning token count (70% of the window); at the flush
  token count (100% of the window, counting the room the request asks for its answer) the
  oldest messages, about half of the window's tokens, are evicted into a recursive summary
  (the previous summary plus the evicted messages), under MemGPT's "prior messages (N of M
  total messages) have been hidden" note.

The policies count tokens with the simulated model's own tokenizer, as AutoGPT and MemGPT
counted with tiktoken, so they never send a request they know to be too long. None of them
ever sends a tool result whose call is not in the message before it: window and eviction
boundaries move back to the assistant message that made the calls.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agent_server.agent.context_manager import ContextManager, ContextPolicy, ContextView
from agent_server.agent.settings import CacheRetentionName
from agent_server.context.cut_point import CutPoint
from agent_server.context.estimate import estimate_text_tokens
from agent_server.context.trigger import CompactionSettings
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
        Strategy("auto-retention", "default with cacheRetention auto", cache_retention="auto"),
        *(
            Strategy(
                name, f"observation collapsing (SWE-agent, polling {polling})", compaction=OFF,
                policy=functools.partial(SweAgentPolicy, polling=polling),
            )
            for name, polling in SWE_AGENT_POLLING
        ),
        Strategy(
            "autogpt", "what fits the budget + running summary (AutoGPT)", compaction=OFF,
            policy=AutoGptPolicy,
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


# --- SWE-agent ------------------------------------------------------------------------------

SWE_KEEP_OBSERVATIONS = 5  # LastNObservations(n=5) in SWE-agent's configs
SWE_AGENT_POLLING = (("swe-agent", 1), ("swe-agent-p5", 5), ("swe-agent-p10", 10))
SWE_AGENT_STUB = "Old environment output: ({lines} lines omitted)"


@dataclass
class SweAgentPolicy:
    """SWE-agent's LastNObservations: older tool outputs collapse in place to a one-line stub,
    the first one never; the cut moves every `polling` observations."""

    polling: int = 1
    n: int = SWE_KEEP_OBSERVATIONS
    name: str = "swe-agent"

    async def prepare(self, view: ContextView, manager: ContextManager) -> ContextView:
        results = [i for i, m in enumerate(view.messages) if isinstance(m, ToolResultMessage)]
        last_removed = max(0, (len(results) // self.polling) * self.polling - self.n)
        old = set(results[1:last_removed])
        out: list[Message] = []
        for index, message in enumerate(view.messages):
            if index in old and isinstance(message, ToolResultMessage):
                lines = message.text.count("\n") + 1
                stub = TextContent(SWE_AGENT_STUB.format(lines=lines))
                out.append(replace(message, content=(stub,)))
            else:
                out.append(message)
        return manager.view_of(out)


# --- AutoGPT --------------------------------------------------------------------------------

AUTOGPT_ANSWER_RESERVE = 1000  # chat_with_ai: "Reserve 1000 tokens for the response"
AUTOGPT_HEAD = "This reminds you of these events from your past:\n{summary}"


@dataclass
class AutoGptPolicy:
    """The newest messages that fit the send budget, and a running summary of the rest."""

    name: str = "autogpt"
    summary: str | None = None
    summarised_upto: int = 0  # view.messages[:summarised_upto] are in the summary

    async def prepare(self, view: ContextView, manager: ContextManager) -> ContextView:
        messages = view.messages
        budget = view.model.context_window - AUTOGPT_ANSWER_RESERVE
        start = self._fitting_start(view, messages, budget, self.summary)
        if start > self.summarised_upto:
            # What fell out of the budget since the last update is folded in (one call).
            self.summary = await manager.summarise(messages[self.summarised_upto : start],
                                                self.summary)
            self.summarised_upto = start
            start = max(start, self._fitting_start(view, messages, budget, self.summary))
        return manager.view_of(self._render(messages[max(start, self.summarised_upto) :]))

    def _fitting_start(self, view: ContextView, messages: Sequence[Message], budget: int,
                       summary: str | None) -> int:
        """The oldest start from which the newest messages (and the head) fit `budget`."""
        start = self.summarised_upto
        rendered = self._render(messages[start:], summary)
        while request_tokens(view, rendered) > budget and start + 1 < len(messages):
            start = _next_start(messages, start + 1)
            rendered = self._render(messages[start:], summary)
        return start

    def _render(self, kept: Sequence[Message], summary: str | None = None
                ) -> tuple[Message, ...]:
        summary = self.summary if summary is None else summary
        if summary is None:
            return tuple(kept)
        return with_head(AUTOGPT_HEAD.format(summary=summary), kept)


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


MEMGPT_EVICT_FRACTION = 0.5  # "evicts messages (e.g., 50% of the context window)"


@dataclass
class MemGptPolicy:
    """A warning at 70% of the window; at 100% the oldest messages, about half the window's
    tokens, evicted into a recursive summary."""

    name: str = "memgpt"
    summary: str | None = None
    kept_from: int = 0  # view.messages[kept_from:] is the message queue
    total_at_eviction: int = 0  # the head note's "N of M total messages", fixed when written
    warning_at: int | None = None  # the warning sits before view.messages[warning_at]

    async def prepare(self, view: ContextView, manager: ContextManager) -> ContextView:
        messages = view.messages
        full = memgpt_flush_tokens(view.model)
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
        """Evict the oldest messages until about half the window's tokens have gone."""
        messages = view.messages
        target = MEMGPT_EVICT_FRACTION * view.model.context_window
        cut, evicted_tokens = self.kept_from, 0
        while cut < len(messages) - 1 and evicted_tokens < target:
            evicted_tokens += message_tokens(messages[cut])
            cut += 1
        cut = safe_start(messages, cut)
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


def memgpt_flush_tokens(model: ModelInfo) -> int:
    """MemGPT's flush token count, 100% of the window: a prompt above the window less the
    answer the request asks room for (the model's output limit) no longer fits."""
    return model.context_window - model.max_output


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


# --- what a compaction does with the files read (issue 26, item 5) ----------------------------

RESTORE_FILES = 5  # Claude Code restores up to 5 recently read files after a compaction,
RESTORE_FILE_TOKENS = 5_000  # up to 5k tokens each,
RESTORE_TOTAL_TOKENS = 50_000  # 50k in all (issue 26, item 5)
# On a smaller window the same share of the threshold: 50k is about 30% of the threshold of a
# 200k window with a 20k reserve.
RESTORE_SHARE_OF_THRESHOLD = 0.3


class RestoreRecentFiles:
    """The product's policy, plus Claude Code's restore: when a compaction runs, the files
    most recently read in the part it summarises (and not read again in the part it keeps),
    as they are on disk now, are attached after the summary (the lines of the latest read of
    each, up to RESTORE_FILE_TOKENS, RESTORE_FILES files, RESTORE_TOTAL_TOKENS and
    RESTORE_SHARE_OF_THRESHOLD of the threshold in all), so that the model need not read
    them again. The product instead lists the paths (the summary's Files read and Files
    modified) and the model reads what it needs, when it needs it. The block rides in the
    compaction's summary, so it is in the ledger, every later request and the next summary
    request, like the rest of the summary."""

    name = "restore-files"

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace.resolve()

    async def prepare(self, view: ContextView, manager: ContextManager) -> ContextView:
        decision = manager.decide(view)
        reason = decision.reason
        if decision.action != "compact" or reason is None or reason == "oversized":
            return view
        budget = min(RESTORE_TOTAL_TOKENS, int(RESTORE_SHARE_OF_THRESHOLD * manager.threshold))
        original = manager.summaries
        manager.summaries = _Restoring(original, self, budget)  # type: ignore[assignment]
        try:
            result = await manager.compact(reason, view=view)
        finally:
            manager.summaries = original
        return result.view

    def restored(self, cut: CutPoint, budget: int) -> str:
        """The block attached after a summary for `cut`: "" when no file qualifies."""
        kept = {path for path, _ in _reads(m.message for m in cut.kept)}
        chosen: list[tuple[str, dict[str, Any]]] = []
        for path, arguments in reversed(_reads(
            m.message for m in (*cut.summarize, *cut.turn_prefix)
        )):
            if path not in kept and path not in (p for p, _ in chosen):
                chosen.append((path, arguments))
            if len(chosen) == RESTORE_FILES:
                break
        parts: list[str] = []
        for path, arguments in chosen:
            text = self._lines(path, arguments, min(RESTORE_FILE_TOKENS, budget))
            if text is None:
                continue
            budget -= estimate_text_tokens(text)
            parts.append(text)
            if budget <= 0:
                break
        if not parts:
            return ""
        return "\n\n## Files read before this point, as they are now\n\n" + "\n\n".join(parts)

    def _lines(self, path: str, arguments: dict[str, Any], tokens: int) -> str | None:
        file = (self.workspace / path).resolve()
        if not file.is_relative_to(self.workspace) or not file.is_file():
            return None
        lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
        offset = arguments.get("offset")
        first = offset if isinstance(offset, int) and offset >= 1 else 1
        limit = arguments.get("limit")
        count = limit if isinstance(limit, int) and limit >= 1 else len(lines)
        shown: list[str] = []
        used = 0
        for line in lines[first - 1 : first - 1 + count]:
            used += estimate_text_tokens(line + "\n")
            if used > tokens:
                break
            shown.append(line)
        if not shown:
            return None
        last = first + len(shown) - 1
        return f'<file path="{path}" lines="{first}-{last}">\n' + "\n".join(shown) + "\n</file>"


def _reads(messages: Iterable[Message]) -> list[tuple[str, dict[str, Any]]]:
    """(path, arguments) of each read tool call, oldest first."""
    found: list[tuple[str, dict[str, Any]]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                path = call.arguments.get("path")
                if call.name == "read" and isinstance(path, str):
                    found.append((path, dict(call.arguments)))
    return found


class _Restoring:
    """The session's summaries, with the restored files attached after each compaction's."""

    def __init__(self, summaries: Any, policy: RestoreRecentFiles, budget: int) -> None:
        self._summaries = summaries
        self._policy = policy
        self._budget = budget

    def __getattr__(self, name: str) -> Any:
        return getattr(self._summaries, name)

    async def of_compaction(self, projection: Any, tokens: int, cut: CutPoint,
                            *args: Any, **kwargs: Any) -> tuple[str, str | None]:
        summary, split = await self._summaries.of_compaction(projection, tokens, cut, *args,
                                                             **kwargs)
        if not summary:
            return summary, split
        return summary + self._policy.restored(cut, self._budget), split
