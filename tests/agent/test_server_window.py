"""A local server whose window is smaller than the one agent-server was told: the overflow
says so and names the setting, instead of advising a rewind (tests against the simulator,
which answers as vLLM and OpenAI do: "This model's maximum context length is N tokens")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from agent_server.agent import events
from agent_server.agent.session import AgentSession
from agent_server.agent.settings import AgentSettings
from agent_server.agent.workspace import WorkspaceAgent
from agent_server.llm.models import ModelInfo
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.agent.conftest import FAST_RETRY


@asynccontextmanager
async def local_server(
    tmp_path: Path, served_window: int = 32768, faults: str | None = None
) -> AsyncIterator[tuple[AgentSession, list[events.AgentEvent], Simulator]]:
    """A session on `tiny` at the simulator's OpenAI endpoint, a model only that server
    knows (vendor local): agent-server takes the default window (32768), the server serves
    `served_window`, with the simulator's `faults`."""
    # It takes the output budget agent-server asks for (a quarter of 32768): only the window
    # is wrong.
    served = ModelInfo("tiny", "Tiny", "local", served_window, 8192)
    simulator = Simulator(models=(served,), faults=faults)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    seen: list[events.AgentEvent] = []
    async with SimServer(simulator) as server:
        settings = AgentSettings(permissions_mode="allowAll").with_overrides(
            provider="openai-chat",
            model="tiny",
            base_url=server.base_url + "/v1",
            sessions_dir=str(tmp_path / "sessions"),
        )
        agent = WorkspaceAgent(workspace, settings, retry=FAST_RETRY)
        try:
            yield agent.create(emit=seen.append), seen, simulator
        finally:
            await agent.close()


async def test_a_server_window_too_small_for_agent_server_says_to_raise_it(
    tmp_path: Path,
) -> None:
    async with local_server(tmp_path, 2048) as (session, seen, simulator):
        result = await session.run_turn("hi")
    assert result.stop_reason == "error" and result.error is not None
    assert "takes at most 2,048 tokens, less than the 32,768" in result.error
    assert "start the server with a larger context" in result.error
    assert "'contextWindow'" in result.error and "rewind" not in result.error
    # Said once (the turn's error), nothing compacted for the wrong window.
    gave_up = [e for e in seen if isinstance(e, events.OverflowHappened)]
    assert [e.action for e in gave_up] == ["gaveUp"]
    assert not [e for e in seen if isinstance(e, events.CompactionStarted)]
    assert len(simulator.records) == 1


async def test_a_server_window_below_the_setting_names_the_value_to_set(tmp_path: Path) -> None:
    async with local_server(tmp_path, 12288) as (session, _seen, _simulator):
        # About 16k tokens: under the 32768 agent-server assumes, over what the server serves.
        result = await session.run_turn("read this: " + "lorem ipsum dolor " * 3500)
    assert result.error is not None
    assert "takes at most 12,288 tokens" in result.error
    assert "Set 'contextWindow' to 12288" in result.error
