"""The ledger: one session's append-only JSONL file, its tree of entries, and its lock.

File format: line 1 is the session header, every further line one entry (see entries.py).
Each line is written with a single write() of the complete line, newline included, on a
descriptor opened with O_APPEND (preceded by a newline when another program left the file
ending in an unfinished line); nothing is ever rewritten or deleted. `sync()` fsyncs (the
agent calls it at the end of each turn; `fsync="always"` does it after every append).

Loading tolerates damage without losing what is intact (`index.scan` decides, line by line):
a torn last line is reported and cut off, so that the next append starts on a fresh line; a
last line complete but for its newline is kept and the newline added; a corrupt line
elsewhere is reported, skipped and left in the file; an entry whose parent was lost that way
is attached to the entry before it in the file. Tool calls left without a result at the end
of the current branch (the process died while they ran) get an appended "aborted" result on
open, so that the file alone is a valid conversation (append-only: nothing is rewritten).
Everything a repair did is in `Ledger.load_report`; `LoadReport.describe()` says it in words.

An open ledger does not hold its entries. It holds the index (index.py: each entry's offset,
parent and kind, kept in a sidecar and checked against the file on open) and reads lines on
demand. New entries' parent is the current leaf (the last entry appended); `rewind` appends a
branch entry whose parent is the rewind target. `projection_entries` walks parents back from
the leaf and stops at the latest compaction's first kept entry; those entries (what the model
sees) stay in memory, everything older is read when asked for. Opening costs what the model
sees, not the length of the history.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import logging
import os
import secrets
import threading
import time
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Literal, TypeAlias, get_args

from agent_server.errors import (
    EntryNotFoundError,
    LedgerFormatError,
    SessionError,
    SessionNotFoundError,
)
from agent_server.llm.messages import (
    AssistantMessage,
    CompactionContent,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
)
from agent_server.llm.stream import CacheRetention
from agent_server.session.entries import (
    BranchEntry,
    Carried,
    CompactionDetails,
    CompactionEntry,
    CompactionReason,
    Entry,
    FileRestoreEntry,
    FileVersion,
    McpToolSource,
    MessageEntry,
    ModelChangeEntry,
    PinAction,
    PinAuthor,
    PinEntry,
    PinKind,
    PlanEntry,
    PlanItem,
    SessionHeader,
    SystemPromptEntry,
    TitleEntry,
    ToolListEntry,
    ToolListReason,
    UnknownEntry,
    entry_envelope,
    entry_from_json,
    entry_to_json,
    header_from_json,
    header_to_json,
    utc_timestamp,
)
from agent_server.session.facts import COMPACTION, facts_of
from agent_server.session.index import (
    LedgerIndex,
    LoadIssue,
    ScanEnd,
    decode_line,
    digest,
    excerpt,
    read_sidecar,
    scan,
    tail_digest,
    with_parent,
    write_sidecar,
)
from agent_server.session.lock import SessionLock
from agent_server.session.meta import MetaFold
from agent_server.stderr_log import shorten

FsyncMode: TypeAlias = Literal["turn", "always", "never"]

ENTRY_ID_BYTES = 4  # 8 hex characters; collisions within a file are retried
READ_BLOCK = 1 << 20  # a rebuild reads the file in blocks of this size
READ_GAP = 64 << 10  # lines closer than this are read in one pread
log = logging.getLogger(__name__)


ABORTED_BY_EXIT = (
    "No result: agent-server stopped before this tool call finished, so it may or may not "
    "have run. Check its effects before running it again."
)
ABORTED_UNSAVED = (
    "No result: the result of this tool call could not be saved (the session file could not "
    "be written: a full disk?), so it is not known here. The call ran, or may have run: "
    "check its effects before running it again."
)


@dataclass(frozen=True, slots=True)
class LoadReport:
    issues: tuple[LoadIssue, ...] = ()
    entry_count: int = 0
    truncated_bytes: int = 0  # bytes of a torn last line removed by the repair
    # Tool calls at the end of the branch that had no result: an aborted one was appended.
    aborted_tool_calls: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return not self.issues and not self.aborted_tool_calls

    def describe(self) -> str:
        """What loading found and did, in one paragraph for the user ("" when clean)."""
        if self.clean:
            return ""
        parts: list[str] = []
        for issue in self.issues[:5]:
            if issue.action == "skipped":
                parts.append(f"line {issue.line_number} skipped ({issue.reason})")
            elif issue.action == "truncated":
                parts.append(
                    f"an incomplete last line (line {issue.line_number}, "
                    f"{self.truncated_bytes} bytes) cut off"
                )
            elif issue.action == "reattached":
                parts.append(f"line {issue.line_number} attached after the entry before it")
            elif issue.action == "unknownType":
                parts.append(
                    f"line {issue.line_number} kept but not shown (an entry this version cannot "
                    "read)"
                )
            else:
                parts.append(f"a newline added after line {issue.line_number}")
        if len(self.issues) > 5:
            parts.append(f"{len(self.issues) - 5} more lines repaired (see the server log)")
        if self.aborted_tool_calls:
            count = len(self.aborted_tool_calls)
            parts.append(
                f"{count} tool call{'s' if count != 1 else ''} left running when the server "
                "stopped marked as aborted"
            )
        kept = f"{self.entry_count} entr{'ies' if self.entry_count != 1 else 'y'} kept"
        skipped = " (skipped lines stay in the file)" if self.skipped else ""
        return f"The session was repaired when it was opened: {'; '.join(parts)}. {kept}{skipped}."

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
    """Parse a whole ledger file without locking or repairing it (for display and scans)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise SessionNotFoundError(f"no session file at {path}") from exc
    except OSError as exc:
        raise SessionError(f"cannot read the session file {path}: {exc.strerror}") from exc
    return parse_ledger(data, path)


