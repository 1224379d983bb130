"""The editor's files: the file tools' reads and writes through `fs/read_text_file` and
`fs/write_text_file`, when the client offers them.

Reads then see unsaved buffers, and writes land in the editor (which shows them, and can undo
them). Only files inside the session's folder go through the editor; the session's spill
files, and everything the client does not offer, stay on the disk. A read the editor fails is
read from the disk instead (the model still gets the file); a write the editor refuses fails
the tool call, with the editor's reason, and nothing is written behind its back.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from acp import RequestError
from acp.interfaces import Client

from agent_server.agent.tools.files import LOCAL_FILES, DecodeErrors
from agent_server.errors import ToolError

log = logging.getLogger(__name__)


class EditorFiles:
    """`flush` runs before each request to the editor, so that it has heard of the tool call
    a read or write belongs to."""

    def __init__(
        self,
        client: Client,
        session_id: str,
        root: Path,
        *,
        read: bool,
        write: bool,
        flush: Callable[[], Awaitable[None]],
    ) -> None:
        self._client = client
        self._flush = flush
        self._session_id = session_id
        self._root = root.resolve()
        self._read = read
        self._write = write

    def _in_editor(self, path: Path) -> bool:
        return path.is_relative_to(self._root)

    def holds(self, path: Path) -> bool:
        return self._read and self._in_editor(path)

    async def read_text(
        self, path: Path, *, errors: DecodeErrors = "strict", hard_links_allowed: bool = False
    ) -> str:
        if self._read and self._in_editor(path):
            await self._flush()
            try:
                response = await self._client.read_text_file(
                    session_id=self._session_id, path=str(path)
                )
                return response.content
            except RequestError as error:
                log.warning("the editor could not read %s (%s); reading the disk", path, error)
        return await LOCAL_FILES.read_text(
            path, errors=errors, hard_links_allowed=hard_links_allowed
        )

    async def write_text(
        self, path: Path, content: str, *, hard_links_allowed: bool = False
    ) -> None:
        if not (self._write and self._in_editor(path)):
            await LOCAL_FILES.write_text(path, content, hard_links_allowed=hard_links_allowed)
            return
        await self._flush()
        try:
            await self._client.write_text_file(
                session_id=self._session_id, path=str(path), content=content
            )
        except RequestError as error:
            raise ToolError(f"The editor did not write {path}: {error}") from error
