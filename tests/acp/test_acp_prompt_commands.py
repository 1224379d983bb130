"""Commands the user writes, over ACP (the Python SDK's client, real stdio): offered in
`available_commands_update` after the agent's own (a file named like one of them is not), and a
prompt that starts with one runs its prompt."""

from __future__ import annotations

from pathlib import Path

from agent_server.agent.prompt_commands import WORKSPACE_FOLDER
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.acp.conftest import acp_args, start_acp


async def test_written_commands_are_offered_and_run(workspace: Path, tmp_path: Path) -> None:
    folder = workspace / WORKSPACE_FOLDER
    folder.mkdir(parents=True)
    (folder / "hello.md").write_text("---\nargument-hint: <name>\n---\nSay hello to $1.\n")
    (folder / "compact.md").write_text("Not the agent's /compact.\n")
    user = tmp_path / "config" / "agent-server" / "commands"  # start_acp's XDG_CONFIG_HOME
    user.mkdir(parents=True)
    (user / "tidy.md").write_text("Tidy the imports.\n")
    async with (
        SimServer(Simulator()) as sim,
        start_acp(acp_args(sim, tmp_path), tmp_path) as acp,
    ):
        session_id = (await acp.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        assert (await acp.prompt(session_id, "/hello Ada")).stop_reason == "end_turn"
        commands = acp.client.of("available_commands_update")[0].available_commands
        names = [c.name for c in commands]
        assert names[-2:] == ["hello", "tidy"] and names.count("compact") == 1
        hello = commands[names.index("hello")]
        assert hello.input is not None and hello.input.root.hint == "<name>"
        assert "Say hello to Ada." in str(sim.simulator.records[-1].request["messages"])
