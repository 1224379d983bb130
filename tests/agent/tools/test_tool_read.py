"""read: pages of bare lines, unchanged re-reads as a note, images as images, binary refused,
spill files readable."""

from __future__ import annotations

import base64
import struct
import tracemalloc
import zlib
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_server.agent.tools import ToolContext, run_tool
from agent_server.agent.tools.base import EarlierOutput
from agent_server.agent.tools.bash import BashTool
from agent_server.agent.tools.edit import EditTool
from agent_server.agent.tools.read import (
    MAX_LINE_CHARS,
    MIN_REPEAT_LINES,
    ReadTool,
    fold_repeats,
    unfold_repeats,
)
from agent_server.agent.tools.write import WriteTool
from agent_server.llm.messages import ImageContent

READ = ReadTool()


def tiny_png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


async def test_lines_come_back_as_they_are(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.py").write_text("first\nsecond\n\tindented\n")
    result = await run_tool(READ, {"path": "a.py"}, ctx)
    assert not result.is_error
    # No line-number prefix: what the edit tool must match is exactly what is shown.
    assert result.text == "first\nsecond\n\tindented"
    assert result.details is not None
    assert result.details["totalLines"] == 3


async def test_offset_and_limit_page_through_and_say_how_to_continue(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = await run_tool(READ, {"path": "n.txt", "offset": 4, "limit": 3}, ctx)
    lines = result.text.splitlines()
    assert lines[:3] == ["line 4", "line 5", "line 6"]
    assert "Showing lines 4-6 of 10" in result.text
    assert "offset=7" in result.text
    last = await run_tool(READ, {"path": "n.txt", "offset": 7}, ctx)
    # The last page still says where it starts, so its lines can be located and cited.
    assert last.text.splitlines()[:4] == ["line 7", "line 8", "line 9", "line 10"]
    assert last.text.endswith("[Showing lines 7-10 of 10.]")
    assert "offset=" not in last.text


async def test_default_page_is_2000_lines(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "big.txt").write_text("".join(f"{i}\n" for i in range(1, 5001)))
    result = await run_tool(READ, {"path": "big.txt"}, ctx)
    shown = [line for line in result.text.splitlines() if line.isdigit()]
    assert len(shown) == 2000
    assert shown[-1] == "2000"
    assert "Showing lines 1-2000 of 5000" in result.text
    assert "offset=2001" in result.text
    # A larger limit is capped, so one result cannot fill the window.
    capped = await run_tool(READ, {"path": "big.txt", "limit": 4000}, ctx)
    assert len([line for line in capped.text.splitlines() if line.isdigit()]) == 2000


async def test_pages_stop_at_50_kb(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "wide.txt").write_text("".join(f"{n:04}" + "x" * 996 + "\n" for n in range(500)))
    result = await run_tool(READ, {"path": "wide.txt"}, ctx)
    assert len(result.text.encode()) <= 51 * 1024
    shown = [line for line in result.text.splitlines() if line.endswith("x")]
    assert 40 <= len(shown) < 60
    assert f"offset={len(shown) + 1}" in result.text


async def test_long_lines_are_cut(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "min.js").write_text("a" * (MAX_LINE_CHARS + 500) + "\nshort\n")
    result = await run_tool(READ, {"path": "min.js"}, ctx)
    first, second = result.text.splitlines()[:2]
    assert first.startswith("a" * MAX_LINE_CHARS)
    assert "500 more characters" in first
    assert second == "short"


async def test_a_line_of_any_length_is_read_in_bounded_memory(
    ctx: ToolContext, workspace: Path
) -> None:
    """Before: a line was read whole (a 1 GB minified file, or a sparse file whose first 8 KB
    pass the binary check, took gigabytes of the server's memory to show 2,000 characters)."""
    long = "é" * 1000 + "a" * 30_000_000
    (workspace / "min.js").write_text(f"first\n{long}\r\nlast\n")
    tracemalloc.start()
    try:
        result = await run_tool(READ, {"path": "min.js"}, ctx)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    lines = result.text.split("\n")
    assert lines[0] == "first" and lines[2] == "last" and len(lines) == 3
    cut = len(long) - MAX_LINE_CHARS
    assert lines[1] == f"{long[:MAX_LINE_CHARS]} [... {cut} more characters on this line]"
    assert peak < 8_000_000, peak  # the line is 30 MB


async def test_windows_line_endings_are_not_shown(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    result = await run_tool(READ, {"path": "w.txt"}, ctx)
    assert result.text == "one\ntwo"


async def test_empty_file(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "empty.txt").write_text("")
    result = await run_tool(READ, {"path": "empty.txt"}, ctx)
    assert not result.is_error
    assert "empty" in result.text


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"path": "missing.txt"}, "File not found: missing.txt"),
        ({"path": "sub"}, "is a directory"),
        ({"path": "short.txt", "offset": 50}, "past the end of short.txt, which has 2"),
    ],
)
async def test_errors_say_what_to_do(
    ctx: ToolContext, workspace: Path, arguments: dict[str, object], expected: str
) -> None:
    (workspace / "sub").mkdir()
    (workspace / "short.txt").write_text("a\nb\n")
    result = await run_tool(READ, arguments, ctx)
    assert result.is_error
    assert expected in result.text


