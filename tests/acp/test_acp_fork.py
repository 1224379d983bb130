"""`session/fork` over ACP (the Python SDK's client, real stdio): offered in the capabilities,
the fork answers with its own id and mode, goes on with the source's conversation (the model
is sent it), and the source is left as it was."""

from __future__ import annotations

from pathlib import Path

from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.acp.conftest import acp_args, start_acp
from tests.lsp.test_turns import OVERVIEW


async def test_a_fork_goes_on_from_the_conversation(workspace: Path, tmp_path: Path) -> None:
    async with (
        SimServer(Simulator()) as sim,
        start_acp(acp_args(sim, tmp_path), tmp_path) as acp,
    ):
        assert acp.init.agent_capabilities.session_capabilities.fork is not None
        source = (await acp.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        assert (await acp.prompt(source, OVERVIEW)).stop_reason == "end_turn"
        forked = await acp.conn.fork_session(session_id=source, cwd=str(workspace))
        assert forked.session_id != source and forked.modes is not None
        assert (await acp.prompt(forked.session_id, "And the tests?")).stop_reason == "end_turn"
        sent = str(sim.simulator.records[-1].request["messages"])
        assert OVERVIEW in sent and "And the tests?" in sent
    ledgers = {p.stem: p.read_text() for p in (tmp_path / "sessions").rglob("*.jsonl")}
    assert set(ledgers) == {source, forked.session_id}
    assert "And the tests?" not in ledgers[source]
