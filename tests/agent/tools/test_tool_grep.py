"""grep: the same results and format with ripgrep and with the Python fallback."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from agent_server.agent.tools import ToolContext, run_tool
from agent_server.agent.tools import grep as grep_module
from agent_server.agent.tools.grep import MAX_LEFT_OUT_NAMED, MAX_MATCHES, GrepTool

RG = shutil.which("rg")

ENGINES = [
    pytest.param(None, id="python"),
    pytest.param(
        RG or "rg",
        id="ripgrep",
        marks=pytest.mark.skipif(RG is None, reason="ripgrep (rg) is not installed"),
    ),
]


@pytest.fixture(params=ENGINES)
def grep(request: pytest.FixtureRequest) -> GrepTool:
    return GrepTool(rg=request.param)


def make_tree(root: Path) -> None:
    files = {
        "src/app.py": "import os\n\ndef main():\n    # TODO: parse args\n    return os.getcwd()\n",
        "src/util.py": "def helper():\n    pass  # todo later\n",
        "src/ui/view.ts": "// TODO render\nexport const x = 1;\n",
        "README.md": "Nothing to do here.\n",
        ".hidden/notes.txt": "TODO hidden but searched\n",
        ".git/HEAD": "TODO never searched\n",
        "node_modules/pkg/index.js": "// TODO never searched\n",
        ".venv/lib.py": "# TODO never searched\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "image.bin").write_bytes(b"TODO\x00\x01\x02binary")


async def test_matches_are_line_text_under_each_files_path(
    grep: GrepTool, ctx: ToolContext, workspace: Path
) -> None:
    make_tree(workspace)
    result = await run_tool(grep, {"pattern": "TODO"}, ctx)
    assert not result.is_error, result.text
    assert result.text.splitlines() == [
        ".hidden/notes.txt",
        "1:TODO hidden but searched",
        "",
        "src/app.py",
        "4:    # TODO: parse args",
        "",
        "src/ui/view.ts",
        "1:// TODO render",
    ]


async def test_ignore_case_and_glob(grep: GrepTool, ctx: ToolContext, workspace: Path) -> None:
    make_tree(workspace)
    result = await run_tool(grep, {"pattern": "todo", "ignoreCase": True, "glob": "*.py"}, ctx)
    assert result.text.splitlines() == [
        "src/app.py",
        "4:    # TODO: parse args",
        "",
        "src/util.py",
        "2:    pass  # todo later",
    ]
    anchored = await run_tool(grep, {"pattern": "TODO", "glob": "src/**/*.ts"}, ctx)
    assert anchored.text.splitlines() == ["src/ui/view.ts", "1:// TODO render"]


async def test_an_invalid_glob_is_an_error_that_names_it(
    grep: GrepTool, ctx: ToolContext, workspace: Path
) -> None:
    make_tree(workspace)
    result = await run_tool(grep, {"pattern": "TODO", "glob": "[z-a]"}, ctx)
    assert result.is_error
    assert result.text.startswith("Invalid glob '[z-a]': bad character range z-a.")


async def test_path_narrows_to_a_directory_or_a_file(
    grep: GrepTool, ctx: ToolContext, workspace: Path
) -> None:
    make_tree(workspace)
    in_dir = await run_tool(grep, {"pattern": "def ", "path": "src"}, ctx)
    assert in_dir.text.splitlines() == [
        "src/app.py", "3:def main():", "", "src/util.py", "1:def helper():"
    ]
    # One file searched: its path is the one asked for, so no heading.
    in_file = await run_tool(grep, {"pattern": "def ", "path": "src/util.py"}, ctx)
    assert in_file.text.splitlines() == ["1:def helper():"]


async def test_context_lines_and_group_separators(
    grep: GrepTool, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "c.txt").write_text("a\nb\nMATCH 1\nc\nd\ne\nf\nMATCH 2\ng\n")
    result = await run_tool(grep, {"pattern": "MATCH", "context": 1}, ctx)
    assert result.text.splitlines() == [
        "c.txt",
        "2-b",
        "3:MATCH 1",
        "4-c",
        "--",
        "7-f",
        "8:MATCH 2",
        "9-g",
    ]


async def test_python_regex_features_work(
    grep: GrepTool, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "l.txt").write_text("foobar\nfoobaz\n")
    # Look-ahead is not in ripgrep's default dialect: the fallback runs it.
    result = await run_tool(grep, {"pattern": r"foo(?=baz)"}, ctx)
    assert result.text.splitlines() == ["l.txt", "2:foobaz"]


async def test_a_catastrophic_pattern_is_stopped_and_said_to_be(
    grep: GrepTool, ctx: ToolContext, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grep_module, "LINE_TIME_LIMIT", 2.0)
    (workspace / "a.txt").write_text("fine\n" + "a" * 40 + "b\n")
    # Look-ahead: the Python search runs it (ripgrep rejects it), for ages on that line.
    result = await run_tool(grep, {"pattern": r"(?=a)(a+)+$"}, ctx)
    assert result.is_error
    assert result.text.startswith("The pattern took more than 2 seconds on one line")
    assert "catastrophic backtracking" in result.text
    # The search is a process of its own, gone with the call: the next one runs (given time
    # to start on a busy machine).
    monkeypatch.setattr(grep_module, "LINE_TIME_LIMIT", 120.0)
    again = await run_tool(grep, {"pattern": r"fi(?=ne)"}, ctx)
    assert again.text == "a.txt\n1:fine"


async def test_a_match_on_a_very_long_line_is_found(
    grep: GrepTool, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "min.js").write_text("x" * 200_000 + "needle\n")
    result = await run_tool(grep, {"pattern": "needle"}, ctx)
    assert result.text.splitlines() == ["min.js", f"1:{'x' * 500} [... 199506 more characters]"]


async def test_invalid_regex_is_a_clear_error(
    grep: GrepTool, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("f(x)\n")
    result = await run_tool(grep, {"pattern": "f(x"}, ctx)
    assert result.is_error
    assert "Invalid regular expression 'f(x'" in result.text
    assert "backslash" in result.text


async def test_no_matches_is_not_an_error(
    grep: GrepTool, ctx: ToolContext, workspace: Path
) -> None:
    make_tree(workspace)
    result = await run_tool(grep, {"pattern": "zebra", "glob": "*.md"}, ctx)
    assert not result.is_error
    assert result.text == "No matches for 'zebra' in the workspace (files matching '*.md')."


async def test_matches_are_bounded(grep: GrepTool, ctx: ToolContext, workspace: Path) -> None:
    (workspace / "many.txt").write_text("".join(f"hit {n}\n" for n in range(MAX_MATCHES + 50)))
    result = await run_tool(grep, {"pattern": "hit"}, ctx)
    hits = [line for line in result.text.splitlines() if ":hit " in line]
    assert len(hits) == MAX_MATCHES
    assert f"Stopped after {MAX_MATCHES} matches" in result.text


async def test_a_text_matching_on_several_lines_is_printed_once_with_all_its_numbers(
    grep: GrepTool, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "app.log").write_text(
        "boot\nWARNING cache cold\nERROR disk full\nok\nERROR disk full\nWARNING cache cold\n"
        "ERROR disk full\n"
    )
    (workspace / "other.log").write_text("ERROR disk full\n")
    result = await run_tool(grep, {"pattern": "ERROR|WARNING"}, ctx)
    assert result.text == (
        "app.log\n2,6:WARNING cache cold\n3,5,7:ERROR disk full\n\nother.log\n1:ERROR disk full"
    )
    # With context every line keeps its place: nothing is grouped.
    result = await run_tool(grep, {"pattern": "ERROR", "path": "app.log", "context": 1}, ctx)
    assert result.text.count("ERROR disk full") == 3
    # And the bound counts matches, not printed lines.
    (workspace / "many.txt").write_text("hit\n" * (MAX_MATCHES + 50))
    result = await run_tool(grep, {"pattern": "hit", "path": "many.txt"}, ctx)
    assert result.text.startswith(",".join(str(n) for n in range(1, MAX_MATCHES + 1)) + ":hit\n")


async def test_long_lines_are_cut(grep: GrepTool, ctx: ToolContext, workspace: Path) -> None:
    (workspace / "min.js").write_text("var a='" + "x" * 3000 + "';\n")
    result = await run_tool(grep, {"pattern": "var a"}, ctx)
    assert len(result.text) < 700
    assert "more characters" in result.text


async def test_symlinks_to_outside_are_not_followed(
    grep: GrepTool, ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("password=hunter2\n")
    (workspace / "dir-link").symlink_to(outside, target_is_directory=True)
    (workspace / "file-link.txt").symlink_to(outside / "secret.txt")
    result = await run_tool(grep, {"pattern": "password"}, ctx)
    assert "hunter2" not in result.text


async def test_a_directory_search_leaves_out_hard_linked_files_and_says_so(
    grep: GrepTool, ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    make_tree(workspace)
    outside = tmp_path / "outside-secret.txt"
    outside.write_text("TODO private outside text\n")
    os.link(outside, workspace / "src" / "linked.txt")
    (workspace / "src" / "both.txt").write_text("TODO under two names\n")
    os.link(workspace / "src" / "both.txt", workspace / "src" / "both-again.txt")
    result = await run_tool(grep, {"pattern": "TODO", "context": 1}, ctx)
    assert not result.is_error, result.text
    assert "private outside text" not in result.text
    assert "two names" not in result.text
    lines = result.text.splitlines()
    assert lines[:-1] == [
        ".hidden/notes.txt",
        "1:TODO hidden but searched",
        "",
        "src/app.py",
        "3-def main():",
        "4:    # TODO: parse args",
        "5-    return os.getcwd()",
        "",
        "src/ui/view.ts",
        "1:// TODO render",
        "2-export const x = 1;",
        "",
    ]
    assert lines[-1] == (
        "[Left out matches in 3 hard-linked file(s), which may also exist outside the "
        "workspace: src/both-again.txt, src/both.txt, src/linked.txt. Read one by name to be "
        "asked.]"
    )
    assert result.details is not None and result.details["matches"] == 3
    # Only the linked files that matched are named:
    narrowed = await run_tool(grep, {"pattern": "private", "path": "src"}, ctx)
    assert narrowed.text == (
        "No matches for 'private' in src.\n\n[Left out matches in 1 hard-linked file(s), "
        "which may also exist outside the workspace: src/linked.txt. Read one by name to be "
        "asked.]"
    )


async def test_a_call_allowed_for_hard_links_searches_them(
    grep: GrepTool, ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("needle outside\n")
    os.link(outside, workspace / "linked.txt")
    allowed = dataclasses.replace(ctx, hard_links_allowed=True)
    result = await run_tool(grep, {"pattern": "needle"}, allowed)
    assert result.text == "linked.txt\n1:needle outside"
    alone = await run_tool(grep, {"pattern": "needle", "path": "linked.txt"}, allowed)
    assert alone.text == "1:needle outside"


async def test_left_out_hard_links_do_not_count_toward_the_match_limit(
    grep: GrepTool, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "a-linked.txt").write_text("hit\n" * (MAX_MATCHES + 10))
    os.link(workspace / "a-linked.txt", workspace / "b-linked.txt")
    for n in range(MAX_LEFT_OUT_NAMED):  # more linked files than the note names
        (workspace / f"c{n:02}.txt").write_text("hit\n")
        os.link(workspace / f"c{n:02}.txt", workspace / f"d{n:02}.txt")
    (workspace / "z-plain.txt").write_text("hit 1\nhit 2\nhit 3\n")
    result = await run_tool(grep, {"pattern": "hit"}, ctx)
    assert result.text.splitlines()[:4] == ["z-plain.txt", "1:hit 1", "2:hit 2", "3:hit 3"]
    assert "Stopped after" not in result.text
    total = 2 + 2 * MAX_LEFT_OUT_NAMED
    assert result.text.splitlines()[-1].startswith(
        f"[Left out matches in {total} hard-linked file(s), which may also exist outside the "
        f"workspace: a-linked.txt, b-linked.txt, c00.txt,"
    )
    assert f" and {total - MAX_LEFT_OUT_NAMED} more. Read one by name" in result.text
    assert result.details is not None and len(result.details["leftOutHardLinked"]) == total


@pytest.mark.skipif(RG is None, reason="ripgrep (rg) is not installed")
async def test_both_engines_give_the_same_output(ctx: ToolContext, workspace: Path) -> None:
    make_tree(workspace)
    os.link(workspace / "src" / "util.py", workspace / "src" / "util-again.py")
    for arguments in (
        {"pattern": "TODO"},
        {"pattern": "o", "context": 2},
        {"pattern": "TODO|def", "ignoreCase": True, "glob": "*.py"},
    ):
        with_rg = await run_tool(GrepTool(rg=RG), arguments, ctx)
        fallback = await run_tool(GrepTool(rg=None), arguments, ctx)
        assert with_rg.text == fallback.text
        assert with_rg.details is not None
        assert with_rg.details["engine"] == "ripgrep"


@pytest.mark.skipif(RG is None, reason="ripgrep (rg) is not installed")
async def test_without_bubblewrap_ripgrep_still_searches_a_directory(
    ctx: ToolContext, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without its jail (no bubblewrap: no sandbox either, commands run unconfined) ripgrep
    walks a directory by names, as fast as ever, with the same output as in the jail."""
    make_tree(workspace)
    jailed = await run_tool(GrepTool(rg=RG), {"pattern": "TODO"}, ctx)
    monkeypatch.setenv("PATH", str(workspace / "no-such-directory"))  # no bwrap on it
    grep_module.rg_jail.cache_clear()
    try:
        directory = await run_tool(GrepTool(rg=RG), {"pattern": "TODO"}, ctx)
        alone = await run_tool(GrepTool(rg=RG), {"pattern": "TODO", "path": "src/app.py"}, ctx)
    finally:
        grep_module.rg_jail.cache_clear()
    assert directory.details is not None and alone.details is not None
    assert directory.details["engine"] == "ripgrep" and directory.text == jailed.text
    assert "src/app.py\n4:    # TODO: parse args" in directory.text
    assert alone.details["engine"] == "ripgrep"


