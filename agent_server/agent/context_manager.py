"""Context management in one place: what each model call sends, and why.

Before each model call of a turn, `ContextManager.prepare` runs one pipeline, in this order:

1. **view**: project the ledger (`context.projection.project`) and estimate it
   (`context.estimate`), once, into a `ContextView`; and whether the pause since the last
   call outlived the provider's cache (`PrefixCache`, agent/prefix_cache.py, with
   `llm.cache_ttl`): the prefix is then cold, and the editor is told what the pause costs (a
   Notice with tokens and dollars);
2. **decide**: one pure function, `context.decision.decide`, takes the whole decision on the
   view, from what the manager reads for it (the estimate, a prompt too large even alone, a
   cut-off answer, a context the provider already rejected, the last step, a cold prefix,
   where the call stands in the turn, what the latest compaction left): refuse (a prompt
   that cannot fit even alone: PromptTooLargeError, before anything is sent), compact and
   for which reason, wait for a natural break, or send;
3. **policy**: the context policy turns the view into the one to send. The product's policy,
   `CompactNearWindow`, compacts when the decision says so; the benchmarks plug their
   strategies in here instead (benchmarks/strategies.py);
4. **guard**: a context the decision finds unsendable (its estimate over the window, or it
   holds one the provider already rejected as too long, nothing compacted since) is not
   sent: the overflow recovery runs instead.

Every decision is emitted as a `ContextDecided` event carrying the estimate, the threshold
and the window. The manager decides nothing itself, and its parts act: `Compactor`
(agent/compactor.py) is the one way a compaction runs (threshold, truncation, overflow,
idle, requested or manual), with the user's hooks, its notices and its failures;
`OverflowRecovery` (agent/overflow_recovery.py) is the one overflow recovery (invariant 8):
one compaction with a fresh, bounded summary prompt, and one retry only if that made the
context smaller and below the threshold. The summary requests (and a branch summary) are
agent/summary_request.py's, and every model call they make goes through the one `ModelCall`
the session injects. The models and settings are read from the session's configuration
(agent/session_config.py) each time; nothing pushes them here.

The tool list is one value the manager reads (`ToolListSource`: the built-in tools and the
session's MCP tools, agent/mcp/session_tools.py); a compaction that is kept takes a waiting
change of it in, since the prefix is rebuilt anyway.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from agent_server.agent.compaction_hooks import CompactionHookRunner
from agent_server.agent.compactor import Compactor

# Re-exported: the session and its users import them here.
from agent_server.agent.context_view import CompactionResult as CompactionResult
from agent_server.agent.context_view import ContextView as ContextView
from agent_server.agent.context_view import FixedTools, ToolListSource
from agent_server.agent.events import ContextDecided, EventSink, Notice
from agent_server.agent.overflow_recovery import OverflowRecovery
from agent_server.agent.overflow_recovery import RewindBy as RewindBy
from agent_server.agent.prefix_cache import PrefixCache
from agent_server.agent.provider_compaction import CompactionEngine, readable_compaction
from agent_server.agent.session_config import ContextConfig
from agent_server.agent.summary_request import ModelCall, Summaries
from agent_server.context.decision import ContextDecision, decide
from agent_server.context.estimate import estimate_context_tokens, estimate_prefix_tokens
from agent_server.context.projection import project
from agent_server.context.summary_prompt import CallFiles, no_files
from agent_server.context.trigger import (
    CompactionSettings,
    OversizedPrompt,
    compaction_threshold,
    find_oversized_prompt,
    has_uncompacted_truncation,
    requested_focus,
    step_position,
    window_limit,
)
from agent_server.errors import PromptTooLargeError
from agent_server.llm.messages import AssistantMessage, Context, Message, ToolSpec
from agent_server.llm.models import ModelInfo
from agent_server.llm.stream import CacheRetention
from agent_server.session.entries import CompactionEntry, CompactionReason, Entry
from agent_server.session.ledger import Ledger

log = logging.getLogger(__name__)


class ContextPolicy(Protocol):
    """A strategy for what each call sends. The product's is `CompactNearWindow`; the
    benchmarks measure older ones (benchmarks/strategies.py) through the same seam. A policy
    may keep its own state; the ledger stays the full, append-only record either way."""

    name: str

    async def prepare(self, view: ContextView, manager: ContextManager) -> ContextView:
        """The context the next call sends, given the ledger's view of it."""
        ...


