"""The bound on the sessions a server holds open, over real stdio: an editor that loads many
sessions in one window keeps at most MAX_OPEN_SESSIONS ledgers open; a session closed to
make room reopens on its next request, keeps its permission mode and its answer about the
workspace's `.mcp.json`, and is never deleted for it; a busy session is never closed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

import pytest

from agent_server.agent.mcp.approval import held_reason
from agent_server.lsp.session_use import MAX_OPEN_SESSIONS
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests import forked_agent
from tests.agent.mcp_tools.test_mcp_approval import write_mcp
from tests.lsp.conftest import AgentClient, sim_settings, start_agent_client
from tests.lsp.test_permission_answers import WRITER
from tests.lsp.test_session_list import earlier_sessions, listed
from tests.lsp.test_turns import OVERVIEW

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads the server's open files in /proc"
)


def open_ledgers(agent: AgentClient) -> set[str]:
    """The sessions whose ledger the server process has open (by its /proc fd table)."""
    fd_dir = Path(f"/proc/{forked_agent.agent_pid(agent.client._server.pid)}/fd")
    ids: set[str] = set()
    for fd in os.listdir(fd_dir):
        with contextlib.suppress(OSError):  # closed while listed
            target = os.readlink(fd_dir / fd)
            if target.endswith(".jsonl"):
                ids.add(Path(target).name.removesuffix(".jsonl"))
    return ids


async def load(agent: AgentClient, session_id: str) -> dict[str, object]:
    result = await agent.request("agent/session/load", {"sessionId": session_id})
    assert isinstance(result, dict)
    return result


async def test_loading_many_sessions_keeps_the_least_recently_used_closed(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    ids = earlier_sessions(tmp_path, workspace, MAX_OPEN_SESSIONS + 4)
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        for session_id in ids:
            await load(agent, session_id)
            assert len(open_ledgers(agent)) <= MAX_OPEN_SESSIONS
        assert open_ledgers(agent) == set(ids[-MAX_OPEN_SESSIONS:])

        # A closed session loads again and takes a turn; the oldest open one makes room.
        first = await load(agent, ids[0])
        assert first["title"] == "earlier 0"
        result = await agent.request("agent/turn", {"sessionId": ids[0], "prompt": OVERVIEW})
        assert result["stopReason"] == "end_turn"
        assert ids[0] in open_ledgers(agent) and ids[4] not in open_ledgers(agent)
        assert OVERVIEW in str((await load(agent, ids[0]))["transcript"])

        # Any request naming a session is a use: the session asked about stays open.
        await agent.request("agent/usage", {"sessionId": ids[5]})
        await load(agent, ids[1])
        assert ids[5] in open_ledgers(agent) and ids[6] not in open_ledgers(agent)
        assert len(open_ledgers(agent)) == MAX_OPEN_SESSIONS
        assert set(await listed(agent)) == set(ids)  # closing deleted nothing


async def test_a_session_with_a_turn_waiting_for_the_user_is_never_closed(
    workspace: Path, tmp_path: Path
) -> None:
    async with SimServer(Simulator(scenario=WRITER)) as sim:
        settings = sim_settings(sim, tmp_path, permissions={"mode": "allowReads"})
        ids = earlier_sessions(tmp_path, workspace, MAX_OPEN_SESSIONS + 2)
        async with start_agent_client([workspace], settings) as agent:
            agent.permission_hold = asyncio.Event()
            busy = await agent.new_session()
            turn = asyncio.create_task(
                agent.request("agent/turn", {"sessionId": busy, "prompt": "write the plan"})
            )
            while not agent.permission_requests:  # the turn asks before it writes
                await asyncio.sleep(0.05)
            for session_id in ids:  # the busy session is the least recently used now
                await load(agent, session_id)
            assert busy in open_ledgers(agent)
            assert len(open_ledgers(agent)) == MAX_OPEN_SESSIONS
            agent.permission_hold.set()
            result = await asyncio.wait_for(turn, 60)
            assert result["stopReason"] == "end_turn"
            assert (workspace / "plan.md").read_text() == "one\ntwo\nthree\n"


async def test_a_new_session_closed_before_its_first_prompt_is_kept_for_it(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """A session the editor made and has not prompted yet is closed like any other when
    room is needed, and not deleted (an unprompted session is deleted when the server
    closes it for good): the editor holds its id and prompts it later."""
    ids = earlier_sessions(tmp_path, workspace, MAX_OPEN_SESSIONS)
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        fresh = await agent.new_session(title="fresh")
        for session_id in ids:
            await load(agent, session_id)
        assert fresh not in open_ledgers(agent)
        assert fresh in await listed(agent)
        result = await agent.request("agent/turn", {"sessionId": fresh, "prompt": OVERVIEW})
        assert result["stopReason"] == "end_turn"
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        assert fresh in await listed(agent)  # prompted: kept


async def test_a_new_session_closed_and_never_prompted_is_gone_when_the_server_exits(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """As when it stays open: the session list holds only conversations."""
    ids = earlier_sessions(tmp_path, workspace, MAX_OPEN_SESSIONS)
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        fresh = await agent.new_session(title="fresh")
        for session_id in ids:
            await load(agent, session_id)
        assert fresh not in open_ledgers(agent)
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        assert set(await listed(agent)) == set(ids)


async def test_a_closed_session_reopens_in_the_mode_it_was_switched_to(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    ids = earlier_sessions(tmp_path, workspace, MAX_OPEN_SESSIONS + 1)
    settings = sim_settings(sim, tmp_path, permissions={"mode": "allowReads"})
    async with start_agent_client([workspace], settings) as agent:
        await load(agent, ids[0])
        await agent.request("agent/mode/set", {"sessionId": ids[0], "mode": "allowAll"})
        for session_id in ids[1:]:
            await load(agent, session_id)
        assert ids[0] not in open_ledgers(agent)
        assert (await load(agent, ids[0]))["mode"] == "allowAll"


@pytest.mark.parametrize(
    ("answer", "shown"), [("allow_once", None), ("reject_once", held_reason(declined=True))]
)
async def test_a_closed_session_keeps_its_answer_about_the_workspace_mcp_file(
    answer: str, shown: str | None, workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """"Start them (this session)" and "Do not start them" hold for the session the editor
    shows, however often the server closed and reopened it."""
    write_mcp(workspace)
    ids = earlier_sessions(tmp_path, workspace, MAX_OPEN_SESSIONS + 1)
    settings = sim_settings(sim, tmp_path, mcp={"userFile": ""})
    async with start_agent_client([workspace], settings) as agent:
        agent.answer_permission = lambda _params: answer
        await load(agent, ids[0])
        await agent.request("agent/turn", {"sessionId": ids[0], "prompt": OVERVIEW})
        assert [p["toolCall"]["title"] for p in agent.permission_requests] == [
            "Start the MCP servers of .mcp.json: fx"
        ]
        for session_id in ids[1:]:
            await load(agent, session_id)
        assert ids[0] not in open_ledgers(agent)
        result = await agent.request("agent/turn", {"sessionId": ids[0], "prompt": OVERVIEW})
        assert result["stopReason"] == "end_turn"
        assert len(agent.permission_requests) == 1  # not asked again
        listed = await agent.request("agent/mcp/servers", {"sessionId": ids[0]})
        (server,) = listed["servers"]
        assert server.get("error") == shown  # allowed: started (or starting)
