"""The workspace rule: every path a tool touches stays inside the workspace.

Relative paths are relative to the workspace root; absolute ones must lie inside it; a `..`
component is refused outright (even one that would stay inside); symlinks are resolved and a
target outside the workspace is refused. A path that does not exist yet (a file about to be
written) is resolved as far as it exists, so a symlinked parent directory cannot smuggle a
write out either.

What is opened is what was checked. A checked path is the file's real path, with no link in
it, so the file is opened, written and stat'ed by walking that path from `/` one component at
a time without following a symbolic link (`openat` with O_NOFOLLOW, each parent a directory
fd). A link that appears after the check (something else writing in the workspace swaps a
file for a link to the outside) is refused instead of followed, and the regular-file and
hard-link checks look at the file that was opened (`fstat`), not at a name.

How a path is listed (ls, find, grep: `listed_path`): as it is, except each name in it that
holds a character that acts instead of showing (literal.py: a control character, C0, DEL,
C1: a newline would forge a line of the listing, an ESC act on a terminal; a bidi control
such as U+202E, which reverses what follows; an invisible format or tag character; a line or
paragraph separator) or a byte that is not UTF-8; such a name
is shown as a JSON string, in double quotes with escapes (`src/"a\\nIMPORTANT: ..."`,
`"\\u001b[31mred"`, `"caf\\udce9"` for the byte 0xe9). So is a name that is itself in double
quotes, so that every listed path reads back as the one it stands for: a path given to a tool
is read back the same way (`path_from_listing`, in `resolve_in_workspace`).
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import json
import os
import re
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path, PurePath
from typing import BinaryIO

from agent_server.errors import PathOutsideWorkspaceError, ToolError
from agent_server.literal import hidden_pattern


def resolve_in_workspace(workspace: Path, path: str, *, extra_roots: Sequence[Path] = ()) -> Path:
    """The real (symlink-free) absolute path of `path`, checked to be inside the workspace.

    `extra_roots` are further directories whose files are allowed (the read tool passes the
    session's spill directory). Raises PathOutsideWorkspaceError naming the workspace root.
    """
    root = Path(os.path.realpath(workspace))
    path = path_from_listing(path)
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


# A name with one of these is listed quoted: what `literal` would escape, tabs and line
# breaks included (C0 and C1 controls, DEL, bidi controls, invisible format characters, tag
# characters, line and paragraph separators, and the lone surrogates that stand for bytes
# that are not UTF-8: os.fsdecode). json.dumps escapes C0; the rest are escaped after it.
_UNLISTABLE = hidden_pattern(keep="")


def listed_path(path: str) -> str:
    """`path` (`/`-separated) as a listing shows it: each name that needs it quoted (see the
    module docstring), the others as they are."""
    return "/".join(_listed_name(name) for name in path.split("/"))


def _listed_name(name: str) -> str:
    if not _UNLISTABLE.search(name) and not _quoted(name):
        return name
    return _UNLISTABLE.sub(_json_escape, json.dumps(name, ensure_ascii=False))


def _json_escape(found: re.Match[str]) -> str:
    """A character as JSON writes it escaped: `\\u202e`; past U+FFFF, its surrogate pair."""
    code = ord(found.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def path_from_listing(given: str) -> str:
    """The path `given` stands for when it was copied from a listing (`listed_path`): each
    name in double quotes that is a JSON string is the name it spells; the rest as given."""
    if '"' not in given:
        return given
    return "/".join(_name_from_listing(name) for name in given.split("/"))


def _name_from_listing(name: str) -> str:
    if not _quoted(name):
        return name
    try:
        spelled = json.loads(name)
    except ValueError:
        return name
    return spelled if isinstance(spelled, str) else name


def _quoted(name: str) -> bool:
    return len(name) >= 2 and name.startswith('"') and name.endswith('"')


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
        info = _stat_checked(path, shown)
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


# Each list as one expression: a workspace's walk asks of every file (20 globs one by one took
# 0.4 s of a 11,000-file repo_map).
_SECRET = re.compile("|".join(fnmatch.translate(pattern) for pattern in SECRET_FILES))
_NOT_SECRET = re.compile("|".join(fnmatch.translate(pattern) for pattern in NOT_SECRET_FILES))


def secret_file(path: str | Path) -> bool:
    """Whether a file's name says it commonly holds secrets (see SECRET_FILES)."""
    name = (path.name if isinstance(path, Path) else path.rpartition("/")[2]).lower()
    return _SECRET.match(name) is not None and _NOT_SECRET.match(name) is None


def file_warnings(workspace: Path, paths: Sequence[str]) -> list[str]:
    """Of `paths` (as a tool call names them), what the user must hear of before a tool
    reads or writes them: a file that may hold secrets, a file with several hard links."""
    found = hard_linked(workspace, paths)
    for given in paths:
        try:
            resolved = resolve_in_workspace(workspace, given)
        except PathOutsideWorkspaceError:
            continue
        # The file the tool will open: a name copied from a listing read back, a link followed.
        if secret_file(given) or secret_file(resolved):
            found.append(f"{display_path(workspace, resolved)} may hold secrets (keys, passwords, "
                         "tokens)")
    return found


def hard_linked(workspace: Path, paths: Sequence[str]) -> list[str]:
    """Of `paths` (as a tool call names them), the existing regular files with more than one
    hard link, described for a permission question."""
    found: list[str] = []
    for given in paths:
        try:
            resolved = resolve_in_workspace(workspace, given)
            info = _stat_checked(resolved, given)
        except (PathOutsideWorkspaceError, OSError):
            continue
        if has_other_links(info):
            shown = display_path(workspace, resolved)
            found.append(f"{shown} has {info.st_nlink} hard links (another may be outside)")
    return found


def open_regular(path: Path, shown: str, *, hard_links_allowed: bool) -> BinaryIO:
    """`path` (checked) opened for reading without following a link, then checked to be a
    regular file, with one link unless `hard_links_allowed`: the checks look at the file
    opened, so nothing can be swapped in between. Opening never blocks: O_NONBLOCK."""
    fd = _open_checked(path, shown, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        _refuse_special(info, shown)
        check_hard_links(info, shown, hard_links_allowed)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def write_regular(path: Path, shown: str, data: bytes, *, hard_links_allowed: bool) -> None:
    """Write `data` as the whole content of `path` (checked; created if missing, in place
    otherwise, so the file keeps its permissions), refusing a link, anything that is not a
    regular file, and a file with several links unless `hard_links_allowed`; never blocks on a
    named pipe without a reader."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = _open_checked(path, shown, flags)
    try:
        info = os.fstat(fd)
        _refuse_special(info, shown)
        check_hard_links(info, shown, hard_links_allowed)
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def replace_regular(path: Path, shown: str, data: bytes, *, mode: int) -> None:
    """Make `data` the content of `path` (checked) at once: written to a new file beside it
    and renamed over it, both through the parent directory opened without following a link
    (missing directories made), so a link that appears on the way or in its place is neither
    followed nor written through (the rename replaces a link itself)."""
    parent = _open_parent(path, shown, create=True)
    temporary = f".{path.name}.{secrets.token_hex(6)}"
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temporary, flags, 0o600, dir_fd=parent)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(temporary, path.name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=parent)
        raise
    finally:
        os.close(parent)


def remove_file(path: Path, shown: str) -> None:
    """Delete `path` (checked) through its parent directory opened without following a link:
    what is removed is the name in the workspace (a link itself, never where it leads)."""
    parent = _open_parent(path, shown)
    try:
        os.unlink(path.name, dir_fd=parent)
    finally:
        os.close(parent)


def open_directory(path: Path, shown: str) -> int:
    """A descriptor of the directory `path` (checked), opened without following a link on the
    way or at its end: what is listed or walked through it is what was checked."""
    return _open_checked(path, shown, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def directory_names(path: Path, shown: str) -> list[tuple[str, bool]]:
    """The entries of the directory `path` (checked), opened without following a link, as
    (name, whether it is a directory or a link to one)."""
    fd = open_directory(path, shown)
    try:
        with os.scandir(fd) as entries:
            return [(entry.name, entry.is_dir()) for entry in entries]
    finally:
        os.close(fd)


def make_parent_directories(path: Path, shown: str) -> None:
    """The missing directories above `path` (checked) made, as `mkdir -p` would, without
    following a link on the way."""
    os.close(_open_parent(path, shown, create=True))


# --- opening a checked path: no link followed ------------------------------------------------

# A directory on the way, opened only to be walked through (O_PATH where there is one: it
# needs no read permission, as an execute-only home directory on the way gives none).
_DIRECTORY = os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)
# What opening a link with O_NOFOLLOW fails with: ELOOP (Linux, macOS), EMLINK (FreeBSD),
# ENOTDIR (a link where a directory is expected, with O_DIRECTORY).
_LINK_ERRORS = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR})


def _open_checked(path: Path, shown: str, flags: int) -> int:
    """`path` (absolute, checked) opened with `flags`, no link followed on the way or at its
    end."""
    if path.parent == path:
        return os.open(path, flags)  # `/` itself
    parent = _open_parent(path, shown)
    try:
        return os.open(path.name, flags | os.O_NOFOLLOW, 0o666, dir_fd=parent)
    except OSError as exc:
        _refuse_link(exc, parent, path.name, shown)
        raise
    finally:
        os.close(parent)


def _stat_checked(path: Path, shown: str) -> os.stat_result:
    """The stat of `path` (absolute, checked), no link followed on the way or at its end."""
    if path.parent == path:
        return os.stat(path)  # `/` itself
    parent = _open_parent(path, shown)
    try:
        info = os.stat(path.name, dir_fd=parent, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            raise _link_appeared(path.name, shown)
        return info
    finally:
        os.close(parent)


def _open_parent(path: Path, shown: str, *, create: bool = False) -> int:
    """A directory fd of the parent of `path` (absolute), reached from `/` one component at a
    time without following a link; with `create`, missing directories are made on the way."""
    fd = os.open(path.anchor, _DIRECTORY)
    try:
        for name in path.parent.parts[1:]:
            child = _open_directory(fd, name, shown, create=create)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_directory(parent: int, name: str, shown: str, *, create: bool) -> int:
    try:
        return os.open(name, _DIRECTORY, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as exc:
        _refuse_link(exc, parent, name, shown)
        raise
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, dir_fd=parent)
    return _open_directory(parent, name, shown, create=False)


def _refuse_link(error: OSError, parent: int, name: str, shown: str) -> None:
    """Raise the refusal when `error` came from a link where `name` was (nothing otherwise)."""
    if error.errno not in _LINK_ERRORS:
        return
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except OSError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise _link_appeared(name, shown) from error


def _link_appeared(name: str, shown: str) -> PathOutsideWorkspaceError:
    return PathOutsideWorkspaceError(
        f"{shown} changed while it was being used: {name!r} on its way is now a symbolic "
        "link, which it was not when the path was checked. A link that appears meanwhile is "
        "not followed, since it could lead outside the workspace. Try again once the file "
        "stays put."
    )
