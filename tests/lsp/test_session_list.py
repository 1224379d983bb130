"""agent/session/list over real stdio: read off the event loop, the server answers other
requests meanwhile."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from agent_server.session.store import SessionStore
from agent_server.sim.server import SimServer
from tests.lsp.conftest import AgentClient, sim_settings, start_agent_client


def earlier_sessions(tmp_path: Path, workspace: Path, count: int) -> list[str]:
    """`count` sessions of the workspace, made before the server starts (by the store)."""
    store = SessionStore(tmp_path / "sessions", workspace)
    ids = []
    for number in range(count):
        with store.create(title=f"earlier {number}") as ledger:
            ids.append(ledger.session_id)
    return ids


async def listed(agent: AgentClient) -> list[str]:
    result = await agent.request("agent/session/list", {"workspaceUri": agent.workspace_uri()})
    return [s["sessionId"] for s in result["sessions"]]


@pytest.mark.skipif(sys.platform == "win32", reason="a named pipe stands in for a slow file")
async def test_the_session_list_does_not_hold_up_other_requests(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """A list reading thousands of files takes seconds; meanwhile the server answers. Here
    one session's list entry is a pipe: reading it waits until the test writes to it."""
    (session_id,) = earlier_sessions(tmp_path, workspace, 1)
    (stuck,) = earlier_sessions(tmp_path, workspace, 1)
    meta = next((tmp_path / "sessions").glob(f"*/{stuck}.meta.json"))
    meta.unlink()
    os.mkfifo(meta)
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        listing = asyncio.create_task(listed(agent))
        try:
            loaded = await asyncio.wait_for(
                agent.request("agent/session/load", {"sessionId": session_id}), 30
            )
            assert loaded["sessionId"] == session_id
            assert not listing.done()
        finally:
            with open(meta, "w") as pipe:  # noqa: ASYNC230 - opens at once: a reader waits
                pipe.write("not a list entry")
        assert set(await asyncio.wait_for(listing, 30)) == {session_id, stuck}
