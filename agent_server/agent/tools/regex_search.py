"""grep's Python search, run as a child process (`python -I regex_search.py`): Python's `re`
cannot be stopped once it runs (a catastrophic pattern such as `(?=a)(a+)+$` on a line of
`a`s backtracks for ages, holding the GIL), but a process can be killed. Standard library
only, so that the child starts in a few tens of milliseconds.

stdin: one JSON object, `{"pattern", "ignoreCase", "context", "directory", "files": [[path,
checkBinary], ...]}`: with `directory` (a descriptor the child inherits), the paths are below
it and each is opened from it one name at a time without following a link, and only a
regular file is read: what the parent's walk checked, never a link swapped in since.
stdout: one JSON array a line, as lines are found, in the files' order: `[file index,
line number, text, is match, hard links]` (of the file read: its name still leads to it when
they are counted), and `[]` before a line or a file when a second or more has passed since
the last output (so that the parent, hearing nothing for longer than a line may
take, knows the pattern is stuck).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
import time
from collections import deque
from collections.abc import Iterator
from typing import IO, BinaryIO

PROGRESS_EVERY = 1.0  # seconds: the longest silence while the search moves on


def clean(text: str) -> str:
    return text.rstrip("\n").rstrip("\r")


_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Files:
    """Opens the files of a search: below the directory `top` (a descriptor), one name at a
    time without following a link, or (without `top`) as named. The directories on the way to
    the last file stay open: files come in the walk's order, so the next is often beside."""

    def __init__(self, top: int | None) -> None:
        self._top = top
        self._held: list[tuple[str, int]] = []  # the directories on the way, below top

    def open(self, path: str) -> tuple[BinaryIO, int] | None:
        """The regular file `path`, opened, and how many hard links it has (None when it is
        not one, cannot be read, or is no longer what its name leads to). The links are
        counted on the file opened, and again once its name is seen to still lead to it: a
        hard link to a file outside, read and then unlinked from the workspace, does not pass
        for a file of one link."""
        if self._top is None:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return None
            return os.fdopen(fd, "rb"), os.fstat(fd).st_nlink
        *names, name = path.split("/")
        kept = 0
        while kept < min(len(names), len(self._held)) and self._held[kept][0] == names[kept]:
            kept += 1
        self.close(kept)
        try:
            for part in names[kept:]:
                self._held.append((part, os.open(part, _DIRECTORY, dir_fd=self._last())))
            fd = os.open(name, _FILE, dir_fd=self._last())
        except OSError:
            return None
        try:
            opened = os.fstat(fd)
            named = os.stat(name, dir_fd=self._last(), follow_symlinks=False)
        except OSError:
            named = None
        if (
            named is None
            or not stat.S_ISREG(opened.st_mode)
            or (named.st_dev, named.st_ino) != (opened.st_dev, opened.st_ino)
        ):
            os.close(fd)
            return None
        # Counted twice: a name being replaced meanwhile (rename) may still lead to the file
        # while its count already went down.
        return os.fdopen(fd, "rb"), max(opened.st_nlink, named.st_nlink)

    def close(self, kept: int = 0) -> None:
        """Close the directories held, but the first `kept`."""
        for _name, fd in self._held[kept:]:
            os.close(fd)
        del self._held[kept:]

    def _last(self) -> int:
        assert self._top is not None
        return self._held[-1][1] if self._held else self._top


# How much of a file's start decides whether it is binary: a NUL in it (as git and ripgrep
# decide). The read tool decides the same way (read.py); this module is its one home, as it
# runs on the standard library alone.
SNIFF_BYTES = 8192


def looks_binary(head: bytes) -> bool:
    """Whether a file whose first SNIFF_BYTES are `head` is binary."""
    return b"\x00" in head


def search_file(
    regex: re.Pattern[str], handle: BinaryIO, context: int, *, check_binary: bool
) -> Iterator[tuple[int, str, bool]]:
    """The lines of the open file that match, and `context` lines around them: (line, text,
    is match); `(0, "", False)` before each line is searched, for the caller to keep time.
    With `check_binary`, none when it looks binary (looks_binary); none when it cannot be
    read."""
    try:
        with handle:
            if check_binary:
                if looks_binary(handle.read(SNIFF_BYTES)):
                    return
                handle.seek(0)
            yield from _search_lines(regex, handle, context)
    except OSError:
        return


def _search_lines(
    regex: re.Pattern[str], handle: IO[bytes], context: int
) -> Iterator[tuple[int, str, bool]]:
    before: deque[tuple[int, str]] = deque(maxlen=context or 1)
    after = 0
    last_emitted = 0
    for number, raw in enumerate(handle, start=1):
        line = clean(raw.decode("utf-8", errors="replace"))
        yield 0, "", False
        if regex.search(line):
            if context:
                for n, text in before:
                    if n > last_emitted:
                        yield n, text, False
                before.clear()
            yield number, line, True
            last_emitted = number
            after = context
        elif after > 0:
            yield number, line, False
            last_emitted = number
            after -= 1
        elif context:
            before.append((number, line))


def search(request: dict[str, object], out: IO[str]) -> None:
    pattern = str(request["pattern"])
    regex = re.compile(pattern, re.IGNORECASE if request.get("ignoreCase") else 0)
    context = int(str(request.get("context", 0)))
    files = request["files"]
    assert isinstance(files, list)
    said = time.monotonic()

    def say(message: str) -> None:
        nonlocal said
        out.write(message + "\n")
        out.flush()
        said = time.monotonic()

    directory = request.get("directory")
    opener = Files(directory if isinstance(directory, int) else None)
    for index, (path, check_binary) in enumerate(files):
        if time.monotonic() - said >= PROGRESS_EVERY:
            say("[]")
        found = opener.open(path)
        if found is None:
            continue
        handle, links = found
        for number, text, is_match in search_file(
            regex, handle, context, check_binary=check_binary
        ):
            if number:
                say(json.dumps([index, number, text, is_match, links]))
            elif time.monotonic() - said >= PROGRESS_EVERY:
                say("[]")
    opener.close()


def main() -> None:
    with contextlib.suppress(BrokenPipeError):  # the parent has what it needs, or gave up
        search(json.load(sys.stdin), sys.stdout)


if __name__ == "__main__":
    main()
