"""bash's standard input from the user (tools.terminal.visible; command_input.py): what is
written while the command runs reaches it, the end closes its input, nothing reaches a call
that is not running, and with the setting off the command's input is empty."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_server.agent.tools import ToolContext, run_tool
from agent_server.agent.tools.bash import BashTool
from agent_server.agent.tools.command_input import CommandInputs

BASH = BashTool()
ASKS = 'echo ready; read name; echo "read:$?:hello $name"; cat; echo "input ended"'


async def test_typed_input_reaches_the_command_and_the_end_closes_it(tmp_path: Path) -> None:
    inputs = CommandInputs()
    ready = asyncio.Event()
    ctx = ToolContext(
        workspace=tmp_path, spill_dir=tmp_path / "spill", call_id="c1", command_input=inputs,
        on_output=lambda text: ready.set() if "ready" in text else None,
    )
    assert not inputs.write("c1", "too early\n")  # not running yet: nothing to write to
    call = asyncio.ensure_future(run_tool(BASH, {"command": ASKS}, ctx))
    async with asyncio.timeout(60):
        await ready.wait()
    assert not inputs.write("c2", "another call\n")
    assert inputs.write("c1", "world\n")
    assert inputs.write("c1", "last line\n", end=True)
    assert not inputs.write("c1", "after the end\n")
    result = await call
    assert not result.is_error, result.text
    assert "read:0:hello world" in result.text
    assert "last line\ninput ended" in result.text and "after the end" not in result.text
    assert not inputs.write("c1", "after the call\n")  # released with the call


async def test_with_the_setting_off_the_command_reads_an_empty_input(tmp_path: Path) -> None:
    inputs = CommandInputs(enabled=lambda: False)
    ctx = ToolContext(
        workspace=tmp_path, spill_dir=tmp_path / "spill", call_id="c1", command_input=inputs
    )
    result = await run_tool(BASH, {"command": ASKS}, ctx)
    assert "read:1:hello \ninput ended" in result.text
    assert not inputs.write("c1", "world\n")
