"""run_tool: argument validation the model can act on, errors as results, secrets scrubbed."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from agent_server.agent.tools import ToolContext, ToolKind, ToolResult, run_tool
from agent_server.agent.tools.edit import EditTool
from agent_server.agent.tools.grep import GrepTool
from agent_server.agent.tools.read import ReadTool
from agent_server.agent.tools.write import WriteTool
from agent_server.errors import ToolError
from agent_server.llm.messages import ToolCall, ToolSpec


class ScriptedTool:
    """A tool whose run does whatever the test says."""

    spec = ToolSpec(
        "scripted",
        "Test tool.",
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": []},
    )
    read_only = True
    kind: ToolKind = "other"

    def __init__(self, behaviour: BaseException | ToolResult) -> None:
        self.behaviour = behaviour
        self.seen: Mapping[str, Any] | None = None

    def paths(self, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        return ()

    def title(self, arguments: Mapping[str, Any]) -> str:
        return "Scripted"

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        self.seen = arguments
        if isinstance(self.behaviour, BaseException):
            raise self.behaviour
        return self.behaviour


async def test_missing_required_field_names_it_and_what_is_expected(ctx: ToolContext) -> None:
    result = await run_tool(EditTool(), {"path": "a.py", "old_text": "x", "newText": "y"}, ctx)
    assert result.is_error
    assert "Invalid arguments for edit:" in result.text
    assert "- oldText: missing; expected a string" in result.text
    assert "Call edit again with {path: string, oldText: string, newText: string}" in result.text


async def test_ill_typed_fields_are_each_reported(ctx: ToolContext) -> None:
    result = await run_tool(ReadTool(), {"path": 7, "offset": "ten", "limit": 0}, ctx)
    assert result.is_error
    assert "- path: expected a string, got integer 7" in result.text
    assert '- offset: expected an integer, got string "ten"' in result.text
    assert "- limit: expected an integer >= 1, got integer 0" in result.text


async def test_booleans_are_not_integers(ctx: ToolContext) -> None:
    result = await run_tool(GrepTool(rg=None), {"pattern": "x", "context": True}, ctx)
    assert result.is_error
    assert "context: expected an integer, got boolean true" in result.text


async def test_arguments_that_are_not_an_object(ctx: ToolContext) -> None:
    result = await run_tool(ReadTool(), ["a.py"], ctx)  # type: ignore[arg-type]
    assert result.is_error
    assert "expected a JSON object" in result.text


async def test_nulls_extras_and_integral_floats_are_accepted(ctx: ToolContext) -> None:
    tool = ScriptedTool(ToolResult.of_text("ok"))
    result = await run_tool(tool, {"n": 3.0, "extra": "passed on"}, ctx)
    assert not result.is_error
    assert tool.seen == {"n": 3, "extra": "passed on"}  # JSON Schema allows extra fields
    assert isinstance(tool.seen["n"], int)
    await run_tool(tool, {"n": None}, ctx)
    assert tool.seen == {}


async def test_extras_are_dropped_when_the_schema_forbids_them(ctx: ToolContext) -> None:
    tool = ScriptedTool(ToolResult.of_text("ok"))
    tool.spec = ToolSpec(
        "scripted",
        "Test tool.",
        {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False},
    )
    await run_tool(tool, {"n": 1, "extra": "dropped"}, ctx)
    assert tool.seen == {"n": 1}


async def test_tool_errors_become_error_results(ctx: ToolContext) -> None:
    result = await run_tool(ScriptedTool(ToolError("could not frobnicate")), {}, ctx)
    assert result.is_error
    assert result.text == "could not frobnicate"


async def test_unexpected_exceptions_become_error_results(ctx: ToolContext) -> None:
    result = await run_tool(ScriptedTool(KeyError("boom")), {}, ctx)
    assert result.is_error
    assert "scripted failed unexpectedly: KeyError" in result.text
    os_error = await run_tool(ScriptedTool(PermissionError(13, "Permission denied", "/x")), {}, ctx)
    assert os_error.text == "scripted failed: Permission denied: /x"


async def test_cancellation_propagates(ctx: ToolContext) -> None:
    with pytest.raises(asyncio.CancelledError):
        await run_tool(ScriptedTool(asyncio.CancelledError()), {}, ctx)


async def test_secrets_are_scrubbed_from_text_and_details(workspace: Path, spill_dir: Path) -> None:
    secret = "hunter2-very-secret"
    ctx = ToolContext(workspace, spill_dir, secrets=(secret,))
    (workspace / "config.py").write_text(f"PASSWORD = '{secret}'\nKEY = 'sk-ant-abcdefghijkl'\n")
    read = await run_tool(ReadTool(), {"path": "config.py"}, ctx)
    assert secret not in read.text
    assert "sk-ant-abcdefghijkl" not in read.text
    assert "[redacted]" in read.text
    edit = await run_tool(
        EditTool(), {"path": "config.py", "oldText": "PASSWORD", "newText": "PASS"}, ctx
    )
    assert edit.details is not None
    assert secret not in edit.details["diff"]
    grep = await run_tool(GrepTool(rg=None), {"pattern": "hunter2"}, ctx)
    assert secret not in grep.text


async def test_write_result_converts_to_a_tool_result_message(ctx: ToolContext) -> None:
    result = await run_tool(WriteTool(), {"path": "a.txt", "content": "x"}, ctx)
    message = result.to_message(ToolCall("call_1", "write", {"path": "a.txt", "content": "x"}))
    assert message.tool_call_id == "call_1"
    assert message.tool_name == "write"
    assert message.text == result.text
    assert not message.is_error


async def test_spilled_full_outputs_are_scrubbed_too(workspace: Path, spill_dir: Path) -> None:
    secret = "hunter2-very-secret"
    ctx = ToolContext(workspace, spill_dir, secrets=(secret,))
    (workspace / "log.txt").write_text(
        "".join(f"{n} password={secret} " + "x" * 300 + "\n" for n in range(400))
    )
    result = await run_tool(GrepTool(rg=None), {"pattern": "password"}, ctx)
    assert result.details is not None
    assert result.details["truncated"] is True
    spilled = spill_dir / Path(result.details["fullOutputPath"]).name
    assert spilled.read_text().count("password=[redacted]") == 400
    assert secret not in result.text
