"""The agent end to end against the simulator, with real tools in a temporary workspace."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import itertools
import json
import os
import random
import signal
from pathlib import Path

import pytest
from rich.console import Console

from agent_server.agent import events
from agent_server.agent.settings import AgentSettings, ToolOptions
from agent_server.agent.workspace import WorkspaceAgent
from agent_server.console.sessions import open_store, show_session, write_markdown
from agent_server.context.projection import project
from agent_server.context.trigger import CompactionSettings
from agent_server.llm.messages import AssistantMessage, ToolResultMessage, UserMessage
from agent_server.lsp.items import transcript_items
from agent_server.session.entries import CompactionEntry, MessageEntry
from agent_server.sim.request_checks import check_requests
from agent_server.sim.scenario import default_scenario
from tests.agent.conftest import agent_run


def write_cjk(workspace: Path, name: str, chars: int, seed: int = 1) -> None:
    """Random CJK ideographs in lines of 40: a token a character."""
    rng = random.Random(seed)
    text = "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(chars))
    (workspace / name).write_text("\n".join(text[i : i + 40] for i in range(0, chars, 40)))


def write_blob(workspace: Path, name: str, chars: int, seed: int = 1) -> None:
    """Base64 text: chars/4 under-estimates it about twice, as with real tokenizers."""
    data = random.Random(seed).randbytes(chars * 3 // 4)
    (workspace / name).write_text(base64.encodebytes(data).decode())


def assert_ledger_consistent(run) -> None:  # type: ignore[no-untyped-def]
    """Every tool call answered exactly once, no result without its call, on every branch."""
    entries = run.session.ledger.tree.branch()
    calls, results = [], []
    for entry in entries:
        if isinstance(entry, MessageEntry):
            if isinstance(entry.message, AssistantMessage):
                calls += [c.id for c in entry.message.tool_calls]
            elif isinstance(entry.message, ToolResultMessage):
                results.append(entry.message.tool_call_id)
    assert sorted(calls) == sorted(results)
    projected = project(run.session.ledger.tree.projection_entries()).messages
    assert not isinstance(projected[0], ToolResultMessage)
    for before, after in itertools.pairwise(projected):
        assert not (isinstance(before, UserMessage) and isinstance(after, UserMessage))


async def test_scripted_session_compacts_and_keeps_every_invariant(tmp_path: Path) -> None:
    async with agent_run(tmp_path) as run:
        for prompt in default_scenario().prompts:
            result = await run.session.run_turn(prompt)
            assert result.stop_reason == "end_turn", result
        check = check_requests(run.sim.records)
        assert check.ok, check.summary()
        assert check.requests - check.summary_requests >= 60
        completed = [e for e in run.of(events.CompactionFinished) if e.status == "completed"]
        assert len(completed) >= 2
        assert check.windows == len(completed) + 1
        assert check.cache_read_share >= 0.85, check.summary()
        compactions = [e for e in run.session.ledger.tree.entries if isinstance(e, CompactionEntry)]
        assert len(compactions) == len(completed)
        # The cached summary requests read the prefix the turn's last request cached and write
        # nothing: after the compaction no request begins with their messages.
        cached_summaries = [
            r for r in run.model_requests if r.source == "summary" and "tools" in r.request
        ]
        assert cached_summaries
        for record in cached_summaries:
            assert record.tokens.cache_write == 0, record.tokens
            assert record.tokens.cache_read > 0, record.tokens
        # Iterative summaries: each later summary folds in the files of the ones before.
        assert set(compactions[0].details.read_files) <= set(compactions[-1].details.read_files)
        assert_ledger_consistent(run)


BLOB_TURN = {
    "turns": [
        {
            "user": "Read the blob.",
            "steps": [
                {
                    "tools": [
                        {"name": "read", "arguments": {"path": f"blob{i}.b64"}} for i in range(3)
                    ]
                },
                {"text": "Here is a long answer.", "textTokens": 4000},
            ],
        },
        {"user": "Go on.", "steps": [{"text": "Continuing from the summary."}]},
    ]
}


async def test_output_cut_off_by_the_window_forces_a_compaction_on_the_next_call(
    tmp_path: Path,
) -> None:
    async with agent_run(tmp_path, scenario=BLOB_TURN, sample_workspace=False) as run:
        # Each read stays under the window-relative bound of one result (about 18 KB here);
        # together they leave the answer no room.
        for i in range(3):
            write_blob(run.workspace, f"blob{i}.b64", 17_000, seed=i)
        first = await run.session.run_turn("Read the blob.")
        assert first.stop_reason == "max_tokens"
        last = run.session.ledger.tree.branch()[-1]
        assert isinstance(last, MessageEntry) and last.message.stop_reason == "contextOverflow"
        requests_before = len(run.model_requests)
        second = await run.session.run_turn("Go on.")
        assert second.stop_reason == "end_turn"
        overflow = run.of(events.OverflowHappened)
        assert [(o.kind, o.action) for o in overflow] == [("truncated", "compacting")]
        finished = run.of(events.CompactionFinished)
        assert [(f.reason, f.status) for f in finished] == [("truncation", "completed")]
        after = run.model_requests[requests_before:]
        assert after[0].source == "summary"  # the compaction came first
        assert_ledger_consistent(run)


def reading_turns(*names: str) -> dict[str, object]:
    """A first turn that reads a base64 blob (history to compact), then one that reads
    `names` in one step."""
    return {
        "turns": [
            {
                "user": "Read the first blob.",
                "steps": [
                    {"tools": [{"name": "read", "arguments": {"path": "first.b64"}}]},
                    {"text": "Read it."},
                ],
            },
            {
                "user": "Now read these.",
                "steps": [
                    {"tools": [{"name": "read", "arguments": {"path": n}} for n in names]},
                    {"text": "Read them."},
                ],
            },
        ]
    }


async def test_prompt_too_long_gives_exactly_one_compaction_and_one_retry(tmp_path: Path) -> None:
    async with agent_run(
        tmp_path, scenario=reading_turns("a.txt", "b.txt"), sample_workspace=False
    ) as run:
        write_blob(run.workspace, "first.b64", 12_000)
        for seed, name in enumerate("ab"):
            write_cjk(run.workspace, f"{name}.txt", 2_000, seed=seed)
        first = await run.session.run_turn("Read the first blob.")
        assert first.stop_reason == "end_turn", first
        before = len(run.model_requests)
        # The estimate was low (the provider counts its own way): the request after the reads
        # is refused as too long.
        run.sim.set_faults("overflow@2")
        result = await run.session.run_turn("Now read these.")
        assert result.stop_reason == "end_turn", result
        statuses = [(r.status, r.source) for r in run.model_requests[before:]]
        # The refused request, one compaction (its summary; with the split turn's early part
        # summarised too when the turn is larger than the kept tail), then the one retry.
        assert [status for status, _ in statuses[:2]] == [200, 400]
        assert {source for _, source in statuses[2:-1]} == {"summary"}
        assert statuses[-1][0] == 200 and statuses[-1][1] != "summary"
        assert len([e for e in run.session.ledger.tree.entries if isinstance(e, CompactionEntry)]) == 1
        overflow = [(o.kind, o.action) for o in run.of(events.OverflowHappened)]
        assert overflow == [("rejected", "compacting"), ("rejected", "retrying")]
        # The retry still carries the prompt and the results the model was waiting for.
        retry = json.dumps(run.model_requests[-1].request, ensure_ascii=False)
        assert "Now read these." in retry
        assert all((run.workspace / f"{n}.txt").read_text()[:40] in retry for n in "ab")
        assert_ledger_consistent(run)


async def test_cjk_reads_count_a_token_a_character_and_compact_before_the_provider_refuses(
    tmp_path: Path,
) -> None:
    async with agent_run(
        tmp_path, scenario=reading_turns("a.txt", "b.txt", "c.txt", "d.txt"),
        sample_workspace=False,
    ) as run:
        write_blob(run.workspace, "first.b64", 12_000)
        # Each read stays under the window-relative bound of one result; together they fill
        # most of the window. Counted at 4 characters a token (as before), they seemed to fit,
        # and the provider refused the request.
        for seed, name in enumerate("abcd"):
            write_cjk(run.workspace, f"{name}.txt", 5_600, seed=seed)
        await run.session.run_turn("Read the first blob.")
        result = await run.session.run_turn("Now read these.")
        assert result.stop_reason == "end_turn", result
        assert [r.status for r in run.model_requests if r.status != 200] == []
        assert [r.source for r in run.model_requests].count("summary") == 1
        assert run.of(events.OverflowHappened) == []
        assert_ledger_consistent(run)


async def test_a_message_larger_than_the_window_is_refused_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    async with agent_run(tmp_path, sample_workspace=False) as run:
        huge = "lorem ipsum dolor sit amet " * 8000  # ~54k tokens: larger than sim-small's window
        result = await run.session.run_turn(huge)
        assert result.stop_reason == "error"
        assert result.error_code == "prompt_too_large"
        assert result.error and "Shorten it" in result.error
        assert run.model_requests == []  # refused before anything was sent
        refusals = [e.decision for e in run.of(events.ContextDecided)]
        assert [(d.action, d.reason) for d in refusals] == [("refuse", "oversized")]
        # The session went back to before the prompt by itself: the next one works.
        again = await run.session.run_turn(
            "Give me an overview of this repository: what it does and how it is laid out."
        )
        assert again.stop_reason == "end_turn", again
        assert all("lorem ipsum" not in json.dumps(r.request) for r in run.model_requests)


async def test_rate_limits_overloads_and_a_dropped_stream_still_finish_the_turn(
    tmp_path: Path,
) -> None:
    async with agent_run(tmp_path, faults="429@2:0.05,529@3,drop@5:2") as run:
        prompt = default_scenario().prompts[0]
        result = await run.session.run_turn(prompt)
        assert result.stop_reason == "end_turn"
        faults = [r.fault for r in run.model_requests if r.fault]
        assert len(faults) == 3
        notices = [n.message for n in run.of(events.Notice) if n.level == "warning"]
        assert len([n for n in notices if "Retrying" in n]) == 3
        assert run.of(events.OverflowHappened) == []
        assert_ledger_consistent(run)
        check = check_requests(run.sim.records)
        assert check.ok, check.summary()


async def test_a_rate_limit_is_retried_after_the_wait_the_provider_asked_for(
    tmp_path: Path,
) -> None:
    # Anthropic sends retry-after in seconds; 90 is over the 30 s backoff cap, and waiting
    # less would only be refused again.
    async with agent_run(tmp_path, faults="429@1:90") as run:
        result = await run.session.run_turn(default_scenario().prompts[0])
        assert result.stop_reason == "end_turn"
        [retry] = [n for n in run.of(events.Notice) if n.retry is not None]
        assert retry.retry.wait == 90 and "Retrying in 90s" in retry.message


async def test_a_rate_limit_asking_for_a_longer_wait_than_agent_server_waits_gives_up_at_once(
    tmp_path: Path,
) -> None:
    async with agent_run(tmp_path, faults="429@1-10:900") as run:
        result = await run.session.run_turn(default_scenario().prompts[0])
        assert result.stop_reason == "error" and result.error is not None
        assert len(run.model_requests) == 1  # no attempt wasted on a refusal known ahead
        assert "asks to wait 15 minutes" in result.error
        assert "send the prompt again after that" in result.error
        assert "will be retried" not in result.error


@pytest.mark.parametrize("faults", ["500@1-10", "529@1-10", "429@1-10:0.01", "drop@1-10:2"])
async def test_a_turn_out_of_retries_says_what_to_do_not_that_it_will_retry(
    tmp_path: Path, faults: str
) -> None:
    async with agent_run(tmp_path, faults=faults) as run:
        result = await run.session.run_turn(default_scenario().prompts[0])
        assert result.stop_reason == "error"
        assert len(run.model_requests) == 5  # the first call and FAST_RETRY's 4 retries
        assert result.error is not None
        assert "retried" not in result.error.lower(), result.error
        assert "Gave up after 5 attempts." in result.error
        assert "try again" in result.error.lower(), result.error
        notices = run.of(events.Notice)
        retrying = [n.message for n in notices if "Retrying" in n.message]
        assert len(retrying) == 4
        assert all("will be retried" in n for n in retrying)  # while it is true
        # Told once, by the turn's end: no notice repeats it (each front end shows both).
        assert [e.error for e in run.of(events.TurnEnded)] == [result.error]
        assert not [n for n in notices if n.level == "error" or n.message == result.error]


async def test_a_failed_turn_ends_in_the_ledger_with_its_error_and_the_next_turn_goes_on(
    tmp_path: Path,
) -> None:
    async with agent_run(tmp_path, faults="drop@2-6:6") as run:
        result = await run.session.run_turn(default_scenario().prompts[0])
        assert result.stop_reason == "error" and result.error is not None
        failed = run.session.ledger.tree.get(run.session.ledger.leaf_id)
        assert isinstance(failed, MessageEntry)
        message = failed.message
        assert isinstance(message, AssistantMessage) and message.stop_reason == "error"
        assert message.error_message == result.error
        # What arrived of the last attempt, under the id its chunks carried; no tool call
        # that was cut off (it never ran).
        assert message.text and message.tool_calls == ()
        assert run.of(events.TextChunk)[-1].message_id == failed.id

        assert run.restart is not None
        await run.restart()
        assert transcript_items(run.session.transcript().events)[-1] == {
            "kind": "notice", "level": "error", "message": result.error,
        }
        store = open_store(run.workspace, str(tmp_path / "sessions"))
        shown = Console(file=io.StringIO(), width=400)
        show_session(store, run.session.session_id, shown)
        assert f"error: {result.error}" in shown.file.getvalue()  # type: ignore[attr-defined]
        markdown = io.StringIO()
        write_markdown(run.session.ledger.tree.branch(), markdown)
        assert f"**Error:** {result.error}" in markdown.getvalue()
        run.sim.set_faults(None)
        again = await run.session.run_turn("go on")
        assert again.stop_reason == "end_turn"
        assert_ledger_consistent(run)
        check = check_requests(run.sim.records)
        assert check.ok, check.summary()
        # The failed answer is not sent: the request after it holds no trace of it.
        assert result.error not in json.dumps(run.model_requests[-1].request)


async def test_path_escapes_are_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    scenario = {
        "turns": [
            {
                "user": "Peek outside.",
                "steps": [
                    {
                        "tools": [
                            {"name": "read", "arguments": {"path": "../secret.txt"}},
                            {"name": "read", "arguments": {"path": str(secret)}},
                            {
                                "name": "write",
                                "arguments": {"path": "../escape.txt", "content": "x"},
                            },
                        ]
                    },
                    {"text": "Done."},
                ],
            }
        ]
    }
    async with agent_run(tmp_path, scenario=scenario) as run:
        await run.session.run_turn("Peek outside.")
        results = [
            e.message
            for e in run.session.ledger.tree.entries
            if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)
        ]
        assert len(results) == 3 and all(r.is_error for r in results)
        assert all("outside" in r.text or ".." in r.text for r in results)
        assert not any("do not read" in r.text for r in results)
        assert not (tmp_path / "escape.txt").exists()


async def test_cancelling_a_running_bash_command_kills_its_children(tmp_path: Path) -> None:
    # The children sleep far longer than the test waits for them to die, so that a kill that
    # failed cannot pass for one that worked; they are killed at the end whatever happened.
    command = "echo $$ > pids; sleep 900 & echo $! >> pids; sleep 900 & echo $! >> pids; wait"
    scenario = {
        "turns": [
            {
                "user": "Run it.",
                "steps": [
                    {"tools": [{"name": "bash", "arguments": {"command": command}}]},
                    {"text": "ok"},
                ],
            }
        ]
    }
    # Unsandboxed: the pids it writes are the host's (tests/agent/tools/test_tool_sandbox.py
    # covers the sandboxed kill).
    settings = AgentSettings(permissions_mode="allowAll", tools=ToolOptions(sandbox="off"))
    async with agent_run(tmp_path, scenario=scenario, settings=settings) as run:
        turn = asyncio.ensure_future(run.session.run_turn("Run it."))
        pid_file = run.workspace / "pids"
        for _ in range(1200):  # a minute at most, for a busy machine
            if pid_file.exists() and len(pid_file.read_text().split()) == 3:
                break
            await asyncio.sleep(0.05)
        pids = [int(p) for p in pid_file.read_text().split()]
        try:
            assert run.session.interrupt()
            result = await turn
            assert result.stop_reason == "cancelled"
            for _ in range(1200):
                if not any(_alive(pid) for pid in pids):
                    break
                await asyncio.sleep(0.05)
            assert not any(_alive(pid) for pid in pids)
        finally:
            for pid in pids:
                if _alive(pid):  # only what is still running: a pid reaped may be reused
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
        assert_ledger_consistent(run)
        results = [
            e.message
            for e in run.session.ledger.tree.entries
            if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)
        ]
        assert results and "aborted" in results[-1].text


def _alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except OSError:
        return False


async def test_an_external_edit_of_a_read_file_reaches_the_model_as_a_note(tmp_path: Path) -> None:
    scenario = default_scenario()
    first, second = scenario.prompts[0], scenario.prompts[1]
    async with agent_run(tmp_path) as run:
        await run.session.run_turn(first)  # reads README.md
        (run.workspace / "README.md").write_text("# rewritten by the user\n")
        await run.session.run_turn(second)
        bodies = [r.request for r in run.model_requests if r.source != "summary"]
        last_user_texts = [
            block.get("text", "")
            for body in bodies
            for block in body["messages"][-1]["content"]
            if isinstance(block, dict) and block.get("type") == "text"
        ]
        assert any("README.md changed on disk" in text for text in last_user_texts)
        system = bodies[-1]["system"]
        assert all("README.md changed" not in block["text"] for block in system)
        assert check_requests(run.sim.records).ok


async def test_permission_denial_becomes_a_tool_result(tmp_path: Path) -> None:
    scenario = default_scenario()
    prompt = next(p for p in scenario.prompts if p.startswith("Write a scratch note"))
    async with agent_run(tmp_path, settings=AgentSettings(permissions_mode="allowReads")) as run:
        result = await run.session.run_turn(prompt)  # no editor to ask: headless denies
        assert result.stop_reason == "end_turn"
        denied = [
            e.message
            for e in run.session.ledger.tree.entries
            if isinstance(e, MessageEntry)
            and isinstance(e.message, ToolResultMessage)
            and e.message.tool_name == "write"
        ]
        assert denied and denied[0].is_error and "permission" in denied[0].text.lower()
        assert not (run.workspace / "notes").exists()


async def test_manual_compaction_carries_instructions_and_a_cheaper_summary_model(
    tmp_path: Path,
) -> None:
    settings = AgentSettings(
        permissions_mode="allowAll",
        compaction=CompactionSettings(model="sim-large"),
    )
    prompts = default_scenario().prompts
    async with agent_run(tmp_path, settings=settings) as run:
        for prompt in prompts[:3]:
            await run.session.run_turn(prompt)
        outcome = await run.session.compact("Keep every file path under src/.")
        assert outcome.outcome == "compacted" and outcome.tokens_after < outcome.tokens_before
        summaries = [r for r in run.model_requests if r.source == "summary"]
        assert summaries and all(r.model == "sim-large" for r in summaries)
        assert any("Keep every file path under src/." in json.dumps(r.request) for r in summaries)
        assert outcome.entry is not None and outcome.entry.reason == "manual"
        assert outcome.entry.model == "sim-large" and outcome.entry.usage is not None
        # The summary's cost is on the ledger: a reopened session counts it.
        before, session_id = run.session.totals.cost, run.session.session_id
        await run.session.close()
        reopened = WorkspaceAgent(run.workspace, run.session.settings).open(session_id)
        try:
            assert reopened.totals.cost == pytest.approx(before)
            assert reopened.usage.snapshot().window_number == 2
        finally:
            await reopened.close()


async def test_an_interrupted_answer_is_kept_and_the_prefix_still_holds(tmp_path: Path) -> None:
    scenario = {
        "turns": [
            {"user": "Tell me a long story.", "steps": [{"text": "Once upon a time.", "textTokens": 3000}]},
            {"user": "Stop, just summarise.", "steps": [{"text": "In short: it ends well."}]},
        ]
    }
    async with agent_run(tmp_path, scenario=scenario, sample_workspace=False) as run:
        original = run.session._emit_to

        def interrupt_on_first_chunk(event: events.AgentEvent) -> None:
            original(event)
            if isinstance(event, events.TextChunk):
                run.session.interrupt()

        run.session.attach(interrupt_on_first_chunk)
        first = await run.session.run_turn("Tell me a long story.")
        assert first.stop_reason == "cancelled"
        run.session.attach(original)
        partial = [
            e.message for e in run.session.ledger.tree.entries
            if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)
        ]
        assert len(partial) == 1 and partial[0].stop_reason == "aborted"
        assert partial[0].text.startswith("Once upon a time.")
        second = await run.session.run_turn("Stop, just summarise.")
        assert second.stop_reason == "end_turn"
        last = run.model_requests[-1].request["messages"]
        assert [m["role"] for m in last] == ["user", "assistant", "user"]
        assert last[1]["content"][0]["text"].startswith("Once upon a time.")
        check = check_requests(run.sim.records)
        assert check.ok, check.summary()


async def test_a_session_closed_during_a_turn_keeps_what_the_turn_wrote(tmp_path: Path) -> None:
    """Closing lets the ledger go early (the next process may be waiting for it), but not
    before the cancelled turn has written its end: the reopened session has the answer so far."""
    scenario = {
        "turns": [
            {"user": "Tell me a long story.", "steps": [{"text": "Once upon a time.", "textTokens": 3000}]},
        ]
    }
    async with agent_run(tmp_path, scenario=scenario, sample_workspace=False) as run:
        original = run.session._emit_to
        closing: list[asyncio.Task[None]] = []

        def close_on_first_chunk(event: events.AgentEvent) -> None:
            original(event)
            if isinstance(event, events.TextChunk) and not closing:
                closing.append(asyncio.create_task(run.session.close()))

        run.session.attach(close_on_first_chunk)
        result = await run.session.run_turn("Tell me a long story.")
        await closing[0]
        assert result.stop_reason == "cancelled"
        reopened = WorkspaceAgent(run.workspace, run.session.settings).open(run.session.session_id)
        try:
            kept = [
                e.message for e in reopened.ledger.tree.entries
                if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)
            ]
            assert len(kept) == 1 and kept[0].stop_reason == "aborted"
            assert kept[0].text.startswith("Once upon a time.")
        finally:
            await reopened.close()


async def test_a_rejected_cached_summary_falls_back_to_the_fresh_prompt(tmp_path: Path) -> None:
    async with agent_run(tmp_path) as run:
        for prompt in default_scenario().prompts[:3]:
            await run.session.run_turn(prompt)
        before = len(run.model_requests)
        run.sim.set_faults("overflow@1")  # the estimate was low: the cached request is too long
        outcome = await run.session.compact()
        assert outcome.outcome == "compacted"
        summaries = run.model_requests[before:]
        assert [r.status for r in summaries] == [400, 200]
        assert summaries[0].request.get("tools") and not summaries[1].request.get("tools")


@pytest.mark.parametrize(
    ("faults", "says"),
    [("401@1-10", "rejected the API key"), ("403@1-10", "may not use the model")],
)
async def test_a_refused_key_or_access_is_said_once_with_what_to_do_and_not_retried(
    tmp_path: Path, faults: str, says: str
) -> None:
    async with agent_run(tmp_path, faults=faults) as run:
        result = await run.session.run_turn(default_scenario().prompts[0])
        assert result.stop_reason == "error" and result.error is not None
        assert says in result.error
        assert len(run.model_requests) == 1
        assert "check" in result.error.lower()
        assert [e.error for e in run.of(events.TurnEnded)] == [result.error]
        assert not [n for n in run.of(events.Notice) if n.message == result.error]


async def test_a_stream_cut_mid_answer_discards_the_partial_answer_before_the_retry(
    tmp_path: Path,
) -> None:
    async with agent_run(tmp_path, faults="drop@1:4") as run:
        result = await run.session.run_turn(default_scenario().prompts[0])
        assert result.stop_reason == "end_turn"
        chunks = run.of(events.TextChunk)
        cut, retried = chunks[0].message_id, chunks[-1].message_id
        assert cut != retried
        # Told once, right after the cut answer's last chunk and before the retry's notice.
        discarded = run.of(events.AnswerDiscarded)
        assert discarded == [events.AnswerDiscarded(result.turn_id, cut)]
        shown = events.TextChunk | events.AnswerDiscarded | events.Notice
        order = [e for e in run.events if isinstance(e, shown)]
        at = order.index(discarded[0])
        assert isinstance(order[at - 1], events.TextChunk) and order[at - 1].message_id == cut
        assert isinstance(order[at + 1], events.Notice) and order[at + 1].retry is not None
        assert all(e.message_id != cut for e in order[at + 1:] if isinstance(e, events.TextChunk))
        # The ledger never had the cut answer: nothing to retract on a reload.
        ids = run.session.ledger.tree.branch_ids()
        assert cut not in ids and retried in ids
        assert cut not in json.dumps(transcript_items(run.session.transcript().events))


async def test_a_retry_before_any_text_streamed_discards_nothing(tmp_path: Path) -> None:
    async with agent_run(tmp_path, faults="529@1") as run:
        result = await run.session.run_turn(default_scenario().prompts[0])
        assert result.stop_reason == "end_turn"
        assert [n for n in run.of(events.Notice) if n.retry is not None]
        assert run.of(events.AnswerDiscarded) == []
