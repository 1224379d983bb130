"""A file swapped for a symbolic link to the outside while a tool runs (a build watcher, a dev
server, a background job writing in the workspace): what a tool opens is what it checked, so
the outside file is never read nor changed, however the calls and the swaps interleave."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_server.agent.tools import ToolContext, run_tool
from agent_server.agent.tools.edit import EditTool
from agent_server.agent.tools.find import FindTool
from agent_server.agent.tools.grep import GrepTool, rg_jail
from agent_server.agent.tools.ls import LsTool
from agent_server.agent.tools.paths import open_directory
from agent_server.agent.tools.read import ReadTool
from agent_server.agent.tools.sandbox import jail_argv
from agent_server.agent.tools.write import WriteTool

CALLS = 2000
GREP_CALLS = 300  # each starts a process
OUTSIDE_TEXT = "OUTSIDE-SECRET\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    other = tmp_path / "outside"
    other.mkdir()
    (other / "x.txt").write_text(OUTSIDE_TEXT)
    return other


@contextlib.contextmanager
def swapping(workspace: Path, name: str, link_to: Path, inside: Path | None = None) -> Iterator[None]:
    """While the block runs, `name` in the workspace keeps turning into a symbolic link to
    `link_to` and back: into a regular file, or (with `inside`) a link to `inside`."""
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                os.symlink(link_to, workspace / ".link")
                os.replace(workspace / ".link", workspace / name)
            with contextlib.suppress(OSError):
                if inside is None:
                    (workspace / ".file").write_text("inside, a regular file\n")
                    os.replace(workspace / ".file", workspace / name)
                else:
                    os.symlink(inside, workspace / ".link")
                    os.replace(workspace / ".link", workspace / name)

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    try:
        yield
    finally:
        stop.set()
        swapper.join()


async def call_often(tool: Any, arguments: dict[str, Any], ctx: ToolContext, calls: int) -> str:
    """The texts of `calls` calls, joined."""
    texts = [(await run_tool(tool, arguments, ctx)).text for _ in range(calls)]
    return "\n".join(texts)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (ReadTool(), {"path": "x.txt"}),
        (WriteTool(), {"path": "x.txt", "content": "written\n"}),
        (EditTool(), {"path": "x.txt", "oldText": "OUTSIDE-SECRET", "newText": "edited"}),
        (EditTool(), {"path": "x.txt", "oldText": "inside", "newText": "edited"}),
    ],
    ids=["read", "write", "edit-outside-text", "edit-inside-text"],
)
async def test_a_file_swapped_for_a_link_out_is_never_read_or_changed(
    ctx: ToolContext, workspace: Path, outside: Path, tool: Any, arguments: dict[str, Any]
) -> None:
    (workspace / "x.txt").write_text("inside\n")
    with swapping(workspace, "x.txt", outside / "x.txt"):
        texts = await call_often(tool, arguments, ctx, CALLS)
    assert "OUTSIDE-SECRET" not in texts
    assert (outside / "x.txt").read_text() == OUTSIDE_TEXT


@pytest.mark.parametrize("rg", ["auto", None], ids=["ripgrep", "python"])
async def test_grep_of_a_file_swapped_for_a_link_out_never_shows_its_lines(
    ctx: ToolContext, workspace: Path, outside: Path, rg: str | None
) -> None:
    (workspace / "x.txt").write_text("inside\n")
    with swapping(workspace, "x.txt", outside / "x.txt"):
        texts = await call_often(
            GrepTool(rg), {"pattern": "SECRET", "path": "x.txt"}, ctx, GREP_CALLS
        )
    assert "OUTSIDE-SECRET" not in texts


async def test_a_directory_link_turning_outside_never_leads_a_read_or_write_out(
    ctx: ToolContext, workspace: Path, outside: Path
) -> None:
    """A link inside the workspace to a directory inside it is followed; one that turns
    outside meanwhile is not, whichever it is when the file is opened."""
    (workspace / "real").mkdir()
    (workspace / "real" / "x.txt").write_text("inside\n")
    with swapping(workspace, "d", outside, inside=workspace / "real"):
        read = await call_often(ReadTool(), {"path": "d/x.txt"}, ctx, CALLS)
        written = await call_often(
            WriteTool(), {"path": "d/x.txt", "content": "written\n"}, ctx, CALLS
        )
    assert "OUTSIDE-SECRET" not in read
    assert (outside / "x.txt").read_text() == OUTSIDE_TEXT
    # The link inside is still followed: asked once the swapping has stopped, so that the
    # answer does not hang on how the calls and the swaps happened to interleave.
    os.symlink(workspace / "real", workspace / ".settled")
    os.replace(workspace / ".settled", workspace / "d")
    assert "written" in (await run_tool(ReadTool(), {"path": "d/x.txt"}, ctx)).text
    written = (await run_tool(WriteTool(), {"path": "d/x.txt", "content": "again\n"}, ctx)).text
    assert "Overwrote" in written


# A process of its own, so that it swaps while the tool's thread holds the GIL too.
_DIRECTORY_SWAPPER = """
import os, sys
workspace, name, link_to = sys.argv[1:]
os.chdir(workspace)
while True:
    try:
        os.rename(name, ".d")
        os.symlink(link_to, name)
        os.rename(name, ".link")
        os.rename(".d", name)
        os.unlink(".link")
    except OSError:
        pass