async def test_a_search_cut_at_the_bound_ends_with_its_output_read_to_the_end(
    ctx: ToolContext, workspace: Path, tmp_path: Path, spawned: list[asyncio.subprocess.Process]
) -> None:
    """Before: a search stopped at the bound was waited for, but its output pipe was left open
    when the exit was already known (ripgrep in its jail: the killed bubblewrap reported gone
    before ripgrep's output ends). asyncio's transport then outlived the test's event loop and
    failed some later test when collected ("Event loop is closed"). Here a stand-in ripgrep
    exits at once; a child of its keeps stdout open a moment after the match past the bound."""
    (workspace / "a.txt").write_text("hit\n")
    match = (
        '{"type":"match","data":{"path":{"text":"a.txt"},"lines":{"text":"hit\\n"},'
        '"line_number":%d}}\n'
    )
    (tmp_path / "first.json").write_text("".join(match % n for n in range(1, MAX_MATCHES + 1)))
    (tmp_path / "last.json").write_text(match % (MAX_MATCHES + 1))
    fake = tmp_path / "fake-rg"
    fake.write_text(
        "#!/bin/sh\n"
        f"cat '{tmp_path}/first.json'\n"
        f"( exec 2>&-; sleep 0.3; cat '{tmp_path}/last.json'; sleep 0.3 ) &\n"
    )
    fake.chmod(0o755)
    result = await run_tool(GrepTool(rg=str(fake)), {"pattern": "hit", "path": "a.txt"}, ctx)
    assert f"Stopped after {MAX_MATCHES} matches" in result.text
    [proc] = spawned
    assert proc.returncode is not None
    assert proc.stdout is not None and proc.stdout.at_eof()
    assert proc.stderr is not None and proc.stderr.at_eof()


