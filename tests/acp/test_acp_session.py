"""`agent-server acp` end to end: the ACP Python SDK's client over real stdio, the simulator
over real HTTP, the same ledger, tools and permission gate as `serve`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, audio_block, text_block
from acp.schema import PermissionOption, ToolCallUpdate

from agent_server.acp.updates import ANSWER_DISCARDED
from agent_server.protocol import ERROR_CODES
from agent_server.sim.server import SimServer
from tests.acp.conftest import (
    EDIT_NOTE,
    MODELS,
    MORE_SCENARIO,
    OVERVIEW,
    SCENARIO,
    WRITE_NOTE,
    RecordingClient,
    acp_args,
    start_acp,
)


async def wait_for(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(60):
        while not condition():
            await asyncio.sleep(0.05)


async def test_initialize_declares_sessions_prompts_and_listing(
    sim: SimServer, tmp_path: Path
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        caps = acp.init.agent_capabilities
        assert acp.init.protocol_version == 1
        assert caps is not None and caps.load_session
        assert caps.prompt_capabilities is not None
        assert caps.prompt_capabilities.image and caps.prompt_capabilities.embedded_context
        assert not caps.prompt_capabilities.audio
        assert caps.session_capabilities is not None and caps.session_capabilities.list is not None
        assert acp.init.agent_info is not None and acp.init.agent_info.name == "agent-server"


async def test_multi_turn_session_streams_tools_text_and_usage(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        client = acp.client
        session = await acp.conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert session.modes is not None and session.modes.current_mode_id == "allowReads"
        ids = {option.id for option in session.config_options or []}
        assert ids == {"mode", "model", "thinking"}  # sim-small thinks on request
        first = await acp.prompt(session.session_id, OVERVIEW)
        second = await acp.prompt(
            session.session_id, MODELS
        )
        assert first.stop_reason == second.stop_reason == "end_turn"

        calls = client.of("tool_call")
        assert {call.kind for call in calls} >= {"read", "search"}
        reads = [call for call in calls if call.title == "Read README.md"]
        assert reads and reads[0].locations[0].path == str(workspace / "README.md")
        results = client.tool_results()
        assert {call.tool_call_id for call in calls} == set(results)
        assert all(result.status == "completed" for result in results.values())
        readme = results[reads[0].tool_call_id].content[0].content.text
        assert readme.startswith("```") and "stockroom" in readme
        assert "stockroom" in client.text()
        usage = client.of("usage_update")
        assert usage and usage[-1].size == 32768 and usage[-1].used > usage[0].used
        assert usage[-1].cost.amount > 0
        assert usage[-1].field_meta["agentServer"]["windowNumber"] == 1
        # Each meter once: not again when the turn ends right after the call that set it.
        assert all(before != after for before, after in pairwise(usage)), usage
        commands = client.of("available_commands_update")
        assert [c.name for c in commands[0].available_commands] == [
            "compact", "usage", "remember", "forget", "pins", "tools"
        ]
        titles = client.of("session_info_update")
        assert titles and titles[0].title == OVERVIEW

    # The same ledger `serve` writes: an append-only JSONL file with both prompts.
    ledgers = list((tmp_path / "sessions").rglob(f"{session.session_id}*.jsonl"))
    assert len(ledgers) == 1
    lines = [json.loads(line) for line in ledgers[0].read_text().splitlines()]
    prompts = [
        block["text"]
        for entry in lines
        if entry.get("type") == "message" and entry["message"]["role"] == "user"
        for block in entry["message"]["content"]
    ]
    assert prompts[:2] == [OVERVIEW, MODELS]


async def test_permission_is_asked_with_the_diff_and_answers_are_kept(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    def answer(call: ToolCallUpdate, options: list[PermissionOption]) -> str | None:
        kinds = [o.kind for o in options]
        assert kinds[0] == "allow_once" and kinds[-2:] == ["reject_once", "reject_always"]
        assert "allow_always" in kinds
        return "allow_always" if call.kind == "execute" else "reject_once"

    client = RecordingClient(answer=answer)
    async with start_acp(acp_args(sim, tmp_path), tmp_path, client) as acp:
        session_id = await acp.new_session(workspace)
        result = await acp.prompt(session_id, WRITE_NOTE)
        assert result.stop_reason == "end_turn"
        kinds = [question.kind for question in client.questions]
        assert kinds == ["execute", "edit"]
        assert client.questions[0].raw_input == {"command": "mkdir -p notes"}
        # A prefix choice for the command ("Always allow `mkdir:*`") is offered too.
        assert any(o.option_id.startswith("allow_prefix:") for o in client.options[0])
        write_question = client.questions[1]
        diff = write_question.content[0]
        assert diff.type == "diff" and diff.path == str(workspace / "notes" / "findings.md")
        assert diff.old_text is None and "findings" in diff.new_text.lower()
        refused = client.tool_results()[write_question.tool_call_id]
        assert refused.status == "failed"
        assert "denied" in refused.content[-1].content.text
        assert not (workspace / "notes" / "findings.md").exists()

        # "Always allow" holds for that command: asked again, only the write asks.
        asked = len(client.questions)
        await acp.prompt(session_id, WRITE_NOTE)
        assert [q.kind for q in client.questions[asked:]] == ["edit"]


async def test_cancel_mid_stream_ends_the_turn_and_the_session_goes_on(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        client = acp.client
        session_id = await acp.new_session(workspace)
        sim.simulator.set_faults("slow@2:30")  # the second model call hangs
        turn = asyncio.ensure_future(acp.prompt(session_id, OVERVIEW))
        await wait_for(lambda: bool(client.tool_results()))
        await acp.conn.cancel(session_id=session_id)
        result = await asyncio.wait_for(turn, 30)
        assert result.stop_reason == "cancelled"
        sim.simulator.set_faults(None)
        again = await acp.prompt(session_id, OVERVIEW)
        assert again.stop_reason == "end_turn"


async def test_an_answer_cut_mid_stream_is_said_to_be_cut_off_and_repeated(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        session_id = await acp.new_session(workspace)
        sim.simulator.set_faults("drop@1:4")  # the first answer's stream is cut
        assert (await acp.prompt(session_id, OVERVIEW)).stop_reason == "end_turn"
        chunks = acp.client.of("agent_message_chunk", session_id)
        said = [c for c in chunks if ANSWER_DISCARDED in c.content.text]
        assert len(said) == 1
        at = chunks.index(said[0])
        cut = chunks[at - 1].message_id  # the partial answer, right above the notice
        assert cut and all(c.message_id != cut for c in chunks[at + 1 :])
        assert "Retrying in" in chunks[at + 1].content.text  # then the retry's own notice


async def test_a_failed_turn_says_why_once_and_a_reload_shows_it(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        session_id = await acp.new_session(workspace)
        sim.simulator.set_faults("overflow@1-10")  # refused as too long, even after compacting
        with pytest.raises(RequestError) as failed:
            await acp.prompt(session_id, OVERVIEW)
        said = str(failed.value)
        assert said.startswith("The request is too large for")
        # What an ACP user can do: ACP has no rewind, and a ledger entry id means nothing there.
        assert "start a new session" in said
        assert "rewind" not in said and "(entry " not in said
        # The answer to session/prompt says it; the stream does not repeat it.
        assert said not in json.dumps([str(update) for _sid, update in acp.client.updates])
        assert "Compacting the history once" in acp.client.text(session_id)
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        await acp.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        assert acp.client.text(session_id).count(said) == 1  # the ledger kept it


async def test_cancel_stops_a_compact_command_and_keeps_the_conversation(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        client = acp.client
        session_id = await acp.new_session(workspace)
        for prompt in SCENARIO[:3]:  # below the threshold: nothing compacted yet
            assert (await acp.prompt(session_id, prompt)).stop_reason == "end_turn"

        def cards() -> list[Any]:
            return [c for c in client.of("tool_call") if c.tool_call_id.startswith("compaction-")]

        assert not cards()
        sim.simulator.set_faults("slow@1:30")  # the summary's call hangs
        command = asyncio.ensure_future(acp.prompt(session_id, "/compact"))
        await wait_for(lambda: bool(cards()))
        await acp.conn.cancel(session_id=session_id)
        result = await asyncio.wait_for(command, 20)  # not the 30 s the call hangs
        assert result.stop_reason == "cancelled"
        ended = client.tool_results()[cards()[0].tool_call_id]
        assert ended.status == "failed" and ended.raw_output["status"] == "cancelled"
        sim.simulator.set_faults(None)
        # Nothing was compacted: the next /compact does it.
        assert (await acp.prompt(session_id, "/compact")).stop_reason == "end_turn"
        assert len(cards()) == 2
        assert client.tool_results()[cards()[1].tool_call_id].status == "completed"


async def test_cancel_while_a_permission_question_is_open(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    client = RecordingClient(answer=lambda _call, _options: None, hold=asyncio.Event())
    async with start_acp(acp_args(sim, tmp_path, "--mode", "ask"), tmp_path, client) as acp:
        session_id = await acp.new_session(workspace)
        turn = asyncio.ensure_future(acp.prompt(session_id, OVERVIEW))
        await wait_for(lambda: bool(client.questions))
        await acp.conn.cancel(session_id=session_id)
        assert client.hold is not None
        client.hold.set()  # the editor answers "cancelled", as the protocol asks
        result = await asyncio.wait_for(turn, 30)
        assert result.stop_reason == "cancelled"


async def test_a_failing_compaction_hook_is_one_notice_and_no_log_line(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """A before hook exiting with code 3: the client shows one notice, its stderr cut; the
    agent's stderr (the client's log of it) does not say it again."""
    script = tmp_path / "notes.sh"
    script.write_text(
        "echo 'the notes disk is full' >&2\nhead -c 3000 /dev/zero | tr '\\0' x >&2\nexit 3\n"
    )
    config = tmp_path / "settings.json"
    config.write_text(json.dumps({"compaction": {
        "keepRecentTokens": 1, "keepRecentTurns": 1, "hooks": {"before": [f"sh {script}"]},
    }}))
    async with start_acp(acp_args(sim, tmp_path, "--config", str(config)), tmp_path) as acp:
        session_id = await acp.new_session(workspace)
        for prompt in SCENARIO[:2]:
            assert (await acp.prompt(session_id, prompt)).stop_reason == "end_turn"
        assert (await acp.prompt(session_id, "/compact")).stop_reason == "end_turn"
        said = acp.client.text(session_id)
    assert said.count("the notes disk is full") == 1, said
    assert "exited with code 3" in said and "more characters]" in said
    assert "x" * 400 not in said
    assert "the notes disk is full" not in (tmp_path / "acp-stderr.log").read_text()


async def test_compaction_reaches_the_client_as_a_card_and_in_the_meter(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        client = acp.client
        session_id = await acp.new_session(workspace)
        early = await acp.prompt(session_id, "/compact")
        assert early.stop_reason == "end_turn" and "Nothing to compact" in client.text()
        for prompt in SCENARIO:
            assert (await acp.prompt(session_id, prompt)).stop_reason == "end_turn"
        started = [c for c in client.of("tool_call") if c.tool_call_id.startswith("compaction-")]
        assert started, "six scenario turns on sim-small must compact"
        assert started[0].title.startswith("Compacting the conversation")
        assert {c.raw_input["reason"] for c in started} == {"threshold"}
        done = client.tool_results()[started[0].tool_call_id]
        assert done.status == "completed" and done.title.startswith("Compacted the conversation")
        assert done.raw_output["tokensAfter"] < done.raw_output["tokensBefore"]
        assert done.content and done.content[0].content.text.startswith("```")
        windows = [u.field_meta["agentServer"]["windowNumber"] for u in client.of("usage_update")]
        assert windows[-1] == 1 + len(started)

        # /compact: a manual compaction, its own card; /usage: the meter as text.
        assert (await acp.prompt(session_id, "/compact keep the file names")).stop_reason == "end_turn"
        cards = [c for c in client.of("tool_call") if c.tool_call_id.startswith("compaction-")]
        assert [c.raw_input["reason"] for c in cards[len(started) :]] == ["manual"]
        assert client.tool_results()[cards[-1].tool_call_id].status == "completed"
        for prompt in MORE_SCENARIO:
            await acp.prompt(session_id, prompt)
        cards = [c for c in client.of("tool_call") if c.tool_call_id.startswith("compaction-")]
        await acp.prompt(session_id, "/usage")
        assert f"Cache window {len(cards) + 1}" in client.text()


async def test_session_reloaded_in_a_new_process_replays_its_history(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as first:
        session_id = await first.new_session(workspace)
        await first.conn.set_config_option(
            config_id="thinking", session_id=session_id, value="low"
        )  # the simulator streams a scenario's thinking only when asked to think
        await first.prompt(session_id, OVERVIEW)
        await first.prompt(session_id, MODELS)
        live_calls = [c.tool_call_id for c in first.client.of("tool_call")]
        live_text = "".join(  # the model's answers (not the notice of the thinking level)
            u.content.text for u in first.client.of("agent_message_chunk")
            if not u.message_id.startswith("notice-")
        )
        live_thoughts = ids_of(first.client.of("agent_thought_chunk"))
        # A thought is a message of its own: ACP's messageId names one message, and a client
        # that keys messages by it would run the thinking into the answer.
        assert live_thoughts
        assert not live_thoughts & ids_of(first.client.of("agent_message_chunk"))

    async with start_acp(acp_args(sim, tmp_path), tmp_path) as second:
        listed = await second.conn.list_sessions(cwd=str(workspace))
        assert [(s.session_id, s.title) for s in listed.sessions] == [(session_id, OVERVIEW)]
        loaded = await second.conn.load_session(
            cwd=str(workspace), session_id=session_id, mcp_servers=[]
        )
        assert loaded.modes is not None
        client = second.client
        user_text = "".join(u.content.text for u in client.of("user_message_chunk"))
        assert user_text == OVERVIEW + MODELS
        assert [c.tool_call_id for c in client.of("tool_call")] == live_calls
        assert all(r.status == "completed" for r in client.tool_results().values())
        assert set(client.tool_results()) == set(live_calls)
        assert client.text() == live_text
        assert ids_of(client.of("agent_thought_chunk")) == live_thoughts
        replayed = len(client.updates)
        assert (await second.prompt(session_id, OVERVIEW)).stop_reason == "end_turn"
        assert len(client.updates) > replayed


def ids_of(chunks: list[Any]) -> set[str]:
    return {chunk.message_id for chunk in chunks}


async def test_a_load_waits_for_the_process_before_to_let_the_session_go(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """An editor that restarts its agent loads at once: the old process, on its way out,
    still holds the session. The load waits for it (a moment) rather than fail."""
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as first:
        session_id = await first.new_session(workspace)
        await first.prompt(session_id, OVERVIEW)
        async with start_acp(acp_args(sim, tmp_path), tmp_path) as second:
            load = asyncio.create_task(
                second.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
            )
            # The first still has it: the load cannot have succeeded, and does not fail.
            await asyncio.sleep(0.5)
            assert not load.done()
            await first.conn.close_session(session_id=session_id)
            loaded = await asyncio.wait_for(load, 30)
            assert loaded.modes is not None
            user_text = "".join(u.content.text for u in second.client.of("user_message_chunk"))
            assert user_text == OVERVIEW
            assert (await second.prompt(session_id, MODELS)).stop_reason == "end_turn"


async def test_a_session_open_in_another_process_is_refused_with_its_own_code(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """Past the wait, a load of a session another process keeps open is refused as the
    editor protocol refuses it (-33005 SessionLocked, `data.code` session_locked), not as an
    internal error: a client can tell the user to close it there."""
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as first:
        session_id = await first.new_session(workspace)
        await first.prompt(session_id, OVERVIEW)
        async with start_acp(acp_args(sim, tmp_path), tmp_path) as second:
            with pytest.raises(RequestError) as refused:
                await second.conn.load_session(
                    cwd=str(workspace), session_id=session_id, mcp_servers=[]
                )
    assert refused.value.code == ERROR_CODES["SessionLocked"]
    assert (refused.value.data or {}).get("code") == "session_locked"


async def test_file_tools_use_the_editors_buffers(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    readme = str(workspace / "README.md")
    note = str(workspace / "notes" / "findings.md")
    client = RecordingClient(buffers={readme: "# stockroom\n\nUNSAVED-BUFFER-MARKER\n"})
    async with start_acp(acp_args(sim, tmp_path, "--mode", "allowAll"), tmp_path, client) as acp:
        session_id = await acp.new_session(workspace)
        await acp.prompt(session_id, OVERVIEW)
        assert readme in client.reads
        read_call = next(c for c in client.of("tool_call") if c.title == "Read README.md")
        shown = client.tool_results()[read_call.tool_call_id].content[0].content.text
        assert "UNSAVED-BUFFER-MARKER" in shown

        await acp.prompt(session_id, WRITE_NOTE)
        assert client.writes == [note]
        # The user types in the note without saving; the agent's edit starts from that.
        client.buffers[note] += "UNSAVED-LINE\n"
        await acp.prompt(session_id, EDIT_NOTE)
        assert client.writes == [note, note] and note in client.reads
        assert "journal" in client.buffers[note].lower()
        assert "UNSAVED-LINE" in client.buffers[note]


async def test_without_fs_capabilities_the_tools_use_the_disk(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    args = acp_args(sim, tmp_path, "--mode", "allowAll")
    async with start_acp(args, tmp_path, fs=False) as acp:
        session_id = await acp.new_session(workspace)
        await acp.prompt(session_id, WRITE_NOTE)
        assert acp.client.reads == acp.client.writes == []
        assert (workspace / "notes" / "findings.md").exists()


async def test_modes_and_config_options(workspace: Path, sim: SimServer, tmp_path: Path) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        client = acp.client
        session_id = await acp.new_session(workspace)
        await acp.conn.set_session_mode(mode_id="allowAll", session_id=session_id)
        # Each way of setting the mode tells a client that shows the other one.
        [options] = client.of("config_option_update")
        assert {o.id: o.current_value for o in options.config_options}["mode"] == "allowAll"
        await acp.prompt(session_id, WRITE_NOTE)
        assert client.questions == []

        changed = await acp.conn.set_config_option(
            config_id="mode", session_id=session_id, value="ask"
        )
        assert {o.id: o.current_value for o in changed.config_options}["mode"] == "ask"
        assert [u.current_mode_id for u in client.of("current_mode_update")] == ["ask"]
        changed = await acp.conn.set_config_option(
            config_id="model", session_id=session_id, value="sim-large"
        )
        assert {o.id: o.current_value for o in changed.config_options}["model"] == "sim-large"
        client.answer = lambda _call, _options: "allow_once"
        await acp.prompt(session_id, OVERVIEW)
        assert client.questions, "the ask mode set through a config option asks for reads"
        assert client.of("usage_update")[-1].size == 200_000

        for bad in (
            acp.conn.set_session_mode(mode_id="yolo", session_id=session_id),
            acp.conn.set_config_option(config_id="model", session_id=session_id, value="gpt-0"),
            acp.conn.set_config_option(config_id="colour", session_id=session_id, value="red"),
        ):
            with pytest.raises(RequestError) as refused:
                await bad
            assert refused.value.code == -32602


async def test_bad_requests_get_errors_and_the_agent_keeps_serving(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        with pytest.raises(RequestError) as unknown:
            await acp.prompt("no-such-session", OVERVIEW)
        assert unknown.value.code == -32002 and "session/new" in str(unknown.value)
        with pytest.raises(RequestError) as relative:
            await acp.conn.new_session(cwd="relative/dir", mcp_servers=[])
        assert relative.value.code == -32602 and "absolute" in str(relative.value)
        session_id = await acp.new_session(workspace)
        with pytest.raises(RequestError) as audio:
            await acp.conn.prompt(
                session_id=session_id, prompt=[audio_block("AAAA", "audio/wav")]
            )
        assert audio.value.code == -32602 and "audio" in str(audio.value)
        with pytest.raises(RequestError) as missing:
            await acp.conn.load_session(cwd=str(workspace), session_id="gone", mcp_servers=[])
        assert missing.value.code == -32002
        result = await acp.conn.prompt(session_id=session_id, prompt=[text_block(OVERVIEW)])
        assert result.stop_reason == "end_turn"
        assert acp.process.returncode is None


async def test_missing_api_key_is_named_when_a_session_starts(
    workspace: Path, tmp_path: Path
) -> None:
    args = ["--provider", "anthropic", "--api-key-env", "AGENT_SERVER_TEST_UNSET_KEY"]
    async with start_acp(args, tmp_path) as acp:
        with pytest.raises(RequestError) as refused:
            await acp.new_session(workspace)
        message = str(refused.value)
        assert "AGENT_SERVER_TEST_UNSET_KEY" in message and "sim" in message
        assert refused.value.data == {"code": "missing_api_key"}