def parse_ledger(data: bytes, path: Path | str = "<ledger>") -> LedgerContents:
    """Parse the bytes of a ledger (see `index.scan` for how damage is handled)."""
    # Parsing allocates many small containers and no reference cycles: the cyclic collector
    # would only rescan them over and over (it doubles the load time of a large ledger).
    with collector_paused():
        header, header_end, header_digest = parse_header(data, path)
        index = LedgerIndex(header, header_digest)
        entries: list[Entry] = []
        if header_end > len(data):  # the header lacks its newline: no entries
            end = ScanEnd(len(data), True)
        else:
            index.size = header_end
            end = scan(data[header_end:], header_end, index, on_entry=entries.append)
    return LedgerContents(
        header=header,
        entries=tuple(entries),
        report=LoadReport(tuple(index.issues), len(entries), len(data) - end.complete_size),
        complete_size=end.complete_size,
        file_size=len(data),
        missing_newline=end.missing_newline,
    )


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse_header(data: bytes, path: Path | str) -> tuple[SessionHeader, int, str]:
    """The header of a ledger from its first bytes: the header, where the entries start
    (len(data) + 1 when the header lacks its newline), and the header line's digest."""
    if not data:
        raise LedgerFormatError(f"{path} is empty: it is not a session ledger")
    newline = data.find(b"\n")
    line = data if newline < 0 else data[:newline]
    try:
        header = header_from_json(json.loads(line))
    except (ValueError, LedgerFormatError, RecursionError) as exc:
        reason = exc.message if isinstance(exc, LedgerFormatError) else "not valid JSON"
        incomplete = " (incomplete: the server stopped while creating it)" if newline < 0 else ""
        raise LedgerFormatError(
            f"{path} is not a session ledger: line 1, the session header{incomplete}: {reason}"
        ) from exc
    return header, (len(data) + 1 if newline < 0 else newline + 1), digest(line)


