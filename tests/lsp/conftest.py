"""Drive the real server over stdio with pytest-lsp's client.

`start_agent_client` starts `agent_server serve` as a subprocess (forked from one that has
imported it: tests/forked_agent.py), initializes it with the given settings and workspace
folders, and records every agent/* notification. The client uses the server's own converter
so that custom params stay plain JSON. Every result and notification is checked against the
protocol's description (tests/lsp/conformance.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

from agent_server import protocol
from agent_server.lsp.server import agent_converter
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from agent_server.sim.workspace import write_sample_workspace
from tests import forked_agent
from tests.lsp.conformance import check_result, mismatches

_DESCRIBED = {m.name for m in protocol.CLIENT_REQUESTS}
_SENT = {m.name: m.params for m in protocol.METHODS if m.sender == "server"}


@dataclass
class AgentClient:
    client: LanguageClient
    workspaces: list[Path]
    updates: list[dict[str, Any]] = field(default_factory=list)
    usage: list[dict[str, Any]] = field(default_factory=list)
    compactions: list[dict[str, Any]] = field(default_factory=list)
    overflows: list[dict[str, Any]] = field(default_factory=list)
    mcp: list[dict[str, Any]] = field(default_factory=list)  # agent/mcp/status
    decisions: list[dict[str, Any]] = field(default_factory=list)
    permission_requests: list[dict[str, Any]] = field(default_factory=list)
    permission_cancellations: int = 0
    show_message_requests: list[Any] = field(default_factory=list)
    # Decides the answer to agent/requestPermission: option id, or None for "cancelled", or
    # the whole selected outcome ({"selected", "message"?, "newText"?}).
    answer_permission: Callable[[dict[str, Any]], str | dict[str, Any] | None] = (
        lambda _params: "allow_once"
    )
    permission_delay: float = 0.0
    # When set, agent/requestPermission is answered only once it is set (a turn held waiting).
    permission_hold: asyncio.Event | None = None
    # What the server sent that the protocol does not describe (checked when the client stops).
    undescribed: list[str] = field(default_factory=list)

    async def request(self, method: str, params: Any) -> Any:
        result = await self.client.protocol.send_request_async(method, params)
        if method in _DESCRIBED:
            check_result(method, result)
        return result

    def received(self, method: str, params: Any) -> Any:
        self.undescribed += mismatches(params, _SENT[method], method)
        return params

    def workspace_uri(self, index: int = 0) -> str:
        return self.workspaces[index].as_uri()

    async def new_session(self, index: int = 0, **extra: Any) -> str:
        result = await self.request(
            "agent/session/new", {"workspaceUri": self.workspace_uri(index), **extra}
        )
        return str(result["sessionId"])

    def updates_of(self, turn_id: str) -> list[dict[str, Any]]:
        return [u for u in self.updates if u["turnId"] == turn_id]


def make_client(state: dict[str, AgentClient]) -> LanguageClient:
    client = LanguageClient(converter_factory=agent_converter)
    register_lsp_features(client)

    @client.feature("agent/update")
    def on_update(ls: LanguageClient, params: Any) -> None:
        state["client"].updates.append(state["client"].received("agent/update", params))

    @client.feature("agent/usage")
    def on_usage(ls: LanguageClient, params: Any) -> None:
        state["client"].usage.append(state["client"].received("agent/usage", params))

    @client.feature("agent/compaction")
    def on_compaction(ls: LanguageClient, params: Any) -> None:
        state["client"].compactions.append(state["client"].received("agent/compaction", params))

    @client.feature("agent/overflow")
    def on_overflow(ls: LanguageClient, params: Any) -> None:
        state["client"].overflows.append(state["client"].received("agent/overflow", params))

    @client.feature("agent/mcp/status")
    def on_mcp_status(ls: LanguageClient, params: Any) -> None:
        state["client"].mcp.append(state["client"].received("agent/mcp/status", params))
    @client.feature("agent/context")
    def on_context(ls: LanguageClient, params: Any) -> None:
        state["client"].decisions.append(state["client"].received("agent/context", params))

    @client.feature("agent/requestPermission")
    async def on_permission(ls: LanguageClient, params: Any) -> Any:
        agent = state["client"]
        agent.permission_requests.append(agent.received("agent/requestPermission", params))
        if agent.permission_delay:
            try:
                await asyncio.sleep(agent.permission_delay)
            except asyncio.CancelledError:
                agent.permission_cancellations += 1
                raise
        if agent.permission_hold is not None:
            await agent.permission_hold.wait()
        choice = agent.answer_permission(params)
        if choice is None:
            return {"outcome": "cancelled"}
        if isinstance(choice, dict):
            return {"outcome": choice}
        return {"outcome": {"selected": choice}}

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_show_message_request(ls: LanguageClient, params: Any) -> Any:
        agent = state["client"]
        agent.show_message_requests.append(params)
        actions = params.actions or []
        return actions[0] if actions else None

    return client


@asynccontextmanager
async def start_agent_client(
    workspaces: list[Path],
    settings: dict[str, Any],
    *,
    request_permission: bool = True,
    configuration: bool = True,
    env: dict[str, str] | None = None,
) -> AsyncIterator[AgentClient]:
    state: dict[str, AgentClient] = {}
    config = ClientServerConfig(
        server_command=forked_agent.command("serve", "--trust-editor-settings"),
        client_factory=lambda: make_client(state),
        server_env=env,
    )
    client = await config.start()
    agent = AgentClient(client, workspaces)
    state["client"] = agent
    client.set_configuration(settings, section="agent")
    capabilities = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            configuration=configuration, workspace_folders=True
        ),
        window=types.WindowClientCapabilities(work_done_progress=True),
    )
    options: dict[str, Any] = {"settings": settings}
    if request_permission:
        options["clientCapabilities"] = {"requestPermission": True}
    await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            workspace_folders=[
                types.WorkspaceFolder(uri=path.as_uri(), name=path.name) for path in workspaces
            ],
            initialization_options=options,
        )
    )
    try:
        yield agent
    finally:
        await client.shutdown_session()
        await client.stop()
    assert not agent.undescribed, "\n".join(agent.undescribed)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    write_sample_workspace(path)
    return path


@pytest.fixture
async def sim() -> AsyncIterator[SimServer]:
    async with SimServer(Simulator()) as server:
        yield server


def sim_settings(sim: SimServer, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "provider": "sim",
        "baseUrl": sim.base_url,
        "sessionsDir": str(tmp_path / "sessions"),
        "permissions": {"mode": "allowAll"},
    }
    settings.update(extra)
    return settings