async def test_binary_files_are_refused(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "prog.bin").write_bytes(b"\x7fELF\x02\x01\x00\x00" + bytes(range(256)))
    result = await run_tool(READ, {"path": "prog.bin"}, ctx)
    assert result.is_error
    assert "binary" in result.text


async def test_images_come_back_as_image_content(ctx: ToolContext, workspace: Path) -> None:
    png = tiny_png()
    (workspace / "dot.png").write_bytes(png)
    result = await run_tool(READ, {"path": "dot.png"}, ctx)
    assert not result.is_error
    images = [block for block in result.content if isinstance(block, ImageContent)]
    assert len(images) == 1
    assert images[0].mime_type == "image/png"
    assert base64.b64decode(images[0].data) == png


async def test_a_text_file_named_like_an_image_is_read_as_text(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "notes.png").write_text("not really a picture\n")
    result = await run_tool(READ, {"path": "notes.png"}, ctx)
    assert result.text == "not really a picture"


async def test_reads_the_full_output_another_tool_spilled(
    ctx: ToolContext, workspace: Path
) -> None:
    bash = await run_tool(BashTool(), {"command": "seq 1 5000"}, ctx)
    assert bash.details is not None
    spilled = bash.details["fullOutputPath"]
    assert spilled.startswith(str(ctx.spill_dir))
    assert spilled in bash.text
    page = await run_tool(READ, {"path": spilled, "offset": 1, "limit": 3}, ctx)
    assert not page.is_error
    assert page.text.splitlines()[:3] == ["1", "2", "3"]
    assert "of 5000" in page.text


async def test_spill_exception_does_not_open_other_directories(
    ctx: ToolContext, tmp_path: Path
) -> None:
    (tmp_path / "elsewhere.txt").write_text("no\n")
    result = await run_tool(READ, {"path": str(tmp_path / "elsewhere.txt")}, ctx)
    assert result.is_error
    assert "outside the workspace" in result.text


# --- re-reads ---------------------------------------------------------------------------------


def read_in_context(arguments: dict[str, object], text: str) -> EarlierOutput:
    return EarlierOutput("read", arguments, text)


async def test_an_unchanged_re_read_is_a_note_while_the_earlier_read_is_in_context(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "a.py").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    first = await run_tool(READ, {"path": "a.py"}, ctx)
    seen = replace(ctx, in_context=(read_in_context({"path": "a.py"}, first.text),))
    again = await run_tool(READ, {"path": "./a.py"}, seen)
    assert again.text == (
        "[a.py: unchanged since your earlier read, which is still in this conversation; "
        "refer to that result.]"
    )
    assert again.details is not None and again.details["unchanged"] is True
    # A part of what was read is a note too, naming its lines.
    part = await run_tool(READ, {"path": "a.py", "offset": 5, "limit": 3}, seen)
    assert part.text.startswith("[a.py lines 5-7: unchanged since your earlier read")
    # Without the earlier read in context (never read, or folded into a compaction's
    # summary), the lines come back.
    fresh = await run_tool(READ, {"path": "a.py", "offset": 5, "limit": 3}, ctx)
    assert fresh.text.splitlines()[:3] == ["line 5", "line 6", "line 7"]


