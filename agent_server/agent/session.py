"""An agent session: one ledger, one model, the tools, and the turn loop that ties them.

A turn appends the user's prompt, then repeats: prepare the context (project the ledger,
estimate, compact when near the window or after a cut-off answer), stream the model's answer,
append it, run the tools it asks for, append their results (a turn the provider paused is
called again as it stands, which continues it); until the model stops or the step limit is
reached. Everything goes into the ledger as it happens, so a crash or a cancel loses
nothing and never leaves a tool call unanswered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agent_server.agent.compaction import (
    SUMMARY_OUTPUT_TOKENS,
    SUMMARY_SYSTEM_PROMPT,
    CompactionOutcome,
    Compactor,
)
from agent_server.agent.events import (
    AgentEvent,
    CompactionReason,
    EventSink,
    Notice,
    OverflowHappened,
    TextChunk,
    ThinkingChunk,
    TurnEnded,
    TurnStarted,
    TurnStopReason,
    UsageSnapshot,
    UsageUpdated,
    ignore_events,
)
from agent_server.agent.file_watch import FileWatch, external_edit_note
from agent_server.agent.model_call import CallAttempt, RetryPolicy, call_model
from agent_server.agent.permissions import AskCallback, PermissionGate
from agent_server.agent.policy import ContextPolicy, PolicyView
from agent_server.agent.settings import AgentSettings
from agent_server.agent.tool_runner import ToolRunner, aborted_result
from agent_server.agent.tools import Tool, ToolContext
from agent_server.agent.tools.files import LOCAL_FILES, FileAccess
from agent_server.context.estimate import estimate_context_tokens
from agent_server.context.projection import project
from agent_server.context.summary_prompt import build_summary_prompt
from agent_server.context.trigger import (
    CompactionSettings,
    compaction_threshold,
    has_uncompacted_truncation,
    should_compact,
)
from agent_server.errors import (
    AgentServerError,
    ContextOverflowError,
    ProviderError,
    SessionBusyError,
)
from agent_server.llm.cost import SessionTotals
from agent_server.llm.messages import (
    AssistantMessage,
    Context,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserContent,
    UserMessage,
)
from agent_server.llm.models import ModelInfo
from agent_server.llm.stream import (
    CallOptions,
    Provider,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
)
from agent_server.session.entries import CompactionEntry, Entry, MessageEntry, entry_to_json
from agent_server.session.ledger import Ledger

log = logging.getLogger(__name__)

# Entry types an editor shows (the system prompt and unknown future types are not).
DISPLAYED_ENTRIES = frozenset(("message", "compaction", "branch", "modelChange", "title"))
GAVE_UP = (
    "The request is still too large for the model's context window after compacting. "
    "Remove or shorten a large message (for example a pasted file), or rewind to before it."
)
TRUNCATION_NOTICE = (
    "The answer was cut off by the context window. The history will be compacted before the "
    "next request; say 'continue' to carry on."
)


@dataclass(frozen=True, slots=True)
class TurnResult:
    turn_id: str
    stop_reason: TurnStopReason
    usage: Usage
    error: str | None = None
    error_code: str | None = None


@dataclass(frozen=True, slots=True)
class ModelSetup:
    """What a turn needs from the settings: the provider to call and the models to use."""

    provider: Provider
    model: ModelInfo
    summary_model: ModelInfo


class AgentSession:
    def __init__(
        self,
        *,
        ledger: Ledger,
        workspace: Path,
        settings: AgentSettings,
        setup: ModelSetup,
        system_prompt: str,
        tools: Sequence[Tool],
        spill_dir: Path,
        ask: AskCallback | None = None,
        assume_yes: bool = False,
        emit: EventSink = ignore_events,
        retry: RetryPolicy | None = None,
        secrets: tuple[str, ...] = (),
        watch_files: bool = True,
        reconnect: Callable[[AgentSettings], ModelSetup] | None = None,
        policy: ContextPolicy | None = None,
    ) -> None:
        self.ledger = ledger
        self.workspace = workspace
        self.settings = settings
        self.system_prompt = system_prompt
        self.tools = tuple(tools)
        self.tool_specs = tuple(tool.spec for tool in self.tools)
        self._setup = setup
        self._pending_settings: AgentSettings | None = None
        self._reconnect = reconnect
        self._policy = policy
        self._emit_to = emit
        self._retry = retry or RetryPolicy()
        self._secrets = secrets
        self._spill_dir = spill_dir
        self._files: FileAccess = LOCAL_FILES
        self.gate = PermissionGate(settings.permissions_mode, ask, assume_yes=assume_yes)
        self._runner = ToolRunner(self.tools, self.gate, self._tool_context, self._emit)
        self._compactor = Compactor(
            ledger=ledger,
            system_prompt=system_prompt,
            tools=self.tool_specs,
            emit=self._emit,
            summarise=self._summarise,
        )
        self._watch = FileWatch(workspace, on_change=self._on_external_change)
        self._watch_files = watch_files
        self.totals = SessionTotals()
        for entry in ledger.entries:
            usage = _usage_of(entry)
            if usage is not None:
                self.totals.add(usage, self.model)
        self._windows = 1 + sum(
            1 for entry in ledger.branch() if isinstance(entry, CompactionEntry)
        )
        self._turn_task: asyncio.Task[TurnResult] | None = None
        self._busy = False
        self._current_turn: str | None = None
        self._message_seq = 0

    # --- public API ---------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self.ledger.header.session_id

    @property
    def model(self) -> ModelInfo:
        return self._setup.model

    @property
    def busy(self) -> bool:
        return self._busy

    def attach(
        self, emit: EventSink, ask: AskCallback | None = None, files: FileAccess | None = None
    ) -> None:
        """Where events go, who answers permission requests, and where the file tools read
        and write (an editor's buffers, or the disk), from now on."""
        self._emit_to = emit
        if ask is not None:
            self.gate.set_ask(ask)
        if files is not None:
            self._files = files

    def update_settings(self, settings: AgentSettings) -> None:
        """New settings, applied from the next turn."""
        self._pending_settings = settings

    async def run_turn(
        self, prompt: str | Sequence[UserContent], turn_id: str | None = None
    ) -> TurnResult:
        """Run one turn to its end. Cancelling the caller cancels the turn, which still
        returns its result (stop reason "cancelled")."""
        if self._busy:
            raise SessionBusyError(
                f"session {self.session_id} is busy with another turn; wait for it to end "
                "or interrupt it"
            )
        content: tuple[UserContent, ...] = (
            (TextContent(prompt),) if isinstance(prompt, str) else tuple(prompt)
        )
        turn_id = turn_id or uuid.uuid4().hex[:12]
        self._busy = True
        task = asyncio.create_task(self._turn(turn_id, content), name=f"turn-{turn_id}")
        self._turn_task = task
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.cancel()
            result = await task
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            return result
        finally:
            self._turn_task = None
            self._busy = False

    def interrupt(self) -> bool:
        """Cancel the running turn, if any. Returns whether there was one."""
        if self._turn_task is not None and not self._turn_task.done():
            self._turn_task.cancel()
            return True
        return False

    async def compact(self, instructions: str | None = None) -> CompactionOutcome:
        """A manual compaction, between turns."""
        if self._busy:
            raise SessionBusyError(f"session {self.session_id} is busy with a turn")
        self._busy = True
        try:
            await self._apply_pending_settings()
            outcome = await self._run_compaction("manual", instructions=instructions)
            self._emit(UsageUpdated(self.usage_snapshot()))
            return outcome
        finally:
            self._busy = False

    def rewind(self, entry_id: str) -> str:
        if self._busy:
            raise SessionBusyError(f"session {self.session_id} is busy with a turn")
        branch_entry = self.ledger.rewind(entry_id)
        self.ledger.sync()
        self._windows = 1 + sum(
            1 for entry in self.ledger.branch() if isinstance(entry, CompactionEntry)
        )
        return branch_entry.id

    def transcript(self) -> list[dict[str, Any]]:
        """The current branch, root to leaf, for display: every message, compaction, rewind,
        model change and title in the ledger's own JSON form, `id` named `entryId`."""
        items: list[dict[str, Any]] = []
        for entry in self.ledger.branch():
            data = entry_to_json(entry)
            if data.get("type") not in DISPLAYED_ENTRIES:
                continue
            data["entryId"] = data.pop("id")
            items.append(data)
        return items

    def usage_snapshot(self) -> UsageSnapshot:
        entries = self.ledger.projection_entries()
        context, fresh_from = self._project_entries(entries)
        estimate = estimate_context_tokens(context, fresh_from=fresh_from)
        last_call = next(
            (
                usage
                for entry in reversed(entries)
                if isinstance(entry, MessageEntry) and (usage := _usage_of(entry)) is not None
            ),
            None,
        )
        return UsageSnapshot(
            used=estimate.tokens,
            size=self.model.context_window,
            compact_at=compaction_threshold(self.model, self._compaction_settings()),
            window_number=self._windows,
            last_call=last_call,
            cache_hit_rate=self.totals.cache_hit_rate,
            cost=self.totals.cost,
            calls=self.totals.calls,
        )

    async def close(self) -> None:
        """End the session's work and release its ledger (again: nothing happens)."""
        if self.ledger.closed:
            return
        self.interrupt()
        await self._watch.stop()
        self.ledger.sync()
        self.ledger.close()
        with contextlib.suppress(Exception):
            await self._setup.provider.aclose()

    # --- the turn -----------------------------------------------------------------------

    async def _turn(self, turn_id: str, content: tuple[UserContent, ...]) -> TurnResult:
        self._current_turn = turn_id
        if self._watch_files:
            self._watch.start()
        total = Usage()
        overflow_retried = False
        pending_calls: tuple[ToolCall, ...] = ()
        results: dict[str, ToolResultMessage] = {}
        attempt: list[CallAttempt] = []
        streaming = False
        stop: TurnStopReason = "end_turn"
        error: AgentServerError | None = None
        try:
            await self._apply_pending_settings()
            changed = self._watch.take_changes()
            if changed:
                content = (*content, TextContent(external_edit_note(changed)))
            user_entry = self.ledger.append_message(UserMessage(content))
            self._maybe_title(content)
            self._emit(TurnStarted(turn_id, user_entry.id, content, user_entry.parent_id))
            for _step in range(self.settings.max_steps):
                context = await self._prepare(turn_id)
                streaming = True
                try:
                    message = await self._call(turn_id, context, attempt)
                except ContextOverflowError as overflow:
                    streaming = False
                    if overflow_retried:
                        raise ContextOverflowError(f"{overflow.message} {GAVE_UP}") from overflow
                    if not await self._recover_overflow(turn_id, context, overflow):
                        raise ContextOverflowError(f"{overflow.message} {GAVE_UP}") from overflow
                    overflow_retried = True
                    continue
                streaming = False
                self.ledger.append_message(message)
                if message.usage is not None:
                    total = total + message.usage
                    self.totals.add(message.usage, self.model)
                self._emit(UsageUpdated(self.usage_snapshot()))
                calls = message.tool_calls
                if message.stop_reason in ("contextOverflow", "length"):
                    self._answer_unrun(calls, "Not run: the answer was cut off before it ended.")
                    if message.stop_reason == "contextOverflow":
                        self._emit(Notice(turn_id, "warning", TRUNCATION_NOTICE))
                    stop = "max_tokens"
                    break
                if message.stop_reason == "refusal":
                    self._answer_unrun(calls, "Not run: the model declined to continue.")
                    stop = "refusal"
                    break
                if not calls:
                    if message.stop_reason == "pauseTurn":
                        # The provider paused a long-running turn: the next call sends the
                        # conversation back with this message at its end, which continues it.
                        continue
                    break
                pending_calls = calls
                results = {}
                self._runner.announce(turn_id, calls)
                await self._runner.run(turn_id, calls, results)
                self._append_results(calls, results, with_changes=True)
                pending_calls = ()
            else:
                stop = "max_turn_requests"
                self._emit(
                    Notice(
                        turn_id,
                        "warning",
                        f"Stopped after {self.settings.max_steps} model calls in one turn "
                        "(the maxSteps setting).",
                    )
                )
        except asyncio.CancelledError:
            stop = "cancelled"
            if streaming and attempt:
                partial = attempt[0].assembler.message(
                    "aborted", model=self.model.id, api=self._setup.provider.api
                )
                if partial.content:
                    self.ledger.append_message(partial)
                    self._answer_unrun(partial.tool_calls, "Not run: the turn was interrupted.")
            if pending_calls:
                self._append_results(pending_calls, results, with_changes=False)
        except AgentServerError as failure:
            stop, error = "error", failure
            self._emit(Notice(turn_id, "error", failure.message))
        except Exception as failure:  # a bug: say so, keep the session usable
            log.exception("turn %s failed", turn_id)
            stop = "error"
            error = AgentServerError(
                f"Internal error ({type(failure).__name__}: {failure}); the session is intact. "
                "See the server log, and please report it."
            )
            self._emit(Notice(turn_id, "error", error.message))
        finally:
            self.ledger.sync()
            self._current_turn = None
        result = TurnResult(
            turn_id,
            stop,
            total,
            error=error.message if error is not None else None,
            error_code=error.code if error is not None else None,
        )
        self._emit(TurnEnded(turn_id, stop, total, result.error, result.error_code))
        return result

    async def _prepare(self, turn_id: str) -> Context:
        """The context for the next call, compacted first when it has to be."""
        entries = self.ledger.projection_entries()
        context, fresh_from = self._project_entries(entries)
        if self._policy is not None:
            view = PolicyView(
                context.messages,
                self.system_prompt,
                self.tool_specs,
                self.model,
                self._policy_summary,
            )
            return Context(self.system_prompt, self.tool_specs, await self._policy.prepare(view))
        settings = self._compaction_settings()
        if not settings.enabled:
            return context
        reason: CompactionReason | None = None
        if has_uncompacted_truncation(entries):
            reason = "truncation"
            self._emit(
                OverflowHappened(
                    turn_id,
                    "truncated",
                    "compacting",
                    "The last answer was cut off by the context window; compacting the history.",
                )
            )
        else:
            tokens = estimate_context_tokens(context, fresh_from=fresh_from).tokens
            if should_compact(tokens, self.model, settings):
                reason = "threshold"
        if reason is None:
            return context
        outcome = await self._run_compaction(reason)
        if outcome.outcome != "compacted":
            return context
        return self._project()[0]

    async def _recover_overflow(
        self, turn_id: str, context: Context, overflow: ContextOverflowError
    ) -> bool:
        """One overflow compaction; True when the retry should go ahead (invariant 8)."""
        if not self._compaction_settings().enabled:
            return False
        self._emit(OverflowHappened(turn_id, "rejected", "compacting", overflow.message))
        before = estimate_context_tokens(context, fresh_from=len(context.messages)).tokens
        outcome = await self._run_compaction("overflow")
        if outcome.outcome == "compacted":
            compacted, _fresh = self._project()
            after = estimate_context_tokens(compacted, fresh_from=len(compacted.messages)).tokens
            if after < before and not should_compact(
                after, self.model, self._compaction_settings()
            ):
                self._emit(
                    OverflowHappened(
                        turn_id,
                        "rejected",
                        "retrying",
                        f"Compacted the history ({before} -> {after} tokens); retrying once.",
                    )
                )
                return True
        self._emit(OverflowHappened(turn_id, "rejected", "gaveUp", GAVE_UP))
        return False

    async def _run_compaction(
        self, reason: CompactionReason, instructions: str | None = None
    ) -> CompactionOutcome:
        outcome = await self._compactor.compact(
            reason=reason,
            model=self.model,
            summary_model=self._setup.summary_model,
            settings=self._compaction_settings(),
            mode=self.settings.compaction.summary,
            instructions=instructions,
        )
        if outcome.outcome == "compacted":
            self._windows += 1
            self.ledger.sync()
        elif outcome.outcome == "failed" and outcome.error:
            self._emit(Notice(self._current_turn, "warning", f"Compaction failed: {outcome.error}"))
        return outcome

    async def _call(
        self, turn_id: str, context: Context, attempt: list[CallAttempt]
    ) -> AssistantMessage:
        def on_event(current: CallAttempt, event: StreamEvent) -> None:
            if isinstance(event, TextDelta):
                self._emit(TextChunk(turn_id, current.message_id, event.text))
            elif isinstance(event, ThinkingDelta):
                self._emit(ThinkingChunk(turn_id, current.message_id, event.text))

        def on_retry(error: ProviderError, wait: float, number: int) -> None:
            self._emit(
                Notice(
                    turn_id,
                    "warning",
                    f"{error.message} Retrying in {wait:.0f}s "
                    f"(attempt {number + 1} of {self._retry.max_retries + 1}).",
                )
            )

        return await call_model(
            self._setup.provider,
            self.model,
            context,
            self._call_options(),
            on_event=on_event,
            on_retry=on_retry,
            new_message_id=lambda: self._new_message_id(turn_id),
            retry=self._retry,
            attempt_holder=attempt,
        )

    async def _summarise(
        self, context: Context, model: ModelInfo, cached: bool, max_tokens: int
    ) -> AssistantMessage:
        # The cached variant keeps the session's call options (they are part of the prefix);
        # only the output budget differs, and it is not part of the prompt. A one-off fresh
        # prompt writes nothing to the cache.
        options = replace(self._call_options(), max_tokens=max_tokens)
        if not cached:
            options = replace(options, cache_breakpoints=False)
        turn_id = self._current_turn or "compaction"

        def on_retry(error: ProviderError, wait: float, number: int) -> None:
            self._emit(
                Notice(turn_id, "warning", f"{error.message} Retrying the summary in {wait:.0f}s.")
            )

        message = await call_model(
            self._setup.provider,
            model,
            context,
            options,
            on_event=lambda _attempt, _event: None,
            on_retry=on_retry,
            new_message_id=lambda: self._new_message_id(turn_id),
            retry=self._retry,
        )
        if message.usage is not None:
            self.totals.add(message.usage, model)
        return message

    async def _policy_summary(self, messages: Sequence[Message], previous: str | None) -> str:
        prompt = build_summary_prompt(messages, previous_summary=previous)
        context = Context(SUMMARY_SYSTEM_PROMPT, (), (UserMessage.of_text(prompt),))
        model = self._setup.summary_model
        answer = await self._summarise(
            context, model, False, min(SUMMARY_OUTPUT_TOKENS, model.max_output)
        )
        return answer.text.strip()

    # --- pieces -------------------------------------------------------------------------

    def _project(self) -> tuple[Context, int]:
        return self._project_entries(self.ledger.projection_entries())

    def _project_entries(self, entries: Sequence[Entry]) -> tuple[Context, int]:
        """The context the next call sends, and where the messages after the latest
        compaction start (the usage before them is stale)."""
        projection = project(entries)
        context = Context(self.system_prompt, self.tool_specs, projection.messages)
        return context, projection.fresh_from

    def _compaction_settings(self) -> CompactionSettings:
        options = self.settings.compaction
        return CompactionSettings(
            enabled=options.enabled,
            reserve_tokens=options.reserve_tokens,
            keep_recent_tokens=options.keep_recent_tokens,
        )

    def _call_options(self) -> CallOptions:
        return CallOptions(
            session_id=self.session_id,
            cache_retention=self.settings.cache_retention,
        )

    def _tool_context(self, on_output: Callable[[str], None] | None) -> ToolContext:
        return ToolContext(
            workspace=self.workspace,
            spill_dir=self._spill_dir,
            on_output=on_output,
            secrets=self._secrets,
            bash_timeout=self.settings.bash_timeout,
            files=self._files,
        )

    def _append_results(
        self,
        calls: Sequence[ToolCall],
        results: dict[str, ToolResultMessage],
        *,
        with_changes: bool,
    ) -> None:
        """Append one result per call, in call order; a call without one gets "aborted"."""
        ordered = [results.get(call.id) or aborted_result(call) for call in calls]
        for call in calls:
            tool = self._runner.tool(call.name)
            if tool is not None and call.id in results and not results[call.id].is_error:
                for path in tool.paths(call.arguments):
                    self._watch.record(path)
        if with_changes:
            # The agent's own reads and writes were just recorded, so only edits from
            # outside remain.
            changed = self._watch.take_changes()
            if changed and ordered:
                last = ordered[-1]
                ordered[-1] = replace(
                    last, content=(*last.content, TextContent(external_edit_note(changed)))
                )
        for message in ordered:
            self.ledger.append_message(message)

    def _answer_unrun(self, calls: Sequence[ToolCall], why: str) -> None:
        for call in calls:
            self.ledger.append_message(aborted_result(call, why))

    def _maybe_title(self, content: tuple[UserContent, ...]) -> None:
        """A session without a title is named after its first prompt."""
        if self.ledger.title:
            return
        text = " ".join(block.text for block in content if isinstance(block, TextContent)).strip()
        if text:
            first_line = text.splitlines()[0]
            self.ledger.append_title(first_line[:80])

    async def _apply_pending_settings(self) -> None:
        settings = self._pending_settings
        if settings is None:
            return
        self._pending_settings = None
        previous = self.settings
        self.settings = settings
        self.gate.set_mode(settings.permissions_mode)
        connection_changed = (
            settings.provider != previous.provider
            or settings.model != previous.model
            or settings.base_url != previous.base_url
            or settings.api_key_env != previous.api_key_env
            or settings.compaction.model != previous.compaction.model
        )
        if connection_changed and self._reconnect is not None:
            old = self._setup
            self._setup = self._reconnect(settings)
            if self._setup.model.id != old.model.id or self._setup.provider.api != old.provider.api:
                self.ledger.append_model_change(self._setup.provider.api, self._setup.model.id)
            if self._setup.provider is not old.provider:
                with contextlib.suppress(Exception):
                    await old.provider.aclose()

    def _on_external_change(self, path: str) -> None:
        self._emit(
            Notice(
                self._current_turn,
                "info",
                f"{path} changed on disk; the agent will be told with its next message.",
            )
        )

    def _new_message_id(self, turn_id: str) -> str:
        self._message_seq += 1
        return f"{turn_id}.{self._message_seq}"

    def _emit(self, event: AgentEvent) -> None:
        try:
            self._emit_to(event)
        except Exception:  # a broken UI must not break the agent
            log.exception("event sink failed on %s", type(event).__name__)


def _usage_of(entry: object) -> Usage | None:
    """The usage a ledger entry records: a model call's answer, or a compaction's summaries."""
    if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
        return entry.message.usage
    if isinstance(entry, CompactionEntry):
        return entry.usage
    return None
