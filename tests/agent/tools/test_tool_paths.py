"""The workspace rule: paths stay inside the workspace, whatever the spelling or the links."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_server.agent.tools import ToolContext, default_tools, resolve_in_workspace, run_tool
from agent_server.agent.tools.edit import EditTool
from agent_server.agent.tools.read import ReadTool
from agent_server.agent.tools.write import WriteTool
from agent_server.errors import PathOutsideWorkspaceError


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    other = tmp_path / "outside"
    other.mkdir()
    (other / "secret.txt").write_text("top secret\n")
    return other


def test_relative_and_absolute_paths_inside_resolve(workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("x = 1\n")
    real = Path(os.path.realpath(workspace))
    assert resolve_in_workspace(workspace, "src/app.py") == real / "src" / "app.py"
    assert resolve_in_workspace(workspace, "./src/app.py") == real / "src" / "app.py"
    assert resolve_in_workspace(workspace, str(workspace / "src/app.py")) == real / "src/app.py"
    assert resolve_in_workspace(workspace, ".") == real
    # Not existing yet (a file about to be written) is fine.
    assert resolve_in_workspace(workspace, "new/dir/file.txt") == real / "new/dir/file.txt"


@pytest.mark.parametrize("path", ["..", "../outside/secret.txt", "src/../../x", "src/../app.py"])
def test_any_dotdot_component_is_refused(workspace: Path, path: str) -> None:
    with pytest.raises(PathOutsideWorkspaceError) as info:
        resolve_in_workspace(workspace, path)
    assert "'..'" in info.value.message
    assert str(Path(os.path.realpath(workspace))) in info.value.message


def test_absolute_path_outside_is_refused_and_names_the_root(
    workspace: Path, outside: Path
) -> None:
    with pytest.raises(PathOutsideWorkspaceError) as info:
        resolve_in_workspace(workspace, str(outside / "secret.txt"))
    assert "outside the workspace" in info.value.message
    assert str(Path(os.path.realpath(workspace))) in info.value.message
    with pytest.raises(PathOutsideWorkspaceError):
        resolve_in_workspace(workspace, "/etc/passwd")


def test_symlink_to_a_file_outside_is_refused(workspace: Path, outside: Path) -> None:
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(PathOutsideWorkspaceError) as info:
        resolve_in_workspace(workspace, "link.txt")
    assert "symbolic link" in info.value.message


def test_symlinked_parent_directory_outside_is_refused_for_a_new_file(
    workspace: Path, outside: Path
) -> None:
    (workspace / "out").symlink_to(outside, target_is_directory=True)
    with pytest.raises(PathOutsideWorkspaceError):
        resolve_in_workspace(workspace, "out/new-file.txt")
    with pytest.raises(PathOutsideWorkspaceError):
        resolve_in_workspace(workspace, "out/deeper/new-file.txt")


def test_dangling_symlink_pointing_outside_is_refused(workspace: Path, outside: Path) -> None:
    (workspace / "dangling").symlink_to(outside / "does-not-exist-yet.txt")
    with pytest.raises(PathOutsideWorkspaceError):
        resolve_in_workspace(workspace, "dangling")


def test_symlink_inside_the_workspace_is_followed(workspace: Path) -> None:
    (workspace / "real.txt").write_text("hi\n")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")
    assert resolve_in_workspace(workspace, "alias.txt").name == "real.txt"


def test_workspace_reached_through_a_symlink_accepts_both_spellings(tmp_path: Path) -> None:
    real = tmp_path / "real-ws"
    real.mkdir()
    (real / "a.txt").write_text("a\n")
    alias = tmp_path / "alias-ws"
    alias.symlink_to(real, target_is_directory=True)
    assert resolve_in_workspace(alias, str(alias / "a.txt")) == real / "a.txt"
    assert resolve_in_workspace(alias, str(real / "a.txt")) == real / "a.txt"


@pytest.mark.parametrize("path", ["", "   ", "~/.ssh/id_rsa", "~"])
def test_empty_and_home_paths_are_refused(workspace: Path, path: str) -> None:
    with pytest.raises(PathOutsideWorkspaceError):
        resolve_in_workspace(workspace, path)


def test_extra_roots_allow_only_their_own_files(workspace: Path, tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    spill.mkdir()
    (spill / "bash-1.txt").write_text("log\n")
    assert resolve_in_workspace(workspace, str(spill / "bash-1.txt"), extra_roots=(spill,)) == (
        Path(os.path.realpath(spill)) / "bash-1.txt"
    )
    with pytest.raises(PathOutsideWorkspaceError):
        resolve_in_workspace(workspace, str(spill / "bash-1.txt"))


@pytest.mark.parametrize(
    ("tool_name", "arguments"),
    [
        ("read", {"path": "../outside/secret.txt"}),
        ("write", {"path": "../outside/new.txt", "content": "x"}),
        ("edit", {"path": "../outside/secret.txt", "oldText": "top", "newText": "no"}),
        ("ls", {"path": ".."}),
        ("find", {"pattern": "*", "path": "../outside"}),
        ("grep", {"pattern": "secret", "path": "../outside"}),
    ],
)
async def test_every_file_tool_refuses_escapes(
    ctx: ToolContext,
    real_workspace: Path,
    outside: Path,
    tool_name: str,
    arguments: dict[str, str],
) -> None:
    tool = next(t for t in default_tools() if t.spec.name == tool_name)
    result = await run_tool(tool, arguments, ctx)
    assert result.is_error
    assert "top secret" not in result.text
    assert str(real_workspace) in result.text
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert not (outside / "new.txt").exists()


async def test_write_and_edit_through_symlinks_to_outside_change_nothing(
    ctx: ToolContext, workspace: Path, outside: Path
) -> None:
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    (workspace / "out").symlink_to(outside, target_is_directory=True)
    results = [
        await run_tool(WriteTool(), {"path": "link.txt", "content": "pwned"}, ctx),
        await run_tool(WriteTool(), {"path": "out/new.txt", "content": "pwned"}, ctx),
        await run_tool(EditTool(), {"path": "link.txt", "oldText": "top", "newText": "x"}, ctx),
        await run_tool(ReadTool(), {"path": "out/secret.txt"}, ctx),
    ]
    assert all(r.is_error for r in results)
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert not (outside / "new.txt").exists()
