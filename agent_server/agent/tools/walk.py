"""Walking the workspace for find and grep: skipped directories and glob patterns.

A walk goes through open directories (walk_directory): no name is looked up from `/` again
after the check, so a directory swapped for a link to the outside meanwhile is not entered.

Globs follow .gitignore conventions: a pattern without `/` matches a file's name at any
depth (`*.py`); a pattern with `/` matches the path relative to the directory searched
(`src/**/*.ts`). `*` and `?` stay within one path segment, `**` spans any number of them,
`[abc]` is a character class and `{ts,tsx}` an alternation.
"""

from __future__ import annotations

import operator
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path

from agent_server.agent.tools.paths import open_directory
from agent_server.errors import PathOutsideWorkspaceError, ToolError

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
def compile_glob(pattern: str) -> Glob:
    """What `pattern` matches (see the module docstring); a ToolError names a pattern that
    is not a glob (a class such as `[z-a]`)."""
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    anchored = "/" in pattern.rstrip("/")
    try:
        elements = _parse(pattern.strip("/"))
    except re.error as exc:
        raise ToolError(
            f"Invalid glob {pattern!r}: {exc.msg}. Write a character class as [abc], [a-z] "
            "(a range in order) or [!a-z] (none of them)."
        ) from exc
    # Nothing of a pattern without `/`, `**` or a class can match a `/`: it matches a path
    # when it matches the path's last name, which is all it needs to read.
    name_only = not anchored and "**" not in pattern and "[" not in pattern
    return Glob(elements, anchored=anchored, name_only=name_only)


def glob_matches(pattern: str, relative_path: str) -> bool:
    """Whether `relative_path` (POSIX, relative to the searched directory) matches."""
    return compile_glob(pattern).fullmatch(relative_path)


CharTest = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class _Char:
    test: CharTest  # one character such as this


@dataclass(frozen=True, slots=True)
class _Repeat:
    test: CharTest  # any number of characters such as this


@dataclass(frozen=True, slots=True)
class _Choice:
    choices: tuple[tuple[_Element, ...], ...]  # one of these sequences


_Element = _Char | _Repeat | _Choice


def _not_slash(char: str) -> bool:
    return char != "/"


def _anything(char: str) -> bool:
    return True


_SLASH = _Char(partial(operator.eq, "/"))
# `**/`, and the start of a pattern without `/`: any number of directories, none included.
_DIRECTORIES = _Choice(((), (_Repeat(_anything), _SLASH)))
# Past this many remembered steps a Glob works each step out again (a bound on its memory).
_MAX_REMEMBERED_STEPS = 100_000


class Glob:
    """A glob as an automaton, run one character of the path at a time: matching takes time
    linear in the path's length whatever the pattern (a regex with `.*` for each `**` took
    minutes for `**a**a**a**a**a**a**a**a**a**a**c` on a name of 60 `a`s). Each set of
    states met and each step from it is remembered, so a path costs a dict look-up a
    character (a lazily built DFA)."""

    def __init__(self, elements: tuple[_Element, ...], *, anchored: bool,
                 name_only: bool = False) -> None:
        self._tests: list[CharTest | None] = [None]  # state 0 accepts; None: a free move
        self._next: list[tuple[int, ...]] = [()]
        self._name_only = name_only
        start = self._build(elements if anchored or name_only else (_DIRECTORIES, *elements), 0)
        self._start = self._closure((start,))
        self._steps: dict[tuple[frozenset[int], str], frozenset[int]] = {}

    def fullmatch(self, path: str) -> bool:
        if self._name_only:
            path = path[path.rfind("/") + 1 :]
        states = self._start
        steps = self._steps
        for char in path:
            following = steps.get((states, char))
            if following is None:
                following = self._step(states, char)
                if len(steps) < _MAX_REMEMBERED_STEPS:
                    steps[(states, char)] = following
            if not following:
                return False
            states = following
        return 0 in states

    def _add(self, test: CharTest | None, following: tuple[int, ...]) -> int:
        self._tests.append(test)
        self._next.append(following)
        return len(self._tests) - 1

    def _build(self, elements: tuple[_Element, ...], after: int) -> int:
        """The first state of `elements`, which go on to `after`."""
        state = after
        for element in reversed(elements):
            if isinstance(element, _Char):
                state = self._add(element.test, (state,))
            elif isinstance(element, _Repeat):
                loop = self._add(None, ())
                self._next[loop] = (self._add(element.test, (loop,)), state)
                state = loop
            else:
                starts = tuple(self._build(choice, state) for choice in element.choices)
                state = self._add(None, starts)
        return state

    def _closure(self, states: tuple[int, ...]) -> frozenset[int]:
        """The states reached from `states` by free moves: those that take a character, and
        the accepting one."""
        seen: set[int] = set()
        kept: set[int] = set()
        pending = list(states)
        while pending:
            state = pending.pop()
            if state in seen:
                continue
            seen.add(state)
            if self._tests[state] is None and state != 0:
                pending.extend(self._next[state])
            else:
                kept.add(state)
        return frozenset(kept)

    def _step(self, states: frozenset[int], char: str) -> frozenset[int]:
        following: list[int] = []
        for state in states:
            test = self._tests[state]
            if test is not None and test(char):
                following.extend(self._next[state])
        return self._closure(tuple(following))


