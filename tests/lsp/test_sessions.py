"""Sessions over the protocol: restart, separate folders, settings changes, rewind."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from agent_server.sim.server import SimServer
from agent_server.sim.workspace import write_sample_workspace
from tests.lsp.conftest import sim_settings, start_agent_client
from tests.lsp.test_turns import OVERVIEW, SCENARIO_PROMPTS


async def test_sessions_listed_and_loaded_after_a_restart(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    settings = sim_settings(sim, tmp_path)
    async with start_agent_client([workspace], settings) as agent:
        session_id = await agent.new_session(title="tour")
        await agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        before = await agent.request("agent/session/load", {"sessionId": session_id})

    async with start_agent_client([workspace], settings) as agent:
        listed = await agent.request("agent/session/list", {"workspaceUri": agent.workspace_uri()})
        assert [s["sessionId"] for s in listed["sessions"]] == [session_id]
        assert listed["sessions"][0]["title"] == "tour"
        after = await agent.request("agent/session/load", {"sessionId": session_id})
        assert after["transcript"] == before["transcript"]
        assert after["usage"]["used"] == before["usage"]["used"]
        # the session's cost and cache-hit rate come back from the index's sums
        assert after["usage"]["cost"] == before["usage"]["cost"] > 0
        assert after["usage"]["cacheHitRate"] == before["usage"]["cacheHitRate"]
        result = await agent.request(
            "agent/turn", {"sessionId": session_id, "prompt": SCENARIO_PROMPTS[1]}
        )
        assert result["stopReason"] == "end_turn"


async def test_a_load_waits_for_the_server_before_to_let_the_session_go(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """Reload Window: the new server loads the session while the old one, on its way out,
    still holds it. The load waits for it (a moment) rather than fail."""
    settings = sim_settings(sim, tmp_path)
    async with contextlib.AsyncExitStack() as old_window:
        before = await old_window.enter_async_context(start_agent_client([workspace], settings))
        session_id = await before.new_session(title="tour")
        await before.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        async with start_agent_client([workspace], settings) as agent:
            load = asyncio.create_task(
                agent.request("agent/session/load", {"sessionId": session_id})
            )
            await asyncio.sleep(0.5)
            assert not load.done()  # held by the old server: neither loaded nor refused
            await old_window.aclose()
            loaded = await asyncio.wait_for(load, 30)
            assert loaded["sessionId"] == session_id
            assert loaded["transcript"]


async def test_two_workspace_folders_keep_separate_stores(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    write_sample_workspace(other)
    async with start_agent_client([workspace, other], sim_settings(sim, tmp_path)) as agent:
        first = await agent.new_session(0)
        second = await agent.new_session(1)
        in_first = await agent.request(
            "agent/session/list", {"workspaceUri": agent.workspace_uri(0)}
        )
        in_second = await agent.request(
            "agent/session/list", {"workspaceUri": agent.workspace_uri(1)}
        )
        assert [s["sessionId"] for s in in_first["sessions"]] == [first]
        assert [s["sessionId"] for s in in_second["sessions"]] == [second]


async def test_configuration_change_applies_to_the_next_turn(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    settings = sim_settings(sim, tmp_path)
    prompt = "Write a scratch note with the three most important findings so far."
    async with start_agent_client([workspace], settings) as agent:
        session_id = await agent.new_session()
        await agent.request("agent/turn", {"sessionId": session_id, "prompt": prompt})
        assert not agent.permission_requests  # allowAll

        agent.client.set_configuration(
            {**settings, "permissions": {"mode": "ask"}}, section="agent"
        )
        agent.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=None)
        )
        await agent.request("agent/usage", {"sessionId": session_id})  # ordering barrier
        await agent.request("agent/turn", {"sessionId": session_id, "prompt": prompt})
        assert agent.permission_requests


async def test_a_bad_value_in_changed_settings_is_shown_and_the_settings_in_force_stay(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """A typo in one setting while a session is open: the user is told, and the session
    goes on with the settings it had (before, every setting went back to its default: the
    provider to anthropic, with no key, and the permission mode to allowReads)."""
    settings = sim_settings(sim, tmp_path)
    prompt = "Write a scratch note with the three most important findings so far."
    async with start_agent_client([workspace], settings) as agent:
        session_id = await agent.new_session()
        agent.client.set_configuration({**settings, "maxSteps": "many"}, section="agent")
        agent.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=None)
        )
        await agent.request("agent/usage", {"sessionId": session_id})  # ordering barrier
        result = await agent.request("agent/turn", {"sessionId": session_id, "prompt": prompt})
        assert result["stopReason"] == "end_turn"
        assert not agent.permission_requests  # allowAll still
        [shown] = [m.message for m in agent.client.messages if "maxSteps" in m.message]
        assert "must be a whole number" in shown and "settings in force are kept" in shown


async def test_a_bad_value_in_the_settings_at_the_start_leaves_the_others_in_force(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """A typo in one setting when the editor starts the server (no settings in force yet):
    that one is left at its default and the user is told; the provider, the sessions'
    folder and the mode are the user's (before, all went back to their defaults: a session
    could not be made without an Anthropic key, and the user's sessions were not listed)."""
    settings = sim_settings(sim, tmp_path, maxSteps="many", compaction={"threshold": "x"})
    prompt = "Write a scratch note with the three most important findings so far."
    async with start_agent_client([workspace], settings) as agent:
        session_id = await agent.new_session()
        listed = await agent.request("agent/session/list", {"workspaceUri": agent.workspace_uri()})
        assert [s["sessionId"] for s in listed["sessions"]] == [session_id]
        assert list((tmp_path / "sessions").glob(f"*/{session_id}.jsonl"))
        result = await agent.request("agent/turn", {"sessionId": session_id, "prompt": prompt})
        assert result["stopReason"] == "end_turn"
        assert not agent.permission_requests  # allowAll
        [shown] = [m.message for m in agent.client.messages if "maxSteps" in m.message]
        assert "must be a whole number" in shown and "'compaction.threshold'" in shown


