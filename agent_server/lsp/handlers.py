"""The server's features: one top-level function per method, registered from the tables at
the end (`REQUESTS` for the editor protocol's `agent/` methods, `LSP_FEATURES` for the
standard ones).

A request handler takes the server and its params (`Params`: typed reads that answer a bad
value with InvalidParams) and returns its result as the protocol describes it
(agent_server/protocol.py); the registration turns agent errors into JSON-RPC errors with
the codes of docs/protocol.md. Adding a method: its description in protocol.py, a function
here and a row in `REQUESTS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import uuid
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from agent_server import protocol
from agent_server.agent.settings import AgentSettings, settings_skipping_bad
from agent_server.errors import AgentServerError, SessionBusyError
from agent_server.lsp import items, wire
from agent_server.lsp.wire import Params, rpc_error
from agent_server.settings_schema import merge_settings
from agent_server.stderr_log import shorten

if TYPE_CHECKING:
    from agent_server.lsp.server import AgentLanguageServer

log = logging.getLogger(__name__)

Handler = Callable[["AgentLanguageServer", Params], Awaitable[Any]]

# --- sessions ------------------------------------------------------------------------------


async def session_new(ls: AgentLanguageServer, params: Params) -> protocol.SessionNewResult:
    workspace = params.workspace()
    model = params.optional_string("model")
    title = params.optional_string("title", wire.MAX_TITLE_CHARS)
    folder = ls.folder_for(workspace)
    session = folder.agent.create(model=model, title=title)
    session.attach(ls.sink(session.session_id), ls.asker(session.session_id))
    ls.state.session_use.touch(session.session_id)
    ls.bound_open_sessions(session.session_id)
    result = wire.session_new_result(session)
    _preload_provider(session.settings.provider)
    return result


async def session_list(ls: AgentLanguageServer, params: Params) -> protocol.SessionListResult:
    folder = ls.folder_for(params.workspace())
    # Thousands of meta files take a second or more to read: not on the event loop, where
    # every other request and notification would wait for them.
    return wire.session_list_result(await asyncio.to_thread(folder.agent.list))


async def session_load(ls: AgentLanguageServer, params: Params) -> protocol.SessionLoadResult:
    session_id = params.string("sessionId")
    limit = params.count("limit", wire.DEFAULT_PAGE, wire.MAX_PAGE)
    session = await ls.session_when_free(session_id)
    snapshot = session.usage.snapshot()
    page = session.transcript(limit=limit)
    ls.notify(protocol.USAGE_CHANGED.name, wire.usage_json(session_id, snapshot))
    result = wire.session_load_result(session, page, snapshot)
    _preload_provider(session.settings.provider)
    return result


async def session_fork(ls: AgentLanguageServer, params: Params) -> protocol.SessionLoadResult:
    session_id = params.string("sessionId")
    limit = params.count("limit", wire.DEFAULT_PAGE, wire.MAX_PAGE)
    session = ls.fork(session_id)
    snapshot = session.usage.snapshot()
    ls.notify(protocol.USAGE_CHANGED.name, wire.usage_json(session.session_id, snapshot))
    return wire.session_load_result(session, session.transcript(limit=limit), snapshot)


async def session_rename(
    ls: AgentLanguageServer, params: Params
) -> protocol.SessionRenameResult:
    session_id = params.string("sessionId")
    title = " ".join(params.string("title").split())[: wire.MAX_TITLE_CHARS]
    if not title:
        raise wire.invalid("agent/session/rename: the title is empty")
    agent = ls.agent_with(session_id)
    if session_id in agent.sessions:  # its open ledger, on the loop as every append
        agent.store.rename(session_id, title)
    else:  # opening a ledger reads its index: not on the loop
        await asyncio.to_thread(agent.store.rename, session_id, title)
    return {"sessionId": session_id, "title": title}


async def session_delete(ls: AgentLanguageServer, params: Params) -> protocol.EmptyResult:
    """Closed first if it is open here (its turn ended), then removed for good."""
    session_id = params.string("sessionId")
    await ls.agent_with(session_id).delete(session_id)
    return {}


async def session_history(
    ls: AgentLanguageServer, params: Params
) -> protocol.SessionHistoryResult:
    session_id = params.string("sessionId")
    before = params.string("before")
    limit = params.count("limit", wire.DEFAULT_PAGE, wire.MAX_PAGE)
    page = ls.session(session_id).transcript(before=before, limit=limit)
    return wire.history_result(session_id, page)


# --- turns -----------------------------------------------------------------------------------


async def turn(ls: AgentLanguageServer, params: Params) -> protocol.TurnResult:
    from agent_server.agent.tools.command_input import CommandInputs

    session_id = params.string("sessionId")
    prompt = params.prompt()
    token = params.token("workDoneToken")
    session = ls.session(session_id)
    if session.busy:
        raise SessionBusyError(
            f"session {session_id} is busy with another turn; wait for it or interrupt it"
        )
    turn_id = uuid.uuid4().hex[:12]
    stream = ls.begin_turn(session_id, turn_id, token)
    # The keys typed in the editor's terminal reach the turn's commands (agent/tool/input)
    # while the session's tools.terminal.visible is on.
    stream.command_input = CommandInputs(lambda: session.settings.tools.terminal_visible)
    try:
        result = await session.run_turn(prompt, turn_id=turn_id, command_input=stream.command_input)
    finally:
        ls.end_turn(session_id, stream)
    return wire.turn_result(session_id, result, session.usage.snapshot())


def tool_input(ls: AgentLanguageServer, params: Any) -> None:
    """`agent/tool/input` (a notification: no answer, nothing raised): what the user typed
    to the running command of the call, or Ctrl-C for it (`interrupt`), with the setting on;
    anything else is logged and ignored (an unknown session, a call that is not running, bad
    params)."""
    try:
        read = Params(params, protocol.TOOL_INPUT.name)
        session_id, call_id = read.string("sessionId"), read.string("toolCallId")
        data, end = read.text("data"), read.boolean("end")
        interrupt = read.boolean("interrupt")
    except JsonRpcException as error:
        log.warning("agent/tool/input ignored: %s", shorten(str(error), 200))
        return
    stream = ls.state.turns.get(session_id)
    inputs = stream.command_input if stream is not None else None
    if interrupt:
        if inputs is None or not inputs.interrupt(call_id):
            log.info("agent/tool/input: nothing to interrupt: call %s of session %s runs no "
                     "command that takes input", shorten(call_id, 80), shorten(session_id, 80))
        return
    if inputs is None or not inputs.write(call_id, data, end):
        # Never the data itself: it may be a password typed at a prompt.
        log.info(
            "agent/tool/input ignored (%d characters): call %s of session %s runs no command "
            "that takes input (or its input ended, or holds 1 MB unread)",
            len(data), shorten(call_id, 80), shorten(session_id, 80),
        )


async def interrupt(ls: AgentLanguageServer, params: Params) -> protocol.EmptyResult:
    ls.session(params.string("sessionId")).interrupt()
    return {}


async def compact(ls: AgentLanguageServer, params: Params) -> protocol.CompactResult:
    session_id = params.string("sessionId")
    instructions = params.optional_string("instructions")
    session = ls.session(session_id)
    outcome = await session.compact(instructions)
    return wire.compact_result(outcome, session.usage.snapshot().window_number)


async def rewind(ls: AgentLanguageServer, params: Params) -> protocol.RewindResult:
    session_id = params.string("sessionId")
    entry_id = params.string("entryId")
    summarize = params.boolean("summarize")
    restore = params.choice("restore", wire.RESTORE_CHOICES, "conversation")
    session = ls.session(session_id)
    rewound = await session.rewind(entry_id, summarize=summarize, restore=restore)
    ls.notify(protocol.USAGE_CHANGED.name, wire.usage_json(session_id, session.usage.snapshot()))
    return wire.rewind_json(rewound)


async def rewind_preview(
    ls: AgentLanguageServer, params: Params
) -> protocol.RewindPreviewResult:
    session_id = params.string("sessionId")
    entry_id = params.string("entryId")
    session = ls.session(session_id)
    plan = await asyncio.to_thread(session.rewinder.plan, entry_id)
    return wire.rewind_preview_json(session, entry_id, plan)


async def rewind_changes(
    ls: AgentLanguageServer, params: Params
) -> protocol.RewindChangesResult:
    session_id = params.string("sessionId")
    entry_id = params.string("entryId")
    session = ls.session(session_id)
    files = await asyncio.to_thread(session.rewinder.files_then, entry_id, wire.MAX_FILE_THEN)
    return wire.rewind_changes_json(entry_id, files)


async def usage(ls: AgentLanguageServer, params: Params) -> protocol.UsageSnapshot:
    session_id = params.string("sessionId")
    return wire.usage_json(session_id, ls.session(session_id).usage.snapshot())


async def user_idle(ls: AgentLanguageServer, params: Params) -> protocol.EmptyResult:
    idle = params.boolean("idle", default=None)  # no guessing whether the user is away
    ls.state.user_idle = idle  # a folder's agent made later reads it
    for folder in ls.state.folders.values():
        if (agent := folder.made) is not None:
            agent.set_user_idle(idle)
    return {}


# --- models, modes, mentions -----------------------------------------------------------------


async def model_list(ls: AgentLanguageServer, params: Params) -> protocol.ModelListResult:
    session_id = params.optional_string("sessionId")
    if session_id is not None:
        session = ls.session(session_id)
        settings, current = session.settings, session.model.id
    else:
        agent = ls.folder_for(params.workspace()).agent
        settings, current = agent.settings, agent.default_model()
    from agent_server.agent.workspace import model_choices

    return wire.model_list_result(settings.provider, current, model_choices(settings))


async def model_set(ls: AgentLanguageServer, params: Params) -> protocol.ModelSetResult:
    session_id = params.string("sessionId")
    model = params.string("model")
    session = ls.session(session_id)
    switch = await session.switch_model(model)
    snapshot = session.usage.snapshot()
    ls.notify(protocol.USAGE_CHANGED.name, wire.usage_json(session_id, snapshot))
    return wire.model_set_result(session_id, switch, snapshot)


async def mode_set(ls: AgentLanguageServer, params: Params) -> protocol.SessionState:
    session_id = params.string("sessionId")
    mode = params.choice("mode", wire.PERMISSION_MODES, None)
    session = ls.session(session_id)
    session.set_mode(mode)
    return wire.session_state_json(session)


async def thinking_set(ls: AgentLanguageServer, params: Params) -> protocol.ThinkingSetResult:
    session_id = params.string("sessionId")
    level = params.choice("thinking", wire.THINKING_LEVELS, None)
    session = ls.session(session_id)
    return wire.thinking_set_result(session, session.switch_thinking(level))


async def mention_complete(
    ls: AgentLanguageServer, params: Params
) -> protocol.MentionCompleteResult:
    workspace = params.workspace()
    query = params.text("query")
    limit = params.count("limit", 50, 200)
    folder = ls.folder_for(workspace)
    from agent_server.agent.mentions import complete

    found = await asyncio.to_thread(complete, folder.agent.root, query, limit)
    return wire.mention_result(found)


async def problems(ls: AgentLanguageServer, params: Params) -> protocol.EmptyResult:
    session_id = params.string("sessionId")
    path, found = params.string("path"), params.problems()
    from agent_server.agent.problems import NOTE_KIND, problems_note

    note = problems_note(path, found)
    if note is not None:
        ls.session(session_id).turns.note(NOTE_KIND, note)
    return {}


async def command_list(ls: AgentLanguageServer, params: Params) -> protocol.CommandListResult:
    folder = ls.folder_for(params.workspace())
    from agent_server.agent.prompt_commands import prompt_commands

    found = await asyncio.to_thread(prompt_commands, folder.agent.root)
    return {"commands": [{"name": c.name, "description": c.description, "hint": c.hint,
                          "origin": c.origin} for c in found]}


# --- MCP servers -----------------------------------------------------------------------------


async def mcp_servers(ls: AgentLanguageServer, params: Params) -> protocol.McpStatusParams:
    session_id = params.string("sessionId")
    return wire.mcp_status_json(session_id, ls.session(session_id).tools.status())


async def mcp_accept_tools(
    ls: AgentLanguageServer, params: Params
) -> protocol.McpAcceptToolsResult:
    session_id = params.string("sessionId")
    return wire.accept_tools_result(ls.session(session_id).tools.accept())


async def mcp_restart(ls: AgentLanguageServer, params: Params) -> protocol.EmptyResult:
    session_id = params.string("sessionId")
    name = params.string("name")
    session = ls.session(session_id)
    if not await session.tools.servers.restart(name):
        known = ", ".join(session.tools.servers.names) or "none"
        raise wire.invalid(
            f"{params.method}: no MCP server named {name!r} in this session (servers: {known})"
        )
    return {}


# --- pins ------------------------------------------------------------------------------------


async def pins_list(ls: AgentLanguageServer, params: Params) -> protocol.PinsResult:
    return {"pins": items.pins_json(ls.session(params.string("sessionId")).memory.pins())}


async def pins_add(ls: AgentLanguageServer, params: Params) -> protocol.PinsAddResult:
    session = ls.session(params.string("sessionId"))
    text = params.string("text")
    kind = params.choice("kind", wire.PIN_KINDS, "rule")
    pin = session.pin(kind, text)
    return {"pin": items.pins_json((pin,))[0], "pins": items.pins_json(session.memory.pins())}


async def pins_remove(ls: AgentLanguageServer, params: Params) -> protocol.PinsRemoveResult:
    session = ls.session(params.string("sessionId"))
    pin = session.unpin(params.string("pinId"))
    return {"pin": items.pins_json((pin,))[0], "pins": items.pins_json(session.memory.pins())}


# --- the standard LSP methods ----------------------------------------------------------------


def initialize(ls: AgentLanguageServer, params: types.InitializeParams) -> None:
    options = (
        params.initialization_options
        if isinstance(params.initialization_options, Mapping)
        else {}
    )
    settings = options.get("settings")
    ls.state.initial_settings = settings if isinstance(settings, Mapping) else None
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
    base = _base_settings(ls)
    uris = [f.uri for f in params.workspace_folders or []]
    if not uris and params.root_uri:
        uris = [params.root_uri]
    for uri in uris:
        with contextlib.suppress(Exception):
            ls.add_folder(uri, base)


async def initialized(ls: AgentLanguageServer, params: types.InitializedParams) -> None:
    # Load the agent while the editor finishes starting, not on the first request. The
    # provider's SDK waits until a session is shown (`_preload_provider`): a session restored
    # at start must not share the interpreter with seconds of SDK imports.
    threading.Thread(target=_preload, name="preload-agent", daemon=True).start()
    for folder in list(ls.state.folders.values()):
        folder.agent.update_settings(
            await ls.fetch_settings(folder.uri, folder.agent.settings)
        )


async def did_change_configuration(
    ls: AgentLanguageServer, params: types.DidChangeConfigurationParams
) -> None:
    settings = getattr(params, "settings", None)
    if isinstance(settings, Mapping) and isinstance(settings.get("agent"), Mapping):
        ls.state.pushed_settings = merge_settings(
            ls.state.pushed_settings or {}, settings["agent"]
        )
    for folder in list(ls.state.folders.values()):
        folder.agent.update_settings(
            await ls.fetch_settings(folder.uri, folder.agent.settings)
        )


async def did_change_folders(
    ls: AgentLanguageServer, params: types.DidChangeWorkspaceFoldersParams
) -> None:
    """Each folder on its own: one that is not a file:// folder (an untitled or a remote
    workspace) is skipped with a line in the log. An added folder has the settings the
    server has (initializationOptions, pushed changes) until the editor's own come."""
    for removed in params.event.removed:
        path = _folder_path(removed.uri)
        folder = ls.state.folders.pop(path, None) if path is not None else None
        if folder is not None:
            await folder.close()
    added = [f.uri for f in params.event.added if _folder_path(f.uri) is not None]
    base = _base_settings(ls)
    folders = [(uri, ls.add_folder(uri, base)) for uri in added]
    for uri, folder in folders:
        folder.agent.update_settings(await ls.fetch_settings(uri, folder.agent.settings))


