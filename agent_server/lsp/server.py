"""The language server: the editor protocol of docs/protocol.md over pygls.

One module, each feature a small function. The server keeps a WorkspaceAgent per workspace
folder and relays the agent's events as notifications; it knows nothing of providers.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
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

from agent_server import __version__
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
from agent_server.agent.settings import AgentSettings, settings_from_json
from agent_server.errors import (
    AgentServerError,
    ConfigError,
    SessionBusyError,
    SessionNotFoundError,
)
from agent_server.literal import literal
from agent_server.lsp import wire
from agent_server.lsp.outbox import Outbox
from agent_server.lsp.transport import (
    AgentProtocol,
    keep_raw,
    read_loop,
    stdin_reader,
    stream_reader,
)
from agent_server.lsp.wire import Params, UnknownWorkspaceError, rpc_error
from agent_server.stderr_log import shorten

if TYPE_CHECKING:
    # The agent (sessions, tools, the SDKs' shims) loads after `initialize` is answered, in
    # the background, or on the first request that needs it: startup stays short.
    from agent_server.agent.permissions import PermissionAnswer, PermissionRequest
    from agent_server.agent.session import AgentSession
    from agent_server.agent.workspace import WorkspaceAgent

log = logging.getLogger(__name__)

SESSION_NEW = "agent/session/new"
SESSION_LIST = "agent/session/list"
SESSION_LOAD = "agent/session/load"
SESSION_HISTORY = "agent/session/history"
TURN = "agent/turn"
INTERRUPT = "agent/interrupt"
COMPACT = "agent/compact"
REWIND = "agent/rewind"
REWIND_PREVIEW = "agent/rewind/preview"
USAGE = "agent/usage"
USER_IDLE = "agent/userIdle"
MODEL_LIST = "agent/model/list"
MODEL_SET = "agent/model/set"
MODE_SET = "agent/mode/set"
THINKING_SET = "agent/thinking/set"
MENTION_COMPLETE = "agent/mention/complete"
MCP_SERVERS = "agent/mcp/servers"
MCP_ACCEPT_TOOLS = "agent/mcp/acceptTools"
MCP_RESTART = "agent/mcp/restart"
MCP_STATUS = "agent/mcp/status"
METHODS = (
    SESSION_NEW,
    SESSION_LIST,
    SESSION_LOAD,
    SESSION_HISTORY,
    TURN,
    INTERRUPT,
    COMPACT,
    REWIND,
    REWIND_PREVIEW,
    USAGE,
    MODEL_LIST,
    MODEL_SET,
    MODE_SET,
    THINKING_SET,
    MENTION_COMPLETE,
    MCP_SERVERS,
    MCP_ACCEPT_TOOLS,
    MCP_RESTART,
    USER_IDLE,
)


def agent_converter() -> cattrs.Converter:
    """lsprotocol's converter, but params and results of custom methods stay plain JSON
    (pygls would turn them into namedtuples)."""
    converter: cattrs.Converter = default_converter()  # type: ignore[no-untyped-call]
    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, keep_raw)
    return converter


@dataclass
class TurnStream:
    """Per-turn notification state: the seq counter and the progress token."""

    turn_id: str
    seq: int = 0
    progress_token: str | int | None = None


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

    async def close(self) -> None:
        if self._agent is not None:
            await self._agent.close()


@dataclass
class ServerState:
    folders: dict[Path, Folder] = field(default_factory=dict)
    base_settings: Mapping[str, Any] | None = None
    permission_requests: bool = False
    work_done_progress: bool = False
    configuration: bool = False
    turns: dict[str, TurnStream] = field(default_factory=dict)  # by session id
    progress: dict[str, asyncio.Task[None]] = field(default_factory=dict)  # by compaction id
    background: set[asyncio.Task[None]] = field(default_factory=set)


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

    def notify(self, method: str, params: dict[str, Any]) -> None:
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

        async def connection() -> None:
            await self._serve(stdin_reader(sys.stdin.buffer))

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

    async def _serve(self, read: Callable[[], Awaitable[bytes]]) -> None:
        assert isinstance(self.protocol, AgentProtocol)
        self._stop_event = threading.Event()
        await read_loop(self.protocol, read, self._stop_event)
        if self.protocol.shutting_down:
            # The input ended right behind `shutdown` (and perhaps `exit`): shutdown closes
            # the folders and is answered; an `exit` waiting for it then ends the server.
            await self.protocol.shutdown_answered.wait()
            return
        # The editor went away without `exit`: end the turns and close the ledgers.
        for folder in list(self.state.folders.values()):
            with contextlib.suppress(Exception):
                await folder.agent.close()

    def _run(self, main: Callable[[], Coroutine[Any, Any, None]]) -> int:
        try:
            asyncio.run(main())
        except SystemExit as exit_:  # the `exit` notification
            return exit_.code if isinstance(exit_.code, int) else 0
        except (KeyboardInterrupt, BrokenPipeError):
            return 1
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]
        return 0

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

            return WorkspaceAgent(path, settings, **kwargs)

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
        for folder in self.state.folders.values():
            if folder.agent.has(session_id):
                opening = session_id not in folder.agent.sessions
                session = folder.agent.open(
                    session_id, emit=self.sink(session_id), ask=self.asker(session_id)
                )
                repaired = session.ledger.load_report.describe()
                if opening and repaired:
                    # The editor learns of a repair once, whatever request opened the session.
                    self.relay(session_id, Notice(None, "warning", repaired))
                return session
        raise SessionNotFoundError(f"unknown session {session_id}")

    # --- events to notifications --------------------------------------------------------

    def sink(self, session_id: str) -> Callable[[AgentEvent], None]:
        def emit(event: AgentEvent) -> None:
            self.relay(session_id, event)

        return emit

    def relay(self, session_id: str, event: AgentEvent) -> None:
        stream = self.state.turns.get(session_id)
        if isinstance(event, UsageUpdated):
            self.notify(USAGE, wire.usage_json(session_id, event.snapshot))
            return
        if isinstance(event, CompactionStarted | CompactionFinished):
            self.notify("agent/compaction", wire.compaction_json(session_id, event))
            self.compaction_progress(session_id, event)
            return
        if isinstance(event, OverflowHappened):
            self.notify("agent/overflow", wire.overflow_json(session_id, event))
            return
        if isinstance(event, McpStatusChanged):
            self.notify(MCP_STATUS, wire.mcp_status_json(session_id, event.status))
            return
        if isinstance(event, ContextDecided):
            self.notify("agent/context", wire.decision_json(session_id, event))
            return
        if isinstance(event, TurnEnded):
            return
        update = wire.update_json(event)
        if update is None:
            return
        if stream is None:
            # Outside a turn (e.g. a file changed between turns): a turn-less update.
            stream = TurnStream(turn_id="")
        if self.outbox is not None:
            self.outbox.update(session_id, stream.turn_id, update)  # it numbers them
        else:
            params = {
                "sessionId": session_id,
                "turnId": stream.turn_id,
                "seq": stream.seq,
                "update": update,
            }
            self.protocol.notify("agent/update", params)
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

    async def request_permission(self, params: dict[str, Any]) -> str | PermissionAnswer | None:
        msg_id = f"perm-{uuid.uuid4().hex[:12]}"
        try:
            result = await self.protocol.send_request_async(
                "agent/requestPermission", params, msg_id=msg_id
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

    async def fetch_settings(self, uri: str) -> AgentSettings:
        raw: Any = self.state.base_settings
        if self.state.configuration:
            try:
                results = await self.workspace_configuration_async(
                    types.ConfigurationParams(
                        items=[types.ConfigurationItem(scope_uri=uri, section="agent")]
                    )
                )
                if results and isinstance(results[0], Mapping):
                    raw = _merge(self.state.base_settings or {}, results[0])
            except Exception as error:
                log.warning("workspace/configuration failed: %s", error)
        try:
            return settings_from_json(raw)
        except ConfigError as error:
            self.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Error, message=f"agent-server: {error.message}"
                )
            )
            return AgentSettings()


def _preload() -> None:
    from agent_server.agent.workspace import preload_providers

    preload_providers()


def permission_message(request: PermissionRequest) -> str:
    """The question as a plain message (for clients without agent/requestPermission): the
    whole command or the diff, every character shown literally."""
    text = f"agent-server wants to: {literal(request.title, keep='')}"
    if request.command is not None:
        text += f"\n\n{literal(request.command)}"
    elif request.change is not None:
        text += f"\n\n{literal(request.change.diff)}"
    return text


def _merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(out[key], value)
        elif value is not None:
            out[key] = value
    return out


def create_server(**options: Any) -> AgentLanguageServer:
    """A server with every feature registered. `options` go to each WorkspaceAgent."""
    server = AgentLanguageServer(**options)
    _register(server)
    return server


Handler = Callable[[AgentLanguageServer, Any], Awaitable[dict[str, Any]]]


def _answers_agent_errors(handler: Handler) -> Handler:
    """Agent errors become JSON-RPC errors with the codes of docs/protocol.md."""

    @functools.wraps(handler)
    async def answer(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        try:
            return await handler(ls, raw)
        except AgentServerError as error:
            raise rpc_error(error) from None

    return answer


def _register(server: AgentLanguageServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: AgentLanguageServer, params: types.InitializeParams) -> None:
        options = (
            params.initialization_options
            if isinstance(params.initialization_options, Mapping)
            else {}
        )
        settings = options.get("settings")
        ls.state.base_settings = settings if isinstance(settings, Mapping) else None
        declared = options.get("clientCapabilities")
        experimental = params.capabilities.experimental
        agent_caps = experimental.get("agent") if isinstance(experimental, Mapping) else None
        ls.state.permission_requests = bool(
            (isinstance(declared, Mapping) and declared.get("requestPermission"))
            or (isinstance(agent_caps, Mapping) and agent_caps.get("requestPermission"))
        )
        window = params.capabilities.window
        ls.state.work_done_progress = bool(window and window.work_done_progress)
        workspace = params.capabilities.workspace
        ls.state.configuration = bool(workspace and workspace.configuration)
        try:
            base = settings_from_json(ls.state.base_settings)
        except ConfigError as error:
            log.error("initializationOptions.settings: %s", error.message)
            base = AgentSettings()
        uris = [f.uri for f in params.workspace_folders or []]
        if not uris and params.root_uri:
            uris = [params.root_uri]
        for uri in uris:
            with contextlib.suppress(Exception):
                ls.add_folder(uri, base)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: AgentLanguageServer, params: types.InitializedParams) -> None:
        # Load the agent and the provider SDKs while the editor finishes starting, not on the
        # first request.
        threading.Thread(target=_preload, name="preload-agent", daemon=True).start()
        for folder in list(ls.state.folders.values()):
            folder.agent.update_settings(await ls.fetch_settings(folder.uri))

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        ls: AgentLanguageServer, params: types.DidChangeConfigurationParams
    ) -> None:
        settings = getattr(params, "settings", None)
        if isinstance(settings, Mapping) and isinstance(settings.get("agent"), Mapping):
            ls.state.base_settings = _merge(ls.state.base_settings or {}, settings["agent"])
        for folder in list(ls.state.folders.values()):
            folder.agent.update_settings(await ls.fetch_settings(folder.uri))

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_folders(
        ls: AgentLanguageServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        for removed in params.event.removed:
            path = wire.uri_to_path(removed.uri).resolve()
            folder = ls.state.folders.pop(path, None)
            if folder is not None:
                await folder.close()
        for added in params.event.added:
            folder = ls.add_folder(added.uri, AgentSettings())
            folder.agent.update_settings(await ls.fetch_settings(added.uri))

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: AgentLanguageServer, params: Any) -> None:
        for folder in list(ls.state.folders.values()):
            with contextlib.suppress(Exception):
                await folder.close()

    @server.feature(SESSION_NEW)
    @_answers_agent_errors
    async def session_new(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, SESSION_NEW)
        workspace = params.workspace()
        model = params.optional_string("model")
        title = params.optional_string("title")
        folder = ls.folder_for(workspace)
        session = folder.agent.create(model=model, title=title)
        session.attach(ls.sink(session.session_id), ls.asker(session.session_id))
        return {
            "sessionId": session.session_id,
            "usage": wire.usage_json(session.session_id, session.usage_snapshot()),
            **wire.session_state_json(session),
            "mcp": wire.mcp_status_json(session.session_id, session.mcp_status()),
        }

    @server.feature(SESSION_LIST)
    @_answers_agent_errors
    async def session_list(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, SESSION_LIST)
        folder = ls.folder_for(params.workspace())
        return {
            "sessions": [
                {
                    "sessionId": info.session_id,
                    "title": info.title,
                    "model": info.model,
                    "createdAt": info.created_at,
                    "updatedAt": info.updated_at,
                    "entryCount": info.entry_count,
                    "firstPrompt": info.first_prompt,
                    "promptCount": info.prompt_count,
                }
                for info in folder.agent.list()
            ]
        }

    @server.feature(SESSION_LOAD)
    @_answers_agent_errors
    async def session_load(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, SESSION_LOAD)
        session_id = params.string("sessionId")
        limit = params.count("limit", wire.DEFAULT_PAGE, wire.MAX_PAGE)
        session = ls.session(session_id)
        snapshot = session.usage_snapshot()
        page = session.transcript(limit=limit)
        ls.notify(USAGE, wire.usage_json(session_id, snapshot))
        out = {
            "sessionId": session_id,
            "title": session.ledger.title,
            "leafId": session.ledger.leaf_id,
            "transcript": page.items,
            "cursor": page.cursor,
            "usage": wire.usage_json(session_id, snapshot),
            **wire.session_state_json(session),
            "mcp": wire.mcp_status_json(session_id, session.mcp_status()),
        }
        repair = wire.repair_json(session.ledger.load_report)
        if repair is not None:
            out["repair"] = repair
        return out

    @server.feature(SESSION_HISTORY)
    @_answers_agent_errors
    async def session_history(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, SESSION_HISTORY)
        session_id = params.string("sessionId")
        before = params.string("before")
        limit = params.count("limit", wire.DEFAULT_PAGE, wire.MAX_PAGE)
        page = ls.session(session_id).transcript(before=before, limit=limit)
        return {"sessionId": session_id, "transcript": page.items, "cursor": page.cursor}

    @server.feature(TURN)
    @_answers_agent_errors
    async def turn(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, TURN)
        session_id = params.string("sessionId")
        prompt = params.prompt()
        token = params.token("workDoneToken")
        session = ls.session(session_id)
        if session.busy:
            raise SessionBusyError(
                f"session {session_id} is busy with another turn; wait for it or interrupt it"
            )
        turn_id = uuid.uuid4().hex[:12]
        stream = TurnStream(turn_id, progress_token=token)
        ls.state.turns[session_id] = stream
        if token is not None:
            ls.work_done_progress.begin(
                token,
                types.WorkDoneProgressBegin(title="Agent", message="Working", cancellable=True),
            )
        try:
            result = await session.run_turn(prompt, turn_id=turn_id)
        finally:
            if ls.state.turns.get(session_id) is stream:
                del ls.state.turns[session_id]
            if ls.outbox is not None:
                ls.outbox.end_turn(session_id, turn_id)
            if token is not None:
                ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="Done"))
        out: dict[str, Any] = {
            "turnId": result.turn_id,
            "stopReason": result.stop_reason,
            "usage": wire.usage_json(session_id, session.usage_snapshot()),
        }
        if result.error is not None:
            out["error"] = {"code": result.error_code, "message": result.error}
        return out

    @server.feature(INTERRUPT)
    @_answers_agent_errors
    async def interrupt(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, INTERRUPT)
        session_id = params.string("sessionId")
        ls.session(session_id).interrupt()
        return {}

    @server.feature(COMPACT)
    @_answers_agent_errors
    async def compact(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, COMPACT)
        session_id = params.string("sessionId")
        instructions = params.optional_string("instructions")
        session = ls.session(session_id)
        outcome = await session.compact(instructions)
        out: dict[str, Any] = {
            "outcome": outcome.outcome if outcome.outcome != "cancelled" else "failed",
            "tokensBefore": outcome.tokens_before,
            "tokensAfter": outcome.tokens_after,
            "windowNumber": session.usage_snapshot().window_number,
        }
        if outcome.error:
            out["error"] = outcome.error
        return out

    @server.feature(REWIND)
    @_answers_agent_errors
    async def rewind(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, REWIND)
        session_id = params.string("sessionId")
        entry_id = params.string("entryId")
        summarize = params.boolean("summarize")
        restore = params.choice("restore", wire.RESTORE_CHOICES, "conversation")
        session = ls.session(session_id)
        rewound = await session.rewind(entry_id, summarize=summarize, restore=restore)
        ls.notify(USAGE, wire.usage_json(session_id, session.usage_snapshot()))
        return wire.rewind_json(rewound)

    @server.feature(REWIND_PREVIEW)
    @_answers_agent_errors
    async def rewind_preview(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, REWIND_PREVIEW)
        session_id = params.string("sessionId")
        entry_id = params.string("entryId")
        session = ls.session(session_id)
        plan = await asyncio.to_thread(session.rewind_plan, entry_id)
        return wire.rewind_preview_json(session, entry_id, plan)

    @server.feature(MODEL_LIST)
    @_answers_agent_errors
    async def model_list(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, MODEL_LIST)
        session_id = params.optional_string("sessionId")
        if session_id is not None:
            session = ls.session(session_id)
            settings, current = session.settings, session.model.id
        else:
            agent = ls.folder_for(params.workspace()).agent
            settings, current = agent.settings, agent.default_model()
        from agent_server.agent.workspace import model_choices

        return {
            "provider": settings.provider,
            "current": current,
            "models": [choice.to_json(current) for choice in model_choices(settings)],
        }

    @server.feature(MODEL_SET)
    @_answers_agent_errors
    async def model_set(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, MODEL_SET)
        session_id = params.string("sessionId")
        model = params.string("model")
        session = ls.session(session_id)
        switch = await session.switch_model(model)
        snapshot = session.usage_snapshot()
        ls.notify(USAGE, wire.usage_json(session_id, snapshot))
        return {
            "model": wire.model_json(switch.model),
            "entryId": switch.entry_id,
            "cost": switch.cost.to_json(),
            "note": switch.note,
            "usage": wire.usage_json(session_id, snapshot),
        }

    @server.feature(MODE_SET)
    @_answers_agent_errors
    async def mode_set(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, MODE_SET)
        session_id = params.string("sessionId")
        mode = params.choice("mode", wire.PERMISSION_MODES, None)
        session = ls.session(session_id)
        session.set_mode(mode)
        return wire.session_state_json(session)

    @server.feature(THINKING_SET)
    @_answers_agent_errors
    async def thinking_set(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, THINKING_SET)
        session_id = params.string("sessionId")
        level = params.choice("thinking", wire.THINKING_LEVELS, None)
        session = ls.session(session_id)
        switch = session.switch_thinking(level)
        return {
            "thinking": switch.thinking,
            "canThink": session.can_think,
            "entryId": switch.entry_id,
            "cost": switch.cost.to_json(),
            "note": switch.note,
        }

    @server.feature(MENTION_COMPLETE)
    @_answers_agent_errors
    async def mention_complete(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, MENTION_COMPLETE)
        workspace = params.workspace()
        query = params.text("query")
        limit = params.count("limit", 50, 200)
        folder = ls.folder_for(workspace)
        from agent_server.agent.mentions import complete

        found = await asyncio.to_thread(complete, folder.agent.root, query, limit)
        return {"items": [item.to_json() for item in found]}

    @server.feature(USAGE)
    @_answers_agent_errors
    async def usage(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, USAGE)
        session_id = params.string("sessionId")
        session = ls.session(session_id)
        return wire.usage_json(session_id, session.usage_snapshot())

    @server.feature(USER_IDLE)
    @_answers_agent_errors
    async def user_idle(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, USER_IDLE)
        idle = params.boolean("idle", default=None)  # no guessing whether the user is away
        for folder in ls.state.folders.values():
            folder.agent.set_user_idle(idle)
        return {}

    @server.feature(MCP_SERVERS)
    @_answers_agent_errors
    async def mcp_servers(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, MCP_SERVERS)
        session_id = params.string("sessionId")
        return wire.mcp_status_json(session_id, ls.session(session_id).mcp_status())

    @server.feature(MCP_ACCEPT_TOOLS)
    @_answers_agent_errors
    async def mcp_accept_tools(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, MCP_ACCEPT_TOOLS)
        session_id = params.string("sessionId")
        outcome = ls.session(session_id).accept_tools()
        return {
            "accepted": outcome.accepted,
            "deferred": outcome.deferred,
            "tokens": outcome.tokens,
        }

    @server.feature(MCP_RESTART)
    @_answers_agent_errors
    async def mcp_restart(ls: AgentLanguageServer, raw: Any) -> dict[str, Any]:
        params = Params(raw, MCP_RESTART)
        session_id = params.string("sessionId")
        name = params.string("name")
        session = ls.session(session_id)
        if not await session.restart_mcp_server(name):
            known = ", ".join(session.mcp_server_names()) or "none"
            raise wire.invalid(
                f"{MCP_RESTART}: no MCP server named {name!r} in this session (servers: {known})"
            )
        return {}

    @server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def progress_cancel(
        ls: AgentLanguageServer, params: types.WorkDoneProgressCancelParams
    ) -> None:
        for session_id, stream in list(ls.state.turns.items()):
            if stream.progress_token == params.token:
                with contextlib.suppress(AgentServerError):
                    ls.session(session_id).interrupt()


def serve_stdio() -> int:
    server = create_server()
    outbox = Outbox(sys.stdout.buffer)
    server.attach_outbox(outbox)
    try:
        return server.serve_stdio(stdout=outbox)
    finally:
        outbox.close()


def serve_tcp(host: str, port: int) -> int:
    return create_server().serve_tcp(host, port)
