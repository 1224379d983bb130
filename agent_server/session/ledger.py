"""The ledger: one session's append-only JSONL file, its tree of entries, and its lock.

File format: line 1 is the session header, every further line one entry (see entries.py).
Each line is written with a single write() of the complete line, newline included, on a
descriptor opened with O_APPEND; nothing is ever rewritten or deleted. `sync()` fsyncs (the
agent calls it at the end of each turn; `fsync="always"` does it after every append).

Loading tolerates damage without losing what is intact:
- a torn last line (the process died mid-write) is reported and cut off, so that the next
  append starts on a fresh line; a last line that is complete but lacks its newline is kept
  and the newline added;
- a corrupt line elsewhere is reported with its line number, skipped, and left in the file;
- an entry whose parent was lost that way is attached to the entry before it in the file.

The tree lives in memory, indexed by id. New entries' parent is the current leaf (the last
entry appended); `rewind` appends a branch entry whose parent is the rewind target.
`projection_entries` walks parents back from the leaf and stops at the latest compaction's
first kept entry: its cost grows with what the model sees, not with the ledger.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import os
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal, TypeAlias

from agent_server.errors import (
    EntryNotFoundError,
    LedgerFormatError,
    SessionError,
    SessionNotFoundError,
)
from agent_server.llm.messages import Message, ToolSpec, Usage
from agent_server.session.entries import (
    BranchEntry,
    CompactionDetails,
    CompactionEntry,
    CompactionReason,
    Entry,
    McpToolSource,
    MessageEntry,
    ModelChangeEntry,
    SessionHeader,
    SystemPromptEntry,
    TitleEntry,
    ToolListEntry,
    ToolListReason,
    UnknownEntry,
    entry_from_json,
    entry_to_json,
    header_from_json,
    header_to_json,
    utc_timestamp,
)
from agent_server.session.lock import SessionLock
from agent_server.session.meta import MetaFold

FsyncMode: TypeAlias = Literal["turn", "always", "never"]
IssueAction: TypeAlias = Literal["skipped", "truncated", "newline_added", "reattached"]

ENTRY_ID_BYTES = 4  # 8 hex characters; collisions within a file are retried


@dataclass(frozen=True, slots=True)
class LoadIssue:
    """Something wrong with one line of a ledger, and what loading did about it."""

    line_number: int  # 1-based; line 1 is the header
    offset: int  # byte offset of the line's start
    reason: str
    action: IssueAction
    excerpt: str = ""  # the start of the line, for the log


@dataclass(frozen=True, slots=True)
class LoadReport:
    issues: tuple[LoadIssue, ...] = ()
    entry_count: int = 0
    truncated_bytes: int = 0  # bytes of a torn last line removed by the repair

    @property
    def clean(self) -> bool:
        return not self.issues

    @property
    def skipped(self) -> tuple[LoadIssue, ...]:
        """Lines not loaded: corrupt lines (left in the file) and a torn last line (cut)."""
        return tuple(i for i in self.issues if i.action in ("skipped", "truncated"))


@dataclass(frozen=True, slots=True)
class LedgerContents:
    """A ledger file parsed: what `read_ledger` returns (nothing repaired, nothing locked)."""

    header: SessionHeader
    entries: tuple[Entry, ...]
    report: LoadReport
    # The file's size up to the last complete line (where a repair would cut), and whether
    # the bytes after it are a complete entry missing only its newline.
    complete_size: int
    file_size: int
    missing_newline: bool

    def branch(self) -> list[Entry]:
        """The root-to-leaf path ending at the last entry of the file (the current leaf)."""
        by_id = {entry.id: entry for entry in self.entries}
        path: list[Entry] = []
        node = self.entries[-1].id if self.entries else None
        while node is not None and node in by_id and len(path) <= len(by_id):
            entry = by_id[node]
            path.append(entry)
            node = entry.parent_id
        path.reverse()
        return path


def read_ledger(path: Path) -> LedgerContents:
    """Parse a ledger file without locking or repairing it (for display and scans)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise SessionNotFoundError(f"no session file at {path}") from exc
    except OSError as exc:
        raise SessionError(f"cannot read the session file {path}: {exc.strerror}") from exc
    return parse_ledger(data, path)


def parse_ledger(data: bytes, path: Path | str = "<ledger>") -> LedgerContents:
    """Parse the bytes of a ledger (see the module docstring for how damage is handled)."""
    # Parsing allocates many small containers and no reference cycles: the cyclic collector
    # would only rescan them over and over (it doubles the load time of a large ledger).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse_ledger(data, path)
    finally:
        if was_enabled:
            gc.enable()


