"""The write side of the stdio transport: messages queued, encoded once, written together.

pygls writes each message with its own write and flush; a streamed answer makes hundreds of
`agent/update` notifications a turn, and the syscalls and flushes were a quarter of the
server's time. Here every message sent in one turn of the event loop goes out in one write,
after the loop has done its work; in a burst, at most one write every 2 ms. Text chunks of
one message that go out in the same write are merged into one notification (the editor
would read them in one read anyway; encoding one notification per token was a fifth of a
streamed answer's cost, issue 31), as are those that wait behind a full pipe: when the pipe
to the editor is a pipe or socket, it is made non-blocking, so that a full pipe (an editor
slower than the model) never stalls the server (a client behind gets fewer, larger chunks;
nothing is lost and the order holds).

`agent/update` notifications get their `seq` here, when they are encoded, so that merged
chunks leave no gap. pygls's own messages (responses, requests, other notifications) come in
through `write` already encoded and keep their place in the queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import threading
from collections.abc import Mapping
from typing import Any, BinaryIO

from agent_server import protocol
from agent_server.lsp.items import CHUNK_KINDS

# A message sent after a quiet spell goes out at the end of the loop's turn; in a burst, what
# arrives within this many seconds of the last write goes out together with the next one.
WRITE_INTERVAL = 0.002


class _Update:
    """An `agent/update` waiting to be encoded (with the text of chunks merged into it)."""

    __slots__ = ("_texts", "_update", "session_id", "turn_id")

    def __init__(self, session_id: str, turn_id: str, update: Mapping[str, Any]) -> None:
        self.session_id = session_id
        self.turn_id = turn_id
        self._update = update
        self._texts: list[str] | None = None

    @property
    def update(self) -> Mapping[str, Any]:
        texts = self._texts
        if texts is None:
            return self._update
        text = "".join(texts)
        return {**self._update, "content": {"type": "text", "text": text}}

    def absorb(self, other: _Update) -> bool:
        """Append `other`'s text when both are chunks of the same message."""
        mine, theirs = self._update, other._update
        if (
            mine["kind"] not in CHUNK_KINDS
            or theirs["kind"] != mine["kind"]
            or theirs.get("messageId") != mine.get("messageId")
            or other.session_id != self.session_id
            or other.turn_id != self.turn_id
            or other._texts is not None
        ):
            return False
        if self._texts is None:
            self._texts = [mine["content"]["text"]]
        self._texts.append(theirs["content"]["text"])
        return True


def frame(message: Mapping[str, Any]) -> bytes:
    """One JSON-RPC message with its header, encoded once (UTF-8; the length in bytes)."""
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Outbox:
    """What the server sends, queued (see the module docstring). A file-like object for
    pygls's stdout writer (`write`, `flush`), plus `notify` and `update` for our own
    notifications."""

    def __init__(self, stream: BinaryIO) -> None:
        self._fd = stream.fileno()
        mode = os.fstat(self._fd).st_mode
        self._nonblocking = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
        if self._nonblocking:
            os.set_blocking(self._fd, False)
        self._lock = threading.Lock()
        self._queue: list[bytes | _Update] = []
        self._buffer = bytearray()  # encoded, not yet written
        self._seq: dict[tuple[str, str], int] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scheduled = False
        self._last_write = 0.0  # the loop's clock at the last write
        self._waiting = False  # the pipe is full: waiting until it can take more
        self._idle = threading.Event()
        self._idle.set()
        self.closed = False

    # --- what goes in ---------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """An encoded message (pygls's)."""
        self._put(bytes(data))

    def flush(self) -> None:
        """Nothing: messages go out together at the end of the loop's turn."""

    def notify(self, method: str, params: Any) -> None:
        self._put(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    def update(self, session_id: str, turn_id: str, update: Mapping[str, Any]) -> None:
        """An `agent/update`; its `seq` is given when it is encoded."""
        self._put(_Update(session_id, turn_id, update))

    def end_turn(self, session_id: str, turn_id: str) -> None:
        """The turn's updates are all queued: forget its `seq` counter once they are sent."""
        with self._lock:
            self._queue.append(_Update(session_id, turn_id, {"kind": "_end"}))

    @property
    def pending_bytes(self) -> int:
        return len(self._buffer)

    # --- what goes out --------------------------------------------------------------------

    def _put(self, item: bytes | _Update) -> None:
        if self.closed:
            return
        with self._lock:
            queue = self._queue
            if (
                isinstance(item, _Update)
                and queue
                and isinstance(queue[-1], _Update)
                and queue[-1].absorb(item)
            ):
                return
            queue.append(item)
            if self._idle.is_set():  # clear() takes the event's own lock: once, not per item
                self._idle.clear()
            if self._scheduled or self._waiting:
                return
            self._scheduled = True
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            self._loop = loop
            wait = self._last_write + WRITE_INTERVAL - loop.time()
            if wait > 0:  # in a burst: at most one write per interval
                loop.call_later(wait, self._send)
            else:
                loop.call_soon(self._send)
        elif self._loop is not None and self._loop.is_running():  # from another thread
            self._loop.call_soon_threadsafe(self._send)
        else:
            self._send(block=True)

    def _encode(self) -> None:
        with self._lock:
            queue, self._queue = self._queue, []
            self._scheduled = False
        out = self._buffer
        for item in queue:
            if isinstance(item, bytes):
                out += item
                continue
            key = (item.session_id, item.turn_id)
            update = item.update
            if update["kind"] == "_end":
                self._seq.pop(key, None)
                continue
            seq = self._seq.get(key, 0)
            self._seq[key] = seq + 1
            params = {
                "sessionId": item.session_id,
                "turnId": item.turn_id,
                "seq": seq,
                "update": update,
            }
            out += frame({"jsonrpc": "2.0", "method": protocol.UPDATE.name, "params": params})

    def _send(self, block: bool = False) -> None:
        """Encode what is queued and write as much as the pipe takes."""
        self._encode()
        try:
            while self._buffer:
                try:
                    written = os.write(self._fd, self._buffer)
                except BlockingIOError:
                    if block or self._loop is None:
                        os.set_blocking(self._fd, True)
                        try:
                            written = os.write(self._fd, self._buffer)
                        finally:
                            os.set_blocking(self._fd, False)
                    else:
                        self._wait_for_room()
                        return
                del self._buffer[:written]
                if self._loop is not None:
                    self._last_write = self._loop.time()
                if not self._buffer:
                    self._encode()  # anything queued meanwhile (from another thread)
        except OSError:  # the editor went away: nothing more can be sent
            self._buffer.clear()
            self.closed = True
        with self._lock:
            if not self._queue and not self._buffer:
                self._idle.set()

    def _wait_for_room(self) -> None:
        assert self._loop is not None
        with self._lock:
            self._waiting = True
        self._loop.add_writer(self._fd, self._room)

    def _room(self) -> None:
        assert self._loop is not None
        self._loop.remove_writer(self._fd)
        with self._lock:
            self._waiting = False
        self._send()

    async def drained(self) -> None:
        """Wait until everything queued has been written."""
        await asyncio.to_thread(self._idle.wait)

    def close(self) -> None:
        """Write everything still queued (blocking), and give the descriptor back as it was."""
        loop, self._loop = self._loop, None
        if loop is not None and self._waiting and not loop.is_closed():
            with contextlib.suppress(RuntimeError, ValueError):
                loop.remove_writer(self._fd)
        self._waiting = False
        if self._nonblocking:
            with contextlib.suppress(OSError):
                os.set_blocking(self._fd, True)
        if not self.closed:
            self._send(block=True)