"""


@contextlib.contextmanager
def directory_swapping(workspace: Path, name: str, link_to: Path) -> Iterator[None]:
    """While the block runs, another process keeps moving the directory `name` in the
    workspace away while a symbolic link to `link_to` takes its name, and back."""
    swapper = subprocess.Popen(
        [sys.executable, "-c", _DIRECTORY_SWAPPER, str(workspace), name, str(link_to)]
    )
    try:
        yield
    finally:
        swapper.kill()
        swapper.wait()
    if (workspace / ".d").is_dir():  # stopped half-way: the directory back in place
        with contextlib.suppress(FileNotFoundError):
            os.unlink(workspace / name)
        os.rename(workspace / ".d", workspace / name)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(workspace / ".link")
    assert (workspace / name).is_dir() and not (workspace / name).is_symlink()


async def test_ls_of_a_directory_swapped_for_a_link_out_never_lists_the_outside(
    ctx: ToolContext, workspace: Path, outside: Path
) -> None:
    (workspace / "d").mkdir()
    (workspace / "d" / "inside.txt").write_text("inside\n")
    with directory_swapping(workspace, "d", outside):
        listed = await call_often(LsTool(), {"path": "d"}, ctx, CALLS)
    assert "x.txt" not in listed


@pytest.mark.parametrize("path", [".", "d"], ids=["above", "itself"])
async def test_find_in_a_directory_swapped_for_a_link_out_never_lists_the_outside(
    ctx: ToolContext, workspace: Path, outside: Path, path: str
) -> None:
    (workspace / "d").mkdir()
    (workspace / "d" / "inside.txt").write_text("inside\n")
    with directory_swapping(workspace, "d", outside):
        found = await call_often(FindTool(), {"pattern": "*.txt", "path": path}, ctx, CALLS)
    assert "x.txt" not in found
    # The directory is still searched when it stays put (asked once the swapping has stopped).
    settled = await run_tool(FindTool(), {"pattern": "*.txt", "path": path}, ctx)
    assert "d/inside.txt" in settled.text


@pytest.mark.parametrize("rg", ["auto", None], ids=["ripgrep", "python"])
@pytest.mark.parametrize("path", [".", "d"], ids=["above", "itself"])
async def test_grep_of_a_directory_swapped_for_a_link_out_never_shows_its_lines(
    ctx: ToolContext, workspace: Path, outside: Path, rg: str | None, path: str
) -> None:
    (workspace / "d").mkdir()
    (workspace / "d" / "inside.txt").write_text("inside\n")
    (outside / "inside.txt").write_text(OUTSIDE_TEXT)  # what a read by name through d gets
    for i in range(100):  # searched between the listing of the workspace and the entering of d
        (workspace / f"a{i:03d}.txt").write_text("a\n")
    arguments = {"pattern": "SECRET|inside", "path": path}
    with directory_swapping(workspace, "d", outside):
        texts = await call_often(GrepTool(rg), arguments, ctx, GREP_CALLS)
    assert "OUTSIDE-SECRET" not in texts
    # The directory is still searched when it stays put (asked once the swapping has stopped:
    # the swapper leaves `d` a directory only for moments, which a call may never meet).
    assert "1:inside" in (await run_tool(GrepTool(rg), arguments, ctx)).text


@pytest.mark.skipif(
    shutil.which("rg") is None or rg_jail(shutil.which("rg") or "") is None,
    reason="no ripgrep, or no bubblewrap to jail it in",
)
def test_ripgrep_in_its_jail_cannot_reach_the_outside_even_through_a_link(
    real_workspace: Path, outside: Path
) -> None:
    """What a race could at worst make ripgrep do is follow a link: in its jail, with links
    followed on purpose (-L), the outside is not there to be read."""
    workspace = real_workspace
    (workspace / "inside.txt").write_text("inside SECRET\n")
    (workspace / "out").symlink_to(outside)
    (workspace / "out.txt").symlink_to(outside / "x.txt")
    rg = shutil.which("rg") or ""
    bwrap = rg_jail(rg) or ""
    fd = open_directory(workspace, ".")
    try:
        command = [rg, "--no-config", "-L", "--no-messages", "SECRET", "."]
        jailed = subprocess.run(
            jail_argv(bwrap, fd, workspace, workspace, command),
            pass_fds=(fd,),
            capture_output=True,
            text=True,
            check=False,
        )
        direct = subprocess.run(command, cwd=workspace, capture_output=True, text=True)
    finally:
        os.close(fd)
    assert "OUTSIDE-SECRET" in direct.stdout  # followed outside the jail
    assert jailed.stdout == "./inside.txt:inside SECRET\n"


async def test_a_file_read_while_hard_linked_outside_is_left_out_whatever_its_name_is_later(
    ctx: ToolContext, workspace: Path, outside: Path
) -> None:
    """The Python search asks the file it read how many links it has: a hard link to an
    outside file that something renames away, or swaps for a plain file, right after the
    search read it is still left out."""
    (workspace / "h.txt").write_text("inside\n")
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                os.link(outside / "x.txt", workspace / ".linked")
                os.replace(workspace / ".linked", workspace / "h.txt")
                (workspace / ".plain").write_text("inside\n")
                os.replace(workspace / ".plain", workspace / "h.txt")

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    try:
        texts = await call_often(GrepTool(None), {"pattern": "SECRET|inside"}, ctx, GREP_CALLS)
    finally:
        stop.set()
        swapper.join()
    assert "OUTSIDE-SECRET" not in texts
    (workspace / ".plain").write_text("inside\n")  # settled: a plain file the search shows
    os.replace(workspace / ".plain", workspace / "h.txt")
    settled = await run_tool(GrepTool(None), {"pattern": "SECRET|inside"}, ctx)
    assert "1:inside" in settled.text
