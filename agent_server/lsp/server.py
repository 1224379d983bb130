"""The language server: the editor protocol (agent_server/protocol.py) over pygls.

The server's state and connection: a WorkspaceAgent per workspace folder, the agent's events
relayed as notifications, permission questions, settings. Its features are the top-level
functions of lsp/handlers.py, registered from that module's tables; it knows nothing of
providers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cattrs
from lsprotocol import types
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
)

from agent_server import __version__, protocol
from agent_server.agent.events import (
    AgentEvent,
    CompactionFinished,
    CompactionStarted,
    ContextDecided,
    McpStatusChanged,
    Notice,
    OverflowHappened,
    ToolCallStarted,
    TurnEnded,
    UsageUpdated,
)
from agent_server.agent.settings import AgentSettings, settings_skipping_bad
from agent_server.ending_signals import EndingSignals
from agent_server.errors import SessionNotFoundError
from agent_server.literal import literal
from agent_server.lsp import handlers, items, wire
from agent_server.lsp.authority import EditorSettings
from agent_server.lsp.outbox import Outbox
from agent_server.lsp.session_use import MAX_OPEN_SESSIONS, SessionUse
from agent_server.lsp.transport import (
    AgentProtocol,
    keep_raw,
    read_loop,
    stdin_reader,
    stream_reader,
)
from agent_server.lsp.wire import UnknownWorkspaceError
from agent_server.settings_schema import merge_settings
from agent_server.stderr_log import shorten

if TYPE_CHECKING:
    # The agent (sessions, tools, the SDKs' shims) loads after `initialize` is answered, in
    # the background, or on the first request that needs it: startup stays short.
    from agent_server.agent.permissions import PermissionAnswer, PermissionRequest
    from agent_server.agent.session import AgentSession
    from agent_server.agent.tools.command_input import CommandInputs
    from agent_server.agent.workspace import WorkspaceAgent

log = logging.getLogger(__name__)

def agent_converter() -> cattrs.Converter:
    """lsprotocol's converter, but params and results of custom methods stay plain JSON
    (pygls would turn them into namedtuples)."""
    converter: cattrs.Converter = default_converter()  # type: ignore[no-untyped-call]
    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, keep_raw)
    return converter


@dataclass
class TurnStream:
    """Per-turn state: the seq counter, the progress token, the commands that take input."""

    turn_id: str
    seq: int = 0
    progress_token: str | int | None = None
    command_input: CommandInputs | None = None  # the turn's commands that take input


class Folder:
    """A workspace folder; its agent (and the agent's imports) is made when first needed."""

    def __init__(self, uri: str, make: Callable[[], WorkspaceAgent]) -> None:
        self.uri = uri
        self._make = make
        self._agent: WorkspaceAgent | None = None

    @property
    def agent(self) -> WorkspaceAgent:
        if self._agent is None:
            self._agent = self._make()
        return self._agent

    @property
    def made(self) -> WorkspaceAgent | None:
        """The agent if it was made (nothing is made to be told something)."""
        return self._agent

    async def close(self) -> None:
        if self._agent is not None:
            await self._agent.close()


@dataclass
class ServerState:
    folders: dict[Path, Folder] = field(default_factory=dict)
    initial_settings: Mapping[str, Any] | None = None  # initializationOptions.settings
    pushed_settings: Mapping[str, Any] | None = None  # didChangeConfiguration's, merged
    permission_requests: bool = False
    work_done_progress: bool = False
    configuration: bool = False
    user_idle: bool = False  # agent/userIdle: for every folder, open or opened later
    turns: dict[str, TurnStream] = field(default_factory=dict)  # by session id
    progress: dict[str, asyncio.Task[None]] = field(default_factory=dict)  # by compaction id
    background: set[asyncio.Task[None]] = field(default_factory=set)
    session_use: SessionUse = field(default_factory=SessionUse)
    editor_settings: EditorSettings = field(default_factory=EditorSettings)

    @property
    def base_settings(self) -> Mapping[str, Any] | None:
        """initializationOptions' settings with the pushed ones over them: what holds until
        the editor answers workspace/configuration (or when it has none)."""
        if self.pushed_settings is None:
            return self.initial_settings
        return merge_settings(self.initial_settings or {}, self.pushed_settings)


class AgentLanguageServer(LanguageServer):
    def __init__(self, *, connect_to: Callable[..., Any] | None = None, **options: Any) -> None:
        super().__init__(
            "agent-server",
            __version__,
            protocol_cls=AgentProtocol,
            converter_factory=agent_converter,
            text_document_sync_kind=types.TextDocumentSyncKind.None_,
        )
        self.state = ServerState()
        self.agent_options = options
        self.connect_to = connect_to
        self.outbox: Outbox | None = None

    def attach_outbox(self, outbox: Outbox) -> None:
        """Send through `outbox` (batched writes) rather than pygls's writer."""
        self.outbox = outbox

    def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """Send one of our notifications (plain JSON params)."""
        if self.outbox is not None:
            self.outbox.notify(method, params)
        else:
            self.protocol.notify(method, params)

    # --- the connection -----------------------------------------------------------------

    def serve_stdio(self, stdout: Any = None) -> int:
        """Serve LSP on stdin and `stdout` (default: the process's; anything with write and
        flush, such as the Outbox) until `exit` or the end of the input; the exit code."""
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

        async def connection() -> int | None:
            return await self._serve(stdin_reader(sys.stdin.buffer))

        return self._run(connection)

    def serve_tcp(self, host: str, port: int) -> int:
        """Serve one connection at a time on HOST:PORT (for debugging)."""

        async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(writer)
            await self._serve(stream_reader(reader))
            self.shutdown()  # type: ignore[no-untyped-call]

        async def listen() -> None:
            self._server = await asyncio.start_server(connected, host, port)
            async with self._server:
                with contextlib.suppress(asyncio.CancelledError):
                    await self._server.serve_forever()

        return self._run(listen)

    async def _serve(self, read: Callable[[], Awaitable[bytes]]) -> int | None:
        """Serve until the input ends, or a SIGHUP or SIGTERM ends the reading as if it had
        (agent_server/ending_signals.py); the exit status the signal asks, if one came."""
        assert isinstance(self.protocol, AgentProtocol)
        self._stop_event = threading.Event()
        with EndingSignals(through_loop=True) as ending:
            await ending.stopping(read_loop(self.protocol, read, self._stop_event))
            if self.protocol.shutting_down:
                # The input ended right behind `shutdown` (and perhaps `exit`): shutdown
                # closes the folders and is answered; an `exit` waiting for it then ends
                # the server.
                await self.protocol.shutdown_answered.wait()
                return ending.status
            # The editor went away without `exit`: end the turns and close the ledgers (of
            # the folders whose agent was made: the others have none to close).
            for folder in list(self.state.folders.values()):
                with contextlib.suppress(Exception):
                    await folder.close()
        return ending.status

    def _run(self, main: Callable[[], Coroutine[Any, Any, int | None]]) -> int:
        try:
            status = asyncio.run(main())
        except SystemExit as exit_:  # the `exit` notification
            return exit_.code if isinstance(exit_.code, int) else 0
        except (KeyboardInterrupt, BrokenPipeError):
            return 1
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]
        return status or 0

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Errors outside a request (a failed notification handler): one bounded line in
        the log and a short message to the user."""
        log.error("%s: %s", type(error).__name__, error)
        with contextlib.suppress(Exception):
            self.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Error,
                    message=f"agent-server: {shorten(str(error), 300)}",
                )
            )

    # --- folders and sessions -----------------------------------------------------------

    def add_folder(self, uri: str, settings: AgentSettings) -> Folder:
        path = wire.uri_to_path(uri).resolve()
        existing = self.state.folders.get(path)
        if existing is not None:
            return existing
        kwargs: dict[str, Any] = dict(self.agent_options)
        if self.connect_to is not None:
            kwargs["connect_to"] = self.connect_to

        def make() -> WorkspaceAgent:
            from agent_server.agent.workspace import WorkspaceAgent

            agent = WorkspaceAgent(path, settings, **kwargs)
            agent.set_user_idle(self.state.user_idle)
            return agent

        folder = Folder(uri, make)
        self.state.folders[path] = folder
        return folder

    def folder_for(self, path: Path) -> Folder:
        folder = self.state.folders.get(path.resolve())
        if folder is None:
            known = ", ".join(str(p) for p in self.state.folders) or "none"
            raise UnknownWorkspaceError(
                f"{path} is not an open workspace folder (open folders: {known})"
            )
        return folder

    def session(self, session_id: str) -> AgentSession:
        agent = self.agent_with(session_id)
        opening = session_id not in agent.sessions
        session = agent.open(session_id, emit=self.sink(session_id), ask=self.asker(session_id))
        return self._opened(session, opening)

    async def session_when_free(self, session_id: str) -> AgentSession:
        """`session`, waiting a moment for another process (the server of the window before,
        on its way out) to let the session go: `session/load`'s way."""
        agent = self.agent_with(session_id)
        opening = session_id not in agent.sessions
        session = await agent.open_when_free(
            session_id, emit=self.sink(session_id), ask=self.asker(session_id)
        )
        return self._opened(session, opening)

    def fork(self, session_id: str) -> AgentSession:
        """A new session going on from `session_id` (WorkspaceAgent.fork), opened here."""
        agent = self.agent_with(session_id)
        fork = agent.fork(session_id)
        fork.attach(self.sink(fork.session_id), self.asker(fork.session_id))
        return self._opened(fork, True)

    def agent_with(self, session_id: str) -> WorkspaceAgent:
        """The agent of the folder whose sessions include `session_id` (SessionNotFoundError)."""
        for folder in self.state.folders.values():
            if folder.agent.has(session_id):
                return folder.agent
        raise SessionNotFoundError(f"unknown session {session_id}")

    def _opened(self, session: AgentSession, opening: bool) -> AgentSession:
        repaired = session.ledger.load_report.describe()
        if opening and repaired:
            # The editor learns of a repair once, whatever request opened the session.
            self.relay(session.session_id, Notice(None, "warning", repaired))
        self.state.session_use.touch(session.session_id)
        if opening:
            self.bound_open_sessions(session.session_id)
        return session

    def bound_open_sessions(self, newest: str) -> None:
        """Past MAX_OPEN_SESSIONS open (`newest` just opened), close the least recently used
        sessions that are idle: no request naming them under way, no turn running. Busy
        ones stay open, even past the cap."""
        open_ids = {
            session_id: agent
            for folder in self.state.folders.values()
            if (agent := folder.made) is not None
            for session_id in agent.sessions
        }
        excess = len(open_ids) - MAX_OPEN_SESSIONS
        for session_id in self.state.session_use.closable(open_ids):
            if excess <= 0:
                return
            if session_id != newest and open_ids[session_id].evict(session_id):
                log.info("session %s closed: least recently used, reopens when named", session_id)
                excess -= 1

    # --- turns and events to notifications -----------------------------------------------

    def begin_turn(self, session_id: str, turn_id: str, token: str | int | None) -> TurnStream:
        """The turn's stream of notifications, and its progress when the editor gave a token."""
        stream = TurnStream(turn_id, progress_token=token)
        self.state.turns[session_id] = stream
        if token is not None:
            self.work_done_progress.begin(
                token,
                types.WorkDoneProgressBegin(title="Agent", message="Working", cancellable=True),
            )
        return stream

    def end_turn(self, session_id: str, stream: TurnStream) -> None:
        if self.state.turns.get(session_id) is stream:
            del self.state.turns[session_id]
        if self.outbox is not None:
            self.outbox.end_turn(session_id, stream.turn_id)
        if stream.progress_token is not None:
            self.work_done_progress.end(
                stream.progress_token, types.WorkDoneProgressEnd(message="Done")
            )

    def sink(self, session_id: str) -> Callable[[AgentEvent], None]:
        def emit(event: AgentEvent) -> None:
            self.relay(session_id, event)

        return emit

    def relay(self, session_id: str, event: AgentEvent) -> None:
        stream = self.state.turns.get(session_id)
        if isinstance(event, UsageUpdated):
            self.notify(protocol.USAGE_CHANGED.name, wire.usage_json(session_id, event.snapshot))
            return
        if isinstance(event, CompactionStarted | CompactionFinished):
            self.notify(protocol.COMPACTION.name, wire.compaction_json(session_id, event))
            self.compaction_progress(session_id, event)
            return
        if isinstance(event, OverflowHappened):
            self.notify(protocol.OVERFLOW.name, wire.overflow_json(session_id, event))
            return
        if isinstance(event, McpStatusChanged):
            self.notify(protocol.MCP_STATUS.name, wire.mcp_status_json(session_id, event.status))
            return
        if isinstance(event, ContextDecided):
            self.notify(protocol.CONTEXT.name, wire.decision_json(session_id, event))
            return
        if isinstance(event, TurnEnded):
            return
        update = items.update_json(event)
        if update is None:
            return
        if stream is None:
            # Outside a turn (e.g. a file changed between turns): a turn-less update.
            stream = TurnStream(turn_id="")
        if self.outbox is not None:
            self.outbox.update(session_id, stream.turn_id, update)  # it numbers them
        else:
            params: protocol.AgentUpdateParams = {
                "sessionId": session_id,
                "turnId": stream.turn_id,
                "seq": stream.seq,
                "update": update,
            }
            self.protocol.notify(protocol.UPDATE.name, params)
        stream.seq += 1
        if isinstance(event, ToolCallStarted) and stream.progress_token is not None:
            self.work_done_progress.report(
                stream.progress_token, types.WorkDoneProgressReport(message=event.title)
            )

    def compaction_progress(
        self, session_id: str, event: CompactionStarted | CompactionFinished
    ) -> None:
        """Server-started work gets its own progress, when the client can show it."""
        if not self.state.work_done_progress:
            return
        token = f"agent-compaction-{event.compaction_id}"
        if isinstance(event, CompactionStarted):
            message = f"{event.tokens_before} tokens ({event.reason})"
            self.state.progress[event.compaction_id] = self._background(
                self._begin_progress(token, "Compacting the conversation", message)
            )
        else:
            begun = self.state.progress.pop(event.compaction_id, None)
            self._background(self._end_progress(token, event.status, begun))

    async def _begin_progress(self, token: str, title: str, message: str) -> None:
        with contextlib.suppress(Exception):
            await self.work_done_progress.create_async(token)
            self.work_done_progress.begin(
                token, types.WorkDoneProgressBegin(title=title, message=message, cancellable=False)
            )

    async def _end_progress(
        self, token: str, message: str, begun: asyncio.Task[None] | None
    ) -> None:
        if begun is not None:
            await begun
        with contextlib.suppress(Exception):
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))

    def _background(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.create_task(work)
        self.state.background.add(task)
        task.add_done_callback(self.state.background.discard)
        return task

    # --- permission -----------------------------------------------------------------------

    def asker(self, session_id: str) -> Callable[[PermissionRequest], Any]:
        async def ask(request: PermissionRequest) -> str | PermissionAnswer | None:
            if self.state.permission_requests:
                return await self.request_permission(wire.permission_json(session_id, request))
            return await self.show_message_permission(request)

        return ask

    async def request_permission(
        self, params: protocol.RequestPermissionParams
    ) -> str | PermissionAnswer | None:
        msg_id = f"perm-{uuid.uuid4().hex[:12]}"
        try:
            result = await self.protocol.send_request_async(
                protocol.REQUEST_PERMISSION.name, params, msg_id=msg_id
            )
        except asyncio.CancelledError:
            self.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            raise
        except Exception as error:  # the client failed to answer: treat as a dismissal
            log.warning("permission request failed: %s", error)
            return None
        return wire.permission_answer(result, params["options"])

    async def show_message_permission(self, request: PermissionRequest) -> str | None:
        actions = [types.MessageActionItem(title=o.name) for o in request.options]
        try:
            choice = await self.window_show_message_request_async(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Warning,
                    message=permission_message(request),
                    actions=actions,
                )
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.warning("showMessageRequest failed: %s", error)
            return None
        title = (
            choice.get("title") if isinstance(choice, Mapping) else getattr(choice, "title", None)
        )
        for option in request.options:
            if option.name == title:
                return option.option_id
        return None

    # --- settings -------------------------------------------------------------------------

    async def fetch_settings(self, uri: str, in_force: AgentSettings) -> AgentSettings:
        """The folder's settings as the editor gives them now; with a bad value, the user is
        told and `in_force` (the folder's settings until now) stays: one typo does not put
        every other setting (the provider, the sessions' folder) back to its default.

        An editor's answer with settings in it is the whole of them: it is read over the
        settings pushed with didChangeConfiguration only, not over initializationOptions',
        which stand in until the editor answers (a setting the user has since removed, such
        as a model, would otherwise keep its value from the server's start). An answer
        without settings (null, or an empty object: an editor that keeps them in
        initializationOptions) leaves those in force."""
        raw: Any = self.state.base_settings
        if self.state.configuration:
            try:
                results = await self.workspace_configuration_async(
                    types.ConfigurationParams(
                        items=[types.ConfigurationItem(scope_uri=uri, section="agent")]
                    )
                )
                if results and isinstance(results[0], Mapping) and results[0]:
                    raw = merge_settings(self.state.pushed_settings or {}, results[0])
            except Exception as error:
                log.warning("workspace/configuration failed: %s", error)
        settings, problems = settings_skipping_bad(self.users_settings(raw))
        if not problems:
            return settings
        self.window_show_message(
            types.ShowMessageParams(
                type=types.MessageType.Error,
                message=f"agent-server: {'; '.join(problems)} (the settings in force are kept)",
            )
        )
        return in_force


    def users_settings(self, editor: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """The editor's settings as the server takes them (lsp/authority.py): what is
        ignored is said once, in the log and to the user."""
        settings, message = self.state.editor_settings.taken(editor)
        if message:
            log.warning("%s", message)
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=message)
            )
        return settings


