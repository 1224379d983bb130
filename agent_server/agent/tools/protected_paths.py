"""The workspace files a sandboxed command may not write: what programs outside the sandbox
read as configuration or instructions, or run.

A sandboxed command can write the whole workspace; these paths in it are read-only in the
sandbox, because something outside it acts on them later, unsandboxed:

- agent-server itself: `.mcp.json` (starts MCP servers; besides, its content needs the
  user's approval, agent/mcp/approval.py), `AGENTS.md` and `CLAUDE.md` (project instructions
  in the next session's system prompt);
- editors and other agents: `.vscode`, `.idea`, `.zed` (settings, tasks that run on open),
  `.claude`, `.codex`, `.cursor`;
- git: `.git/hooks` (run by the user's next commit), `.git/config` (aliases, `core.pager`,
  `core.fsmonitor`, filters: commands), `.git/config.worktree`, `.git/commondir` (points git
  at another repository's hooks and config), `.git/modules` and `.git/worktrees` (git
  directories of submodules and linked worktrees, each with its own hooks and config),
  `.gitmodules`, `.gitconfig`; a missing `.git` (a sandboxed `git init` would plant hooks).
  `.git` itself is mounted over itself (writable when it is a directory, read-only when it is
  a worktree's `.git` file), so that it cannot be renamed away and replaced by one whose
  `gitdir:` names a directory outside the workspace for the next sandbox to mount;
- shells and tools that read the directory they run in: `.envrc` (direnv), `.bashrc`,
  `.bash_profile`, `.zshrc`, `.zprofile`, `.profile` (a workspace that is a home directory),
  `.ripgreprc`, `.npmrc`, `.yarnrc`, `.yarnrc.yml` (npm's `script-shell`, yarn's `yarnPath`).

The list is Claude Code's sandbox-runtime's mandatory denials (its `DANGEROUS_FILES`,
`.vscode`, `.idea`, `.claude/commands`, `.claude/agents`, `.git/hooks`, `.git/config`) and
Codex's protected subpaths (`.git`, `.codex`), with the files agent-server reads and the
other tools that run things from a directory. A path that exists is bound read-only over
itself; one reached through a symbolic link is bound where the link leads only when that is
in the workspace, and otherwise not at all (a link a sandboxed command planted, `.claude ->
/root`, would have had the next sandbox mount the host's directory for it to read). Some
that do not exist yet (GUARDED_WHEN_MISSING) get a placeholder, as in Codex: the first
missing component is an empty read-only directory, which blocks creating it (and which git
ignores: an empty directory is no change, so `git status` and `git add -A` are unaffected);
git's own files that no placeholder can stand for (PLANTED_IN_GIT) are removed when a
sandboxed command has created them. bubblewrap leaves the placeholder behind on the host as
an empty directory; it is removed when the last sandbox using it ends (`Placeholders`).

Repositories nested in the workspace (a folder of several projects, a vendored clone; found by
`nested_repositories`, as Claude Code's sandbox-runtime finds them by their `.git/HEAD`) get
git's protections too (NESTED_GIT: hooks and config read-only, `.git` pinned, missing hooks
placeheld, planted files removed): a hook planted in `projects/api/.git/hooks` runs at the
user's next commit there, as one at the root would. Other protected names are guarded at the
workspace root only: editors and agents read them where a workspace is opened.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from agent_server.agent.tools.paths import resolve_in_workspace, secret_file
from agent_server.agent.tools.walk import SKIPPED_DIRS
from agent_server.errors import PathOutsideWorkspaceError

# Relative to the workspace root. Directories and files alike: what exists is bound as it is.
# What agent-server, editors and other agents read (placeheld when missing, too).
_READ_BY_AGENTS = (
    ".mcp.json", "AGENTS.md", "CLAUDE.md", ".vscode", ".idea", ".zed", ".claude", ".codex",
    ".cursor",
)
PROTECTED = (
    *_READ_BY_AGENTS, ".git/hooks", ".git/config", ".git/config.worktree", ".git/commondir",
    ".git/modules", ".git/worktrees", ".gitmodules", ".gitconfig", ".envrc", ".bashrc",
    ".bash_profile", ".zshrc", ".zprofile", ".profile", ".ripgreprc", ".npmrc", ".yarnrc",
    ".yarnrc.yml",
)
# Placeholders are made only for these when they are missing: what agent-server starts or
# trusts (`.mcp.json`, the instruction files), and what runs code outside the sandbox with no
# question asked (VS Code's settings and tasks, git's hooks and config). A placeholder shows
# in the workspace while the command runs, so the list is kept short: the other agents'
# directories ask for trust themselves, direnv asks `direnv allow` for a new `.envrc`, and
# shell files matter only in a workspace that already has them.
GUARDED_WHEN_MISSING = (
    ".mcp.json", "AGENTS.md", "CLAUDE.md", ".vscode", ".git", ".git/hooks", ".git/config",
    ".git/modules", ".git/worktrees",
)
# Files git reads whenever they exist, so that no placeholder can stand for them (an empty
# directory or file where git expects one stops git): one that a sandboxed command creates is
# removed when the command ends (`planted_removed`).
PLANTED_IN_GIT = (".git/commondir", ".git/config.worktree")
# What a nested repository's `.git` holds that runs code (PROTECTED's git entries); placeheld
# when missing, as at the root: NESTED_GUARDED.
NESTED_GIT = tuple(name for name in PROTECTED if name.startswith(".git/"))
NESTED_GUARDED = tuple(name for name in GUARDED_WHEN_MISSING if name.startswith(".git/"))
# How far below the root nested repositories are looked for, and how many directories at
# most: a bound on the time each sandboxed command's start takes in a huge tree (the
# directories the tools never search, node_modules and the like, are not entered).
NESTED_DEPTH = 6
NESTED_MAX_DIRECTORIES = 5_000


def protected_mounts(
    workspace: Path, nested: Sequence[Path] = ()
) -> tuple[list[Path], list[Path]]:
    """(the protected paths that exist, to bind read-only over themselves; the placeholders to
    make: the first missing component of each guarded path that does not exist), at the
    root and, for git's entries, in each of the `nested` repositories (paths relative to
    the workspace: `nested_repositories`). A path reached through a symbolic link is bound
    as the place in the workspace it leads to (bubblewrap follows links on both sides of a
    mount: a link out of the workspace would mount a host path into the sandbox); one
    leading out, or nowhere, is left alone."""
    wanted = [
        (Path(name), name in PROTECTED, name in GUARDED_WHEN_MISSING)
        for name in dict.fromkeys((*PROTECTED, *GUARDED_WHEN_MISSING))
    ]
    for repository in nested:
        wanted += [
            (repository / name, name in NESTED_GIT, name in NESTED_GUARDED)
            for name in dict.fromkeys((*NESTED_GIT, *NESTED_GUARDED))
        ]
    existing: list[Path] = []
    placeholders: list[Path] = []
    for relative, protected, guarded in wanted:
        reached = _reached(workspace, relative)
        if reached is None:
            continue  # through a link out of the workspace, or below a file
        path, exists = reached
        if exists:
            if protected:
                existing.append(path)
        elif guarded:
            placeholders.append(path)
    return list(dict.fromkeys(existing)), list(dict.fromkeys(placeholders))


def nested_repositories(workspace: Path) -> list[Path]:
    """The directories below the workspace root (relative to it) that hold a `.git`, a
    directory or a file (a submodule), not a link (`guarded_below`)."""
    return guarded_below(workspace)[0]


def guarded_below(workspace: Path) -> tuple[list[Path], list[Path]]:
    """(the nested repositories, the secret files), relative to the workspace root, found in
    one walk: at most NESTED_DEPTH levels down and NESTED_MAX_DIRECTORIES directories looked
    at, links not followed, the directories the tools never search not entered (node_modules,
    .venv, ...), nor a `.git`. A nested repository is a directory below the root that holds a
    `.git` (a directory or a submodule's file, not a link); a secret file, a regular file whose
    name says it commonly holds secrets (`paths.secret_file`: `.env`, `id_rsa`, `*.pem`, ...),
    which the sandbox shows empty.

    Every command pays this walk, so a directory's listing is kept between walks and read
    again only when the directory changed: its change time (which no command can set back, as
    it can a modification time), modification time or inode moved (`_listing`)."""
    found: list[str] = []
    secrets: list[str] = []
    root = os.fspath(workspace)
    level: list[str] = [""]  # relative, "" for the root, else "a/b/" (str: Path cost 4x)
    seen = 0
    for depth in range(NESTED_DEPTH + 1):
        below: list[str] = []
        for relative in level:
            seen += 1
            if seen > NESTED_MAX_DIRECTORIES:
                return _paths(found), _paths(secrets)
            listed = _listing(f"{root}/{relative}")
            if listed is None:
                continue
            has_git, secret_names, directories = listed
            if depth > 0 and has_git:
                found.append(relative)
            secrets += [relative + name for name in secret_names]
            below += [f"{relative}{name}/" for name in directories]
        # In the order of their parts (`a/b/` before `a-c/`): each listing's directories are
        # sorted and the parents were, so the level needs no sort of its own.
        level = below
    return _paths(found), _paths(secrets)


def _paths(relatives: list[str]) -> list[Path]:
    return [Path(relative) for relative in relatives]


# What the walk needs of a directory: whether it holds a `.git` (not a link), the names of
# its regular files that commonly hold secrets, and the directories to go down into (links
# not followed, SKIPPED_DIRS left out).
_Listing = tuple[bool, tuple[str, ...], tuple[str, ...]]
# The listings of the walks, by directory: (its change time, modification time and inode when
# listed, the listing). Kept only for a directory unchanged for _SETTLED_NS before it was
# listed, so that a change in the same tick of the clock cannot hide behind an equal time.
_LISTINGS: dict[str, tuple[tuple[int, int, int], _Listing]] = {}
_LISTINGS_LOCK = threading.Lock()
_LISTINGS_MAX = 4 * NESTED_MAX_DIRECTORIES
_SETTLED_NS = 2_000_000_000


def _listing(directory: str) -> _Listing | None:
    """The entries of `directory` (None when it cannot be listed), from the last walk's
    listing when the directory has not changed since."""
    try:
        stat = os.stat(directory)
    except OSError:
        return None
    identity = (stat.st_ctime_ns, stat.st_mtime_ns, stat.st_ino)
    with _LISTINGS_LOCK:
        kept = _LISTINGS.get(directory)
    if kept is not None and kept[0] == identity:
        return kept[1]
    try:
        with os.scandir(directory) as entries:
            has_git, secrets, below = False, [], []
            for entry in entries:
                name = entry.name
                if name == ".git" and not entry.is_symlink():
                    has_git = True
                if entry.is_file(follow_symlinks=False):
                    if secret_file(name):
                        secrets.append(name)
                elif entry.is_dir(follow_symlinks=False) and name not in SKIPPED_DIRS:
                    below.append(name)
    except OSError:
        return None
    listed = (has_git, tuple(secrets), tuple(sorted(below)))
    if time.time_ns() - max(stat.st_ctime_ns, stat.st_mtime_ns) > _SETTLED_NS:
        with _LISTINGS_LOCK:
            if len(_LISTINGS) >= _LISTINGS_MAX:
                _LISTINGS.clear()
            _LISTINGS[directory] = (identity, listed)
    return listed


def _reached(workspace: Path, relative: Path) -> tuple[Path, bool] | None:
    """Where `relative` is in the workspace, its links followed, and whether it exists; when
    it does not, the first missing component (what a placeholder would block). None when a
    link leads out of the workspace or nowhere, or a file stands where a directory would."""
    root = workspace.resolve()
    current = workspace
    last = len(relative.parts) - 1
    for number, part in enumerate(relative.parts):
        current = current / part
        if current.is_symlink():
            try:
                target = current.resolve(strict=True)
            except (OSError, RuntimeError):
                return None  # dangling, or a loop
            if not target.is_relative_to(root):
                return None
            current = workspace / target.relative_to(root)
        elif not current.exists():
            return current, False
        if number < last and not current.is_dir():
            return None  # a file where a directory would be: nothing can be below
    return current, True


def protected_warnings(
    workspace: Path, paths: Sequence[str], private: Sequence[Path] = ()
) -> list[str]:
    """Of `paths` (as a write or an edit names them), those in `.git` or among PROTECTED,
    described for a permission question: programs outside any sandbox act on them (git runs
    hooks, editors run tasks, agent-server reads instructions), so the file tools ask before
    changing one in every mode, as the sandbox keeps commands from changing them at all.
    `private`: agent-server's own folders (the sessions, the user's config with the
    approvals of `.mcp.json`), which the sandbox hides: asked about too, when a workspace
    holds one (a home directory opened as the workspace)."""
    found: list[str] = []
    root = workspace.resolve()
    held = [folder for folder in map(_resolved, private) if folder.is_relative_to(root)]
    for given in paths:
        try:  # where the tool will write: a link in the workspace (`g -> .git`) followed
            target = resolve_in_workspace(workspace, given)
            parts = target.relative_to(root).parts
        except (PathOutsideWorkspaceError, ValueError):
            continue  # the tool refuses it
        if not parts:
            continue
        shown = "/".join(parts)
        if any(target.is_relative_to(folder) for folder in held):
            found.append(
                f"{shown} is agent-server's own (sessions, settings, the approvals of "
                ".mcp.json): changing it can change what agent-server runs or trusts"
            )
            continue
        if ".git" in parts or any(
            shown == name or shown.startswith(f"{name}/") for name in PROTECTED
        ):
            found.append(
                f"{shown} is acted on outside any sandbox (git hooks and config, editor "
                "tasks, agent instructions): changing it can run code later"
            )
    return found


def _resolved(folder: Path) -> Path:
    try:
        return folder.expanduser().resolve()
    except (OSError, RuntimeError):
        return folder


@contextlib.contextmanager
def planted_removed(workspace: Path, nested: Sequence[Path] = ()) -> Iterator[list[Path]]:
    """Around a sandboxed command: the PLANTED_IN_GIT files it created (listed when it has
    ended), at the root and in the `nested` repositories, are removed then, before git
    outside the sandbox can read them."""
    repositories = [workspace, *(workspace / relative for relative in nested)]
    before = {
        repository / name
        for repository in repositories
        for name in PLANTED_IN_GIT
        if os.path.lexists(repository / name)
    }
    removed: list[Path] = []
    try:
        yield removed
    finally:
        for repository in repositories:
            dot_git = repository / ".git"
            if not dot_git.is_dir() or dot_git.is_symlink():
                continue
            for name in PLANTED_IN_GIT:
                path = repository / name
                if path not in before and os.path.lexists(path):
                    with contextlib.suppress(OSError):
                        if path.is_dir() and not path.is_symlink():
                            shutil.rmtree(path)
                        else:
                            path.unlink()
                        removed.append(path)


def git_dirs(workspace: Path) -> list[Path]:
    """The git directories of a workspace whose `.git` is a file (a linked worktree, a
    submodule): bound read-only in the sandbox, so that git can read the repository."""
    dot_git = workspace / ".git"
    try:
        if not dot_git.is_file():
            return []
        line = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return []
    if not line.startswith("gitdir:"):
        return []
    git_dir = (workspace / line[len("gitdir:") :].strip()).resolve()
    found = [git_dir]
    with contextlib.suppress(OSError):
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
        found.append((git_dir / common).resolve())
    return [d for d in found if d.is_dir() and not d.is_relative_to(workspace)]


class Placeholders:
    """Placeholders in use, across the sandboxes of this process and of other agent-server
    processes (a marker file per process in a shared directory): one is removed from the
    host only when no sandbox still has it mounted, and only while it is an empty directory
    (what bubblewrap made), so nothing a user made is ever removed."""

    def __init__(self, markers: Path | None = None) -> None:
        self._markers = markers or Path(tempfile.gettempdir()) / "agent-server-placeholders"
        self._lock = threading.Lock()
        self._counts: dict[Path, int] = {}

    @contextlib.contextmanager
    def held(self, paths: list[Path]) -> Iterator[None]:
        with self._lock:
            for path in paths:
                self._counts[path] = self._counts.get(path, 0) + 1
                if self._counts[path] == 1:
                    self._mark(path)
        try:
            yield
        finally:
            with self._lock:
                for path in paths:
                    self._counts[path] -= 1
                    if self._counts[path] == 0:
                        del self._counts[path]
                        self._release(path)

    def _marker_dir(self, path: Path) -> Path:
        return self._markers / hashlib.sha256(os.fsencode(path)).hexdigest()[:32]

    def _mark(self, path: Path) -> None:
        with contextlib.suppress(OSError):
            directory = self._marker_dir(path)
            directory.mkdir(parents=True, exist_ok=True)
            (directory / str(os.getpid())).touch()

    def _release(self, path: Path) -> None:
        directory = self._marker_dir(path)
        with contextlib.suppress(OSError):
            (directory / str(os.getpid())).unlink()
        if _others_hold(directory):
            return
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink() and not any(path.iterdir()):
                path.rmdir()
        with contextlib.suppress(OSError):
            directory.rmdir()


def _others_hold(directory: Path) -> bool:
    try:
        markers = list(directory.iterdir())
    except OSError:
        return False
    for marker in markers:
        if marker.name.isdigit() and _alive(int(marker.name)):
            return True
        with contextlib.suppress(OSError):
            marker.unlink()  # a process that is gone
    return False


PLACEHOLDERS = Placeholders()


def empty_directory() -> Path:
    """An empty read-only directory to bind as a placeholder (one per process)."""
    return _empties()[0]


def empty_file() -> Path:
    """An empty read-only file to bind over a file the sandbox must not show."""
    return _empties()[1]


def _empties() -> tuple[Path, Path]:
    global _EMPTY
    if _EMPTY is None or not _EMPTY[0].is_dir() or not _EMPTY[1].is_file():
        remove_stale_empties()
        parent = Path(tempfile.mkdtemp(prefix=f"{_EMPTY_PREFIX}{os.getpid()}-"))
        atexit.register(shutil.rmtree, parent, True)
        directory, file = parent / "dir", parent / "file"
        directory.mkdir(mode=0o555)
        file.touch(mode=0o444)
        _EMPTY = (directory, file)
    return _EMPTY


def remove_stale_empties(temp_dir: Path | None = None) -> list[Path]:
    """Remove the empties left by processes of this user that are gone (killed before their
    exit handler ran); a process that still runs keeps its own. Returns what was removed."""
    removed = []
    for parent in Path(temp_dir or tempfile.gettempdir()).glob(f"{_EMPTY_PREFIX}*-*"):
        pid = parent.name[len(_EMPTY_PREFIX) :].split("-", 1)[0]
        with contextlib.suppress(OSError):
            if not pid.isdigit() or parent.lstat().st_uid != os.getuid() or _alive(int(pid)):
                continue
            shutil.rmtree(parent)
            removed.append(parent)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_EMPTY_PREFIX = "agent-server-empty-"
_EMPTY: tuple[Path, Path] | None = None
