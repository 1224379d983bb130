"""Compaction: fold the older part of the history into a summary, once, near the window.

The ledger is never edited: a compaction appends one CompactionEntry (summary and the id of
the first entry kept verbatim), and the model sees the projection from then on. A later
compaction summarises only the previous summary and what came after it (invariant 7).

The summary request reuses the cached prefix when it can: the current context (same system
prompt, same tools, same tool_choice) plus one final instruction, so reading the history back
costs the cache-read price. When that would not fit (overflow recovery, a context at the
window's edge) or summaries use another model, a fresh, smaller prompt is sent instead: the
serialised conversation with long tool results cut.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from agent_server.agent.events import (
    CompactionFinished,
    CompactionReason,
    CompactionStarted,
    EventSink,
)
from agent_server.context.cut_point import find_cut_point
from agent_server.context.estimate import estimate_context_tokens
from agent_server.context.projection import build_compacted_messages, project
from agent_server.context.summary_prompt import (
    build_summary_instruction,
    build_summary_prompt,
    build_turn_prefix_prompt,
    extract_file_operations,
    previous_summary_text,
)
from agent_server.context.trigger import (
    CompactionSettings,
    compaction_threshold,
    max_kept_tokens,
)
from agent_server.errors import ContextOverflowError, ProviderError
from agent_server.llm.messages import (
    AssistantMessage,
    Context,
    Message,
    TextContent,
    ToolSpec,
    Usage,
    UserMessage,
)
from agent_server.llm.models import ModelInfo
from agent_server.session.entries import CompactionDetails, CompactionEntry
from agent_server.session.ledger import Ledger

SUMMARY_SYSTEM_PROMPT = (
    "You summarise a coding agent's conversation so that the agent can continue the work "
    "from the summary alone. Be exact: keep file paths, names, numbers and error messages "
    "verbatim. Answer with the summary only."
)
SUMMARY_OUTPUT_TOKENS = 8192
# The cached summary request is the context plus an instruction (about this many tokens),
# and its answer must fit in what is left of the window: at least MIN_SUMMARY_TOKENS.
INSTRUCTION_TOKENS = 1024
MIN_SUMMARY_TOKENS = 2048

Outcome = Literal["compacted", "noop", "failed", "cancelled"]
SummaryMode = Literal["cached", "fresh"]
# Makes one summary call: (context, model, shares the session's cached prefix, output
# budget) -> answer.
Summarise = Callable[[Context, ModelInfo, bool, int], Awaitable[AssistantMessage]]


@dataclass(frozen=True, slots=True)
class CompactionOutcome:
    outcome: Outcome
    reason: CompactionReason
    tokens_before: int
    tokens_after: int
    entry: CompactionEntry | None = None
    error: str | None = None


def new_compaction_id() -> str:
    return uuid.uuid4().hex[:12]


def append_instruction(messages: Sequence[Message], instruction: str) -> tuple[Message, ...]:
    """`messages` plus one final user instruction, merged into a trailing user message so
    that two user messages never sit in a row."""
    if messages and isinstance(messages[-1], UserMessage):
        last = messages[-1]
        return (*messages[:-1], UserMessage((*last.content, TextContent(instruction))))
    return (*messages, UserMessage.of_text(instruction))


class Compactor:
    """Runs the compactions of one session."""

    def __init__(
        self,
        *,
        ledger: Ledger,
        system_prompt: str,
        tools: Callable[[], tuple[ToolSpec, ...]],
        emit: EventSink,
        summarise: Summarise,
    ) -> None:
        self._ledger = ledger
        self._system_prompt = system_prompt
        self._tools = tools
        self._emit = emit
        self._summarise = summarise
        self._spent = Usage()

    async def compact(
        self,
        *,
        reason: CompactionReason,
        model: ModelInfo,
        summary_model: ModelInfo,
        settings: CompactionSettings,
        mode: SummaryMode = "cached",
        instructions: str | None = None,
    ) -> CompactionOutcome:
        entries = self._ledger.projection_entries()
        projection = project(entries)
        context = Context(self._system_prompt, self._tools(), projection.messages)
        tokens_before = estimate_context_tokens(context, fresh_from=projection.fresh_from).tokens
        cut = find_cut_point(
            entries,
            keep_recent_tokens=settings.keep_recent_tokens,
            keep_recent_turns=settings.keep_recent_turns,
            max_kept_tokens=max_kept_tokens(model, settings),
            last_step_tokens=compaction_threshold(model, settings) // 2,
        )
        if not cut.can_compact:
            return CompactionOutcome("noop", reason, tokens_before, tokens_before)

        compaction_id = new_compaction_id()
        self._spent = Usage()
        self._emit(CompactionStarted(compaction_id, reason, tokens_before))
        previous = projection.compaction
        file_operations = extract_file_operations(
            [*cut.summarize_messages, *cut.turn_prefix_messages],
            previous.details if previous is not None else None,
        )
        try:
            room = model.context_window - tokens_before - INSTRUCTION_TOKENS
            use_cached = (
                mode == "cached"
                and summary_model.id == model.id
                and reason != "overflow"
                and room >= MIN_SUMMARY_TOKENS
            )
            summary, split_turn_summary = "", None
            if use_cached:
                instruction = build_summary_instruction(
                    kept_messages=projection.count_from(cut.first_kept_entry_id),
                    previous_summary_in_context=previous is not None,
                    instructions=instructions,
                    file_operations=file_operations,
                )
                request = Context(
                    self._system_prompt,
                    self._tools(),
                    append_instruction(projection.messages, instruction),
                )
                budget = min(room, SUMMARY_OUTPUT_TOKENS, model.max_output)
                try:
                    answer = await self._call(request, model, cached=True, max_tokens=budget)
                    # A summary cut off by the window or max_tokens is not a summary.
                    summary = answer.text.strip() if answer.stop_reason == "stop" else ""
                except ContextOverflowError:
                    # The estimate was low (dense content counts more than chars/4): the
                    # fresh prompt below is smaller.
                    summary = ""
            if not summary:
                summary, split_turn_summary = await self._fresh_summary(
                    cut.summarize_messages,
                    cut.turn_prefix_messages,
                    previous_summary_text(previous),
                    instructions,
                    file_operations,
                    summary_model,
                )
            if not summary:
                raise ProviderError("the model returned an empty summary")
        except asyncio.CancelledError:
            self._emit(CompactionFinished(compaction_id, reason, "cancelled", tokens_before))
            raise
        except ProviderError as error:
            self._emit(
                CompactionFinished(
                    compaction_id, reason, "failed", tokens_before, error=error.message
                )
            )
            return CompactionOutcome(
                "failed", reason, tokens_before, tokens_before, error=error.message
            )

        compacted = build_compacted_messages(
            summary, [entry.message for entry in cut.kept], split_turn_summary=split_turn_summary
        )
        after_context = Context(self._system_prompt, self._tools(), tuple(compacted))
        tokens_after = estimate_context_tokens(after_context, fresh_from=len(compacted)).tokens
        if tokens_after >= tokens_before:
            problem = (
                f"the summary did not make the context smaller ({tokens_before} -> "
                f"{tokens_after} tokens); it was discarded"
            )
            self._emit(
                CompactionFinished(compaction_id, reason, "failed", tokens_before, error=problem)
            )
            return CompactionOutcome("failed", reason, tokens_before, tokens_before, error=problem)

        entry = self._ledger.append_compaction(
            summary=summary,
            first_kept_entry_id=cut.first_kept_entry_id,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            reason=reason,
            details=file_operations,
            split_turn_summary=split_turn_summary,
            model=summary_model.id,
            usage=self._spent,
        )
        self._emit(
            CompactionFinished(
                compaction_id,
                reason,
                "completed",
                tokens_before,
                tokens_after=tokens_after,
                summary=summary,
                first_kept_entry_id=entry.first_kept_entry_id,
            )
        )
        return CompactionOutcome("compacted", reason, tokens_before, tokens_after, entry=entry)

    async def _fresh_summary(
        self,
        messages: list[Message],
        turn_prefix: list[Message],
        previous_summary: str | None,
        instructions: str | None,
        file_operations: CompactionDetails,
        model: ModelInfo,
    ) -> tuple[str, str | None]:
        """(summary, split-turn summary): the history up to the kept tail, and separately
        the early part of a turn too large to keep whole."""
        summary = ""
        if messages or previous_summary:
            prompt = build_summary_prompt(
                messages,
                previous_summary=previous_summary,
                instructions=instructions,
                file_operations=file_operations,
            )
            summary = await self._fresh_call(prompt, model)
        split_turn_summary = None
        if turn_prefix:
            split_turn_summary = (
                await self._fresh_call(build_turn_prefix_prompt(turn_prefix), model) or None
            )
        if not summary and split_turn_summary:
            summary, split_turn_summary = split_turn_summary, None
        return summary, split_turn_summary

    async def _fresh_call(self, prompt: str, model: ModelInfo) -> str:
        context = Context(SUMMARY_SYSTEM_PROMPT, (), (UserMessage.of_text(prompt),))
        budget = min(SUMMARY_OUTPUT_TOKENS, model.max_output)
        answer = await self._call(context, model, cached=False, max_tokens=budget)
        return answer.text.strip() if answer.stop_reason == "stop" else ""

    async def _call(
        self, context: Context, model: ModelInfo, *, cached: bool, max_tokens: int
    ) -> AssistantMessage:
        answer = await self._summarise(context, model, cached, max_tokens)
        if answer.usage is not None:
            self._spent = self._spent + answer.usage
        return answer
