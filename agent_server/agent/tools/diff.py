"""Unified diffs of a file change, for the editor's display (never sent to the model)."""

from __future__ import annotations

import difflib


def unified_diff(old: str, new: str, path: str, *, created: bool = False) -> str:
    """`diff -u` style text of old -> new, with a/ and b/ prefixes like git."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile="/dev/null" if created else f"a/{path}",
        tofile=f"b/{path}",
    )
    out: list[str] = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)
