"""MCP sessions against the simulator, with the Python fixture server as a real MCP server."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_server.agent import events
from agent_server.agent.permissions import PermissionRequest
from agent_server.agent.session import AgentSession
from agent_server.agent.settings import AgentSettings, McpOptions
from agent_server.agent.workspace import WorkspaceAgent
from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.agent.conftest import FAST_RETRY

FIXTURE_SERVER = Path(__file__).with_name("fixture_server.py")


def fixture_server(*args: str, **extra: Any) -> dict[str, Any]:
    """A `mcpServers` entry that runs the fixture server."""
    return {"command": sys.executable, "args": [str(FIXTURE_SERVER), *args], **extra}


@dataclass
class McpRun:
    agent: WorkspaceAgent
    session: AgentSession
    sim: Simulator
    workspace: Path
    events: list[events.AgentEvent] = field(default_factory=list)
    asked: list[PermissionRequest] = field(default_factory=list)
    answer: str = "allow_once"

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The bodies of the model requests (summary requests included)."""
        return [r.request for r in self.sim.records if r.api == "anthropic-messages"]

    def tool_names(self, index: int = -1) -> list[str]:
        return [tool["name"] for tool in self.requests[index]["tools"]]

    def emit(self, event: events.AgentEvent) -> None:
        self.events.append(event)

    async def ask(self, request: PermissionRequest) -> str | None:
        self.asked.append(request)
        return self.answer

    async def reopen(self, settings: AgentSettings | None = None) -> None:
        """Close everything and open the session again in a new WorkspaceAgent (a restart)."""
        session_id = self.session.session_id
        await self.agent.close()
        self.agent = WorkspaceAgent(
            self.workspace, settings or self.agent.settings, retry=FAST_RETRY
        )
        self.session = self.agent.open(session_id, emit=self.emit, ask=self.ask)

    def evict_and_open(self) -> None:
        """Close the session as the LSP server does to bound what it holds open
        (WorkspaceAgent.evict) and open it again in the same agent, as its next request does."""
        session_id = self.session.session_id
        assert self.agent.evict(session_id)
        self.session = self.agent.open(session_id, emit=self.emit, ask=self.ask)


def mcp_settings(
    base_url: str, tmp_path: Path, servers: dict[str, Any], sessions: Path | None = None,
    **mcp: Any,
) -> AgentSettings:
    return AgentSettings(
        provider="sim",
        base_url=base_url,
        sessions_dir=str(sessions or tmp_path / "sessions"),
        permissions_mode="allowReads",
        # A busy test machine may take more than the default's seconds to start a fixture
        # server: the first request waits for it (a test of the wait passes its own).
        mcp=McpOptions(**{"servers": servers, "user_file": "", "first_request_wait": 120, **mcp}),
    )


@asynccontextmanager
async def mcp_run(
    tmp_path: Path, servers: dict[str, Any], scenario: dict[str, Any],
    sessions: Path | None = None, **mcp: Any,
) -> AsyncIterator[McpRun]:
    """`sessions`: the sessionsDir (default: beside the workspace)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    simulator = Simulator(scenario=parse_scenario(scenario))
    async with SimServer(simulator) as server:
        settings = mcp_settings(server.base_url, tmp_path, servers, sessions, **mcp)
        agent = WorkspaceAgent(workspace, settings, retry=FAST_RETRY)
        run = McpRun(agent, None, simulator, workspace)  # type: ignore[arg-type]
        run.session = agent.create(emit=run.emit, ask=run.ask)
        try:
            yield run
        finally:
            await run.agent.close()


def turn(user: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"user": user, "steps": [*steps, {"text": f"Done: {user}"}]}


def call(tool_name: str, **arguments: Any) -> dict[str, Any]:
    return {"tools": [{"name": tool_name, "arguments": arguments}]}