def _folder_path(uri: str) -> Path | None:
    try:
        return wire.uri_to_path(uri).resolve()
    except Exception:
        log.warning("workspace folder %s skipped: not a file:// folder", shorten(uri, 200))
        return None


def _base_settings(ls: AgentLanguageServer) -> AgentSettings:
    """The settings of initializationOptions and of the changes pushed since; one that
    cannot be read is left at its default (and said in the log), not all of them."""
    settings, problems = settings_skipping_bad(ls.users_settings(ls.state.base_settings))
    for problem in problems:
        log.error("initializationOptions.settings: %s (left at its default)", problem)
    return settings


async def shutdown(ls: AgentLanguageServer, params: Any) -> None:
    for folder in list(ls.state.folders.values()):
        with contextlib.suppress(Exception):
            await folder.close()


def progress_cancel(ls: AgentLanguageServer, params: types.WorkDoneProgressCancelParams) -> None:
    for session_id, stream in list(ls.state.turns.items()):
        if stream.progress_token == params.token:
            with contextlib.suppress(AgentServerError):
                ls.session(session_id).interrupt()


def _preload() -> None:
    from agent_server.agent.workspace import preload_sandbox

    preload_sandbox()


def _preload_provider(provider: str) -> None:
    """The session's SDK loads in the background from now, for its first model call (the
    answer being sent is all that is left of the request)."""
    from agent_server.agent.workspace import preload_provider

    preload_provider(provider)


