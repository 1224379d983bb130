"""Answers to agent/requestPermission that say more than the option, over real stdio: a
rejection with what the agent should do instead (the model reads the user's words), and an
allowed change the user revised in the editor's diff (the user's version is written, and
the model is told how it differs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.lsp.conftest import sim_settings, start_agent_client

WRITER = parse_scenario(
    {
        "name": "writer",
        "turns": [
            {
                "user": "write the plan",
                "steps": [
                    {
                        "tools": [
                            {
                                "name": "write",
                                "arguments": {"path": "plan.md", "content": "one\ntwo\nthree\n"},
                            }
                        ]
                    },
                    {"text": "Written."},
                ],
            },
        ],
    }
)


def _tool_results(sim: SimServer) -> list[str]:
    """The text of every tool result the model was sent, in order (Anthropic's API)."""
    texts: list[str] = []
    for record in sim.simulator.records:
        body = record.request
        if record.api != "anthropic-messages" or not isinstance(body, dict):
            continue
        for message in body.get("messages", []):
            for block in message.get("content", []) if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_result":
                    content = block.get("content")
                    parts = content if isinstance(content, list) else [{"text": content}]
                    texts.append("".join(str(p.get("text", "")) for p in parts))
    return texts


async def test_a_rejection_tells_the_agent_what_to_do_instead(
    workspace: Path, tmp_path: Path
) -> None:
    async with SimServer(Simulator(scenario=WRITER)) as sim:
        settings = sim_settings(sim, tmp_path, permissions={"mode": "allowReads"})
        async with start_agent_client([workspace], settings) as agent:
            agent.answer_permission = lambda params: {
                "selected": "reject_once",
                "message": "Call it PLAN.md, in upper case.",
            }
            session_id = await agent.new_session()
            await agent.request("agent/turn", {"sessionId": session_id, "prompt": "write the plan"})
            assert not (workspace / "plan.md").exists()
            told = [t for t in _tool_results(sim) if "Call it PLAN.md" in t]
            assert told and "said what to do instead" in told[-1]
            assert "ask the user how to proceed" not in told[-1]
            (failed,) = [
                u["update"] for u in agent.updates
                if u["update"]["kind"] == "toolCallUpdate" and u["update"].get("status") == "failed"
            ]
            assert failed["rawOutput"]["message"] == "Call it PLAN.md, in upper case."


async def test_a_revised_change_is_written_and_the_agent_told_how_it_differs(
    workspace: Path, tmp_path: Path
) -> None:
    async with SimServer(Simulator(scenario=WRITER)) as sim:
        settings = sim_settings(sim, tmp_path, permissions={"mode": "allowReads"})
        async with start_agent_client([workspace], settings) as agent:
            def revise(params: dict[str, Any]) -> dict[str, Any]:
                (change,) = params["toolCall"]["content"]
                # The user kept the first two lines and rejected the third.
                assert change["newText"] == "one\ntwo\nthree\n"
                return {"selected": "allow_once", "newText": "one\ntwo\n"}

            agent.answer_permission = revise
            session_id = await agent.new_session()
            await agent.request("agent/turn", {"sessionId": session_id, "prompt": "write the plan"})
            assert (workspace / "plan.md").read_text() == "one\ntwo\n"
            told = [t for t in _tool_results(sim) if "revised it before it was applied" in t]
            assert told and "-three" in told[-1]
            done = [
                u["update"] for u in agent.updates
                if u["update"]["kind"] == "toolCallUpdate"
                and u["update"].get("status") == "completed"
            ]
            diffs = [c for u in done for c in u.get("content", []) if c["type"] == "diff"]
            assert diffs[-1]["newText"] == "one\ntwo\n"  # the card shows what was written
            # A rewind puts the file back like any other write: the revision was checkpointed.
            loaded = await agent.request("agent/session/load", {"sessionId": session_id})
            prompt = next(i for i in loaded["transcript"] if i["kind"] == "userMessage")
            await agent.request(
                "agent/rewind",
                {"sessionId": session_id, "entryId": prompt["entryId"], "restore": "both"},
            )
            assert not (workspace / "plan.md").exists()


async def test_an_unknown_option_or_a_malformed_revision_is_a_dismissal_or_ignored(
    workspace: Path, tmp_path: Path
) -> None:
    async with SimServer(Simulator(scenario=WRITER)) as sim:
        settings = sim_settings(sim, tmp_path, permissions={"mode": "allowReads"})
        async with start_agent_client([workspace], settings) as agent:
            agent.answer_permission = lambda params: {"selected": "allow_once", "newText": 42}
            session_id = await agent.new_session()
            await agent.request("agent/turn", {"sessionId": session_id, "prompt": "write the plan"})
            # A revision that is not text is ignored: the proposed change is written.
            assert (workspace / "plan.md").read_text() == "one\ntwo\nthree\n"
