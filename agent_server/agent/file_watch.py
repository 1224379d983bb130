"""External edits: files the agent read or wrote that changed on disk behind its back.

The agent's view of a file is the content it last read or wrote. `FileWatch` remembers a
fingerprint of that content; when the file changes from outside (the user saves it in the
editor, a formatter rewrites it), the next message sent to the model carries an appended note
saying so. The note is appended, never put in the system prompt: the cached prefix stays.

watchfiles reports changes as they happen (the UI can say so at once), each file once until
the agent sees it again (a log that grows a line every 100 ms is one notice, not one a
second); the fingerprints are re-checked with a cheap stat before each message, so a missed
or coalesced event is caught too, and the agent's own writes, recorded right after they
happen, are never reported.

A fingerprint costs what the file's size allows: a small file's content is hashed (saving it
unchanged is no change); a file over HASH_LIMIT is known by its size, times and inode, never
read whole (a page of a 200 MB log cost its whole size on every read and every watch event).

Which files the agent knows comes from the ledger (`files_seen`): every file a successful
read, write or edit returned on the path the model sees, and the files of the latest
compaction's summary, each with the time of its entry. A reopened session restores them, so
an edit made while the server was not running (a file changed after the agent last saw it)
is still noticed: for a restored file only that time is known, and a modification time after
it counts as a change.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import watchfiles

from agent_server.agent.tools.paths import listed_path, path_from_listing
from agent_server.context.projection import compaction_window
from agent_server.llm.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from agent_server.session.entries import Entry, MessageEntry

log = logging.getLogger(__name__)

# A file restored from the ledger counts as changed when it was modified more than this long
# after the entry that recorded the agent's read or write (the entry is written just after).
RESTORED_TOLERANCE_NS = 50_000_000
NOTE_KIND = "externalEdit"
# Files up to this size are known by their content's hash; larger ones by their size, times
# and inode (reading them whole on every read and every watch event costs their size).
HASH_LIMIT = 1 << 20
_MISSING = "missing"  # the digest of a file that does not exist


@dataclass(frozen=True, slots=True)
class _Seen:
    mtime_ns: int
    size: int
    digest: str | None  # _MISSING: the file did not exist; None: too large to hash (or unreadable)
    # False for a file restored from the ledger: only when the agent saw it is known
    # (`mtime_ns`), not its content.
    known: bool = True
    ctime_ns: int = 0
    inode: int = 0

    @property
    def exists(self) -> bool:
        return self.digest != _MISSING


def _fingerprint(path: Path) -> _Seen:
    try:
        stat = path.stat()
    except OSError:
        return _Seen(0, -1, _MISSING)
    digest = None
    if stat.st_size <= HASH_LIMIT:
        try:
            digest = hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest()
        except OSError:
            digest = None
    return _Seen(
        stat.st_mtime_ns, stat.st_size, digest, ctime_ns=stat.st_ctime_ns, inode=stat.st_ino
    )


class FileWatch:
    def __init__(self, workspace: Path, on_change: Callable[[str], None] | None = None) -> None:
        self.workspace = workspace.resolve()
        self._seen: dict[Path, _Seen] = {}
        self._told: set[Path] = set()  # changes the editor heard of since the agent saw them
        self._on_change = on_change
        self._task: asyncio.Task[None] | None = None
        self._restart = asyncio.Event()
        self._stop = asyncio.Event()

    @property
    def tracked(self) -> list[str]:
        return sorted(self._relative(p) for p in self._seen)

    def record(self, path: str | Path) -> None:
        """The agent just read or wrote `path`: its current content is what the agent knows."""
        resolved = self._resolve(path)
        if resolved is None:
            return
        is_new_directory = resolved.parent not in {p.parent for p in self._seen}
        self._seen[resolved] = _fingerprint(resolved)
        self._told.discard(resolved)
        if is_new_directory and self._task is not None:
            self._restart.set()

    def accept(self, paths: Iterable[str]) -> None:
        """These tracked files' current content is what the agent is told about (files put
        back by a restore): not a change to report."""
        for path in paths:
            resolved = self._resolve(path)
            if resolved is not None and resolved in self._seen:
                self._seen[resolved] = _fingerprint(resolved)
                self._told.discard(resolved)

    def restore(self, seen: Mapping[str, float]) -> None:
        """Forget what is tracked and track the files of `seen` (workspace paths, with the
        time in seconds the agent last read or wrote each): after a reload or a rewind."""
        self._seen.clear()
        self._told.clear()
        for path, seen_at in seen.items():
            resolved = self._resolve(path)
            if resolved is None or resolved.is_dir():
                continue
            self._seen[resolved] = _Seen(int(seen_at * 1e9), -1, None, known=False)
        if self._task is not None:
            self._restart.set()

    def take_changes(self) -> list[str]:
        """Workspace-relative paths changed since the agent last saw them; each change is
        reported once (the new content becomes what the agent is told about)."""
        changed: list[str] = []
        for path, seen in list(self._seen.items()):
            if seen.known:
                try:
                    stat = path.stat()
                    if stat.st_mtime_ns == seen.mtime_ns and stat.st_size == seen.size:
                        continue
                except OSError:
                    if not seen.exists:
                        continue
            now = _fingerprint(path)
            self._seen[path] = now
            self._told.discard(path)
            if _differs(seen, now):
                changed.append(self._relative(path))
        return sorted(changed)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._watch(), name="file-watch")

    async def stop(self) -> None:
        self._stop.set()
        self._restart.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    async def _watch(self) -> None:
        while not self._stop.is_set():
            self._restart.clear()
            directories = sorted({p.parent for p in self._seen if p.parent.exists()})
            if not directories:
                await self._restart.wait()
                continue
            try:
                async for changes in watchfiles.awatch(
                    *directories,
                    recursive=False,
                    stop_event=self._restart,
                    debounce=200,
                    step=50,
                    watch_filter=None,
                ):
                    self._report(changes)
            except (OSError, RuntimeError) as error:  # e.g. inotify limits: the stat check remains
                log.warning("file watching stopped: %s", error)
                return

    def _report(self, changes: set[tuple[watchfiles.Change, str]]) -> None:
        if self._on_change is None:
            return
        for _kind, raw in sorted(changes, key=lambda change: change[1]):
            path = Path(raw)
            seen = self._seen.get(path)
            if seen is None or path in self._told:
                continue  # told already: said again only once the agent has seen it
            if _differs(seen, _fingerprint(path)):
                self._told.add(path)
                self._on_change(self._relative(path))

    def _resolve(self, path: str | Path) -> Path | None:
        candidate = Path(path_from_listing(path) if isinstance(path, str) else path)
        if not candidate.is_absolute():
            candidate = self.workspace / candidate
        try:
            resolved = candidate.resolve()
        except OSError:
            return None
        if not resolved.is_relative_to(self.workspace):
            return None
        return resolved

    def _relative(self, path: Path) -> str:
        return path.relative_to(self.workspace).as_posix()


def _differs(seen: _Seen, now: _Seen) -> bool:
    """Whether the file changed between what the agent saw and `now`."""
    if seen.known:
        if seen.digest is not None and now.digest is not None:
            return now.digest != seen.digest  # both small enough to hash (or missing)
        # Too large to hash: its size, times and inode tell.
        identity = (seen.size, seen.mtime_ns, seen.ctime_ns, seen.inode)
        return identity != (now.size, now.mtime_ns, now.ctime_ns, now.inode)
    # Restored from the ledger: the file is gone, or was modified after the agent saw it.
    return not now.exists or now.mtime_ns > seen.mtime_ns + RESTORED_TOLERANCE_NS


def external_edit_note(paths: list[str]) -> str:
    """The text of the note that tells the model about external edits (each path as a
    listing shows it: paths.listed_path)."""
    listed = ", ".join(listed_path(path) for path in paths)
    return (
        f"{listed} changed on disk since you last read or wrote "
        f"{'it' if len(paths) == 1 else 'them'} (edited outside the agent). Read again before "
        "relying on the old content."
    )


def files_seen(
    entries: Sequence[Entry], paths_of: Callable[[ToolCall], Sequence[str]]
) -> dict[str, float]:
    """The files the agent knows on the path `entries` (EntryTree.projection_entries), with the
    time in seconds it last read or wrote each: the paths (`paths_of`, the tools' own) of
    every tool call whose result on the path is not an error, at that result's time; the
    files attached to prompts (@-mentions), at the prompt's time; and the files the latest
    compaction's summary names, at the compaction's time."""
    seen: dict[str, float] = {}
    compaction = compaction_window(entries).compaction
    if compaction is not None:
        moment = _seconds(compaction.timestamp)
        for path in (*compaction.details.read_files, *compaction.details.modified_files):
            seen[path] = moment
    calls: dict[str, ToolCall] = {}
    for entry in entries:
        if not isinstance(entry, MessageEntry):
            continue
        message = entry.message
        if isinstance(message, UserMessage):
            for attachment in message.attachments:
                if attachment.kind != "directory":
                    seen[attachment.path] = _seconds(entry.timestamp)
        elif isinstance(message, AssistantMessage):
            calls.update((call.id, call) for call in message.tool_calls)
        elif isinstance(message, ToolResultMessage) and not message.is_error:
            call = calls.get(message.tool_call_id)
            if call is not None:
                for path in paths_of(call):
                    seen[path] = _seconds(entry.timestamp)
    return seen


def _seconds(timestamp: str) -> float:
    try:
        return datetime.fromisoformat(timestamp).timestamp()
    except ValueError:
        return 0.0
