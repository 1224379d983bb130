"""`agent/problems` over real stdio: what the editor reports an edit of the agent's broke
reaches the model as a note on its next request (appended: the cached prefix holds), bounded;
bad params get a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from agent_server.agent.problems import MAX_PROBLEMS
from agent_server.sim.server import SimServer
from tests.agent.test_repo_map_in_turns import plain
from tests.lsp.conftest import sim_settings, start_agent_client
from tests.lsp.test_turns import OVERVIEW


async def test_problems_reach_the_model_on_its_next_request(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        await agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        before = sim.simulator.records[-1].request["messages"]
        problems = [{"line": 9, "severity": "error", "message": '"totl" is not\n defined',
                     "source": "Pylance"}]
        problems += [{"line": n, "severity": "warning", "message": f"unused {n}\x1b[0m"}
                     for n in range(1, MAX_PROBLEMS + 3)]
        assert await agent.request("agent/problems", {
            "sessionId": session_id, "path": "src/app.py", "problems": problems}) == {}
        await agent.request("agent/turn", {"sessionId": session_id, "prompt": "Go on."})
        sent = sim.simulator.records[-1].request["messages"]
        assert plain(sent[: len(before)]) == plain(before)  # appended after what was cached
        note = str(sent[len(before):])
        assert "src/app.py" in note and 'line 9: error: "totl" is not defined (Pylance)' in note
        assert "and 3 more" in note and "unused 1␛[0m" in note and "\\x1b" not in note
        with pytest.raises(JsonRpcException) as bad:
            await agent.request("agent/problems", {
                "sessionId": session_id, "path": "a.py",
                "problems": [{"line": 0, "severity": "error", "message": "x"}]})
        assert "problems[0].line" in str(bad.value)
