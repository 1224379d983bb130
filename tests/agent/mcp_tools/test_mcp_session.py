"""MCP tools in real sessions: the Python fixture server over stdio, the simulator over HTTP.

What a user would notice: the tools are there and run (asking first), the tool list the
model sees never changes under the cache until the user accepts, a broken server never
breaks the session, and a reload sends the same tool list byte for byte.
"""

from __future__ import annotations

import asyncio
import fcntl
import itertools
import json
import logging
import os
import signal
from pathlib import Path

import pytest

from agent_server.agent import events
from agent_server.agent.mcp.config import parse_server
from agent_server.agent.mcp.servers import McpServers
from agent_server.agent.tools import default_tools
from agent_server.llm.messages import ImageContent, ToolResultMessage
from agent_server.session.entries import CompactionEntry, MessageEntry, ToolListEntry
from agent_server.sim.request_checks import is_summary_request, prefix_problem
from tests.agent.mcp_tools.conftest import call, fixture_server, mcp_run, mcp_settings, turn

BUILTIN = [tool.spec.name for tool in default_tools()]
FX = ["crash", "big", "env", "grow", "picture", "shout"]


def results(run) -> list[ToolResultMessage]:
    return [
        e.message for e in run.session.ledger.tree.entries
        if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)
    ]


def tool_lists(run) -> list[ToolListEntry]:
    return [e for e in run.session.ledger.tree.entries if isinstance(e, ToolListEntry)]


async def test_tools_are_listed_in_a_stable_order_and_called_with_permission(
    tmp_path: Path,
) -> None:
    scenario = {"turns": [turn("Shout hello.", call("mcp__fx__shout", text="hello"))]}
    async with mcp_run(tmp_path, {"fx": fixture_server()}, scenario) as run:
        result = await run.session.run_turn("Shout hello.")
        assert result.stop_reason == "end_turn"
        assert run.tool_names(0) == BUILTIN + [f"mcp__fx__{name}" for name in sorted(FX)]
        assert [r.tool_name for r in run.asked] == ["mcp__fx__shout"]  # MCP tools ask by default
        assert run.asked[0].title == "fx: shout hello"
        shout = results(run)[-1]
        assert not shout.is_error and shout.text == "HELLO"
        recorded = tool_lists(run)
        assert len(recorded) == 1 and recorded[0].reason == "start"
        assert [t.name for t in recorded[0].tools] == run.tool_names(0)
        status = run.session.tools.status()
        assert status.servers[0].state == "ready" and status.pending is None


async def test_a_denied_call_does_not_reach_the_server(tmp_path: Path) -> None:
    scenario = {"turns": [turn("Crash it.", call("mcp__fx__crash"))]}
    async with mcp_run(tmp_path, {"fx": fixture_server()}, scenario) as run:
        run.answer = "reject_once"
        await run.session.run_turn("Crash it.")
        denied = results(run)[-1]
        assert denied.is_error and "denied" in denied.text
        assert run.session.tools.status().servers[0].state == "ready"


async def test_a_trusted_server_runs_without_asking(tmp_path: Path) -> None:
    scenario = {"turns": [turn("Shout hi.", call("mcp__fx__shout", text="hi"))]}
    async with mcp_run(tmp_path, {"fx": fixture_server(trusted=True)}, scenario) as run:
        await run.session.run_turn("Shout hi.")
        assert run.asked == []
        assert results(run)[-1].text == "HI"


async def test_a_changed_tool_list_waits_for_the_user_and_the_prefix_holds(
    tmp_path: Path,
) -> None:
    scenario = {
        "turns": [
            turn("Grow.", call("mcp__fx__grow")),
            turn("Shout a.", call("mcp__fx__shout", text="a")),
            turn("Double 4.", call("mcp__fx__extra", n=4)),
        ]
    }
    async with mcp_run(tmp_path, {"fx": fixture_server(trusted=True)}, scenario) as run:
        await run.session.run_turn("Grow.")
        status = await wait_for_pending(run)
        assert status.pending.added == ("mcp__fx__extra",)
        assert status.pending.tokens > 1000  # the whole prefix: system prompt, tools, history
        notices = [n.message for n in run.of(events.Notice) if "MCP tools changed" in n.message]
        assert len(notices) == 1 and "re-reads about" in notices[0]
        await run.session.run_turn("Shout a.")
        requests = run.requests
        assert "mcp__fx__extra" not in run.tool_names()
        for previous, current in itertools.pairwise(requests):
            assert prefix_problem(previous, current) is None  # byte-identical until accepted
        outcome = run.session.tools.accept()
        assert outcome.accepted and not outcome.deferred
        assert run.session.tools.status().pending is None
        before = len(run.requests)
        await run.session.run_turn("Double 4.")
        assert "mcp__fx__extra" in run.tool_names()
        assert prefix_problem(run.requests[before - 1], run.requests[before]) == (
            "'tools' changed between requests of one cache window"
        )
        assert results(run)[-1].text == "8"
        assert [e.reason for e in tool_lists(run)] == ["start", "accepted"]


