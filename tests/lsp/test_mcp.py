"""MCP servers from npm behind the real language server over stdio.

`@modelcontextprotocol/server-filesystem` and `@modelcontextprotocol/server-everything`, at the
versions pinned in tests/mcp_servers/package-lock.json (`make mcp-test-servers` installs them;
`make test` does it first). The simulator's scripted model calls their tools.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.lsp.conftest import AgentClient, sim_settings, start_agent_client

NODE_BIN = Path(__file__).parents[1] / "mcp_servers" / "node_modules" / ".bin"
EVERYTHING = NODE_BIN / "mcp-server-everything"
FILESYSTEM = NODE_BIN / "mcp-server-filesystem"


@pytest.fixture(scope="module", autouse=True)
def npm_servers() -> None:
    if not (EVERYTHING.exists() and FILESYSTEM.exists()):
        pytest.fail("the npm MCP servers are not installed: run `make mcp-test-servers`")
    if shutil.which("node") is None:
        pytest.fail("node is not on PATH")


def scenario(*turns: tuple[str, list[dict[str, Any]]]) -> Simulator:
    data = {
        "turns": [
            {"user": user, "steps": [{"tools": calls}, {"text": f"Done: {user}"}]}
            for user, calls in turns
        ]
    }
    return Simulator(scenario=parse_scenario(data))


def mcp_settings(sim: SimServer, tmp_path: Path, servers: dict[str, Any]) -> dict[str, Any]:
    settings = sim_settings(sim, tmp_path, permissions={"mode": "allowReads"})
    settings["mcp"] = {"servers": servers, "userFile": ""}
    return settings


async def wait_for_status(agent: AgentClient, session_id: str, condition) -> dict[str, Any]:
    for _ in range(1200):
        notes = [n for n in agent.mcp if n["sessionId"] == session_id]
        if notes and condition(notes[-1]):
            return notes[-1]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no agent/mcp/status matched; last: {agent.mcp[-1:]}")


def tool_outputs(agent: AgentClient, turn_id: str) -> str:
    """The text of every finished tool call of the turn, as the editor shows it."""
    return "\n".join(
        item["content"]["text"]
        for u in agent.updates_of(turn_id)
        if u["update"]["kind"] == "toolCallUpdate"
        for item in u["update"].get("content", [])
        if item.get("type") == "content"
    )


def all_ready(note: dict[str, Any]) -> bool:
    return bool(note["servers"]) and all(s["state"] == "ready" for s in note["servers"])


async def test_npm_servers_are_listed_called_and_asked_for(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "notes.txt").write_text("remember the milk\n", encoding="utf-8")
    simulator = scenario(
        (
            "Echo and read the notes.",
            [
                {"name": "mcp__everything__echo", "arguments": {"message": "hi there"}},
                {
                    "name": "mcp__filesystem__read_text_file",
                    "arguments": {"path": str(workspace / "notes.txt")},
                },
            ],
        ),
        ("Show me a tiny image.", [{"name": "mcp__everything__get-tiny-image", "arguments": {}}]),
    )
    servers = {
        "filesystem": {"command": "node", "args": [str(FILESYSTEM), str(workspace)]},
        "everything": {"command": "node", "args": [str(EVERYTHING)]},
    }
    async with SimServer(simulator) as sim, start_agent_client(
        [workspace], mcp_settings(sim, tmp_path, servers)
    ) as agent:
        created = await agent.request(
            "agent/session/new", {"workspaceUri": agent.workspace_uri()}
        )
        session_id = created["sessionId"]
        assert [s["name"] for s in created["mcp"]["servers"]] == ["everything", "filesystem"]
        ready = await wait_for_status(agent, session_id, all_ready)
        everything = ready["servers"][0]
        assert everything["transport"] == "stdio" and "echo" in everything["tools"]
        result = await agent.request(
            "agent/turn", {"sessionId": session_id, "prompt": "Echo and read the notes."}
        )
        assert result["stopReason"] == "end_turn"
        tools = [t["name"] for t in simulator.records[0].request["tools"]]
        mcp_tools = [name for name in tools if name.startswith("mcp__")]
        assert mcp_tools == sorted(mcp_tools) and mcp_tools[0].startswith("mcp__everything__")
        assert "mcp__filesystem__read_text_file" in mcp_tools
        assert tools.index("mcp__everything__echo") > tools.index("bash")
        # allowReads: MCP tools still ask, whatever they say about themselves
        asked = [p["toolCall"]["title"] for p in agent.permission_requests]
        assert asked == ["everything: echo hi there", f"filesystem: read_text_file {workspace}/notes.txt"]
        outputs = tool_outputs(agent, result["turnId"])
        assert "Echo: hi there" in outputs and "remember the milk" in outputs

        await agent.request("agent/turn", {"sessionId": session_id, "prompt": "Show me a tiny image."})
        last = simulator.records[-1].request["messages"][-1]["content"]
        result_blocks = next(b for b in last if b["type"] == "tool_result")["content"]
        assert any(b["type"] == "image" for b in result_blocks)
        # The editor gets the image too, live and when the session is loaded again.
        def images(items: list[dict[str, Any]]) -> list[str]:
            return [c["content"]["mimeType"] for i in items if i["kind"] == "toolCallUpdate"
                    for c in i.get("content", ()) if c["type"] == "content"
                    and c["content"]["type"] == "image" and c["content"]["data"]]

        assert images([u["update"] for u in agent.updates]) == ["image/png"]
        loaded = await agent.request("agent/session/load", {"sessionId": session_id})
        assert images(loaded["transcript"]) == ["image/png"]

        listed = await agent.request("agent/mcp/servers", {"sessionId": session_id})
        assert listed["toolCount"] == len(tools) and listed["toolsChange"] is None
        accepted = await agent.request("agent/mcp/acceptTools", {"sessionId": session_id})
        assert accepted == {"accepted": False, "deferred": False, "tokens": 0}
        with pytest.raises(JsonRpcException) as unknown:
            await agent.request("agent/mcp/restart", {"sessionId": session_id, "name": "nope"})
        assert "no MCP server named 'nope'" in str(unknown.value)


async def test_a_failed_server_shows_its_stderr_and_the_session_goes_on(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    servers = {"filesystem": {"command": "node", "args": [str(FILESYSTEM), "/no/such/dir"]}}
    async with start_agent_client([workspace], mcp_settings(sim, tmp_path, servers)) as agent:
        session_id = await agent.new_session()
        failed = await wait_for_status(
            agent, session_id, lambda n: n["servers"][0]["state"] == "failed"
        )
        server = failed["servers"][0]
        assert server["error"] and "/no/such/dir" in server["stderrTail"]
        result = await agent.request(
            "agent/turn", {"sessionId": session_id, "prompt": "Give me an overview."}
        )
        assert result["stopReason"] == "end_turn"
        restarted = await agent.request(
            "agent/mcp/restart", {"sessionId": session_id, "name": "filesystem"}
        )
        assert restarted == {}


@pytest.fixture
def http_everything() -> Iterator[str]:
    """server-everything over streamable HTTP on a free loopback port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        ["node", str(EVERYTHING), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        for line in process.stderr:
            if "listening" in line.lower():
                break
        else:
            pytest.fail("server-everything did not start over HTTP")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


async def test_a_streamable_http_server_with_a_secret_header(
    workspace: Path, tmp_path: Path, http_everything: str
) -> None:
    simulator = scenario(("Echo over HTTP.", [
        {"name": "mcp__web__echo", "arguments": {"message": "over http"}}
    ]))
    servers = {
        "web": {
            "type": "http",
            "url": http_everything,
            "headers": {"Authorization": "Bearer ${WEB_MCP_TOKEN}"},
            "trusted": True,
        }
    }
    env = {**os.environ, "WEB_MCP_TOKEN": "web-token-4242"}
    async with SimServer(simulator) as sim, start_agent_client(
        [workspace], mcp_settings(sim, tmp_path, servers), env=env
    ) as agent:
        session_id = await agent.new_session()
        ready = await wait_for_status(agent, session_id, all_ready)
        assert ready["servers"][0]["transport"] == "http"
        result = await agent.request(
            "agent/turn", {"sessionId": session_id, "prompt": "Echo over HTTP."}
        )
        assert result["stopReason"] == "end_turn"
        assert agent.permission_requests == []  # trusted
        assert "Echo: over http" in tool_outputs(agent, result["turnId"])
        assert "web-token-4242" not in repr(agent.mcp) + repr(agent.updates)
