"""How a compaction asks for its summary, and every other summary context management makes.

A compaction's summary is asked for with the cached request (the session's own context plus
one instruction, read from the prompt cache) when it can be, else with fresh prompts that fit
the summary model (context/summary_prompt.py builds them). Every call goes through the one
`ModelCall` the session injects (it retries, bills and announces waits).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from agent_server.agent.session_config import ContextConfig
from agent_server.context.cut_point import CutPoint
from agent_server.context.estimate import estimate_text_tokens, has_real_usage
from agent_server.context.projection import Projection
from agent_server.context.summary_prompt import (
    INSTRUCTION_TOKENS,
    MIN_SUMMARY_TOKENS,
    SUMMARY_OUTPUT_TOKENS,
    SUMMARY_SYSTEM_PROMPT,
    build_branch_summary_prompt,
    build_summary_instruction,
    build_summary_prompt,
    build_turn_prefix_prompt,
    fresh_prompt_tokens,
    previous_summary_text,
)
from agent_server.errors import ContextOverflowError
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
from agent_server.llm.stream import CacheUse, CompactionCall
from agent_server.session.entries import (
    Carried,
    CompactionDetails,
    CompactionReason,
    Entry,
    MessageEntry,
)


# One model call made for the context (a summary): (context, model, how it uses the session's
# cache, output budget) -> the answer. A call that shares the cached prefix ("read", or
# "extend" when its context is the previous request plus one final block) keeps the session's
# call options, reads what is cached and writes nothing new (no later request begins with its
# tail); one that does not ("none") is sent without cache marks. The session's implementation
# retries what may succeed later, bills the call and announces waits; it raises
# ContextOverflowError for a prompt too long, ProviderError for any other failure. With
# `compaction`, the call is a compaction request (the provider summarises, its answer one
# CompactionContent: agent/provider_compaction.py).
class ModelCall(Protocol):
    def __call__(
        self,
        context: Context,
        model: ModelInfo,
        cache: CacheUse,
        max_tokens: int,
        compaction: CompactionCall | None = None,
    ) -> Awaitable[AssistantMessage]: ...



# A fresh summary prompt that is still rejected as too long is retried this many times, each
# time with half the budget (the oldest messages left out), as Codex trims its summary request.
FRESH_PROMPT_SHRINKS = 2


class Summaries:
    """The summary requests of one session: `call` makes them, `config` says with which
    models and settings, `system_prompt` and `tools` are the session's prefix (the cached
    request shares it), and `on_cache_use` is told of every call that used the cache."""

    def __init__(
        self,
        *,
        call: ModelCall,
        config: ContextConfig,
        system_prompt: str,
        tools: Callable[[], tuple[ToolSpec, ...]],
        on_cache_use: Callable[[], None],
    ) -> None:
        self._call = call
        self._config = config
        self._system_prompt = system_prompt
        self._tools = tools
        self._on_cache_use = on_cache_use

    async def of_compaction(
        self,
        projection: Projection,
        tokens: int,
        cut: CutPoint,
        reason: CompactionReason,
        *,
        instructions: str | None,
        details: CompactionDetails,
        shares_cache: bool,
        spent: list[Usage],
        carried: Carried | None = None,
    ) -> tuple[str, str | None]:
        """(summary, split-turn summary) of what `cut` folds away from the context
        `projection` (of `tokens` tokens).

        The cached request (the context plus one instruction, billed at the cache-read price)
        when the settings ask for it, the summary model is the session's, the reason is not an
        overflow (the context was just rejected: never resend it) and the window leaves room
        for the answer (MIN_SUMMARY_TOKENS beside the request: cached_request_tokens); else,
        or when the cached answer is no summary, the fresh prompts.
        The cached request leaves out the messages since the last answer when they stay
        verbatim after the compaction (the step just taken, a new prompt): it is then the
        previous request plus the instruction, all of it read from the cache, where those
        messages would be sent at the input price only to be left out of the summary. It is
        sent without cache marks unless `shares_cache` (a cold prefix is not written again).
        """
        model = self._config.model
        cached = (
            self._config.compaction.summary == "cached"
            and self._config.summary_model.id == model.id
            and reason != "overflow"
        )
        if cached:
            summary = await self._cached(
                projection, tokens, cut, instructions, details, shares_cache, spent, carried
            )
            if summary:
                return summary, None
        return await self._fresh_of_cut(projection, cut, instructions, details, spent, carried)

    async def _cached(
        self,
        projection: Projection,
        tokens: int,
        cut: CutPoint,
        instructions: str | None,
        details: CompactionDetails,
        shares_cache: bool,
        spent: list[Usage],
        carried: Carried | None,
    ) -> str:
        """The summary from the cached request; "" when the window leaves its answer less
        than MIN_SUMMARY_TOKENS, or when its answer is no summary."""
        model = self._config.model
        messages = projection.messages
        kept = projection.count_from(cut.first_kept_entry_id)
        sent = previous_request_end(messages, kept)
        instruction = build_summary_instruction(
            kept_messages=kept - (len(messages) - sent),
            previous_summary_in_context=projection.compaction is not None,
            instructions=instructions,
            file_operations=details,
            carried=carried,
        )
        # INSTRUCTION_TOKENS is the instruction's share as the trigger plans it (a margin for
        # the usual one); a longer one (a user's focus text, long file lists) counts whole.
        room = (
            model.context_window
            - cached_request_tokens(projection, sent, tokens)
            - max(INSTRUCTION_TOKENS, estimate_text_tokens(instruction))
        )
        if room < MIN_SUMMARY_TOKENS:
            return ""
        request = Context(
            self._system_prompt, self._tools(), append_instruction(messages[:sent], instruction)
        )
        budget = min(room, SUMMARY_OUTPUT_TOKENS, model.max_output)
        cache: CacheUse = (
            "none" if not shares_cache else "extend" if sent < len(messages) else "read"
        )
        try:
            answer = await self._ask(request, model, cache, budget, spent)
        except ContextOverflowError:
            return ""  # the estimate was low (dense content): the fresh prompt is smaller
        # A summary cut off by the window or max_tokens is not a summary.
        return answer.text.strip() if answer.stop_reason == "stop" else ""

    async def _fresh_of_cut(
        self,
        projection: Projection,
        cut: CutPoint,
        instructions: str | None,
        details: CompactionDetails,
        spent: list[Usage],
        carried: Carried | None,
    ) -> tuple[str, str | None]:
        previous = projection.compaction
        summary = ""
        if cut.summarize or previous is not None:
            summary = await self.fresh(
                lambda budget: build_summary_prompt(
                    cut.summarize_messages,
                    previous_summary=previous_summary_text(previous),
                    instructions=instructions,
                    file_operations=details,
                    max_tokens=budget,
                    carried=carried,
                    previous_carried=previous.carried if previous is not None else None,
                ),
                spent,
            )
        split_turn_summary = None
        if cut.turn_prefix:
            split_turn_summary = (
                await self.fresh(
                    lambda budget: build_turn_prefix_prompt(
                        cut.turn_prefix_messages, instructions=instructions, max_tokens=budget
                    ),
                    spent,
                )
                or None
            )
        if not summary and split_turn_summary:
            summary, split_turn_summary = split_turn_summary, None
        return summary, split_turn_summary

    async def fresh(self, prompt_for: Callable[[int], str], spent: list[Usage]) -> str:
        """A summary from a fresh prompt that fits the summary model (prompt_for(budget) is
        at most `budget` tokens); "" when the answer is no summary (cut off)."""
        model = self._config.summary_model
        budget = fresh_prompt_tokens(model.context_window, model.max_output)
        output = min(SUMMARY_OUTPUT_TOKENS, model.max_output)
        for shrink in range(FRESH_PROMPT_SHRINKS + 1):
            prompt = prompt_for(budget)
            context = Context(SUMMARY_SYSTEM_PROMPT, (), (UserMessage.of_text(prompt),))
            try:
                answer = await self._ask(context, model, "none", output, spent)
            except ContextOverflowError:
                if shrink == FRESH_PROMPT_SHRINKS:
                    raise
                budget //= 2
                continue
            return answer.text.strip() if answer.stop_reason == "stop" else ""
        return ""

    async def of_messages(self, messages: Sequence[Message], previous: str | None) -> str:
        """A fresh summary of `messages`, folding in `previous`."""
        return await self.fresh(
            lambda budget: build_summary_prompt(
                messages, previous_summary=previous, max_tokens=budget
            ),
            [],
        )

    async def of_branch(self, entries: Sequence[Entry]) -> str:
        """A short summary of a branch (its entries, oldest first); "" when there is nothing
        to summarise."""
        messages = [entry.message for entry in entries if isinstance(entry, MessageEntry)]
        if not messages:
            return ""
        return await self.fresh(
            lambda budget: build_branch_summary_prompt(messages, max_tokens=budget), []
        )

    async def _ask(
        self, context: Context, model: ModelInfo, cache: CacheUse, budget: int, spent: list[Usage]
    ) -> AssistantMessage:
        answer = await self._call(context, model, cache, budget)
        if cache != "none":
            self._on_cache_use()
        if answer.usage is not None:
            spent.append(answer.usage)
        return answer


def previous_request_end(messages: Sequence[Message], kept: int) -> int:
    """How many of `messages` the request answered by the last assistant message sent: up to
    that message, when it and everything after it are among the last `kept` messages (those
    stay verbatim after a compaction); else all of them."""
    for index in range(len(messages) - 1, max(len(messages) - kept, 0) - 1, -1):
        if isinstance(messages[index], AssistantMessage):
            return index if index > 0 else len(messages)
    return len(messages)


def cached_request_tokens(projection: Projection, sent: int, tokens: int) -> int:
    """The size of the cached summary request before its instruction: the first `sent`
    messages of `projection` (previous_request_end). When they are the request the last
    answer replied to, and that answer's usage measured this context (it came after the
    latest compaction), the provider's own count of that request: exact, and free of the
    estimate of the messages after it, which the request leaves out (a tool's output the
    weighted estimate counts up to a tenth low; deciding on it put the room of the sqlparse
    session a few tokens either side of the minimum from run to run). Else `tokens`, the
    estimate of the whole context, which that request sends."""
    messages = projection.messages
    answer = messages[sent] if projection.fresh_from <= sent < len(messages) else None
    if isinstance(answer, AssistantMessage) and answer.usage is not None and has_real_usage(answer):
        return answer.usage.prompt_tokens
    return tokens


def append_instruction(messages: Sequence[Message], instruction: str) -> tuple[Message, ...]:
    """`messages` plus one final user instruction, merged into a trailing user message so
    that two user messages never sit in a row."""
    if messages and isinstance(messages[-1], UserMessage):
        last = messages[-1]
        return (*messages[:-1], UserMessage((*last.content, TextContent(instruction))))
    return (*messages, UserMessage.of_text(instruction))