async def test_a_compaction_takes_a_waiting_change_in(tmp_path: Path) -> None:
    chatter = [
        {"user": f"Tell me part {i}.", "steps": [{"text": f"Part {i}.", "textTokens": 1500}]}
        for i in range(3)
    ]
    scenario = {"turns": [turn("Grow.", call("mcp__fx__grow")), *chatter, turn("And now?")]}
    async with mcp_run(tmp_path, {"fx": fixture_server(trusted=True)}, scenario) as run:
        await run.session.run_turn("Grow.")
        await wait_for_pending(run)
        for i in range(3):
            await run.session.run_turn(f"Tell me part {i}.")
        assert "mcp__fx__extra" not in run.tool_names()
        outcome = await run.session.compact()
        assert outcome.outcome == "compacted"
        assert run.session.tools.status().pending is None
        await run.session.run_turn("And now?")
        assert "mcp__fx__extra" in run.tool_names()
        assert [e.reason for e in tool_lists(run)] == ["start", "compaction"]


async def test_a_threshold_compaction_in_a_turn_sends_the_change_with_its_next_request(
    tmp_path: Path,
) -> None:
    chatter = [
        {"user": f"Tell me part {i}.", "steps": [{"text": f"Part {i}.", "textTokens": 3500}]}
        for i in range(8)
    ]
    scenario = {"turns": [turn("Grow.", call("mcp__fx__grow")), *chatter]}
    async with mcp_run(tmp_path, {"fx": fixture_server(trusted=True)}, scenario) as run:
        await run.session.run_turn("Grow.")
        await wait_for_pending(run)
        for i in range(8):
            await run.session.run_turn(f"Tell me part {i}.")
        compacted = [
            e for e in run.of(events.CompactionFinished)
            if e.status == "completed" and e.reason == "threshold"
        ]
        assert len(compacted) == 1
        requests = run.requests
        summary = next(i for i, r in enumerate(requests) if is_summary_request(r))
        # The cached summary request shares the old prefix; the call after it, in the same
        # turn, sends the new list; nothing before the compaction did.
        assert summary > 0
        assert prefix_problem(requests[summary - 1], requests[summary]) is None
        assert "mcp__fx__extra" not in run.tool_names(summary)
        assert "mcp__fx__extra" in run.tool_names(summary + 1)
        assert all("mcp__fx__extra" not in run.tool_names(i) for i in range(summary))
        lists = tool_lists(run)
        assert [e.reason for e in lists] == ["start", "compaction"]
        entry = run.session.ledger.tree.get(lists[-1].parent_id or "")
        assert isinstance(entry, CompactionEntry)  # recorded right after the compaction
        assert run.session.tools.status().pending is None


async def test_a_crashed_server_answers_with_errors_and_the_list_stays(tmp_path: Path) -> None:
    scenario = {
        "turns": [
            turn("Crash it.", call("mcp__fx__crash")),
            turn("Shout b.", call("mcp__fx__shout", text="b")),
        ]
    }
    async with mcp_run(tmp_path, {"fx": fixture_server(trusted=True)}, scenario) as run:
        first = await run.session.run_turn("Crash it.")
        assert first.stop_reason == "end_turn"
        crash = results(run)[-1]
        assert crash.is_error and "fx" in crash.text
        status = await wait_for_state(run, "failed")
        server = status.servers[0]
        assert "closed the connection" in (server.error or "")
        assert "crashing on purpose" in server.stderr_tail
        assert status.pending is None  # a crash never changes the list
        second = await run.session.run_turn("Shout b.")
        assert second.stop_reason == "end_turn"
        shout = results(run)[-1]
        assert shout.is_error and "not running" in shout.text
        assert run.tool_names(0) == run.tool_names(-1)


async def test_a_server_that_fails_to_start_does_not_fail_the_session(tmp_path: Path) -> None:
    servers = {"broken": fixture_server("--fail", "--name", "broken"), "fx": fixture_server()}
    scenario = {"turns": [turn("Hello.")]}
    async with mcp_run(tmp_path, servers, scenario) as run:
        result = await run.session.run_turn("Hello.")
        assert result.stop_reason == "end_turn"
        assert not [n for n in run.tool_names() if n.startswith("mcp__broken")]
        assert "mcp__fx__shout" in run.tool_names()
        broken = run.session.tools.status().servers[0]
        assert broken.name == "broken" and broken.state == "failed"
        assert "bad credentials" in broken.stderr_tail
        missing = {"gone": {"command": "no-such-mcp-server-binary"}}
        async with mcp_run(tmp_path / "other", missing, scenario) as other:
            assert (await other.session.run_turn("Hello.")).stop_reason == "end_turn"
            assert "no such program" in (other.session.tools.status().servers[0].error or "")


