"""`agent-server acp`: the agent as an Agent Client Protocol server on stdio.

`AcpAgent` implements the SDK's `Agent` interface on the agent layer: one WorkspaceAgent per
working directory, one AgentSession per ACP session (the same ledger, context management,
tools and permission gate as `serve`). Events become `session/update` notifications through
one ordered outbox; permission questions become `session/request_permission`; the file tools
read and write through the editor when it offers `fs/*`.

The class keeps the SDK's methods (it calls them by name), the connection and the sessions'
lifecycle; the rest is done beside it: a session's routing through the connection
(acp_session.py), the client's choices of mode, model and thinking (session_options.py),
prompts, slash commands and cancel (prompts.py), the ordered updates (outbox.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from acp import PROTOCOL_VERSION, RequestError, run_agent
from acp.interfaces import Agent, Client
from acp.schema import (
    AgentCapabilities,
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

from agent_server import __version__
from agent_server.acp.acp_session import AcpSession, attach
from agent_server.acp.auth import auth_methods, authenticate
from agent_server.acp.outbox import UpdateQueue
from agent_server.acp.prompts import cancel_turn, run_prompt
from agent_server.acp.request_errors import invalid_params, request_error
from agent_server.acp.session_options import session_options, set_mode, set_option
from agent_server.acp.transport import CheckedTransport
from agent_server.acp.updates import (
    ClientUpdates,
    available_commands,
    mode_state,
    options_update,
    replay_updates,
    title_update,
    usage_update,
)
from agent_server.agent.config_file import flag_overrides, load_config, resolve_settings
from agent_server.agent.events import AgentEvent
from agent_server.agent.mcp.config import McpServerConfig, servers_from_acp
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
    SessionBusyError,
    SessionNotFoundError,
)
from agent_server.session.store import SessionInfo as StoredSession
from agent_server.session.store import SessionStore

# The SDK's default: room for pasted images and long embedded files on one line.
STDIO_LIMIT = 50 * 1024 * 1024
REPLAY_PAGE = 500  # transcript entries read at a time when a session is loaded


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
            (info.workspace for info in every_session(self._settings)
             if info.session_id == session_id),
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
        infos = self._workspace(cwd).list() if cwd else every_session(self._settings)
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

    async def set_session_mode(
        self, mode_id: str, session_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        state = self._session(session_id)
        set_mode(state, mode_id)
        self.outbox.put(session_id, options_update(session_options(state)))
        await self.outbox.drain()
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        state = self._session(session_id)
        options = await set_option(state, self.outbox, config_id, value)
        return SetSessionConfigOptionResponse(config_options=options)

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
        return await run_prompt(self._session(session_id), self.outbox, prompt)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        state = self._sessions.get(session_id)
        if state is not None:
            cancel_turn(state)

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
        state = attach(
            session, cwd, self.client, self.outbox, self._capabilities, self._updates
        )
        self._sessions[session.session_id] = state
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
        return mode_state(session.gate.mode), session_options(state)


def every_session(settings: AgentSettings) -> list[StoredSession]:
    """Every session in the sessions folder, of every workspace, newest first."""
    return SessionStore(sessions_root(settings)).list()


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
