"""An ACP client's `mcpServers` become the session's MCP tools (docs/acp.md, docs/mcp.md)."""

from __future__ import annotations

import sys
from pathlib import Path

from acp.schema import EnvVariable, McpServerStdio

from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.acp.conftest import OVERVIEW, RecordingClient, acp_args, start_acp
from tests.agent.mcp_tools.conftest import FIXTURE_SERVER, call, turn

SHOUT = "Shout hello."


async def test_the_clients_mcp_servers_are_tools_that_ask_first(
    workspace: Path, tmp_path: Path
) -> None:
    simulator = Simulator(
        scenario=parse_scenario({"turns": [turn(SHOUT, call("mcp__fx__shout", text="hello"))]})
    )
    client = RecordingClient()
    async with (
        SimServer(simulator) as sim,
        start_acp(acp_args(sim, tmp_path), tmp_path, client) as acp,
    ):
        assert acp.init.agent_capabilities is not None
        mcp = acp.init.agent_capabilities.mcp_capabilities
        assert mcp is not None and mcp.http and mcp.sse
        server = McpServerStdio(
            name="fx",
            command=sys.executable,
            args=[str(FIXTURE_SERVER)],
            env=[EnvVariable(name="FX_UNUSED", value="1")],
        )
        session = await acp.conn.new_session(cwd=str(workspace), mcp_servers=[server])
        answer = await acp.prompt(session.session_id, SHOUT)
        assert answer.stop_reason == "end_turn"
        tools = [t["name"] for t in simulator.records[0].request["tools"]]
        assert "mcp__fx__shout" in tools and "read" in tools
        assert [q.title for q in client.questions] == ["fx: shout hello"]
        results = list(client.tool_results().values())
        assert results and results[-1].status == "completed"
        assert "HELLO" in str(results[-1].content)


async def test_a_broken_server_from_the_client_does_not_fail_the_session(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        broken = McpServerStdio(
            name="gone", command=str(tmp_path / "no-such-server"), args=[], env=[]
        )
        session = await acp.conn.new_session(cwd=str(workspace), mcp_servers=[broken])
        answer = await acp.prompt(session.session_id, OVERVIEW)
        assert answer.stop_reason == "end_turn"
        assert acp.client.text(session.session_id)
