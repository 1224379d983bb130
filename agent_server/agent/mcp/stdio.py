"""The stdio transport to an MCP server, reading what it writes in bounded memory.

The SDK's `stdio_client` joins each chunk of the server's output to what came before it
until a newline arrives, so a message of N bytes costs O(N^2) and is held whole however
large: a 20 MB tool result took 23 s (15 s of CPU) and left the server 213 MB larger for
good. This transport plugs into the SDK's `Client` the same way, with the SDK's process
lifecycle (the server in a process group of its own; on shutdown its stdin closed, then
SIGTERM and SIGKILL to the group, every wait bounded), and reads lines in linear time under
a bound: a message over `max_message` bytes is never held. Its bytes are counted and
dropped as they arrive, and the request it answers gets a JSON-RPC error that says how large
it was (its id is read from the message's first or last bytes). After a large message the
SDK is made to let go of it, and the heap is given back to the system (`give_back_memory`).

Windows: the SDK's own transport (its Job Objects), unbounded.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, TextIO

import anyio
import anyio.abc
import mcp_types
from mcp import StdioServerParameters
from mcp.client._transport import TransportStreams
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from agent_server.jsonrpc import INTERNAL_ERROR, answerable_id, find_request_id

log = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGE = 64 * 1024 * 1024
LARGE_MESSAGE = 1024 * 1024  # after a message this large, the heap is trimmed
_EDGE = 4096  # bytes kept from each end of a message too large to read, to find its id
_STOP_GRACE = 2.0  # seconds for the server to exit once its stdin is closed
_KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL to its process group
_FLUSH_GRACE = 0.5  # seconds for the writer to send what it accepted
_TAIL_ID = re.compile(rb'"id"\s*:\s*(-?\d+(?:\.\d+)?|"(?:[^"\\]|\\.)*")\s*}\s*$')


@dataclass(slots=True)
class Oversized:
    """A message too large to read: its size, and its two ends (to find its id in)."""

    size: int
    head: bytes
    tail: bytes = b""

    def answer_id(self) -> int | str | float | None:
        found = find_request_id(self.head)
        if found is None:
            match = _TAIL_ID.search(self.tail)
            if match is not None:
                with contextlib.suppress(ValueError):
                    found = answerable_id(json.loads(match.group(1)))
        return found


class Released(Exception):
    """Sent after a large message so that the SDK lets go of it; not an error."""


class LineReader:
    """Splits a byte stream into lines (newline-delimited JSON-RPC), each line scanned once;
    a line longer than `limit` comes out as an `Oversized`, never held whole."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._skipping: Oversized | None = None

    def feed(self, data: bytes) -> list[bytes | Oversized]:
        out: list[bytes | Oversized] = []
        if self._skipping is not None:
            end = data.find(b"\n")
            skipping = self._skipping
            if end == -1:
                skipping.size += len(data)
                skipping.tail = (skipping.tail + data)[-_EDGE:]
                return out
            skipping.size += end
            skipping.tail = (skipping.tail + data[:end])[-_EDGE:]
            out.append(skipping)
            self._skipping = None
            data = data[end + 1 :]
        scanned = len(self._buffer)  # the buffer holds no newline
        self._buffer += data
        start = 0
        while (end := self._buffer.find(b"\n", max(start, scanned))) != -1:
            if end - start > self.limit:
                out.append(
                    Oversized(
                        end - start,
                        bytes(self._buffer[start : start + _EDGE]),
                        bytes(self._buffer[max(start, end - _EDGE) : end]),
                    )
                )
            else:
                out.append(bytes(self._buffer[start:end]))
            start = end + 1
        del self._buffer[:start]
        if len(self._buffer) > self.limit:
            self._skipping = Oversized(
                len(self._buffer), bytes(self._buffer[:_EDGE]), bytes(self._buffer[-_EDGE:])
            )
            self._buffer = bytearray()
        return out