async def test_a_reload_sends_the_recorded_list_even_with_the_server_down(
    tmp_path: Path,
) -> None:
    scenario = {
        "turns": [
            turn("Shout c.", call("mcp__fx__shout", text="c")),
            turn("Shout d.", call("mcp__fx__shout", text="d")),
        ]
    }
    async with mcp_run(tmp_path, {"fx": fixture_server(trusted=True)}, scenario) as run:
        await run.session.run_turn("Shout c.")
        first_tools = run.requests[0]["tools"]
        down = {"fx": fixture_server("--fail", trusted=True)}
        await run.reopen(mcp_settings(run.agent.settings.base_url, tmp_path, down))
        await run.session.run_turn("Shout d.")
        assert json.dumps(run.requests[-1]["tools"]) == json.dumps(first_tools)
        assert prefix_problem(run.requests[-3], run.requests[-1]) is None
        assert results(run)[-1].is_error and "not running" in results(run)[-1].text
        assert len(tool_lists(run)) == 1


async def test_a_server_added_later_waits_for_acceptance(tmp_path: Path) -> None:
    scenario = {"turns": [turn("One."), turn("Two.")]}
    async with mcp_run(tmp_path, {"fx": fixture_server()}, scenario) as run:
        await run.session.run_turn("One.")
        settings = run.agent.settings
        late = {"fx": fixture_server(), "zz": fixture_server("--slow", "1", "--name", "zz")}
        run.agent.update_settings(
            mcp_settings(settings.base_url, tmp_path, late)
        )
        status = await wait_for_pending(run)
        assert "mcp__zz__shout" in status.pending.added
        await run.session.run_turn("Two.")
        assert not [n for n in run.tool_names() if n.startswith("mcp__zz")]
        assert prefix_problem(run.requests[0], run.requests[-1]) is None


async def test_an_accepted_change_holds_when_the_server_closes_and_reopens_the_session(
    tmp_path: Path,
) -> None:
    """The LSP server closes the least recently used sessions and reopens them on their next
    request: the list the user accepted is the one sent, and nothing waits again."""
    scenario = {"turns": [turn("One."), turn("Two."), turn("Three.")]}
    async with mcp_run(tmp_path, {"fx": fixture_server()}, scenario) as run:
        await run.session.run_turn("One.")
        settings = run.agent.settings
        late = {"fx": fixture_server(), "zz": fixture_server("--name", "zz")}
        run.agent.update_settings(mcp_settings(settings.base_url, tmp_path, late))
        await wait_for_pending(run)
        assert run.session.tools.accept().accepted
        await run.session.run_turn("Two.")
        accepted = run.requests[-1]["tools"]
        assert "mcp__zz__shout" in run.tool_names()
        run.evict_and_open()
        await run.session.run_turn("Three.")
        assert json.dumps(run.requests[-1]["tools"]) == json.dumps(accepted)
        assert prefix_problem(run.requests[-2], run.requests[-1]) is None
        assert run.session.tools.status().pending is None
        assert [e.reason for e in tool_lists(run)] == ["start", "accepted"]


