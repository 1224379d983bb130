"""An agent session: one ledger, one model, the tools, and the turn loop that ties them.

A turn appends the user's prompt, then repeats: ask the context manager for the context to
send (agent/context_manager.py: it projects, estimates, decides, compacts), stream the
model's answer, append it, run the tools it asks for, append their results (a turn the
provider paused is called again as it stands, which continues it); until the model stops or
the step limit is reached. Everything goes into the ledger as it happens, so a crash or a
cancel loses nothing and never leaves a tool call unanswered.

Nothing here is specific to a front end: the LSP server (lsp/) and any other (an ACP agent,
the terminal) drive the same API: `run_turn`, `interrupt`, `compact`, `rewind`,
`usage_snapshot`, `transcript`, and the events given to `attach`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from agent_server.agent import prompt_commands
from agent_server.agent.checkpoints import (
    BlobStore,
    RestorePlan,
)
from agent_server.agent.compaction_hooks import CompactionHookRunner
from agent_server.agent.context_manager import (
    CompactionResult,
    ContextManager,
    ContextPolicy,
    ContextView,
    RewindBy,
)
from agent_server.agent.events import (
    AgentEvent,
    EventSink,
    McpStatusChanged,
    Notice,
    ToolCallUpdated,
    TurnEnded,
    TurnStarted,
    TurnStopReason,
    UsageSnapshot,
    UsageUpdated,
    ignore_events,
)
from agent_server.agent.file_watch import NOTE_KIND, FileWatch, external_edit_note, files_seen
from agent_server.agent.mcp.approval import APPROVAL
from agent_server.agent.mcp.config import McpServerConfig
from agent_server.agent.mcp.servers import McpServers
from agent_server.agent.mcp.session_tools import AcceptOutcome, McpStatus, SessionTools
from agent_server.agent.memory import PIN_NOTE, SessionMemory
from agent_server.agent.mentions import attach_mentions
from agent_server.agent.model_call import CallAttempt, RetryPolicy
from agent_server.agent.model_calls import ModelCalls
from agent_server.agent.model_switch import ModelSwitch, ModelSwitcher, ThinkingSwitch
from agent_server.agent.permissions import (
    AskCallback,
    PermissionChoices,
    PermissionGate,
    PermissionMode,
    PermissionOption,
    parse_mode,
    save_choices,
)
from agent_server.agent.rewind import RestoreChoice, Rewinder, Rewound
from agent_server.agent.session_config import (
    ModelSetup,
    SessionConfig,
)
from agent_server.agent.settings import AgentSettings
from agent_server.agent.tool_runner import ToolRunner, aborted_result
from agent_server.agent.tools import Tool, ToolContext
from agent_server.agent.tools.base import CommandTerminal, EarlierOutput, outputs_in_context
from agent_server.agent.tools.bash import KILL_GRACE
from agent_server.agent.tools.environment import tool_environment
from agent_server.agent.tools.files import LOCAL_FILES, FileAccess
from agent_server.agent.tools.output import output_limits
from agent_server.agent.tools.recall import recallable
from agent_server.agent.tools.sandbox import Confinement, confinement, private_user_dirs
from agent_server.agent.transcript import DEFAULT_PAGE, Page
from agent_server.agent.transcript import page as transcript_page
from agent_server.context.estimate import estimate_context_tokens
from agent_server.context.summary_prompt import note_message
from agent_server.errors import (
    AgentServerError,
    ConfigError,
    ContextOverflowError,
    PromptTooLargeError,
    SessionBusyError,
)
from agent_server.llm.cost import SessionTotals
from agent_server.llm.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserContent,
    UserMessage,
)
from agent_server.llm.models import ModelInfo
from agent_server.llm.providers import cache_ttl, can_think
from agent_server.llm.stream import (
    CacheRetention,
    ThinkingLevel,
)
from agent_server.session.entries import MessageEntry, Pin, PinKind, TitleEntry
from agent_server.session.facts import usage_of
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
        mcp: McpServers | None = None,
        ask: AskCallback | None = None,
        assume_yes: bool = False,
        emit: EventSink = ignore_events,
        retry: RetryPolicy | None = None,
        secrets: tuple[str, ...] = (),
        watch_files: bool = True,
        reconnect: Callable[[AgentSettings], ModelSetup] | None = None,
        policy: ContextPolicy | None = None,
        clock: Callable[[], float] = time.time,
        configured: AgentSettings | None = None,
        checkpoints: BlobStore | None = None,
        private_dirs: tuple[Path, ...] = (),
        rewind: RewindBy = "entry",
    ) -> None:
        self.ledger = ledger
        self.workspace = workspace
        # The settings and models in force, the workspace's as last given, the session's own
        # choices and the settings waiting for the next turn; the context manager reads it.
        self.config = SessionConfig(settings, setup, configured)
        self._private_dirs = private_dirs  # never listed as changed files (the sessions)
        self._emit_to = emit
        self._secrets = secrets
        self._spill_dir = spill_dir
        self._files: FileAccess = LOCAL_FILES
        self._terminal: CommandTerminal | None = None
        self.gate = PermissionGate(settings.permissions_mode, ask, assume_yes=assume_yes)
        # The one tool list in force (built-in, then MCP: mcp/session_tools), the context's too.
        self._tools = SessionTools(
            ledger=ledger,
            builtin=tools,
            servers=mcp or McpServers((), state_dir=spill_dir),
            estimate=self._tokens_with_tools,
            on_status=lambda status: self._emit(McpStatusChanged(status)),
            on_notice=lambda text: self._emit(
                Notice(self._current_turn, "info", text, topic="toolsChanged")
            ),
            first_wait=lambda: self.settings.mcp.first_request_wait,
        )
        self.calls = ModelCalls(
            ledger, self.config, self._emit, retry or RetryPolicy(), self.retention_for_call,
            lambda: self._current_turn,
        )
        self._runner = ToolRunner(
            self._tools.runnable, self.gate, self._tool_context, self._emit,
            checkpoints=checkpoints, private=(*private_dirs, *private_user_dirs()),
        )
        self.context = ContextManager(
            ledger=ledger, system_prompt=system_prompt, tools=self._tools, config=self.config,
            call=self.calls.summary, emit=self._emit, clock=clock, policy=policy,
            files_of=self._files_of, rewind=rewind,
            hooks=CompactionHookRunner(workspace, ledger.header.session_id, self._hook_environment),
        )
        self.switcher = ModelSwitcher(
            self.config, ledger, self.context, self.gate, self._emit, self.retention_for_call,
            clock, lambda: self._current_turn, reconnect,
        )
        # The pins and the plan (ledger entries); a note of a pin the user changed waits for
        # the next point where the conversation can take one (never inside a tool call's
        # results).
        self.memory = SessionMemory(
            ledger, self._emit, lambda: self.context.threshold, lambda: self._current_turn
        )
        self._waiting_notes: list[UserMessage] = []
        with contextlib.suppress(RuntimeError):  # no running loop: the first turn starts them
            asyncio.get_running_loop()
            self._tools.servers.start()
        self._watch = FileWatch(workspace, on_change=self._on_external_change)
        self._watch.restore(files_seen(ledger.tree.projection_entries(), self._paths_of))
        self.rewinder = Rewinder(
            ledger, workspace, checkpoints, private_dirs, self._watch, self._paths_of,
            self.context, self._emit,
        )
        self._watch_files = watch_files
        self._usage_said: UsageSnapshot | None = None  # the meter the front ends were told
        self._turn_task: asyncio.Task[TurnResult] | None = None
        self._turn_began = False  # the turn's task has run its first step
        self._stop_asked = False  # interrupted before that step: it stops at its start
        self._closing = False  # `close` has begun (it runs once)
        self._busy = False
        self._current_turn: str | None = None
        self._in_context: tuple[EarlierOutput, ...] = ()
        self._user_idle = False  # the editor says the user is away (agent/userIdle)
        self._came_back = False  # this turn's prompt came after the cache had expired

    # --- public API ---------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self.ledger.header.session_id

    @property
    def totals(self) -> SessionTotals:
        """Every call of the session, billed."""
        return self.calls.totals

    @property
    def settings(self) -> AgentSettings:
        """The settings in force."""
        return self.config.settings

    @property
    def _setup(self) -> ModelSetup:
        return self.config.setup

    @property
    def model(self) -> ModelInfo:
        return self.config.model

    @property
    def system_prompt(self) -> str:
        return self.context.system_prompt

    @property
    def busy(self) -> bool:
        return self._busy

    def attach(
        self,
        emit: EventSink,
        ask: AskCallback | None = None,
        files: FileAccess | None = None,
        terminal: CommandTerminal | None = None,
    ) -> None:
        """Where events go, who answers permission requests, where the file tools read
        and write (an editor's buffers, or the disk), and where commands run (an editor's
        terminal, or here), from now on."""
        self._emit_to = emit
        if ask is not None:
            self.gate.set_ask(ask)
        if files is not None:
            self._files = files
        self._terminal = terminal

    def set_user_idle(self, idle: bool) -> None:
        """The editor says whether the user is away (cacheRetention "auto" reads it)."""
        self._user_idle = idle

    def retention_for_call(self) -> CacheRetention:
        """The cache retention of the next call: the setting, or with "auto" the long one
        while the user is away (the editor says so) or for a turn whose prompt came after the
        short cache had expired (a user who answers after the cache's lifetime once likely
        will again: this turn's last call should leave a prefix that outlives the pause).
        Only what a call writes pays the long retention's price (2x the input price against
        1.25x on Anthropic); reads cost the same."""
        retention = self.settings.cache_retention
        if retention != "auto":
            return retention
        return "long" if self._user_idle or self._came_back else "short"

    @property
    def mode(self) -> PermissionMode:
        return self.gate.mode

    @property
    def thinking(self) -> ThinkingLevel:
        """How hard the session's model is asked to think (where it can: can_think)."""
        return self.settings.thinking

    @property
    def can_think(self) -> bool:
        return can_think(self.config.api, self.model)

    @property
    def confinement(self) -> Confinement:
        """How the session's commands run (sandboxed unless `tools.sandbox` is off, whatever
        the permission mode: an approval lets a command run, not reach more)."""
        tools = self.settings.tools
        return confinement(
            tools.sandbox,
            tools.network,
            hidden=(*self._private_dirs, *private_user_dirs()),
            read_paths=tools.read_paths,
            limits=tools.limits,
        )

    def update_settings(self, settings: AgentSettings) -> None:
        """New settings, applied from the next turn. A model picked for this session and a
        thinking level or permission mode switched to stay, unless the setting itself
        changed."""
        self.config.update(settings)

    def set_mode(self, mode: str) -> PermissionMode:
        """Switch the permission mode, at once (a running turn's next tool call already
        follows it); "always" answers given so far are kept."""
        checked = parse_mode(mode)
        self.gate.set_mode(checked)
        self.config.choose_mode(checked)
        return checked

    async def switch_model(self, model_id: str) -> ModelSwitch:
        """Continue this session with another model of the same provider, between turns:
        the ledger records the change, the context stays as it is."""
        if self._busy:
            raise SessionBusyError(f"session {self.session_id} is busy with a turn")
        self._busy = True
        try:
            return await self.switcher.switch_model(model_id)
        finally:
            self._busy = False

    def switch_thinking(self, level: str) -> ThinkingSwitch:
        """Think at another level from the next request, between turns: the ledger records
        it, the note says what it costs."""
        if self._busy:
            raise SessionBusyError(f"session {self.session_id} is busy with a turn")
        return self.switcher.switch_thinking(level)

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
        # A prompt that starts with a command the user wrote (`/review app.py`) is its prompt.
        content = prompt_commands.expanded(
            (TextContent(prompt),) if isinstance(prompt, str) else tuple(prompt), self.workspace
        )
        turn_id = turn_id or uuid.uuid4().hex[:12]
        self._busy = True
        self._turn_began = self._stop_asked = False
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
        """Cancel the running turn, if any. Returns whether there was one.

        A turn whose task has not run yet (a cancel read in the same breath as its prompt)
        is not cancelled as a task: the CancelledError would hit it before its first line,
        skip its handling, and leave the caller without a result. It is told to stop at its
        start instead, and ends like any cancelled turn (the prompt kept, "cancelled").

        A turn already stopping is not cancelled again: the second cancel would cut its
        clean-up short (a command that ignores SIGTERM, killed after a grace, would be left
        running when the process ends right after, as a closing session's does)."""
        if self._turn_task is None or self._turn_task.done():
            return False
        if self._turn_began:
            if not self._turn_task.cancelling():
                self._turn_task.cancel()
        else:
            self._stop_asked = True
        return True

    async def compact(self, instructions: str | None = None) -> CompactionResult:
        """A manual compaction, between turns."""
        if self._busy:
            raise SessionBusyError(f"session {self.session_id} is busy with a turn")
        self._busy = True
        try:
            await self.switcher.apply_pending()
            self._settle_unsaved_results(None)
            self.context.begin_turn(None)
            result = await self.context.compact("manual", instructions=instructions)
            self._say_usage(self.usage_snapshot(result.view))
            return result
        finally:
            self._busy = False

    def pin(self, kind: PinKind, text: str) -> Pin:
        """The user pins a rule or a fact for the session (carried verbatim across every
        compaction); the model is told with a note. Raises PinError when it is refused."""
        pin = self.memory.pin(kind, text, "user")
        self.note(
            PIN_NOTE, f"The user pinned a {pin.kind} for the rest of this session: {pin.text}"
        )
        return pin

    def unpin(self, pin_id: str) -> Pin:
        """The user removes a pin (its id, or a unique start of it); the model is told."""
        pin = self.memory.unpin(pin_id, "user")
        self.note(
            PIN_NOTE, f"The user removed the pinned {pin.kind}, which no longer holds: {pin.text}"
        )
        return pin

    def rewind_plan(self, entry_id: str) -> RestorePlan:
        """What restoring the files to how they were at `entry_id` would change (see
        agent/checkpoints.py): shown to the user before they confirm a rewind."""
        return self.rewinder.plan(entry_id)

    @property
    def tool_specs(self) -> tuple[ToolSpec, ...]:
        """The tool list the next request sends."""
        return self._tools.specs()

    def mcp_status(self) -> McpStatus:
        return self._tools.status()

    def accept_tools(self) -> AcceptOutcome:
        """Take in the waiting change of the MCP tools (the next request re-reads the prefix)."""
        return self._tools.accept(busy=self._busy)

    def mcp_server_names(self) -> tuple[str, ...]:
        return self._tools.servers.names

    async def restart_mcp_server(self, name: str) -> bool:
        return await self._tools.servers.restart(name)

    async def reconfigure_mcp(self, configs: Sequence[McpServerConfig]) -> None:
        """New server configuration (settings or .mcp.json changed): servers that changed are
        restarted; the tool list in force stays until the user accepts the change."""
        await self._tools.servers.reconfigure(configs)

    async def rewind(
        self, entry_id: str, *, summarize: bool = False, restore: RestoreChoice = "conversation"
    ) -> Rewound:
        """Go back to an earlier point, between turns; nothing is deleted. `restore` says
        what goes back: the conversation, the files the agent wrote or edited since that
        point, or both; with `summarize`, the model gets a summary of the branch left
        (agent/rewind.py)."""
        if self._busy:
            raise SessionBusyError(f"session {self.session_id} is busy with a turn")
        self._busy = True
        try:
            return await self.rewinder.rewind(entry_id, summarize, restore)
        finally:
            self._busy = False

    def transcript(self, before: str | None = None, limit: int = DEFAULT_PAGE) -> Page:
        """A page of the current branch for display, as the items the live stream sends
        (agent/transcript.py): the latest one, or the one before the cursor `before`."""
        return transcript_page(self.ledger, self._tools.runnable(), before=before, limit=limit)

    def _say_usage(self, snapshot: UsageSnapshot) -> None:
        """Tell the front ends the meter, unless they have it: a turn's end after the answer
        that ended it is the same meter again (each front end sent it twice)."""
        if snapshot != self._usage_said:
            self._usage_said = snapshot
            self._emit(UsageUpdated(snapshot))

    def usage_snapshot(self, view: ContextView | None = None) -> UsageSnapshot:
        """The context meter for `view` (default: the ledger's context for the next call),
        with the turn's and the session's usage."""
        view = view or self.context.view()
        last_call = next(
            (
                usage
                for entry in reversed(view.entries)
                if isinstance(entry, MessageEntry) and (usage := usage_of(entry)) is not None
            ),
            None,
        )
        return UsageSnapshot(
            used=view.tokens,
            size=self.model.context_window,
            compact_at=self.context.compacts_above,
            window_number=self.context.window_number(view),
            last_call=last_call,
            cache_hit_rate=self.totals.cache_hit_rate,
            cost=self.totals.cost,
            calls=self.totals.calls,
            turn=self.calls.turn_totals.as_usage(),
            turn_calls=self.calls.turn_totals.calls,
            session=self.totals.as_usage(),
        )

    async def close(self) -> None:
        """End the session's work and release its ledger, then stop what it ran (again:
        nothing happens). The ledger goes first: the next process to open the session (the
        editor's window reloaded) waits for it, not for the MCP servers to exit (up to the
        SDK's 2 s each)."""
        if self._closing:
            return
        self._closing = True
        if self.interrupt() and self._turn_task is not None:
            # The cancelled turn writes its end (the prompt kept, "cancelled") to the ledger.
            await asyncio.wait([self._turn_task], timeout=TURN_END_WAIT)
        self.release_ledger()
        await self._watch.stop()
        await self._tools.servers.close()
        with contextlib.suppress(Exception):
            await self._setup.provider.aclose()

    def release_ledger(self) -> None:
        """Sync and close the ledger now, between turns (`close` stops the rest): a session
        closed to bound what a server holds open is free to reopen at once."""
        if self.ledger.closed:
            return
        try:
            save_choices(self._spill_dir, self.permission_choices(), self.config.configured_mode)
        except OSError as error:
            log.warning("cannot save the session's permission choices: %s", error)
        self.ledger.sync()
        self.ledger.close()
        # Closed: its servers stopping is not news (an editor would get "MCP server ...
        # stopped." for a session it has just closed, or over a closed connection).
        self._emit_to = ignore_events

    def permission_choices(self) -> PermissionChoices:
        """The user's choices only the open session holds (see PermissionChoices)."""
        return PermissionChoices(
            self.config.own_mode, self.gate.rules, self._tools.servers.answers
        )

    def restore_permission_choices(self, choices: PermissionChoices) -> None:
        """Take back the choices of `permission_choices` (the session reopened); its
        answers about `.mcp.json` are given to its servers when they are made (before they
        start: WorkspaceAgent)."""
        if choices.mode is not None:
            self.set_mode(choices.mode)
        self.gate.remember(choices.rules)

    # --- the turn -----------------------------------------------------------------------

    async def _turn(self, turn_id: str, content: tuple[UserContent, ...]) -> TurnResult:
        self._turn_began = True
        self._current_turn = turn_id
        self.calls.turn_totals = SessionTotals()
        self.context.begin_turn(turn_id)
        if self._watch_files:
            self._watch.start()
        state = _TurnState()
        stop: TurnStopReason = "end_turn"
        error: AgentServerError | None = None
        try:
            state.prompt = await self._start_turn(turn_id, content)
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
            self._current_turn = None
        return self._end_turn(turn_id, stop, error)

    async def _start_turn(self, turn_id: str, content: tuple[UserContent, ...]) -> MessageEntry:
        """The prompt in the ledger (after the settings waiting for it and the notes of what
        changed), announced; its entry."""
        await self.switcher.apply_pending()
        pause = self.context.pause()
        short = cache_ttl(self._setup.provider.api, self.model, "short")
        self._came_back = pause is not None and short is not None and pause > short
        prompt = await self._prompt_message(turn_id, content)
        self._settle_unsaved_results(turn_id)
        self._append_note_of_changes()
        entry = self.ledger.append_message(prompt)
        for attachment in prompt.attachments:
            if attachment.kind != "directory":
                self._watch.record(attachment.path)
        self._emit(TurnStarted(turn_id, entry.id, content, entry.parent_id, prompt.attachments))
        await self._approve_workspace_servers(turn_id)
        return entry

    async def _steps(self, turn_id: str, state: _TurnState) -> TurnStopReason:
        """Model calls and the tool calls they ask for, until an answer ends the turn or the
        `maxSteps` setting does."""
        for _step in range(self.settings.max_steps):
            stop = await self._step(turn_id, state)
            if stop is not None:
                return stop
        self._emit(
            Notice(
                turn_id,
                "warning",
                f"Stopped after {self.settings.max_steps} model calls in one turn "
                "(the maxSteps setting).",
            )
        )
        return "max_turn_requests"

    async def _step(self, turn_id: str, state: _TurnState) -> TurnStopReason | None:
        """One model call, and the tool calls it asks for; how the turn stops with it, or
        None when it goes on."""
        await self._tools.for_request()  # fixes the tool list, or takes an accepted change
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
        retention = self.retention_for_call()
        self.ledger.append_message(
            message, entry_id=state.attempt[0].message_id, cache_retention=retention
        )
        self.context.record_call(retention)
        if message.usage is not None:
            self.calls.count(message.usage, self.model)
        self._say_usage(self.usage_snapshot())
        self.context.check_answer_read(view, message)
        return message, view

    def _keep_interrupted(self, state: _TurnState) -> None:
        """An interrupted turn keeps what arrived of the answer, and answers the tool calls
        left open."""
        if state.streaming and state.attempt:
            partial = state.attempt[0].assembler.message(
                "aborted", model=self.model.id, api=self._setup.provider.api
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
        message = (
            state.attempt[0].assembler.message(
                "error", model=self.model.id, api=self._setup.provider.api
            )
            if streamed
            else AssistantMessage((), "error", model=self.model.id, api=self._setup.provider.api)
        )
        # Tool calls cut off mid-stream were never run: only the text and thinking are kept.
        content = tuple(b for b in message.content if isinstance(b, TextContent | ThinkingContent))
        message = replace(message, content=content, error_message=failure.message)
        with contextlib.suppress(AgentServerError):  # the file may not be writable
            self.ledger.append_message(
                message, entry_id=state.attempt[0].message_id if streamed else None
            )

    def _end_turn(
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
        self._say_usage(self.usage_snapshot())
        self._emit(TurnEnded(turn_id, stop, usage, result.error, result.error_code))
        return result

    # --- pieces -------------------------------------------------------------------------

    async def _prompt_message(self, turn_id: str, content: tuple[UserContent, ...]) -> UserMessage:
        """The prompt as recorded and sent: what its @-mentions attach, then what the user
        typed. A model that takes no images is not sent one."""
        attached = await attach_mentions(
            content,
            tools={tool.spec.name: tool for tool in self._tools.runnable()},
            context=self._tool_context(None),
        )
        for problem in attached.problems:
            self._emit(Notice(turn_id, "warning", problem))
        blocks = (*attached.blocks, *content)
        if not self.model.images and any(isinstance(b, ImageContent) for b in blocks):
            raise ConfigError(
                f"{self.model.name} does not take images: pick a model that does (the model "
                "picker, or /model in the terminal), or send the prompt without the image."
            )
        return UserMessage(blocks, attachments=attached.attachments)

    def _tokens_with_tools(self, specs: tuple[ToolSpec, ...]) -> int:
        """The estimated size of the next request if it sent `specs`: what it re-reads when
        the tool list changes (the tools come first in the prefix)."""
        view = self.context.view()
        fresh_from = view.projection.fresh_from if view.projection is not None else 0
        return estimate_context_tokens(
            replace(view.context, tools=specs), fresh_from=fresh_from
        ).tokens

    def _tool_context(self, on_output: Callable[[str], None] | None) -> ToolContext:
        tools = self.settings.tools
        return ToolContext(
            workspace=self.workspace,
            spill_dir=self._spill_dir,
            on_output=on_output,
            secrets=(*self._secrets, *self._tools.servers.secrets),
            bash_timeout=self.settings.bash_timeout,
            in_context=self._in_context,
            files=self._files,
            memory=self.memory,
            limits=output_limits(self.context.threshold),
            session_files=tuple(self._watch.tracked),
            repo_map_tokens=tools.repo_map_tokens,
            env_pass=tools.env_pass,
            confinement=self.confinement,
            context_share=self.context.share_of_threshold,
            terminal=self._terminal,
            history=lambda: recallable(self.ledger.tree.branch()),
        )

    def _hook_environment(self) -> dict[str, str]:
        """What a compaction hook's command gets: a tool command's environment."""
        secrets = (*self._secrets, *self._tools.servers.secrets)
        return tool_environment(os.environ, secrets, self.settings.tools.env_pass).env

    def _files_of(self, call: ToolCall) -> tuple[str, tuple[str, ...]]:
        """The kind of a tool call's tool and the files the call reads or writes, as its
        tool says."""
        tool = self._runner.tool(call.name)
        return (tool.kind, tool.paths(call.arguments)) if tool is not None else ("other", ())

    def _paths_of(self, call: ToolCall) -> tuple[str, ...]:
        return self._files_of(call)[1]

    def _append_note_of_changes(self) -> None:
        """Files the agent knows that changed behind its back, as a note for the model; and
        the notes waiting for such a point (a pin the user changed during a turn)."""
        changed = self._watch.take_changes()
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
        if self._busy:
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
                for path in self._paths_of(call):
                    self._watch.record(path)
        for call in calls:
            result = results.get(call.id)
            if result is None:
                # Stopped before it finished: the editor's card ends as the ledger records it.
                result = aborted_result(call)
                self._emit(
                    ToolCallUpdated(
                        self._current_turn or "",
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
        servers = self._tools.servers
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

    def _settle_unsaved_results(self, turn_id: str | None) -> None:
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
                self._current_turn,
                "info",
                f"{path} changed on disk; the agent will be told with its next message.",
            )
        )

    def _emit(self, event: AgentEvent) -> None:
        try:
            self._emit_to(event)
        except Exception:  # a broken UI must not break the agent
            log.exception("event sink failed on %s", type(event).__name__)