def encode_line(data: dict[str, object]) -> bytes:
    """One ledger line: compact JSON (newlines inside strings are escaped) plus \\n."""
    return (json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


LedgerHook: TypeAlias = Callable[["Ledger"], None]


def open_index(fd: int, path: Path) -> tuple[LedgerIndex, ScanEnd, int]:
    """The index of the ledger open on `fd`: the sidecar's when it still describes the start
    of the file (extended by what was appended since), else one rebuilt by reading the whole
    file in blocks. Also where the file's complete lines end, and its size."""
    size = os.fstat(fd).st_size
    first = os.pread(fd, 64 << 10, 0)
    while b"\n" not in first and len(first) < size:
        first += os.pread(fd, 1 << 20, len(first))
    header, header_end, header_digest = parse_header(first, path)
    if header_end > size:  # the header lacks its newline: no entries
        empty = LedgerIndex(header, header_digest)
        empty.size = size
        return empty, ScanEnd(size, True), size
    stored = read_sidecar(path, header, header_digest)
    index: LedgerIndex | None = None
    if stored is not None:
        candidate, tail = stored
        if header_end <= candidate.size <= size and tail_digest(fd, candidate.size) == tail:
            index = candidate
    if index is None:
        index = LedgerIndex(header, header_digest)
        index.size = header_end
    with collector_paused():
        end = _fold_file(fd, index, size)
    return index, end, size


def _fold_file(fd: int, index: LedgerIndex, size: int) -> ScanEnd:
    """Scan the file from where `index` ends to `size`, a block at a time: what it holds
    at once is a block and a line, whatever the file's size."""
    base = index.size
    carry = b""
    while True:
        position = base + len(carry)
        block = os.pread(fd, min(READ_BLOCK, size - position), position) if position < size else b""
        if not block:
            return scan(carry, base, index)
        data = carry + block if carry else block
        cut = data.rfind(b"\n") + 1
        if cut:
            scan(data[:cut] if cut < len(data) else data, base, index, at_end=False)
            base += cut
        carry = data[cut:]


class Ledger:
    """One open session ledger. Create with `Ledger.create` or `Ledger.open`."""

    def __init__(
        self,
        path: Path,
        index: LedgerIndex,
        fd: int,
        lock: SessionLock,
        *,
        fsync: FsyncMode,
        on_sync: LedgerHook | None,
        on_close: LedgerHook | None,
        report: LoadReport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._path = path
        self._clock = clock  # stamps the entries (the session's: tests move it over pauses)
        self._index = index
        self.load_report = report or LoadReport(tuple(index.issues), len(index))
        self._fd: int | None = fd
        self._lock = lock
        self._fsync: FsyncMode = fsync
        self._on_sync = on_sync
        self._on_close = on_close
        self._size = index.size
        self._write_lock = threading.Lock()
        # Entries held in memory by position: what the projection needs, and new appends.
        self._held: dict[int, Entry] = {}
        # The positions of the current branch, root to leaf (built on first use).
        self._branch: array[int] | None = None
        self._stored_count = -1  # entries the sidecar on disk covers (-1: unknown)

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
        clock: Callable[[], float] = time.time,
    ) -> Ledger:
        """A new ledger at `path` (which must not exist), locked, its header written; its
        entries are stamped with `clock`'s time."""
        _check_fsync(fsync)
        path.parent.mkdir(parents=True, exist_ok=True)
        header = SessionHeader(
            session_id=session_id,
            workspace=workspace,
            created_at=created_at or stamp(clock),
            title=title,
            model=model,
        )
        line = encode_line(header_to_json(header))
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError as exc:
            raise SessionError(f"a session file already exists at {path}; open it instead") from exc
        except OSError as exc:
            raise SessionError(f"cannot create the session file {path}: {exc.strerror}") from exc
        try:
            lock = SessionLock.acquire(fd, path, session_id)
        except BaseException:
            os.close(fd)  # someone opened the new file first: it is theirs now
            raise
        try:
            try:
                _write_all(fd, line)
                if fsync != "never":
                    os.fsync(fd)
                    _fsync_dir(path.parent)
            except OSError as exc:
                path.unlink(missing_ok=True)
                raise SessionError(f"cannot write the session file {path}: {exc}") from exc
            index = LedgerIndex(header, digest(line[:-1]))
            index.size = len(line)
            ledger = cls(
                path, index, fd, lock, fsync=fsync, on_sync=on_sync, on_close=on_close, clock=clock
            )
        except BaseException:
            lock.release()
            os.close(fd)
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
        clock: Callable[[], float] = time.time,
    ) -> Ledger:
        """Open the ledger at `path` through its index, lock it, and repair a torn last line.

        `session_id` (default: the file's stem) names the session in a lock refusal; new
        entries are stamped with `clock`'s time.
        """
        _check_fsync(fsync)
        if not path.is_file():
            raise SessionNotFoundError(f"no session file at {path}")
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError as exc:
            raise SessionNotFoundError(f"no session file at {path}") from exc
        except OSError as exc:
            raise SessionError(f"cannot open the session file {path}: {exc}") from exc
        try:
            lock = SessionLock.acquire(fd, path, session_id or path.stem)
        except BaseException:
            os.close(fd)
            raise
        try:
            try:
                index, end, size = open_index(fd, path)
                if end.missing_newline:
                    _write_all(fd, b"\n")
                    index.size = end.complete_size + 1
                elif end.complete_size < size:
                    os.ftruncate(fd, end.complete_size)
                repaired = end.complete_size != size or end.missing_newline
                if repaired and fsync != "never":
                    os.fsync(fd)
            except OSError as exc:
                raise SessionError(f"cannot repair the session file {path}: {exc}") from exc
            report = LoadReport(tuple(index.issues), len(index), size - end.complete_size)
            ledger = cls(
                path,
                index,
                fd,
                lock,
                fsync=fsync,
                on_sync=on_sync,
                on_close=on_close,
                report=report,
                clock=clock,
            )
        except BaseException:
            lock.release()
            os.close(fd)
            raise
        # Repairs are done once; what is left in the file is reported from the sidecar.
        index.issues = [i for i in index.issues if i.action in ("skipped", "reattached")]
        ledger._answer_open_tool_calls()
        return ledger

    # --- identity and state ---------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._path

    @property
    def header(self) -> SessionHeader:
        return self._index.header

    @property
    def session_id(self) -> str:
        return self._index.header.session_id

    @property
    def leaf_id(self) -> str | None:
        """The entry the next append will follow (None before the first entry)."""
        ids = self._index.ids
        return ids[-1] if ids else None

    @property
    def entries(self) -> Sequence[Entry]:
        """Every entry in file order, read from the file (O(ledger): for tools and tests)."""
        return tuple(self._read(range(len(self._index))))

    @property
    def entry_count(self) -> int:
        return len(self._index)

    @property
    def size_bytes(self) -> int:
        return self._size

    @property
    def title(self) -> str | None:
        """The latest title entry's title, else the header's."""
        return self._index.meta.title

    @property
    def model_change(self) -> ModelChangeEntry | None:
        """The latest model change entry in the file, if any."""
        entry = self._indexed(self._index.model_change)
        assert entry is None or isinstance(entry, ModelChangeEntry)
        return entry

    @property
    def last_call(self) -> MessageEntry | None:
        """The latest model answer in the file that recorded its cache retention (when and how
        the session's cache was last used), if any: one line read, through the index."""
        entry = self._indexed(self._index.last_call)
        assert entry is None or isinstance(entry, MessageEntry)
        return entry

    def latest_model(self) -> str | None:
        """The model of the latest model change entry, else the header's."""
        change = self.model_change
        return change.model if change is not None else self._index.header.model

    def latest_thinking(self) -> str | None:
        """The thinking level of the latest model change entry (None: not recorded)."""
        change = self.model_change
        return change.thinking if change is not None else None

    def system_prompt(self) -> str | None:
        """The latest recorded system prompt (append_system_prompt), if any."""
        entry = self._indexed(self._index.system_prompt)
        assert entry is None or isinstance(entry, SystemPromptEntry)
        return entry.text if entry is not None else None

    def tool_list(self) -> ToolListEntry | None:
        """The latest recorded tool list (append_tool_list), if any."""
        entry = self._indexed(self._index.tool_list)
        assert entry is None or isinstance(entry, ToolListEntry)
        return entry

    def _indexed(self, number: int) -> Entry | None:
        """The entry at a position the index keeps (-1: none), read from its line."""
        if number < 0:
            return None
        [entry] = self._read([number])
        return entry

    @property
    def meta(self) -> MetaFold:
        """Title, model, last update and entry count (kept up to date on every append)."""
        return dataclasses.replace(self._index.meta, entry_count=len(self._index))

    @property
    def usage(self) -> tuple[Usage, int]:
        """The usage of every model call the file records (all branches, compactions'
        summaries included), summed, and the number of calls."""
        return self._index.usage, self._index.calls

    @property
    def closed(self) -> bool:
        return self._fd is None

    def mtime_ns(self) -> int:
        return os.fstat(self._require_fd()).st_mtime_ns

    # --- tree -----------------------------------------------------------------------------

    def get(self, entry_id: str) -> Entry | None:
        number = self._index.position.get(entry_id)
        if number is None:
            return None
        [entry] = self._read([number])
        return entry

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._index.position

    def children(self, entry_id: str | None) -> list[Entry]:
        """Entries whose parent is `entry_id` (None: the roots), in file order."""
        if entry_id is None:
            parent = -1
        elif entry_id in self._index.position:
            parent = self._index.position[entry_id]
        else:
            return []
        return self._read([n for n, p in enumerate(self._index.parents) if p == parent])

    def branch_ids(self, leaf_id: str | None = None) -> list[str]:
        """The ids of the root-to-leaf path ending at `leaf_id` (default: the current leaf),
        from the index alone."""
        ids = self._index.ids
        return [ids[n] for n in self._positions(leaf_id)]

    def branch(self, leaf_id: str | None = None) -> list[Entry]:
        """The root-to-leaf path ending at `leaf_id` (default: the current leaf), read from
        the file (O(branch))."""
        return self._read(self._positions(leaf_id))

    def read(self, entry_ids: Iterable[str]) -> list[Entry]:
        """The entries with these ids, in the order given (EntryNotFoundError for one the
        ledger does not have)."""
        position = self._index.position
        numbers = []
        for entry_id in entry_ids:
            if entry_id not in position:
                raise EntryNotFoundError(f"no entry {entry_id} in session {self.session_id}")
            numbers.append(position[entry_id])
        return self._read(numbers)

    def walk_back(self, entry_id: str | None = None) -> Iterator[tuple[str, str]]:
        """(id, one-letter kind) of `entry_id` (default: the leaf) and each entry before it
        on its branch, back to the root, from the index alone."""
        index = self._index
        for number in index.walk(self._start(entry_id)):
            yield index.ids[number], index.kind(number)

    def appended_after(self, entry_id: str, kinds: str) -> list[Entry]:
        """The entries appended after `entry_id` whose one-letter kind is in `kinds`, in file
        order, on every branch: what happened since that entry was written."""
        index = self._index
        start = self._start(entry_id)
        wanted = {ord(kind) for kind in kinds}
        return self._read(n for n in range(start + 1, len(index)) if index.kinds[n] in wanted)

    def compactions_on_branch(self, leaf_id: str | None = None) -> int:
        kinds = self._index.kinds
        return sum(1 for n in self._positions(leaf_id) if kinds[n] == ord(COMPACTION))

    def projection_entries(
        self,
        leaf_id: str | None = None,
        *,
        readable: Callable[[CompactionEntry], bool] | None = None,
    ) -> list[Entry]:
        """The tail of the branch that the projection needs, root-to-leaf order.

        From the latest compaction's first kept entry (or the compaction itself when it kept
        nothing) to the leaf; the whole branch when there is no compaction on it. For the
        current leaf, these are the entries the ledger keeps in memory. A compaction that
        `readable` refuses (a provider's that the API in use cannot read) is walked past,
        to the one before it.
        """
        start = self._start(leaf_id)
        if start < 0:
            if leaf_id is None:
                self._held = {}
            return []
        index = self._index
        numbers: list[int] = []
        first_kept: str | None = None
        found = False
        for number in index.walk(start):
            numbers.append(number)
            if not found:
                if index.kinds[number] == ord(COMPACTION):
                    [compaction] = self._read([number])
                    assert isinstance(compaction, CompactionEntry)
                    if readable is not None and not readable(compaction):
                        continue
                    found = True
                    first_kept = compaction.first_kept_entry_id
                    if first_kept is None:
                        break
            elif index.ids[number] == first_kept:
                break
        numbers.reverse()
        entries = self._read(numbers)
        if leaf_id is None:
            self._held = dict(zip(numbers, entries, strict=True))
        return entries

    def is_on_branch(self, entry_id: str, leaf_id: str | None = None) -> bool:
        """Whether `entry_id` is on the path from the root to `leaf_id` (default: the leaf)."""
        target = self._index.position.get(entry_id)
        if target is None:
            return False
        return any(number == target for number in self._index.walk(self._start(leaf_id)))

    def _start(self, leaf_id: str | None) -> int:
        if leaf_id is None:
            return len(self._index) - 1
        number = self._index.position.get(leaf_id)
        if number is None:
            raise EntryNotFoundError(f"no entry {leaf_id} in session {self.session_id}")
        return number

    def _positions(self, leaf_id: str | None) -> Sequence[int]:
        """Positions of the branch ending at `leaf_id`, root first (the current branch is
        kept, and extended by appends)."""
        if leaf_id is None and self._branch is not None:
            return self._branch
        positions = array("q", self._index.walk(self._start(leaf_id)))
        positions.reverse()
        if leaf_id is None:
            self._branch = positions
        return positions

    def _read(self, numbers: Iterable[int]) -> list[Entry]:
        """The entries at these positions, from memory or the file: lines close together are
        read in one pread. Each line is checked to be the entry the index says it is."""
        wanted = list(numbers)
        found: dict[int, Entry] = {n: self._held[n] for n in wanted if n in self._held}
        missing = sorted({n for n in wanted if n not in found}, key=self._index.offsets.__getitem__)
        if missing:
            fd = self._require_fd()
            offsets, lengths = self._index.offsets, self._index.lengths
            span: list[int] = []
            with collector_paused():
                for number in missing:
                    if span and offsets[number] - _end(span[-1], offsets, lengths) > READ_GAP:
                        self._parse_span(fd, span, found)
                        span = []
                    span.append(number)
                self._parse_span(fd, span, found)
        return [found[n] for n in wanted]

    def _parse_span(self, fd: int, span: list[int], into: dict[int, Entry]) -> None:
        index = self._index
        begin = index.offsets[span[0]]
        data = os.pread(fd, _end(span[-1], index.offsets, index.lengths) - begin, begin)
        for number in span:
            start = index.offsets[number] - begin
            entry = self._entry_at(number, data[start : start + index.lengths[number]])
            parent = index.parents[number]
            parent_id = index.ids[parent] if parent >= 0 else None
            if entry.parent_id != parent_id:  # reattached when the file was scanned
                entry = with_parent(entry, parent_id)
            into[number] = entry

    def _entry_at(self, number: int, raw: bytes) -> Entry:
        """The entry on the line at position `number`. A line that is not the entry indexed
        there means the file was changed under us (SessionError). One whose envelope is right
        but whose message this version cannot read (the index is built without reading
        messages whole) is kept in the tree and not shown, as an entry of an unknown type."""
        expected = self._index.ids[number]
        try:
            data = decode_line(raw)
            _, entry_id, _ = entry_envelope(data)
        except (ValueError, LedgerFormatError, RecursionError):
            entry_id = None
        if entry_id != expected:
            raise SessionError(
                f"the session file {self._path} was changed by another program while open "
                f"(the entry at byte {self._index.offsets[number]} is not the one indexed); "
                "close the session and open it again"
            )
        try:
            return entry_from_json(data)
        except (ValueError, LedgerFormatError, RecursionError) as error:
            reason = error.message if isinstance(error, LedgerFormatError) else str(error)
            log.warning(
                "session %s: entry %s cannot be read (%s); kept, not shown",
                self.session_id,
                expected,
                shorten(reason, 200),
            )
            self._report_unreadable(number, raw, shorten(reason, 200))
            return UnknownEntry(raw=dict(data))

    def _report_unreadable(self, number: int, raw: bytes, reason: str) -> None:
        """Add an entry found unreadable when read (not when indexed) to the load report, so
        that the editor is told, as of every other line loading cannot use."""
        offset = self._index.offsets[number]
        if any(issue.offset == offset for issue in self.load_report.issues):
            return
        issue = LoadIssue(
            self._line_number_at(offset),
            offset,
            f"an entry this version cannot read ({reason}); kept in the file and the tree, "
            "not shown",
            "unknownType",
            excerpt(raw),
        )
        self.load_report = dataclasses.replace(
            self.load_report, issues=(*self.load_report.issues, issue)
        )

    def _line_number_at(self, offset: int) -> int:
        """The 1-based number of the line that starts at byte `offset` (the index keeps
        offsets only; this is read on the rare path of a damaged entry)."""
        fd = self._require_fd()
        newlines, position = 0, 0
        while position < offset:
            block = os.pread(fd, min(READ_BLOCK, offset - position), position)
            if not block:
                break
            newlines += block.count(b"\n")
            position += len(block)
        return newlines + 1

    # --- appending ------------------------------------------------------------------------

    def new_id(self) -> str:
        """A fresh entry id, unique in this ledger."""
        while True:
            candidate = secrets.token_hex(ENTRY_ID_BYTES)
            if candidate not in self._index.position:
                return candidate

    def append(self, entry: Entry) -> Entry:
        """Write `entry` as one line and make it the leaf; returns the entry as stored.

        The returned entry is the one a reload would give (the line parsed back), so that a
        projection is the same before and after a restart, byte for byte.
        """
        with self._write_lock:
            fd = self._require_fd()
            index = self._index
            if entry.id in index.position:
                raise SessionError(f"entry id {entry.id} already exists in {self.session_id}")
            if entry.parent_id is not None and entry.parent_id not in index.position:
                raise EntryNotFoundError(
                    f"cannot append after {entry.parent_id}: no such entry in session "
                    f"{self.session_id}"
                )
            line = encode_line(entry_to_json(entry))
            stored = entry_from_json(json.loads(line))
            try:
                _write_all(fd, _after_foreign_bytes(fd, self._size) + line)
                end = os.lseek(fd, 0, os.SEEK_CUR)  # O_APPEND: the end of what was written
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
            offset = end - len(line)
            if offset > self._size:  # another program appended: index its lines first
                scan(os.pread(fd, offset - self._size, self._size), self._size, index, at_end=False)
                self._branch = None
            number = index.add(facts_of(stored), offset, len(line))
            index.size = self._size = end
            index.line_count += 1
            self._held[number] = stored
            branch = self._branch
            if branch is not None and (
                (branch and index.parents[number] == branch[-1])
                or (not branch and index.parents[number] < 0)
            ):
                branch.append(number)
            else:
                self._branch = None
            return stored

    def append_message(
        self,
        message: Message,
        *,
        entry_id: str | None = None,
        cache_retention: CacheRetention | None = None,
    ) -> MessageEntry:
        """Append `message` after the leaf, as `entry_id` (default: a new id). An assistant
        answer is recorded under the id its streamed chunks carried, so the editor can tie
        them to the entry, with the cache retention its call used (`last_call`)."""
        entry = MessageEntry(
            entry_id or self.new_id(), self.leaf_id, stamp(self._clock), message, cache_retention
        )
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
        carried: Carried | None = None,
        provider: CompactionContent | None = None,
    ) -> CompactionEntry:
        """Record a compaction; `first_kept_entry_id` must be on the current branch."""
        if first_kept_entry_id is not None and not self.is_on_branch(first_kept_entry_id):
            raise EntryNotFoundError(
                f"first kept entry {first_kept_entry_id} is not on the current branch of "
                f"session {self.session_id}"
            )
        entry = CompactionEntry(
            id=self.new_id(),
            parent_id=self.leaf_id,
            timestamp=stamp(self._clock),
            summary=summary,
            first_kept_entry_id=first_kept_entry_id,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            reason=reason,
            details=details or CompactionDetails(),
            split_turn_summary=split_turn_summary,
            model=model,
            usage=usage,
            carried=carried,
            provider=provider,
        )
        stored = self.append(entry)
        assert isinstance(stored, CompactionEntry)
        return stored

    def append_model_change(
        self, provider: str, model: str, thinking: str | None = None
    ) -> ModelChangeEntry:
        entry = ModelChangeEntry(
            self.new_id(), self.leaf_id, stamp(self._clock), provider, model, thinking
        )
        stored = self.append(entry)
        assert isinstance(stored, ModelChangeEntry)
        return stored

    def append_title(self, title: str) -> TitleEntry:
        entry = TitleEntry(self.new_id(), self.leaf_id, stamp(self._clock), title)
        stored = self.append(entry)
        assert isinstance(stored, TitleEntry)
        return stored

    def append_system_prompt(self, text: str) -> SystemPromptEntry:
        entry = SystemPromptEntry(self.new_id(), self.leaf_id, stamp(self._clock), text)
        stored = self.append(entry)
        assert isinstance(stored, SystemPromptEntry)
        return stored

    def append_file_restore(
        self, target_id: str, files: tuple[FileVersion, ...]
    ) -> FileRestoreEntry:
        entry = FileRestoreEntry(self.new_id(), self.leaf_id, stamp(self._clock), target_id, files)
        stored = self.append(entry)
        assert isinstance(stored, FileRestoreEntry)
        return stored

    def append_tool_list(
        self,
        tools: tuple[ToolSpec, ...],
        mcp: tuple[McpToolSource, ...] = (),
        reason: ToolListReason = "start",
    ) -> ToolListEntry:
        entry = ToolListEntry(self.new_id(), self.leaf_id, stamp(self._clock), tools, mcp, reason)
        stored = self.append(entry)
        assert isinstance(stored, ToolListEntry)
        return stored

    def append_pin(
        self, pin_id: str, action: PinAction, kind: PinKind, text: str, by: PinAuthor
    ) -> PinEntry:
        entry = PinEntry(
            self.new_id(), self.leaf_id, stamp(self._clock), pin_id, action, kind, text, by
        )
        stored = self.append(entry)
        assert isinstance(stored, PinEntry)
        return stored

    def append_plan(self, items: tuple[PlanItem, ...]) -> PlanEntry:
        entry = PlanEntry(self.new_id(), self.leaf_id, stamp(self._clock), items)
        stored = self.append(entry)
        assert isinstance(stored, PlanEntry)
        return stored

    def rewind(self, entry_id: str | None, *, summary: str | None = None) -> BranchEntry:
        """Continue from `entry_id` (None: from the very start); nothing is deleted."""
        if entry_id is not None and entry_id not in self._index.position:
            raise EntryNotFoundError(
                f"cannot rewind to {entry_id}: no such entry in session {self.session_id}"
            )
        entry = BranchEntry(self.new_id(), entry_id, stamp(self._clock), entry_id, summary)
        stored = self.append(entry)
        assert isinstance(stored, BranchEntry)
        return stored

    # --- durability and lifetime ----------------------------------------------------------

    def sync(self) -> None:
        """Make every append durable (fsync, unless fsync="never"), refresh the meta, and
        store the index when it has grown by an eighth since it was last stored."""
        with self._write_lock:
            fd = self._require_fd()
            if self._fsync != "never":
                os.fsync(fd)
            count = len(self._index)
            if count - self._stored_count >= max(64, count // 8):
                self._store_index(fd)
        self._notify_sync()

    def close(self) -> None:
        """Sync, store the index, release the lock, close the file. Idempotent."""
        if self._fd is None:
            return
        try:
            self.sync()
            with self._write_lock:
                if self._stored_count != len(self._index) and self._fd is not None:
                    self._store_index(self._fd)
            if self._on_close is not None:
                self._on_close(self)
        finally:
            with self._write_lock:
                fd, self._fd = self._fd, None
                if fd is not None:
                    os.close(fd)
                self._lock.release()
                self._held = {}

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
        state = "closed" if self.closed else f"{len(self._index)} entries"
        return f"<Ledger {self.session_id} {state} at {self._path}>"

    # --- internals ------------------------------------------------------------------------

    def _answer_open_tool_calls(self) -> None:
        """On open: the tool calls the current branch ends with that have no result (the
        process died while they ran) get an aborted one, so the file is a valid conversation
        alone."""
        missing = self.answer_open_tool_calls(ABORTED_BY_EXIT)
        if missing:
            self.load_report = dataclasses.replace(self.load_report, aborted_tool_calls=missing)

    def answer_open_tool_calls(self, text: str) -> tuple[str, ...]:
        """Append an aborted result (`text`) for each tool call the current branch ends with
        that has none, and sync; the ids of those calls. Raises SessionError when the file
        cannot be written (the next call tries again)."""
        answered: set[str] = set()
        calls: tuple[ToolCall, ...] = ()
        for entry_id, _kind in self.walk_back():
            entry = self.get(entry_id)
            if not isinstance(entry, MessageEntry):
                return ()
            message = entry.message
            if isinstance(message, ToolResultMessage):
                answered.add(message.tool_call_id)
                continue
            if isinstance(message, AssistantMessage):
                calls = message.tool_calls
            break
        missing = [call for call in calls if call.id not in answered]
        for call in missing:
            self.append_message(
                ToolResultMessage(call.id, call.name, (TextContent(text),), is_error=True)
            )
        if missing:
            self.sync()
        return tuple(call.id for call in missing)

    def _require_fd(self) -> int:
        if self._fd is None:
            raise SessionError(f"session {self.session_id} is closed; open it again")
        return self._fd

    def _notify_sync(self) -> None:
        if self._on_sync is not None:
            self._on_sync(self)

    def _store_index(self, fd: int) -> None:
        try:
            write_sidecar(self._path, self._index, tail_digest(fd, self._size))
            self._stored_count = len(self._index)
        except OSError as exc:  # the index is a cache: the next open rebuilds it
            log.warning("cannot store the index of %s: %s", self.session_id, exc)


def _end(number: int, offsets: array[int], lengths: array[int]) -> int:
    return offsets[number] + lengths[number]


def stamp(clock: Callable[[], float]) -> str:
    """An entry's timestamp: `clock`'s time (seconds since the epoch) in ISO 8601 UTC."""
    return utc_timestamp(datetime.fromtimestamp(clock(), UTC))


def _after_foreign_bytes(fd: int, size: int) -> bytes:
    """What goes before a new line so that it starts a line of its own: a newline when
    another program appended to the file (`size` is where this ledger's last write ended)
    and left its last line unfinished; nothing otherwise (one fstat per append)."""
    end = os.fstat(fd).st_size
    if end > size and os.pread(fd, 1, end - 1) != b"\n":
        return b"\n"
    return b""


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
    if mode not in get_args(FsyncMode):
        raise SessionError(f"fsync must be 'turn', 'always' or 'never', not {mode!r}")
