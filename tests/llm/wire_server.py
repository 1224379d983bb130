"""A one-route HTTP server on a real socket that answers as an OpenAI-compatible server
(Ollama, llama.cpp, vLLM, LM Studio) does: a fixed status, content type and body for every
request (or the one a function of the request's body picks: a server that refuses some
fields), the request bodies kept. For wire shapes the simulator does not produce."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Answer:
    """What the server sends back: `body` is JSON (an object) or the text of an SSE stream."""

    status: int = 200
    body: Any = ""
    content_type: str = "text/event-stream"


@dataclass
class WireServer:
    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)


def sse_body(chunks: Sequence[Any], done: bool = True) -> str:
    """Chat Completions chunks as the body of a server-sent event stream."""
    events = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks]
    if done:
        events.append("data: [DONE]\n\n")
    return "".join(events)


@asynccontextmanager
async def wire_server(
    answer_for: Answer | Callable[[dict[str, Any]], Answer],
) -> AsyncIterator[WireServer]:
    server_state = WireServer("")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "content-length":
                length = int(value)
        body = await reader.readexactly(length) if length else b""
        request = json.loads(body) if body else {}
        server_state.requests.append(request)
        answer = answer_for if isinstance(answer_for, Answer) else answer_for(request)
        payload = answer.body if isinstance(answer.body, str) else json.dumps(answer.body)
        data = payload.encode()
        content_type = answer.content_type if isinstance(answer.body, str) else "application/json"
        writer.write(
            f"HTTP/1.1 {answer.status} X\r\ncontent-type: {content_type}\r\n"
            f"content-length: {len(data)}\r\nconnection: close\r\n\r\n".encode() + data
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server_state.base_url = f"http://127.0.0.1:{port}/v1"
    try:
        yield server_state
    finally:
        server.close()
        await server.wait_closed()
