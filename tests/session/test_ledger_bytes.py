"""The bytes of a ledger written through every entry kind, pinned (issue 46): the facade
split of the Ledger (appends through `add`, reads through `tree` and `facts`) writes exactly
what the Ledger's `append_*` methods wrote before it (every_entry_kind.jsonl was written by
commit 82f6a49 from the same calls, ids and clock), and so must any later change."""

from __future__ import annotations

import itertools
import secrets
from pathlib import Path

import pytest

from agent_server.llm.messages import (
    AssistantMessage,
    Cost,
    TextContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from agent_server.session.entries import (
    Carried,
    CompactionDetails,
    CompactionEntry,
    Failure,
    FileRestoreEntry,
    FileVersion,
    McpToolSource,
    ModelChangeEntry,
    Pin,
    PinEntry,
    PlanEntry,
    PlanItem,
    SystemPromptEntry,
    TitleEntry,
    ToolListEntry,
)
from agent_server.session.ledger import Ledger

GOLDEN = Path(__file__).with_name("every_entry_kind.jsonl")
TOOLS = (
    ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSpec("mcp__fx__env", "An environment variable.", {"type": "object"}),
)
USAGE = Usage(10, 20, 30, 40, Cost(0.1, 0.2, 0.3, 0.4))
CARRIED = Carried(
    user_messages=("Fix the parser",), user_messages_left_out=1,
    pins=(Pin("p1", "rule", "use tabs", "user"),),
    plan=(PlanItem("fix", "in_progress", "high"),),
    failures=(Failure("bash(x)", "exit 1", "tried again"),), worked=("pytest",),
)


def test_every_entry_kind_is_written_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = itertools.count(1)
    monkeypatch.setattr(secrets, "token_hex", lambda n=None: f"{next(ids):08x}")
    times = itertools.count(0)

    def clock() -> float:
        return 1_767_225_600 + next(times) * 1.25

    path = tmp_path / "s1.jsonl"
    with Ledger.create(path, session_id="s1", workspace="/work/ws", title="First",
                       model="sim-small", created_at="2026-01-01T00:00:00.000Z",
                       clock=clock) as ledger:
        ledger.add(ModelChangeEntry, "anthropic-messages", "claude-sonnet-4-6", "high")
        ledger.add(SystemPromptEntry, "You are an agent.")
        ledger.add(ToolListEntry, TOOLS, (McpToolSource("mcp__fx__env", "fx", "env", True),),
                   "start")
        prompt = ledger.append_message(UserMessage.of_text("Fix the parser: naïve ✓\nsecond line"))
        answer = ledger.append_message(
            AssistantMessage((TextContent("Reading it."), ToolCall("call_1", "read", {"path": "a.py"})),
                             "toolUse", USAGE, "sim-small", "anthropic-messages"),
            entry_id="answer01", cache_retention="long",
        )
        ledger.append_message(ToolResultMessage("call_1", "read", (TextContent("x = 1\n"),)))
        ledger.add(TitleEntry, "Parser fix")
        ledger.add(PinEntry, "p1", "add", "rule", "use tabs", "user")
        ledger.add(PlanEntry, (PlanItem("fix", "in_progress", "high"), PlanItem("test", "pending")))
        ledger.add(CompactionEntry, summary="## Goal\nFix it.", first_kept_entry_id=prompt.id,
                   tokens_before=1000, tokens_after=400, reason="threshold",
                   details=CompactionDetails(("a.py",), ("b.py",)), split_turn_summary="early",
                   model="sim-small", usage=USAGE, carried=CARRIED)
        ledger.add(CompactionEntry, summary="S", first_kept_entry_id=None, tokens_before=5,
                   tokens_after=None, reason="manual")
        ledger.add(FileRestoreEntry, prompt.id,
                   (FileVersion("a.py", "d1", "d2"), FileVersion("new.py", None, "d3")))
        ledger.add(ToolListEntry, TOOLS[:1], (), "accepted")
        ledger.rewind(answer.id, summary="left a branch")
        ledger.add(ModelChangeEntry, "openai-responses", "gpt-5.1")
        ledger.append_message(AssistantMessage((ToolCall("call_2", "read", {"path": "b.py"}),),
                                               "toolUse"))
    with Ledger.open(path, clock=clock) as reopened:  # the open call gets its aborted result
        assert reopened.load_report.aborted_tool_calls == ("call_2",)
    assert path.read_bytes() == GOLDEN.read_bytes()