# --- the tables ------------------------------------------------------------------------------

REQUESTS: Mapping[str, Handler] = {
    protocol.SESSION_NEW.name: session_new,
    protocol.SESSION_LIST.name: session_list,
    protocol.SESSION_LOAD.name: session_load,
    protocol.SESSION_HISTORY.name: session_history,
    protocol.TURN.name: turn,
    protocol.INTERRUPT.name: interrupt,
    protocol.COMPACT.name: compact,
    protocol.REWIND.name: rewind,
    protocol.REWIND_PREVIEW.name: rewind_preview,
    protocol.REWIND_CHANGES.name: rewind_changes,
    protocol.USAGE.name: usage,
    protocol.MODEL_LIST.name: model_list,
    protocol.MODEL_SET.name: model_set,
    protocol.MODE_SET.name: mode_set,
    protocol.THINKING_SET.name: thinking_set,
    protocol.MENTION_COMPLETE.name: mention_complete,
    protocol.COMMAND_LIST.name: command_list,
    protocol.PROBLEMS.name: problems,
    protocol.SESSION_FORK.name: session_fork,
    protocol.SESSION_RENAME.name: session_rename,
    protocol.SESSION_DELETE.name: session_delete,
    protocol.MCP_SERVERS.name: mcp_servers,
    protocol.MCP_ACCEPT_TOOLS.name: mcp_accept_tools,
    protocol.MCP_RESTART.name: mcp_restart,
    protocol.USER_IDLE.name: user_idle,
    protocol.PINS_LIST.name: pins_list,
    protocol.PINS_ADD.name: pins_add,
    protocol.PINS_REMOVE.name: pins_remove,
}
METHODS: tuple[str, ...] = tuple(REQUESTS)
# The editor protocol's notifications from the client: no answer, so no error either.
NOTIFICATIONS: Mapping[str, Callable[[AgentLanguageServer, Any], None]] = {
    protocol.TOOL_INPUT.name: tool_input,
}

