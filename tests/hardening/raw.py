"""A raw LSP connection to `agent-server serve` over real stdio: bytes in, framed JSON out.

The framing and error tests need to send what no well-behaved client would (a lying
Content-Length, invalid UTF-8, a batch array), so they talk to the server byte by byte.
`answer` waits for the reply to one id; a missing reply fails the test after a hang guard
(not a timing assert: the server either answers or it does not; the guard is generous
because the first model call of a server loads the provider SDK, slow on a busy machine).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HANG_GUARD = 120.0  # seconds before a missing answer fails the test (a loaded CI machine)


def frame(body: bytes | str | dict[str, Any] | list[Any]) -> bytes:
    if isinstance(body, dict | list):
        body = json.dumps(body)
    if isinstance(body, str):
        body = body.encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def request(msg_id: int | str, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize(
    root: Path, settings: dict[str, Any] | None = None, *, request_permission: bool = False
) -> dict[str, Any]:
    """`request_permission`: the client answers agent/requestPermission (else the server asks
    with window/showMessageRequest)."""
    options: dict[str, Any] = {"settings": settings or {}}
    if request_permission:
        options["clientCapabilities"] = {"requestPermission": True}
    return request(
        "init",
        "initialize",
        {
            "processId": None,
            "rootUri": root.as_uri(),
            "capabilities": {},
            "initializationOptions": options,
        },
    )


async def read_frame(stdout: asyncio.StreamReader) -> bytes | None:
    """One LSP message body from the server's output (None at its end)."""
    length = None
    while True:
        line = await stdout.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    assert length is not None
    return await stdout.readexactly(length)


@dataclass
class RawServer:
    process: asyncio.subprocess.Process
    messages: list[dict[str, Any]] = field(default_factory=list)
    log: bytearray = field(default_factory=bytearray)  # stderr, as it arrives
    hang_guard: float = HANG_GUARD
    _reader: asyncio.Task[None] | None = None
    _log_reader: asyncio.Task[None] | None = None
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)
    ended: bool = False

    @classmethod
    async def start(
        cls, env: dict[str, str] | None = None, *args: str, cwd: Path | None = None,
        trusted: bool = True,
    ) -> RawServer:
        """`cwd`: the folder it runs in (an editor starts it in the workspace folder);
        `trusted`: as the VS Code extension starts it, taking every setting the client
        sends (`--trust-editor-settings`), else as a plain LSP editor."""
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agent_server",
            *args,
            "serve",
            *(["--trust-editor-settings"] if trusted else []),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=cwd,
            limit=1 << 24,
        )
        server = cls(process)
        server._reader = asyncio.create_task(server._read())
        server._log_reader = asyncio.create_task(server._read_log())
        return server

    async def _read_log(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        while chunk := await stderr.read(65536):
            self.log += chunk

    async def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            while (body := await read_frame(stdout)) is not None:
                self.messages.append(json.loads(body))
                self._arrived.set()
        finally:
            self.ended = True
            self._arrived.set()

    async def send(self, data: bytes) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(data)
        await stdin.drain()

    async def send_message(self, body: Any) -> None:
        await self.send(frame(body))

    async def wait_for(self, predicate: Any, what: str) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.hang_guard
        while True:
            for message in self.messages:
                if predicate(message):
                    return message
            if self.ended:
                raise AssertionError(f"the server ended before {what}")
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AssertionError(f"no {what} within {self.hang_guard} s")
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), remaining)

    async def answer(self, msg_id: Any) -> dict[str, Any]:
        """The response to `msg_id` (None: an error response with a null id)."""
        return await self.wait_for(
            lambda m: "id" in m and m["id"] == msg_id and ("result" in m or "error" in m),
            f"answer to id {msg_id!r}",
        )

    async def initialize(
        self, root: Path, settings: dict[str, Any] | None = None, *, request_permission: bool = False
    ) -> None:
        await self.send_message(initialize(root, settings, request_permission=request_permission))
        answer = await self.answer("init")
        assert "result" in answer, answer
        await self.send_message({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    async def new_session(self, workspace: Path, msg_id: str = "new") -> str:
        """A new session in `workspace` (agent/session/new): its id."""
        await self.send_message(
            request(msg_id, "agent/session/new", {"workspaceUri": workspace.as_uri()})
        )
        answer = await self.answer(msg_id)
        assert "result" in answer, answer
        return str(answer["result"]["sessionId"])

    async def close(self) -> int:
        if self.process.returncode is None:
            try:
                await self.send_message(request("bye", "shutdown"))
                await self.answer("bye")
                await self.send_message({"jsonrpc": "2.0", "method": "exit"})
                await asyncio.wait_for(self.process.wait(), self.hang_guard)
            except (AssertionError, ConnectionError, TimeoutError):
                self.process.kill()
                await self.process.wait()
        for task in (self._reader, self._log_reader):
            if task is not None:
                await task
        return self.process.returncode or 0
