"""The agent side of one workspace folder: its settings, its session store, its open sessions.

The LSP server keeps one per folder; the CLI keeps one for the current directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from agent_server.agent.checkpoints import BlobStore
from agent_server.agent.context_manager import ContextPolicy, RewindBy
from agent_server.agent.events import EventSink, ignore_events
from agent_server.agent.mcp.approval import NO_ANSWERS, workspace_approvals
from agent_server.agent.mcp.config import McpServerConfig, default_user_file, load_server_configs
from agent_server.agent.mcp.servers import McpServers
from agent_server.agent.model_call import RetryPolicy
from agent_server.agent.model_choice import ModelChoice, choices
from agent_server.agent.model_setup import connect, model_registry, secrets_of
from agent_server.agent.permissions import AskCallback, PermissionChoices, load_choices
from agent_server.agent.session import AgentSession
from agent_server.agent.session_config import ModelSetup
from agent_server.agent.settings import AgentSettings
from agent_server.agent.system_prompt import build_system_prompt
from agent_server.agent.tools import default_tools
from agent_server.agent.tools.sandbox import protect_server_process, sandbox_status
from agent_server.errors import (
    AgentServerError,
    SessionBusyError,
    SessionLockedError,
    SessionNotFoundError,
    UnknownModelError,
)
from agent_server.llm.providers import load_sdk, provider_spec, serves
from agent_server.llm.stream import THINKING_LEVELS, ThinkingLevel
from agent_server.repo_map import available as repo_map_available
from agent_server.session.entries import ModelChangeEntry, SystemPromptEntry, TitleEntry
from agent_server.session.ledger import Ledger
from agent_server.session.store import SessionInfo, SessionStore, default_sessions_root

log = logging.getLogger(__name__)

# How long opening a session that another process holds waits for it to let go: an editor
# that restarts its agent loads the session at once, while the old process is on its way out
# (it lets the ledger go first thing when it closes). Past this, the SessionLocked error.
HOLDER_EXIT_WAIT = 5.0
_LOCK_POLL = 0.1

Connect = Callable[[AgentSettings], ModelSetup]


def model_choices(settings: AgentSettings) -> list[ModelChoice]:
    """The models a session with these settings can switch to (its provider's)."""
    return choices(settings.provider, model_registry(settings))


def preload_sandbox() -> None:
    """Find out whether commands can be sandboxed here (a session's state says so), before
    a session asks: for a background thread while the editor starts."""
    sandbox_status()


def preload_provider(provider: str) -> None:
    """Start loading `provider`'s SDK (a second or more of imports) on a thread of its own,
    so that the first model call finds it loaded: once a session is shown, while the user
    types. Nothing waits for it but that call."""
    load_sdk(provider)


def sessions_root(settings: AgentSettings) -> Path:
    """The folder that holds every workspace's sessions (`sessionsDir`, else the default)."""
    if settings.sessions_dir:
        return Path(settings.sessions_dir).expanduser()
    return default_sessions_root()


class WorkspaceAgent:
    def __init__(
        self,
        root: Path,
        settings: AgentSettings,
        *,
        connect_to: Connect = connect,
        retry: RetryPolicy | None = None,
        env: Mapping[str, str] | None = None,
        watch_files: bool = True,
        clock: Callable[[], float] = time.time,
        rewind: RewindBy = "entry",
    ) -> None:
        """`clock` is the sessions' (the pause since the last call is read from it: tests
        and benchmarks share one with the simulator). `rewind`: how the front end lets the
        user rewind (RewindBy: to an entry in the editor, to a prompt in the terminal, not at
        all in an ACP editor): the advice of its sessions' errors follows it."""
        self.rewind = rewind
        protect_server_process()  # the commands it runs must not read its keys from /proc
        self.root = root.resolve()
        self.settings = settings
        self._connect = connect_to
        self._retry = retry
        self._env = env
        self._watch_files = watch_files
        self._clock = clock
        self.sessions: dict[str, AgentSession] = {}
        self._created: set[str] = set()  # sessions this agent made (kept only if used)
        self.user_idle = False  # the editor says the user is away (cacheRetention "auto")
        self.store = self._make_store(settings)
        # MCP servers a front end gave one session (an ACP client's mcpServers), by session id.
        self._mcp_extra: dict[str, tuple[McpServerConfig, ...]] = {}
        self._background: set[asyncio.Task[None]] = set()
        # Sessions `evict` closed: the user's choices only they held, for their reopening,
        # and the rest of their closing (MCP servers, the file watch) under way.
        self._evicted: dict[str, PermissionChoices] = {}
        self._stopping: set[asyncio.Task[None]] = set()

    def _make_store(self, settings: AgentSettings) -> SessionStore:
        return SessionStore(sessions_root(settings), self.root, clock=self._clock)

    def set_user_idle(self, idle: bool) -> None:
        """The editor says whether the user is away: every session, and those opened later."""
        self.user_idle = idle
        for session in self.sessions.values():
            session.set_user_idle(idle)

    def update_settings(self, settings: AgentSettings) -> None:
        """Applied to each open session at once between turns, else from its next turn."""
        if settings.sessions_dir != self.settings.sessions_dir:
            self.store = self._make_store(settings)
        if settings.permissions_mode != self.settings.permissions_mode:
            # As in an open session: a mode switched to holds until the setting changes.
            self._evicted = {
                sid: replace(choices, mode=None) for sid, choices in self._evicted.items()
            }
        self.settings = settings
        for session in self.sessions.values():
            session.update_settings(settings)
            self._apply_between_turns(session)
        for session in self.sessions.values():
            self._reconfigure_mcp(session)

    def _apply_between_turns(self, session: AgentSession) -> None:
        """New settings take effect at once in a session between turns: a change of the model
        or the thinking level is recorded and said with what it costs now (the editor's picker
        follows it), not with the next prompt, after it is paid. One that cannot be applied
        (a model the provider does not serve) waits for the next turn, which says why."""
        if session.busy:
            return  # from its next turn

        async def apply() -> None:
            try:
                await session.switcher.apply_pending()
            except AgentServerError as error:  # still pending: the next turn says it
                log.warning("settings not applied: %s", error.message)

        with contextlib.suppress(RuntimeError):  # no running loop: nothing runs yet
            asyncio.get_running_loop()
            task = asyncio.create_task(apply())
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    def _reconfigure_mcp(self, session: AgentSession) -> None:
        """Restart what changed in the session's MCP servers (in the background)."""
        configs = self.mcp_configs(self.settings, self._mcp_extra.get(session.session_id, ()))
        with contextlib.suppress(RuntimeError):  # no running loop: nothing runs yet
            asyncio.get_running_loop()
            task = asyncio.create_task(session.tools.servers.reconfigure(configs))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    def mcp_configs(
        self, settings: AgentSettings, extra: Sequence[McpServerConfig] = ()
    ) -> tuple[McpServerConfig, ...]:
        """The MCP servers a session of this workspace starts (docs/mcp.md, Configuration)."""
        options = settings.mcp
        if options.user_file is None:
            user_file: Path | None = default_user_file()
        else:
            user_file = Path(options.user_file).expanduser() if options.user_file else None
        return load_server_configs(
            self.root,
            settings_servers=options.servers,
            user_file=user_file,
            workspace_file=options.workspace_file,
            extra=extra,
            env=self._env if self._env is not None else os.environ,
        )

    def list(self) -> list[SessionInfo]:
        return self.store.list()

    def default_model(self) -> str:
        """The model a new session starts with."""
        return self.settings.model or provider_spec(self.settings.provider).default_model

    def create(
        self,
        *,
        model: str | None = None,
        title: str | None = None,
        emit: EventSink = ignore_events,
        ask: AskCallback | None = None,
        assume_yes: bool = False,
        policy: ContextPolicy | None = None,
        mcp_servers: Sequence[McpServerConfig] = (),
        thinking: ThinkingLevel | None = None,
        carried: PermissionChoices | None = None,
    ) -> AgentSession:
        """A new session. `policy` replaces the product's context handling (benchmarks only);
        `mcp_servers` are added to the configured ones for this session (a front end's).
        `thinking` and `carried` bring another session's choices over (the terminal's /new):
        its thinking level, and its permission mode and "always" answers (PermissionChoices)."""
        settings = self.settings.with_overrides(model=model) if model else self.settings
        if thinking is not None:
            settings = settings.with_overrides(thinking=thinking)
        setup = self._connect(settings)
        ledger = self.store.create(self.root, title=title, model=setup.model.id)
        ledger.add(ModelChangeEntry, setup.provider.api, setup.model.id, settings.thinking)
        ledger.add(SystemPromptEntry, build_system_prompt(self.root))
        ledger.sync()
        self._mcp_extra[ledger.session_id] = tuple(mcp_servers)
        self._created.add(ledger.session_id)
        return self._start(ledger, settings, setup, emit, ask, assume_yes, policy, carried)

    def open(
        self,
        session_id: str,
        *,
        emit: EventSink = ignore_events,
        ask: AskCallback | None = None,
        assume_yes: bool = False,
        mcp_servers: Sequence[McpServerConfig] | None = None,
    ) -> AgentSession:
        """An open session, or the session loaded from its ledger. `mcp_servers` (a front
        end's) replace the ones it was given before, when not None."""
        if mcp_servers is not None:
            self._mcp_extra[session_id] = tuple(mcp_servers)
        session = self.sessions.get(session_id)
        if session is not None:
            if mcp_servers is not None:
                self._reconfigure_mcp(session)
            return session
        if not self.store.exists(session_id):
            raise SessionNotFoundError(f"no session {session_id} in workspace {self.root}")
        return self._resume(self.store.open(session_id), emit, ask, assume_yes)

    def fork(
        self,
        session_id: str,
        *,
        emit: EventSink = ignore_events,
        ask: AskCallback | None = None,
        assume_yes: bool = False,
        mcp_servers: Sequence[McpServerConfig] | None = None,
    ) -> AgentSession:
        """A new session that goes on from where `session_id` is (SessionStore.fork: its
        conversation, every branch, its saved outputs and permission answers), opened as a
        loaded session is; `session_id` stays as it is, open or not. `mcp_servers` (a front
        end's): the fork's, else the source's."""
        if not self.store.exists(session_id):
            raise SessionNotFoundError(f"no session {session_id} in workspace {self.root}")
        source = self.sessions.get(session_id)
        if source is not None and source.busy:
            raise SessionBusyError(
                f"session {session_id} is running a turn: fork it when the turn has ended "
                "(or interrupt it)"
            )
        if source is not None:
            source.ledger.sync()  # what was appended so far is on disk to be copied
        ledger = self.store.fork(session_id)
        if ledger.facts.title:
            ledger.add(TitleEntry, f"{ledger.facts.title} (fork)")
            ledger.sync()
        given = self._mcp_extra.get(session_id, ()) if mcp_servers is None else mcp_servers
        self._mcp_extra[ledger.session_id] = tuple(given)
        # An open source's answers as they are now (the copied folder has them as saved).
        carried = source.permission_choices() if source is not None else None
        return self._resume(ledger, emit, ask, assume_yes, carried)

    def _resume(self, ledger: Ledger, emit: EventSink, ask: AskCallback | None,
                assume_yes: bool, carried: PermissionChoices | None = None) -> AgentSession:
        """A session on a ledger that was written before: with its own model and thinking."""
        try:
            settings, setup = self._reopen(ledger.facts.latest_model())
            # It keeps the thinking level it was left at (ledgers from before it was
            # recorded: off, which is what they sent).
            recorded = ledger.facts.latest_thinking() or "off"
            if recorded in THINKING_LEVELS:
                settings = settings.with_overrides(thinking=recorded)
            if setup.model.id != ledger.facts.latest_model():
                ledger.add(ModelChangeEntry, setup.provider.api, setup.model.id, settings.thinking)
        except BaseException:
            ledger.close()
            raise
        return self._start(ledger, settings, setup, emit, ask, assume_yes, carried=carried)

    async def open_when_free(
        self,
        session_id: str,
        *,
        emit: EventSink = ignore_events,
        ask: AskCallback | None = None,
        mcp_servers: Sequence[McpServerConfig] | None = None,
        wait: float = HOLDER_EXIT_WAIT,
    ) -> AgentSession:
        """`open`, tried again while another process holds the session, for up to `wait`
        seconds (a front end's load: the holder may be the editor's previous agent, exiting)."""
        deadline = time.monotonic() + wait
        while True:
            try:
                return self.open(session_id, emit=emit, ask=ask, mcp_servers=mcp_servers)
            except SessionLockedError:
                if time.monotonic() + _LOCK_POLL > deadline:
                    raise
            await asyncio.sleep(_LOCK_POLL)

    def _reopen(self, recorded: str | None) -> tuple[AgentSettings, ModelSetup]:
        """A reopened session keeps its own model (the one it last switched to), when the
        provider still serves it; else it takes the configured one."""
        if recorded is not None and recorded != self.settings.model:
            settings = self.settings.with_overrides(model=recorded)
            try:
                setup = self._connect(settings)
            except UnknownModelError:
                pass
            else:
                if serves(settings.provider, setup.model, settings.base_url):
                    return settings, setup
                with contextlib.suppress(Exception):
                    asyncio.get_running_loop().create_task(setup.provider.aclose())
        return self.settings, self._connect(self.settings)

    def has(self, session_id: str) -> bool:
        return session_id in self.sessions or self.store.exists(session_id)

    def _start(
        self,
        ledger: Ledger,
        settings: AgentSettings,
        setup: ModelSetup,
        emit: EventSink,
        ask: AskCallback | None,
        assume_yes: bool,
        policy: ContextPolicy | None = None,
        carried: PermissionChoices | None = None,
    ) -> AgentSession:
        system_prompt = ledger.facts.system_prompt() or build_system_prompt(self.root)
        session_dir = self.store.session_dir(ledger.header.session_id)
        # Reopened after `evict`: what the user chose while it was open (or, new, what they
        # chose in the session it follows: `create`'s `carried`).
        choices = (
            self._evicted.pop(ledger.header.session_id, None)
            or carried
            or load_choices(session_dir, settings.permissions_mode)
        )
        mcp = McpServers(
            self.mcp_configs(settings, self._mcp_extra.get(ledger.header.session_id, ())),
            state_dir=session_dir,
            startup_timeout=settings.mcp.startup_timeout,
            tool_timeout=settings.mcp.tool_timeout,
            root=self.root,
            max_result_bytes=settings.mcp.max_result_mb * 1024 * 1024,
            approvals=workspace_approvals(self.root, self.store.root, default_sessions_root()),
            answers=choices.mcp_files if choices is not None else NO_ANSWERS,
        )
        session = AgentSession(
            ledger=ledger,
            workspace=self.root,
            settings=settings,
            setup=setup,
            system_prompt=system_prompt,
            tools=default_tools(repo_map=settings.tools.repo_map and repo_map_available()),
            spill_dir=session_dir,
            mcp=mcp,
            ask=ask,
            assume_yes=assume_yes,
            emit=emit,
            retry=self._retry,
            secrets=secrets_of(settings, self._env),
            watch_files=self._watch_files,
            reconnect=self._connect,
            policy=policy,
            clock=self._clock,
            configured=self.settings,
            checkpoints=BlobStore(self.store.checkpoint_dir(self.root)),
            private_dirs=(self.store.root,),
            rewind=self.rewind,
        )
        session.set_user_idle(self.user_idle)
        if choices is not None:
            session.restore_permission_choices(choices)
        self.sessions[session.session_id] = session
        return session

    def keep(self, session_id: str) -> None:
        """Keep a session this agent created even if it never gets a prompt: its client has
        its id and may load it later, from another process (an ACP client's named session)."""
        self._created.discard(session_id)

    def evict(self, session_id: str) -> bool:
        """Close an open session between turns to bound what a long-lived front end holds
        (the LSP server's cap on open sessions); whether it was closed (not when it is busy
        or not open). Its ledger is released at once, so that a request naming it in the
        next breath reopens it (`open`); its MCP servers and file watch stop in the
        background. Unlike `close_session`, nothing is deleted: a session this agent created
        that has no prompt yet is kept (the editor holds its id and may prompt it), and is
        removed by `close` if it still has none then. Reopened, it has back the user's
        choices only the open session held (its permission mode, its "always" answers, its
        answers about the workspace's `.mcp.json`: PermissionChoices)."""
        session = self.sessions.get(session_id)
        if session is None or session.busy:
            return False
        del self.sessions[session_id]
        self._evicted[session_id] = session.permission_choices()
        session.release_ledger()
        task = asyncio.create_task(session.close())
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)
        return True

    async def close_session(self, session_id: str) -> None:
        """Close one open session (its MCP servers stop, its ledger is released); one this
        agent created that never got a prompt (opened and left) is deleted, so that the
        session list holds only conversations. Closing a session not open does nothing."""
        session = self.sessions.pop(session_id, None)
        self._mcp_extra.pop(session_id, None)
        self._evicted.pop(session_id, None)
        if session is None:
            return
        await session.close()
        if session_id in self._created and session.ledger.facts.meta.prompt_count == 0:
            self._remove_unused(session_id)
        self._created.discard(session_id)

    def _remove_unused(self, session_id: str) -> None:
        try:
            self.store.delete(session_id)
        except (OSError, AgentServerError) as error:
            log.warning("cannot remove unused session %s: %s", session_id, error)

    async def delete(self, session_id: str) -> None:
        """Close the session if it is open, then remove it for good (ledger, outputs)."""
        self._created.discard(session_id)
        await self.close_session(session_id)
        self.store.delete(session_id)

    async def close(self) -> None:
        """Close every session (see `close_session`)."""
        for task in list(self._background):
            task.cancel()
        for session_id in list(self.sessions):
            await self.close_session(session_id)
        if self._stopping:
            await asyncio.wait(list(self._stopping))
        for session_id in self._created & set(self._evicted):
            # Created here, evicted, not reopened: kept only if it got a prompt.
            with contextlib.suppress(OSError, AgentServerError):
                if self.store.info(session_id).prompt_count == 0:
                    self._remove_unused(session_id)
        self.sessions.clear()
        self._created.clear()
        self._evicted.clear()
