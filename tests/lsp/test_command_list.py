"""Commands the user writes, over real stdio: `agent/command/list` lists the user's and the
workspace's, and a prompt that starts with one runs its prompt (what is recorded and sent)."""

from __future__ import annotations

from pathlib import Path

from agent_server.agent.prompt_commands import WORKSPACE_FOLDER, user_folder
from agent_server.sim.server import SimServer
from tests.lsp.conftest import sim_settings, start_agent_client


async def test_written_commands_are_listed_and_run_as_their_prompt(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    (workspace / WORKSPACE_FOLDER).mkdir(parents=True)
    (workspace / WORKSPACE_FOLDER / "hello.md").write_text(
        "---\ndescription: Greet someone\nargument-hint: <name>\n---\nSay hello to $1.\n")
    user_folder().mkdir(parents=True)
    (user_folder() / "tidy.md").write_text("Tidy the imports of the changed files.\n")
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        listed = await agent.request("agent/command/list", {"workspaceUri": agent.workspace_uri()})
        assert listed["commands"] == [
            {"name": "hello", "description": "Greet someone", "hint": "<name>", "origin": "workspace"},
            {"name": "tidy", "description": "Tidy the imports of the changed files.", "hint": "",
             "origin": "user"},
        ]
        session_id = await agent.new_session()
        await agent.request("agent/turn", {"sessionId": session_id, "prompt": "/hello Ada"})
        loaded = await agent.request("agent/session/load", {"sessionId": session_id})
        [prompt] = [i for i in loaded["transcript"] if i["kind"] == "userMessage"]
        assert prompt["content"] == [{"type": "text", "text": "Say hello to Ada."}]
        assert "Say hello to Ada." in str(sim.simulator.records[-1].request["messages"])
