"""The mapping from agent events and ledger history to ACP session updates, as plain functions."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import audio_block, embedded_text_resource, image_block, resource_block, text_block
from acp.schema import BlobResourceContents, EmbeddedResourceContentBlock, ResourceContentBlock
from hypothesis import given
from hypothesis import strategies as st

from agent_server.acp.updates import (
    ClientUpdates,
    EventTranslator,
    PromptError,
    acp_stop_reason,
    code_block,
    notice_title,
    prompt_content,
    proposed_diff,
    replay_updates,
    slash_command,
)
from agent_server.agent.events import (
    AgentEvent,
    BranchTaken,
    CompactionFinished,
    CompactionStarted,
    FilesRestored,
    ModelRecorded,
    Notice,
    TextChunk,
    ThinkingChunk,
    ToolCallStarted,
    ToolCallUpdated,
    TurnEnded,
    TurnStarted,
)
from agent_server.agent.tool_runner import aborted_result
from agent_server.llm.messages import ImageContent, TextContent, ToolCall, Usage

CWD = Path("/work/project")


def test_prompt_blocks_become_user_content() -> None:
    content = prompt_content(
        [
            text_block("Explain this"),
            image_block("iVBORw0KGgo=", "image/png"),
            resource_block(embedded_text_resource("file:///work/project/a.py", "x = 1")),
            ResourceContentBlock(type="resource_link", name="b.py", uri="file:///work/project/b.py"),
        ]
    )
    assert content == (
        TextContent("Explain this"),
        ImageContent("iVBORw0KGgo=", "image/png"),
        TextContent('<context ref="file:///work/project/a.py">\nx = 1\n</context>'),
        TextContent("[@b.py](file:///work/project/b.py)"),
    )


@pytest.mark.parametrize(
    ("blocks", "reason"),
    [
        ([audio_block("AAAA", "audio/wav")], "audio"),
        ([], "empty"),
        (
            [
                EmbeddedResourceContentBlock(
                    type="resource",
                    resource=BlobResourceContents(
                        uri="file:///x.zip", blob="UEs=", mime_type="application/zip"
                    ),
                )
            ],
            "binary",
        ),
        # Data that is not base64 would be kept in the ledger and fail every later request.
        ([image_block("!!!", "image/png")], "not valid base64"),
        (
            [
                EmbeddedResourceContentBlock(
                    type="resource",
                    resource=BlobResourceContents(
                        uri="file:///x.png", blob="!!!", mime_type="image/png"
                    ),
                )
            ],
            "not valid base64",
        ),
    ],
)
def test_prompts_the_agent_cannot_take_are_refused(blocks: list, reason: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(PromptError, match=reason):
        prompt_content(blocks)


def test_slash_commands() -> None:
    assert slash_command((TextContent("/compact"),)) == ("compact", "")
    assert slash_command((TextContent("  /compact keep the API notes\n"),)) == (
        "compact",
        "keep the API notes",
    )
    assert slash_command((TextContent("/usage"),)) == ("usage", "")
    assert slash_command((TextContent("/compaction please"),)) is None
    assert slash_command((TextContent("please /compact"),)) is None
    assert slash_command((TextContent("/compact"), TextContent("more"))) is None


@given(st.text())
def test_literal_text_cannot_close_its_fence(text: str) -> None:
    fenced = code_block(text)
    fence = fenced.split("\n", 1)[0]
    assert set(fence) == {"`"} and len(fence) >= 3
    assert fenced == f"{fence}\n{text}\n{fence}"
    assert fence not in text  # no run of backticks inside can end the block early


def test_edit_and_write_calls_carry_their_diff() -> None:
    edit = proposed_diff(CWD, "edit", {"path": "a.py", "oldText": "x = 1", "newText": "x = 2"})
    assert edit is not None and edit.path == "/work/project/a.py"
    assert (edit.old_text, edit.new_text) == ("x = 1", "x = 2")
    write = proposed_diff(CWD, "edit", {"path": "/work/project/new.md", "content": "# New"})
    assert write is not None and write.old_text is None and write.new_text == "# New"
    assert proposed_diff(CWD, "read", {"path": "a.py"}) is None
    assert proposed_diff(CWD, "edit", {"path": 5, "content": "x"}) is None


def test_live_tool_call_streams_output_and_keeps_the_diff() -> None:
    translator = EventTranslator(CWD)
    bash = ToolCall("c1", "bash", {"command": "make"})
    started = translator.updates(ToolCallStarted("t", bash, "Run: make", "execute", ()))
    assert started[0].status == "pending" and started[0].kind == "execute"
    first = translator.updates(ToolCallUpdated("t", "c1", "in_progress", output="one\n"))
    second = translator.updates(ToolCallUpdated("t", "c1", "in_progress", output="two\n"))
    assert first[0].content[0].content.text == code_block("one\n")
    assert second[0].content[0].content.text == code_block("one\ntwo\n")
    done = translator.updates(ToolCallUpdated("t", "c1", "completed", output="one\ntwo\n"))
    assert done[0].status == "completed" and translator.streamed == {}

    edit = ToolCall("c2", "edit", {"path": "a.py", "oldText": "a", "newText": "b"})
    translator.updates(ToolCallStarted("t", edit, "Edit a.py", "edit", ("a.py",)))
    change = {"type": "diff", "path": "a.py", "oldText": "a\nz\n", "newText": "b\nz\n", "diff": "-a"}
    ok = translator.updates(
        ToolCallUpdated("t", "c2", "completed", output="Edited a.py", details={"change": change})
    )
    assert [c.type for c in ok[0].content] == ["diff"]
    # The tool's whole-file change replaces the snippet the call started with.
    assert (ok[0].content[0].old_text, ok[0].content[0].new_text) == ("a\nz\n", "b\nz\n")
    assert ok[0].content[0].path == "/work/project/a.py" and ok[0].raw_output is None
    edit3 = ToolCall("c3", "edit", {"path": "a.py", "oldText": "a", "newText": "b"})
    translator.updates(ToolCallStarted("t", edit3, "Edit a.py", "edit", ("a.py",)))
    failed = translator.updates(ToolCallUpdated("t", "c3", "failed", output="not found"))
    # A failed or refused change changed nothing: the reason, no diff.
    assert [c.type for c in failed[0].content] == ["content"]


def test_a_call_left_open_by_a_cancel_reads_as_the_agents_own_stopped_result() -> None:
    translator = EventTranslator(CWD)
    bash = ToolCall("c1", "bash", {"command": "make"})
    translator.updates(ToolCallStarted("t", bash, "Run: make", "execute", ()))
    (closed,) = translator.updates(TurnEnded("t", "cancelled", Usage()))
    assert closed.status == "failed"
    assert closed.content[0].content.text == code_block(aborted_result(bash).text)


def test_compaction_is_one_card_and_notices_are_messages_of_their_own() -> None:
    translator = EventTranslator(CWD)
    started = translator.updates(CompactionStarted("k1", "threshold", 27000))
    finished = translator.updates(
        CompactionFinished("k1", "threshold", "completed", 27000, 6100, summary="## Goal")
    )
    assert started[0].tool_call_id == finished[0].tool_call_id == "compaction-k1"
    assert started[0].status == "in_progress" and finished[0].status == "completed"
    assert finished[0].title == "Compacted the conversation: 27,000 → 6,100 tokens"
    failed = translator.updates(
        CompactionFinished("k2", "overflow", "cancelled", 30000, error="interrupted")
    )
    assert failed[0].status == "failed" and failed[0].title == "Compaction cancelled"
    requested = translator.updates(CompactionStarted("k3", "requested", 20000))
    assert requested[0].title == "Compacting the conversation (the model asked for it at a break)"
    one = translator.updates(Notice("t", "warning", "Rate limited; retrying"))
    two = translator.updates(Notice("t", "info", "a.py changed on disk"))
    assert one[0].message_id != two[0].message_id
    assert "Rate limited" in one[0].content.text
    assert translator.updates(TurnStarted("t", "e1", (TextContent("hi"),))) == []
    assert translator.updates(TextChunk("t", "t.1", "Hello"))[0].message_id == "t.1"


def test_history_replays_as_the_live_updates_would() -> None:
    read = ToolCall("c1", "read", {"path": "a.py"})
    edit = ToolCall("c2", "edit", {"path": "a.py", "oldText": "1", "newText": "2"})
    change = {"type": "diff", "path": "a.py", "oldText": "x = 1\n", "newText": "x = 2\n"}
    history: list[AgentEvent] = [
        ModelRecorded("m", "anthropic", "sim-small", None),
        TurnStarted("", "u1", (TextContent("Read a.py"),)),
        ThinkingChunk("", "a1", "Look first."),
        TextChunk("", "a1", "Reading."),
        ToolCallStarted("", read, "Read a.py", "read", ("a.py",)),
        ToolCallStarted("", edit, "Edit a.py", "edit", ("a.py",)),
        ToolCallUpdated("", "c1", "completed", "1\tx = 1", {"startLine": 1}),
        ToolCallUpdated("", "c2", "completed", "Edited a.py", {"change": change}),
        CompactionFinished("k1", "threshold", "completed", 27000, 6100, "## Goal"),
        Notice(None, "info", "a.py changed on disk", entry_id="n1", note="externalEdit"),
        BranchTaken("b1", "u1", None),
        FilesRestored("r1", "u1", ()),
    ]
    updates = replay_updates(history, CWD)
    kinds = [u.session_update for u in updates]
    assert kinds == [
        "user_message_chunk", "agent_thought_chunk", "agent_message_chunk", "tool_call",
        "tool_call", "tool_call_update", "tool_call_update", "tool_call",
        "agent_message_chunk", "agent_message_chunk",
    ]
    read_call = updates[3]
    assert read_call.title == "Read a.py" and read_call.kind == "read"
    assert read_call.locations[0].path == "/work/project/a.py"
    assert updates[5].status == "completed" and "x = 1" in updates[5].content[0].content.text
    assert updates[5].raw_output == {"startLine": 1}
    # The edit's whole-file change, as recorded with its result, is the diff shown.
    assert [(c.type, c.old_text, c.new_text) for c in updates[6].content] == [
        ("diff", "x = 1\n", "x = 2\n")
    ]
    assert updates[7].status == "completed" and updates[7].tool_call_id == "compaction-k1"
    assert updates[7].title == "Compacted the conversation: 27,000 → 6,100 tokens"
    assert updates[0].message_id == "u1" and updates[2].message_id == "a1"
    assert updates[8].message_id == "note-n1" and updates[8].content.text == "\n\n> a.py changed on disk\n\n"
    assert updates[9].message_id == "branch-b1"


def test_stop_reasons_are_acps() -> None:
    for reason in ("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"):
        assert acp_stop_reason(reason) == reason
    assert acp_stop_reason("someFutureReason") == "end_turn"


def test_a_failed_mcp_servers_error_and_stderr_are_fenced_not_read_as_markdown() -> None:
    from agent_server.agent.events import McpStatusChanged
    from agent_server.agent.mcp.servers import ServerStatus
    from agent_server.agent.mcp.session_tools import McpStatus

    server = ServerStatus(
        "db", "failed", "stdio", "db-server", (), True, "settings",
        error="exited: see [the docs](http://evil.example) <b>now</b>",
        stderr_tail="```\n# bad credentials\n",
    )
    [notice] = EventTranslator(CWD).updates(McpStatusChanged(McpStatus((server,), None, 0)))
    text = notice.content.text
    assert "MCP server db failed." in text
    fence = "````"  # longer than the run of backticks in the stderr
    assert f"{fence}\n> exited: see [the docs](http://evil.example) <b>now</b>" in text
    assert text.rstrip().endswith(f"> {fence}")


# --- ACP 1.7's notice and compaction updates -------------------------------------------------


def test_client_updates_follow_the_advertised_session_capabilities() -> None:
    assert ClientUpdates.from_capabilities({"notices": {}, "compaction": {}}) == ClientUpdates(
        notices=True, compaction=True
    )
    assert ClientUpdates.from_capabilities({"notices": None, "compaction": True}) == ClientUpdates()
    assert ClientUpdates.from_capabilities(None) == ClientUpdates()
    assert ClientUpdates.from_capabilities(["notices"]) == ClientUpdates()


@given(st.text(max_size=400))
def test_a_notice_title_is_never_empty_and_loses_no_word(message: str) -> None:
    title, rest = notice_title(message)
    assert title
    if message.strip():
        kept = (title + " " + (rest or "")).split()
        assert [w.rstrip(".") for w in kept] == [w.rstrip(".") for w in message.split()]


def test_compaction_events_are_compaction_updates_for_a_client_that_takes_them() -> None:
    translator = EventTranslator(Path("/w"), ClientUpdates(compaction=True, notices=True))
    started = translator.updates(CompactionStarted("c1", "threshold", 27000))
    assert started == [{
        "sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress",
        "_meta": {"agentServer": {"reason": "threshold", "tokensBefore": 27000}},
    }]
    done = translator.updates(
        CompactionFinished("c1", "threshold", "completed", 27000, 6100, "**the summary**", "e9")
    )
    assert [u["sessionUpdate"] for u in done] == ["compaction_summary_chunk", "compaction_update"]
    assert done[0]["content"]["text"] == code_block("**the summary**")
    assert done[1]["status"] == "completed" and "summary" not in done[1]
    assert done[1]["_meta"]["agentServer"]["tokensAfter"] == 6100
    failed = translator.updates(
        CompactionFinished("c2", "manual", "failed", 27000, error="the provider refused")
    )
    assert failed[-1]["status"] == "failed" and failed[-1]["error"] == "the provider refused"
    notice = translator.updates(Notice(None, "warning", "Rate limited. Retrying in 2 s."))
    assert notice == [{"sessionUpdate": "notice", "severity": "warning",
                       "title": "Rate limited. Retrying in 2 s."}]
