"""write and edit: files change exactly as asked, and the editor gets a diff."""

from __future__ import annotations

from pathlib import Path

from agent_server.agent.tools import ToolContext, run_tool
from agent_server.agent.tools.edit import EditTool
from agent_server.agent.tools.write import WriteTool

WRITE = WriteTool()
EDIT = EditTool()


async def test_write_creates_parent_directories_and_reports_size(
    ctx: ToolContext, workspace: Path
) -> None:
    result = await run_tool(WRITE, {"path": "src/pkg/mod.py", "content": "a = 1\nb = 2\n"}, ctx)
    assert not result.is_error
    assert (workspace / "src/pkg/mod.py").read_text() == "a = 1\nb = 2\n"
    assert "12 bytes" in result.text
    assert "2 lines" in result.text
    assert result.details is not None
    assert result.details["created"] is True
    assert "+b = 2" in result.details["diff"]


async def test_write_keeps_content_byte_for_byte(ctx: ToolContext, workspace: Path) -> None:
    content = "crlf\r\nunicode é ✓\nno final newline"
    await run_tool(WRITE, {"path": "exact.txt", "content": content}, ctx)
    assert (workspace / "exact.txt").read_bytes() == content.encode()


async def test_overwrite_reports_a_diff_for_the_editor_only(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "f.txt").write_text("old line\n")
    result = await run_tool(WRITE, {"path": "f.txt", "content": "new line\n"}, ctx)
    assert result.text.startswith("Overwrote f.txt")
    assert "-old line" not in result.text
    assert result.details is not None
    assert result.details["created"] is False
    assert "-old line\n+new line\n" in result.details["diff"]


async def test_write_to_a_directory_is_an_error(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "d").mkdir()
    result = await run_tool(WRITE, {"path": "d", "content": "x"}, ctx)
    assert result.is_error
    assert "directory" in result.text


async def test_edit_replaces_the_unique_match(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "app.py").write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    result = await run_tool(
        EDIT, {"path": "app.py", "oldText": "    return 2\n", "newText": "    return 3\n"}, ctx
    )
    assert not result.is_error, result.text
    assert (workspace / "app.py").read_text() == (
        "def f():\n    return 1\n\ndef g():\n    return 3\n"
    )
    assert "line 5" in result.text
    assert result.details is not None
    diff = result.details["diff"]
    assert diff.startswith("--- a/app.py\n+++ b/app.py\n")
    assert "-    return 2\n+    return 3\n" in diff


async def test_edit_refuses_a_missing_match(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "app.py").write_text("x = 1\n")
    result = await run_tool(EDIT, {"path": "app.py", "oldText": "x  = 1", "newText": "x = 2"}, ctx)
    assert result.is_error
    assert "not found" in result.text
    assert "exactly" in result.text
    assert (workspace / "app.py").read_text() == "x = 1\n"


async def test_edit_refuses_an_ambiguous_match_and_says_where(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "app.py").write_text("x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n")
    result = await run_tool(EDIT, {"path": "app.py", "oldText": "x = 1", "newText": "x = 9"}, ctx)
    assert result.is_error
    assert "3 times" in result.text
    assert "lines 1, 3, 5" in result.text
    assert "more surrounding lines" in result.text
    assert (workspace / "app.py").read_text().count("x = 1") == 3


async def test_edit_refuses_a_match_that_overlaps_another_copy_of_itself(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "app.py").write_text("x = 1\nx = 1\nx = 1\n")
    result = await run_tool(
        EDIT, {"path": "app.py", "oldText": "x = 1\nx = 1\n", "newText": "y = 2\n"}, ctx
    )
    assert result.is_error
    assert "2 times" in result.text
    assert "lines 1, 2" in result.text
    assert (workspace / "app.py").read_text() == "x = 1\nx = 1\nx = 1\n"
    (workspace / "a.txt").write_text("aaa")
    result = await run_tool(EDIT, {"path": "a.txt", "oldText": "aa", "newText": "b"}, ctx)
    assert result.is_error
    assert "2 times" in result.text
    assert (workspace / "a.txt").read_text() == "aaa"


