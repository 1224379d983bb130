"""The write side of the transport: batched, ordered, numbered, and text chunks merged when
they leave in the same write (or wait behind a full pipe), never across another message."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from agent_server.lsp.outbox import Outbox


def parse_frames(data: bytes) -> list[dict[str, Any]]:
    messages = []
    while data:
        header, _, rest = data.partition(b"\r\n\r\n")
        assert header.startswith(b"Content-Length: ")
        length = int(header.split(b": ")[1])
        messages.append(json.loads(rest[:length]))
        data = rest[length:]
    return messages


def read_all(fd: int, into: list[bytes]) -> None:
    while chunk := os.read(fd, 1 << 16):
        into.append(chunk)


def chunk(n: int, message: str = "m1") -> dict[str, Any]:
    return {
        "kind": "messageChunk",
        "messageId": message,
        "content": {"type": "text", "text": f"w{n} "},
    }


async def read_back(fill: Callable[[Outbox], Awaitable[None]]) -> list[dict[str, Any]]:
    """The messages an outbox filled by `fill` writes to a pipe that a thread keeps reading."""
    read_end, write_end = os.pipe()
    received: list[bytes] = []
    reader = threading.Thread(target=read_all, args=(read_end, received))
    reader.start()
    with os.fdopen(write_end, "wb", buffering=0) as stream:
        outbox = Outbox(stream)
        await fill(outbox)
        await outbox.drained()
        outbox.close()
    reader.join()
    return parse_frames(b"".join(received))


async def test_a_fast_reader_gets_every_text_numbered_in_order() -> None:
    async def fill(outbox: Outbox) -> None:
        for n in range(50):
            outbox.update("s", "t", chunk(n))
            if n == 20:
                outbox.write(b"Content-Length: 2\r\n\r\n{}")  # pygls's own message, in its place
            await asyncio.sleep(0)

    messages = await read_back(fill)
    updates = [m["params"] for m in messages if m.get("method") == "agent/update"]
    assert [u["seq"] for u in updates] == list(range(len(updates)))
    texts = [u["update"]["content"]["text"] for u in updates]
    assert "".join(texts) == "".join(f"w{n} " for n in range(50))
    # Chunks merge only with the chunks beside them: never across pygls's message.
    before = messages.index({})
    assert "".join(texts[:before]) == "".join(f"w{n} " for n in range(21))


async def test_chunks_that_leave_in_one_write_are_one_notification() -> None:
    async def fill(outbox: Outbox) -> None:
        for n in range(10):  # one turn of the loop: one write
            outbox.update("s", "t", chunk(n))
        outbox.update("s", "t", chunk(10, "m2"))  # another message: its own notification
        outbox.update("s", "t", {"kind": "toolCall", "toolCallId": "c"})
        outbox.update("s", "t", chunk(11, "m2"))

    updates = [m["params"]["update"] for m in await read_back(fill)]
    assert updates == [
        {**chunk(0), "content": {"type": "text", "text": "".join(f"w{n} " for n in range(10))}},
        chunk(10, "m2"),
        {"kind": "toolCall", "toolCallId": "c"},
        chunk(11, "m2"),
    ]


async def test_a_slow_reader_gets_merged_chunks_and_nothing_is_lost() -> None:
    read_end, write_end = os.pipe()
    stream = os.fdopen(write_end, "wb", buffering=0)
    outbox = Outbox(stream)
    texts = []
    for n in range(20_000):  # far more than the pipe holds while nobody reads
        text = f"word{n} "
        texts.append(text)
        message = "m1" if n < 15_000 else "m2"
        outbox.update("s", "t", {**chunk(n, message), "content": {"type": "text", "text": text}})
        if n % 500 == 0:
            await asyncio.sleep(0)
    outbox.notify("agent/usage", {"sessionId": "s"})
    outbox.end_turn("s", "t")
    outbox.update("s", "t2", chunk(0))
    received: list[bytes] = []
    reader = threading.Thread(target=read_all, args=(read_end, received))
    reader.start()
    await outbox.drained()
    outbox.close()
    stream.close()
    reader.join()
    messages = parse_frames(b"".join(received))
    updates = [m["params"] for m in messages if m.get("method") == "agent/update"]
    turn = [u for u in updates if u["turnId"] == "t"]
    assert len(turn) < 20_000  # merged while the pipe was full
    assert [u["seq"] for u in turn] == list(range(len(turn)))  # no gaps
    first = "".join(
        u["update"]["content"]["text"] for u in turn if u["update"]["messageId"] == "m1"
    )
    second = "".join(
        u["update"]["content"]["text"] for u in turn if u["update"]["messageId"] == "m2"
    )
    assert first == "".join(texts[:15_000])
    assert second == "".join(texts[15_000:])
    assert messages[-2]["method"] == "agent/usage"
    assert updates[-1]["turnId"] == "t2" and updates[-1]["seq"] == 0


def test_without_a_running_loop_it_writes_at_once() -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "wb", buffering=0) as stream:
        outbox = Outbox(stream)
        outbox.notify("agent/usage", {"sessionId": "é"})
        data = os.read(read_end, 1 << 16)
    os.close(read_end)
    [message] = parse_frames(data)
    assert message["params"] == {"sessionId": "é"}  # the length counts bytes, not characters
