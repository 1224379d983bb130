"""The methods behind the model picker, the mode switch, @-mention completion and
checkpoints, over real stdio against the simulator."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from agent_server.lsp.wire import CONFIG_ERROR
from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.lsp.conftest import sim_settings, start_agent_client
from tests.lsp.test_turns import OVERVIEW

WRITER = parse_scenario(
    {
        "name": "writer",
        "turns": [
            {
                "user": "write the plan",
                "steps": [
                    {"tools": [{"name": "write", "arguments": {"path": "plan.md", "content": "one\n"}}]},
                    {"text": "Written."},
                ],
            },
            {
                "user": "extend the plan",
                "steps": [
                    {
                        "tools": [
                            {
                                "name": "edit",
                                "arguments": {"path": "plan.md", "oldText": "one\n", "newText": "one\ntwo\n"},
                            }
                        ]
                    },
                    {"tools": [{"name": "bash", "arguments": {"command": "touch built.txt"}}]},
                    {"text": "Extended."},
                ],
            },
        ],
    }
)


async def test_models_listed_switched_and_shown_on_load(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        listed = await agent.request("agent/model/list", {"workspaceUri": agent.workspace_uri()})
        assert listed["provider"] == "sim" and listed["current"] == "sim-small"
        assert [m["id"] for m in listed["models"]] == ["sim-small", "sim-large"]
        large = listed["models"][1]
        assert large["contextWindow"] == 200_000 and large["pricing"]["input"] > 0
        session_id = await agent.new_session()
        await agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})

        switched = await agent.request("agent/model/set", {"sessionId": session_id, "model": "sim-large"})
        assert switched["model"]["id"] == "sim-large" and switched["entryId"]
        assert switched["cost"]["tokens"] > 0 and "cache" in switched["note"]
        assert switched["usage"]["size"] == 200_000
        assert agent.usage[-1]["size"] == 200_000  # the meter hears of it too
        loaded = await agent.request("agent/session/load", {"sessionId": session_id})
        assert loaded["model"]["id"] == "sim-large" and loaded["mode"] == "allowAll"
        marker = [i for i in loaded["transcript"] if i["kind"] == "modelChange"][-1]
        assert marker["entryId"] == switched["entryId"] and marker["model"] == "sim-large"
        by_session = await agent.request("agent/model/list", {"sessionId": session_id})
        assert by_session["current"] == "sim-large"

        with pytest.raises(JsonRpcException) as refused:
            await agent.request("agent/model/set", {"sessionId": session_id, "model": "gpt-9"})
        assert refused.value.code == CONFIG_ERROR and "unknown model 'gpt-9'" in refused.value.message


async def test_mode_switch_answers_with_the_sessions_state(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        created = await agent.request("agent/session/load", {"sessionId": session_id})
        assert created["mode"] == "allowAll"
        state = await agent.request("agent/mode/set", {"sessionId": session_id, "mode": "ask"})
        assert state["mode"] == "ask"
        await agent.request("agent/turn", {"sessionId": session_id, "prompt": "What is here?"})
        # In "ask", even the fallback's ls and read asked first.
        assert agent.permission_requests
        assert (await agent.request("agent/session/load", {"sessionId": session_id}))["mode"] == "ask"


async def test_mentions_complete_from_the_workspace(workspace: Path, sim: SimServer, tmp_path: Path) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        found = await agent.request(
            "agent/mention/complete", {"workspaceUri": agent.workspace_uri(), "query": "READ"}
        )
        assert found["items"][0] == {"path": "README.md", "kind": "file"}
        session_id = await agent.new_session()
        await agent.request("agent/turn", {"sessionId": session_id, "prompt": "Explain @README.md"})
        loaded = await agent.request("agent/session/load", {"sessionId": session_id})
        [prompt] = [i for i in loaded["transcript"] if i["kind"] == "userMessage"]
        assert prompt["content"] == [{"type": "text", "text": "Explain @README.md"}]
        assert prompt["attachments"][0]["path"] == "README.md"
        live = [u["update"] for u in agent.updates if u["update"]["kind"] == "userMessage"]
        assert live == [prompt]


async def test_rewind_preview_then_restore_files_and_conversation(workspace: Path, tmp_path: Path) -> None:
    async with (
        SimServer(Simulator(scenario=WRITER)) as sim,
        start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent,
    ):
        session_id = await agent.new_session()
        for prompt in ("write the plan", "extend the plan"):
            await agent.request("agent/turn", {"sessionId": session_id, "prompt": prompt})
        assert (workspace / "plan.md").read_text() == "one\ntwo\n"
        loaded = await agent.request("agent/session/load", {"sessionId": session_id})
        first, second = [i for i in loaded["transcript"] if i["kind"] == "userMessage"]
        since_second = await agent.request(
            "agent/rewind/changes", {"sessionId": session_id, "entryId": second["entryId"]}
        )
        assert since_second == {"entryId": second["entryId"],
                                "files": [{"path": "plan.md", "existed": True, "text": "one\n"}]}
        since_first = await agent.request(
            "agent/rewind/changes", {"sessionId": session_id, "entryId": first["entryId"]}
        )
        assert since_first["files"] == [{"path": "plan.md", "existed": False}]  # made since

        preview = await agent.request(
            "agent/rewind/preview", {"sessionId": session_id, "entryId": second["entryId"]}
        )
        assert preview["prompt"] == second["content"]
        assert preview["files"] == [{"path": "plan.md", "action": "restore", "changedSince": False}]
        assert preview["notRestorable"]["commands"] == ["touch built.txt"]
        assert preview["notRestorable"]["files"] == ["built.txt"]

        rewound = await agent.request(
            "agent/rewind",
            {"sessionId": session_id, "entryId": second["entryId"], "restore": "both"},
        )
        assert (workspace / "plan.md").read_text() == "one\n"
        assert rewound["files"] == [{"path": "plan.md", "action": "restore"}]
        assert rewound["prompt"] == second["content"]  # back to the input box
        after = await agent.request("agent/session/load", {"sessionId": session_id})
        kinds = [i["kind"] for i in after["transcript"]]
        assert kinds[-2:] == ["branch", "fileRestore"]
        assert after["transcript"][-1]["files"] == [{"path": "plan.md", "action": "restore"}]
        assert "extend the plan" not in str(after["transcript"])