class CompactNearWindow:
    """The product's policy: append only; compact once near the window (or after an answer
    cut off by it, or when the context holds one the provider already rejected)."""

    name = "default"

    async def prepare(self, view: ContextView, manager: ContextManager) -> ContextView:
        decision = manager.decide(view)
        reason = decision.reason
        if decision.action != "compact" or reason is None or reason == "oversized":
            return view
        focus = requested_focus(view.entries) if reason == "requested" else None
        result = await manager.compact(reason, view=view, instructions=focus)
        return result.view


class ContextManager:
    """Runs the context pipeline of one session: the view of each call, the decision on it,
    and the parts that act on it: the compactions (`compactor`), the overflow recovery
    (`overflow`: the one recovery of the current prompt, the last context the provider
    rejected as too long), the cached prefix's clock (`cache`: the time and retention of the
    last call that used it, whether the prefix is cold for the call being prepared). It owns
    the tool list, the window numbers and the unreadable compactions already said. The
    models, the compaction settings and the provider's API (its cache lifetimes and billing)
    are read from `config`, the session's configuration, each time they are needed."""

    def __init__(
        self,
        *,
        ledger: Ledger,
        system_prompt: str,
        tools: ToolListSource | tuple[ToolSpec, ...],
        config: ContextConfig,
        call: ModelCall,
        emit: EventSink,
        clock: Callable[[], float] = time.time,
        policy: ContextPolicy | None = None,
        files_of: CallFiles = no_files,
        hooks: CompactionHookRunner | None = None,
        rewind: RewindBy = "entry",
    ) -> None:
        """`rewind`: how the front end lets the user rewind (RewindBy); the advice of a
        failure that only a smaller history fixes follows it. `hooks` runs the
        compaction.hooks commands; `files_of` says what a tool call reads or writes, as its
        tool declares."""
        self.ledger = ledger
        self.system_prompt = system_prompt
        # The session's one tool list (part of the cached prefix): read through `tools`.
        self._tools: ToolListSource = FixedTools(tools) if isinstance(tools, tuple) else tools
        self.config = config
        self.policy: ContextPolicy = policy or CompactNearWindow()
        self.turn_id: str | None = None
        self._emit = emit
        self.cache = PrefixCache(ledger, config, clock)
        self.summaries = Summaries(
            call=call,
            config=config,
            system_prompt=system_prompt,
            tools=lambda: self.tools,
            on_cache_use=self.cache.record_call,
        )
        # Who writes a compaction's summary (compaction.engine): agent/provider_compaction.py.
        engine = CompactionEngine(
            summaries=self.summaries,
            call=call,
            config=config,
            system_prompt=system_prompt,
            tools=lambda: self.tools,
            notice=lambda text: self._emit(Notice(self.turn_id, "info", text)),
            on_cache_use=self.cache.record_call,
        )
        self.compactor = Compactor(
            ledger=ledger, config=config, engine=engine, tools=self._tools, cache=self.cache,
            emit=emit, turn_id=lambda: self.turn_id, view=self.view,
            view_of_entries=self._view_of_entries, prefix_tokens=self._prefix_tokens,
            files_of=files_of, hooks=hooks,
        )
        self.overflow = OverflowRecovery(
            config=config, emit=emit, turn_id=lambda: self.turn_id,
            compact=lambda view: self.compact("overflow", view=view),
            decide=self._decision_on, prefix_tokens=self._prefix_tokens, rewind=rewind,
        )
        self._unreadable_said: set[str] = set()  # provider compactions skipped, said once
        self._windows: dict[str, int] = {}  # compaction entry id -> its window number

    # --- state --------------------------------------------------------------------------

    @property
    def model(self) -> ModelInfo:
        return self.config.model

    @property
    def summary_model(self) -> ModelInfo:
        return self.config.summary_model

    @property
    def settings(self) -> CompactionSettings:
        return self.config.compaction

    @property
    def api(self) -> str:
        return self.config.api

    def begin_turn(self, turn_id: str | None) -> None:
        """A new prompt: it gets its own one overflow recovery."""
        self.turn_id = turn_id
        self.overflow.recovered = False

    def record_call(self, retention: CacheRetention | None = None) -> None:
        """A model call that read or wrote the session's cached prefix just ended, with that
        cache retention (None: the same as the last one)."""
        self.cache.record_call(retention)

    def pause(self) -> float | None:
        """Seconds since the last call that used the session's cache; None before any."""
        return self.cache.pause()

    def check_answer_read(self, view: ContextView, answer: AssistantMessage) -> None:
        """Say once per session when a local server cut the start of `view` without saying
        so (OverflowRecovery.check_answer_read)."""
        self.overflow.check_answer_read(view, answer)

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """The tool list every request and the cached summary request send now."""
        return self._tools.specs()

    @property
    def threshold(self) -> int:
        return compaction_threshold(self.model, self.settings)

    @property
    def compacts_above(self) -> int:
        """The context above which the next call compacts first: the threshold; with the
        automatic compaction off, the window (a context past it is not sent: the overflow
        recovery compacts it)."""
        return self.threshold if self.settings.enabled else self.model.context_window

    def share_of_threshold(self) -> float | None:
        """The ledger's context as a share of the threshold (the compact tool reads it);
        None when automatic compaction is off."""
        return self.view().tokens / self.threshold if self.settings.enabled else None


    # --- views ----------------------------------------------------------------------------

    def view(self) -> ContextView:
        """The ledger's context for the next call: projected once, estimated once. A
        provider's compaction the API in use cannot read (another provider's encrypted one,
        after a switch) is passed over: the history it stood for is read from the ledger,
        and compacted again, locally, when it does not fit."""
        api = self.api
        entries = self.ledger.tree.projection_entries(
            readable=lambda compaction: readable_compaction(compaction, api)
        )
        skipped = [e for e in entries
                   if isinstance(e, CompactionEntry) and not readable_compaction(e, api)]
        for entry in skipped:
            if entry.id not in self._unreadable_said:
                self._unreadable_said.add(entry.id)
                self._emit(Notice(self.turn_id, "info", _unreadable_notice(entry, api)))
        # Usage measured with the skipped compaction measured another context: none counts.
        return self._view_of_entries(tuple(e for e in entries if e not in skipped),
                                     measured=not skipped)

    def view_of(self, messages: Sequence[Message]) -> ContextView:
        """A view of a policy's own messages (with the session's system prompt and tools)."""
        context = Context(self.system_prompt, self.tools, tuple(messages))
        estimate = estimate_context_tokens(context, fresh_from=len(context.messages))
        return ContextView(context, estimate, self.model)

    def _view_of_entries(self, entries: tuple[Entry, ...], measured: bool = True) -> ContextView:
        projection = project(entries, self.api)
        context = Context(self.system_prompt, self.tools, projection.messages)
        fresh_from = projection.fresh_from if measured else len(projection.messages)
        estimate = estimate_context_tokens(context, fresh_from=fresh_from)
        return ContextView(context, estimate, self.model, entries, projection)

    def window_number(self, view: ContextView) -> int:
        """The cache cycle the view belongs to: compactions on its branch + 1, from the
        ledger (counted once per compaction entry)."""
        compaction = view.compaction
        if compaction is None:
            return 1
        number = self._windows.get(compaction.id)
        if number is None:
            number = 1 + self.ledger.tree.compactions_on_branch(compaction.id)  # the index only
            self._windows[compaction.id] = number
        return number

    # --- the pipeline ---------------------------------------------------------------------

    async def prepare(self) -> ContextView:
        """The context the next call sends (see the module docstring for the steps).

        Raises PromptTooLargeError for a prompt that cannot fit even alone, and
        ContextOverflowError when the context is known not to fit and could not be made to.
        """
        view = self.view()
        cold = self.cache.cold_pause()
        self.cache.cold = cold is not None
        try:
            decision = self._decision_on(view)
            if decision.action == "refuse":
                raise self._refusal(view, decision)
            if cold is not None:
                self._emit(Notice(self.turn_id, "info", self.cache.cold_notice(view, *cold)))
            view = await self.policy.prepare(view, self)
        finally:
            self.cache.cold = False
        unsendable = self._decision_on(view).unsendable
        if unsendable is None:
            return view
        problem = self.overflow.problem(view, unsendable)
        return await self.overflow.recover(view, problem, rejected=False)

    def decide(self, view: ContextView) -> ContextDecision:
        """The decision on `view` (context.decision.decide), emitted as ContextDecided."""
        decision = self._decision_on(view)
        self._announce(decision)
        return decision

    def _decision_on(self, view: ContextView) -> ContextDecision:
        """context.decision.decide on `view`, with what the ledger, the clock and the last
        rejection say of it; not emitted."""
        compaction = view.compaction
        return decide(
            view.tokens,
            self.model,
            self.settings,
            oversized=self._oversized(view) is not None,
            truncated=has_uncompacted_truncation(view.entries),
            holds_rejected=self.overflow.holds_rejected(view),
            next_step_tokens=view.estimate.trailing_tokens,
            cold=self.cache.cold,
            position=step_position(view.entries),
            answer_tokens=view.answer_tokens,
            compacted_to=compaction.tokens_after if compaction is not None else None,
        )

    async def recover_overflow(
        self,
        view: ContextView,
        problem: str,
        *,
        rejected: bool,
        server_window: int | None = None,
    ) -> ContextView:
        """The one overflow recovery of the current prompt (invariant 8).

        `view` is the context that was rejected (`rejected`) or that was not sent because it
        is known not to fit. One compaction with a fresh, bounded summary prompt; returns the
        context after it, to retry once with, when it is smaller and below the threshold.
        Raises ContextOverflowError, saying what to do, when it gives up: a second overflow
        of the same prompt, compaction off, or a compaction that did not make it fit.
        `server_window` is the window the server said it has: when it is below the window
        configured for a model only that server knows, the setting is wrong and compacting
        for the configured window would not help: the error says so at once.
        """
        return await self.overflow.recover(
            view, problem, rejected=rejected, server_window=server_window
        )

    async def compact(
        self,
        reason: CompactionReason,
        *,
        view: ContextView | None = None,
        instructions: str | None = None,
    ) -> CompactionResult:
        """Fold the older history into a summary, once (Compactor.run: appends one
        CompactionEntry, or nothing). A manual compaction is announced as its decision; an
        overflow compaction is the prompt's one recovery."""
        view = view or self.view()
        if reason == "manual":
            self._announce(decide(view.tokens, self.model, self.settings, manual=True))
        if reason == "overflow":
            self.overflow.recovered = True
        return await self.compactor.run(reason, view, instructions)

    async def summarise(self, messages: Sequence[Message], previous: str | None) -> str:
        """A fresh summary of `messages`, folding in `previous`: for policies that keep their
        own summaries (the benchmarks' baselines)."""
        return await self.summaries.of_messages(messages, previous)

    async def summarise_branch(self, entries: Sequence[Entry]) -> str:
        """A short summary of a branch left by a rewind (its entries, oldest first), as pi
        does on tree navigation; "" when there is nothing to summarise."""
        return await self.summaries.of_branch(entries)

    # --- pieces ---------------------------------------------------------------------------

    def _prefix_tokens(self) -> int:
        return estimate_prefix_tokens(self.system_prompt, self.tools)

    def _oversized(self, view: ContextView) -> OversizedPrompt | None:
        return find_oversized_prompt(
            view.entries,
            prefix_tokens=self._prefix_tokens(),
            threshold=window_limit(self.model, self.settings),
        )

    def _refusal(self, view: ContextView, decision: ContextDecision) -> PromptTooLargeError:
        """The refusal of the prompt of `view`, too large even alone (`decision`, announced)."""
        oversized = self._oversized(view)
        assert oversized is not None
        self._announce(decision)
        return PromptTooLargeError(
            f"Your message is too large to send: about {oversized.tokens:,} tokens, and "
            f"{self.model.id} can take at most about {oversized.limit:,} in one message while "
            f"leaving room for an answer ({self.model.context_window:,}-token window). It was "
            "not sent, and the conversation continues from before it. Shorten it: send only "
            "the part that matters, or save it to a file in the workspace and ask the agent to "
            "read or search it.",
            entry_id=oversized.entry_id,
        )

    def _announce(self, decision: ContextDecision) -> None:
        log.debug(
            "context decision: %s (%s) at %d tokens, threshold %d, window %d",
            decision.action,
            decision.reason,
            decision.tokens,
            decision.threshold,
            decision.window,
        )
        self._emit(ContextDecided(self.turn_id, decision))


def _unreadable_notice(compaction: CompactionEntry, api: str) -> str:
    made_by = compaction.provider.api if compaction.provider is not None else "the provider"
    return (
        f"The history was compacted by {made_by}, whose summary only it can read; {api} is "
        "sent the history it stood for instead (from the session's record), summarised by "
        "agent-server if it does not fit."
    )
