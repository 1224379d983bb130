"""`agent/session/fork` over real stdio: the fork opens with the source's conversation, goes
on by itself, and the source stays as it was."""

from __future__ import annotations

from pathlib import Path

from agent_server.sim.server import SimServer
from tests.lsp.conftest import sim_settings, start_agent_client
from tests.lsp.test_turns import OVERVIEW


async def test_a_fork_opens_with_the_conversation_and_goes_on_alone(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        source = await agent.new_session(title="Explore")
        await agent.request("agent/turn", {"sessionId": source, "prompt": OVERVIEW})
        before = await agent.request("agent/session/load", {"sessionId": source})
        fork = await agent.request("agent/session/fork", {"sessionId": source})
        assert fork["sessionId"] != source
        assert fork["title"] == "Explore (fork)"
        assert fork["transcript"] == before["transcript"]
        assert fork["model"] == before["model"] and fork["mode"] == before["mode"]
        await agent.request("agent/turn", {"sessionId": fork["sessionId"], "prompt": "And the tests?"})
        after = await agent.request("agent/session/load", {"sessionId": source})
        assert after["transcript"] == before["transcript"]
        forked = await agent.request("agent/session/load", {"sessionId": fork["sessionId"]})
        prompts = [i["content"][0]["text"] for i in forked["transcript"] if i["kind"] == "userMessage"]
        assert prompts == [OVERVIEW, "And the tests?"]
        listed = await agent.request("agent/session/list", {"workspaceUri": agent.workspace_uri()})
        assert {s["sessionId"] for s in listed["sessions"]} == {source, fork["sessionId"]}