async def test_a_re_read_after_a_change_or_beyond_the_earlier_page_shows_the_lines(
    ctx: ToolContext, workspace: Path
) -> None:
    path = workspace / "a.py"
    path.write_text("".join(f"line {i}\n" for i in range(1, 21)))
    page = await run_tool(READ, {"path": "a.py", "offset": 1, "limit": 10}, ctx)
    seen = replace(ctx, in_context=(read_in_context({"path": "a.py", "limit": 10}, page.text),))
    beyond = await run_tool(READ, {"path": "a.py", "offset": 8, "limit": 5}, seen)
    assert beyond.text.splitlines()[:5] == ["line 8", "line 9", "line 10", "line 11", "line 12"]
    inside = await run_tool(READ, {"path": "a.py", "offset": 2, "limit": 5}, seen)
    assert "unchanged" in inside.text
    path.write_text(path.read_text().replace("line 3\n", "line three\n"))
    changed = await run_tool(READ, {"path": "a.py", "offset": 2, "limit": 5}, seen)
    assert changed.text.splitlines()[:3] == ["line 2", "line three", "line 4"]
    # An edit elsewhere in the file leaves the lines that were read as they were.
    untouched = await run_tool(READ, {"path": "a.py", "offset": 5, "limit": 3}, seen)
    assert "unchanged" in untouched.text


async def test_only_a_read_with_lines_counts_as_seen(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    (workspace / "b.py").write_text("x = 1\n")
    note = (
        "[a.py: unchanged since your earlier read, which is still in this conversation; "
        "refer to that result.]"
    )
    in_context = (
        read_in_context({"path": "a.py"}, note),  # a note shows no lines
        EarlierOutput("bash", {"command": "cat a.py"}, "x = 1"),  # not a read
        read_in_context({"path": "b.py"}, "x = 1"),  # another file
    )
    result = await run_tool(READ, {"path": "a.py"}, replace(ctx, in_context=in_context))
    assert result.text == "x = 1"


# --- repeated runs ----------------------------------------------------------------------------

TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/opt/app/storage.py", line 84, in _parse_row',
    '    quantity=parse_quantity(row["quantity"]),',
    '  File "/opt/app/models.py", line 71, in parse_quantity',
    "    raise StockError(f'invalid quantity {text!r}')",
    "app.models.StockError: invalid quantity '12a'",
]


async def test_a_run_repeating_one_shown_above_is_one_note(
    ctx: ToolContext, workspace: Path
) -> None:
    lines = ["10:00 start", *TRACEBACK, "10:05 retry", *TRACEBACK, "10:09 retry", *TRACEBACK]
    (workspace / "app.log").write_text("\n".join(lines) + "\n")
    result = await run_tool(READ, {"path": "app.log"}, ctx)
    assert result.text.splitlines() == [
        "10:00 start",
        *TRACEBACK,
        "10:05 retry",
        "[lines 9-14 repeat lines 2-7 above]",
        "10:09 retry",
        "[lines 16-21 repeat lines 2-7 above]",
    ]
    # Line numbers are the file's, on a later page too.
    page = await run_tool(READ, {"path": "app.log", "offset": 8}, ctx)
    assert page.text.splitlines()[:3] == ["10:05 retry", *TRACEBACK[:2]]
    assert "[lines 16-21 repeat lines 9-14 above]" in page.text
    # A re-read of the same lines, still in context, is the unchanged note: the folded page
    # unfolds to the file's lines.
    seen = replace(ctx, in_context=(read_in_context({"path": "app.log"}, result.text),))
    again = await run_tool(READ, {"path": "app.log", "offset": 15, "limit": 7}, seen)
    assert again.text.startswith("[app.log lines 15-21: unchanged since your earlier read")