async def test_closing_a_session_with_a_waiting_change_logs_no_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Its servers stopping after its ledger is closed is not news: no "MCP listener failed"
    traceback in the server's log (the editor's output) at each close or eviction."""
    scenario = {"turns": [turn("One.")]}
    async with mcp_run(tmp_path, {"fx": fixture_server()}, scenario) as run:
        await run.session.run_turn("One.")
        settings = run.agent.settings
        late = {"fx": fixture_server(), "zz": fixture_server("--name", "zz")}
        run.agent.update_settings(mcp_settings(settings.base_url, tmp_path, late))
        await wait_for_pending(run)
        with caplog.at_level(logging.ERROR):
            await run.agent.close_session(run.session.session_id)
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_images_are_passed_on_and_long_output_is_bounded(tmp_path: Path) -> None:
    scenario = {
        "turns": [
            turn("Picture.", call("mcp__fx__picture")),
            turn("Big.", call("mcp__fx__big", lines=5000)),
        ]
    }
    async with mcp_run(tmp_path, {"fx": fixture_server(trusted=True)}, scenario) as run:
        await run.session.run_turn("Picture.")
        picture = results(run)[-1]
        images = [b for b in picture.content if isinstance(b, ImageContent)]
        assert len(images) == 1 and images[0].mime_type == "image/png"
        assert picture.text.startswith("one red pixel:")
        await run.session.run_turn("Big.")
        big = results(run)[-1].text
        # At most 2000 lines, and on sim-small's 32k window at most 18 KB (docs/tools.md).
        assert big.startswith("line 1\n") and "line 2001" not in big
        assert "18 KB limit" in big and len(big.encode()) < 18 * 1024 + 800  # with the notice
        spilled = big.split("Full output saved to ")[1].split(";")[0]
        assert Path(spilled).read_text().endswith("line 5000")  # noqa: ASYNC240


async def test_schemas_the_providers_would_refuse_are_sent_as_they_accept_them(
    tmp_path: Path,
) -> None:
    # One tool whose schema the API refuses would fail every request of the session.
    scenario = {"turns": [turn("Shout.", call("mcp__fx__shout", text="hi"))]}
    servers = {"fx": fixture_server("--odd-schemas", trusted=True)}
    async with mcp_run(tmp_path, servers, scenario) as run:
        result = await run.session.run_turn("Shout.")
        assert result.stop_reason == "end_turn", result.error
        assert results(run)[-1].text == "HI"
        sent = {tool["name"]: tool["input_schema"] for tool in run.requests[0]["tools"]}
        assert sent["mcp__fx__shout"] == {"properties": {}, "type": "object"}  # not JSON Schema
        assert sent["mcp__fx__big"] == {  # its top-level anyOf left out
            "properties": {"lines": {"type": "integer"}}, "type": "object",
        }


async def test_secrets_from_the_environment_never_reach_the_model(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("FIXTURE_TOKEN", "s3cret-value-123")
    server = fixture_server(trusted=True, env={"FIXTURE_TOKEN": "${FIXTURE_TOKEN}"})
    scenario = {"turns": [turn("Token?", call("mcp__fx__env", name="FIXTURE_TOKEN"))]}
    async with mcp_run(tmp_path, {"fx": server}, scenario) as run:
        await run.session.run_turn("Token?")
        answer = results(run)[-1].text
        assert answer.startswith("set, 16 characters") and "s3cret" not in answer
        ledger = run.session.ledger.path.read_text()
        assert "s3cret" not in ledger


async def wait_for_pending(run):
    return await wait_until(run, lambda status: status.pending is not None)


async def wait_for_state(run, state: str):
    return await wait_until(run, lambda status: status.servers[0].state == state)


async def wait_until(run, condition, attempts: int = 1200):
    import asyncio

    for _ in range(attempts):
        status = run.session.tools.status()
        if condition(status):
            return status
        await asyncio.sleep(0.05)
    raise AssertionError(f"MCP status never reached the condition: {run.session.tools.status()}")


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, exited and not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _lock_free(path: Path) -> bool:
    with path.open("rb") as ledger:
        try:
            fcntl.flock(ledger, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(ledger, fcntl.LOCK_UN)
        return True


async def test_closing_lets_the_session_go_before_its_servers_have_exited(tmp_path: Path) -> None:
    """The editor's window reloaded opens the session again at once: the new server waits
    for the ledger, which is let go before the MCP servers are stopped (the SDK gives a server
    that does not exit 2 s before it ends it)."""
    scenario = {"turns": [turn("Shout hello.", call("mcp__fx__shout", text="hello"))]}
    pid_file = tmp_path / "fx.pid"
    server = fixture_server("--linger", "30", "--pid-file", str(pid_file))
    async with mcp_run(tmp_path, {"fx": server}, scenario) as run:
        await run.session.run_turn("Shout hello.")
        pid = int(pid_file.read_text())
        ledger = run.session.ledger.path
        assert _alive(pid) and not _lock_free(ledger)
        closing = asyncio.create_task(run.agent.close())
        while not _lock_free(ledger):
            await asyncio.sleep(0.01)
        assert _alive(pid), "the ledger was held until the MCP server had exited"
        await closing
        assert not _alive(pid)


async def test_a_server_restarted_while_the_session_closes_is_not_left_running(
    tmp_path: Path,
) -> None:
    """A settings change restarts a session's changed servers in the background; if the
    session closes meanwhile (the LSP server closes idle sessions beyond its bound), the new
    server must not start after the close has stopped the others: nobody would stop it."""
    old_config = parse_server(
        "fx", fixture_server("--linger", "2"), "test", workspace=tmp_path, env=os.environ
    )
    new_pid = tmp_path / "new.pid"
    new_config = parse_server(
        "fx", fixture_server("--pid-file", str(new_pid)), "test", workspace=tmp_path,
        env=os.environ,
    )
    servers = McpServers([old_config], state_dir=tmp_path)
    await servers.wait_settled()
    reconfiguring = asyncio.create_task(servers.reconfigure([new_config]))
    await asyncio.sleep(0.2)  # stopping the old server, which lingers
    await servers.close()
    await reconfiguring
    for _ in range(50):  # a new server writes its pid file within a second of starting
        if new_pid.exists():
            os.kill(int(new_pid.read_text()), signal.SIGKILL)
            raise AssertionError("the new server was started after the close")
        await asyncio.sleep(0.1)
