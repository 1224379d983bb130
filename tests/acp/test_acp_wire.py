"""Malformed input on the wire: every request with an id gets an answer, the process lives on.

These write raw lines to `agent-server acp`, below any SDK client, to send what no SDK would.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_server.acp.transport import problem_with


class RawAgent:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        await self.process.stdin.drain()

    async def reply(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), 60)
        assert line, "the agent closed its output"
        message: dict[str, Any] = json.loads(line)
        return message

    async def answer_to(self, request_id: int) -> dict[str, Any]:
        """The answer to one request, past the session updates sent before it."""
        while True:
            message = await self.reply()
            if message.get("id") == request_id and "method" not in message:
                return message


@pytest.fixture
async def raw_agent(tmp_path: Path):  # type: ignore[no-untyped-def]
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    with (tmp_path / "stderr.log").open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "agent_server", "acp", "--provider", "sim",
            "--sessions-dir", str(tmp_path / "sessions"),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=stderr, env=env,
        )
        try:
            yield RawAgent(process)
        finally:
            if process.stdin is not None:
                process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


async def test_malformed_lines_are_answered_and_the_agent_keeps_serving(
    raw_agent: RawAgent, tmp_path: Path
) -> None:
    cases: list[tuple[bytes, Any, int]] = [
        (b"this is not json", None, -32700),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "initialize"', None, -32700),
        (b"[1, 2, 3]", None, -32600),
        # Nesting past the parser's recursion limit: answered, and the agent lives on.
        (b'{"jsonrpc": "2.0", "id": "deep", "method": "session/list", "params": '
         + b"[" * 5000 + b"]" * 5000 + b"}", "deep", -32700),
        (b'{"params": ' + b"[" * 5000 + b"]" * 5000 + b', "id": 3}', None, -32700),
        (b'"just a string"', None, -32600),
        (b'{"jsonrpc": "2.0", "id": 7, "method": 5}', 7, -32600),
        (b'{"jsonrpc": "2.0", "id": 8}', 8, -32600),
        (b'{"jsonrpc": "2.0", "id": 9, "method": "no/such/method"}', 9, -32601),
        (b'{"jsonrpc": "2.0", "id": 10, "method": "session/new", "params": {"cwd": 5}}', 10, -32602),
        (b'{"jsonrpc": "2.0", "id": 11, "method": "session/prompt", "params": "text"}', 11, -32602),
        (
            b'{"jsonrpc": "2.0", "id": 12, "method": "session/prompt",'
            b' "params": {"sessionId": "nope", "prompt": []}}',
            12,
            -32002,
        ),
    ]
    for line, request_id, code in cases:
        await raw_agent.send(line)
        reply = await raw_agent.reply()
        assert reply["id"] == request_id, line
        assert reply["error"]["code"] == code, (line, reply)
    # Notifications get no answer, even bad ones; the next request is answered normally.
    await raw_agent.send(b'{"jsonrpc": "2.0", "method": "session/cancel", "params": {}}')
    await raw_agent.send(b'{"jsonrpc": "2.0", "id": 13, "method": "initialize",'
                         b' "params": {"protocolVersion": 1}}')
    reply = await raw_agent.reply()
    assert reply["id"] == 13 and reply["result"]["protocolVersion"] == 1
    workspace = tmp_path / "ws"
    workspace.mkdir()
    await raw_agent.send(json.dumps({
        "jsonrpc": "2.0", "id": 14, "method": "session/new",
        "params": {"cwd": str(workspace), "mcpServers": []},
    }).encode())
    reply = await raw_agent.reply()
    assert reply["id"] == 14 and reply["result"]["sessionId"]
    assert raw_agent.process.returncode is None


async def test_invalid_params_say_which_field_is_wrong(raw_agent: RawAgent) -> None:
    """An editor shows an error's message, not its data: the message names the field."""
    cases = [
        ({"sessionId": "s"}, "session/prompt", "Invalid params: prompt: Field required"),
        ({"cwd": "/"}, "session/new", "Invalid params: mcpServers: Field required"),
        ({"sessionId": "s", "prompt": "hi"}, "session/prompt",
         "Invalid params: prompt: Input should be a valid list"),
    ]
    for request_id, (params, method, message) in enumerate(cases, start=1):
        await raw_agent.send(json.dumps({
            "jsonrpc": "2.0", "id": request_id, "method": method, "params": params,
        }).encode())
        reply = await raw_agent.answer_to(request_id)
        assert reply["error"]["code"] == -32602
        assert reply["error"]["message"] == message


async def test_null_lists_are_read_as_empty_as_the_schema_says(
    raw_agent: RawAgent, tmp_path: Path
) -> None:
    """ACP's schema marks `mcpServers` (and a server's `args`, `env`, `headers`) as read
    as empty when null (`x-deserialize-default-on-null`), as the reference SDK does."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    server = {"name": "none", "command": "/nonexistent/mcp", "args": None, "env": None}
    for request_id, servers in enumerate([None, [server]], start=1):
        await raw_agent.send(json.dumps({
            "jsonrpc": "2.0", "id": request_id, "method": "session/new",
            "params": {"cwd": str(workspace), "mcpServers": servers},
        }).encode())
        reply = await raw_agent.answer_to(request_id)
        assert reply.get("result", {}).get("sessionId"), reply


async def test_a_cancel_read_with_its_prompt_stops_the_turn(
    raw_agent: RawAgent, tmp_path: Path
) -> None:
    """`session/prompt` and `session/cancel` in one write: the agent reads both before the
    turn's task has run a step. Before, the cancel killed that task before its first line:
    the prompt was never answered."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    await raw_agent.send(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize",'
                         b' "params": {"protocolVersion": 1}}')
    await raw_agent.answer_to(1)
    await raw_agent.send(json.dumps({
        "jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": str(workspace), "mcpServers": []},
    }).encode())
    session_id = (await raw_agent.answer_to(2))["result"]["sessionId"]

    def prompt(request_id: int) -> bytes:
        return json.dumps({
            "jsonrpc": "2.0", "id": request_id, "method": "session/prompt",
            "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "Hello."}]},
        }).encode()

    cancel = json.dumps(
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}
    ).encode()
    await raw_agent.send(prompt(3) + b"\n" + cancel)
    assert (await raw_agent.answer_to(3))["result"]["stopReason"] == "cancelled"
    # The session is not left busy: the next prompt runs to its end.
    await raw_agent.send(prompt(4))
    assert (await raw_agent.answer_to(4))["result"]["stopReason"] == "end_turn"


def test_problem_with_leaves_well_formed_messages_alone() -> None:
    assert problem_with({"jsonrpc": "2.0", "id": 1, "method": "initialize"}) is None
    assert problem_with({"jsonrpc": "2.0", "method": "session/cancel"}) is None
    assert problem_with({"jsonrpc": "2.0", "id": 3, "result": {}}) is None
    assert problem_with({"jsonrpc": "2.0", "id": 3, "error": {"code": 1}}) is None
    assert problem_with([])["error"]["code"] == -32600  # type: ignore[index]
