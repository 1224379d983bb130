"""The LSP edge over real stdio: every message with an id is answered, the stream survives
bad framing, and the log stays bounded.

One server per module runs the whole table (starting a server per case would dominate the
run). After each case a probe request checks that the stream is still in step: its answer
must come, with its own id.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from .raw import RawServer, frame, request

pytestmark = pytest.mark.asyncio(loop_scope="module")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002
UNKNOWN_SESSION = -33001
BIG = "x" * 3_000_000  # a value that must never come back whole, in an answer or the log


@dataclass(frozen=True)
class Case:
    name: str
    data: bytes  # what is written to the server's stdin
    answer_id: Any  # the id the answer must carry (None: a null id)
    code: int
    says: str  # a fragment of the error message


def body(message: Any) -> bytes:
    return frame(message)


CASES = [
    # --- framing ------------------------------------------------------------------------
    Case(
        "Content-Length of ten terabytes (was a MemoryError)",
        b'Content-Length: 10000000000000\r\n\r\n{"jsonrpc":"2.0","id":"tb","method":"x"}',
        "tb",
        INVALID_REQUEST,
        "larger than the 64 MB",
    ),
    Case(
        "Content-Length beyond 64 bits (was an OverflowError)",
        b'Content-Length: 20000000000000000000\r\n\r\n{"id":"huge","jsonrpc":"2.0"}',
        "huge",
        INVALID_REQUEST,
        "larger than the 64 MB",
    ),
    Case(
        "a gigabyte announced, a few bytes sent (was a gigabyte wait)",
        b'Content-Length: 1000000000\r\n\r\n{"jsonrpc":"2.0","id":"gb","method":"agent/usage"}',
        "gb",
        INVALID_REQUEST,
        "larger than the 64 MB",
    ),
    Case(
        "no Content-Length",
        b'Content-Type: application/vscode-jsonrpc\r\n\r\n{"jsonrpc":"2.0","id":"nolen"}',
        "nolen",
        INVALID_REQUEST,
        "without Content-Length",
    ),
    Case(
        "a Content-Length that is not a number",
        b'Content-Length: twelve\r\n\r\n{"jsonrpc":"2.0","id":"word"}',
        "word",
        INVALID_REQUEST,
        "must be a number of bytes",
    ),
    Case(
        "a negative Content-Length",
        b'Content-Length: -5\r\n\r\n{"jsonrpc":"2.0","id":"neg"}',
        "neg",
        INVALID_REQUEST,
        "must be a number of bytes",
    ),
    Case(
        "a header line without a colon",
        b'hello there\r\n\r\n{"jsonrpc":"2.0","id":"colon"}',
        "colon",
        INVALID_REQUEST,
        "without a colon",
    ),
    Case(
        "a header that never ends",
        b"X-Padding: " + b"a" * 20000,
        None,
        INVALID_REQUEST,
        "header longer than",
    ),
    # --- JSON-RPC -----------------------------------------------------------------------
    Case(
        "invalid UTF-8",
        body(b'{"jsonrpc":"2.0","id":"utf","method":"agent/usage","params":{"s":"\xff\xfe"}}'),
        "utf",
        PARSE_ERROR,
        "not valid UTF-8",
    ),
    Case(
        "truncated JSON",
        body(b'{"jsonrpc":"2.0","id":"cut","method":"agent/usa'),
        "cut",
        PARSE_ERROR,
        "not valid JSON",
    ),
    Case(
        "a body nested 1,000 deep",
        body(
            '{"jsonrpc":"2.0","id":"deep","method":"agent/usage","params":{"a":'
            + "[" * 1000
            + "]" * 1000
            + "}}"
        ),
        "deep",
        PARSE_ERROR,
        "nests too deeply",
    ),
    Case(
        "a body nested 100,000 deep",
        body('{"jsonrpc":"2.0","id":"deeper","params":' + "[" * 100_000 + "]" * 100_000 + "}"),
        "deeper",
        PARSE_ERROR,
        "nests too deeply",
    ),
    Case(
        "not an object",
        body('"hello"'),
        None,
        INVALID_REQUEST,
        "must be a JSON object",
    ),
    Case(
        "a batch array",
        body([request("b1", "agent/usage", {"sessionId": "s"}), {"jsonrpc": "2.0"}]),
        "b1",
        INVALID_REQUEST,
        "batch messages",
    ),
    Case("an empty batch", body([]), None, INVALID_REQUEST, "batch messages"),
    Case(
        "jsonrpc missing",
        body({"id": "v0", "method": "agent/usage", "params": {}}),
        "v0",
        INVALID_REQUEST,
        '"jsonrpc": "2.0"',
    ),
    Case(
        'jsonrpc "1.0"',
        body({"jsonrpc": "1.0", "id": "v1", "method": "agent/usage", "params": {}}),
        "v1",
        INVALID_REQUEST,
        '"jsonrpc": "2.0"',
    ),
    Case(
        "method: 5 (was -32603 with a TypeError)",
        body({"jsonrpc": "2.0", "id": "m5", "method": 5}),
        "m5",
        INVALID_REQUEST,
        "method must be a string",
    ),
    Case(
        "an id that is no id (a fractional one is answered with it: test_fuzz_kinds.py)",
        body({"jsonrpc": "2.0", "id": {"n": 1}, "method": "agent/usage", "params": {}}),
        None,
        INVALID_REQUEST,
        "id must be an integer or a string",
    ),
    Case(
        "params that are neither object nor array",
        body({"jsonrpc": "2.0", "id": "p", "method": "agent/usage", "params": "s"}),
        "p",
        INVALID_REQUEST,
        "params must be an object or an array",
    ),
    Case(
        "neither a method nor a result",
        body({"jsonrpc": "2.0", "id": "what"}),
        "what",
        INVALID_REQUEST,
        "needs a method",
    ),
    Case(
        "a notification method sent with an id (was never answered)",
        body(request("note", "initialized", {})),
        "note",
        INVALID_REQUEST,
        "initialized is a notification",
    ),
    Case(
        "$/cancelRequest sent with an id",
        body(request("cancel", "$/cancelRequest", {"id": 3})),
        "cancel",
        INVALID_REQUEST,
        "is a notification",
    ),
    Case(
        "an unknown method",
        body(request("unknown", "agent/" + "z" * 10_000, {})),
        "unknown",
        METHOD_NOT_FOUND,
        "unknown method",
    ),
    Case(
        "a request without params (was never answered)",
        body({"jsonrpc": "2.0", "id": "noparams", "method": "agent/usage"}),
        "noparams",
        INVALID_PARAMS,
        "'sessionId' is required",
    ),
    Case(
        "params as an array",
        body(request("array", "agent/usage", [1, 2])),
        "array",
        INVALID_PARAMS,
        "params must be an object",
    ),
    Case(
        "a standard request whose params its type refuses",
        body(request("exec", "workspace/executeCommand", {})),
        "exec",
        INVALID_PARAMS,
        "required field missing",
    ),
    Case(
        "initialize a second time",
        body(request("again", "initialize", {"processId": None, "capabilities": {}})),
        "again",
        INVALID_REQUEST,
        "already received",
    ),
    Case(
        "a multi-megabyte value is not echoed",
        body(request("big", "agent/usage", {"sessionId": BIG})),
        "big",
        UNKNOWN_SESSION,
        "unknown session xxx",
    ),
]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RawServer]:
    root = tmp_path_factory.mktemp("edge")
    server = await RawServer.start()
    settings = {"provider": "sim", "sessionsDir": str(root / "sessions")}
    await server.initialize(root, settings)
    yield server
    await server.close()


async def probe(server: RawServer, tag: str) -> None:
    """A good request right after a case: the stream must still be in step."""
    msg_id = f"probe-{tag}"
    await server.send_message(request(msg_id, "agent/usage", {"sessionId": "no-such"}))
    answer = await server.answer(msg_id)
    assert answer["error"]["code"] == UNKNOWN_SESSION, answer


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_every_request_is_answered(server: RawServer, case: Case) -> None:
    seen = len(server.messages)
    await server.send(case.data)
    if case.answer_id is None:
        answer = await server.wait_for(
            lambda m: server.messages.index(m) >= seen and m.get("id", 0) is None, "a null id"
        )
    else:
        answer = await server.answer(case.answer_id)
    assert answer["error"]["code"] == case.code, answer
    assert case.says in answer["error"]["message"], answer
    assert len(json.dumps(answer)) < 5000, "a value came back whole"
    await probe(server, re.sub(r"\W+", "-", case.name))


async def test_a_batch_answers_each_request_in_it(server: RawServer) -> None:
    await server.send_message([request("x1", "agent/usage", {}), request("x2", "shutdown")])
    for msg_id in ("x1", "x2"):
        answer = await server.answer(msg_id)
        assert answer["error"]["code"] == INVALID_REQUEST
    await probe(server, "batch")


async def test_a_big_message_under_the_cap_is_read_whole(server: RawServer) -> None:
    await server.send_message(request("under", "agent/usage", {"sessionId": "s" * 5_000_000}))
    answer = await server.answer("under")
    assert answer["error"]["code"] == UNKNOWN_SESSION


async def test_a_message_split_across_writes_is_read(server: RawServer) -> None:
    data = frame(request("split", "agent/usage", {"sessionId": "no-such"}))
    for i in range(0, len(data), 7):
        await server.send(data[i : i + 7])
    assert (await server.answer("split"))["error"]["code"] == UNKNOWN_SESSION


async def test_the_log_is_bounded_and_has_no_tracebacks(tmp_path: Path) -> None:
    server = await RawServer.start()
    await server.initialize(tmp_path, {"provider": "sim", "sessionsDir": str(tmp_path / "s")})
    for case in CASES:
        await server.send(case.data)
    for _ in range(3):  # values the handlers refuse, not the framing
        await server.send_message(request("v", "agent/turn", {"sessionId": BIG, "prompt": BIG}))
        await server.answer("v")
    await probe(server, "log")
    await server.close()
    log = server.log.decode("utf-8", errors="replace")
    assert "Traceback" not in log
    assert BIG[:10_000] not in log
    assert max((len(line) for line in log.splitlines()), default=0) <= 8_200
    assert len(server.log) < 100_000, len(server.log)


# --- the lifecycle: each needs a fresh server ------------------------------------------


async def test_requests_before_initialize_get_server_not_initialized(tmp_path: Path) -> None:
    server = await RawServer.start()
    try:
        await server.send_message({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        await server.send_message(request(1, "agent/session/list", {"workspaceUri": "file:///"}))
        answer = await server.answer(1)
        assert answer["error"]["code"] == SERVER_NOT_INITIALIZED
        assert "send initialize" in answer["error"]["message"]
        await server.initialize(tmp_path)
        await server.send_message(request(2, "agent/session/list", {"workspaceUri": "x"}))
        assert (await server.answer(2))["error"]["code"] == INVALID_PARAMS
    finally:
        await server.close()


async def test_requests_after_shutdown_are_invalid_and_exit_ends_the_server(
    tmp_path: Path,
) -> None:
    server = await RawServer.start()
    await server.initialize(tmp_path)
    await server.send_message(request("down", "shutdown"))
    assert (await server.answer("down"))["result"] is None
    await server.send_message(request("late", "agent/usage", {"sessionId": "s"}))
    answer = await server.answer("late")
    assert answer["error"]["code"] == INVALID_REQUEST
    assert "shutting down" in answer["error"]["message"]
    await server.send_message({"jsonrpc": "2.0", "method": "exit"})
    assert await asyncio.wait_for(server.process.wait(), 30) == 0
    await server.close()


async def test_exit_without_shutdown_exits_with_1(tmp_path: Path) -> None:
    server = await RawServer.start()
    await server.initialize(tmp_path)
    await server.send_message({"jsonrpc": "2.0", "method": "exit"})
    assert await asyncio.wait_for(server.process.wait(), 30) == 1
    await server.close()


async def test_the_end_of_the_input_ends_the_server(tmp_path: Path) -> None:
    server = await RawServer.start()
    await server.initialize(tmp_path)
    assert server.process.stdin is not None
    server.process.stdin.close()
    assert await asyncio.wait_for(server.process.wait(), 30) == 0
    await server.close()


@pytest.mark.parametrize("then_close", [False, True], ids=["stdin open", "stdin closed"])
async def test_shutdown_and_exit_in_one_write_answer_shutdown_and_exit_with_0(
    tmp_path: Path, then_close: bool
) -> None:
    """`exit` read while the shutdown handler is still closing the folders (was: shutdown
    never answered, exit code 1, tracebacks on stderr)."""
    server = await RawServer.start()
    await server.initialize(tmp_path, {"provider": "sim", "sessionsDir": str(tmp_path / "s")})
    await server.send_message(request("new", "agent/session/new", {"workspaceUri": tmp_path.as_uri()}))
    assert "result" in await server.answer("new")
    exit_ = {"jsonrpc": "2.0", "method": "exit"}
    await server.send(frame(request("down", "shutdown")) + frame(exit_))
    if then_close:
        assert server.process.stdin is not None
        server.process.stdin.close()
    assert await asyncio.wait_for(server.process.wait(), 30) == 0
    await server.close()
    assert (await server.answer("down"))["result"] is None
    log = server.log.decode("utf-8", errors="replace")
    assert "Traceback" not in log, log


async def test_exit_without_shutdown_in_one_write_exits_with_1_quietly(tmp_path: Path) -> None:
    server = await RawServer.start()
    initialized = {"jsonrpc": "2.0", "method": "initialized", "params": {}}
    await server.send(
        frame(request("init", "initialize", {"processId": None, "capabilities": {}}))
        + frame(initialized)
        + frame({"jsonrpc": "2.0", "method": "exit"})
    )
    assert await asyncio.wait_for(server.process.wait(), 30) == 1
    await server.close()
    assert "result" in await server.answer("init")
    log = server.log.decode("utf-8", errors="replace")
    assert "Traceback" not in log, log
