"""Summary requests get a deterministic extractive summary that folds the previous one in."""

from __future__ import annotations

from typing import Any

from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from agent_server.context.summary_prompt import (
    SUMMARY_REQUEST_MARKER,
    build_summary_instruction,
    build_summary_prompt,
    summary_message_text,
)
from agent_server.llm.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agent_server.sim.summary import MAX_SUMMARY_TOKENS
from agent_server.sim.tokenizer import count_tokens

SECTIONS = (
    "## Goal",
    "## Constraints and preferences",
    "## Progress",
    "### Done",
    "### In progress",
    "### Blocked",
    "## Key decisions",
    "## Files read",
    "## Files modified",
    "## Next steps",
    "## Critical context",
)

PREVIOUS = """## Goal
"Port the billing module to the new API."

## Constraints and preferences
- "Never touch the database schema."

## Progress
### Done
- Answered: "Port the billing module to the new API."
### In progress
- "Port the billing module to the new API."
### Blocked
- Nothing

## Key decisions
- Keep the old client behind a flag.

## Files read
- `billing/client.py`

## Files modified
- `billing/api.py`

## Next steps
- Run the tests.

## Critical context
- User said: "Port the billing module to the new API.\""""


def assert_sections(text: str) -> None:
    positions = [text.index(heading) for heading in SECTIONS]
    assert positions == sorted(positions)


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def result(call_id: str, text: str, error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": error}


async def test_the_cache_sharing_request_is_summarised_with_the_previous_summary(
    anthropic_client: AsyncAnthropic,
) -> None:
    instruction = build_summary_instruction(kept_messages=0, previous_summary_in_context=True)
    assert SUMMARY_REQUEST_MARKER in instruction
    messages = [
        {"role": "user", "content": [
            {"type": "text", "text": summary_message_text(PREVIOUS)},
            {"type": "text", "text": "Now fix the failing invoice test. Do not add dependencies."},
        ]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "I will read the test first. Then the module."},
            call("t1", "read", path="tests/test_invoice.py"),
            call("t2", "grep", pattern="total", path="billing"),
        ]},
        {"role": "user", "content": [result("t1", "def test_total(): ..."),
                                     result("t2", "billing/invoice.py:3: total")]},
        {"role": "assistant", "content": [
            call("t3", "edit", path="billing/invoice.py", oldText="a", newText="b"),
            call("t4", "bash", command="pytest -q tests/test_invoice.py"),
            call("t5", "read", path="missing.py"),
        ]},
        {"role": "user", "content": [
            result("t3", "ok"), result("t4", "1 passed"),
            result("t5", "ENOENT: no such file missing.py", error=True),
            {"type": "text", "text": instruction},
        ]},
    ]
    message = await anthropic_client.messages.create(
        model="sim-small", max_tokens=4000, messages=messages
    )
    summary = message.content[0].text
    assert message.stop_reason == "end_turn"
    assert_sections(summary)
    assert '"Port the billing module to the new API."' in summary.split("##")[1]  # goal kept
    assert "Never touch the database schema." in summary
    assert "Do not add dependencies." in summary
    files_read = summary.split("## Files read")[1].split("##")[0]
    files_modified = summary.split("## Files modified")[1].split("##")[0]
    assert "`billing/client.py`" in files_read
    assert "`tests/test_invoice.py`" in files_read
    assert "`billing`" in files_read
    assert "missing.py" not in files_read  # its read failed
    assert "`billing/api.py`" in files_modified
    assert "`billing/invoice.py`" in files_modified
    assert "ENOENT" in summary.split("### Blocked")[1].split("##")[0]
    assert "pytest -q tests/test_invoice.py" in summary
    assert "Now fix the failing invoice test." in summary.split("### In progress")[1]


async def test_the_fresh_prompt_is_summarised_with_the_previous_summary(
    openai_client: AsyncOpenAI,
) -> None:
    conversation = [
        UserMessage.of_text("Add a CSV export to the report page. Keep the old endpoint."),
        AssistantMessage(
            content=(TextContent("Looking at the report view."),
                     ToolCall("c1", "read", {"path": "web/report.py"})),
            stop_reason="toolUse",
        ),
        ToolResultMessage("c1", "read", (TextContent("def report(): ..."),)),
        AssistantMessage(
            content=(ToolCall("c2", "write", {"path": "web/export.py", "content": "x"}),),
            stop_reason="toolUse",
        ),
        ToolResultMessage("c2", "write", (TextContent("written"),)),
    ]
    prompt = build_summary_prompt(conversation, previous_summary=PREVIOUS)
    completion = await openai_client.chat.completions.create(
        model="sim-small", messages=[{"role": "user", "content": prompt}]
    )
    summary = completion.choices[0].message.content or ""
    assert_sections(summary)
    assert "Port the billing module" in summary.split("## Constraints")[0]
    assert "Keep the old endpoint." in summary
    assert "`web/report.py`" in summary.split("## Files read")[1].split("##")[0]
    modified = summary.split("## Files modified")[1].split("##")[0]
    assert "`web/export.py`" in modified
    assert "`billing/api.py`" in modified
    assert "Keep the old client behind a flag." in summary


async def test_the_summary_stays_bounded_however_long_the_conversation(
    anthropic_client: AsyncAnthropic,
) -> None:
    messages: list[dict[str, Any]] = []
    for index in range(120):
        messages.append({"role": "user", "content": f"Request {index}: " + "please " * 60})
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Working on request {index}. " + "detail " * 40},
            *[call(f"c{index}_{j}", "read", path=f"pkg/module_{index}_{j}.py")
              for j in range(5)],
        ]})
        messages.append({"role": "user", "content": [
            result(f"c{index}_{j}", "x = 1\n" * 50) for j in range(5)
        ]})
        messages.append({"role": "assistant", "content": "Done."})
    messages.append({"role": "user", "content": build_summary_instruction(
        kept_messages=0, previous_summary_in_context=False)})
    message = await anthropic_client.messages.create(
        model="sim-large", max_tokens=4000, messages=messages
    )
    summary = message.content[0].text
    assert_sections(summary)
    assert 100 < count_tokens(summary) <= MAX_SUMMARY_TOKENS
    assert message.usage.input_tokens > 30 * count_tokens(summary)
    assert "Request 119" in summary  # the latest request is in progress
    assert "Request 0" in summary.split("## Constraints")[0]  # the first is the goal
