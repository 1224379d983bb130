"""`agent-server serve --tcp`: the same server over a socket, for debugging."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def read_message(reader: asyncio.StreamReader) -> dict:
    length = 0
    while True:
        line = (await reader.readline()).decode().strip()
        if not line:
            break
        if line.lower().startswith("content-length:"):
            length = int(line.split(":")[1])
    return json.loads(await reader.readexactly(length))


async def test_serve_over_tcp_answers_initialize_and_invalid_params(tmp_path: Path) -> None:
    port = free_port()
    server = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent_server", "serve", "--trust-editor-settings", "--tcp", f"127.0.0.1:{port}",
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        for _ in range(1200):  # a minute at most, for a busy machine
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                if server.returncode is not None:
                    raise AssertionError("the server exited before it listened") from None
                await asyncio.sleep(0.05)
        else:
            raise AssertionError("the server never listened")

        def send(message: dict) -> None:
            body = json.dumps(message).encode()
            writer.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}})
        answer = await asyncio.wait_for(read_message(reader), 30)
        assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "agent-server"
        send({"jsonrpc": "2.0", "id": 2, "method": "agent/session/list", "params": {}})
        answer = await asyncio.wait_for(read_message(reader), 30)
        while "id" not in answer:
            answer = await asyncio.wait_for(read_message(reader), 30)
        assert answer["error"]["code"] == -32602 and "workspaceUri" in answer["error"]["message"]
        writer.close()
    finally:
        server.kill()
        await server.wait()
