"""Pins and the plan over ACP (the ACP Python SDK's client, real stdio, the simulator over
HTTP): /remember, /forget and /pins as the agent's commands, a refusal as a notice, the pin
told to the model, and the model's plan as ACP's plan update (again on /pins)."""

from __future__ import annotations

import json
from pathlib import Path

from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.acp.conftest import acp_args, start_acp
from tests.lsp.test_pins_and_plan import PLANNER


async def test_remember_forget_and_pins_are_commands_and_the_plan_is_a_plan_update(
    workspace: Path, tmp_path: Path
) -> None:
    async with (
        SimServer(Simulator(scenario=PLANNER)) as sim,
        start_acp(acp_args(sim, tmp_path), tmp_path) as acp,
    ):
        client = acp.client
        session_id = (await acp.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        for command in ("/remember never edit CHANGELOG", "/remember fact: port `8123`"):
            assert (await acp.prompt(session_id, command)).stop_reason == "end_turn"
        commands = client.of("available_commands_update")[0].available_commands
        assert {"remember", "forget", "pins"} <= {c.name for c in commands}
        said = client.text(session_id)
        assert "Pinned rule " in said and "Pinned fact " in said
        fact_id = said.split("Pinned fact ")[1].split(" ")[0]
        await acp.prompt(session_id, "/pins")
        listing = client.text(session_id).split("Pinned, carried")[1]
        assert "rule, by the user: never edit CHANGELOG" in listing
        assert "fact, by the user: port `8123`" in listing and listing.count("````") == 0
        await acp.prompt(session_id, f"/forget {fact_id}")
        assert f"Removed fact {fact_id}" in client.text(session_id)
        await acp.prompt(session_id, "/remember never edit CHANGELOG")
        assert "> That is pinned already." in client.text(session_id)
        await acp.prompt(session_id, "/forget zzzz")
        assert "'zzzz' is not a pin in force" in client.text(session_id)
        assert not sim.simulator.records  # commands never call the model

        await acp.prompt(session_id, "plan the fix")
        plans = client.of("plan", session_id)
        assert [(e.content, e.status, e.priority) for e in plans[-1].entries] == [
            ("reproduce", "completed", "medium"),
            ("fix _afterpoint", "in_progress", "high"),
        ]
        body = json.dumps(sim.simulator.records[0].request)
        assert "The user pinned a rule for the rest of this session: never edit CHANGELOG" in body
        await acp.prompt(session_id, "/pins")
        assert len(client.of("plan", session_id)) == len(plans) + 1
        assert "fact, by the model: the failing test is test_align_column_decimal" in (
            client.text(session_id).split("Pinned, carried")[-1]
        )
