"""The file of a session ledger: reading it whole, and the one open ledger's descriptor.

File format: line 1 is the session header, every further line one entry (see entries.py).
Each line is written with a single write() of the complete line, newline included, on a
descriptor opened with O_APPEND (preceded by a newline when another program left the file
ending in an unfinished line); nothing is ever rewritten or deleted. `sync()` fsyncs (the
agent calls it at the end of each turn; `fsync="always"` does it after every append).

Loading tolerates damage without losing what is intact (`index.scan` decides, line by line):
a torn last line is reported and cut off, so that the next append starts on a fresh line; a
last line complete but for its newline is kept and the newline added; a corrupt line
elsewhere is reported, skipped and left in the file; an entry whose parent was lost that way
is attached to the entry before it in the file. What a repair did, and any entry found
unreadable when it is read, is in `LedgerFile.load_report`; `LoadReport.describe()` says it
in words.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import logging
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias, get_args

from agent_server.errors import LedgerFormatError, SessionError, SessionNotFoundError
from agent_server.session.entries import Entry, SessionHeader, header_from_json, header_to_json
from agent_server.session.facts import EntryFacts
from agent_server.session.index import (
    LedgerIndex,
    LoadIssue,
    ScanEnd,
    digest,
    excerpt,
    read_sidecar,
    scan,
    tail_digest,
    write_sidecar,
)
from agent_server.session.lock import SessionLock

FsyncMode: TypeAlias = Literal["turn", "always", "never"]

READ_BLOCK = 1 << 20  # a rebuild reads the file in blocks of this size
log = logging.getLogger(__name__)


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



class LedgerFile:
    """The file of one open ledger: its descriptor (O_APPEND), its lock, its index, what
    loading it found, and how appends are written, made durable and indexed. Made by
    `create` or `open`; a `Ledger` holds one."""

    def __init__(
        self,
        path: Path,
        index: LedgerIndex,
        fd: int,
        lock: SessionLock,
        *,
        fsync: FsyncMode,
        report: LoadReport | None = None,
    ) -> None:
        self.path = path
        self.index = index
        self.load_report = report or LoadReport(tuple(index.issues), len(index))
        self._fd: int | None = fd
        self._lock = lock
        self._fsync: FsyncMode = fsync
        self.size = index.size  # where this ledger's last write ended
        self._write_lock = threading.Lock()  # held by each append, sync and close
        self._stored_count = -1  # entries the sidecar on disk covers (-1: unknown)

    @classmethod
    def create(cls, path: Path, header: SessionHeader, *, fsync: FsyncMode) -> LedgerFile:
        """A new ledger file at `path` (which must not exist), locked, `header` written."""
        _check_fsync(fsync)
        path.parent.mkdir(parents=True, exist_ok=True)
        line = encode_line(header_to_json(header))
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError as exc:
            raise SessionError(f"a session file already exists at {path}; open it instead") from exc
        except OSError as exc:
            raise SessionError(f"cannot create the session file {path}: {exc.strerror}") from exc
        try:
            lock = SessionLock.acquire(fd, path, header.session_id)
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
            return cls(path, index, fd, lock, fsync=fsync)
        except BaseException:
            lock.release()
            os.close(fd)
            raise

    @classmethod
    def open(cls, path: Path, *, fsync: FsyncMode, session_id: str | None) -> LedgerFile:
        """Open the ledger file at `path` through its index, lock it, and repair a torn last
        line. `session_id` (default: the file's stem) names the session in a lock refusal."""
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
            opened = cls(path, index, fd, lock, fsync=fsync, report=report)
        except BaseException:
            lock.release()
            os.close(fd)
            raise
        # Repairs are done once; what is left in the file is reported from the sidecar.
        index.issues = [i for i in index.issues if i.action in ("skipped", "reattached")]
        return opened

    @property
    def fd(self) -> int:
        """The open descriptor (SessionError once the ledger is closed)."""
        if self._fd is None:
            raise SessionError(f"session {self.index.header.session_id} is closed; open it again")
        return self._fd

    @property
    def closed(self) -> bool:
        return self._fd is None

    def mtime_ns(self) -> int:
        return os.fstat(self.fd).st_mtime_ns

    @contextlib.contextmanager
    def appending(self) -> Iterator[int]:
        """Hold the write lock of an open file (SessionError when it is closed) for one
        append: the checks against the index, then `write`."""
        with self._write_lock:
            yield self.fd

    def write(self, line: bytes, facts: EntryFacts) -> tuple[int, bool]:
        """Append `line` (one entry's, newline included) and index it as `facts`, within
        `appending`: its position, and whether lines another program appended were indexed
        before it."""
        fd, index = self.fd, self.index
        try:
            _write_all(fd, _after_foreign_bytes(fd, self.size) + line)
            end = os.lseek(fd, 0, os.SEEK_CUR)  # O_APPEND: the end of what was written
            if self._fsync == "always":
                os.fsync(fd)
        except OSError as exc:
            # Leave no partial line behind for the next append to glue onto.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, self.size)
            raise SessionError(
                f"cannot write to the session file {self.path}: {exc.strerror}; "
                "the entry was not saved"
            ) from exc
        offset = end - len(line)
        foreign = offset > self.size
        if foreign:  # another program appended: index its lines first
            scan(os.pread(fd, offset - self.size, self.size), self.size, index, at_end=False)
        number = index.add(facts, offset, len(line))
        index.size = self.size = end
        index.line_count += 1
        return number, foreign

    def sync(self) -> None:
        """Make every append durable (fsync, unless fsync="never"), and store the index when
        it has grown by an eighth since it was last stored."""
        with self._write_lock:
            fd = self.fd
            if self._fsync != "never":
                os.fsync(fd)
            count = len(self.index)
            if count - self._stored_count >= max(64, count // 8):
                self._store_index(fd)

    def store_index(self) -> None:
        """Store the index unless the sidecar on disk covers it already (before a close)."""
        with self._write_lock:
            if self._stored_count != len(self.index) and self._fd is not None:
                self._store_index(self._fd)

    def release(self) -> None:
        """Close the file and release its lock."""
        with self._write_lock:
            fd, self._fd = self._fd, None
            if fd is not None:
                os.close(fd)
            self._lock.release()

    def report_unreadable(self, number: int, raw: bytes, reason: str) -> None:
        """Add the entry at position `number`, found unreadable when read (not when indexed),
        to the load report, so that the editor is told, as of every other line loading
        cannot use."""
        offset = self.index.offsets[number]
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
        fd = self.fd
        newlines, position = 0, 0
        while position < offset:
            block = os.pread(fd, min(READ_BLOCK, offset - position), position)
            if not block:
                break
            newlines += block.count(b"\n")
            position += len(block)
        return newlines + 1

    def _store_index(self, fd: int) -> None:
        try:
            write_sidecar(self.path, self.index, tail_digest(fd, self.size))
            self._stored_count = len(self.index)
        except OSError as exc:  # the index is a cache: the next open rebuilds it
            log.warning("cannot store the index of %s: %s", self.index.header.session_id, exc)


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
