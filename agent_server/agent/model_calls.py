"""The session's model calls: the turn's answers, streamed as events, and the summaries the
context manager asks for; each retried as the policy says and billed to the session and to
the running turn."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from agent_server.agent.events import (
    AnswerDiscarded,
    EventSink,
    Notice,
    Retry,
    TextChunk,
    ThinkingChunk,
)
from agent_server.agent.model_call import CallAttempt, RetryPolicy, call_model
from agent_server.agent.provider_compaction import tool_result_clearing
from agent_server.agent.session_config import SessionConfig
from agent_server.context.projection import is_prompt
from agent_server.errors import ProviderError
from agent_server.llm.cost import SessionTotals, rewrite_cost
from agent_server.llm.messages import AssistantMessage, Context, Usage
from agent_server.llm.models import ModelInfo
from agent_server.llm.providers import bills_cache_writes
from agent_server.llm.stream import (
    CacheRetention,
    CacheUse,
    CallOptions,
    CompactionCall,
    ContextEdited,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
)
from agent_server.session.entries import MessageEntry
from agent_server.session.facts import usage_of
from agent_server.session.ledger import Ledger


class ModelCalls:
    """Calls the session's model, says what streams and what is retried, and counts."""

    def __init__(
        self,
        ledger: Ledger,
        config: SessionConfig,
        emit: EventSink,
        retry: RetryPolicy,
        retention: Callable[[], CacheRetention],
        current_turn: Callable[[], str | None],
    ) -> None:
        self._session_id = ledger.header.session_id
        self._config = config
        self._emit = emit
        self.retry = retry
        self._retention = retention  # the cache retention of the next call
        self._new_id = ledger.new_id  # the ledger's ids, for the answers it records
        self._current_turn = current_turn  # the turn a summary is made in, if any
        self.totals = SessionTotals()  # the session's calls
        self.totals.add_sum(*ledger.facts.usage)  # from the ledger's index: nothing is read
        # The running turn's calls, or the last one's between turns.
        self.turn_totals = last_turn_totals(ledger)
        self._cleared_tool_uses = 0  # the most the provider cleared at once (context editing)
        self._message_seq = 0

    def count(self, usage: Usage, model: ModelInfo) -> None:
        """Bill one call to the session and to the running turn."""
        self.totals.add(usage, model)
        self.turn_totals.add(usage, model)

    def options(self) -> CallOptions:
        settings = self._config.settings
        return CallOptions(
            session_id=self._session_id,
            cache_retention=self._retention(),
            thinking=settings.thinking,
            clear_tool_results=tool_result_clearing(
                self._config.model, settings.compaction, self._config.api
            ),
        )

    async def answer(
        self, turn_id: str, context: Context, attempt: list[CallAttempt]
    ) -> AssistantMessage:
        """The model's answer to `context`, its text and thinking streamed as they come (a
        retried answer said to be discarded); `attempt` holds the attempt under way."""
        streamed: set[str] = set()  # the attempts that showed part of an answer

        def on_event(current: CallAttempt, event: StreamEvent) -> None:
            if isinstance(event, TextDelta):
                streamed.add(current.message_id)
                self._emit(TextChunk(turn_id, current.message_id, event.text))
            elif isinstance(event, ThinkingDelta):
                streamed.add(current.message_id)
                self._emit(ThinkingChunk(turn_id, current.message_id, event.text))
            elif isinstance(event, ContextEdited):
                self._context_edited(turn_id, event)

        def on_retry(error: ProviderError, wait: float, number: int, failed: CallAttempt) -> None:
            if failed.message_id in streamed:  # the retry answers again from the start
                self._emit(AnswerDiscarded(turn_id, failed.message_id))
            attempts = self.retry.max_retries + 1
            self._emit(
                Notice(
                    turn_id,
                    "warning",
                    f"{error.message} Retrying in {wait:.0f}s "
                    f"(attempt {number + 1} of {attempts}).",
                    Retry(number + 1, attempts, wait),
                )
            )

        return await call_model(
            self._config.setup.provider,
            self._config.model,
            context,
            self.options(),
            on_event=on_event,
            on_retry=on_retry,
            new_message_id=self._new_id,
            retry=self.retry,
            attempt_holder=attempt,
        )

    async def summary(
        self, context: Context, model: ModelInfo, cache: CacheUse, max_tokens: int,
        compaction: CompactionCall | None = None,
    ) -> AssistantMessage:
        """The one model call the context manager makes its summaries with; with
        `compaction`, the provider's own compaction."""
        # A call that shares the prefix keeps the session's call options (they are part of
        # the prefix); only the output budget differs, and it is not part of the prompt.
        options = replace(self.options(), max_tokens=max_tokens, cache=cache,
                          compaction=compaction)
        shown_turn = self._current_turn() or "compaction"

        def on_retry(error: ProviderError, wait: float, number: int, _failed: CallAttempt) -> None:
            self._emit(
                Notice(
                    shown_turn,
                    "warning",
                    f"{error.message} Retrying the summary in {wait:.0f}s.",
                    Retry(number + 1, self.retry.max_retries + 1, wait),
                )
            )

        message = await call_model(
            self._config.setup.provider,
            model,
            context,
            options,
            on_event=lambda _attempt, _event: None,
            on_retry=on_retry,
            new_message_id=lambda: self._new_message_id(shown_turn),
            retry=self.retry,
        )
        if message.usage is not None:
            self.count(message.usage, model)
        return message

    def _context_edited(self, turn_id: str, event: ContextEdited) -> None:
        """The provider cleared old tool results: say so when it cleared more than before,
        with what the clearing cost (the prompt after the first result it cleared is written
        to the cache again instead of read)."""
        if event.cleared_tool_uses <= self._cleared_tool_uses:
            return
        self._cleared_tool_uses = event.cleared_tool_uses
        model = self._config.model
        dollars = rewrite_cost(
            model.pricing, event.cache_written,
            bills_writes=bills_cache_writes(self._config.api, model),
            long=self._retention() == "long",
        )
        self._emit(Notice(
            turn_id, "info",
            f"The provider cleared {event.cleared_tool_uses} old tool results "
            f"({event.cleared_tokens:,} tokens) before this call: the prompt after the first "
            f"one cleared was written to the cache again ({event.cache_written:,} tokens, "
            f"about ${dollars:.2f} more than reading it).",
        ))

    def _new_message_id(self, turn_id: str) -> str:
        self._message_seq += 1
        return f"{turn_id}.{self._message_seq}"


def last_turn_totals(ledger: Ledger) -> SessionTotals:
    """The usage of the last turn on the branch: its calls from the leaf back to its prompt
    (a compaction counts as the calls it made)."""
    totals = SessionTotals()
    node = ledger.leaf_id
    while node is not None:
        entry = ledger.tree.get(node)
        if entry is None:
            break
        if isinstance(entry, MessageEntry) and is_prompt(entry.message):
            break
        usage = usage_of(entry)
        if usage is not None:
            totals.add(usage)
        node = entry.parent_id
    return totals