def _parse(pattern: str) -> tuple[_Element, ...]:
    out: list[_Element] = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                at_start = i == 0 or pattern[i - 1] == "/"
                j = i + 2
                if at_start and j < n and pattern[j] == "/":
                    out.append(_DIRECTORIES)  # **/ : zero or more directories
                    i = j + 1
                    continue
                out.append(_Repeat(_anything))
                i = j
                continue
            out.append(_Repeat(_not_slash))
        elif c == "?":
            out.append(_Char(_not_slash))
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(_Char(partial(operator.eq, c)))
            else:
                inner = pattern[i + 1 : end]
                if inner[:1] in ("!", "^"):
                    inner = "^" + inner[1:]
                out.append(_Char(_char_class("[" + inner.replace("\\", "\\\\") + "]")))
                i = end
        elif c == "{":
            end = pattern.find("}", i)
            if end == -1:
                out.append(_Char(partial(operator.eq, c)))
            else:
                choices = pattern[i + 1 : end].split(",")
                out.append(_Choice(tuple(_parse(choice) for choice in choices)))
                i = end
        else:
            out.append(_Char(partial(operator.eq, c)))
        i += 1
    return tuple(out)


def _char_class(expression: str) -> CharTest:
    regex = re.compile(expression, re.DOTALL)  # re.error for one such as [z-a]
    return lambda char: regex.fullmatch(char) is not None


@dataclass(frozen=True, slots=True)
class WalkEntry:
    """One entry a walk met."""

    relative: str  # its path below the directory walked (POSIX)
    is_dir: bool  # a directory, or a link to one (listed, never entered)
    is_file: bool  # a regular file, not a link


# A subdirectory, entered from its parent's descriptor, never through a link.
_SUBDIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Directories deeper than this are not held open while their subdirectories are walked (a
# tree thousands of levels deep would use up the process's descriptors): each is opened
# again from the deepest one held, one name at a time, without following a link.
HELD_DEPTH = 64

_Listed = tuple[str, bool, bool, bool]  # name, is_dir (a link followed), a directory, a file


@dataclass(slots=True)
class _Directory:
    name: str
    relative: str  # "" for the top, else "a/b/"
    fd: int | None  # None when not held (deeper than HELD_DEPTH)
    entries: Iterator[_Listed]


def walk_directory(top: int, *, include_dirs: bool = False) -> Iterator[WalkEntry]:
    """Entries below the open directory `top`, depth first, each directory's entries sorted by
    name (the order ripgrep's --sort path gives), skipping SKIPPED_DIRS. A directory is
    entered from its parent's descriptor without following a link (openat, O_NOFOLLOW) and
    listed through its own (scandir of a descriptor): no name is looked up from `/` again, so
    a directory swapped for a link to the outside after it was listed is skipped, not
    followed. Links to directories are listed (when include_dirs) but not entered; unreadable
    directories are skipped. `top` stays open (it is the caller's)."""
    stack = [_Directory("", "", top, _listing(top))]
    try:
        while stack:
            current = stack[-1]
            listed = next(current.entries, None)
            if listed is None:
                stack.pop()
                if current.fd is not None and current.fd != top:
                    os.close(current.fd)
                continue
            name, is_dir, is_real_dir, is_file = listed
            relative = current.relative + name
            if not is_dir:
                yield WalkEntry(relative, False, is_file)
                continue
            if name in SKIPPED_DIRS:
                continue
            if include_dirs:
                yield WalkEntry(relative, True, False)
            if is_real_dir and (child := _enter(stack, name)) is not None:
                stack.append(child)
    finally:
        for directory in stack:
            if directory.fd is not None and directory.fd != top:
                os.close(directory.fd)


def walk_files(top: Path, *, include_dirs: bool = False) -> Iterator[Path]:
    """The paths of walk_directory's entries below `top` (as the caller spells it: the
    workspace root, say, which may be reached through a link), its real path opened without
    following a link; nothing when it cannot be opened."""
    try:
        fd = open_directory(Path(os.path.realpath(top)), str(top))
    except (OSError, PathOutsideWorkspaceError):
        return
    try:
        for entry in walk_directory(fd, include_dirs=include_dirs):
            yield top / entry.relative
    finally:
        os.close(fd)


def _enter(stack: list[_Directory], name: str) -> _Directory | None:
    """The subdirectory `name` of the last directory of `stack`, opened and listed (None when
    it cannot be: unreadable, or no longer a directory but a link or a file)."""
    held, held_fd = [(i, d.fd) for i, d in enumerate(stack) if d.fd is not None][-1]
    names = [directory.name for directory in stack[held + 1 :]] + [name]
    fd = _open_below(held_fd, names)
    if fd is None:
        return None
    entries = _listing(fd)
    if len(stack) >= HELD_DEPTH:
        os.close(fd)
    kept = fd if len(stack) < HELD_DEPTH else None
    return _Directory(name, f"{stack[-1].relative}{name}/", kept, entries)


def _open_below(directory: int, names: list[str]) -> int | None:
    """The directory `names` below `directory`, opened one name at a time, no link followed."""
    fd = directory
    try:
        for name in names:
            child = os.open(name, _SUBDIRECTORY, dir_fd=fd)
            if fd != directory:
                os.close(fd)
            fd = child
    except OSError:
        if fd != directory:
            os.close(fd)
        return None
    return fd


def _listing(fd: int) -> Iterator[_Listed]:
    """The entries of the open directory `fd`, sorted by name (none when it cannot be read)."""
    try:
        with os.scandir(fd) as entries:
            listed = [
                (entry.name, _is_dir(entry), _is_dir(entry, follow=False), _is_file(entry))
                for entry in entries
            ]
    except OSError:
        return iter(())
    return iter(sorted(listed))


def _is_dir(entry: os.DirEntry[str], *, follow: bool = True) -> bool:
    try:
        return entry.is_dir(follow_symlinks=follow)
    except OSError:
        return False


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False
