"""One ACP session (`AcpSession`) and how its agent session goes through the connection
(`attach`): its events as session updates through the outbox, its permission questions as
`session/request_permission`, its files and commands through the editor when the client
offers `fs/*` and `terminal/*`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.interfaces import Client
from acp.schema import AllowedOutcome, ClientCapabilities, PermissionOption

from agent_server.acp.files import EditorFiles
from agent_server.acp.outbox import UpdateQueue
from agent_server.acp.terminal import EditorTerminal
from agent_server.acp.updates import ClientUpdates, EventTranslator
from agent_server.agent.events import AgentEvent
from agent_server.agent.permissions import PermissionRequest
from agent_server.agent.session import AgentSession
from agent_server.agent.settings import AgentSettings
from agent_server.llm.models import ModelInfo


@dataclass
class AcpSession:
    """One ACP session: the agent's session, where it runs, and what the client chose."""

    session: AgentSession
    cwd: Path
    translator: EventTranslator
    settings: AgentSettings  # the settings the client's choices add up to
    title: str | None = None
    # The models the session switched away from: those the provider's catalogue does not
    # list stay offered (session_options.session_models), so that the client can switch back.
    own_models: list[ModelInfo] = field(default_factory=list)
    command: asyncio.Task[None] | None = None  # a slash command running (/compact), to cancel


def attach(
    session: AgentSession,
    cwd: Path,
    client: Client,
    outbox: UpdateQueue,
    capabilities: ClientCapabilities,
    updates: ClientUpdates,
) -> AcpSession:
    """Route a session's events, questions and file access through this connection."""
    session_id = session.session_id
    state = AcpSession(
        session, cwd, EventTranslator(cwd, updates), session.settings,
        session.ledger.facts.title,
    )
    fs = capabilities.fs
    files = EditorFiles(
        client,
        session_id,
        cwd,
        read=bool(fs and fs.read_text_file),
        write=bool(fs and fs.write_text_file),
        flush=outbox.drain,
    )
    terminal = None
    if capabilities.terminal:
        terminal = EditorTerminal(
            client, session_id, flush=outbox.drain, show=_shower(state, outbox)
        )
    session.attach(_sink(state, outbox), _asker(state, client, outbox), files, terminal)
    return state


def _sink(state: AcpSession, outbox: UpdateQueue) -> Callable[[AgentEvent], None]:
    session_id = state.session.session_id

    def emit(event: AgentEvent) -> None:
        for update in state.translator.updates(event):
            outbox.put(session_id, update)

    return emit


def _shower(state: AcpSession, outbox: UpdateQueue) -> Callable[[str, str], None]:
    def show(call_id: str, terminal_id: str) -> None:
        update = state.translator.terminal_shown(call_id, terminal_id)
        outbox.put(state.session.session_id, update)

    return show


def _asker(
    state: AcpSession, client: Client, outbox: UpdateQueue
) -> Callable[[PermissionRequest], Any]:
    session_id = state.session.session_id

    async def ask(request: PermissionRequest) -> str | None:
        await outbox.drain()  # the client knows the tool call before the question
        response = await client.request_permission(
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
