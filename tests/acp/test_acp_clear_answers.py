"""What an ACP editor gets back for a history picker and for bad input (issue 48), over real
stdio: `session/list` without a `cwd` (acpx sends none) lists the sessions on disk; a
malformed MCP server is refused naming it (the SDK's models dropped it without a word, and
the session started without it); Invalid params says which field, and its data holds no
echo of the input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator

from .conftest import acp_args, start_acp


async def test_a_list_without_a_directory_lists_every_session_on_disk(
    sim: SimServer, tmp_path: Path
) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        ids = {await acp.new_session(first): first, await acp.new_session(second): second}
    # A new process, which has opened no workspace yet.
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        listed = await acp.conn.list_sessions()
        assert {info.session_id: Path(info.cwd) for info in listed.sessions} == {
            session_id: cwd.resolve() for session_id, cwd in ids.items()
        }
        only = await acp.conn.list_sessions(cwd=str(first))
        assert [info.session_id for info in only.sessions] == [
            session_id for session_id, cwd in ids.items() if cwd == first
        ]
        # And one found that way can be deleted without naming its directory.
        doomed = next(iter(ids))
        await acp.request("session/delete", {"sessionId": doomed})
        remaining = await acp.conn.list_sessions()
        assert doomed not in {info.session_id for info in remaining.sessions}


@pytest.mark.parametrize(
    ("server", "named"),
    [
        ({"name": "x"}, "mcpServers[0] (x).command"),
        ({"name": "web", "type": "http", "headers": []}, "mcpServers[0] (web).url"),
        ({"command": "npx", "args": [], "env": []}, "mcpServers[0].name"),
        ({"name": "y", "type": "carrier-pigeon"}, "mcpServers[0].type"),
        ("not an object", "mcpServers[0]"),
    ],
)
async def test_a_malformed_mcp_server_is_refused_naming_it(
    sim: SimServer, tmp_path: Path, workspace: Path, server: Any, named: str
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        with pytest.raises(RequestError) as refused:
            await acp.request("session/new", {"cwd": str(workspace), "mcpServers": [server]})
        assert refused.value.code == -32602
        assert named in str(refused.value), str(refused.value)
        assert (await acp.conn.list_sessions(cwd=str(workspace))).sessions == []


async def test_invalid_params_name_the_field_without_echoing_the_input(
    sim: SimServer, tmp_path: Path, workspace: Path
) -> None:
    pasted = "a long paste " * 100
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        session_id = await acp.new_session(workspace)
        for params, field in [
            ({"mcpServers": []}, "cwd"),
            ({"sessionId": session_id, "prompt": pasted}, "prompt"),
        ]:
            method = "session/new" if field == "cwd" else "session/prompt"
            with pytest.raises(RequestError) as refused:
                await acp.request(method, params)
            error = refused.value
            assert error.code == -32602 and f"{field}:" in str(error)
            assert [f["field"] for f in error.data["fields"]] == [field]
            assert "pydantic" not in repr(error.data) and "a long paste" not in repr(error.data)


async def test_a_loaded_session_keeps_the_mode_it_was_switched_to(
    sim: SimServer, tmp_path: Path, workspace: Path
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        session_id = await acp.new_session(workspace)
        await acp.prompt(session_id, "hello")
        await acp.conn.set_session_mode(mode_id="ask", session_id=session_id)
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        loaded = await acp.conn.load_session(
            cwd=str(workspace), session_id=session_id, mcp_servers=[]
        )
        assert loaded.modes is not None and loaded.modes.current_mode_id == "ask"


async def test_tool_results_carry_no_bookkeeping_live_or_replayed(
    tmp_path: Path, workspace: Path
) -> None:
    """rawOutput is the tool's result (an exit code, counts), not the agent's bookkeeping:
    no checkpoint hashes of a write, no sandbox description of a command."""
    scenario = {"name": "raw", "turns": [{"user": "Go.", "steps": [
        {"tools": [{"name": "write", "arguments": {"path": "new.txt", "content": "hi\n"}}]},
        {"tools": [{"name": "bash", "arguments": {"command": "echo done; exit 3"}}]},
        {"text": "Done."},
    ]}]}
    async with SimServer(Simulator(scenario=parse_scenario(scenario))) as sim:
        args = acp_args(sim, tmp_path, "--mode", "allowAll")
        async with start_acp(args, tmp_path) as acp:
            session_id = await acp.new_session(workspace)
            await acp.prompt(session_id, "Go.")
            live = list(acp.client.tool_results().values())
        async with start_acp(args, tmp_path) as acp:
            await acp.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
            replayed = list(acp.client.tool_results().values())
    for results in (live, replayed):
        raws = [update.raw_output or {} for update in results]
        assert len(raws) == 2
        assert not any({"checkpoint", "sandbox", "change"} & set(raw) for raw in raws), raws
        assert raws[1]["exitCode"] == 3