def _parse_ledger(data: bytes, path: Path | str) -> LedgerContents:
    if not data:
        raise LedgerFormatError(f"{path} is empty: it is not a session ledger")
    issues: list[LoadIssue] = []
    lines = data.split(b"\n")  # bytes split: U+2028 and friends inside JSON stay in the line
    torn = lines.pop()  # b"" when the file ends with a newline
    complete_size = len(data) - len(torn)
    missing_newline = False

    header_line = lines[0] if lines else torn
    try:
        header = header_from_json(json.loads(header_line))
    except (ValueError, LedgerFormatError) as exc:
        reason = exc.message if isinstance(exc, LedgerFormatError) else "not valid JSON"
        incomplete = " (incomplete: the server stopped while creating it)" if not lines else ""
        raise LedgerFormatError(
            f"{path} is not a session ledger: line 1, the session header{incomplete}: {reason}"
        ) from exc
    if not lines:  # the header itself lacks its newline
        missing_newline = True
        complete_size = len(data)
        lines, torn = [torn], b""

    entries: list[Entry] = []
    by_id: set[str] = set()
    previous_id: str | None = None
    offset = len(lines[0]) + 1
    body = lines[1:]
    if torn:
        body.append(torn)
    for index, raw in enumerate(body):
        line_number = index + 2
        start = offset
        offset += len(raw) + 1
        is_torn = torn and index == len(body) - 1
        if not raw.strip():
            continue
        try:
            entry = entry_from_json(json.loads(raw))
        except (ValueError, LedgerFormatError, RecursionError) as exc:
            if isinstance(exc, LedgerFormatError):
                reason = exc.message
            elif isinstance(exc, UnicodeDecodeError):
                reason = "not valid UTF-8"
            else:
                reason = "not valid JSON"
            if is_torn:
                issues.append(
                    LoadIssue(
                        line_number,
                        start,
                        f"incomplete last line ({reason}); the server probably stopped "
                        "while writing it",
                        "truncated",
                        _excerpt(raw),
                    )
                )
            else:
                issues.append(LoadIssue(line_number, start, reason, "skipped", _excerpt(raw)))
            continue
        if is_torn:
            missing_newline = True
            complete_size = len(data)
            issues.append(
                LoadIssue(
                    line_number,
                    start,
                    "the last line is complete but lacks its newline",
                    "newline_added",
                    _excerpt(raw),
                )
            )
        if entry.id in by_id:
            issues.append(
                LoadIssue(
                    line_number, start, f"duplicate entry id {entry.id}", "skipped", _excerpt(raw)
                )
            )
            continue
        if entry.parent_id is not None and entry.parent_id not in by_id:
            issues.append(
                LoadIssue(
                    line_number,
                    start,
                    f"parent {entry.parent_id} is missing (a corrupt line?); "
                    f"attached to {previous_id or 'the start'}",
                    "reattached",
                    _excerpt(raw),
                )
            )
            entry = _with_parent(entry, previous_id)
        by_id.add(entry.id)
        entries.append(entry)
        previous_id = entry.id

    truncated = len(data) - complete_size
    return LedgerContents(
        header=header,
        entries=tuple(entries),
        report=LoadReport(tuple(issues), len(entries), truncated),
        complete_size=complete_size,
        file_size=len(data),
        missing_newline=missing_newline,
    )


def _with_parent(entry: Entry, parent_id: str | None) -> Entry:
    if isinstance(entry, UnknownEntry):
        return UnknownEntry({**entry.raw, "parentId": parent_id})
    return dataclasses.replace(entry, parent_id=parent_id)


def _excerpt(raw: bytes, limit: int = 120) -> str:
    text = raw[: limit * 4].decode("utf-8", errors="replace")
    return text if len(text) <= limit else text[:limit] + "..."


