"""Thinking, chosen per session: `agent/thinking/set` over real stdio against the simulator
(which thinks on a budget, as Haiku 4.5 does), what the switch costs, the requests it
changes, and a settings change of the model or the level announced with its cost."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from agent_server.lsp.wire import SESSION_BUSY
from agent_server.sim.server import SimServer
from tests.lsp.conftest import AgentClient, sim_settings, start_agent_client
from tests.lsp.test_turns import OVERVIEW, SCENARIO_PROMPTS


async def _change_settings(agent: AgentClient, settings: dict[str, Any], session_id: str) -> None:
    agent.client.set_configuration(settings, section="agent")
    agent.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings=None)
    )
    await agent.request("agent/usage", {"sessionId": session_id})  # ordering barrier


def _model_changes(agent: AgentClient, turn_id: str) -> list[dict[str, Any]]:
    """The model changes said in a turn ("": outside any)."""
    return [
        u["update"] for u in agent.updates_of(turn_id) if u["update"]["kind"] == "modelChange"
    ]


async def _said_at_once(agent: AgentClient, count: int) -> dict[str, Any]:
    """The `count`th model change said outside a turn: between turns a settings change is
    applied at once, so its cost is said before the next prompt (waited for: it is sent when
    the server has the new settings)."""
    for _ in range(600):
        changes = _model_changes(agent, "")
        if len(changes) >= count:
            return changes[count - 1]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no model change said after the settings change: {agent.updates}")


def _model_requests(sim: SimServer, since: int) -> list[dict[str, Any]]:
    return [
        r.request
        for r in sim.simulator.records[since:]
        if r.api == "anthropic-messages" and isinstance(r.request, dict)
    ]


async def test_thinking_switch_costs_the_messages_and_shows_the_thinking(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        created = await agent.request("agent/session/load", {"sessionId": session_id})
        assert created["thinking"] == "off" and created["canThink"] is True
        before = len(sim.simulator.records)
        await agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        assert all("thinking" not in body for body in _model_requests(sim, before))
        assert not [u for u in agent.updates if u["update"]["kind"] == "thoughtChunk"]

        switched = await agent.request(
            "agent/thinking/set", {"sessionId": session_id, "thinking": "high"}
        )
        assert switched["thinking"] == "high" and switched["entryId"]
        # Anthropic caches messages per thinking setting: the conversation is re-read.
        assert switched["cost"]["tokens"] > 0
        assert switched["cost"]["switchedCost"] > switched["cost"]["stayedCost"]
        assert "Tools and the system prompt stay cached" in switched["note"]

        before = len(sim.simulator.records)
        turn = await agent.request(
            "agent/turn", {"sessionId": session_id, "prompt": SCENARIO_PROMPTS[1]}
        )
        assert turn["stopReason"] == "end_turn"
        bodies = _model_requests(sim, before)
        assert bodies and all(b["thinking"]["type"] == "enabled" for b in bodies)
        # sim-small's output limit is 4096: the budget is half of it, within max_tokens.
        assert {b["thinking"]["budget_tokens"] for b in bodies} == {2048}
        assert all(b["max_tokens"] > b["thinking"]["budget_tokens"] for b in bodies)
        first = sim.simulator.records[before]
        assert first.tokens is not None and first.tokens.cache_write_5m > 0  # the messages again
        thoughts = [u for u in agent.updates if u["update"]["kind"] == "thoughtChunk"]
        assert thoughts, "the scenario's thinking streams once thinking is on"

        # The level stays with the session: in its state, its marker, and a new server.
        loaded = await agent.request("agent/session/load", {"sessionId": session_id})
        assert loaded["thinking"] == "high"
        marker = [i for i in loaded["transcript"] if i["kind"] == "modelChange"][-1]
        assert marker["entryId"] == switched["entryId"] and marker["thinking"] == "high"
        again = await agent.request(
            "agent/thinking/set", {"sessionId": session_id, "thinking": "high"}
        )
        assert again["entryId"] is None and "already" in again["note"]

        with pytest.raises(JsonRpcException) as bad:
            await agent.request("agent/thinking/set", {"sessionId": session_id, "thinking": "max"})
        assert "must be one of off, low, medium, high" in bad.value.message

    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        reopened = await agent.request("agent/session/load", {"sessionId": session_id})
        assert reopened["thinking"] == "high"


async def test_thinking_switch_waits_for_the_turn(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        sim.simulator.set_faults("slow@1:60")  # the interrupt ends it
        turn = asyncio.ensure_future(
            agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        )
        while not any(u["update"]["kind"] == "userMessage" for u in agent.updates):
            await asyncio.sleep(0.05)
        with pytest.raises(JsonRpcException) as busy:
            await agent.request("agent/thinking/set", {"sessionId": session_id, "thinking": "low"})
        assert busy.value.code == SESSION_BUSY
        await agent.request("agent/interrupt", {"sessionId": session_id})
        await turn


async def test_a_settings_change_of_model_or_thinking_says_what_it_costs(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    settings = sim_settings(sim, tmp_path)
    async with start_agent_client([workspace], settings) as agent:
        session_id = await agent.new_session()
        await agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})

        await _change_settings(agent, {**settings, "model": "sim-large"}, session_id)
        change = await _said_at_once(agent, 1)  # before the next prompt, not after it is paid
        assert change["model"] == "sim-large" and change["modelInfo"]["contextWindow"] == 200_000
        assert change["note"].startswith("A settings change: Switched to Simulator, 200k window.")
        assert "cache" in change["note"]
        turn = await agent.request(
            "agent/turn", {"sessionId": session_id, "prompt": SCENARIO_PROMPTS[1]}
        )
        assert _model_changes(agent, turn["turnId"]) == []  # said once
        assert sim.simulator.records[-1].request["model"] == "sim-large"

        await _change_settings(
            agent, {**settings, "model": "sim-large", "thinking": "low"}, session_id
        )
        change = await _said_at_once(agent, 2)
        assert change["thinking"] == "low" and "Thinking: low effort (was off)" in change["note"]
        loaded = await agent.request("agent/session/load", {"sessionId": session_id})
        markers = [i for i in loaded["transcript"] if i["kind"] == "modelChange"]
        assert [(m["model"], m.get("thinking")) for m in markers][-2:] == [
            ("sim-large", "off"),
            ("sim-large", "low"),
        ]


async def test_a_provider_change_in_the_settings_says_what_the_switch_costs(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """The issue's case: the provider setting changes under an open session (here from the
    simulator to Anthropic's API served by the same simulator, which knows Claude's models)."""
    settings = sim_settings(sim, tmp_path)
    async with start_agent_client([workspace], settings) as agent:
        session_id = await agent.new_session()
        await agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        await _change_settings(agent, {**settings, "provider": "anthropic"}, session_id)
        change = await _said_at_once(agent, 1)
        turn = await agent.request(
            "agent/turn", {"sessionId": session_id, "prompt": SCENARIO_PROMPTS[1]}
        )
        assert change["model"] == "claude-sonnet-5-5"
        assert change["note"].startswith("A settings change: Switched to Claude Sonnet 5.5.")
        assert "Prompt caches are per model" in change["note"]
        assert turn["stopReason"] == "end_turn"


async def test_settings_that_cannot_be_applied_are_said_by_each_turn_until_fixed(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """A model the provider does not serve: not applied between turns (nothing said then);
    each turn fails saying why, on the model it had, until the setting is fixed."""
    settings = sim_settings(sim, tmp_path)
    async with start_agent_client([workspace], settings) as agent:
        session_id = await agent.new_session()
        await _change_settings(agent, {**settings, "model": "no-such-model"}, session_id)
        for prompt in SCENARIO_PROMPTS[:2]:
            turn = await agent.request("agent/turn", {"sessionId": session_id, "prompt": prompt})
            assert turn["stopReason"] == "error" and "no-such-model" in turn["error"]["message"]
        await _change_settings(agent, settings, session_id)
        turn = await agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        assert turn["stopReason"] == "end_turn"
