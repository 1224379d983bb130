"""The workspace rule: every path a tool touches stays inside the workspace.

Relative paths are relative to the workspace root; absolute ones must lie inside it; a `..`
component is refused outright (even one that would stay inside); symlinks are resolved and a
target outside the workspace is refused. A path that does not exist yet (a file about to be
written) is resolved as far as it exists, so a symlinked parent directory cannot smuggle a
write out either.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePath

from agent_server.errors import PathOutsideWorkspaceError


def resolve_in_workspace(workspace: Path, path: str, *, extra_roots: Sequence[Path] = ()) -> Path:
    """The real (symlink-free) absolute path of `path`, checked to be inside the workspace.

    `extra_roots` are further directories whose files are allowed (the read tool passes the
    session's spill directory). Raises PathOutsideWorkspaceError naming the workspace root.
    """
    root = Path(os.path.realpath(workspace))
    if not path or not path.strip():
        raise PathOutsideWorkspaceError(
            f"The path is empty. Give a path relative to the workspace root {root}."
        )
    if "\x00" in path:
        raise PathOutsideWorkspaceError("The path contains a NUL character.")
    if path.startswith("~"):
        raise PathOutsideWorkspaceError(
            f"{path!r} refers to a home directory, which is outside the workspace {root}. "
            "Use a path relative to the workspace root."
        )
    given = PurePath(path)
    if ".." in given.parts:
        raise PathOutsideWorkspaceError(
            f"{path!r} contains a '..' component, which is not allowed. Use a path relative "
            f"to the workspace root {root} without '..'."
        )
    roots = (root, *(Path(os.path.realpath(r)) for r in extra_roots))
    if given.is_absolute():
        # Inside the workspace as written (or as the workspace's real path is spelled).
        spelled = (Path(os.path.abspath(workspace)), *roots, *(Path(r) for r in extra_roots))
        if not any(_is_within(Path(given), r) for r in spelled):
            raise PathOutsideWorkspaceError(
                f"{path!r} is outside the workspace {root}. Use a path relative to the "
                "workspace root, or an absolute path inside it."
            )
        candidate = Path(given)
    else:
        candidate = root / given
    resolved = Path(os.path.realpath(candidate))
    if not any(_is_within(resolved, r) for r in roots):
        raise PathOutsideWorkspaceError(
            f"{path!r} leads through a symbolic link to {resolved}, which is outside the "
            f"workspace {root}. Only files inside the workspace can be used."
        )
    return resolved


def display_path(workspace: Path, path: Path) -> str:
    """`path` relative to the workspace root when it is inside it (POSIX separators)."""
    root = Path(os.path.realpath(workspace))
    try:
        relative = path.relative_to(root)
    except ValueError:
        return str(path)
    text = relative.as_posix()
    return text if text != "." else "."


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
