"""One compaction, run: where it cuts (context.cut_point), what it carries (context.carried),
the user's hooks before and after it (agent/compaction_hooks.py), its summary (the engine of
agent/provider_compaction.py), whether it is kept (only when it makes the context smaller),
and what the editor is told of each step: the compaction's events, a failure, a cancel, a
compaction that left the context above the threshold. Whether to compact is not decided
here: that is context.decision's."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Callable
from typing import Any

from agent_server.agent.compaction_hooks import CANCELLABLE, BeforeVerdict, CompactionHookRunner
from agent_server.agent.context_view import CompactionResult, ContextView, ToolListSource
from agent_server.agent.events import (
    CompactionFinished,
    CompactionStarted,
    EventSink,
    Notice,
    OverflowHappened,
)
from agent_server.agent.prefix_cache import PrefixCache
from agent_server.agent.provider_compaction import CompactionEngine
from agent_server.agent.session_config import ContextConfig
from agent_server.context.carried import carried_budgets, carry
from agent_server.context.cut_point import CutPoint, find_cut_point
from agent_server.context.estimate import estimate_text_tokens
from agent_server.context.summary_prompt import (
    SUMMARY_OUTPUT_TOKENS,
    CallFiles,
    extract_file_operations,
)
from agent_server.context.trigger import (
    compaction_threshold,
    last_step_tokens,
    max_kept_tokens,
    window_limit,
)
from agent_server.errors import ProviderError
from agent_server.llm.messages import Usage
from agent_server.session.entries import CompactionEntry, CompactionReason, Entry
from agent_server.session.ledger import Ledger


class Compactor:
    """Runs the compactions of one session. `view` is the ledger's context now,
    `view_of_entries` the context of given entries (both the context manager's);
    `prefix_tokens` the system prompt's and tools' estimate."""

    def __init__(
        self,
        *,
        ledger: Ledger,
        config: ContextConfig,
        engine: CompactionEngine,
        tools: ToolListSource,
        cache: PrefixCache,
        emit: EventSink,
        turn_id: Callable[[], str | None],
        view: Callable[[], ContextView],
        view_of_entries: Callable[[tuple[Entry, ...]], ContextView],
        prefix_tokens: Callable[[], int],
        files_of: CallFiles,
        hooks: CompactionHookRunner | None = None,
    ) -> None:
        self._ledger = ledger
        self._config = config
        self.engine = engine
        self._tools = tools
        self._cache = cache
        self._emit = emit
        self._turn_id = turn_id
        self._view = view
        self._view_of_entries = view_of_entries
        self._prefix_tokens = prefix_tokens
        self._files_of = files_of  # what a tool call reads or writes, as its tool declares
        self._hooks = hooks  # runs the compaction.hooks commands
        self._above_said = False  # a compaction left the context above the threshold: said

    @property
    def _threshold(self) -> int:
        return compaction_threshold(self._config.model, self._config.compaction)

    async def run(
        self, reason: CompactionReason, view: ContextView, instructions: str | None
    ) -> CompactionResult:
        """Fold the older history of `view` into a summary, once: append one CompactionEntry,
        or nothing when there is nothing to summarise ("noop"), a hook cancelled it
        ("cancelled"), the summary failed, or it did not make the context smaller
        ("failed")."""
        before = view.tokens
        if reason == "truncation":
            self._emit(OverflowHappened(
                self._turn_id() or "",
                "truncated",
                "compacting",
                "The last answer was cut off by the context window; compacting the history.",
            ))
        assert view.projection is not None, "compaction needs a view of the ledger"
        cut = self._cut(view, reason)
        if not cut.can_compact:
            return CompactionResult("noop", reason, before, before, view)

        compaction_id = uuid.uuid4().hex[:12]
        self._emit(CompactionStarted(compaction_id, reason, before))
        verdict = await self._before_hooks(reason, view, instructions)
        if verdict.cancel and reason in CANCELLABLE:
            # The card says "cancelled"; its error names who and why (the notice says both).
            message = f"Compaction cancelled by {verdict.reason}"
            self._emit(CompactionFinished(compaction_id, reason, "cancelled", before,
                                          error=verdict.reason))
            self._emit(Notice(self._turn_id(), "info", message))
            return CompactionResult("cancelled", reason, before, before, view, error=message)
        instructions = "\n\n".join(filter(None, (instructions, verdict.instructions))) or None
        previous = view.projection.compaction
        details = extract_file_operations(
            [*cut.summarize_messages, *cut.turn_prefix_messages],
            previous.details if previous is not None else None,
            self._files_of,
        )
        carried = carry(
            view.entries,
            (*cut.summarize, *cut.turn_prefix),
            cut.kept,
            carried_budgets(self._threshold),
            self._files_of,
        )
        spent: list[Usage] = []
        try:
            written = await self.engine.summarise(
                view.projection,
                view.tokens,
                cut,
                reason,
                instructions=instructions,
                details=details,
                shares_cache=self._cache.shared(),
                spent=spent,
                carried=carried,
            )
            if not written.summary:
                raise ProviderError("the model returned an empty summary")
        except asyncio.CancelledError:
            self._emit(CompactionFinished(compaction_id, reason, "cancelled", before))
            raise
        except ProviderError as error:
            return self._failed(compaction_id, reason, view, error.message)
        model = self._config.model if written.provider else self._config.summary_model
        fields: dict[str, Any] = {
            "summary": written.summary,
            "first_kept_entry_id": cut.first_kept_entry_id,
            "tokens_before": before,
            "reason": reason,
            "details": details,
            "split_turn_summary": written.split_turn_summary,
            "model": model.id,
            "usage": sum(spent, Usage()),
            "carried": carried,
            "provider": written.provider,
        }
        result = self._keep(compaction_id, view, fields)
        if result.entry is not None:
            await self._after_hooks(result.entry)
        return result

    async def _before_hooks(
        self, reason: CompactionReason, view: ContextView, instructions: str | None
    ) -> BeforeVerdict:
        """The `compaction.hooks.before` commands' verdict on this compaction; their problems,
        and a cancel that cannot hold (the context does not fit without it), told."""
        hooks = self._config.compaction.hooks
        if self._hooks is None or not hooks.before:
            return BeforeVerdict()
        model = self._config.model
        event = {"tokens": view.tokens, "threshold": self._threshold,
                 "window": model.context_window, "model": model.id,
                 "instructions": instructions}
        verdict = await self._hooks.before(hooks, reason, event)
        for problem in verdict.problems:
            self._emit(Notice(self._turn_id(), "warning", f"Compaction hook failed: {problem}"))
        if verdict.cancel and reason not in CANCELLABLE:
            self._emit(Notice(self._turn_id(), "warning", (
                f"{verdict.reason[:1].upper()}{verdict.reason[1:]}: asked to cancel the "
                f"compaction, but it runs anyway: the context does not fit without it ({reason})."
            )))
        return verdict

    async def _after_hooks(self, entry: CompactionEntry) -> None:
        """The `compaction.hooks.after` commands, given the compaction just kept."""
        hooks = self._config.compaction.hooks
        if self._hooks is None or not hooks.after:
            return
        event = {"tokensBefore": entry.tokens_before, "tokensAfter": entry.tokens_after,
                 "summary": entry.summary, "firstKeptEntryId": entry.first_kept_entry_id,
                 "model": self._config.model.id}
        for problem in await self._hooks.after(hooks, entry.reason, event):
            self._emit(Notice(self._turn_id(), "warning", f"Compaction hook failed: {problem}"))

    def _keep(
        self, compaction_id: str, view: ContextView, fields: dict[str, Any]
    ) -> CompactionResult:
        """The compaction with these `fields` (a CompactionEntry's) appended, when it makes
        `view` smaller; else discarded ("failed")."""
        before, reason = view.tokens, fields["reason"]
        candidate = CompactionEntry(
            id="", parent_id=self._ledger.leaf_id, timestamp="", tokens_after=None, **fields
        )
        after = self._view_of_entries((*view.entries, candidate))
        carried = candidate.carried
        if after.tokens >= before and carried is not None and carried.said:
            # The model's words are carried to spare a recall, the first part to yield: where
            # they would keep the compaction from making the context smaller (a short history
            # of the user's own words, compacted by hand), it is kept without them.
            fields["carried"] = dataclasses.replace(
                carried, said=(), said_left_out=carried.said_left_out + len(carried.said)
            )
            candidate = dataclasses.replace(candidate, carried=fields["carried"])
            after = self._view_of_entries((*view.entries, candidate))
        if after.tokens >= before:
            return self._failed(
                compaction_id,
                reason,
                view,
                f"the summary did not make the context smaller ({before} -> {after.tokens} "
                "tokens); it was discarded",
            )
        entry = self._ledger.add(CompactionEntry, tokens_after=after.tokens, **fields)
        tools = self._tools.specs()
        self._tools.after_compaction()  # the prefix is rebuilt: a waiting tool change comes in
        self._ledger.sync()
        if self._tools.specs() != tools:
            after = self._view()  # with the new list (and its toolList entry)
        else:
            assert after.projection is not None
            after = dataclasses.replace(
                after,
                entries=(*view.entries, entry),
                projection=dataclasses.replace(after.projection, compaction=entry),
            )
        self._emit(
            CompactionFinished(
                compaction_id,
                reason,
                "completed",
                before,
                tokens_after=after.tokens,
                summary=entry.summary,
                first_kept_entry_id=entry.first_kept_entry_id,
            )
        )
        if after.tokens > self._threshold and not self._above_said:
            self._above_said = True
            self._emit(Notice(self._turn_id(), "warning", self._left_above_notice(entry, after)))
        return CompactionResult("compacted", reason, before, after.tokens, after, entry)

    def _left_above_notice(self, entry: CompactionEntry, after: ContextView) -> str:
        """Why a compaction left the context above the threshold, and what to do (said once:
        left_above_by_compaction keeps the next threshold compaction from running for it)."""
        model, settings = self._config.model, self._config.compaction
        pins = entry.carried.pins if entry.carried is not None else ()
        pinned = sum(estimate_text_tokens(pin.text) for pin in pins)
        of_pins = f"{len(pins)} pins of about {pinned:,} tokens, " if pins else ""
        message = (
            f"The history was compacted to about {after.tokens:,} tokens, still over the "
            f"compaction threshold of {self._threshold:,}: what every compaction keeps (the "
            f"system prompt and tools, your messages, {of_pins}the last turns) takes that much."
        )
        if after.tokens <= window_limit(model, settings):
            more = max_kept_tokens(model, settings)
            message += f" The next compaction waits until about {more:,} tokens more come in."
        else:
            message += " Every call compacts again while it stays there."
        return message + (
            " To compact further, remove the pins no longer needed (/pins lists them), or "
            "raise 'compaction.threshold' (or use a model with a larger window)."
        )

    def _cut(self, view: ContextView, reason: CompactionReason) -> CutPoint:
        """Where a compaction of `view` cuts. After an overflow the estimate is known to be
        low (the provider counted more than the window where it counted `view.tokens`), so
        the kept tail's budgets shrink in proportion, and a prompt gets no budget of its own:
        keeping verbatim what was just rejected would be rejected again."""
        model, settings = self._config.model, self._config.compaction
        scale = 1.0
        prompt_tokens: int | None = (
            window_limit(model, settings) - self._prefix_tokens() - SUMMARY_OUTPUT_TOKENS
        )  # a prompt awaiting its answer stays verbatim while the summary fits beside it
        if reason == "overflow":
            scale = min(1.0, view.tokens / model.context_window)
            prompt_tokens = None
        return find_cut_point(
            view.entries,
            keep_recent_tokens=int(settings.keep_recent_tokens * scale),
            keep_recent_turns=settings.keep_recent_turns,
            max_kept_tokens=int(max_kept_tokens(model, settings) * scale),
            last_step_tokens=int(last_step_tokens(model, settings) * scale),
            prompt_tokens=prompt_tokens,
        )

    def _failed(
        self, compaction_id: str, reason: CompactionReason, view: ContextView, problem: str
    ) -> CompactionResult:
        self._emit(
            CompactionFinished(compaction_id, reason, "failed", view.tokens, error=problem)
        )
        self._emit(Notice(self._turn_id(), "warning", f"Compaction failed: {problem}"))
        return CompactionResult("failed", reason, view.tokens, view.tokens, view, error=problem)
