"""A task history the editor can manage: `agent/session/rename` and `agent/session/delete`,
over real stdio against the simulator (docs/protocol.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from agent_server.protocol import ERROR_CODES
from agent_server.sim.server import SimServer
from tests.lsp.conftest import AgentClient, sim_settings, start_agent_client
from tests.lsp.test_turns import OVERVIEW


async def listed(agent: AgentClient) -> dict[str, str | None]:
    result = await agent.request("agent/session/list", {"workspaceUri": agent.workspace_uri()})
    return {s["sessionId"]: s["title"] for s in result["sessions"]}


async def test_a_session_renamed_keeps_its_title_on_one_line_across_a_restart(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    settings = sim_settings(sim, tmp_path)
    async with start_agent_client([workspace], settings) as agent:
        open_one = await agent.new_session(title="tour")
        await agent.request("agent/turn", {"sessionId": open_one, "prompt": OVERVIEW})
        answer = await agent.request(
            "agent/session/rename", {"sessionId": open_one, "title": "  Fix the\n\tparser  "}
        )
        assert answer == {"sessionId": open_one, "title": "Fix the parser"}
        assert (await listed(agent))[open_one] == "Fix the parser"
        with pytest.raises(JsonRpcException) as empty:
            await agent.request("agent/session/rename", {"sessionId": open_one, "title": " \n "})
        assert empty.value.code == -32602
        with pytest.raises(JsonRpcException) as unknown:
            await agent.request("agent/session/rename", {"sessionId": "nope", "title": "x"})
        assert unknown.value.code == ERROR_CODES["UnknownSession"]

    async with start_agent_client([workspace], settings) as agent:
        # Not open in this server: renamed on disk, then loaded with its new title.
        await agent.request("agent/session/rename", {"sessionId": open_one, "title": "Parser"})
        assert (await listed(agent))[open_one] == "Parser"
        loaded = await agent.request("agent/session/load", {"sessionId": open_one})
        assert loaded["title"] == "Parser"
        await agent.request("agent/turn", {"sessionId": open_one, "prompt": OVERVIEW})
        assert (await listed(agent))[open_one] == "Parser"  # a turn does not rename it back


async def test_a_session_deleted_is_gone_and_the_others_stay(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    settings = sim_settings(sim, tmp_path)
    async with start_agent_client([workspace], settings) as agent:
        kept = await agent.new_session(title="kept")
        await agent.request("agent/turn", {"sessionId": kept, "prompt": OVERVIEW})
        gone = await agent.new_session(title="gone")
        await agent.request("agent/turn", {"sessionId": gone, "prompt": OVERVIEW})
        assert set(await listed(agent)) == {kept, gone}
        assert await agent.request("agent/session/delete", {"sessionId": gone}) == {}
        assert set(await listed(agent)) == {kept}
        with pytest.raises(JsonRpcException) as unknown:
            await agent.request("agent/session/load", {"sessionId": gone})
        assert unknown.value.code == ERROR_CODES["UnknownSession"]
        with pytest.raises(JsonRpcException) as again:
            await agent.request("agent/session/delete", {"sessionId": gone})
        assert again.value.code == ERROR_CODES["UnknownSession"]
    async with start_agent_client([workspace], settings) as agent:
        assert set(await listed(agent)) == {kept}


async def test_deleting_a_session_ends_its_running_turn(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        sim.simulator.set_faults("slow@1:600")  # the turn waits on its answer until ended
        turn = asyncio.ensure_future(
            agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        )
        async with asyncio.timeout(60):
            while not any(u["update"]["kind"] == "userMessage" for u in agent.updates):
                await asyncio.sleep(0.05)
        await agent.request("agent/session/delete", {"sessionId": session_id})
        result = await asyncio.wait_for(turn, 60)
        assert result["stopReason"] == "cancelled"
        assert session_id not in await listed(agent)
