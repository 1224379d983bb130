"""`agent-server acp`: the agent as an Agent Client Protocol server on stdio.

`AcpAgent` implements the SDK's `Agent` interface on the agent layer: one WorkspaceAgent per
working directory, one AgentSession per ACP session (the same ledger, context management,
tools and permission gate as `serve`). Events become `session/update` notifications through
one ordered outbox; permission questions become `session/request_permission`; the file tools
read and write through the editor when it offers `fs/*`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from acp import PROTOCOL_VERSION, RequestError, run_agent
from acp.interfaces import Agent, Client
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    AudioContentBlock,
    ClientCapabilities,
    CloseSessionResponse,
    DeleteSessionResponse,
    EmbeddedResourceContentBlock,
    ForkSessionResponse,
    HttpMcpServer,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionModeState,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    SseMcpServer,
    TextContentBlock,
)
from acp.stdio import stdio_streams
from acp.task import MessageSender, TaskSupervisor
from pydantic import BaseModel

from agent_server import __version__, protocol
from agent_server.acp.auth import auth_methods, auth_required, authenticate
from agent_server.acp.files import EditorFiles
from agent_server.acp.terminal import EditorTerminal
from agent_server.acp.transport import CheckedTransport
from agent_server.acp.updates import (
    ClientUpdates,
    EventTranslator,
    PromptError,
    SessionUpdate,
    acp_stop_reason,
    agent_text,
    available_commands,
    config_options,
    mode_state,
    mode_update,
    notice_text,
    options_update,
    own_message_id,
    pins_text,
    plan_update,
    prompt_content,
    prompt_title,
    replay_updates,
    slash_command,
    takes_argument,
    title_update,
    usage_text,
    usage_update,
)
from agent_server.agent.config_file import flag_overrides, load_config, resolve_settings
from agent_server.agent.events import AgentEvent
from agent_server.agent.mcp.config import McpServerConfig, servers_from_acp
from agent_server.agent.memory import pin_argument
from agent_server.agent.model_setup import offered_models
from agent_server.agent.permissions import PERMISSION_MODES, PermissionRequest
from agent_server.agent.session import AgentSession
from agent_server.agent.settings import AgentSettings
from agent_server.agent.workspace import (
    WorkspaceAgent,
    preload_provider,
    preload_sandbox,
    sessions_root,
)
from agent_server.ending_signals import EndingSignals
from agent_server.errors import (
    AgentServerError,
    ConfigError,
    MissingApiKeyError,
    SessionBusyError,
    SessionNotFoundError,
)
from agent_server.jsonrpc import INTERNAL_ERROR
from agent_server.llm.messages import usage_to_json
from agent_server.llm.models import ModelInfo
from agent_server.llm.providers import can_think
from agent_server.llm.stream import THINKING_LEVELS, ThinkingLevel
from agent_server.session.entries import TitleEntry
from agent_server.session.store import SessionInfo as StoredSession
from agent_server.session.store import SessionStore

log = logging.getLogger(__name__)

# The SDK's default: room for pasted images and long embedded files on one line.
STDIO_LIMIT = 50 * 1024 * 1024
RESOURCE_NOT_FOUND = -32002
REPLAY_PAGE = 500  # transcript entries read at a time when a session is loaded


def request_error(error: AgentServerError) -> RequestError:
    """An agent error as a JSON-RPC error: ACP's "resource not found" for an unknown session,
    "authentication required" for a missing API key, the editor protocol's code for the
    others it names (a session open in another process: -33005 SessionLocked; docs/protocol.md),
    Internal error otherwise; the message says what to do, `data.code` names the error."""
    if isinstance(error, MissingApiKeyError):
        return auth_required(error)
    if isinstance(error, SessionNotFoundError):
        return RequestError(RESOURCE_NOT_FOUND, error.message, {"code": error.code})
    code = protocol.ERROR_CODES[error.rpc] if error.rpc else INTERNAL_ERROR
    return RequestError(code, error.message, {"code": error.code})


def invalid_params(message: str) -> RequestError:
    return RequestError(-32602, message)


class UpdateQueue:
    """Session updates in the order the agent made them, sent one at a time.

    Agent events arrive synchronously; the SDK sends asynchronously. A request handler that
    must have its updates out before it answers (a prompt, a load) drains the outbox first.
    """

    def __init__(self, client: Client, raw: RawSender | None = None) -> None:
        self._client = client
        self._raw = raw
        self._queue: asyncio.Queue[tuple[str, SessionUpdate]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def put(self, session_id: str, update: SessionUpdate) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._send_all())
        self._queue.put_nowait((session_id, update))

    async def drain(self) -> None:
        await self._queue.join()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _send_all(self) -> None:
        while True:
            session_id, update = await self._queue.get()
            try:
                if isinstance(update, dict):  # one the SDK has no model for (RawUpdate)
                    if self._raw is not None:
                        await self._raw(session_id, update)
                else:
                    await self._client.session_update(session_id=session_id, update=update)
            except Exception as error:  # a gone client must not stop the agent's work
                log.warning("session/update %s not sent: %s", update_kind(update), error)
            finally:
                self._queue.task_done()


RawSender = Callable[[str, dict[str, Any]], Awaitable[None]]


def update_kind(update: SessionUpdate) -> str:
    return str(update.get("sessionUpdate")) if isinstance(update, dict) else update.session_update


@dataclass
class AcpSession:
    """One ACP session: the agent's session, where it runs, and what the client chose."""

    session: AgentSession
    cwd: Path
    translator: EventTranslator
    settings: AgentSettings  # the settings the client's choices add up to
    title: str | None = None
    # The models the session switched away from: those the provider's catalogue does not
    # list stay offered (AcpAgent._models), so that the client can switch back.
    own_models: list[ModelInfo] = field(default_factory=list)
    command: asyncio.Task[None] | None = None  # a slash command running (/compact), to cancel


