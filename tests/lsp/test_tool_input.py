"""What the user types into a running command (issue 47: the editor's terminal), over real
stdio: with `tools.terminal.visible` on, `agent/tool/input` reaches the command's standard
input (a line it reads, then the end of its input); off, the command's input stays empty and
what is sent is ignored. Input for a call that is not running, or for an unknown session, is
ignored too: a notification has no answer, and the server goes on serving."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.lsp.conftest import AgentClient, sim_settings, start_agent_client

PROMPT = "ask me my name"
# "ready" is printed once the command runs, so with its input already in place.
ASKS = 'echo ready; read name; echo "read:$?:hello $name"; cat; echo "input ended"'


def running(**arguments: Any) -> Simulator:
    """A model that runs one bash command (its `arguments`), then answers."""
    return Simulator(scenario=parse_scenario({
        "name": "one command",
        "turns": [{
            "user": PROMPT,
            "steps": [{"tools": [{"name": "bash", "arguments": arguments}]}, {"text": "Done."}],
        }],
    }))


def asking() -> Simulator:
    return running(command=ASKS)


def call_updates(agent: AgentClient) -> list[dict[str, Any]]:
    return [u["update"] for u in agent.updates if u["update"]["kind"] == "toolCallUpdate"]


async def until_ready(agent: AgentClient, turn: asyncio.Future[Any]) -> str:
    """The id of the command's call, once it has printed "ready" (or the turn's end)."""
    async with asyncio.timeout(60):
        while not turn.done():
            for update in call_updates(agent):
                texts = [c["content"].get("text", "") for c in update.get("content", [])]
                if update["status"] == "in_progress" and "ready" in "".join(texts):
                    return str(update["toolCallId"])
            await asyncio.sleep(0.05)
    (call,) = [u["update"] for u in agent.updates if u["update"]["kind"] == "toolCall"]
    return str(call["toolCallId"])


async def command_started(agent: AgentClient) -> tuple[str, asyncio.Future[Any], str]:
    """A new session, its turn started, and the id of the command's call once it runs."""
    session_id = await agent.new_session()
    turn = asyncio.ensure_future(
        agent.request("agent/turn", {"sessionId": session_id, "prompt": PROMPT})
    )
    return session_id, turn, await until_ready(agent, turn)


def typed(agent: AgentClient, session_id: str, call_id: str, data: str, **flags: bool) -> None:
    """`agent/tool/input` for the call: `data`, and `end` or `interrupt` when given."""
    agent.client.protocol.notify(
        "agent/tool/input",
        {"sessionId": session_id, "toolCallId": call_id, "data": data, **flags},
    )


def result_of(agent: AgentClient, call_id: str) -> dict[str, Any]:
    (end,) = [
        u for u in call_updates(agent)
        if u["toolCallId"] == call_id and u["status"] in ("completed", "failed")
    ]
    return end


async def test_what_is_typed_reaches_the_running_command_and_ctrl_d_ends_its_input(
    workspace: Path, tmp_path: Path
) -> None:
    async with SimServer(asking()) as sim:
        settings = sim_settings(sim, tmp_path, tools={"terminal": {"visible": True}})
        async with start_agent_client([workspace], settings) as agent:
            session_id, turn, call_id = await command_started(agent)
            typed(agent, "no-such-session", call_id, "lost\n")  # ignored, logged
            typed(agent, session_id, "no-such-call", "lost\n")
            typed(agent, session_id, call_id, "world\n")
            typed(agent, session_id, call_id, "last line\n", end=True)
            result = await turn
            assert result["stopReason"] == "end_turn", result.get("error")
            end = result_of(agent, call_id)
            text = end["content"][0]["content"]["text"]
            assert end["status"] == "completed", text
            assert "read:0:hello world" in text
            assert "last line\ninput ended" in text and "lost" not in text
            # The call has ended: input for it is ignored, and the server goes on serving.
            typed(agent, session_id, call_id, "late\n", end=True)
            typed(agent, session_id, call_id, "", end="yes")  # type: ignore[arg-type]
            usage = await agent.request("agent/usage", {"sessionId": session_id})
            assert usage["sessionId"] == session_id


async def test_with_the_setting_off_the_command_reads_no_input_and_typing_is_ignored(
    workspace: Path, tmp_path: Path
) -> None:
    async with (
        SimServer(asking()) as sim,
        start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent,
    ):
        session_id, turn, call_id = await command_started(agent)
        typed(agent, session_id, call_id, "world\n", end=True)
        result = await turn
        assert result["stopReason"] == "end_turn", result.get("error")
        text = result_of(agent, call_id)["content"][0]["content"]["text"]
        # read met the end of an empty input at once (status 1), cat too.
        assert "read:1:hello \ninput ended" in text and "world" not in text


# Runs until interrupted (a Ctrl-C that did not reach it would hang the turn until the test's
# own timeout). The trap makes the test independent of when SIGINT lands: between two sleeps,
# or as bash starts one (a child not yet there misses the signal, and bash, waiting for a
# child that exits normally, would go on; with the trap it ends once that child does).
LONG = "trap 'echo interrupted; exit 130' INT; echo ready; while :; do sleep 0.1; done"


async def test_ctrl_c_interrupts_the_running_command_and_the_turn_goes_on(
    workspace: Path, tmp_path: Path
) -> None:
    """Ctrl-C in the editor's terminal (`interrupt`) is SIGINT to the command's processes, as
    a terminal's is: the command stops, the model is told the user interrupted it, and the
    turn goes on to its answer. Ctrl-C for a call that runs nothing is ignored."""
    async with SimServer(running(command=LONG, timeout=600)) as sim:
        settings = sim_settings(sim, tmp_path, tools={"terminal": {"visible": True}})
        async with start_agent_client([workspace], settings) as agent:
            session_id, turn, call_id = await command_started(agent)
            typed(agent, session_id, "no-such-call", "", interrupt=True)  # ignored, logged
            typed(agent, session_id, call_id, "", interrupt=True)
            try:
                async with asyncio.timeout(120):
                    result = await turn
            except TimeoutError:  # what the command printed says how far it got
                shown = [c["content"].get("text", "") for u in call_updates(agent)
                         for c in u.get("content", [])]
                raise AssertionError(f"the command went on: {shown!r}") from None
            assert result["stopReason"] == "end_turn", result.get("error")
            end = result_of(agent, call_id)
            text = end["content"][0]["content"]["text"]
            assert end["status"] == "failed", text
            assert "ready" in text and "interrupted" in text  # SIGINT reached the command
            assert "The user interrupted the command" in text and "Exit code 130." in text
            typed(agent, session_id, call_id, "", interrupt=True)  # ended: nothing to signal
            usage = await agent.request("agent/usage", {"sessionId": session_id})
            assert usage["sessionId"] == session_id