def permission_message(request: PermissionRequest) -> str:
    """The question as a plain message (for clients without agent/requestPermission): the
    whole command or the diff, every character shown literally."""
    text = f"agent-server wants to: {literal(request.title, keep='')}"
    if request.command is not None:
        text += f"\n\n{literal(request.command)}"
    elif request.change is not None:
        text += f"\n\n{literal(request.change.diff)}"
    return text


def create_server(
    *, editor_settings: EditorSettings | None = None, **options: Any
) -> AgentLanguageServer:
    """A server with every feature registered. `options` go to each WorkspaceAgent;
    `editor_settings`: how it takes the editor's settings (lsp/authority.py)."""
    server = AgentLanguageServer(**options)
    if editor_settings is not None:
        server.state.editor_settings = editor_settings
    handlers.register(server)
    return server


def serve_stdio(editor_settings: EditorSettings | None = None) -> int:
    server = create_server(editor_settings=editor_settings)
    outbox = Outbox(sys.stdout.buffer)
    server.attach_outbox(outbox)
    try:
        return server.serve_stdio(stdout=outbox)
    finally:
        outbox.close()


def serve_tcp(host: str, port: int, editor_settings: EditorSettings | None = None) -> int:
    return create_server(editor_settings=editor_settings).serve_tcp(host, port)