def encode_line(data: dict[str, object]) -> bytes:
    """One ledger line: compact JSON (newlines inside strings are escaped) plus \\n."""
    return (json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def lock_path_for(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


LedgerHook: TypeAlias = Callable[["Ledger"], None]


class Ledger:
    """One open session ledger. Create with `Ledger.create` or `Ledger.open`."""

    def __init__(
        self,
        path: Path,
        contents: LedgerContents,
        fd: int,
        lock: SessionLock,
        *,
        fsync: FsyncMode,
        on_sync: LedgerHook | None,
        on_close: LedgerHook | None,
    ) -> None:
        self._path = path
        self._header = contents.header
        self.load_report = contents.report
        self._fd: int | None = fd
        self._lock = lock
        self._fsync: FsyncMode = fsync
        self._on_sync = on_sync
        self._on_close = on_close
        self._size = contents.complete_size
        self._write_lock = threading.Lock()
        self._entries: list[Entry] = []
        self._by_id: dict[str, Entry] = {}
        self._children: dict[str | None, list[Entry]] = {}
        self._leaf_id: str | None = None
        self._fold = MetaFold.start(contents.header)
        self._model_change: ModelChangeEntry | None = None
        self._system_prompt: SystemPromptEntry | None = None
        self._tool_list: ToolListEntry | None = None
        for entry in contents.entries:
            self._index(entry)

    # --- opening ------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: Path,
        *,
        session_id: str,
        workspace: str,
        title: str | None = None,
        model: str | None = None,
        fsync: FsyncMode = "turn",
        created_at: str | None = None,
        on_sync: LedgerHook | None = None,
        on_close: LedgerHook | None = None,
    ) -> Ledger:
        """A new ledger at `path` (which must not exist), locked, its header written."""
        _check_fsync(fsync)
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = SessionLock.acquire(lock_path_for(path), session_id)
        try:
            header = SessionHeader(
                session_id=session_id,
                workspace=workspace,
                created_at=created_at or utc_timestamp(),
                title=title,
                model=model,
            )
            line = encode_line(header_to_json(header))
            try:
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError as exc:
                raise SessionError(
                    f"a session file already exists at {path}; open it instead"
                ) from exc
            try:
                _write_all(fd, line)
                if fsync != "never":
                    os.fsync(fd)
                    _fsync_dir(path.parent)
            except OSError as exc:
                os.close(fd)
                path.unlink(missing_ok=True)
                raise SessionError(f"cannot write the session file {path}: {exc}") from exc
            contents = LedgerContents(header, (), LoadReport(), len(line), len(line), False)
            ledger = cls(path, contents, fd, lock, fsync=fsync, on_sync=on_sync, on_close=on_close)
        except BaseException:
            lock.release()
            raise
        ledger._notify_sync()
        return ledger

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        fsync: FsyncMode = "turn",
        session_id: str | None = None,
        on_sync: LedgerHook | None = None,
        on_close: LedgerHook | None = None,
    ) -> Ledger:
        """Load the ledger at `path`, lock it, and repair a torn last line.

        `session_id` (default: the file's stem) names the session in a lock refusal.
        """
        _check_fsync(fsync)
        if not path.is_file():
            raise SessionNotFoundError(f"no session file at {path}")
        lock = SessionLock.acquire(lock_path_for(path), session_id or path.stem)
        try:
            contents = read_ledger(path)
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
            try:
                if contents.missing_newline:
                    _write_all(fd, b"\n")
                    contents = dataclasses.replace(
                        contents, complete_size=contents.complete_size + 1
                    )
                elif contents.complete_size < contents.file_size:
                    os.ftruncate(fd, contents.complete_size)
                if contents.complete_size != contents.file_size and fsync != "never":
                    os.fsync(fd)
            except OSError as exc:
                os.close(fd)
                raise SessionError(f"cannot repair the session file {path}: {exc}") from exc
            ledger = cls(path, contents, fd, lock, fsync=fsync, on_sync=on_sync, on_close=on_close)
        except BaseException:
            lock.release()
            raise
        return ledger

    # --- identity and state ---------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._path

    @property
    def header(self) -> SessionHeader:
        return self._header

    @property
    def session_id(self) -> str:
        return self._header.session_id

    @property
    def leaf_id(self) -> str | None:
        """The entry the next append will follow (None before the first entry)."""
        return self._leaf_id

    @property
    def entries(self) -> Sequence[Entry]:
        """Every entry in file order, for display (a copy: O(ledger))."""
        return tuple(self._entries)

    @property
    def entry_count(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        return self._size

    @property
    def title(self) -> str | None:
        """The latest title entry's title, else the header's."""
        return self._fold.title

    @property
    def model_change(self) -> ModelChangeEntry | None:
        """The latest model change entry in the file, if any."""
        return self._model_change

    def latest_model(self) -> str | None:
        """The model of the latest model change entry, else the header's."""
        if self._model_change is not None:
            return self._model_change.model
        return self._header.model

    def system_prompt(self) -> str | None:
        """The latest recorded system prompt (append_system_prompt), if any."""
        return self._system_prompt.text if self._system_prompt is not None else None

    def tool_list(self) -> ToolListEntry | None:
        """The latest recorded tool list (append_tool_list), if any."""
        return self._tool_list

    @property
    def meta(self) -> MetaFold:
        """Title, model, last update and entry count (kept up to date on every append)."""
        return dataclasses.replace(self._fold)

    @property
    def closed(self) -> bool:
        return self._fd is None

    def mtime_ns(self) -> int:
        return os.fstat(self._require_fd()).st_mtime_ns

    # --- tree -----------------------------------------------------------------------------

    def get(self, entry_id: str) -> Entry | None:
        return self._by_id.get(entry_id)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._by_id

    def children(self, entry_id: str | None) -> list[Entry]:
        """Entries whose parent is `entry_id` (None: the roots), in file order."""
        return list(self._children.get(entry_id, ()))

    def branch(self, leaf_id: str | None = None) -> list[Entry]:
        """The root-to-leaf path ending at `leaf_id` (default: the current leaf)."""
        path: list[Entry] = []
        node = self._start(leaf_id)
        while node is not None:
            entry = self._by_id[node]
            path.append(entry)
            node = entry.parent_id
        path.reverse()
        return path

    def projection_entries(self, leaf_id: str | None = None) -> list[Entry]:
        """The tail of the branch that the projection needs, root-to-leaf order.

        From the latest compaction's first kept entry (or the compaction itself when it kept
        nothing) to the leaf; the whole branch when there is no compaction on it.
        """
        path: list[Entry] = []
        node = self._start(leaf_id)
        compaction: CompactionEntry | None = None
        while node is not None:
            entry = self._by_id[node]
            path.append(entry)
            if compaction is None:
                if isinstance(entry, CompactionEntry):
                    compaction = entry
                    if entry.first_kept_entry_id is None:
                        break
            elif entry.id == compaction.first_kept_entry_id:
                break
            node = entry.parent_id
        path.reverse()
        return path

    def is_on_branch(self, entry_id: str, leaf_id: str | None = None) -> bool:
        """Whether `entry_id` is on the path from the root to `leaf_id` (default: the leaf)."""
        node = self._start(leaf_id)
        while node is not None:
            if node == entry_id:
                return True
            node = self._by_id[node].parent_id
        return False

    def _start(self, leaf_id: str | None) -> str | None:
        if leaf_id is None:
            return self._leaf_id
        if leaf_id not in self._by_id:
            raise EntryNotFoundError(f"no entry {leaf_id} in session {self.session_id}")
        return leaf_id

    # --- appending ------------------------------------------------------------------------

    def new_id(self) -> str:
        """A fresh entry id, unique in this ledger."""
        while True:
            candidate = secrets.token_hex(ENTRY_ID_BYTES)
            if candidate not in self._by_id:
                return candidate

    def append(self, entry: Entry) -> Entry:
        """Write `entry` as one line and make it the leaf; returns the entry as stored.

        The returned entry is the one a reload would give (the line parsed back), so that a
        projection is the same before and after a restart, byte for byte.
        """
        with self._write_lock:
            fd = self._require_fd()
            if entry.id in self._by_id:
                raise SessionError(f"entry id {entry.id} already exists in {self.session_id}")
            if entry.parent_id is not None and entry.parent_id not in self._by_id:
                raise EntryNotFoundError(
                    f"cannot append after {entry.parent_id}: no such entry in session "
                    f"{self.session_id}"
                )
            line = encode_line(entry_to_json(entry))
            stored = entry_from_json(json.loads(line))
            try:
                _write_all(fd, line)
                if self._fsync == "always":
                    os.fsync(fd)
            except OSError as exc:
                # Leave no partial line behind for the next append to glue onto.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, self._size)
                raise SessionError(
                    f"cannot write to the session file {self._path}: {exc.strerror}; "
                    "the entry was not saved"
                ) from exc
            self._size += len(line)
            self._index(stored)
            return stored

    def append_message(self, message: Message) -> MessageEntry:
        entry = MessageEntry(self.new_id(), self._leaf_id, utc_timestamp(), message)
        stored = self.append(entry)
        assert isinstance(stored, MessageEntry)
        return stored

    def append_compaction(
        self,
        *,
        summary: str,
        first_kept_entry_id: str | None,
        tokens_before: int,
        tokens_after: int | None = None,
        reason: CompactionReason,
        details: CompactionDetails | None = None,
        split_turn_summary: str | None = None,
        model: str | None = None,
        usage: Usage | None = None,
    ) -> CompactionEntry:
        """Record a compaction; `first_kept_entry_id` must be on the current branch."""
        if first_kept_entry_id is not None and not (
            first_kept_entry_id in self._by_id and self.is_on_branch(first_kept_entry_id)
        ):
            raise EntryNotFoundError(
                f"first kept entry {first_kept_entry_id} is not on the current branch of "
                f"session {self.session_id}"
            )
        entry = CompactionEntry(
            id=self.new_id(),
            parent_id=self._leaf_id,
            timestamp=utc_timestamp(),
            summary=summary,
            first_kept_entry_id=first_kept_entry_id,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            reason=reason,
            details=details or CompactionDetails(),
            split_turn_summary=split_turn_summary,
            model=model,
            usage=usage,
        )
        stored = self.append(entry)
        assert isinstance(stored, CompactionEntry)
        return stored

    def append_model_change(self, provider: str, model: str) -> ModelChangeEntry:
        entry = ModelChangeEntry(self.new_id(), self._leaf_id, utc_timestamp(), provider, model)
        stored = self.append(entry)
        assert isinstance(stored, ModelChangeEntry)
        return stored

    def append_title(self, title: str) -> TitleEntry:
        entry = TitleEntry(self.new_id(), self._leaf_id, utc_timestamp(), title)
        stored = self.append(entry)
        assert isinstance(stored, TitleEntry)
        return stored

    def append_system_prompt(self, text: str) -> SystemPromptEntry:
        entry = SystemPromptEntry(self.new_id(), self._leaf_id, utc_timestamp(), text)
        stored = self.append(entry)
        assert isinstance(stored, SystemPromptEntry)
        return stored

    def append_tool_list(
        self,
        tools: tuple[ToolSpec, ...],
        mcp: tuple[McpToolSource, ...] = (),
        reason: ToolListReason = "start",
    ) -> ToolListEntry:
        entry = ToolListEntry(self.new_id(), self._leaf_id, utc_timestamp(), tools, mcp, reason)
        stored = self.append(entry)
        assert isinstance(stored, ToolListEntry)
        return stored

    def rewind(self, entry_id: str | None, *, summary: str | None = None) -> BranchEntry:
        """Continue from `entry_id` (None: from the very start); nothing is deleted."""
        if entry_id is not None and entry_id not in self._by_id:
            raise EntryNotFoundError(
                f"cannot rewind to {entry_id}: no such entry in session {self.session_id}"
            )
        entry = BranchEntry(self.new_id(), entry_id, utc_timestamp(), entry_id, summary)
        stored = self.append(entry)
        assert isinstance(stored, BranchEntry)
        return stored

    # --- durability and lifetime ----------------------------------------------------------

    def sync(self) -> None:
        """Make every append durable (fsync, unless fsync="never") and refresh the meta."""
        with self._write_lock:
            fd = self._require_fd()
            if self._fsync != "never":
                os.fsync(fd)
        self._notify_sync()

    def close(self) -> None:
        """Sync, release the lock, close the file. Idempotent."""
        if self._fd is None:
            return
        try:
            self.sync()
            if self._on_close is not None:
                self._on_close(self)
        finally:
            with self._write_lock:
                fd, self._fd = self._fd, None
                if fd is not None:
                    os.close(fd)
                self._lock.release()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self._entries)} entries"
        return f"<Ledger {self.session_id} {state} at {self._path}>"

    # --- internals ------------------------------------------------------------------------

    def _require_fd(self) -> int:
        if self._fd is None:
            raise SessionError(f"session {self.session_id} is closed; open it again")
        return self._fd

    def _notify_sync(self) -> None:
        if self._on_sync is not None:
            self._on_sync(self)

    def _index(self, entry: Entry) -> None:
        self._entries.append(entry)
        self._by_id[entry.id] = entry
        self._children.setdefault(entry.parent_id, []).append(entry)
        self._leaf_id = entry.id
        self._fold.add(entry)
        if isinstance(entry, ModelChangeEntry):
            self._model_change = entry
        elif isinstance(entry, SystemPromptEntry):
            self._system_prompt = entry
        elif isinstance(entry, ToolListEntry):
            self._tool_list = entry


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _check_fsync(mode: str) -> None:
    if mode not in ("turn", "always", "never"):
        raise SessionError(f"fsync must be 'turn', 'always' or 'never', not {mode!r}")