async def test_short_runs_and_note_like_lines_are_shown_as_they_are(
    ctx: ToolContext, workspace: Path
) -> None:
    # Code repeats short runs all the time (a closing block, a blank and a decorator): shown.
    short = ["    return x", "", "@cache", "def f():"] * 4
    assert len("\n".join(short[:MIN_REPEAT_LINES])) < 200
    (workspace / "a.py").write_text("\n".join(short) + "\n")
    assert (await run_tool(READ, {"path": "a.py"}, ctx)).text.splitlines() == short
    # A file that holds a line like the note itself is never folded: it could not be undone.
    odd = [*TRACEBACK, *TRACEBACK, "[lines 1-2 repeat lines 3-4 above]"]
    (workspace / "b.log").write_text("\n".join(odd) + "\n")
    assert (await run_tool(READ, {"path": "b.log"}, ctx)).text.splitlines() == odd


@given(
    st.lists(st.sampled_from(["a" * 60, "b" * 60, "c" * 60, "", "[x]"]), max_size=80),
    st.integers(min_value=1, max_value=5000),
)
def test_a_folded_page_unfolds_to_its_lines(lines: list[str], first: int) -> None:
    folded = fold_repeats(lines, first)
    assert unfold_repeats(folded, first) == lines
    assert len(folded) <= len(lines)


async def test_write_and_edit_refuse_a_copied_repeat_note(
    ctx: ToolContext, workspace: Path
) -> None:
    note = "[lines 9-14 repeat lines 2-7 above]"
    result = await run_tool(WriteTool(), {"path": "copy.log", "content": f"a\n{note}\nb\n"}, ctx)
    assert result.is_error and "Write those lines themselves" in result.text
    assert not (workspace / "copy.log").exists()
    (workspace / "a.py").write_text("x = 1\n")
    edit = {"path": "a.py", "oldText": "x = 1", "newText": f"x = 1\n{note}"}
    result = await run_tool(EditTool(), edit, ctx)
    assert result.is_error and note in result.text
    assert (workspace / "a.py").read_text() == "x = 1\n"
    # Text that mentions the note inside a line, or a file that already has it, is content.
    inline = {"path": "a.py", "content": f"# read folds runs as {note}\n"}
    assert not (await run_tool(WriteTool(), inline, ctx)).is_error
    (workspace / "notes.md").write_text(f"{note}\n")
    kept = {"path": "notes.md", "oldText": note, "newText": f"{note}\n{note}"}
    assert not (await run_tool(EditTool(), kept, ctx)).is_error
    assert (workspace / "notes.md").read_text() == f"{note}\n{note}\n"


async def test_source_code_and_data_are_never_folded_logs_and_outputs_are(
    ctx: ToolContext, workspace: Path
) -> None:
    """Issue 26: folding is kept where it is safe. A model editing source code must see its
    exact lines; a log's repeated traceback is the same lines printed again."""
    lines = ["10:00 start", *TRACEBACK, "10:05 retry", *TRACEBACK]
    text = "\n".join(lines) + "\n"
    note = "[lines 9-14 repeat lines 2-7 above]"
    for name in ("app.log", "build.out", "build.err", "app.log.3", "APP.LOG"):
        (workspace / name).write_text(text)
        assert note in (await run_tool(READ, {"path": name}, ctx)).text, name
    for name in ("models.py", "overloads.pyi", "fixture.csv", "notes.txt", "logger.py", "log"):
        (workspace / name).write_text(text)
        assert (await run_tool(READ, {"path": name}, ctx)).text.splitlines() == lines, name
    # A tool's full output, saved in the session's directory, is an output.
    ctx.spill_dir.mkdir(parents=True, exist_ok=True)
    saved = ctx.spill_dir / "bash-1234.txt"
    saved.write_text(text)
    assert note in (await run_tool(READ, {"path": str(saved)}, ctx)).text
