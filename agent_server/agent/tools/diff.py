"""File changes for display: what a write or edit does to a file (never sent to the model).

The same `FileChange` is shown before the call runs (the permission question, from the tools'
`preview`) and after (the tool's result): the path, the text before (None for a new file) and
after, and a unified diff of the two.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

# A diff longer than this is cut for display (the change itself is never cut).
MAX_DIFF_LINES = 2000


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str  # as shown: relative to the workspace
    old_text: str | None  # None: the file does not exist yet
    new_text: str

    @property
    def diff(self) -> str:
        created = self.old_text is None
        return unified_diff(self.old_text or "", self.new_text, self.path, created=created)

    def to_json(self) -> dict[str, Any]:
        """The Agent Client Protocol's diff content (`path`, `oldText`, `newText`), plus the
        unified diff as `diff`."""
        return {
            "type": "diff",
            "path": self.path,
            "oldText": self.old_text,
            "newText": self.new_text,
            "diff": self.diff,
        }


def unified_diff(old: str, new: str, path: str, *, created: bool = False) -> str:
    """`diff -u` style text of old -> new, with a/ and b/ prefixes like git; cut after
    MAX_DIFF_LINES lines with a line that says how many more there were."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile="/dev/null" if created else f"a/{path}",
        tofile=f"b/{path}",
    )
    out: list[str] = []
    hidden = 0
    for line in lines:
        if len(out) >= MAX_DIFF_LINES:
            hidden += 1
            continue
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    if hidden:
        out.append(f"[… {hidden} more lines of diff]\n")
    return "".join(out)
