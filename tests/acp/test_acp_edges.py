"""What real ACP clients found wrong (issue 28), each over real stdio: the model picker, tool
calls left open by a cancel, MCP failures, the tools-changed notice, sessions never
prompted, image types, titles, MCP images, rejected writes, MCP tool kinds on replay."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, image_block, text_block
from acp.schema import (
    EmbeddedResourceContentBlock,
    HttpMcpServer,
    McpServerStdio,
    ResourceContentBlock,
    TextResourceContents,
)

from agent_server.acp.updates import code_block
from agent_server.agent.settings import McpOptions
from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.acp.conftest import (
    OVERVIEW,
    WRITE_NOTE,
    AcpProcess,
    RecordingClient,
    acp_args,
    start_acp,
)
from tests.acp.test_acp_docs import DOC
from tests.acp.test_acp_session import wait_for
from tests.agent.mcp_tools.conftest import FIXTURE_SERVER, call, turn

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c63f8cfc0f01f0005000201b0a4d5b30000000049454e44ae426082"
    )
).decode("ascii")


def fixture(name: str, *args: str) -> McpServerStdio:
    return McpServerStdio(
        name=name, command=sys.executable, args=[str(FIXTURE_SERVER), *args], env=[]
    )


def all_closed(acp: AcpProcess) -> bool:
    """Every tool call the client saw has a final status."""
    results = acp.client.tool_results()
    return all(call.tool_call_id in results for call in acp.client.of("tool_call"))


def scripted(*turns: dict[str, Any]) -> Simulator:
    return Simulator(scenario=parse_scenario({"turns": list(turns)}))


# --- the model picker -------------------------------------------------------------------


def house_model_args(sim: SimServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Anthropic's API (the simulator) with `house-model`: a model the provider's catalogue
    does not offer (its vendor is not Anthropic's), without reasoning."""
    models = tmp_path / "models.json"
    models.write_text(
        json.dumps({"models": [{"id": "house-model", "contextWindow": 50000, "maxOutput": 4096}]})
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-a-secret")
    return [
        "--provider", "anthropic", "--base-url", sim.base_url, "--model", "house-model",
        "--models-file", str(models), "--sessions-dir", str(tmp_path / "sessions"),
    ]


async def test_the_model_picker_offers_only_what_it_takes_and_can_switch_back(
    workspace: Path, sim: SimServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = house_model_args(sim, tmp_path, monkeypatch)
    async with start_acp(args, tmp_path) as acp:
        session = await acp.conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = session.session_id

        def picker(options: Any) -> Any:
            return next(o for o in options if o.id == "model")

        model = picker(session.config_options)
        offered = [option.value for option in model.options]
        assert model.current_value == "house-model" and "house-model" in offered
        # Every value the picker offers is taken, the current one first.
        for value in [model.current_value, *offered[1:3], "house-model"]:
            answer = await acp.conn.set_config_option(
                config_id="model", session_id=sid, value=value
            )
            shown = picker(answer.config_options)
            assert shown.current_value == value
            assert value in [option.value for option in shown.options]
        with pytest.raises(RequestError) as refused:
            await acp.conn.set_config_option(config_id="model", session_id=sid, value="nope")
        assert refused.value.code == -32602
        # After a prompt on another model, the one the session started with is still offered.
        await acp.conn.set_config_option(config_id="model", session_id=sid, value=offered[1])
        assert (await acp.prompt(sid, OVERVIEW)).stop_reason == "end_turn"
        back = await acp.conn.set_config_option(
            config_id="model", session_id=sid, value="house-model"
        )
        assert picker(back.config_options).current_value == "house-model"


async def test_the_thinking_level_is_offered_only_for_a_model_that_takes_it(
    workspace: Path, sim: SimServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = house_model_args(sim, tmp_path, monkeypatch)  # no thinking level changes its calls

    def option(options: Any, config_id: str) -> Any:
        return next((o for o in options or () if o.id == config_id), None)

    async with start_acp(args, tmp_path) as acp:
        session = await acp.conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = session.session_id
        assert option(session.config_options, "thinking") is None
        with pytest.raises(RequestError) as refused:
            await acp.conn.set_config_option(config_id="thinking", session_id=sid, value="high")
        assert refused.value.code == -32602
        # A model that thinks on request brings the option, every level of it taken.
        answer = None
        for value in [o.value for o in option(session.config_options, "model").options]:
            answer = await acp.conn.set_config_option(config_id="model", session_id=sid, value=value)
            if option(answer.config_options, "thinking") is not None:
                break
        assert answer is not None
        # The chosen model is used from the next prompt.
        assert (await acp.prompt(sid, OVERVIEW)).stop_reason == "end_turn"
        thinking = option(answer.config_options, "thinking")
        assert thinking is not None and thinking.category == "thought_level"
        assert thinking.current_value == "off"
        for level in [o.value for o in thinking.options]:
            answer = await acp.conn.set_config_option(
                config_id="thinking", session_id=sid, value=level
            )
            assert option(answer.config_options, "thinking").current_value == level
        # Each change is told with what it costs (a quoted notice for this client).
        notes = [
            u.content.text for u in acp.client.of("agent_message_chunk")
            if (u.message_id or "").startswith("notice-")
        ]
        assert len(notes) == len(thinking.options) - 1, notes  # "off" was the level already
        with pytest.raises(RequestError) as unknown:
            await acp.conn.set_config_option(config_id="thinking", session_id=sid, value="max")
        assert unknown.value.code == -32602



# --- cancelled tool calls -----------------------------------------------------------------


async def test_a_tool_call_cancelled_while_running_is_closed_on_the_wire(
    workspace: Path, tmp_path: Path
) -> None:
    simulator = scripted(turn("Wait a while.", call("bash", command="sleep 120")))
    async with (
        SimServer(simulator) as sim,
        start_acp(acp_args(sim, tmp_path, "--mode", "allowAll"), tmp_path) as acp,
    ):
        sid = await acp.new_session(workspace)
        running = asyncio.ensure_future(acp.prompt(sid, "Wait a while."))
        await wait_for(
            lambda: any(u.status == "in_progress" for u in acp.client.of("tool_call_update"))
        )
        await acp.conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(running, 60)).stop_reason == "cancelled"
        assert acp.client.of("tool_call") and all_closed(acp)
        # Closed by the stopped call's own result (the agent records it as aborted), in the
        # words docs/acp.md quotes.
        last = list(acp.client.tool_results().values())[-1]
        assert last.status == "failed"
        assert last.content[-1].content.text == code_block(documented_cancel_text())


async def test_a_tool_call_cancelled_during_its_permission_question_is_closed(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    client = RecordingClient(answer=lambda _call, _options: None, hold=asyncio.Event())
    async with start_acp(acp_args(sim, tmp_path, "--mode", "ask"), tmp_path, client) as acp:
        sid = await acp.new_session(workspace)
        running = asyncio.ensure_future(acp.prompt(sid, OVERVIEW))
        await wait_for(lambda: bool(client.questions))
        await acp.conn.cancel(session_id=sid)
        assert client.hold is not None
        client.hold.set()
        assert (await asyncio.wait_for(running, 60)).stop_reason == "cancelled"
        assert acp.client.of("tool_call") and all_closed(acp)
        asked = client.questions[0].tool_call_id
        closed = acp.client.tool_results()[asked]
        assert closed.status == "failed"
        assert closed.content[-1].content.text == code_block(documented_cancel_text())


def documented_cancel_text() -> str:
    """What docs/acp.md says a cancelled tool call's card reads (its `session/cancel` row)."""
    row = next(
        line for line in DOC.read_text(encoding="utf-8").splitlines()
        if line.startswith("| `session/cancel` |")
    )
    quoted = re.search(r'gets a `failed` update \("([^"]+)"', row)
    assert quoted, row
    return quoted.group(1)


# --- MCP failures and changes ---------------------------------------------------------------


async def test_mcp_servers_that_exit_or_do_not_answer_are_told_to_the_client(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        failing = fixture("db", "--fail")
        dead = HttpMcpServer(type="http", name="web", url="http://127.0.0.1:9/mcp", headers=[])
        session = await acp.conn.new_session(cwd=str(workspace), mcp_servers=[failing, dead])
        sid = session.session_id
        await wait_for(lambda: "MCP server db failed" in acp.client.text(sid))
        await wait_for(lambda: "MCP server web failed" in acp.client.text(sid))
        assert "bad credentials" in acp.client.text(sid)  # its stderr, to tell what to fix
        assert (await acp.prompt(sid, OVERVIEW)).stop_reason == "end_turn"


async def test_a_hanging_mcp_server_is_announced_before_the_first_request_waits(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    # The server never starts: the prompt waits the setting's 8 s for it (time enough to see
    # the notice first on a busy machine), and the server is left starting, not failed.
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"mcp": {"startupTimeout": 600, "firstRequestWait": 8}}))
    args = acp_args(sim, tmp_path, "--config", str(config))
    async with start_acp(args, tmp_path) as acp:
        slow = fixture("slowpoke", "--slow", "600")
        session = await acp.conn.new_session(cwd=str(workspace), mcp_servers=[slow])
        sid = session.session_id
        running = asyncio.ensure_future(acp.prompt(sid, OVERVIEW))
        await wait_for(lambda: "Waiting for MCP server slowpoke" in acp.client.text(sid))
        assert "to start (up to 8 s;" in acp.client.text(sid)
        assert not running.done()
        assert (await asyncio.wait_for(running, 120)).stop_reason == "end_turn"
        assert "MCP server slowpoke failed" not in acp.client.text(sid)


async def test_a_hanging_mcp_server_does_not_hold_the_first_prompt_for_its_timeout(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """Issue 48: with the default startup timeout a hanging server held the first prompt 34 s.
    The prompt now waits a few seconds at most (mcp.firstRequestWait); the server, still
    starting, is neither failed nor waited for."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"mcp": {"startupTimeout": 600}}))
    args = acp_args(sim, tmp_path, "--config", str(config))
    async with start_acp(args, tmp_path) as acp:
        slow = fixture("slowpoke", "--slow", "600")
        session = await acp.conn.new_session(cwd=str(workspace), mcp_servers=[slow])
        sid = session.session_id
        answer = await asyncio.wait_for(acp.prompt(sid, OVERVIEW), 120)
        assert answer.stop_reason == "end_turn"
        text = acp.client.text(sid)
        assert f"to start (up to {McpOptions().first_request_wait:g} s;" in text
        assert "MCP server slowpoke failed" not in text  # still starting: not waited out


async def test_the_tools_changed_notice_names_what_an_acp_user_can_do(
    workspace: Path, tmp_path: Path
) -> None:
    simulator = scripted(
        turn("Grow.", call("mcp__fx__grow")), turn("Again.", call("mcp__fx__extra", n=2))
    )
    async with (
        SimServer(simulator) as sim,
        start_acp(acp_args(sim, tmp_path, "--mode", "allowAll"), tmp_path) as acp,
    ):
        session = await acp.conn.new_session(cwd=str(workspace), mcp_servers=[fixture("fx")])
        sid = session.session_id
        await wait_for(lambda: bool(acp.client.of("available_commands_update")))
        commands = acp.client.of("available_commands_update")[0].available_commands
        assert "tools" in [command.name for command in commands]
        await acp.prompt(sid, "Grow.")
        await wait_for(lambda: "The MCP tools changed" in acp.client.text(sid))
        text = acp.client.text(sid)
        assert "send /tools" in text and "accept the change" not in text
        await acp.prompt(sid, "/tools")
        assert "used from the next request" in acp.client.text(sid)
        await acp.prompt(sid, "Again.")
        tools = [t["name"] for t in simulator.records[-1].request["tools"]]
        assert "mcp__fx__extra" in tools


async def test_mcp_images_reach_the_client_and_kinds_match_on_replay(
    workspace: Path, tmp_path: Path
) -> None:
    simulator = scripted(turn("Show me.", call("mcp__fx__picture")))
    async with SimServer(simulator) as sim:
        args = acp_args(sim, tmp_path, "--mode", "allowAll")
        async with start_acp(args, tmp_path) as acp:
            session = await acp.conn.new_session(cwd=str(workspace), mcp_servers=[fixture("fx")])
            sid = session.session_id
            await acp.prompt(sid, "Show me.")
            result = list(acp.client.tool_results().values())[-1]
            images = [c.content for c in result.content if c.content.type == "image"]
            assert images and images[0].mime_type == "image/png" and images[0].data
            live = [(c.title, c.kind) for c in acp.client.of("tool_call")]
        async with start_acp(args, tmp_path) as again:
            await again.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            replayed = [(c.title, c.kind) for c in again.client.of("tool_call")]
            result = list(again.client.tool_results().values())[-1]
            reloaded = [c.content for c in result.content if c.content.type == "image"]
        assert replayed == live and live[0][1] == "read"  # the server's readOnlyHint
        assert [(i.mime_type, i.data) for i in reloaded] == [(i.mime_type, i.data) for i in images]


# --- sessions, prompts, titles, writes ------------------------------------------------------


async def test_a_session_never_prompted_can_be_loaded_by_another_process(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as first:
        sid = await first.new_session(workspace)
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as second:
        listed = await second.conn.list_sessions(cwd=str(workspace))
        assert sid in [s.session_id for s in listed.sessions]
        await second.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        assert (await second.prompt(sid, OVERVIEW)).stop_reason == "end_turn"


async def test_images_of_types_no_provider_takes_are_refused(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        sid = await acp.new_session(workspace)
        with pytest.raises(RequestError) as refused:
            await acp.conn.prompt(
                session_id=sid, prompt=[text_block("What is this?"), image_block(PNG, "image/bmp")]
            )
        assert refused.value.code == -32602 and "image/bmp" in str(refused.value)
        assert not sim.simulator.records  # nothing reached the provider
        answer = await acp.conn.prompt(
            session_id=sid, prompt=[text_block(OVERVIEW), image_block(PNG, "image/png")]
        )
        assert answer.stop_reason == "end_turn"


async def test_the_title_is_what_the_user_typed_not_the_attached_files_markup(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        sid = await acp.new_session(workspace)
        readme = (workspace / "README.md").as_uri()
        attached = EmbeddedResourceContentBlock(
            type="resource",
            resource=TextResourceContents(
                uri=readme, text="# <b>stockroom</b>", mime_type="text/markdown"
            ),
        )
        await acp.conn.prompt(session_id=sid, prompt=[attached, text_block(OVERVIEW)])
        titles = [u.title for u in acp.client.of("session_info_update", sid)]
        assert titles == [OVERVIEW[:80]]
        other = await acp.new_session(workspace)
        await acp.conn.prompt(session_id=other, prompt=[attached])
        assert [u.title for u in acp.client.of("session_info_update", other)] == ["README.md"]


async def test_a_rejected_write_shows_no_diff(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    client = RecordingClient(
        answer=lambda call, _options: None if call.kind == "edit" else "allow_once"
    )
    async with start_acp(acp_args(sim, tmp_path, "--mode", "ask"), tmp_path, client) as acp:
        sid = await acp.new_session(workspace)
        await acp.prompt(sid, WRITE_NOTE)
        writes = [c for c in client.of("tool_call") if c.kind == "edit"]
        assert writes and writes[0].content  # the proposed diff, for the question
        refused = client.tool_results()[writes[0].tool_call_id]
        assert refused.status == "failed"
        assert all(block.type != "diff" for block in refused.content)


async def test_each_command_answer_is_a_message_of_its_own(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """ACP's `messageId`: chunks that share one are one message, so two /usage answers in a
    row must not share one (a client would join them into one message)."""
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        sid = await acp.new_session(workspace)
        for command in ("/usage", "/usage", "/pins", "/pins"):
            await acp.prompt(sid, command)
        ids = [u.message_id for u in acp.client.of("agent_message_chunk", sid)]
        assert len(ids) == 4 and len(set(ids)) == 4, ids


async def test_words_after_a_command_that_takes_none_are_refused_not_dropped(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """`/usage why so high?` neither runs /usage dropping the question unsaid nor sends it:
    the answer says so; a command that takes words still reads them."""
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        sid = await acp.new_session(workspace)
        requests = len(sim.simulator.records)
        await acp.prompt(sid, "/usage why so high?")
        await acp.prompt(sid, "/remember answer in French")
        texts = [u.content.text for u in acp.client.of("agent_message_chunk", sid)]
        assert texts[0] == "/usage takes nothing after it: nothing was done and nothing sent."
        assert len(sim.simulator.records) == requests
        pins = await acp.prompt(sid, "/pins")
        assert pins is not None
        assert "answer in French" in "".join(
            u.content.text for u in acp.client.of("agent_message_chunk", sid)
        )


# --- ACP 1.7: close, resume, delete, $/cancel_request -------------------------------------


async def test_close_stops_the_sessions_mcp_servers_and_resume_reopens_it_quietly(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        caps = acp.init.agent_capabilities
        assert caps is not None and caps.session_capabilities is not None
        assert caps.session_capabilities.close is not None
        assert caps.session_capabilities.resume is not None
        assert caps.session_capabilities.delete is not None
        pid_file = tmp_path / "server.pid"
        # A real MCP server (one that never answered would hold the prompt for the start-up
        # timeout, 30 s) that says its process id.
        server = fixture("pid", "--pid-file", str(pid_file))
        session = await acp.conn.new_session(cwd=str(workspace), mcp_servers=[server])
        sid = session.session_id
        await acp.prompt(sid, OVERVIEW)
        await wait_for(pid_file.exists)
        pid = int(pid_file.read_text())
        await acp.conn.close_session(session_id=sid)

        def gone() -> bool:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"

        await wait_for(gone)
        with pytest.raises(RequestError) as closed:
            await acp.prompt(sid, OVERVIEW)
        assert closed.value.code == -32002

        seen = len(acp.client.updates)
        resumed = await acp.conn.resume_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        assert resumed.modes is not None
        replayed = [u for _, u in acp.client.updates[seen:] if u.session_update == "tool_call"]
        assert not replayed  # no history: the client still shows it
        assert (await acp.prompt(sid, OVERVIEW)).stop_reason == "end_turn"


async def test_a_closed_session_sends_nothing_more(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    """Its MCP servers stop with it, and that is no news to the editor that closed it (it
    got "MCP server fx stopped." for a session it no longer had)."""
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        session = await acp.conn.new_session(cwd=str(workspace), mcp_servers=[fixture("fx")])
        sid = session.session_id
        await acp.prompt(sid, OVERVIEW)
        seen = len(acp.client.updates)
        await acp.conn.close_session(session_id=sid)
        other = await acp.new_session(workspace)
        await acp.prompt(other, OVERVIEW)  # what was queued before is out before its answer
        assert [u for s, u in acp.client.updates[seen:] if s == sid] == []


@pytest.mark.parametrize("reopen", ["resume", "load"])
async def test_a_reopened_session_tells_a_change_of_thinking_level_like_a_new_one(
    workspace: Path, sim: SimServer, tmp_path: Path, reopen: str
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        sid = await acp.new_session(workspace)  # sim-small thinks on request

        async def told(level: str) -> list[str]:
            seen = len(acp.client.updates)
            await acp.conn.set_config_option(config_id="thinking", session_id=sid, value=level)
            await acp.prompt(sid, "/usage")  # answered after every update before it
            return [
                u.content.text for s, u in acp.client.updates[seen:]
                if s == sid and (getattr(u, "message_id", None) or "").startswith("notice-")
            ]

        assert len(await told("low")) == 1
        await acp.prompt(sid, OVERVIEW)
        await acp.conn.close_session(session_id=sid)
        if reopen == "resume":
            await acp.conn.resume_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        else:
            await acp.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        notes = await told("high")
        assert len(notes) == 1 and "Thinking: high effort (was low effort)" in notes[0], notes


async def test_delete_removes_the_session_for_good(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        sid = await acp.new_session(workspace)
        await acp.prompt(sid, OVERVIEW)
        assert await acp.request("session/delete", {"sessionId": sid}) == {}
        listed = await acp.conn.list_sessions(cwd=str(workspace))
        assert sid not in [s.session_id for s in listed.sessions]
        with pytest.raises(RequestError) as unknown:
            await acp.request("session/delete", {"sessionId": sid})
        assert unknown.value.code == -32002
        with pytest.raises(RequestError) as bad:
            await acp.request("session/delete", {"id": sid})
        assert bad.value.code == -32602


async def test_cancel_request_for_a_running_prompt_cancels_the_turn(
    workspace: Path, tmp_path: Path
) -> None:
    simulator = scripted(turn("Wait a while.", call("bash", command="sleep 120")))
    async with (
        SimServer(simulator) as sim,
        start_acp(acp_args(sim, tmp_path, "--mode", "allowAll"), tmp_path) as acp,
    ):
        sid = await acp.new_session(workspace)
        request_id = acp.next_request_id()  # the id the prompt below is sent with
        running = asyncio.ensure_future(acp.prompt(sid, "Wait a while."))
        await wait_for(
            lambda: any(u.status == "in_progress" for u in acp.client.of("tool_call_update"))
        )
        await acp.notify("$/cancel_request", {"requestId": request_id + 1})  # none
        await asyncio.sleep(0.5)
        assert not running.done()
        await acp.notify("$/cancel_request", {"requestId": request_id})
        assert (await asyncio.wait_for(running, 60)).stop_reason == "cancelled"
        assert all_closed(acp)


async def test_session_cancel_sent_as_a_request_cancels_and_is_answered(
    workspace: Path, tmp_path: Path
) -> None:
    """ACP defines session/cancel as a notification; a client that gives it an id is
    answered (an empty result) rather than told the method does not exist."""
    simulator = scripted(turn("Wait a while.", call("bash", command="sleep 120")))
    async with (
        SimServer(simulator) as sim,
        start_acp(acp_args(sim, tmp_path, "--mode", "allowAll"), tmp_path) as acp,
    ):
        sid = await acp.new_session(workspace)
        running = asyncio.ensure_future(acp.prompt(sid, "Wait a while."))
        await wait_for(
            lambda: any(u.status == "in_progress" for u in acp.client.of("tool_call_update"))
        )
        with pytest.raises(RequestError) as bad:
            await acp.request("session/cancel", {"session": sid})
        assert bad.value.code == -32602
        assert not running.done()
        assert await acp.request("session/cancel", {"sessionId": sid}) == {}
        assert (await asyncio.wait_for(running, 60)).stop_reason == "cancelled"
        assert all_closed(acp)


async def test_a_reload_shows_the_plan_and_the_attached_files_as_they_were_sent(
    workspace: Path, tmp_path: Path
) -> None:
    entries = [
        {"content": "reproduce", "status": "completed"},
        {"content": "fix the parser", "status": "in_progress", "priority": "high"},
    ]
    simulator = scripted(turn("Plan the fix.", call("plan", entries=entries)))
    readme, src = (workspace / "README.md").as_uri(), (workspace / "src").as_uri()
    prompt = [
        text_block("Plan the fix."),
        EmbeddedResourceContentBlock(
            type="resource",
            resource=TextResourceContents(
                uri=readme, text="# <b>stockroom</b>\n", mime_type="text/markdown"
            ),
        ),
        ResourceContentBlock(type="resource_link", name="src", uri=src),
    ]
    async with SimServer(simulator) as sim:
        args = acp_args(sim, tmp_path)
        async with start_acp(args, tmp_path) as acp:
            sid = await acp.new_session(workspace)
            await acp.conn.prompt(session_id=sid, prompt=prompt)
            live = [u.entries for u in acp.client.of("plan")]
        async with start_acp(args, tmp_path) as again:
            await again.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            shown = [u.content for u in again.client.of("user_message_chunk")]
            replayed = [u.entries for u in again.client.of("plan")]
    assert live and replayed == live
    assert [(b.content, b.status, b.priority) for b in replayed[0]] == [
        ("reproduce", "completed", "medium"),
        ("fix the parser", "in_progress", "high"),
    ]
    # Each block as the client sent it: the file as an attachment, not the model's markup.
    assert [b.type for b in shown] == ["text", "resource", "resource_link"]
    assert (shown[1].resource.uri, shown[1].resource.text) == (readme, "# <b>stockroom</b>\n")
    assert (shown[2].name, shown[2].uri) == ("src", src)
