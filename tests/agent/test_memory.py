"""Pins and the plan over plain objects: SessionMemory on a real ledger, the remember and
plan tools through run_tool, the events they send, and what a restart reads back."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_server.agent.events import AgentEvent, PinsChanged, PlanUpdated
from agent_server.agent.memory import MAX_PIN_CHARS, SessionMemory, find_pin
from agent_server.agent.tools import ToolContext, run_tool
from agent_server.agent.tools.plan import PlanTool
from agent_server.agent.tools.remember import RememberTool
from agent_server.context.carried import pins_budget
from agent_server.errors import PinError
from agent_server.llm.messages import UserMessage
from agent_server.session.entries import Pin, PlanItem
from agent_server.session.ledger import Ledger


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    ledger = Ledger.create(tmp_path / "s.jsonl", session_id="s", workspace="/w", fsync="never")
    ledger.append_message(UserMessage.of_text("hello"))
    return ledger


def memory_of(ledger: Ledger, events: list[AgentEvent], threshold: int = 24_576) -> SessionMemory:
    return SessionMemory(ledger, events.append, lambda: threshold, lambda: "turn1")


def test_pins_are_ledger_entries_read_back_after_a_restart(ledger: Ledger, tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    memory = memory_of(ledger, events)
    rule = memory.pin("rule", "  never edit CHANGELOG  ", "user")
    fact = memory.pin("fact", "the dev server listens on 8123", "model")
    assert rule.text == "never edit CHANGELOG" and rule.by == "user"
    assert memory.pins() == (rule, fact)
    assert events[-1] == PinsChanged("turn1", (rule, fact))
    memory.unpin(rule.id[:3], "user")  # a unique start of the id is enough
    assert memory.pins() == (fact,)
    ledger.close()
    with Ledger.open(tmp_path / "s.jsonl") as reopened:
        assert memory_of(reopened, []).pins() == (fact,)


def test_a_pin_is_refused_when_empty_too_long_repeated_or_over_budget(ledger: Ledger) -> None:
    memory = memory_of(ledger, [], threshold=2_400)  # pins may take 200 tokens together
    with pytest.raises(PinError, match="empty"):
        memory.pin("rule", "   ", "user")
    with pytest.raises(PinError, match="at most"):
        memory.pin("rule", "x" * (MAX_PIN_CHARS + 1), "user")
    memory.pin("rule", "keep the API", "user")
    with pytest.raises(PinError, match="pinned already"):
        memory.pin("rule", "keep the API", "model")
    assert pins_budget(2_400) == 200
    with pytest.raises(PinError, match="remove one first"):
        memory.pin("fact", "word " * 300, "model")
    assert [pin.text for pin in memory.pins()] == ["keep the API"]


def test_find_pin_says_what_is_wrong() -> None:
    pins = (Pin("ab12", "rule", "a", "user"), Pin("ab34", "fact", "b", "model"))
    assert find_pin(pins, "ab34").text == "b"
    with pytest.raises(PinError, match="several"):
        find_pin(pins, "ab")
    with pytest.raises(PinError, match="not a pin in force"):
        find_pin(pins, "zz")


async def test_the_remember_tool_pins_for_the_model(ledger: Ledger, tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    ctx = ToolContext(tmp_path, tmp_path / "spill", memory=memory_of(ledger, events))
    result = await run_tool(RememberTool(), {"text": "port is 8123", "kind": "fact"}, ctx)
    assert not result.is_error and "Pinned (fact)" in result.text
    assert memory_of(ledger, []).pins()[0] == Pin(
        result.details["pin"]["id"], "fact", "port is 8123", "model"  # type: ignore[index]
    )
    bad = await run_tool(RememberTool(), {"text": "x", "kind": "wish"}, ctx)
    assert bad.is_error and "kind" in bad.text
    alone = await run_tool(RememberTool(), {"text": "x", "kind": "rule"}, ToolContext(tmp_path, tmp_path))
    assert alone.is_error and "not available" in alone.text


async def test_the_plan_tool_writes_the_whole_plan_and_announces_it(
    ledger: Ledger, tmp_path: Path
) -> None:
    events: list[AgentEvent] = []
    ctx = ToolContext(tmp_path, tmp_path / "spill", memory=memory_of(ledger, events))
    entries = [
        {"content": "reproduce", "status": "completed"},
        {"content": "fix _afterpoint", "status": "in_progress", "priority": "high"},
        {"content": "regression test", "status": "pending"},
    ]
    result = await run_tool(PlanTool(), {"entries": entries}, ctx)
    assert result.text == "Plan updated: 1 of 3 steps completed. In progress: fix _afterpoint"
    plan = (
        PlanItem("reproduce", "completed"),
        PlanItem("fix _afterpoint", "in_progress", "high"),
        PlanItem("regression test", "pending"),
    )
    assert memory_of(ledger, []).plan() == plan
    assert events == [PlanUpdated("turn1", plan)]


@pytest.mark.parametrize(
    ("entries", "problem"),
    [
        ([{"content": "a", "status": "doing"}], "status must be one of"),
        ([{"content": "", "status": "pending"}], "content of 1 to"),
        ([{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}],
         "at most one step"),
        ([{"content": "a", "status": "pending", "priority": "urgent"}], "priority"),
        ([{"content": f"s{i}", "status": "pending"} for i in range(31)], "at most 30 steps"),
        (["just text"], "must be an object"),
    ],
)
async def test_a_bad_plan_is_refused_and_nothing_is_recorded(
    ledger: Ledger, tmp_path: Path, entries: list[object], problem: str
) -> None:
    events: list[AgentEvent] = []
    ctx = ToolContext(tmp_path, tmp_path / "spill", memory=memory_of(ledger, events))
    result = await run_tool(PlanTool(), {"entries": entries}, ctx)
    assert result.is_error and problem in result.text
    assert memory_of(ledger, []).plan() == () and events == []
