"""A turn over real stdio: ordered updates, the result, usage and compaction notifications."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.lsp.conftest import sim_settings, start_agent_client

OVERVIEW = "Give me an overview of this repository: what it does and how it is laid out."


async def test_turn_streams_ordered_updates_and_returns_result(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        # A client-chosen workDoneToken is valid LSP (no create request); the client knows its
        # own token, so pytest-lsp's client is told it too (else it warns of an unknown one).
        agent.client.progress_reports.setdefault("t1", [])
        result = await agent.request(
            "agent/turn", {"sessionId": session_id, "prompt": OVERVIEW, "workDoneToken": "t1"}
        )
        assert result["stopReason"] == "end_turn"
        updates = agent.updates_of(result["turnId"])
        assert [u["seq"] for u in updates] == list(range(len(updates)))
        kinds = [u["update"]["kind"] for u in updates]
        assert kinds[0] == "userMessage"
        assert "toolCall" in kinds and "toolCallUpdate" in kinds and "messageChunk" in kinds
        text = "".join(
            u["update"]["content"]["text"] for u in updates if u["update"]["kind"] == "messageChunk"
        )
        assert "stockroom" in text
        calls = {u["update"]["toolCallId"] for u in updates if u["update"]["kind"] == "toolCall"}
        finished = {
            u["update"]["toolCallId"]
            for u in updates
            if u["update"]["kind"] == "toolCallUpdate" and u["update"].get("status") == "completed"
        }
        assert calls and calls == finished
        assert agent.usage and agent.usage[-1]["sessionId"] == session_id
        usage = result["usage"]
        assert usage["used"] > 0 and usage["size"] == 32768
        # The turn's own usage next to the session's: one turn, so they are the same.
        turn, session = usage["lastTurn"], usage["session"]
        assert turn["calls"] >= 2 and turn["cost"] > 0
        assert turn == session
        assert usage["lastCall"]["output"] > 0 and usage["lastCall"]["cost"] < turn["cost"]
        assert agent.usage[-1] == usage  # the update at the turn's end says the same
        # Every model call was preceded by a visible decision.
        assert [d["action"] for d in agent.decisions] == ["send"] * turn["calls"]
        assert all(d["threshold"] == usage["compactAt"] for d in agent.decisions)
        progress = agent.client.progress_reports.get("t1", [])
        assert progress and progress[0].kind == "begin" and progress[-1].kind == "end"


SCENARIO_PROMPTS = [
    OVERVIEW,
    "How are stock items modelled? Walk me through the models module.",
    "Where is the data persisted and in what format?",
    "The application log has errors. Find out what fails most often.",
    "Read further into the log and explain the storage failure traceback.",
    "Which row of the CSV is broken, and is anything else wrong with the file?",
]


async def test_compaction_notifies_started_then_one_terminal_status(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        for prompt in SCENARIO_PROMPTS:
            result = await agent.request("agent/turn", {"sessionId": session_id, "prompt": prompt})
            assert result["stopReason"] == "end_turn"
        assert agent.compactions, "six scenario turns on sim-small must compact"
        by_id: dict[str, list[dict]] = {}
        for note in agent.compactions:
            by_id.setdefault(note["compactionId"], []).append(note)
        for notes in by_id.values():
            statuses = [n["status"] for n in notes]
            assert statuses[0] == "started"
            assert len(statuses) == 2 and statuses[1] in ("completed", "failed", "cancelled")
        completed = [n for n in agent.compactions if n["status"] == "completed"]
        assert completed and completed[0]["tokensAfter"] < completed[0]["tokensBefore"]
        assert completed[0]["summary"] and completed[0]["reason"] == "threshold"
        assert agent.usage[-1]["windowNumber"] == 1 + len(completed)
        compact_decisions = [d for d in agent.decisions if d["action"] == "compact"]
        assert [d["reason"] for d in compact_decisions] == ["threshold"] * len(compact_decisions)
        assert [d["tokens"] for d in compact_decisions] == [
            c["tokensBefore"] for c in agent.compactions if c["status"] == "started"
        ]
        # past the threshold, or (the early trigger) past half of it with no room for the summary
        assert all(d["tokens"] > d["threshold"] // 2 for d in compact_decisions)

        manual = await agent.request(
            "agent/compact", {"sessionId": session_id, "instructions": "Keep the CSV findings."}
        )
        assert manual["outcome"] in ("compacted", "noop")
        loaded = await agent.request("agent/session/load", {"sessionId": session_id})
        markers = [item for item in loaded["transcript"] if item["kind"] == "compaction"]
        assert len(markers) == len(completed) + (manual["outcome"] == "compacted")


async def test_overflow_rejection_notifies_and_retries_once(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        for prompt in SCENARIO_PROMPTS[:2]:
            await agent.request("agent/turn", {"sessionId": session_id, "prompt": prompt})
        before = len(sim.simulator.records)
        sim.simulator.set_faults("overflow@1")
        result = await agent.request(
            "agent/turn", {"sessionId": session_id, "prompt": SCENARIO_PROMPTS[2]}
        )
        assert result["stopReason"] == "end_turn"
        actions = [(o["kind"], o["action"]) for o in agent.overflows]
        assert actions == [("rejected", "compacting"), ("rejected", "retrying")]
        # They say what happens, never the provider's advice to do it by hand (the agent
        # does it): no "compact the session and try again" beside "compacting".
        compacting, retrying = (o["message"] for o in agent.overflows)
        assert "refused the request as too long" in compacting
        assert "Compacting the history once, then retrying" in compacting
        assert "try again" not in compacting.lower() and "try again" not in retrying.lower()
        reasons = [c["reason"] for c in agent.compactions if c["status"] == "completed"]
        assert reasons == ["overflow"]
        rejected = [r for r in sim.simulator.records[before:] if r.status == 400]
        assert len(rejected) == 1


async def test_permission_allow_and_deny_take_effect(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    settings = sim_settings(sim, tmp_path, permissions={"mode": "allowReads"})
    note = workspace / "notes" / "findings.md"
    async with start_agent_client([workspace], settings) as agent:
        session_id = await agent.new_session()
        agent.answer_permission = lambda params: "reject_once"
        await agent.request(
            "agent/turn",
            {
                "sessionId": session_id,
                "prompt": "Write a scratch note with the three most important findings so far.",
            },
        )
        assert agent.permission_requests, "a write must ask in allowReads mode"
        asked = agent.permission_requests[-1]
        assert asked["toolCall"]["title"].startswith("Write")
        assert {o["kind"] for o in asked["options"]} >= {"allow_once", "reject_once"}
        # The question shows the new file's content, as the protocol's diff content.
        (change,) = asked["toolCall"]["content"]
        assert change["type"] == "diff" and change["path"] == "notes/findings.md"
        assert change["oldText"] is None and change["newText"]
        assert change["diff"].startswith("--- /dev/null\n+++ b/notes/findings.md")
        assert not note.exists()
        # The rejected call says why, not only "failed".
        (failed,) = [
            u["update"] for u in agent.updates
            if u["update"]["kind"] == "toolCallUpdate"
            and u["update"]["toolCallId"] == asked["toolCall"]["toolCallId"]
        ]
        assert failed["status"] == "failed"
        assert failed["rawOutput"]["permission"] == "denied"
        assert "rejected write" in failed["rawOutput"]["reason"]
        loaded = await agent.request("agent/session/load", {"sessionId": session_id})
        items = loaded["transcript"]
        writes = {i["toolCallId"] for i in items if i["kind"] == "toolCall" and i["toolKind"] == "edit"}
        results = [i for i in items if i["kind"] == "toolCallUpdate" and i["toolCallId"] in writes]
        # a rejected tool call shows why, after a reload as live
        assert results and results[-1]["status"] == "failed"
        assert "denied" in results[-1]["content"][0]["content"]["text"]
        live = [
            u["update"]
            for u in agent.updates
            if u["update"]["kind"] == "toolCallUpdate" and u["update"]["toolCallId"] in writes
        ]
        assert live[-1] == results[-1]

        agent.answer_permission = lambda params: "allow_once"
        await agent.request(
            "agent/turn",
            {
                "sessionId": session_id,
                "prompt": "Write a scratch note with the three most important findings so far.",
            },
        )
        assert note.exists()
        done = [
            u["update"] for u in agent.updates
            if u["update"]["kind"] == "toolCallUpdate" and u["update"].get("status") == "completed"
        ]
        diffs = [c for u in done for c in u.get("content", []) if c["type"] == "diff"]
        assert diffs and diffs[-1]["newText"] == note.read_text()
        assert "change" not in done[-1].get("rawOutput", {})


async def test_cancel_mid_turn_returns_cancelled_and_next_turn_works(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        sim.simulator.set_faults("slow@2:30")
        future = agent.client.protocol.send_request(
            "agent/turn", {"sessionId": session_id, "prompt": OVERVIEW}, msg_id="turn-cancel"
        )
        while not any(u["update"]["kind"] == "toolCallUpdate" for u in agent.updates):
            await asyncio.sleep(0.05)
        agent.client.protocol.notify("$/cancelRequest", types.CancelParams(id="turn-cancel"))
        result = await asyncio.wrap_future(future)
        assert result["stopReason"] == "cancelled"
        sim.simulator.set_faults(None)

        loaded = await agent.request("agent/session/load", {"sessionId": session_id})
        items = loaded["transcript"]
        calls = [i["toolCallId"] for i in items if i["kind"] == "toolCall"]
        answered = [i["toolCallId"] for i in items if i["kind"] == "toolCallUpdate"]
        assert sorted(calls) == sorted(answered)

        again = await agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        assert again["stopReason"] == "end_turn"


async def test_interrupt_by_session_id(workspace: Path, sim: SimServer, tmp_path: Path) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        sim.simulator.set_faults("slow@1:30")
        turn = asyncio.ensure_future(
            agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        )
        while not any(u["update"]["kind"] == "userMessage" for u in agent.updates):
            await asyncio.sleep(0.05)
        busy = asyncio.ensure_future(
            agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        )
        with pytest.raises(JsonRpcException) as refused:
            await busy
        assert refused.value.code == -33002 and "busy" in refused.value.message
        assert await agent.request("agent/interrupt", {"sessionId": session_id}) == {}
        result = await turn
        assert result["stopReason"] == "cancelled"


async def test_cancelled_turn_cancels_its_pending_permission_request(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    settings = sim_settings(sim, tmp_path, permissions={"mode": "ask"})
    async with start_agent_client([workspace], settings) as agent:
        session_id = await agent.new_session()
        agent.permission_delay = 60
        turn = asyncio.ensure_future(
            agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        )
        while not agent.permission_requests:
            await asyncio.sleep(0.05)
        await agent.request("agent/interrupt", {"sessionId": session_id})
        result = await turn
        assert result["stopReason"] == "cancelled"
        for _ in range(1200):  # a hang guard, for a busy machine
            if agent.permission_cancellations:
                break
            await asyncio.sleep(0.05)
        assert agent.permission_cancellations == 1


async def test_permission_falls_back_to_show_message_request(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    settings = sim_settings(sim, tmp_path, permissions={"mode": "allowReads"})
    note = workspace / "notes" / "findings.md"
    async with start_agent_client([workspace], settings, request_permission=False) as agent:
        session_id = await agent.new_session()
        await agent.request(
            "agent/turn",
            {"sessionId": session_id, "prompt": "Write a scratch note with the three most important findings so far."},
        )
        assert not agent.permission_requests
        asked = agent.show_message_requests
        assert asked and any("Write notes/findings.md" in a.message for a in asked)
        assert asked[0].actions[0].title == "Allow"
        assert note.exists()  # the test client picks the first action


async def test_many_sessions_run_at_once(workspace: Path, sim: SimServer, tmp_path: Path) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        sessions = [await agent.new_session() for _ in range(3)]
        results = await asyncio.gather(
            *(
                agent.request("agent/turn", {"sessionId": sid, "prompt": OVERVIEW})
                for sid in sessions
            )
        )
        assert [r["stopReason"] for r in results] == ["end_turn"] * 3
        per_turn = {r["turnId"]: agent.updates_of(r["turnId"]) for r in results}
        for updates in per_turn.values():
            assert [u["seq"] for u in updates] == list(range(len(updates)))
        assert {u["sessionId"] for u in agent.updates} == set(sessions)


async def test_server_started_compaction_gets_its_own_progress(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        for prompt in SCENARIO_PROMPTS:
            await agent.request("agent/turn", {"sessionId": session_id, "prompt": prompt})
        started = [c for c in agent.compactions if c["status"] == "started"]
        assert started
        await agent.request("agent/usage", {"sessionId": session_id})
        token = f"agent-compaction-{started[0]['compactionId']}"
        reports = agent.client.progress_reports.get(token, [])
        assert [r.kind for r in reports][:1] == ["begin"] and reports[-1].kind == "end"


async def test_retry_notices_say_they_are_retries(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        sim.simulator.set_faults("529@1")
        result = await agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        assert result["stopReason"] == "end_turn"
        notices = [u["update"] for u in agent.updates if u["update"]["kind"] == "notice"]
        retries = [n for n in notices if "retry" in n]
        assert len(retries) == 1, notices
        (retry,) = retries
        assert retry["level"] == "warning" and "Retrying" in retry["message"]
        assert retry["retry"]["attempt"] == 2 and retry["retry"]["attempts"] >= 2
        assert retry["retry"]["wait"] >= 0
        assert all("retry" not in n for n in notices if n is not retry)


async def test_an_answer_cut_mid_stream_is_discarded_by_id_before_the_retry(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        sim.simulator.set_faults("drop@1:4")  # the first answer's stream is cut
        result = await agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        assert result["stopReason"] == "end_turn"
        updates = [u["update"] for u in agent.updates_of(result["turnId"])]
        kinds = [u["kind"] for u in updates]
        assert kinds.count("messageDiscarded") == 1
        at = kinds.index("messageDiscarded")
        cut = updates[at]["messageId"]
        assert updates[at - 1]["kind"] == "messageChunk" and updates[at - 1]["messageId"] == cut
        assert updates[at + 1]["kind"] == "notice" and "retry" in updates[at + 1]
        assert all(u.get("messageId") != cut for u in updates[at + 1 :])
        # The cut answer was never recorded: a reload shows only the retried one.
        loaded = await agent.request("agent/session/load", {"sessionId": session_id})
        assert cut not in {i.get("messageId") for i in loaded["transcript"]}


async def test_a_stopped_command_ends_as_stopped_live_and_after_a_reload(
    workspace: Path, tmp_path: Path
) -> None:
    sleeper = parse_scenario(
        {
            "name": "sleeper",
            "turns": [
                {
                    "user": "wait a while",
                    "steps": [
                        {"tools": [{"name": "bash", "arguments": {"command": "sleep 60"}}]},
                        {"text": "Done waiting."},
                    ],
                }
            ],
        }
    )
    async with SimServer(Simulator(scenario=sleeper)) as sim:
        settings = sim_settings(sim, tmp_path, tools={"sandbox": "off"})
        async with start_agent_client([workspace], settings) as agent:
            session_id = await agent.new_session()
            turn = asyncio.ensure_future(
                agent.request("agent/turn", {"sessionId": session_id, "prompt": "wait a while"})
            )

            def running() -> bool:
                return any(
                    u["update"]["kind"] == "toolCallUpdate"
                    and u["update"].get("status") == "in_progress"
                    for u in agent.updates
                )

            while not running():
                await asyncio.sleep(0.05)
            await agent.request("agent/interrupt", {"sessionId": session_id})
            result = await turn
            assert result["stopReason"] == "cancelled"
            (call,) = [u["update"] for u in agent.updates if u["update"]["kind"] == "toolCall"]
            ends = [
                u["update"] for u in agent.updates
                if u["update"]["kind"] == "toolCallUpdate"
                and u["update"]["toolCallId"] == call["toolCallId"]
                and u["update"].get("status") in ("completed", "failed")
            ]
            assert len(ends) == 1 and ends[0]["status"] == "failed"
            assert ends[0]["rawOutput"] == {"aborted": True}
            loaded = await agent.request("agent/session/load", {"sessionId": session_id})
            (reloaded,) = [
                i for i in loaded["transcript"]
                if i["kind"] == "toolCallUpdate" and i["toolCallId"] == call["toolCallId"]
            ]
            assert reloaded == ends[0]


async def test_a_prompt_with_a_blank_text_block_is_sent_and_the_session_goes_on(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """A blank block (the newline after a pasted image, say) is not sent: Anthropic refuses
    whitespace-only text, and the prompt, recorded as typed, was refused again at every
    later turn."""
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        blank = [{"type": "text", "text": OVERVIEW}, {"type": "text", "text": " \n "}]
        first = await agent.request("agent/turn", {"sessionId": session_id, "prompt": blank})
        assert first["stopReason"] == "end_turn", first.get("error")
        again = await agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        assert again["stopReason"] == "end_turn", again.get("error")