class AcpAgent:
    """The ACP agent: the SDK calls these methods, one task per request."""

    def __init__(self, settings: AgentSettings, wire: CheckedTransport | None = None) -> None:
        self._settings = settings
        self._wire = wire  # for what the SDK does not model (ACP 1.7's newer updates)
        self._updates = ClientUpdates()
        self._client: Client | None = None
        self._outbox: UpdateQueue | None = None
        self._capabilities = ClientCapabilities()
        self._workspaces: dict[Path, WorkspaceAgent] = {}
        self._sessions: dict[str, AcpSession] = {}

    # --- connection -----------------------------------------------------------------------

    def on_connect(self, conn: Client) -> None:
        self._client = conn
        self._outbox = UpdateQueue(conn, self._wire.send_update if self._wire else None)

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError("the ACP connection is not open")
        return self._client

    @property
    def outbox(self) -> UpdateQueue:
        if self._outbox is None:
            raise RuntimeError("the ACP connection is not open")
        return self._outbox

    async def close_sessions(self) -> None:
        """End the turns and close the ledgers (the updates still go out: see `close`)."""
        for workspace in list(self._workspaces.values()):
            with contextlib.suppress(Exception):
                await workspace.close()
        self._workspaces.clear()
        self._sessions.clear()

    async def close(self) -> None:
        await self.close_sessions()
        if self._outbox is not None:
            await self._outbox.close()

    # --- initialize -------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self._capabilities = client_capabilities or ClientCapabilities()
        if self._wire is not None:
            self._updates = ClientUpdates.from_capabilities(self._wire.client_session)
        # Whether commands can be sandboxed, found out while the editor sets up the session.
        # The provider's SDK loads once a session is made or loaded (`preload_provider`), so
        # that the editor's first session/new does not share the interpreter with it.
        threading.Thread(target=preload_sandbox, name="preload-sandbox", daemon=True).start()
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, embedded_context=True),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    close=SessionCloseCapabilities(),
                    resume=SessionResumeCapabilities(),
                    delete=SessionDeleteCapabilities(),
                    fork=SessionForkCapabilities(),
                ),
                mcp_capabilities=McpCapabilities(http=True, sse=True),
            ),
            agent_info=Implementation(
                name="agent-server", title="agent-server", version=__version__
            ),
            auth_methods=list(auth_methods(self._settings)),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        authenticate(method_id, self._settings)

    # --- sessions ---------------------------------------------------------------------------

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[HttpMcpServer | SseMcpServer | McpServerStdio | Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        workspace = self._workspace(cwd)
        try:
            session = workspace.create(mcp_servers=acp_mcp_servers(mcp_servers, workspace.root))
        except AgentServerError as error:
            raise request_error(error) from None
        # Written now and kept: the client has its id and may load it from another process.
        workspace.keep(session.session_id)
        state = self._adopt(session, workspace.root)
        # Sent after the answer: the client learns of the session from it.
        modes, options = await self._present(state)
        return NewSessionResponse(
            session_id=session.session_id, modes=modes, config_options=options
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        state = await self._open(cwd, session_id, mcp_servers)
        modes, options = await self._present(state, history=True)
        return LoadSessionResponse(modes=modes, config_options=options)

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        """`session/load` without the history: the client still shows it."""
        state = await self._open(cwd, session_id, mcp_servers)
        modes, options = await self._present(state, title=False)
        return ResumeSessionResponse(modes=modes, config_options=options)

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        """A new session going on from `session_id` (WorkspaceAgent.fork), without the
        history: the client has it (it shows the source's)."""
        workspace = self._workspace(cwd)
        try:
            session = workspace.fork(
                session_id,
                mcp_servers=None
                if mcp_servers is None
                else acp_mcp_servers(mcp_servers, workspace.root),
            )
        except AgentServerError as error:
            raise request_error(error) from None
        state = self._adopt(session, workspace.root)
        modes, options = await self._present(state)
        return ForkSessionResponse(
            session_id=session.session_id, modes=modes, config_options=options
        )

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        """Cancel the session's turn, stop its MCP servers, release its ledger. It stays on
        disk: `session/load` or `session/resume` opens it again."""
        state = self._session(session_id)
        del self._sessions[session_id]
        await self._workspace(str(state.cwd)).close_session(session_id)
        return CloseSessionResponse()

    async def delete_session(self, session_id: str, **kwargs: Any) -> DeleteSessionResponse:
        """Close the session if it is open, then remove it from disk for good. A session of
        a working directory this process has not seen yet is found after `session/list`
        with that `cwd` (the request names no directory)."""
        state = self._sessions.pop(session_id, None)
        cwd = str(state.cwd) if state is not None else next(
            (info.workspace for info in self._every_session() if info.session_id == session_id),
            None,
        )
        if cwd is None:
            raise request_error(
                SessionNotFoundError(f"unknown session {session_id}; session/list lists them")
            )
        try:
            await self._workspace(cwd).delete(session_id)
        except AgentServerError as error:
            raise request_error(error) from None
        return DeleteSessionResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Stable methods the SDK (0.12.1) does not route yet, handed over by the transport
        (acp/transport.py) under their own name; params checked against the official
        schema by the tests (tests/acp/node)."""
        if method == "session/delete" and isinstance(params.get("sessionId"), str):
            await self.delete_session(params["sessionId"])
            return {}
        if method == "session/delete":
            raise invalid_params("session/delete needs the string field sessionId")
        raise RequestError.method_not_found(f"_{method}")

    async def _open(self, cwd: str, session_id: str, mcp_servers: list[Any] | None) -> AcpSession:
        """The session, opened from its ledger unless this connection has it open already."""
        workspace = self._workspace(cwd)
        state = self._sessions.get(session_id)
        if state is None or state.cwd != workspace.root:
            try:
                session = await workspace.open_when_free(
                    session_id,
                    mcp_servers=None
                    if mcp_servers is None
                    else acp_mcp_servers(mcp_servers, workspace.root),
                )
            except AgentServerError as error:
                raise request_error(error) from None
            state = self._adopt(session, workspace.root)
        if state.session.busy:
            raise request_error(
                SessionBusyError(f"session {session_id} is running a turn; cancel it first")
            )
        return state

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """The sessions of `cwd`; without one (a history picker of every project, as acpx
        asks), every session the sessions folder holds, newest first."""
        infos = self._workspace(cwd).list() if cwd else self._every_session()
        sessions = [
            SessionInfo(
                session_id=info.session_id,
                cwd=info.workspace,
                title=info.title,
                updated_at=info.updated_at,
            )
            for info in infos
        ]
        return ListSessionsResponse(sessions=sessions)

    def _every_session(self) -> list[StoredSession]:
        """Every session in the sessions folder, of every workspace, newest first."""
        return SessionStore(sessions_root(self._settings)).list()

    async def set_session_mode(
        self, mode_id: str, session_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        state = self._session(session_id)
        self._set_mode(state, mode_id)
        self.outbox.put(session_id, options_update(self._options(state)))
        await self.outbox.drain()
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        state = self._session(session_id)
        if not isinstance(value, str):
            raise invalid_params(f"config option {config_id!r} takes one of its listed values")
        if config_id == "mode":
            self._set_mode(state, value)
            self.outbox.put(session_id, mode_update(state.session.gate.mode))
            await self.outbox.drain()
        elif config_id == "model":
            offered = [model.id for model in self._models(state)]
            if value not in offered:
                raise invalid_params(
                    f"unknown model {value!r}; this provider offers: {', '.join(offered)}"
                )
            current = state.session.model
            if all(own.id != current.id for own in state.own_models):
                state.own_models.append(current)  # offered still, to switch back to
            state.settings = state.settings.with_overrides(model=value)
            state.session.update_settings(state.settings)
        elif config_id == "thinking" and self._thinking(state) is not None:
            self._set_thinking(state, value)
        else:
            raise invalid_params(
                f"unknown config option {config_id!r}; use one of "
                f"{', '.join(str(o.id) for o in self._options(state))}"
            )
        return SetSessionConfigOptionResponse(config_options=self._options(state))

    # --- prompts --------------------------------------------------------------------------

    async def prompt(
        self,
        prompt: list[
            TextContentBlock
            | ImageContentBlock
            | AudioContentBlock
            | ResourceContentBlock
            | EmbeddedResourceContentBlock
        ],
        session_id: str,
        **kwargs: Any,
    ) -> PromptResponse:
        state = self._session(session_id)
        try:
            content = prompt_content(prompt)
        except PromptError as error:
            raise invalid_params(str(error)) from None
        command = slash_command(content)
        try:
            if command is not None:
                return await self._command_prompt(state, *command)
            if not state.session.ledger.facts.title:
                title = prompt_title(prompt)
                if title:
                    state.session.ledger.add(TitleEntry, title)
            self._tell_mcp_wait(state)
            result = await state.session.run_turn(content)
        except AgentServerError as error:
            raise request_error(error) from None
        self._send_title(state)
        await self.outbox.drain()
        if result.stop_reason == "error":
            raise request_error(
                _TurnFailed(result.error or "the turn failed", result.error_code or "agent_error")
            )
        return PromptResponse(
            stop_reason=acp_stop_reason(result.stop_reason),
            field_meta={
                "agentServer": {"turnId": result.turn_id, "usage": usage_to_json(result.usage)}
            },
        )

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        state = self._sessions.get(session_id)
        if state is not None and not state.session.interrupt() and state.command is not None:
            state.command.cancel()  # a /compact: nothing of it is kept

    async def _command_prompt(self, state: AcpSession, name: str, argument: str
                              ) -> PromptResponse:
        """A prompt that is a slash command: `end_turn` when it ran, `cancelled` when a
        `session/cancel` stopped it."""
        run = asyncio.ensure_future(self._run_command(state, name, argument))
        state.command = run
        try:
            await asyncio.wait({run})
        finally:
            state.command = None
            run.cancel()  # when the prompt itself was cancelled; else done already
        await self.outbox.drain()
        if run.cancelled():
            return PromptResponse(stop_reason="cancelled")
        run.result()  # its error, if it failed
        return PromptResponse(stop_reason="end_turn")

    def _tell_mcp_wait(self, state: AcpSession) -> None:
        """Before the first request, which waits for the MCP servers still starting (a few
        seconds at most: mcp.firstRequestWait): say so, not to wait silently."""
        status = state.session.tools.status()
        starting = [server.name for server in status.servers if server.state == "starting"]
        if starting and not status.tools_in_force:
            wait = min(state.settings.mcp.startup_timeout, state.settings.mcp.first_request_wait)
            self.outbox.put(
                state.session.session_id,
                state.translator.notice(
                    f"Waiting for MCP server{'s' if len(starting) > 1 else ''} "
                    f"{', '.join(starting)} to start (up to {wait:g} s; one that starts "
                    "later is offered with its tools then)."
                ),
            )

    async def _run_command(self, state: AcpSession, name: str, argument: str) -> None:
        session = state.session
        message_id = own_message_id(f"command-{name}")
        if argument and not takes_argument(name):  # "/usage why so high?": not dropped unsaid
            self.outbox.put(session.session_id, agent_text(
                f"/{name} takes nothing after it: nothing was done and nothing sent.", message_id
            ))
            return
        if name == "usage":
            self.outbox.put(
                session.session_id, agent_text(usage_text(session.usage.snapshot()), message_id)
            )
            return
        if name in ("remember", "forget", "pins"):
            self._pins_command(session, name, argument)
            return
        if name == "tools":
            accepted = session.tools.accept()
            text = (
                f"The changed MCP tools are used from the next request (about "
                f"{accepted.tokens:,} tokens read again without the prompt cache)."
                if accepted.accepted
                else "The MCP tools have not changed: nothing to take in."
            )
            self.outbox.put(session.session_id, agent_text(text, message_id))
            return
        outcome = await session.compact(argument or None)
        if outcome.outcome == "noop":
            self.outbox.put(
                session.session_id,
                agent_text("Nothing to compact yet: the conversation is still short.", message_id),
            )

    def _pins_command(self, session: AgentSession, name: str, argument: str) -> None:
        """`/remember [fact:] text`, `/forget id`, `/pins` (the plan too, as a plan update); a
        refusal is a notice saying why."""
        message_id = own_message_id(f"command-{name}")
        try:
            if name == "remember":
                pin = session.pin(*pin_argument(argument))
                answer = f"Pinned {pin.kind} {pin.id} (/forget {pin.id} removes it)."
            elif name == "forget":
                pin = session.unpin(argument.strip())
                answer = f"Removed {pin.kind} {pin.id}; it no longer holds."
            else:
                answer = pins_text(session.memory.pins())
        except AgentServerError as error:
            self.outbox.put(session.session_id, notice_text(error.message, message_id))
            return
        self.outbox.put(session.session_id, agent_text(answer, message_id))
        plan = session.memory.plan()
        if name == "pins" and plan:
            self.outbox.put(session.session_id, plan_update(plan))

    # --- pieces -----------------------------------------------------------------------------

    def _workspace(self, cwd: str) -> WorkspaceAgent:
        path = Path(cwd)
        if not path.is_absolute() or not path.is_dir():
            raise invalid_params(f"cwd must be the absolute path of a directory, not {cwd!r}")
        root = path.resolve()
        workspace = self._workspaces.get(root)
        if workspace is None:
            workspace = WorkspaceAgent(root, self._settings, rewind="none")  # ACP has none
            self._workspaces[root] = workspace
        return workspace

    def _session(self, session_id: str) -> AcpSession:
        state = self._sessions.get(session_id)
        if state is None:
            raise request_error(
                SessionNotFoundError(
                    f"unknown session {session_id}; create one with session/new or load it "
                    "with session/load"
                )
            )
        return state

    def _adopt(self, session: AgentSession, cwd: Path) -> AcpSession:
        """Route a session's events, questions and file access through this connection."""
        session_id = session.session_id
        state = AcpSession(
            session, cwd, EventTranslator(cwd, self._updates), session.settings,
            session.ledger.facts.title,
        )
        fs = self._capabilities.fs
        files = EditorFiles(
            self.client,
            session_id,
            cwd,
            read=bool(fs and fs.read_text_file),
            write=bool(fs and fs.write_text_file),
            flush=self.outbox.drain,
        )
        terminal = None
        if self._capabilities.terminal:
            terminal = EditorTerminal(
                self.client, session_id, flush=self.outbox.drain, show=self._shower(state)
            )
        session.attach(self._sink(state), self._asker(state), files, terminal)
        self._sessions[session_id] = state
        return state

    async def _present(
        self, state: AcpSession, *, history: bool = False, title: bool = True
    ) -> tuple[SessionModeState, list[Any]]:
        """What a client gets of a session it made or opened, in this order: the history
        (`session/load`: before the answer), the title (unless the client shows it: resume),
        the commands and the meter; the provider's SDK then loads behind the answer. Returns
        the answer's modes and config options."""
        session = state.session
        if history:
            for update in replay_updates(whole_transcript(session), state.cwd, self._updates):
                self.outbox.put(session.session_id, update)
        state.title = session.ledger.facts.title
        if title and state.title:
            self.outbox.put(session.session_id, title_update(state.title))
        self.outbox.put(session.session_id, available_commands(session.workspace))
        self.outbox.put(session.session_id, usage_update(session.usage.snapshot()))
        if history:
            await self.outbox.drain()  # the history arrives before the answer
        preload_provider(session.settings.provider)
        return mode_state(session.gate.mode), self._options(state)

    def _sink(self, state: AcpSession) -> Callable[[AgentEvent], None]:
        session_id = state.session.session_id

        def emit(event: AgentEvent) -> None:
            for update in state.translator.updates(event):
                self.outbox.put(session_id, update)

        return emit

    def _shower(self, state: AcpSession) -> Callable[[str, str], None]:
        def show(call_id: str, terminal_id: str) -> None:
            update = state.translator.terminal_shown(call_id, terminal_id)
            self.outbox.put(state.session.session_id, update)

        return show

    def _asker(self, state: AcpSession) -> Callable[[PermissionRequest], Any]:
        session_id = state.session.session_id

        async def ask(request: PermissionRequest) -> str | None:
            await self.outbox.drain()  # the client knows the tool call before the question
            response = await self.client.request_permission(
                session_id=session_id,
                tool_call=state.translator.permission_tool_call(request),
                options=[
                    PermissionOption(option_id=o.option_id, name=o.name, kind=o.kind)
                    for o in request.options
                ],
            )
            outcome = response.outcome
            return outcome.option_id if isinstance(outcome, AllowedOutcome) else None

        return ask

    def _set_mode(self, state: AcpSession, mode_id: str) -> None:
        if mode_id not in PERMISSION_MODES:
            raise invalid_params(
                f"unknown mode {mode_id!r}; use one of {', '.join(PERMISSION_MODES)}"
            )
        # At once, for the questions of a running turn: the session's one way to switch
        # (agent/session.py).
        mode = state.session.set_mode(mode_id)
        state.settings = state.settings.with_overrides(permissions_mode=mode)

    def _models(self, state: AcpSession) -> list[ModelInfo]:
        """The models the picker offers and the setter takes (one list): the provider's,
        and before them every model the session ran that the catalogue does not list (the
        current one and those switched away from)."""
        models = offered_models(state.settings)
        listed = {info.id for info in models}
        ran = {own.id: own for own in (*state.own_models, state.session.model)}
        return [*(own for own in ran.values() if own.id not in listed), *models]

    def _options(self, state: AcpSession) -> list[Any]:
        model = state.settings.model or state.session.model.id
        return list(
            config_options(
                state.session.gate.mode, model, self._models(state), self._thinking(state)
            )
        )

    def _thinking(self, state: AcpSession) -> ThinkingLevel | None:
        """The thinking level, when the chosen model thinks on request (else the option is
        not offered: no level would change what is asked of it)."""
        chosen = state.settings.model or state.session.model.id
        model = next((m for m in self._models(state) if m.id == chosen), state.session.model)
        return state.session.thinking if can_think(state.session.config.api, model) else None

    def _set_thinking(self, state: AcpSession, level: str) -> None:
        if level not in THINKING_LEVELS:
            raise invalid_params(
                f"unknown thinking level {level!r}; use one of {', '.join(THINKING_LEVELS)}"
            )
        try:
            switch = state.session.switch_thinking(level)
        except AgentServerError as error:
            raise request_error(error) from None
        state.settings = state.settings.with_overrides(thinking=switch.thinking)
        # What the switch costs, as VS Code shows it; not while another model waits for the
        # next prompt (the note would be about the model being left).
        if switch.entry_id is not None and switch.note and state.session.can_think:
            self.outbox.put(state.session.session_id, state.translator.notice(switch.note))

    def _send_title(self, state: AcpSession) -> None:
        title = state.session.ledger.facts.title
        if title and title != state.title:
            state.title = title
            self.outbox.put(state.session.session_id, title_update(title))


def whole_transcript(session: AgentSession) -> list[AgentEvent]:
    """Every event of the session's current branch, oldest first: ACP's `session/load`
    replays the whole conversation, page after page."""
    pages: list[list[AgentEvent]] = []
    cursor: str | None = None
    while True:
        page = session.transcript(before=cursor, limit=REPLAY_PAGE)
        pages.append(page.events)
        cursor = page.cursor
        if cursor is None:
            return [event for events in reversed(pages) for event in events]


class _TurnFailed(AgentServerError):
    """A turn that ended with an error: its message, under the agent's own error code."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


async def serve(settings: AgentSettings) -> int | None:
    """Serve one client on stdin/stdout until it closes the connection, or a SIGHUP or
    SIGTERM ends the reading as if it had (agent_server/ending_signals.py); the exit status
    the signal asks, if one came. Either way the sessions close before the connection does
    (CheckedTransport), so that a running prompt is answered."""
    reader, writer = await stdio_streams(limit=STDIO_LIMIT)
    # Whatever else prints (a library, a stray print) goes to stderr: stdout is the protocol.
    sys.stdout = sys.stderr
    tasks = TaskSupervisor(source="agent-server.acp")
    transport = CheckedTransport(reader, MessageSender(writer, tasks))
    agent = AcpAgent(settings, transport)
    transport.at_end = agent.close_sessions
    with EndingSignals(through_loop=True) as ending:
        transport.ending = ending
        try:
            # The SDK's Agent protocol lists every method, unstable ones too; the router
            # looks them up by name and answers the absent ones with Method not found.
            # Unstable in the SDK, stable in ACP 1.7: session/close and session/resume.
            await run_agent(cast(Agent, agent), transport, use_unstable_protocol=True)
        finally:
            await agent.close()
            await tasks.shutdown()
    return ending.status


def main(args: Any) -> int:
    """`agent-server acp [--provider ...] [--model ...] [--mode ...] [--config FILE]`."""
    try:
        config = load_config(
            Path(args.config) if args.config else None,
            lambda message: print(f"agent-server acp: {message}", file=sys.stderr),
        )
        settings = resolve_settings(config, flag_overrides(args))
    except ConfigError as error:
        print(f"agent-server acp: {error.message}", file=sys.stderr)
        return 2
    if not_a_stream := [name for fd, name in ((0, "stdin"), (1, "stdout")) if not _streams(fd)]:
        # A file or /dev/null (as the ACP registry's launch check gives): asyncio cannot
        # watch it, and the agent would wait forever instead of ending at its end.
        print(
            f"agent-server acp: {' and '.join(not_a_stream)} must be a pipe: an ACP client "
            "starts the agent with pipes for its input and output",
            file=sys.stderr,
        )
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(serve(settings)) or 0
    return 0


def _streams(fd: int) -> bool:
    """Whether `fd` is a pipe, a socket or a terminal (what the event loop can watch)."""
    if os.name != "posix":
        return True
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


def acp_mcp_servers(servers: Sequence[Any] | None, root: Path) -> tuple[McpServerConfig, ...]:
    """The MCP servers an ACP client gives a session (stdio, HTTP, SSE), as configurations
    that join the workspace's own (docs/mcp.md). One the schema refuses (`{"name": "x"}`:
    no command, no url) is the request's error (Invalid params, naming it), not a session
    started without it unsaid; a server that fails to start is told about, never a failed
    session."""
    plain = [
        server.model_dump(by_alias=True, exclude_none=True)
        if isinstance(server, BaseModel)
        else server
        for server in servers or ()
    ]
    configs = servers_from_acp(plain, workspace=root, env=os.environ)
    malformed = [config.error for config in configs if config.error]
    if malformed:
        raise invalid_params("; ".join(malformed))
    return configs
