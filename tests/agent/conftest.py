"""An agent session against the simulator over real HTTP, in a temporary workspace."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent_server.agent import events
from agent_server.agent.model_call import RetryPolicy
from agent_server.agent.session import AgentSession
from agent_server.agent.settings import AgentSettings
from agent_server.agent.workspace import WorkspaceAgent
from agent_server.sim.scenario import Scenario, parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from agent_server.sim.workspace import write_sample_workspace


async def short_sleep(seconds: float) -> None:
    """A retry's wait, cut short: the tests do not wait for a provider's retry-after."""
    await asyncio.sleep(min(seconds, 0.01))


FAST_RETRY = RetryPolicy(max_retries=4, base_delay=0.01, max_delay=0.2, sleep=short_sleep)


@dataclass
class Run:
    session: AgentSession
    sim: Simulator
    workspace: Path
    events: list[events.AgentEvent] = field(default_factory=list)
    # Closes the agent and opens the session again in a new one (a server restart); a
    # callable given is run in between (on the closed session's ledger path).
    restart: Callable[..., Awaitable[None]] | None = None

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def model_requests(self) -> list[Any]:
        return [r for r in self.sim.records if r.api == "anthropic-messages"]


@asynccontextmanager
async def agent_run(
    tmp_path: Path,
    *,
    scenario: Scenario | dict[str, Any] | None = None,
    settings: AgentSettings | None = None,
    sample_workspace: bool = True,
    faults: str | None = None,
    clock: Callable[[], float] | None = None,
) -> AsyncIterator[Run]:
    """`clock`, when given, is the simulator's and the session's (to jump over pauses)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    if sample_workspace:
        write_sample_workspace(workspace)
    if isinstance(scenario, dict):
        scenario = parse_scenario(scenario)
    simulator = (
        Simulator(scenario=scenario, faults=faults)
        if clock is None
        else Simulator(scenario=scenario, faults=faults, clock=clock)
    )
    async with SimServer(simulator) as server:
        base = settings or AgentSettings(permissions_mode="allowAll")
        base = base.with_overrides(
            provider="sim", base_url=server.base_url, sessions_dir=str(tmp_path / "sessions")
        )

        def new_agent() -> WorkspaceAgent:
            if clock is None:
                return WorkspaceAgent(workspace, base, retry=FAST_RETRY)
            return WorkspaceAgent(workspace, base, retry=FAST_RETRY, clock=clock)

        agent = new_agent()
        run: Run | None = None

        def emit(event: events.AgentEvent) -> None:
            assert run is not None
            run.events.append(event)

        async def restart(between: Callable[[Path], None] | None = None) -> None:
            nonlocal agent
            assert run is not None
            await agent.close()
            if between is not None:
                between(run.session.ledger.path)
            agent = new_agent()
            run.session = agent.open(run.session.session_id, emit=emit)

        session = agent.create(emit=emit)
        run = Run(session, simulator, workspace, restart=restart)
        try:
            yield run
        finally:
            await agent.close()


AgentRun = Callable[..., Any]


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[asyncio.subprocess.Process]:
    """The processes started through asyncio.create_subprocess_exec during the test, in
    order: to check how the code under test leaves them (exited, pipes read to the end)."""
    started: list[asyncio.subprocess.Process] = []
    spawn = asyncio.create_subprocess_exec

    async def recorded(*args: Any, **kwargs: Any) -> asyncio.subprocess.Process:
        started.append(await spawn(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(asyncio, "create_subprocess_exec", recorded)
    return started
