"""The workspace rule: every path a tool touches stays inside the workspace.

Relative paths are relative to the workspace root; absolute ones must lie inside it; a `..`
component is refused outright (even one that would stay inside); symlinks are resolved and a
target outside the workspace is refused. A path that does not exist yet (a file about to be
written) is resolved as far as it exists, so a symlinked parent directory cannot smuggle a
write out either.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Sequence
from pathlib import Path, PurePath
from typing import BinaryIO

from agent_server.errors import PathOutsideWorkspaceError, ToolError


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


# --- what may be opened: regular files only -------------------------------------------------

_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_info(path: Path, shown: str) -> os.stat_result | None:
    """The stat of an existing file or directory (None when there is none). Anything else (a
    named pipe, a device, a socket) is refused: opening one can block forever or act on a
    device."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    _refuse_special(info, shown)
    return info


def _refuse_special(info: os.stat_result, shown: str) -> None:
    if stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode):
        return
    kind = next((name for test, name in _SPECIAL_KINDS if test(info.st_mode)), "a special file")
    raise ToolError(
        f"{shown} is {kind}, not a regular file; the file tools only work on regular files. "
        "Leave it alone, or ask the user about it."
    )


def has_other_links(info: os.stat_result) -> bool:
    """A regular file with several hard links: it may be reachable from outside the workspace
    under another name (there is no cheap way to find its other names)."""
    return stat.S_ISREG(info.st_mode) and info.st_nlink > 1


def check_hard_links(info: os.stat_result, shown: str, allowed: bool) -> None:
    """A regular file with several hard links may be reachable from outside the workspace
    under another name: the call needs the user's go-ahead (`allowed`)."""
    if has_other_links(info) and not allowed:
        raise ToolError(
            f"{shown} has {info.st_nlink} hard links: the same file may also exist outside "
            "the workspace under another name, so it is not used without the user's "
            "permission. Ask the user, or use another file."
        )


# Files that commonly hold secrets, by name (case-insensitive globs): environment files, key
# and certificate files, credential and password files of common tools. From Claude Code's
# documented deny rules (`.env`, `.env.*`, `secrets/**`), gitleaks' and GitHub's lists of
# secret-bearing files. Templates meant to be shared (`.env.example`) and public keys are not.
SECRET_FILES = (
    ".env", ".env.*", "*.env", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks",
    "*.keystore", "*.ppk", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "*.kdbx", ".npmrc",
    ".pypirc", ".netrc", "_netrc", ".git-credentials", ".pgpass", ".my.cnf", ".htpasswd",
    ".dockercfg", "credentials", "credentials.json", "client_secret*.json",
    "service-account*.json", "*.tfvars", "*.tfstate", "secrets.yml", "secrets.yaml",
    "secrets.json", "secrets.toml", "kubeconfig",
)
NOT_SECRET_FILES = (
    "*.example", "*.sample", "*.template", "*.dist", "*.pub", ".env.*.example",
)


def secret_file(path: str | Path) -> bool:
    """Whether a file's name says it commonly holds secrets (see SECRET_FILES)."""
    name = Path(path).name.lower()
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in NOT_SECRET_FILES):
        return False
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in SECRET_FILES)


def file_warnings(workspace: Path, paths: Sequence[str]) -> list[str]:
    """Of `paths` (as a tool call names them), what the user must hear of before a tool
    reads or writes them: a file that may hold secrets, a file with several hard links."""
    found = hard_linked(workspace, paths)
    for given in paths:
        if secret_file(given):
            try:
                shown = display_path(workspace, resolve_in_workspace(workspace, given))
            except PathOutsideWorkspaceError:
                continue
            found.append(f"{shown} may hold secrets (keys, passwords, tokens)")
    return found


def hard_linked(workspace: Path, paths: Sequence[str]) -> list[str]:
    """Of `paths` (as a tool call names them), the existing regular files with more than one
    hard link, described for a permission question."""
    found: list[str] = []
    for given in paths:
        try:
            resolved = resolve_in_workspace(workspace, given)
            info = os.stat(resolved)
        except (PathOutsideWorkspaceError, OSError):
            continue
        if has_other_links(info):
            shown = display_path(workspace, resolved)
            found.append(f"{shown} has {info.st_nlink} hard links (another may be outside)")
    return found


def open_regular(path: Path, shown: str) -> BinaryIO:
    """`path` opened for reading, checked (after opening, so nothing can be swapped in
    between) to be a regular file. Opening never blocks: O_NONBLOCK."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        _refuse_special(os.fstat(fd), shown)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def write_regular(path: Path, shown: str, data: bytes) -> None:
    """Write `data` as the whole content of `path` (created if missing), refusing anything
    that is not a regular file; never blocks on a named pipe without a reader."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = os.open(path, flags, 0o666)
    try:
        _refuse_special(os.fstat(fd), shown)
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
