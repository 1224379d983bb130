"""Pins and the plan over real stdio against the simulator: agent/pins/list|add|remove, the
note the model gets, the `plan` and `pins` updates a turn streams when the model uses its
plan and remember tools, and both in the load result after a restart of the session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.lsp.conftest import sim_settings, start_agent_client

INVALID_PARAMS = -32602
PLANNER = parse_scenario(
    {
        "name": "planner",
        "turns": [
            {
                "user": "plan the fix",
                "steps": [
                    {"tools": [{"name": "plan", "arguments": {"entries": [
                        {"content": "reproduce", "status": "completed"},
                        {"content": "fix _afterpoint", "status": "in_progress", "priority": "high"},
                    ]}}]},
                    {"tools": [{"name": "remember", "arguments": {
                        "text": "the failing test is test_align_column_decimal", "kind": "fact"}}]},
                    {"text": "Planned."},
                ],
            },
            {"user": "go on", "steps": [{"text": "Going on."}]},
        ],
    }
)


async def test_pins_are_added_listed_removed_and_told_to_the_model(
    workspace: Path, tmp_path: Path
) -> None:
    async with (
        SimServer(Simulator(scenario=PLANNER)) as sim,
        start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent,
    ):
        session_id = await agent.new_session()
        added = await agent.request(
            "agent/pins/add", {"sessionId": session_id, "text": "never edit CHANGELOG"}
        )
        pin = added["pin"]
        assert (pin["kind"], pin["text"], pin["by"]) == ("rule", "never edit CHANGELOG", "user")
        fact = await agent.request(
            "agent/pins/add", {"sessionId": session_id, "text": "port 8123", "kind": "fact"}
        )
        assert [p["text"] for p in fact["pins"]] == ["never edit CHANGELOG", "port 8123"]
        listed = await agent.request("agent/pins/list", {"sessionId": session_id})
        assert listed["pins"] == fact["pins"]
        removed = await agent.request(
            "agent/pins/remove", {"sessionId": session_id, "pinId": fact["pin"]["id"]}
        )
        assert removed["pin"]["text"] == "port 8123" and removed["pins"] == [pin]

        await agent.request("agent/turn", {"sessionId": session_id, "prompt": "go on"})
        body = json.dumps(sim.simulator.records[-1].request)
        assert "The user pinned a rule for the rest of this session: never edit CHANGELOG" in body
        assert "The user removed the pinned fact, which no longer holds: port 8123" in body

        for params, problem in (
            ({"sessionId": session_id, "text": ""}, "must not be empty"),
            ({"sessionId": session_id, "text": "x" * 2001}, "at most 2,000 characters"),
            ({"sessionId": session_id, "text": "never edit CHANGELOG"}, "pinned already"),
            ({"sessionId": session_id, "text": "a", "kind": "wish"}, "must be one of"),
        ):
            with pytest.raises(JsonRpcException) as refused:
                await agent.request("agent/pins/add", params)
            assert refused.value.code == INVALID_PARAMS and problem in refused.value.message
        with pytest.raises(JsonRpcException) as unknown:
            await agent.request("agent/pins/remove", {"sessionId": session_id, "pinId": "zzzz"})
        assert unknown.value.code == INVALID_PARAMS and "not a pin in force" in unknown.value.message


async def test_the_models_plan_and_pins_stream_and_come_back_on_load(
    workspace: Path, tmp_path: Path
) -> None:
    async with SimServer(Simulator(scenario=PLANNER)) as sim:
        settings = sim_settings(sim, tmp_path)
        async with start_agent_client([workspace], settings) as agent:
            session_id = await agent.new_session()
            await agent.request("agent/turn", {"sessionId": session_id, "prompt": "plan the fix"})
            kinds = {u["update"]["kind"]: u["update"] for u in agent.updates}
            assert kinds["plan"]["entries"] == [
                {"content": "reproduce", "status": "completed", "priority": "medium"},
                {"content": "fix _afterpoint", "status": "in_progress", "priority": "high"},
            ]
            [pin] = kinds["pins"]["pins"]
            assert pin["by"] == "model" and pin["kind"] == "fact"
        async with start_agent_client([workspace], settings) as agent:  # a new server
            loaded = await agent.request("agent/session/load", {"sessionId": session_id})
            assert loaded["plan"] == kinds["plan"]["entries"]
            assert loaded["pins"] == [pin]
            assert [i for i in loaded["transcript"] if i["kind"] == "plan"] == [kinds["plan"]]
