"""The kinds of message the fuzz run (fuzz.py) found unanswered or logging tracebacks, each
pinned over real stdio, on LSP and on ACP.

Before issue 24: a fractional id got an answer with a null id (so the client never learned
that its request was refused: 99 of 10,000 in the fuzz run); `$/cancelRequest` with an object
or array id logged a traceback each (194 in the run); over ACP, every unknown notification
and every `session/cancel` without a string session id logged one (1,571 in the run). (The
first `agent/session/new` also loaded the provider SDKs, holding other requests for seconds:
since issue 31 nothing before the first model call loads one, tests/lsp/test_first_request.py.)
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from .raw import HANG_GUARD, RawServer, request

INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601


async def _lsp(tmp_path: Path) -> RawServer:
    server = await RawServer.start()
    await server.initialize(
        tmp_path, {"provider": "sim", "sessionsDir": str(tmp_path / "sessions")}
    )
    return server


async def _probe(server: RawServer, name: str) -> None:
    """A good request: the server is alive and in step."""
    await server.send_message(request(name, "agent/session/list", {"workspaceUri": "file:///nope"}))
    answer = await server.answer(name)
    assert answer["error"]["code"] == -33003, answer  # not an open workspace folder


@pytest.mark.parametrize("msg_id", [1.5, -7.25, 1e300])
async def test_a_fractional_id_is_answered_with_that_id(tmp_path: Path, msg_id: float) -> None:
    server = await _lsp(tmp_path)
    try:
        await server.send_message(request(msg_id, "agent/usage", {"sessionId": "x"}))  # type: ignore[arg-type]
        answer = await server.answer(msg_id)
        assert answer["error"]["code"] == INVALID_REQUEST
        assert "integer or a string" in answer["error"]["message"]
        await _probe(server, "after")
    finally:
        await server.close()


async def test_ids_that_are_no_ids_get_a_null_id_answer_each(tmp_path: Path) -> None:
    server = await _lsp(tmp_path)
    try:
        for msg_id in ({"n": 1}, [1], True):
            await server.send_message(
                {"jsonrpc": "2.0", "id": msg_id, "method": "agent/usage", "params": {}}
            )
        await _probe(server, "after")
        nulls = [m for m in server.messages if "id" in m and m["id"] is None and "error" in m]
        assert len(nulls) == 3, nulls
    finally:
        await server.close()


async def test_cancel_requests_with_odd_ids_log_one_line_and_no_traceback(
    tmp_path: Path,
) -> None:
    server = await _lsp(tmp_path)
    try:
        odd = [{"id": {"a": 1}}, {"id": [1, 2]}, {"id": 1.5}, {"id": None}, {}, {"id": True}]
        for params in odd * 20:
            await server.send_message(
                {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": params}
            )
        # A cancel of a request that is not in flight (it was answered) is normal: no line.
        await server.send_message(
            {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "after"}}
        )
        await _probe(server, "after")
        log = server.log.decode(errors="replace")
        assert "Traceback" not in log
        assert "unhashable" not in log
        assert log.count("dropped $/cancelRequest") <= 50  # then DEBUG: the log stays bounded
        assert "Cancel notification for unknown message id" not in log
    finally:
        await server.close()


async def test_progress_cancels_with_odd_tokens_are_dropped_without_telling_the_user(
    tmp_path: Path,
) -> None:
    server = await _lsp(tmp_path)
    try:
        for token in ({"a": 1}, [1], 1.5, True):
            await server.send_message(
                {
                    "jsonrpc": "2.0",
                    "method": "window/workDoneProgress/cancel",
                    "params": {"token": token},
                }
            )
        await _probe(server, "after")
        log = server.log.decode(errors="replace")
        assert "unhashable" not in log and "InternalError" not in log
        assert log.count("dropped window/workDoneProgress/cancel") == 4
        shown = [m for m in server.messages if m.get("method") == "window/showMessage"]
        assert not shown, shown  # a client's mistake is not the user's error to read
    finally:
        await server.close()


async def test_responses_to_requests_never_sent_are_dropped_without_a_traceback(
    tmp_path: Path,
) -> None:
    server = await _lsp(tmp_path)
    try:
        for msg_id in (5, "s", 1.5, {"o": 1}):
            await server.send_message({"jsonrpc": "2.0", "id": msg_id, "result": {"x": 1}})
            await server.send_message({"jsonrpc": "2.0", "id": msg_id, "error": [1]})
        await _probe(server, "after")
        assert "Traceback" not in server.log.decode(errors="replace")
    finally:
        await server.close()


# --- ACP ----------------------------------------------------------------------------------


async def _acp_exchange(tmp_path: Path, lines: list[Any]) -> tuple[list[dict[str, Any]], str]:
    """Send `lines` then a probe to `agent-server acp`; the messages up to the probe's answer
    and the stderr."""
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    log_path = tmp_path / "stderr.log"
    with log_path.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agent_server",
            "acp",
            "--provider",
            "sim",
            "--sessions-dir",
            str(tmp_path / "sessions"),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=env,
        )
        assert process.stdin is not None and process.stdout is not None
        probe = {"jsonrpc": "2.0", "id": "probe", "method": "session/list", "params": {}}
        for line in [*lines, probe]:
            data = line if isinstance(line, bytes) else json.dumps(line).encode()
            process.stdin.write(data + b"\n")
        await process.stdin.drain()
        received: list[dict[str, Any]] = []
        try:
            while True:
                raw = await asyncio.wait_for(process.stdout.readline(), HANG_GUARD)
                assert raw, "the agent closed its output"
                message = json.loads(raw)
                received.append(message)
                if message.get("id") == "probe":
                    break
        finally:
            process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), 20)
            except TimeoutError:
                process.kill()
                await process.wait()
    return received, log_path.read_text(errors="replace")


async def test_acp_unknown_notifications_and_bad_cancels_log_one_line_each(
    tmp_path: Path,
) -> None:
    notes: list[Any] = []
    for params in ({}, None, {"sessionId": 5}, [1], "x"):
        notes.append({"jsonrpc": "2.0", "method": "session/cancel", "params": params})
    for method in ("zz", "session/unknown", "_agent/note", "$/cancel_request"):
        notes.append({"jsonrpc": "2.0", "method": method, "params": {"a": 1}})
    received, log = await _acp_exchange(tmp_path, notes * 10)
    assert received[-1]["id"] == "probe" and "result" in received[-1]
    assert "Traceback" not in log
    assert log.count("\n") <= 52  # 50 lines, the note that more go to DEBUG, a margin


async def test_acp_ids_that_are_no_ids_get_a_null_id_answer(tmp_path: Path) -> None:
    lines = [
        {"jsonrpc": "2.0", "id": {"n": 1}, "method": "session/list", "params": {}},
        {"jsonrpc": "2.0", "id": [1], "method": "session/list", "params": {}},
        {"jsonrpc": "2.0", "id": True, "method": "session/list", "params": {}},
        {"jsonrpc": "2.0", "id": 2.5, "method": "session/list", "params": {}},
    ]
    received, log = await _acp_exchange(tmp_path, lines)
    nulls = [m for m in received if m.get("id") is None and "error" in m]
    assert len(nulls) == 3, received
    assert any(m.get("id") == 2.5 for m in received)  # a number: answered with it
    assert "Traceback" not in log