LSP_FEATURES: Mapping[str, Callable[..., Any]] = {
    types.INITIALIZE: initialize,
    types.INITIALIZED: initialized,
    types.WORKSPACE_DID_CHANGE_CONFIGURATION: did_change_configuration,
    types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS: did_change_folders,
    types.SHUTDOWN: shutdown,
    types.WINDOW_WORK_DONE_PROGRESS_CANCEL: progress_cancel,
}


def answering(method: str, handler: Handler) -> Callable[[AgentLanguageServer, Any], Any]:
    """`handler` at the edge: its params read through `Params`, agent errors answered as
    JSON-RPC errors with the codes of docs/protocol.md."""

    @functools.wraps(handler)
    async def answer(ls: AgentLanguageServer, raw: Any) -> Any:
        params = Params(raw, method)
        named = params.raw.get("sessionId")
        try:
            with (
                ls.state.session_use.request(named)
                if isinstance(named, str)
                else contextlib.nullcontext()
            ):
                return await handler(ls, params)
        except AgentServerError as error:
            raise rpc_error(error) from None

    return answer


def register(server: AgentLanguageServer) -> None:
    """Every feature of both tables, on `server`."""
    for method, feature in LSP_FEATURES.items():
        server.feature(method)(feature)
    for method, handler in REQUESTS.items():
        server.feature(method)(answering(method, handler))
    for method, notified in NOTIFICATIONS.items():
        server.feature(method)(notified)
