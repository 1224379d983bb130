"""A session's turn loop.

A turn appends the user's prompt, then repeats: ask the context manager for the context to
send (agent/context_manager.py: it projects, estimates, decides, compacts), stream the
model's answer, append it, run the tools it asks for, append their results (a turn the
provider paused is called again as it stands, which continues it); until the model stops or
the step limit is reached. Everything goes into the ledger as it happens, so a crash or a
cancel loses nothing and never leaves a tool call unanswered. The session says when a turn
may run (agent/session.py: one thing at a time).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from agent_server.agent.checkpoints import BlobStore
from agent_server.agent.context_manager import ContextManager, ContextView
from agent_server.agent.events import (
    EventSink,
    Notice,
    ToolCallUpdated,
    TurnEnded,
    TurnStarted,
    TurnStopReason,
)
from agent_server.agent.file_watch import NOTE_KIND, FileWatch, external_edit_note, files_seen
from agent_server.agent.mcp.approval import APPROVAL
from agent_server.agent.mcp.session_tools import SessionTools
from agent_server.agent.memory import SessionMemory
from agent_server.agent.mentions import attach_mentions
from agent_server.agent.model_call import CallAttempt
from agent_server.agent.model_calls import ModelCalls
from agent_server.agent.model_switch import ModelSwitcher
from agent_server.agent.permissions import PermissionGate, PermissionOption
from agent_server.agent.session_config import SessionConfig
from agent_server.agent.tool_runner import ToolRunner, aborted_result
from agent_server.agent.tools import ToolContext
from agent_server.agent.tools.base import CommandTerminal, EarlierOutput, outputs_in_context
from agent_server.agent.tools.bash import KILL_GRACE
from agent_server.agent.tools.command_input import CommandInputs
from agent_server.agent.tools.environment import tool_environment
from agent_server.agent.tools.files import LOCAL_FILES, FileAccess
from agent_server.agent.tools.followed import followed_tests
from agent_server.agent.tools.output import output_limits
from agent_server.agent.tools.recall import recallable
from agent_server.agent.tools.sandbox import Confinement, private_user_dirs
from agent_server.agent.usage_meter import UsageMeter
from agent_server.context.summary_prompt import note_message
from agent_server.errors import (
    AgentServerError,
    ConfigError,
    ContextOverflowError,
    PromptTooLargeError,
)
from agent_server.llm.cost import SessionTotals
from agent_server.llm.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserContent,
    UserMessage,
)
from agent_server.llm.providers import cache_ttl
from agent_server.llm.stream import CacheRetention
from agent_server.session.entries import MessageEntry, TitleEntry
from agent_server.session.ledger import ABORTED_UNSAVED, Ledger

log = logging.getLogger(__name__)

TRUNCATION_NOTICE = (
    "The answer was cut off by the context window. The history will be compacted before the "
    "next request; say 'continue' to carry on."
)

# Seconds a closing session waits for its cancelled turn to write its end: a command that
# ignores SIGTERM takes KILL_GRACE before it is killed, then its end is written in moments
# (the rest is a margin for a busy machine); a tool that does not stop (a thread) is left
# behind rather than hold the ledger.
TURN_END_WAIT = KILL_GRACE + 10.0


@dataclass(frozen=True, slots=True)
class TurnResult:
    turn_id: str
    stop_reason: TurnStopReason
    usage: Usage  # the turn's own: its answers and the summaries of compactions it ran
    error: str | None = None
    error_code: str | None = None
    calls: int = 0


@dataclass
class _TurnState:
    """What the end of a turn needs to know of its loop: the prompt's entry, the answer
    being streamed (its attempt), and the tool calls still open with their results."""

    prompt: MessageEntry | None = None
    # The prompt's content until the session is named after it: once its first request is
    # sent, so a prompt refused unsent names nothing.
    untitled: tuple[UserContent, ...] | None = None
    attempt: list[CallAttempt] = field(default_factory=list)
    streaming: bool = False
    pending_calls: tuple[ToolCall, ...] = ()
    results: dict[str, ToolResultMessage] = field(default_factory=dict)


class TurnLoop:
    """One session's turns, the notes for the model that wait for a point the conversation
    can take one, and what its tools are given: their context (where files are read and
    written, where commands run) and the watch on the files they saw."""

    def __init__(
        self,
        *,
        ledger: Ledger,
        workspace: Path,
        config: SessionConfig,
        context: ContextManager,
        calls: ModelCalls,
        switcher: ModelSwitcher,
        tools: SessionTools,
        gate: PermissionGate,
        memory: SessionMemory,
        usage: UsageMeter,
        emit: EventSink,
        retention: Callable[[], CacheRetention],
        confinement: Callable[[], Confinement],
        busy: Callable[[], bool],
        spill_dir: Path,
        secrets: tuple[str, ...],
        checkpoints: BlobStore | None,
        private_dirs: tuple[Path, ...],
        watch_files: bool,
    ) -> None:
        self.ledger = ledger
        self.workspace = workspace
        self.config = config
        self.context = context
        self.calls = calls
        self.switcher = switcher
        self.tools = tools
        self.gate = gate
        self.memory = memory
        self.usage = usage
        self._emit = emit
        self._retention = retention  # the cache retention of the next call
        self._confinement = confinement  # how the session's commands run
        self._busy = busy  # the session is busy (a turn, a compaction, a rewind...)
        self._spill_dir = spill_dir
        self._secrets = secrets
        self._watch_files = watch_files
        self.files: FileAccess = LOCAL_FILES  # where the file tools read and write
        self.terminal: CommandTerminal | None = None  # where commands run (None: here)
        self._command_input: CommandInputs | None = None  # the running turn's (None: none)
        self.current: str | None = None  # the running turn's id
        self.came_back = False  # this turn's prompt came after the cache had expired
        self._in_context: tuple[EarlierOutput, ...] = ()
        self._waiting_notes: list[UserMessage] = []
        self._task: asyncio.Task[TurnResult] | None = None
        self._began = False  # the turn's task has run its first step
        self._stop_asked = False  # interrupted before that step: it stops at its start
        self._runner = ToolRunner(
            tools.runnable, gate, self.tool_context, emit,
            checkpoints=checkpoints, private=(*private_dirs, *private_user_dirs()),
        )
        self.watch = FileWatch(workspace, on_change=self._on_external_change)
        self.watch.restore(files_seen(ledger.tree.projection_entries(), tools.paths_of))

    async def run(
        self,
        turn_id: str,
        content: tuple[UserContent, ...],
        command_input: CommandInputs | None = None,
    ) -> TurnResult:
        """Run one turn to its end. Cancelling the caller cancels the turn, which still
        returns its result (stop reason "cancelled"). Its commands read `command_input`."""
        self._began = self._stop_asked = False
        self._command_input = command_input
        task = asyncio.create_task(self._turn(turn_id, content), name=f"turn-{turn_id}")
        self._task = task
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
            self._task = None

    def interrupt(self) -> bool:
        """Cancel the running turn, if any. Returns whether there was one.

        A turn whose task has not run yet (a cancel read in the same breath as its prompt)
        is not cancelled as a task: the CancelledError would hit it before its first line,
        skip its handling, and leave the caller without a result. It is told to stop at its
        start instead, and ends like any cancelled turn (the prompt kept, "cancelled").

        A turn already stopping is not cancelled again: the second cancel would cut its
        clean-up short (a command that ignores SIGTERM, killed after a grace, would be left
        running when the process ends right after, as a closing session's does)."""
        if self._task is None or self._task.done():
            return False
        if self._began:
            if not self._task.cancelling():
                self._task.cancel()
        else:
            self._stop_asked = True
        return True

    async def stop(self) -> None:
        """Interrupt the running turn, if any, and give it TURN_END_WAIT to write its end
        to the ledger (the prompt kept, "cancelled")."""
        task = self._task
        if self.interrupt() and task is not None:
            await asyncio.wait([task], timeout=TURN_END_WAIT)

    # --- the turn -----------------------------------------------------------------------

    async def _turn(self, turn_id: str, content: tuple[UserContent, ...]) -> TurnResult:
        self._began = True
        self.current = turn_id
        self.calls.turn_totals = SessionTotals()
        self.context.begin_turn(turn_id)
        if self._watch_files:
            self.watch.start()
        state = _TurnState()
        stop: TurnStopReason = "end_turn"
        error: AgentServerError | None = None
        try:
            state.prompt = await self._start(turn_id, content)
            state.untitled = content
            if self._stop_asked:  # interrupted before this task first ran (interrupt())
                raise asyncio.CancelledError
            stop = await self._steps(turn_id, state)
        except asyncio.CancelledError:
            stop = "cancelled"
            self._keep_interrupted(state)
        except PromptTooLargeError as refused:
            # Nothing was sent; the session goes back to before the prompt, so that the next
            # one is not refused too. The prompt stays in the ledger, on the branch left.
            stop, error = "error", refused
            if state.prompt is not None:
                self.ledger.rewind(state.prompt.parent_id)
        except AgentServerError as failure:
            # The error is told once, by the turn's end (TurnEnded, the turn's result): not
            # also as a notice, which every front end would show a second time.
            stop, error = "error", failure
            self._keep_failure(state, failure)
        except Exception as failure:  # a bug: say so, keep the session usable
            log.exception("turn %s failed", turn_id)
            stop = "error"
            error = AgentServerError(
                f"Internal error ({type(failure).__name__}: {failure}); the session is intact. "
                "See the server log, and please report it."
            )
            self._keep_failure(state, error)
        finally:
            with contextlib.suppress(AgentServerError):  # the file may not be writable
                self._append_waiting_notes()  # the turn has ended: the notes can go in
            self.ledger.sync()
            self.current = None
        return self._end(turn_id, stop, error)

    async def _start(self, turn_id: str, content: tuple[UserContent, ...]) -> MessageEntry:
        """The prompt in the ledger (after the settings waiting for it and the notes of what
        changed), announced; its entry."""
        await self.switcher.apply_pending()
        pause = self.context.pause()
        short = cache_ttl(self.config.api, self.config.model, "short")
        self.came_back = pause is not None and short is not None and pause > short
        prompt = await self._prompt_message(turn_id, content)
        self.settle_unsaved_results(turn_id)
        self._append_note_of_changes()
        entry = self.ledger.append_message(prompt)
        for attachment in prompt.attachments:
            if attachment.kind != "directory":
                self.watch.record(attachment.path)
        self._emit(TurnStarted(turn_id, entry.id, content, entry.parent_id, prompt.attachments))
        await self._approve_workspace_servers(turn_id)
        return entry

    async def _steps(self, turn_id: str, state: _TurnState) -> TurnStopReason:
        """Model calls and the tool calls they ask for, until an answer ends the turn or the
        `maxSteps` setting does."""
        max_steps = self.config.settings.max_steps
        for _step in range(max_steps):
            stop = await self._step(turn_id, state)
            if stop is not None:
                return stop
        self._emit(
            Notice(
                turn_id,
                "warning",
                f"Stopped after {max_steps} model calls in one turn (the maxSteps setting).",
            )
        )
        return "max_turn_requests"

    async def _step(self, turn_id: str, state: _TurnState) -> TurnStopReason | None:
        """One model call, and the tool calls it asks for; how the turn stops with it, or
        None when it goes on."""
        await self.tools.for_request()  # fixes the tool list, or takes an accepted change
        prepared = await self.context.prepare()
        if state.untitled is not None:
            self._maybe_title(state.untitled)
            state.untitled = None
        message, view = await self._answer(turn_id, prepared, state)
        calls = message.tool_calls
        if message.stop_reason in ("contextOverflow", "length"):
            self._answer_unrun(calls, "Not run: the answer was cut off before it ended.")
            if message.stop_reason == "contextOverflow":
                self._emit(Notice(turn_id, "warning", TRUNCATION_NOTICE))
            return "max_tokens"
        if message.stop_reason == "refusal":
            self._answer_unrun(calls, "Not run: the model declined to continue.")
            return "refusal"
        if not calls:
            # A paused turn (the provider paused a long-running one) goes on: the next call
            # sends the conversation back with this message at its end, which continues it.
            return None if message.stop_reason == "pauseTurn" else "end_turn"
        state.pending_calls, state.results = calls, {}
        # What the model has in context as it asks for these calls (read answers an
        # unchanged re-read with a note only while the earlier read is in it).
        self._in_context = outputs_in_context(view.messages)
        self._runner.announce(turn_id, calls)
        await self._runner.run(turn_id, calls, state.results)
        self._append_results(calls, state.results, with_changes=True)
        state.pending_calls = ()
        return None

    async def _answer(
        self, turn_id: str, view: ContextView, state: _TurnState
    ) -> tuple[AssistantMessage, ContextView]:
        """The model's answer to `view`, recorded and billed, and the context it answered
        (after the one overflow recovery, if the provider rejected `view` as too long)."""
        while True:
            state.streaming = True
            try:
                message = await self.calls.answer(turn_id, view.context, state.attempt)
                break
            except ContextOverflowError as overflow:
                state.streaming = False
                # Raises ContextOverflowError when it gives up (invariant 8).
                view = await self.context.recover_overflow(
                    view, overflow.message, rejected=True, server_window=overflow.server_window
                )
        state.streaming = False
        # Recorded under the id its chunks carried (messageId), live and loaded alike.
        retention = self._retention()
        self.ledger.append_message(
            message, entry_id=state.attempt[0].message_id, cache_retention=retention
        )
        self.context.record_call(retention)
        if message.usage is not None:
            self.calls.count(message.usage, self.config.model)
        self.usage.tell()
        self.context.check_answer_read(view, message)
        return message, view

    def _keep_interrupted(self, state: _TurnState) -> None:
        """An interrupted turn keeps what arrived of the answer, and answers the tool calls
        left open."""
        if state.streaming and state.attempt:
            partial = state.attempt[0].assembler.message(
                "aborted", model=self.config.model.id, api=self.config.api
            )
            if partial.content:
                self.ledger.append_message(partial, entry_id=state.attempt[0].message_id)
                self._answer_unrun(partial.tool_calls, "Not run: the turn was interrupted.")
        if state.pending_calls:
            self._append_results(state.pending_calls, state.results, with_changes=False)

    def _keep_failure(self, state: _TurnState, failure: AgentServerError) -> None:
        """A turn that failed after its prompt was recorded ends in the ledger with an answer
        whose stop reason is `error` (what arrived of the answer being streamed, and why it
        failed), so that a reloaded transcript and `sessions show` say what happened. The
        requests leave such an answer out (llm/history.py): the prefix is unchanged."""
        if state.prompt is None:
            return
        streamed = state.streaming and bool(state.attempt)
        model, api = self.config.model.id, self.config.api
        message = (
            state.attempt[0].assembler.message("error", model=model, api=api)
            if streamed
            else AssistantMessage((), "error", model=model, api=api)
        )
        # Tool calls cut off mid-stream were never run: only the text and thinking are kept.
        content = tuple(b for b in message.content if isinstance(b, TextContent | ThinkingContent))
        message = replace(message, content=content, error_message=failure.message)
        with contextlib.suppress(AgentServerError):  # the file may not be writable
            self.ledger.append_message(
                message, entry_id=state.attempt[0].message_id if streamed else None
            )

    def _end(
        self, turn_id: str, stop: TurnStopReason, error: AgentServerError | None
    ) -> TurnResult:
        usage = self.calls.turn_totals.as_usage()
        result = TurnResult(
            turn_id,
            stop,
            usage,
            error=error.message if error is not None else None,
            error_code=error.code if error is not None else None,
            calls=self.calls.turn_totals.calls,
        )
        self.usage.tell()
        self._emit(TurnEnded(turn_id, stop, usage, result.error, result.error_code))
        return result

    # --- pieces -------------------------------------------------------------------------

    async def _prompt_message(self, turn_id: str, content: tuple[UserContent, ...]) -> UserMessage:
        """The prompt as recorded and sent: what its @-mentions attach, then what the user
        typed. A model that takes no images is not sent one."""
        attached = await attach_mentions(
            content,
            tools={tool.spec.name: tool for tool in self.tools.runnable()},
            context=self.tool_context(None),
        )
        for problem in attached.problems:
            self._emit(Notice(turn_id, "warning", problem))
        blocks = (*attached.blocks, *content)
        model = self.config.model
        if not model.images and any(isinstance(b, ImageContent) for b in blocks):
            raise ConfigError(
                f"{model.name} does not take images: pick a model that does (the model "
                "picker, or /model in the terminal), or send the prompt without the image."
            )
        return UserMessage(blocks, attachments=attached.attachments)

    def tool_context(self, on_output: Callable[[str], None] | None) -> ToolContext:
        """What a tool call (or an @-mention's read) is given."""
        settings = self.config.settings
        return ToolContext(
            workspace=self.workspace,
            spill_dir=self._spill_dir,
            on_output=on_output,
            secrets=self._tool_secrets(),
            bash_timeout=settings.bash_timeout,
            in_context=self._in_context,
            files=self.files,
            memory=self.memory,
            limits=output_limits(self.context.threshold),
            session_files=tuple(self.watch.tracked),
            repo_map_tokens=settings.tools.repo_map_tokens,
            env_pass=settings.tools.env_pass,
            confinement=self._confinement(),
            context_share=self.context.share_of_threshold,
            terminal=self.terminal,
            command_input=self._command_input,
            history=lambda: recallable(self.ledger.tree.branch()),
            followed=lambda: followed_tests(self.ledger.tree.branch()),
        )

    def hook_environment(self) -> dict[str, str]:
        """What a compaction hook's command gets: a tool command's environment."""
        env_pass = self.config.settings.tools.env_pass
        return tool_environment(os.environ, self._tool_secrets(), env_pass).env

    def _tool_secrets(self) -> tuple[str, ...]:
        """The secrets kept from the tools: the session's, and its MCP servers'."""
        return (*self._secrets, *self.tools.servers.secrets)

    def _append_note_of_changes(self) -> None:
        """Files the agent knows that changed behind its back, as a note for the model; and
        the notes waiting for such a point (a pin the user changed during a turn)."""
        changed = self.watch.take_changes()
        if changed:
            self.ledger.append_message(note_message(NOTE_KIND, external_edit_note(changed)))
        self._append_waiting_notes()

    def _append_waiting_notes(self) -> None:
        waiting, self._waiting_notes = self._waiting_notes, []
        for note in waiting:
            self.ledger.append_message(note)

    def note(self, kind: str, text: str) -> None:
        """A note for the model: appended now between turns, else at the next point the
        conversation can take one (after the running step's results, or before the next
        prompt)."""
        note = note_message(kind, text)
        if self._busy():
            self._waiting_notes.append(note)
        else:
            self.ledger.append_message(note)
            self.ledger.sync()

    def _append_results(
        self,
        calls: Sequence[ToolCall],
        results: dict[str, ToolResultMessage],
        *,
        with_changes: bool,
    ) -> None:
        """Append one result per call, in call order; a call without one gets "aborted"."""
        for call in calls:
            if call.id in results and not results[call.id].is_error:
                for path in self.tools.paths_of(call):
                    self.watch.record(path)
        for call in calls:
            result = results.get(call.id)
            if result is None:
                # Stopped before it finished: the editor's card ends as the ledger records it.
                result = aborted_result(call)
                self._emit(
                    ToolCallUpdated(
                        self.current or "",
                        call.id,
                        "failed",
                        output=result.text,
                        details=result.details,
                    )
                )
            self.ledger.append_message(result)
        if with_changes:
            # The agent's own reads and writes were just recorded, so only edits from
            # outside remain.
            self._append_note_of_changes()

    async def _approve_workspace_servers(self, turn_id: str) -> None:
        """The workspace's `.mcp.json` lists servers whose content the user has not approved
        (mcp/approval.py): ask, and start them or leave them off."""
        servers = self.tools.servers
        pending = servers.awaiting_approval()
        if pending is None:
            return
        options = (
            PermissionOption("allow_once", "Start them (this session)", "allow_once"),
            PermissionOption(
                "allow_always", "Always start this .mcp.json (until it changes)", "allow_always"
            ),
            PermissionOption("reject_once", "Do not start them", "reject_once"),
        )
        chosen = await self.gate.ask_about(APPROVAL, pending.call(), pending.title(), options)
        if chosen in ("allow_once", "allow_always"):
            await servers.approve(pending.digest, remember=chosen == "allow_always")
            return
        await servers.decline(pending.digest)
        self._emit(
            Notice(
                turn_id,
                "warning",
                f"The MCP servers of {pending.path.name} were not started: "
                + ("you did not approve it." if chosen is not None else "nobody approved it.")
                + " You will be asked again in a new session, or when the file changes.",
            )
        )

    def settle_unsaved_results(self, turn_id: str | None) -> None:
        """Tool calls whose results could not be saved (the session file could not be
        written: a full disk) get an aborted result as soon as it can be written again,
        before anything else is appended: the conversation never goes on past a tool call
        without a result. Raises SessionError while the file still cannot be written."""
        aborted = self.ledger.answer_open_tool_calls(ABORTED_UNSAVED)
        if aborted:
            count = len(aborted)
            self._emit(
                Notice(
                    turn_id,
                    "warning",
                    f"The result{'s' if count != 1 else ''} of {count} earlier tool "
                    f"call{'s' if count != 1 else ''} could not be saved; recorded as "
                    "aborted now.",
                )
            )

    def _answer_unrun(self, calls: Sequence[ToolCall], why: str) -> None:
        for call in calls:
            self.ledger.append_message(aborted_result(call, why))

    def _maybe_title(self, content: tuple[UserContent, ...]) -> None:
        """A session without a title is named after its first prompt."""
        if self.ledger.facts.title:
            return
        text = " ".join(block.text for block in content if isinstance(block, TextContent)).strip()
        if text:
            first_line = text.splitlines()[0]
            self.ledger.add(TitleEntry, first_line[:80])

    def _on_external_change(self, path: str) -> None:
        self._emit(
            Notice(
                self.current,
                "info",
                f"{path} changed on disk; the agent will be told with its next message.",
            )
        )
