"""grep's Python search, run as a child process (`python -I regex_search.py`): Python's `re`
cannot be stopped once it runs (a catastrophic pattern such as `(?=a)(a+)+$` on a line of
`a`s backtracks for ages, holding the GIL), but a process can be killed. Standard library
only, so that the child starts in a few tens of milliseconds.

stdin: one JSON object, `{"pattern", "ignoreCase", "context", "files": [[path, checkBinary],
...]}`. stdout: one JSON array a line, as lines are found, in the files' order: `[file index,
line number, text, is match]`, and `[]` before a line or a file when a second or more has
passed since the last output (so that the parent, hearing nothing for longer than a line may
take, knows the pattern is stuck).
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import IO

PROGRESS_EVERY = 1.0  # seconds: the longest silence while the search moves on


def clean(text: str) -> str:
    return text.rstrip("\n").rstrip("\r")


def is_binary(path: str) -> bool:
    """A file whose first 8 KB hold a NUL byte (how git and ripgrep decide)."""
    try:
        with open(path, "rb") as handle:
            return b"\x00" in handle.read(8192)
    except OSError:
        return True


def search_file(regex: re.Pattern[str], path: str, context: int) -> Iterator[tuple[int, str, bool]]:
    """The lines of `path` that match, and `context` lines around them: (line, text, is
    match); `(0, "", False)` before each line is searched, for the caller to keep time. A
    file that cannot be read has none."""
    try:
        with Path(path).open("rb") as handle:
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

    for index, (path, check_binary) in enumerate(files):
        if time.monotonic() - said >= PROGRESS_EVERY:
            say("[]")
        if check_binary and is_binary(path):
            continue
        for number, text, is_match in search_file(regex, path, context):
            if number:
                say(json.dumps([index, number, text, is_match]))
            elif time.monotonic() - said >= PROGRESS_EVERY:
                say("[]")


def main() -> None:
    with contextlib.suppress(BrokenPipeError):  # the parent has what it needs, or gave up
        search(json.load(sys.stdin), sys.stdout)


if __name__ == "__main__":
    main()