async def test_a_setting_removed_while_the_server_runs_goes_back_to_its_default(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """The editor's answer to workspace/configuration is the whole of its settings. Before,
    it was read over initializationOptions': a model the user set when the server started,
    then removed from the settings, stayed for every new session until a restart."""
    settings = sim_settings(sim, tmp_path, model="sim-large")
    async with start_agent_client([workspace], settings) as agent:
        first = await agent.request("agent/session/new", {"workspaceUri": agent.workspace_uri()})
        assert first["model"]["id"] == "sim-large"
        agent.client.set_configuration(sim_settings(sim, tmp_path), section="agent")
        agent.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=None)
        )
        # The server asks the editor again and applies the answer: wait for it (a new
        # session shows the model in force), up to a bound.
        for _ in range(100):
            second = await agent.request(
                "agent/session/new", {"workspaceUri": agent.workspace_uri()}
            )
            if second["model"]["id"] != "sim-large":
                break
            await asyncio.sleep(0.05)
        assert second["model"]["id"] == "sim-small"  # the provider's default again


async def test_rewind_continues_from_an_earlier_entry_without_deleting(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        await agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        await agent.request("agent/turn", {"sessionId": session_id, "prompt": SCENARIO_PROMPTS[1]})
        loaded = await agent.request("agent/session/load", {"sessionId": session_id})
        prompts = [item for item in loaded["transcript"] if item["kind"] == "userMessage"]
        second_prompt = prompts[1]
        target = second_prompt["parentId"]
        # Rewinding to the prompt itself goes to just before it, and gives it back to edit.
        rewound = await agent.request(
            "agent/rewind", {"sessionId": session_id, "entryId": second_prompt["entryId"]}
        )
        assert rewound["prompt"] == second_prompt["content"]
        after = await agent.request("agent/session/load", {"sessionId": session_id})
        assert after["leafId"] == rewound["leafId"]
        # an answer's messageId is its entry id: the rewind target is shown
        ids = [item.get("entryId") or item.get("messageId") for item in after["transcript"]]
        assert second_prompt["entryId"] not in ids
        assert target in ids
        await agent.request("agent/turn", {"sessionId": session_id, "prompt": SCENARIO_PROMPTS[2]})
        final = await agent.request("agent/session/load", {"sessionId": session_id})
        user_texts = [
            item["content"][-1]["text"]
            for item in final["transcript"]
            if item["kind"] == "userMessage"
        ]
        assert user_texts == [OVERVIEW, SCENARIO_PROMPTS[2]]
        listed = await agent.request("agent/session/list", {"workspaceUri": agent.workspace_uri()})
        assert listed["sessions"][0]["entryCount"] > len(final["transcript"])  # nothing deleted


async def test_user_idle_makes_auto_retention_keep_the_cache_an_hour(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    settings = sim_settings(sim, tmp_path, cacheRetention="auto")
    async with start_agent_client([workspace], settings) as agent:
        session_id = await agent.new_session()
        await agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        sent = len(sim.simulator.records)
        assert await agent.request("agent/userIdle", {"idle": True}) == {}
        # A userIdle without its flag is refused, and changes nothing (was: "not idle").
        with pytest.raises(JsonRpcException) as refused:
            await agent.request("agent/userIdle", {})
        assert refused.value.code == -32602 and "'idle'" in refused.value.message
        await agent.request("agent/turn", {"sessionId": session_id, "prompt": OVERVIEW})
        def marks(records: list[Any]) -> list[dict[str, Any]]:
            return [
                block["cache_control"]
                for record in records
                for message in record.request.get("messages", [])
                if isinstance(message["content"], list)
                for block in message["content"]
                if "cache_control" in block
            ]

        before, after = marks(sim.simulator.records[:sent]), marks(sim.simulator.records[sent:])
        assert before and all("ttl" not in mark for mark in before)
        assert after and all(mark.get("ttl") == "1h" for mark in after)


def fold(items: list[dict]) -> dict[str, object]:
    """What an editor shows from a stream of items: text per message, each tool call with its
    last update, the prompts."""
    texts: dict[str, str] = {}
    calls: dict[str, dict] = {}
    prompts = []
    for item in items:
        kind = item["kind"]
        if kind in ("messageChunk", "thoughtChunk"):
            key = f"{kind}:{item['messageId']}"
            texts[key] = texts.get(key, "") + item["content"]["text"]
        elif kind == "toolCall":
            calls[item["toolCallId"]] = {"call": item}
        elif kind == "toolCallUpdate" and item.get("content"):
            calls[item["toolCallId"]]["result"] = item
        elif kind == "userMessage":
            prompts.append(item)
    return {"texts": texts, "calls": calls, "prompts": prompts}


async def test_a_loaded_transcript_shows_what_the_live_stream_showed(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        for prompt in (OVERVIEW, SCENARIO_PROMPTS[1]):
            await agent.request("agent/turn", {"sessionId": session_id, "prompt": prompt})
        live = fold([u["update"] for u in agent.updates if u["update"]["kind"] != "notice"])
        loaded = await agent.request("agent/session/load", {"sessionId": session_id})
        assert loaded["cursor"] is None
        shown = fold(loaded["transcript"])
        assert shown == live
        titles = [c["call"]["title"] for c in shown["calls"].values()]  # type: ignore[union-attr]
        assert any(t.startswith("Read ") for t in titles)

        # a small page and the history before it give the same
        first = await agent.request("agent/session/load", {"sessionId": session_id, "limit": 3})
        items, cursor = first["transcript"], first["cursor"]
        while cursor:
            older = await agent.request(
                "agent/session/history", {"sessionId": session_id, "before": cursor, "limit": 3}
            )
            items, cursor = older["transcript"] + items, older["cursor"]
        assert items == loaded["transcript"]
        with pytest.raises(Exception, match="limit"):
            await agent.request("agent/session/load", {"sessionId": session_id, "limit": 0})


async def test_a_sessions_dir_that_cannot_be_made_is_a_configuration_error(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    settings = sim_settings(sim, tmp_path, sessionsDir=str(blocker / "sessions"))
    async with start_agent_client([workspace], settings) as agent:
        with pytest.raises(JsonRpcException) as refused:
            await agent.new_session()
        assert refused.value.code == -33010  # not an internal error: the setting is wrong
        assert str(blocker / "sessions") in refused.value.message
        assert "sessionsDir" in refused.value.message
