"""Walking the workspace for find and grep: skipped directories and glob patterns.

Globs follow .gitignore conventions: a pattern without `/` matches a file's name at any
depth (`*.py`); a pattern with `/` matches the path relative to the directory searched
(`src/**/*.ts`). `*` and `?` stay within one path segment, `**` spans any number of them,
`[abc]` is a character class and `{ts,tsx}` an alternation.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from agent_server.errors import ToolError

# Directories that are never searched: version control, dependencies, caches, environments.
SKIPPED_DIRS: frozenset[str] = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".gradle",
        ".next",
        ".cache",
    }
)


@lru_cache(maxsize=64)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex matching what `pattern` matches (see the module docstring); a ToolError names
    a pattern that is not a glob (a class such as `[z-a]`)."""
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    anchored = "/" in pattern.rstrip("/")
    pattern = pattern.strip("/")
    body = _translate(pattern)
    try:
        return re.compile(body if anchored else f"(?:.*/)?{body}", re.DOTALL)
    except re.error as exc:
        raise ToolError(
            f"Invalid glob {pattern!r}: {exc.msg}. Write a character class as [abc], [a-z] "
            "(a range in order) or [!a-z] (none of them)."
        ) from exc


def glob_matches(pattern: str, relative_path: str) -> bool:
    """Whether `relative_path` (POSIX, relative to the searched directory) matches."""
    return compile_glob(pattern).fullmatch(relative_path) is not None


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                at_start = i == 0 or pattern[i - 1] == "/"
                j = i + 2
                if at_start and j < n and pattern[j] == "/":
                    out.append("(?:.*/)?")  # **/ : zero or more directories
                    i = j + 1
                    continue
                out.append(".*")
                i = j
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                inner = pattern[i + 1 : end]
                if inner[:1] in ("!", "^"):
                    inner = "^" + inner[1:]
                out.append("[" + inner.replace("\\", "\\\\") + "]")
                i = end
        elif c == "{":
            end = pattern.find("}", i)
            if end == -1:
                out.append(re.escape(c))
            else:
                choices = pattern[i + 1 : end].split(",")
                out.append("(?:" + "|".join(_translate(choice) for choice in choices) + ")")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def walk_files(top: Path, *, include_dirs: bool = False) -> Iterator[Path]:
    """Entries under `top`, depth first, each directory's entries sorted by name (the order
    ripgrep's --sort path gives), skipping SKIPPED_DIRS. Symbolic links to directories are
    listed (when include_dirs) but not entered; unreadable directories are skipped."""
    stack: list[Iterator[Path]] = [_sorted_entries(top)]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        if entry.is_dir():
            if entry.name in SKIPPED_DIRS:
                continue
            if include_dirs:
                yield entry
            if not entry.is_symlink():
                stack.append(_sorted_entries(entry))
        else:
            yield entry


def _sorted_entries(directory: Path) -> Iterator[Path]:
    try:
        with os.scandir(directory) as entries:
            names = sorted(entry.name for entry in entries)
    except OSError:
        return iter(())
    return iter([directory / name for name in names])


def is_binary(path: Path) -> bool:
    """A file whose first 8 KB hold a NUL byte (how git and ripgrep decide)."""
    try:
        with path.open("rb") as handle:
            return b"\x00" in handle.read(8192)
    except OSError:
        return True
