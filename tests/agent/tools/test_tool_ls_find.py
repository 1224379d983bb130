"""ls and find: sorted, bounded listings that skip what is never worth searching."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_server.agent.tools import ToolContext, run_tool
from agent_server.agent.tools.find import MAX_RESULTS, FindTool
from agent_server.agent.tools.ls import MAX_ENTRIES, LsTool
from agent_server.agent.tools.walk import HELD_DEPTH, glob_matches, walk_files

LS = LsTool()
FIND = FindTool()


def make_tree(root: Path) -> None:
    files = [
        "README.md",
        "setup.py",
        ".env.example",
        "src/app.py",
        "src/util/strings.py",
        "src/ui/button.tsx",
        "src/ui/theme.ts",
        "tests/test_app.py",
        ".git/config",
        ".git/objects/ab/cdef.py",
        "node_modules/left-pad/index.js",
        "node_modules/left-pad/setup.py",
        ".venv/lib/site.py",
        "src/__pycache__/app.cpython-311.py",
    ]
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {name}\n")


async def test_ls_sorts_and_marks_directories(ctx: ToolContext, workspace: Path) -> None:
    make_tree(workspace)
    result = await run_tool(LS, {}, ctx)
    assert not result.is_error
    assert result.text.splitlines() == [
        ".env.example",
        ".git/",
        ".venv/",
        "node_modules/",
        "README.md",
        "setup.py",
        "src/",
        "tests/",
    ]
    sub = await run_tool(LS, {"path": "src"}, ctx)
    assert sub.text.splitlines() == ["__pycache__/", "app.py", "ui/", "util/"]


async def test_ls_is_bounded(ctx: ToolContext, workspace: Path) -> None:
    for i in range(MAX_ENTRIES + 37):
        (workspace / f"f{i:04d}.txt").write_text("")
    result = await run_tool(LS, {"path": "."}, ctx)
    listed = [line for line in result.text.splitlines() if line.endswith(".txt")]
    assert len(listed) == MAX_ENTRIES
    assert f"37 more entries not shown ({MAX_ENTRIES + 37} in all)" in result.text


async def test_ls_errors(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "file.txt").write_text("x")
    (workspace / "empty").mkdir()
    not_dir = await run_tool(LS, {"path": "file.txt"}, ctx)
    assert not_dir.is_error
    assert "use read" in not_dir.text.lower()
    missing = await run_tool(LS, {"path": "nope"}, ctx)
    assert missing.is_error
    assert "not found" in missing.text
    empty = await run_tool(LS, {"path": "empty"}, ctx)
    assert not empty.is_error
    assert "empty" in empty.text


async def test_find_name_pattern_matches_at_any_depth_and_skips_junk(
    ctx: ToolContext, workspace: Path
) -> None:
    make_tree(workspace)
    result = await run_tool(FIND, {"pattern": "*.py"}, ctx)
    assert result.text.splitlines() == [
        "setup.py",
        "src/app.py",
        "src/util/strings.py",
        "tests/test_app.py",
    ]


async def test_find_path_patterns_double_star_and_braces(ctx: ToolContext, workspace: Path) -> None:
    make_tree(workspace)
    ts = await run_tool(FIND, {"pattern": "src/**/*.{ts,tsx}"}, ctx)
    assert ts.text.splitlines() == ["src/ui/button.tsx", "src/ui/theme.ts"]
    below = await run_tool(FIND, {"pattern": "**/*.py", "path": "src"}, ctx)
    # Paths are relative to the workspace root, so they can be passed to read as they are.
    assert below.text.splitlines() == ["src/app.py", "src/util/strings.py"]


async def test_find_lists_matching_directories_with_a_slash(
    ctx: ToolContext, workspace: Path
) -> None:
    make_tree(workspace)
    result = await run_tool(FIND, {"pattern": "u*"}, ctx)
    assert result.text.splitlines() == ["src/ui/", "src/util/"]


async def test_find_no_match_and_errors(ctx: ToolContext, workspace: Path) -> None:
    make_tree(workspace)
    none = await run_tool(FIND, {"pattern": "*.rs"}, ctx)
    assert not none.is_error
    assert "No files match" in none.text
    missing = await run_tool(FIND, {"pattern": "*", "path": "nope"}, ctx)
    assert missing.is_error
    empty = await run_tool(FIND, {"pattern": "  "}, ctx)
    assert empty.is_error


async def test_find_is_bounded(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "many").mkdir()
    for i in range(MAX_RESULTS + 5):
        (workspace / "many" / f"{i:05d}.log").write_text("")
    result = await run_tool(FIND, {"pattern": "*.log"}, ctx)
    listed = [line for line in result.text.splitlines() if line.endswith(".log")]
    assert len(listed) == MAX_RESULTS
    assert f"5 more matches not shown ({MAX_RESULTS + 5} in all)" in result.text


async def test_find_does_not_enter_symlinked_directories(
    ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("")
    (workspace / "link").symlink_to(outside, target_is_directory=True)
    result = await run_tool(FIND, {"pattern": "*.py"}, ctx)
    assert "secret.py" not in result.text


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/deep/a.py", True),
        ("*.py", "a.pyc", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/x/a.py", False),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("src/**", "src/x/y/a.py", True),
        ("**/test_*.py", "test_a.py", True),
        ("**/test_*.py", "pkg/tests/test_a.py", True),
        ("./src/*.py", "src/a.py", True),
        ("*.{ts,tsx}", "ui/b.tsx", True),
        ("*.{ts,tsx}", "ui/b.js", False),
        ("file?.txt", "file1.txt", True),
        ("file?.txt", "file10.txt", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "b.txt", False),
        ("*.txt", "weird (1).txt", True),
    ],
)
def test_glob_semantics(pattern: str, path: str, matches: bool) -> None:
    assert glob_matches(pattern, path) is matches


def test_a_glob_of_many_stars_matches_a_long_name_without_backtracking() -> None:
    """`**a**a...**c` as a regex (`.*a.*a...`) backtracked for minutes on a long name (in C,
    holding the GIL: a separate process, so that a hang ends with the timeout)."""
    script = (
        "from agent_server.agent.tools.walk import glob_matches\n"
        "pattern = '**a' * 10 + '**c'\n"
        "for path in ('a' * 200, 'a' * 200 + 'c', 'a/' * 100 + 'c'):\n"
        "    print(glob_matches(pattern, path))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["False", "True", "True"]


async def test_an_invalid_glob_is_an_error_that_names_it(ctx: ToolContext) -> None:
    result = await run_tool(FIND, {"pattern": "[z-a]"}, ctx)
    assert result.is_error
    assert result.text.startswith("Invalid glob '[z-a]': bad character range z-a.")
    assert "[a-z]" in result.text


async def test_undecodable_file_names_do_not_break_listings(
    ctx: ToolContext, workspace: Path
) -> None:
    os.close(os.open(os.fsencode(workspace) + b"/caf\xe9.txt", os.O_CREAT | os.O_WRONLY))
    listing = await run_tool(LS, {}, ctx)
    assert not listing.is_error
    # By its bytes (paths.listed_path), so that the file can be named back.
    assert listing.text == '"caf\\udce9.txt"'
    found = await run_tool(FIND, {"pattern": "*.txt"}, ctx)
    assert found.text == '"caf\\udce9.txt"'
    listing.text.encode("utf-8")  # sendable as JSON


async def test_find_walks_a_tree_deeper_than_the_directories_it_holds_open(
    ctx: ToolContext, workspace: Path
) -> None:
    """Past HELD_DEPTH levels a directory is opened again from the deepest one held: every
    file is still found, those beside a deep branch too, and no descriptor is left open."""
    depth = HELD_DEPTH + 6
    deepest = workspace.joinpath(*["d"] * depth)
    deepest.mkdir(parents=True)
    expected = []
    for level in range(1, depth + 1):
        parent = workspace.joinpath(*["d"] * level)
        (parent / "e").mkdir()
        (parent / "e" / "x.txt").write_text("x\n")  # walked after the deep branch below
        expected.append("/".join(["d"] * level + ["e", "x.txt"]))
    before = len(os.listdir("/proc/self/fd")) if sys.platform.startswith("linux") else 0
    result = await run_tool(FIND, {"pattern": "x.txt"}, ctx)
    assert sorted(result.text.splitlines()) == sorted(expected)
    if sys.platform.startswith("linux"):
        assert len(os.listdir("/proc/self/fd")) == before


def test_a_walk_of_a_workspace_reached_through_a_link_lists_its_files(tmp_path: Path) -> None:
    """The workspace root may be spelled through a link (a linked project folder, macOS's
    /var): the walk starts from its real path and names entries as the root was given."""
    real = tmp_path / "real"
    make_tree(real)
    (tmp_path / "spelled").symlink_to(real, target_is_directory=True)
    walked = [path.relative_to(tmp_path / "spelled").as_posix() for path in
              walk_files(tmp_path / "spelled")]
    assert "src/app.py" in walked
    assert all(not name.startswith((".git/", "node_modules/")) for name in walked)


@settings(max_examples=300, deadline=None)
@given(
    pattern=st.text(alphabet="ab*?{},.", min_size=1, max_size=8),
    path=st.lists(st.text(alphabet="ab.,", max_size=5), min_size=1, max_size=4),
)
def test_a_glob_read_by_the_name_alone_matches_as_the_whole_path(pattern: str,
                                                                 path: list[str]) -> None:
    """A pattern without `/`, `**` or a class is matched against a path's last name only
    (walk.compile_glob): the same answer as the automaton over the whole path."""
    from agent_server.agent.tools.walk import _DIRECTORIES, Glob, _parse

    if "**" in pattern:
        return
    whole = Glob((_DIRECTORIES, *_parse(pattern)), anchored=True)
    relative = "/".join(path)
    assert glob_matches(pattern, relative) is whole.fullmatch(relative)
