"""A page of a large file is found through its line index (tools/line_index.py) instead of
reading the file up to it: the page, the line count and the notes must be what reading it line
by line gives, however the lines fall across the index's chunks, and after the file grows,
is rewritten, or is replaced under the same name."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_server.agent.tools import ToolContext, line_index, run_tool
from agent_server.agent.tools.read import ReadTool

LINES = st.lists(
    st.one_of(st.text(alphabet="ab \t", max_size=12), st.text(alphabet="x", min_size=60,
                                                                 max_size=200)),
    max_size=60,
)


def read(root: Path, name: str, offset: int, limit: int, indexed: bool,
         monkeypatch: pytest.MonkeyPatch) -> tuple[str, bool, object]:
    monkeypatch.setattr(line_index, "INDEXED_FROM", 0 if indexed else 1 << 40)
    ctx = ToolContext(root, root / ".spill")
    result = asyncio.run(run_tool(ReadTool(), {"path": name, "offset": offset,
                                               "limit": limit}, ctx))
    return result.text, result.is_error, (result.details or {}).get("totalLines")


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=LINES, more=LINES, ends_with_break=st.booleans(), offset=st.integers(1, 70),
       limit=st.integers(1, 30))
def test_an_indexed_page_is_the_page_read_line_by_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: list[str], more: list[str],
        ends_with_break: bool, offset: int, limit: int) -> None:
    monkeypatch.setattr(line_index, "CHUNK", 64)
    monkeypatch.setattr(line_index, "_CHECKED", 8)
    monkeypatch.setattr(line_index, "_SAMPLE", 64)  # a whole chunk: a rewrite is always seen
    path = tmp_path / "big.log"
    text = "\n".join(lines) + ("\n" if ends_with_break and lines else "")
    path.write_text(text, encoding="utf-8")
    expected = read(tmp_path, "big.log", offset, limit, False, monkeypatch)
    assert read(tmp_path, "big.log", offset, limit, True, monkeypatch) == expected
    # The file grows (a log): counted on from the index's last whole chunk.
    with path.open("a", encoding="utf-8") as grown:
        grown.write("\n".join(more) + "\n")
    expected = read(tmp_path, "big.log", offset, limit, False, monkeypatch)
    assert read(tmp_path, "big.log", offset, limit, True, monkeypatch) == expected
    # Rewritten in place with other lines of the same size and modification time: counted
    # again (its change time moved).
    stat = path.stat()
    path.write_bytes(path.read_bytes().replace(b"a", b"\n"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    expected = read(tmp_path, "big.log", offset, limit, False, monkeypatch)
    assert read(tmp_path, "big.log", offset, limit, True, monkeypatch) == expected


def test_a_page_deep_in_a_large_file_is_found_by_its_index(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    with path.open("w", encoding="utf-8") as out:
        for chunk in range(6):
            out.write("".join(f"request {n}\n" for n in range(chunk * 100_000,
                                                               (chunk + 1) * 100_000)))
    assert path.stat().st_size > line_index.INDEXED_FROM
    ctx = ToolContext(tmp_path, tmp_path / ".spill")
    result = asyncio.run(run_tool(ReadTool(), {"path": "server.log", "offset": 512_345,
                                               "limit": 3}, ctx))
    assert result.text.splitlines()[:3] == ["request 512344", "request 512345",
                                            "request 512346"]
    assert result.details["totalLines"] == 600_000
    assert "Continue with offset=512348" in result.text
    with path.open("rb") as handle:
        assert line_index.index_of(handle).lines == 600_000
