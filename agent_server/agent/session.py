"""An agent session: one ledger, one model, the tools, and the parts that work on them.

The session is a facade: it says when each part may act (one thing at a time: a turn, a
compaction, a rewind, a switch of model), and holds them: the turn loop (agent/turn.py), the
model calls (model_calls.py), the context manager (context_manager.py), switches of model
and thinking (model_switch.py), rewinds (rewind.py), the tool list and its MCP servers
(`tools`: mcp/session_tools.py), the pins and the plan (`memory`), the permission gate and
the context meter (`usage`: usage_meter.py).

Nothing here is specific to a front end: the LSP server (lsp/) and any other (an ACP agent,
the terminal) drive the same API: `run_turn`, `interrupt`, `compact`, `rewind`,
`usage.snapshot`, `transcript`, and the events given to `attach`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from agent_server.agent import prompt_commands
from agent_server.agent.checkpoints import BlobStore
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
    ignore_events,
)
from agent_server.agent.mcp.servers import McpServers
from agent_server.agent.mcp.session_tools import SessionTools
from agent_server.agent.memory import PIN_NOTE, SessionMemory
from agent_server.agent.model_call import RetryPolicy
from agent_server.agent.model_calls import ModelCalls
from agent_server.agent.model_switch import ModelSwitch, ModelSwitcher, ThinkingSwitch
from agent_server.agent.permissions import (
    AskCallback,
    PermissionChoices,
    PermissionGate,
    PermissionMode,
    parse_mode,
    save_choices,
)
from agent_server.agent.rewind import RestoreChoice, Rewinder, Rewound
from agent_server.agent.session_config import (
    ModelSetup,
    SessionConfig,
)
from agent_server.agent.settings import AgentSettings
from agent_server.agent.tools import Tool
from agent_server.agent.tools.base import CommandTerminal
from agent_server.agent.tools.command_input import CommandInputs
from agent_server.agent.tools.files import FileAccess
from agent_server.agent.tools.sandbox import Confinement, confinement, private_user_dirs
from agent_server.agent.transcript import DEFAULT_PAGE, Page
from agent_server.agent.transcript import page as transcript_page
from agent_server.agent.turn import TurnLoop, TurnResult
from agent_server.agent.usage_meter import UsageMeter
from agent_server.context.estimate import estimate_context_tokens
from agent_server.errors import SessionBusyError
from agent_server.llm.cost import SessionTotals
from agent_server.llm.messages import TextContent, ToolSpec, UserContent
from agent_server.llm.models import ModelInfo
from agent_server.llm.providers import can_think
from agent_server.llm.stream import (
    CacheRetention,
    ThinkingLevel,
)
from agent_server.session.entries import Pin, PinKind
from agent_server.session.ledger import Ledger

log = logging.getLogger(__name__)


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
        self._spill_dir = spill_dir
        self._closing = False  # `close` has begun (it runs once)
        self._busy = False
        self._user_idle = False  # the editor says the user is away (agent/userIdle)
        self.gate = PermissionGate(settings.permissions_mode, ask, assume_yes=assume_yes)
        # The one tool list in force (built-in, then MCP: mcp/session_tools), the context's
        # too; the MCP servers' status, restarts and changes are reached through it.
        self.tools = SessionTools(
            ledger=ledger,
            builtin=tools,
            servers=mcp or McpServers((), state_dir=spill_dir),
            estimate=lambda specs: tokens_with_tools(self.context.view(), specs),
            on_status=lambda status: self._emit(McpStatusChanged(status)),
            on_notice=lambda text: self._emit(
                Notice(self.turns.current, "info", text, topic="toolsChanged")
            ),
            first_wait=lambda: self.settings.mcp.first_request_wait,
            busy=lambda: self._busy,
        )
        self.calls = ModelCalls(
            ledger, self.config, self._emit, retry or RetryPolicy(), self.retention_for_call,
            lambda: self.turns.current,
        )
        self.context = ContextManager(
            ledger=ledger, system_prompt=system_prompt, tools=self.tools, config=self.config,
            call=self.calls.summary, emit=self._emit, clock=clock, policy=policy,
            files_of=self.tools.files_of, rewind=rewind,
            hooks=CompactionHookRunner(
                workspace, ledger.header.session_id, lambda: self.turns.hook_environment()
            ),
        )
        self.switcher = ModelSwitcher(
            self.config, ledger, self.context, self.gate, self._emit, self.retention_for_call,
            clock, lambda: self.turns.current, reconnect,
        )
        # The pins and the plan (ledger entries); a note of a pin the user changed waits for
        # the next point where the conversation can take one (never inside a tool call's
        # results).
        self.memory = SessionMemory(
            ledger, self._emit, lambda: self.context.threshold, lambda: self.turns.current
        )
        self.usage = UsageMeter(self.context, self.calls, self.config, self._emit)
        self.turns = TurnLoop(
            ledger=ledger, workspace=workspace, config=self.config, context=self.context,
            calls=self.calls, switcher=self.switcher, tools=self.tools, gate=self.gate,
            memory=self.memory, usage=self.usage, emit=self._emit,
            retention=self.retention_for_call, confinement=lambda: self.confinement,
            busy=lambda: self._busy, spill_dir=spill_dir, secrets=secrets,
            checkpoints=checkpoints, private_dirs=private_dirs, watch_files=watch_files,
        )
        self.rewinder = Rewinder(
            ledger, workspace, checkpoints, private_dirs, self.turns.watch, self.tools.paths_of,
            self.context, self._emit,
        )
        with contextlib.suppress(RuntimeError):  # no running loop: the first turn starts them
            asyncio.get_running_loop()
            self.tools.servers.start()

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
            self.turns.files = files
        self.turns.terminal = terminal

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
        return "long" if self._user_idle or self.turns.came_back else "short"

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
        self,
        prompt: str | Sequence[UserContent],
        turn_id: str | None = None,
        command_input: CommandInputs | None = None,
    ) -> TurnResult:
        """Run one turn to its end. Cancelling the caller cancels the turn, which still
        returns its result (stop reason "cancelled"). `command_input`: where its commands'
        standard input comes from (the editor's terminal; None: nowhere)."""
        if self._busy:
            raise SessionBusyError(
                f"session {self.session_id} is busy with another turn; wait for it to end "
                "or interrupt it"
            )
        # A prompt that starts with a command the user wrote (`/review app.py`) is its prompt.
        content = prompt_commands.expanded(
            (TextContent(prompt),) if isinstance(prompt, str) else tuple(prompt), self.workspace
        )
        self._busy = True
        try:
            return await self.turns.run(turn_id or uuid.uuid4().hex[:12], content, command_input)
        finally:
            self._busy = False

    def interrupt(self) -> bool:
        """Cancel the running turn, if any (TurnLoop.interrupt). Returns whether there was
        one."""
        return self.turns.interrupt()

    async def compact(self, instructions: str | None = None) -> CompactionResult:
        """A manual compaction, between turns."""
        if self._busy:
            raise SessionBusyError(f"session {self.session_id} is busy with a turn")
        self._busy = True
        try:
            await self.switcher.apply_pending()
            self.turns.settle_unsaved_results(None)
            self.context.begin_turn(None)
            result = await self.context.compact("manual", instructions=instructions)
            self.usage.tell(result.view)
            return result
        finally:
            self._busy = False

    def pin(self, kind: PinKind, text: str) -> Pin:
        """The user pins a rule or a fact for the session (carried verbatim across every
        compaction); the model is told with a note. Raises PinError when it is refused."""
        pin = self.memory.pin(kind, text, "user")
        self.turns.note(
            PIN_NOTE, f"The user pinned a {pin.kind} for the rest of this session: {pin.text}"
        )
        return pin

    def unpin(self, pin_id: str) -> Pin:
        """The user removes a pin (its id, or a unique start of it); the model is told."""
        pin = self.memory.unpin(pin_id, "user")
        self.turns.note(
            PIN_NOTE, f"The user removed the pinned {pin.kind}, which no longer holds: {pin.text}"
        )
        return pin

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
        return transcript_page(self.ledger, self.tools.runnable(), before=before, limit=limit)

    async def close(self) -> None:
        """End the session's work and release its ledger, then stop what it ran (again:
        nothing happens). The ledger goes first: the next process to open the session (the
        editor's window reloaded) waits for it, not for the MCP servers to exit (up to the
        SDK's 2 s each)."""
        if self._closing:
            return
        self._closing = True
        await self.turns.stop()  # the cancelled turn writes its end to the ledger
        self.release_ledger()
        await self.turns.watch.stop()
        await self.tools.servers.close()
        with contextlib.suppress(Exception):
            await self.config.setup.provider.aclose()

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
            self.config.own_mode, self.gate.rules, self.tools.servers.answers
        )

    def restore_permission_choices(self, choices: PermissionChoices) -> None:
        """Take back the choices of `permission_choices` (the session reopened); its
        answers about `.mcp.json` are given to its servers when they are made (before they
        start: WorkspaceAgent)."""
        if choices.mode is not None:
            self.set_mode(choices.mode)
        self.gate.remember(choices.rules)

    def _emit(self, event: AgentEvent) -> None:
        try:
            self._emit_to(event)
        except Exception:  # a broken UI must not break the agent
            log.exception("event sink failed on %s", type(event).__name__)


def tokens_with_tools(view: ContextView, specs: tuple[ToolSpec, ...]) -> int:
    """The estimated size of the next request from `view` if it sent `specs`: what it
    re-reads when the tool list changes (the tools come first in the prefix)."""
    fresh_from = view.projection.fresh_from if view.projection is not None else 0
    return estimate_context_tokens(replace(view.context, tools=specs), fresh_from=fresh_from).tokens
