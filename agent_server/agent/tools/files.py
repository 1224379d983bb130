"""Where the file tools read and write text: the local disk, or an editor that holds the files.

The read, edit and write tools go through a `FileAccess` for the text of a file. The default,
`LOCAL_FILES`, is the disk. A front end whose editor can serve files (ACP's
`fs/read_text_file` and `fs/write_text_file`) passes its own, so that the agent reads unsaved
buffers and its edits land in the editor, where the user sees and can undo them. Everything
else about a file (whether it exists, whether it is a directory, an image or binary) is read
from the disk, and the tools resolve every path inside the workspace before they get here.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Literal, Protocol, TypeAlias

from agent_server.agent.tools.paths import open_regular, write_regular

DecodeErrors: TypeAlias = Literal["strict", "replace"]


class FileAccess(Protocol):
    """The text of workspace files, as the user sees them.

    `read_text` raises OSError when the file cannot be read, and UnicodeDecodeError (with
    `errors="strict"`) when it is not UTF-8; `write_text` creates or replaces the file.
    Paths are absolute and already checked to be inside the workspace (or the session's
    spill directory). A file on the disk with several hard links is refused (ToolError)
    unless `hard_links_allowed`: what is checked is the file opened, which may not be the
    one the tool looked at before (tools/paths.py).
    """

    async def read_text(
        self, path: Path, *, errors: DecodeErrors = "strict", hard_links_allowed: bool = False
    ) -> str: ...

    async def write_text(
        self, path: Path, content: str, *, hard_links_allowed: bool = False
    ) -> None: ...

    def holds(self, path: Path) -> bool:
        """Whether the text of `path` comes from somewhere other than the disk (the read tool
        pages a file on the disk without reading it whole)."""
        ...


class LocalFiles:
    """The disk, as UTF-8, with line endings kept exactly as they are; regular files only
    (tools/paths.py: a named pipe or a device is refused, never opened for long)."""

    async def read_text(
        self, path: Path, *, errors: DecodeErrors = "strict", hard_links_allowed: bool = False
    ) -> str:
        data = await asyncio.to_thread(_read_regular, path, hard_links_allowed)
        return data.decode("utf-8", errors=errors)

    async def write_text(
        self, path: Path, content: str, *, hard_links_allowed: bool = False
    ) -> None:
        data = content.encode("utf-8")
        await asyncio.to_thread(
            functools.partial(
                write_regular, path, str(path), data, hard_links_allowed=hard_links_allowed
            )
        )

    def holds(self, path: Path) -> bool:
        return False


def _read_regular(path: Path, hard_links_allowed: bool) -> bytes:
    with open_regular(path, str(path), hard_links_allowed=hard_links_allowed) as handle:
        return handle.read()


LOCAL_FILES: FileAccess = LocalFiles()