async def test_edit_with_enough_context_succeeds(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "app.py").write_text("x = 1\ny = 2\nx = 1\n")
    result = await run_tool(
        EDIT, {"path": "app.py", "oldText": "y = 2\nx = 1", "newText": "y = 2\nx = 9"}, ctx
    )
    assert not result.is_error
    assert (workspace / "app.py").read_text() == "x = 1\ny = 2\nx = 9\n"


async def test_edit_matches_lf_text_in_a_crlf_file(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = await run_tool(
        EDIT, {"path": "win.txt", "oldText": "one\ntwo", "newText": "uno\ndos"}, ctx
    )
    assert not result.is_error, result.text
    assert (workspace / "win.txt").read_bytes() == b"uno\r\ndos\r\nthree\r\n"


async def test_edit_writes_new_lines_in_a_crlf_file_with_crlf(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "win.txt").write_bytes(b"line1\r\nline2\r\nline3\r\n")
    result = await run_tool(
        EDIT, {"path": "win.txt", "oldText": "line2", "newText": "two\nlines"}, ctx
    )
    assert not result.is_error, result.text
    assert (workspace / "win.txt").read_bytes() == b"line1\r\ntwo\r\nlines\r\nline3\r\n"
    # A CRLF the model wrote itself is kept, not doubled.
    result = await run_tool(
        EDIT, {"path": "win.txt", "oldText": "line1\n", "newText": "one\r\nuno\n"}, ctx
    )
    assert not result.is_error, result.text
    assert (workspace / "win.txt").read_bytes() == (
        b"one\r\nuno\r\ntwo\r\nlines\r\nline3\r\n"
    )


async def test_edit_can_delete_text(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.txt").write_text("keep\ndrop me\nkeep too\n")
    result = await run_tool(EDIT, {"path": "a.txt", "oldText": "drop me\n", "newText": ""}, ctx)
    assert not result.is_error
    assert (workspace / "a.txt").read_text() == "keep\nkeep too\n"


async def test_edit_refusals(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.txt").write_text("text\n")
    (workspace / "bin.dat").write_bytes(b"\xff\xfe\x00garbage")
    cases = [
        ({"path": "nope.txt", "oldText": "a", "newText": "b"}, "File not found"),
        ({"path": "a.txt", "oldText": "", "newText": "b"}, "oldText is empty"),
        ({"path": "a.txt", "oldText": "text", "newText": "text"}, "change nothing"),
        ({"path": "bin.dat", "oldText": "garbage", "newText": "x"}, "not a UTF-8 text file"),
    ]
    for arguments, expected in cases:
        result = await run_tool(EDIT, arguments, ctx)
        assert result.is_error
        assert expected in result.text
    assert (workspace / "a.txt").read_text() == "text\n"


async def test_edit_keeps_the_file_mode(ctx: ToolContext, workspace: Path) -> None:
    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o755)
    await run_tool(EDIT, {"path": "run.sh", "oldText": "old", "newText": "new"}, ctx)
    assert script.stat().st_mode & 0o777 == 0o755
    assert script.read_text() == "#!/bin/sh\necho new\n"


async def test_the_preview_is_the_change_the_call_then_makes(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "app.py").write_text("def f():\n    return 1\n")
    arguments = {"path": "app.py", "oldText": "return 1", "newText": "return 2"}
    preview = await EDIT.preview(arguments, ctx)
    assert preview is not None
    assert (preview.old_text, preview.new_text) == ("def f():\n    return 1\n", "def f():\n    return 2\n")
    assert "-    return 1\n+    return 2\n" in preview.diff
    assert (workspace / "app.py").read_text() == "def f():\n    return 1\n"  # nothing written yet
    result = await run_tool(EDIT, arguments, ctx)
    assert result.details is not None
    assert result.details["change"] == preview.to_json()

    new = await WRITE.preview({"path": "docs/new.md", "content": "# New\n"}, ctx)
    assert new is not None and new.old_text is None and new.new_text == "# New\n"
    assert new.diff.startswith("--- /dev/null\n+++ b/docs/new.md\n")
    # An edit that would fail, or a path outside the workspace, has nothing to preview.
    assert await EDIT.preview({"path": "app.py", "oldText": "absent", "newText": "x"}, ctx) is None
    assert await WRITE.preview({"path": "../outside.txt", "content": "x"}, ctx) is None
