"""The editor kills the ACP agent (SIGTERM, or SIGHUP) during a turn, rather than closing
its input: the agent closes its sessions as at the input's end, so that the command the turn
runs (in a process group of its own, ignoring SIGTERM) is stopped, not left running with no
one to stop it, and the turn's end is in the ledger; it exits with 128 + the signal. And the
input's end itself, during a turn: the same close, and the prompt answered."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from asyncio import Future
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from acp.task import MessageSender, TaskSupervisor

from agent_server.acp import transport as transport_module
from agent_server.acp.transport import CheckedTransport
from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.acp.conftest import AcpProcess, acp_args, start_acp
from tests.stubborn_command import (
    PROMPT,
    SCENARIO,
    group_running,
    last_ledger_message,
    wait_for_group,
)


@asynccontextmanager
async def stubborn_turn(tmp_path: Path) -> AsyncIterator[tuple[AcpProcess, Future[Any], int]]:
    """The agent, its prompt under way (not awaited) and the group of the command it runs."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"tools": {"sandbox": "off"}}))
    args = ["--mode", "allowAll", "--config", str(config)]
    async with (
        SimServer(Simulator(scenario=parse_scenario(SCENARIO))) as sim,
        start_acp(acp_args(sim, tmp_path, *args), tmp_path) as acp,
    ):
        session_id = await acp.new_session(workspace)
        turn = asyncio.ensure_future(acp.prompt(session_id, PROMPT))
        try:
            yield acp, turn, await asyncio.to_thread(wait_for_group, workspace)
        finally:
            turn.cancel()
            await asyncio.gather(turn, return_exceptions=True)


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP])
async def test_a_signal_during_a_turn_stops_its_command_and_ends_the_agent(
    tmp_path: Path, number: signal.Signals
) -> None:
    async with stubborn_turn(tmp_path) as (acp, _turn, pgid):
        acp.process.send_signal(number)
        status = await asyncio.wait_for(acp.process.wait(), 60)
    assert status == 128 + number, (tmp_path / "acp-stderr.log").read_text()
    assert not group_running(pgid)
    last = last_ledger_message(tmp_path / "sessions")
    assert last["role"] == "toolResult" and last["toolName"] == "bash", last


async def test_the_input_closed_during_a_turn_answers_the_prompt_and_ends_the_agent(
    tmp_path: Path,
) -> None:
    """The editor closes the agent's input during a turn: the turn is stopped, its command
    too, and the prompt answered (cancelled) before the agent ends. Before, the SDK closed
    the connection first: the prompt's answer waited on it forever, and so did the agent."""
    async with stubborn_turn(tmp_path) as (acp, turn, pgid):
        acp.process.stdin.close()
        answer = await asyncio.wait_for(turn, 60)
        status = await asyncio.wait_for(acp.process.wait(), 60)
    assert answer.stop_reason == "cancelled"
    assert status == 0, (tmp_path / "acp-stderr.log").read_text()
    assert not group_running(pgid)
    last = last_ledger_message(tmp_path / "sessions")
    assert last["role"] == "toolResult" and last["toolName"] == "bash", last


async def test_a_request_still_unanswered_at_the_end_is_answered_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request whose handler has not answered when the input ended (the sessions closed
    and the grace gone by) gets an error; the handler's late answer is not sent after it."""
    monkeypatch.setattr(transport_module, "ANSWER_GRACE", 0.1)
    loop = asyncio.get_running_loop()
    read_end, write_end = os.pipe()
    pipe, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(write_end, "wb")
    )
    tasks = TaskSupervisor(source="test")
    writer = asyncio.StreamWriter(pipe, protocol, None, loop)
    reader = asyncio.StreamReader()
    reader.feed_data(b'{"jsonrpc": "2.0", "id": 5, "method": "session/list", "params": {}}\n')
    reader.feed_eof()
    wire = CheckedTransport(reader, MessageSender(writer, tasks))
    assert (await wire.receive() or {}).get("id") == 5  # given to the SDK: under way
    assert await wire.receive() is None  # the end: no answer came
    await wire.send({"jsonrpc": "2.0", "id": 5, "result": {"sessions": []}})  # too late
    await wire.close()
    await tasks.shutdown()
    os.set_blocking(read_end, False)  # what was sent is in the pipe: each send waited for it
    lines = os.read(read_end, 65536).splitlines()
    writer.close()
    os.close(read_end)
    assert [json.loads(line) for line in lines] == [
        {"jsonrpc": "2.0", "id": 5,
         "error": {"code": -32603, "message": "the agent is closing: its input ended"}}
    ]
