"""Large MCP results, bounded while they arrive (issue 24): read in linear time, a message over
the limit never held, the memory back to its level after the call. The fixture server is a
real MCP server (the official SDK's) over real stdio."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
from pathlib import Path

import pytest
from mcp import MCPError

from agent_server.agent.mcp.config import parse_server
from agent_server.agent.mcp.servers import McpServers
from agent_server.agent.mcp.stdio import LineReader, Oversized, give_back_memory

from .conftest import FIXTURE_SERVER


def _servers(tmp_path: Path, max_result_bytes: int | None = None) -> McpServers:
    entry = {"command": sys.executable, "args": [str(FIXTURE_SERVER)]}
    config = parse_server("fx", entry, "test", workspace=tmp_path, env=os.environ)
    return McpServers([config], state_dir=tmp_path, max_result_bytes=max_result_bytes)


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    pytest.skip("no /proc/self/status here")


def test_lines_are_split_across_chunks_and_an_oversized_one_is_never_held() -> None:
    reader = LineReader(limit=100)
    assert reader.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert reader.feed(b":2}\n") == [b'{"b":2}']
    big = b'{"jsonrpc":"2.0","id":7,"result":"' + b"x" * 500 + b'"}'
    out: list[bytes | Oversized] = []
    for start in range(0, len(big), 64):  # arrives in pieces: never more than the limit held
        out += reader.feed(big[start : start + 64])
        assert len(reader._buffer) <= 100
    out += reader.feed(b'\n{"c":3}\n')
    assert isinstance(out[0], Oversized) and out[0].size == len(big)
    assert out[0].answer_id() == 7
    assert out[1:] == [b'{"c":3}']


def test_the_id_of_an_oversized_answer_is_found_at_its_end_too() -> None:
    reader = LineReader(limit=50)
    line = b'{"result":"' + b"y" * 10_000 + b'","jsonrpc":"2.0","id":"req-9"}\n'
    (item,) = reader.feed(line)
    assert isinstance(item, Oversized) and item.answer_id() == "req-9"


async def test_an_answer_over_the_limit_fails_the_call_and_the_server_goes_on(
    tmp_path: Path,
) -> None:
    servers = _servers(tmp_path, max_result_bytes=1024 * 1024)
    try:
        await servers.wait_settled()
        with pytest.raises(MCPError, match=r"answer was \d+\.\d MB, more than the 1 MB"):
            await servers.call("fx", "big", {"lines": 200_000})  # about 4 MB of JSON
        shouted = await servers.call("fx", "shout", {"text": "still here"})
        assert json.loads(shouted.model_dump_json())["content"][0]["text"] == "STILL HERE"
    finally:
        await servers.close()


async def test_memory_is_back_to_its_level_after_a_large_answer(tmp_path: Path) -> None:
    """A 40 MB answer left the server 213 MB larger for good (the SDK's reader, and its read
    loop holding the last message); now the memory is given back after the call."""
    servers = _servers(tmp_path)
    try:
        await servers.wait_settled()
        await servers.call("fx", "big", {"lines": 10})
        gc.collect()
        before = _rss_mb()
        result = await servers.call("fx", "big", {"lines": 1_500_000})  # 40 MB of JSON
        size = len(result.content[0].text)  # type: ignore[union-attr]
        del result
        assert size > 18_000_000
        # The transport lets go of the message just after the call returns (when its reader
        # runs next): wait for that, within a generous guard (no timing assert).
        for _ in range(200):
            await asyncio.sleep(0.05)
            gc.collect()
            give_back_memory()
            grown = _rss_mb() - before
            if grown < 30:
                break
        assert grown < 30, f"the server kept {grown:.0f} MB after the call"
    finally:
        await servers.close()