@pytest.mark.skipif(RG is None, reason="ripgrep (rg) is not installed")
@pytest.mark.parametrize("per_file", [1, 3])
async def test_files_searched_on_every_core_come_in_path_order(
    ctx: ToolContext, workspace: Path, per_file: int
) -> None:
    """ripgrep searches unsorted (on every core) and the files are put in path order after;
    past the bound (3 a file: 720 matches), it runs again sorted, so the first matches in path
    order are kept: the same output as the walk in path order, whatever the threads did."""
    for d in range(24):
        for f in range(10):
            path = workspace / f"d{d % 7}" / f"sub{d}" / f"f{f}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(f"needle {d} {f} {n}\nhay\n" for n in range(per_file)))
    (workspace / "d1.txt").write_text("needle beside the folder d1\n")
    (workspace / "d1-x" / "a.txt").parent.mkdir()
    (workspace / "d1-x" / "a.txt").write_text("needle in d1-x\n")
    for arguments in ({"pattern": "needle"}, {"pattern": "needle", "context": 1}):
        with_rg = await run_tool(GrepTool(rg=RG), arguments, ctx)
        fallback = await run_tool(GrepTool(rg=None), arguments, ctx)
        assert with_rg.text == fallback.text
        assert with_rg.details is not None and with_rg.details["engine"] == "ripgrep"