def too_large_answer(message: Oversized, limit: int) -> SessionMessage | Exception:
    """What the session gets for a message too large to read: an error answer to the
    request it answers, or (no id found) an exception it logs."""
    text = (
        f"the MCP server's answer was {message.size / 2**20:.1f} MB, more than the "
        f"{limit / 2**20:g} MB an answer may have (the mcp.maxResultMB setting), so it was "
        "not read. Ask the tool for less: a narrower query, a page, a limit."
    )
    msg_id = message.answer_id()
    if msg_id is None:
        return ValueError(text + " (no request id found in it)")
    error = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": INTERNAL_ERROR, "message": text}}
    return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_python(error))


def parse_line(line: bytes) -> SessionMessage | Exception:
    """One line as a JSON-RPC message; a line that is none is returned as the error."""
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line))
    except ValueError as error:
        log.warning("an MCP server wrote a line that is not a JSON-RPC message: %s", error)
        return error


def give_back_memory() -> None:
    """Return the freed heap to the system (glibc): after a message of megabytes, the
    allocator otherwise keeps the pages for good."""
    trim = _MALLOC_TRIM
    if trim is not None:
        trim(0)


def _malloc_trim() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL(None).malloc_trim
    return None


_MALLOC_TRIM = _malloc_trim()


@contextlib.asynccontextmanager
async def bounded_stdio(
    params: StdioServerParameters, errlog: TextIO, max_message: int = DEFAULT_MAX_MESSAGE
) -> AsyncIterator[TransportStreams]:
    """Start the server and connect to it over its stdin and stdout (see the module)."""
    if sys.platform == "win32":  # pragma: no cover
        async with stdio_client(params, errlog=errlog) as streams:
            yield streams
        return
    process = await anyio.open_process(
        [params.command, *params.args],
        env=get_default_environment() | (params.env or {}),
        stderr=errlog,
        cwd=params.cwd,
        start_new_session=True,
    )
    # No awaits until the task group is entered: a cancellation there would leak the process.
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()

    async def read() -> None:
        assert process.stdout is not None
        lines = LineReader(max_message)
        try:
            async with read_writer:
                async for chunk in process.stdout:
                    for line in lines.feed(chunk):
                        large = isinstance(line, Oversized) or len(line) > LARGE_MESSAGE
                        if isinstance(line, Oversized):
                            item = too_large_answer(line, max_message)
                        else:
                            item = parse_line(line)
                        del line
                        try:
                            await read_writer.send(item)
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            return
                        del item
                        if large:
                            # The SDK's read loop keeps the last message it got until the
                            # next one comes: a marker (which the session ignores) frees it.
                            with contextlib.suppress(
                                anyio.ClosedResourceError, anyio.BrokenResourceError
                            ):
                                await read_writer.send(Released())
                            give_back_memory()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            pass
        finally:
            await _drain(process)

    async def write() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((data + "\n").encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()  # the session sees the end, not a request that hangs
        finally:
            writer_done.set()

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(write)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):  # every wait below is bounded
                read_stream.close()
                write_stream.close()
                with anyio.move_on_after(_FLUSH_GRACE):
                    await writer_done.wait()
                await _stop(process)
                for stream in (read_stream, write_stream, read_writer, write_reader):
                    await stream.aclose()
            group.cancel_scope.cancel()


async def _drain(process: anyio.abc.Process) -> None:
    """Read and drop what the server still writes, so that it can exit."""
    assert process.stdout is not None
    with anyio.CancelScope(shield=True), contextlib.suppress(
        anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError
    ):
        while True:
            await process.stdout.receive()


async def _stop(process: anyio.abc.Process) -> None:
    """Close the server's stdin, give it time to exit, then end its process group."""
    assert process.stdin is not None
    assert process.stdout is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not await _exited(process, _STOP_GRACE):
        await terminate_posix_process_tree(process, _KILL_GRACE)
        if not await _exited(process, _KILL_GRACE):
            log.warning("MCP server process %d is still alive after SIGKILL", process.pid)
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()


async def _exited(process: anyio.abc.Process, seconds: float) -> bool:
    """Polls the return code: `wait()` would also wait for the pipes to close, which a child
    of the server that inherited them can hold open."""
    with anyio.move_on_after(seconds):
        while process.returncode is None:  # noqa: ASYNC110
            await anyio.sleep(0.01)
    return process.returncode is not None
