"""The turn loop and what real servers send: a turn the provider pauses is continued, a
request too large for the rate limit ends the turn at once with what to do, and the long
cache retention keeps Anthropic's TTL order (the simulator refuses the wrong one)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from agent_server.agent import events
from agent_server.agent.session import AgentSession
from agent_server.agent.settings import AgentSettings
from agent_server.agent.workspace import WorkspaceAgent
from agent_server.llm.messages import AssistantMessage
from agent_server.session.entries import MessageEntry
from agent_server.sim.request_checks import check_requests
from agent_server.sim.scenario import default_scenario, parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.agent.conftest import FAST_RETRY, agent_run
from tests.llm.builders import cache_ttls

SCENARIO = {
    "turns": [
        {
            "user": "Look around.",
            "steps": [
                {"text": "Listing first.", "tools": [{"name": "ls", "arguments": {"path": "."}}]},
                {
                    "text": "Now the readme.",
                    "tools": [{"name": "read", "arguments": {"path": "README.md"}}],
                },
                {"text": "Done looking."},
            ],
        }
    ]
}


def assistant_messages(session: AgentSession) -> list[AssistantMessage]:
    return [
        entry.message
        for entry in session.ledger.tree.branch()
        if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage)
    ]


async def test_a_paused_turn_is_sent_back_and_continues(tmp_path: Path) -> None:
    async with agent_run(tmp_path, scenario=SCENARIO, faults="pause@2") as run:
        result = await run.session.run_turn("Look around.")
        assert result.stop_reason == "end_turn", result
        requests = run.model_requests
        assert [r.stop_reason for r in requests[:2]] == ["tool_use", "pause_turn"]
        assert len(requests) == 3
        # The continuation is the paused request again, with the paused answer at its end.
        paused_body, continued_body = requests[1].request, requests[2].request
        assert continued_body["messages"][:-1] == paused_body["messages"]
        assert continued_body["messages"][-1] == {
            "role": "assistant",
            "content": [{"type": "text", "text": "Now the readme."}],
        }
        stops = [message.stop_reason for message in assistant_messages(run.session)]
        assert stops == ["toolUse", "pauseTurn", "stop"]
        assert not [n for n in run.of(events.Notice) if "Retrying" in n.message]
        check = check_requests(run.sim.records)
        assert check.ok, check.summary()


async def test_continuing_paused_turns_stops_at_max_steps(tmp_path: Path) -> None:
    settings = AgentSettings(permissions_mode="allowAll", max_steps=3)
    async with agent_run(
        tmp_path, scenario=SCENARIO, settings=settings, faults="pause@1-100"
    ) as run:
        result = await run.session.run_turn("Look around.")
        assert result.stop_reason == "max_turn_requests"
        assert len(run.model_requests) == 3
        assert all(r.stop_reason == "pause_turn" for r in run.model_requests)
        assert any("maxSteps" in n.message for n in run.of(events.Notice))


async def test_long_retention_keeps_one_ttl_in_every_request(tmp_path: Path) -> None:
    settings = AgentSettings(permissions_mode="allowAll", cache_retention="long")
    async with agent_run(tmp_path, settings=settings) as run:
        for prompt in default_scenario().prompts[:3]:
            result = await run.session.run_turn(prompt)
            assert result.stop_reason == "end_turn", result
        requests = run.model_requests
        assert requests and all(r.status == 200 for r in requests)
        ttls = [ttl for r in requests for ttl in cache_ttls(r.request)]
        assert ttls and set(ttls) == {"1h"}
        written = [r.tokens.cache_write_1h for r in requests if r.tokens is not None]
        assert sum(written) > 0


@asynccontextmanager
async def chat_session(
    tmp_path: Path, faults: str
) -> AsyncIterator[tuple[AgentSession, Simulator, list[events.AgentEvent]]]:
    """A session on the OpenAI Chat Completions provider, against the simulator."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "README.md").write_text("A sample.\n")
    simulator = Simulator(scenario=parse_scenario(SCENARIO), faults=faults)
    seen: list[events.AgentEvent] = []
    async with SimServer(simulator) as server:
        settings = AgentSettings(permissions_mode="allowAll").with_overrides(
            provider="openai-chat",
            model="sim-small",
            base_url=server.base_url + "/v1",
            sessions_dir=str(tmp_path / "sessions"),
        )
        agent = WorkspaceAgent(workspace, settings, retry=FAST_RETRY)
        try:
            yield agent.create(emit=seen.append), simulator, seen
        finally:
            await agent.close()


async def test_a_request_too_large_for_the_rate_limit_ends_the_turn_without_retries(
    tmp_path: Path,
) -> None:
    async with chat_session(tmp_path, "toolarge@2:6000") as (session, simulator, seen):
        result = await session.run_turn("Look around.")
        assert result.stop_reason == "error"
        assert result.error_code == "request_too_large"
        assert result.error is not None
        assert "Waiting will not help" in result.error
        assert "compact the session" in result.error
        requests = [r for r in simulator.records if r.api == "openai-chat"]
        assert [r.status for r in requests] == [200, 429]  # never retried
        notices = [e for e in seen if isinstance(e, events.Notice)]
        assert not [n for n in notices if "Retrying" in n.message]
        # Said once, by the turn's end, not again as a notice.
        assert not [n for n in notices if "Waiting will not help" in n.message]
        assert [e.error for e in seen if isinstance(e, events.TurnEnded)] == [result.error]
        # The session is intact: the next turn works.
        again = await session.run_turn("Look around.")
        assert again.stop_reason == "end_turn", again
