"""Context management in one place: what each model call sends, and why.

Before each model call of a turn, `ContextManager.prepare` runs one pipeline, in this order
(each decision a pure function of `context/`):

1. **view**: project the ledger (`context.projection.project`) and estimate it
   (`context.estimate`), once, into a `ContextView`; and whether the pause since the last
   call outlived the provider's cache (`llm.cache_ttl`): the prefix is then cold, the editor
   is told what the pause costs (a Notice with tokens and dollars), the trigger may compact
   at once (reason "idle"), and a summary asked for then is sent without cache marks (a cache
   write would be dearer than the input price, and nothing would read it);
2. **refuse**: a prompt that cannot fit even alone (`context.trigger.find_oversized_prompt`)
   is refused before anything is sent (PromptTooLargeError);
3. **policy**: the context policy turns the view into the one to send. The product's policy,
   `CompactNearWindow`, decides (`context.trigger.decide`: the threshold, a cut-off answer,
   a size the provider already rejected) and compacts when it must; the benchmarks plug
   their strategies in here instead (benchmarks/strategies.py);
4. **guard**: a context whose estimate is over the window, or that holds one the provider
   already rejected as too long (nothing compacted since), is not sent: the overflow
   recovery runs instead.

Every decision is emitted as a `ContextDecided` event carrying the estimate, the threshold
and the window. `recover_overflow` is the one overflow recovery (invariant 8): one compaction
with a fresh, bounded summary prompt (never a resend of the rejected request), and one retry
only if that made the context smaller and below the threshold. `compact` is the one way a
compaction runs (threshold, truncation, overflow or manual); its summary requests (and a
branch summary) are agent/summary_request.py's, and every model call they make goes through
the one `ModelCall` the session injects. The models and settings are read from the session's
configuration (agent/session_config.py) each time; nothing pushes them here.

The tool list is one value the manager reads (`ToolListSource`: the built-in tools and the
session's MCP tools, agent/mcp/session_tools.py); a compaction that is kept takes a waiting
change of it in, since the prefix is rebuilt anyway.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol, TypeAlias

from agent_server.agent.compaction_hooks import CANCELLABLE, BeforeVerdict, CompactionHookRunner
from agent_server.agent.events import (
    CompactionFinished,
    CompactionStarted,
    ContextDecided,
    EventSink,
    Notice,
    OverflowHappened,
)
from agent_server.agent.provider_compaction import CompactionEngine, readable_compaction
from agent_server.agent.session_config import ContextConfig
from agent_server.agent.summary_request import ModelCall, Summaries
from agent_server.context.carried import carried_budgets, carry
from agent_server.context.cut_point import CutPoint, find_cut_point
from agent_server.context.estimate import (
    ContextEstimate,
    estimate_context_tokens,
    estimate_prefix_tokens,
    estimate_text_floor,
    estimate_text_tokens,
    estimate_weighted_tokens,
    has_real_usage,
)
from agent_server.context.projection import Projection, is_prompt, project
from agent_server.context.summary_prompt import (
    SUMMARY_OUTPUT_TOKENS,
    CallFiles,
    extract_file_operations,
    no_files,
)
from agent_server.context.trigger import (
    CompactionSettings,
    ContextAction,
    ContextDecision,
    DecisionReason,
    compaction_threshold,
    compacts_when_cold,
    decide,
    find_oversized_prompt,
    has_uncompacted_truncation,
    last_step_tokens,
    max_kept_tokens,
    requested_focus,
    reserve_tokens,
    step_position,
    window_limit,
)
from agent_server.errors import ContextOverflowError, PromptTooLargeError, ProviderError
from agent_server.llm.cache_ttl import describe_seconds
from agent_server.llm.cost import rewrite_cost
from agent_server.llm.messages import (
    AssistantMessage,
    Context,
    Message,
    TextContent,
    ToolResultMessage,
    ToolSpec,
    Usage,
)
from agent_server.llm.models import ModelInfo
from agent_server.llm.overflow import cut_without_saying
from agent_server.llm.providers import bills_cache_writes, cache_ttl
from agent_server.llm.stream import CacheRetention
from agent_server.session.entries import (
    CompactionEntry,
    CompactionReason,
    Entry,
    MessageEntry,
    timestamp_seconds,
)
from agent_server.session.ledger import Ledger
from agent_server.stderr_log import shorten

log = logging.getLogger(__name__)

# How the front end lets the user rewind, which the advice of an overflow it cannot recover
# from follows: to an entry, by its id ("entry": the editor); to before a prompt picked from
# a numbered list ("prompt": the terminal's /rewind); not at all ("none": an ACP editor).
RewindBy: TypeAlias = Literal["entry", "prompt", "none"]

Outcome = Literal["compacted", "noop", "failed", "cancelled"]
# How an overflow was found: the provider rejected the request, or its estimate was too large.
Rejection = Literal["rejected", "estimated"]


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


def last_cache_use(ledger: Ledger) -> tuple[float | None, CacheRetention]:
    """When the session's cache was last used (seconds on the session's clock, which stamps
    the ledger) and with what retention, by the latest model answer in the ledger that
    recorded them; (None, "short") when none did."""
    entry = ledger.last_call
    at = timestamp_seconds(entry.timestamp) if entry is not None else None
    if entry is None or entry.cache_retention is None or at is None:
        return None, "short"
    return at, entry.cache_retention


class ContextManager:
    """Runs the context pipeline of one session and owns its state: the one overflow
    recovery of the current prompt, the last context the provider rejected as too long, the
    time and cache retention of the last call that used the session's cache, whether the
    prefix is cold for the call being prepared, and the window numbers. The models, the
    compaction settings and the provider's API (its cache lifetimes and billing) are read
    from `config`, the session's configuration, each time they are needed."""

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
        failure that only a smaller history fixes follows it."""
        self.ledger = ledger
        self.rewind = rewind
        self.hooks = hooks  # runs the compaction.hooks commands
        self.system_prompt = system_prompt
        # The session's one tool list (part of the cached prefix): read through `tools`.
        self._tools: ToolListSource = FixedTools(tools) if isinstance(tools, tuple) else tools
        self.config = config
        self.policy: ContextPolicy = policy or CompactNearWindow()
        self._files_of = files_of  # what a tool call reads or writes, as its tool declares
        self.summaries = Summaries(
            call=call,
            config=config,
            system_prompt=system_prompt,
            tools=lambda: self.tools,
            on_cache_use=self.record_call,
        )
        # Who writes a compaction's summary (compaction.engine): agent/provider_compaction.py.
        self.engine = CompactionEngine(
            summaries=self.summaries,
            call=call,
            config=config,
            system_prompt=system_prompt,
            tools=lambda: self.tools,
            notice=lambda text: self._emit(Notice(self.turn_id, "info", text)),
            on_cache_use=self.record_call,
        )
        self._unreadable_said: set[str] = set()  # provider compactions skipped, said once
        # The last call that used the cache: from the ledger when the session is opened again
        # (unknown in a ledger that does not record it: never cold until the next call).
        self.last_call_at, self.last_retention = last_cache_use(ledger)
        self.turn_id: str | None = None
        self._call = call
        self._emit = emit
        self._clock = clock
        self._recovered = False
        self._rejected: tuple[str, ContextView] | None = None  # (model id, the view)
        self._windows: dict[str, int] = {}  # compaction entry id -> its window number
        self._cold = False  # the prefix of the call being prepared is cold
        self._above_said = False  # a compaction left the context above the threshold: said
        self._cut_said = False  # a local server cut the prompt without saying so: said once

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
        self._recovered = False

    def record_call(self, retention: CacheRetention | None = None) -> None:
        """A model call that read or wrote the session's cached prefix just ended, with that
        cache retention (None: the same as the last one)."""
        self.last_call_at = self._clock()
        if retention is not None:
            self.last_retention = retention

    def check_answer_read(self, view: ContextView, answer: AssistantMessage) -> None:
        """Say once per session when a local server's answer to `view` reports fewer prompt
        tokens than the chars/4 floor of what was sent: the server cut the start of the
        conversation without an error (Ollama past its `num_ctx`), and the model has not seen
        the system prompt or the first messages. Nothing is compacted: the window the server
        serves is the fix, not a smaller request."""
        if self._cut_said or self.model.vendor != "local" or not has_real_usage(answer):
            return
        assert answer.usage is not None
        reported = answer.usage.prompt_tokens
        # chars/4 of the whole context (the view's, already counted) bounds the floor from
        # above: a server that read that much is not suspected, and the floor is not walked.
        if not cut_without_saying(reported, view.estimate.full_estimate):
            return
        floor = estimate_text_floor(view.context)
        if not cut_without_saying(reported, floor):
            return
        self._cut_said = True
        self._emit(Notice(self.turn_id, "warning", (
            f"The server says it read {reported:,} prompt tokens of a request of at least "
            f"{floor:,} tokens: it cut the start of the conversation without saying so, and "
            f"{self.model.id} has not seen the system prompt or the first messages. Start the "
            "server with a larger context (Ollama: OLLAMA_CONTEXT_LENGTH or num_ctx; "
            "llama.cpp: -c; vLLM: --max-model-len) and set 'contextWindow' to it."
        )))

    def pause(self) -> float | None:
        """Seconds since the last call that used the session's cache; None before any."""
        return None if self.last_call_at is None else self._clock() - self.last_call_at

    def cold_pause(self) -> tuple[float, float] | None:
        """(pause, cache lifetime) when the pause since the last call outlived the cache the
        last call used (the next call writes the prefix again); else None."""
        pause = self.pause()
        ttl = cache_ttl(self.api, self.model, self.last_retention)
        if pause is None or ttl is None or pause <= ttl:
            return None
        return pause, ttl

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
        entries = self.ledger.projection_entries(
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
        compaction = _latest_compaction(view)
        if compaction is None:
            return 1
        number = self._windows.get(compaction.id)
        if number is None:
            number = 1 + self.ledger.compactions_on_branch(compaction.id)  # the index only
            self._windows[compaction.id] = number
        return number

    # --- the pipeline ---------------------------------------------------------------------

    async def prepare(self) -> ContextView:
        """The context the next call sends (see the module docstring for the steps).

        Raises PromptTooLargeError for a prompt that cannot fit even alone, and
        ContextOverflowError when the context is known not to fit and could not be made to.
        """
        view = self.view()
        self._refuse_oversized(view)
        cold = self.cold_pause()
        self._cold = cold is not None
        if cold is not None:
            self._emit(Notice(self.turn_id, "info", self._cold_notice(view, *cold)))
        try:
            view = await self.policy.prepare(view, self)
        finally:
            self._cold = False
        problem = self._known_too_large(view)
        if problem is None:
            return view
        return await self.recover_overflow(view, problem, rejected=False)

    def decide(self, view: ContextView) -> ContextDecision:
        """The decision on `view` (context.trigger.decide), emitted as ContextDecided."""
        decision = decide(
            view.tokens,
            self.model,
            self.settings,
            truncated=has_uncompacted_truncation(view.entries),
            holds_rejected=self._holds_rejected(view),
            next_step_tokens=view.estimate.trailing_tokens,
            cold=self._cold,
            position=step_position(view.entries),
            answer_tokens=_answer_tokens(view),
            compacted_to=_compacted_to(view),
        )
        self._announce(decision)
        return decision

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
        turn_id = self.turn_id or ""
        kind: Rejection = "rejected" if rejected else "estimated"
        if rejected and view.entries:
            self._rejected = (self.model.id, view)
        mismatch = self._window_mismatch(server_window)
        if mismatch is not None:
            log.info("overflow: %s", shorten(problem, 500))
            self._emit(OverflowHappened(turn_id, kind, "gaveUp", mismatch))
            raise ContextOverflowError(mismatch)
        if self._recovered or not self.settings.enabled:
            raise self._give_up(turn_id, kind, view)
        # What happens, not the provider's advice to the user (its "compact and try again"
        # is what is being done): the provider's words go to the log.
        if rejected:
            log.info("overflow: %s", shorten(problem, 500))
            what = (
                f"{self.model.id} refused the request as too long for its context window "
                f"({self.model.context_window:,} tokens)."
            )
        else:
            what = problem
        self._emit(
            OverflowHappened(
                turn_id,
                kind,
                "compacting",
                f"{what} Compacting the history once, then retrying.",
            )
        )
        result = await self.compact("overflow", view=view)
        after = result.view
        if (
            result.outcome == "compacted"
            and after.tokens < view.tokens
            and after.tokens <= window_limit(self.model, self.settings)
            and self._known_too_large(after) is None
        ):
            self._emit(
                OverflowHappened(
                    turn_id,
                    kind,
                    "retrying",
                    f"Compacted the history ({view.tokens} -> {after.tokens} tokens); "
                    "retrying once.",
                )
            )
            return after
        raise self._give_up(turn_id, kind, after)

    def _give_up(
        self, turn_id: str, kind: Rejection, view: ContextView
    ) -> ContextOverflowError:
        message = self.gave_up_message(view)
        self._emit(OverflowHappened(turn_id, kind, "gaveUp", message))
        return ContextOverflowError(message)

    def _window_mismatch(self, server_window: int | None) -> str | None:
        """What to do when the server says its window is below the one configured for a
        model only it knows (the `contextWindow` setting, or the model's entry in the
        models file); None when it said no window, or not a smaller one."""
        model = self.model
        if server_window is None or model.vendor != "local":
            return None
        if server_window >= model.context_window:
            return None
        said = (
            f"The server refused the request as too long: it says {model.id} takes at most "
            f"{server_window:,} tokens, less than the {model.context_window:,} agent-server "
            "was told ('contextWindow'), so compacting for that window would not help."
        )
        smaller = replace(model, context_window=server_window,
                          max_output=min(model.max_output, server_window // 4))
        reserve = reserve_tokens(smaller, self.settings)
        if server_window <= reserve + self._prefix_tokens():
            return (
                f"{said} {server_window:,} tokens is too small for agent-server (the system "
                f"prompt and tools, and {reserve:,} tokens kept for the answer): start the "
                "server with a larger context (Ollama: OLLAMA_CONTEXT_LENGTH or num_ctx; "
                "llama.cpp: -c; vLLM: --max-model-len) and set 'contextWindow' to it."
            )
        return (
            f"{said} Set 'contextWindow' to {server_window} (the setting, or the model's "
            "entry in the models file), or start the server with a larger context and set "
            "'contextWindow' to that."
        )

    def gave_up_message(self, view: ContextView) -> str:
        """Why the request cannot be sent, naming the largest message and what to do."""
        window = self.model.context_window
        largest = _largest_message(view)
        what = ""
        if largest is not None:
            entry_id, message, tokens = largest
            about = f" The largest message is {_describe(message)}"
            if self.rewind == "entry":
                where = f" (entry {entry_id})" if entry_id else ""
                what = (
                    f"{about}{where}, about {tokens:,} tokens: rewind to before it, or "
                    "shorten it."
                )
            elif self.rewind == "prompt":
                what = (
                    f"{about}, about {tokens:,} tokens: /rewind to before "
                    f"{_prompt_before(view, entry_id)}, or shorten it."
                )
            else:
                what = (
                    f"{about}, about {tokens:,} tokens: start a new session and give it less "
                    "at once (a smaller message, a file to read in parts)."
                )
        off = "" if self.settings.enabled else " Automatic compaction is off (compaction.enabled)."
        return (
            f"The request is too large for {self.model.id}'s context window ({window:,} tokens) "
            f"and compacting could not make it fit.{what}{off}"
        )

    # --- compaction -----------------------------------------------------------------------

    async def compact(
        self,
        reason: CompactionReason,
        *,
        view: ContextView | None = None,
        instructions: str | None = None,
    ) -> CompactionResult:
        """Fold the older history into a summary, once: append one CompactionEntry, or
        nothing when there is nothing to summarise ("noop"), the summary failed, or it did not
        make the context smaller ("failed")."""
        view = view or self.view()
        before = view.tokens
        self._starting(reason, before)
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
            self._emit(Notice(self.turn_id, "info", message))
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
            carried_budgets(self.threshold),
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
                # Sent without cache marks when the prefix is cold (before a call, or a manual
                # compaction after a pause): writing it would cost more than the input price,
                # and after the compaction no request begins with it.
                shares_cache=not self._cold and self.cold_pause() is None,
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
        fields: dict[str, Any] = {
            "summary": written.summary,
            "first_kept_entry_id": cut.first_kept_entry_id,
            "tokens_before": before,
            "reason": reason,
            "details": details,
            "split_turn_summary": written.split_turn_summary,
            "model": self.model.id if written.provider else self.summary_model.id,
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
        hooks = self.settings.hooks
        if self.hooks is None or not hooks.before:
            return BeforeVerdict()
        event = {"tokens": view.tokens, "threshold": self.threshold,
                 "window": self.model.context_window, "model": self.model.id,
                 "instructions": instructions}
        verdict = await self.hooks.before(hooks, reason, event)
        for problem in verdict.problems:
            self._emit(Notice(self.turn_id, "warning", f"Compaction hook failed: {problem}"))
        if verdict.cancel and reason not in CANCELLABLE:
            self._emit(Notice(self.turn_id, "warning", (
                f"{verdict.reason[:1].upper()}{verdict.reason[1:]}: asked to cancel the "
                f"compaction, but it runs anyway: the context does not fit without it ({reason})."
            )))
        return verdict

    async def _after_hooks(self, entry: CompactionEntry) -> None:
        """The `compaction.hooks.after` commands, given the compaction just kept."""
        hooks = self.settings.hooks
        if self.hooks is None or not hooks.after:
            return
        event = {"tokensBefore": entry.tokens_before, "tokensAfter": entry.tokens_after,
                 "summary": entry.summary, "firstKeptEntryId": entry.first_kept_entry_id,
                 "model": self.model.id}
        for problem in await self.hooks.after(hooks, entry.reason, event):
            self._emit(Notice(self.turn_id, "warning", f"Compaction hook failed: {problem}"))

    def _starting(self, reason: CompactionReason, tokens: int) -> None:
        """What a compaction for `reason` announces and marks before it starts."""
        if reason == "manual":
            self._announce(self._decision("compact", "manual", tokens))
        if reason == "overflow":
            self._recovered = True  # an overflow compaction is the prompt's one recovery
        if reason == "truncation":
            self._emit(
                OverflowHappened(
                    self.turn_id or "",
                    "truncated",
                    "compacting",
                    "The last answer was cut off by the context window; compacting the history.",
                )
            )

    def _keep(
        self, compaction_id: str, view: ContextView, fields: dict[str, Any]
    ) -> CompactionResult:
        """The compaction with these `fields` (a CompactionEntry's) appended, when it makes
        `view` smaller; else discarded ("failed")."""
        before, reason = view.tokens, fields["reason"]
        candidate = CompactionEntry(
            id="", parent_id=self.ledger.leaf_id, timestamp="", tokens_after=None, **fields
        )
        after = self._view_of_entries((*view.entries, candidate))
        if after.tokens >= before:
            return self._failed(
                compaction_id,
                reason,
                view,
                f"the summary did not make the context smaller ({before} -> {after.tokens} "
                "tokens); it was discarded",
            )
        entry = self.ledger.append_compaction(tokens_after=after.tokens, **fields)
        tools = self.tools
        self._tools.after_compaction()  # the prefix is rebuilt: a waiting tool change comes in
        self.ledger.sync()
        if self.tools != tools:
            after = self.view()  # with the new list (and its toolList entry)
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
        if after.tokens > self.threshold and not self._above_said:
            self._above_said = True
            self._emit(Notice(self.turn_id, "warning", self._left_above_notice(entry, after)))
        return CompactionResult("compacted", reason, before, after.tokens, after, entry)

    def _left_above_notice(self, entry: CompactionEntry, after: ContextView) -> str:
        """Why a compaction left the context above the threshold, and what to do (said once:
        left_above_by_compaction keeps the next threshold compaction from running for it)."""
        pins = entry.carried.pins if entry.carried is not None else ()
        pinned = sum(estimate_text_tokens(pin.text) for pin in pins)
        of_pins = f"{len(pins)} pins of about {pinned:,} tokens, " if pins else ""
        message = (
            f"The history was compacted to about {after.tokens:,} tokens, still over the "
            f"compaction threshold of {self.threshold:,}: what every compaction keeps (the "
            f"system prompt and tools, your messages, {of_pins}the last turns) takes that much."
        )
        if after.tokens <= window_limit(self.model, self.settings):
            more = max_kept_tokens(self.model, self.settings)
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
        scale = 1.0
        prompt_tokens: int | None = (
            window_limit(self.model, self.settings) - self._prefix_tokens() - SUMMARY_OUTPUT_TOKENS
        )  # a prompt awaiting its answer stays verbatim while the summary fits beside it
        if reason == "overflow":
            scale = min(1.0, view.tokens / self.model.context_window)
            prompt_tokens = None
        return find_cut_point(
            view.entries,
            keep_recent_tokens=int(self.settings.keep_recent_tokens * scale),
            keep_recent_turns=self.settings.keep_recent_turns,
            max_kept_tokens=int(max_kept_tokens(self.model, self.settings) * scale),
            last_step_tokens=int(last_step_tokens(self.model, self.settings) * scale),
            prompt_tokens=prompt_tokens,
        )

    def _failed(
        self, compaction_id: str, reason: CompactionReason, view: ContextView, problem: str
    ) -> CompactionResult:
        self._emit(
            CompactionFinished(compaction_id, reason, "failed", view.tokens, error=problem)
        )
        self._emit(Notice(self.turn_id, "warning", f"Compaction failed: {problem}"))
        return CompactionResult("failed", reason, view.tokens, view.tokens, view, error=problem)

    async def summarise(self, messages: Sequence[Message], previous: str | None) -> str:
        """A fresh summary of `messages`, folding in `previous`: for policies that keep their
        own summaries (the benchmarks' baselines)."""
        return await self.summaries.of_messages(messages, previous)

    async def summarise_branch(self, entries: Sequence[Entry]) -> str:
        """A short summary of a branch left by a rewind (its entries, oldest first), as pi
        does on tree navigation; "" when there is nothing to summarise."""
        return await self.summaries.of_branch(entries)

    # --- pieces ---------------------------------------------------------------------------

    def _cold_notice(self, view: ContextView, pause: float, ttl: float) -> str:
        """What the pause costs: the cached prefix written (or sent) again instead of read."""
        index = view.estimate.last_usage_index
        last = view.messages[index] if index is not None else None
        usage = last.usage if isinstance(last, AssistantMessage) else None
        tokens = usage.prompt_tokens if usage is not None else view.tokens
        dollars = rewrite_cost(
            self.model.pricing,
            tokens,
            bills_writes=bills_cache_writes(self.api, self.model),
            long=self.last_retention == "long",
        )
        message = (
            f"The prompt cache expired during the {describe_seconds(pause)} pause (the "
            f"provider keeps it {describe_seconds(ttl)}): the {tokens:,} tokens cached before "
            f"it are sent again, about ${dollars:.2f} more than reading them from the cache."
        )
        if compacts_when_cold(view.tokens, self.model, self.settings):
            share = self.settings.cold_cache_share
            message += (
                f" The history is past {share:.0%} of the compaction threshold, so it is "
                "compacted now: the rewrite costs the same either way, and what is written "
                "is smaller."
            )
        return message

    def _prefix_tokens(self) -> int:
        return estimate_prefix_tokens(self.system_prompt, self.tools)

    def _refuse_oversized(self, view: ContextView) -> None:
        oversized = find_oversized_prompt(
            view.entries,
            prefix_tokens=self._prefix_tokens(),
            threshold=window_limit(self.model, self.settings),
        )
        if oversized is None:
            return
        self._announce(self._decision("refuse", "oversized", view.tokens))
        raise PromptTooLargeError(
            f"Your message is too large to send: about {oversized.tokens:,} tokens, and "
            f"{self.model.id} can take at most about {oversized.limit:,} in one message while "
            f"leaving room for an answer ({self.model.context_window:,}-token window). It was "
            "not sent, and the conversation continues from before it. Shorten it: send only "
            "the part that matters, or save it to a file in the workspace and ask the agent to "
            "read or search it.",
            entry_id=oversized.entry_id,
        )

    def _known_too_large(self, view: ContextView) -> str | None:
        """Why `view` must not be sent, if it is known not to fit; else None."""
        window = self.model.context_window
        if view.tokens > window:
            return (
                f"The request would be about {view.tokens:,} tokens, over {self.model.id}'s "
                f"context window of {window:,}: it was not sent."
            )
        if self._holds_rejected(view):
            return (
                f"The request holds one {self.model.id} already rejected as too long (nothing "
                "was compacted since): it was not sent."
            )
        return None

    def _holds_rejected(self, view: ContextView) -> bool:
        """Whether `view` extends the context the provider last rejected as too long: same
        model, same latest compaction, and the rejected context's last entry on its path."""
        if self._rejected is None or view.projection is None:
            return False
        model_id, rejected = self._rejected
        if model_id != self.model.id or rejected.projection is None or not rejected.entries:
            return False
        last = rejected.entries[-1].id
        return _compaction_id(rejected) == _compaction_id(view) and any(
            entry.id == last for entry in view.entries
        )

    def _decision(
        self, action: ContextAction, reason: DecisionReason, tokens: int
    ) -> ContextDecision:
        return ContextDecision(action, reason, tokens, self.threshold, self.model.context_window)

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


def _latest_compaction(view: ContextView) -> CompactionEntry | None:
    return view.projection.compaction if view.projection is not None else None


def _compaction_id(view: ContextView) -> str | None:
    compaction = _latest_compaction(view)
    return compaction.id if compaction is not None else None


def _compacted_to(view: ContextView) -> int | None:
    """The tokens the latest compaction of `view` left (its tokens after), if known."""
    compaction = _latest_compaction(view)
    return compaction.tokens_after if compaction is not None else None


def _answer_tokens(view: ContextView) -> int:
    """The output of the answer whose usage the estimate starts from: with the messages
    after it, what the last step added."""
    index = view.estimate.last_usage_index
    message = view.messages[index] if index is not None else None
    if isinstance(message, AssistantMessage) and message.usage is not None:
        return message.usage.output
    return 0


def _largest_message(view: ContextView) -> tuple[str | None, Message, int] | None:
    """(entry id, message, tokens) of the largest message of the view."""
    best: tuple[str | None, Message, int] | None = None
    for index, message in enumerate(view.messages):
        tokens = estimate_weighted_tokens(message)
        if best is None or tokens > best[2]:
            entry_id = view.projection.entry_ids[index] if view.projection is not None else None
            best = (entry_id, message, tokens)
    return best


def _prompt_before(view: ContextView, entry_id: str | None) -> str:
    """The user's prompt at or before the entry `entry_id` in `view`, as /rewind lists it
    (its first words), or a description when the view does not hold it."""
    index = next((i for i, e in enumerate(view.entries) if e.id == entry_id), None)
    for entry in reversed(view.entries[: index + 1] if index is not None else ()):
        message = entry.message if isinstance(entry, MessageEntry) else None
        if message is not None and is_prompt(message):
            typed = " ".join(b.text for b in message.typed if isinstance(b, TextContent))
            words = " ".join(typed.split())
            return f'your prompt "{words[:60]}{"…" if len(words) > 60 else ""}"'
    return "the prompt that brought it in"


def _describe(message: Message) -> str:
    if isinstance(message, ToolResultMessage):
        return f"the result of the tool call {message.tool_name}"
    if isinstance(message, AssistantMessage):
        return "an answer of the model"
    return "an editor note" if message.note is not None else "a message of yours"
