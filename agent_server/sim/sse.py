"""Sending answers: server-sent events, plain JSON, and the faults that break them.

The answers are complete before the first byte goes out (the simulator plans the whole output),
so a response is a list of byte chunks sent in order. A `slow` fault delays the first byte; a
`drop` fault sends some chunks and then cuts the connection, so the client sees an incomplete
body, never a clean end.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from starlette.types import Receive, Scope, Send


class SimulatedDrop(Exception):
    """Raised inside the ASGI app to make the server cut the connection mid-response."""


class _DropFilter(logging.Filter):
    """Keeps the server's log free of the tracebacks of drops we caused on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, SimulatedDrop)


_filter_installed = False


def install_drop_log_filter() -> None:
    global _filter_installed
    if not _filter_installed:
        logging.getLogger("uvicorn.error").addFilter(_DropFilter())
        _filter_installed = True


def sse_event(event: str | None, data: Mapping[str, Any] | str) -> bytes:
    """One event: `event:` line (when named) and one `data:` line, then a blank line."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False,
                                                             separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def json_bytes(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


class ChunkedResponse:
    """An ASGI response made of prepared chunks, with an optional delay and drop."""

    def __init__(
        self,
        chunks: Sequence[bytes],
        *,
        status: int = 200,
        media_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
        drop_after: int | None = None,
        streaming: bool = False,
    ) -> None:
        self.chunks = list(chunks)
        self.status = status
        self.media_type = media_type
        self.headers = dict(headers or {})
        self.delay = delay
        self.drop_after = drop_after
        self.streaming = streaming

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.delay > 0:
            await asyncio.sleep(self.delay)
        headers = [(b"content-type", self.media_type.encode())]
        if self.streaming:
            headers.append((b"cache-control", b"no-cache"))
        else:
            length = sum(len(chunk) for chunk in self.chunks)
            headers.append((b"content-length", str(length).encode()))
        headers.extend((k.lower().encode(), v.encode()) for k, v in self.headers.items())
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        if self.drop_after is not None:
            await self._send_then_drop(send)
            return
        for chunk in self.chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if self.streaming:
                await asyncio.sleep(0)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _send_then_drop(self, send: Send) -> None:
        assert self.drop_after is not None
        if self.streaming:
            count = max(0, min(self.drop_after, len(self.chunks) - 1))
            for chunk in self.chunks[:count]:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await asyncio.sleep(0)
        else:
            body = b"".join(self.chunks)
            await send({"type": "http.response.body", "body": body[: len(body) // 2],
                        "more_body": True})
        await asyncio.sleep(0.01)  # let the bytes reach the socket before it is cut
        raise SimulatedDrop("connection dropped by the simulator's fault plan")
