"""The entries of an open ledger as a tree, read on demand.

An open ledger does not hold its entries. Its index (index.py: each entry's offset, parent and
kind) says where each line is and what it follows; `EntryTree` reads lines when asked, lines
close together in one pread, and checks each is the entry the index says it is. New entries'
parent is the current leaf (the last entry appended). `projection_entries` walks parents back
from the leaf and stops at the latest compaction's first kept entry; those entries (what the
model sees) stay in memory, with the entries appended since, and everything older is read
when asked for. Opening costs what the model sees, not the length of the history.
"""

from __future__ import annotations

import logging
import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence

from agent_server.errors import EntryNotFoundError, LedgerFormatError, SessionError
from agent_server.session.entries import (
    CompactionEntry,
    Entry,
    UnknownEntry,
    entry_envelope,
    entry_from_json,
)
from agent_server.session.facts import COMPACTION
from agent_server.session.index import LedgerIndex, decode_line, with_parent
from agent_server.session.ledger_file import LedgerFile, collector_paused
from agent_server.stderr_log import shorten

READ_GAP = 64 << 10  # lines closer than this are read in one pread
log = logging.getLogger(__name__)


class EntryTree:
    """The entries of one open ledger (`Ledger.tree`): by id, along a branch, the tail a
    projection needs, read from memory or the file."""

    def __init__(self, index: LedgerIndex, file: LedgerFile) -> None:
        self._index = index
        self._file = file
        # Entries held in memory by position: what the projection needs, and new appends.
        self._held: dict[int, Entry] = {}
        # The positions of the current branch, root to leaf (built on first use).
        self._branch: array[int] | None = None

    @property
    def entries(self) -> Sequence[Entry]:
        """Every entry in file order, read from the file (O(ledger): for tools and tests)."""
        return tuple(self._read(range(len(self._index))))

    def at(self, number: int) -> Entry | None:
        """The entry at a position the index keeps (-1: none), read from its line."""
        if number < 0:
            return None
        [entry] = self._read([number])
        return entry

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
                raise EntryNotFoundError(
                    f"no entry {entry_id} in session {self._index.header.session_id}"
                )
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
            raise EntryNotFoundError(
                f"no entry {leaf_id} in session {self._index.header.session_id}"
            )
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
            fd = self._file.fd
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
                f"the session file {self._file.path} was changed by another program while open "
                f"(the entry at byte {self._index.offsets[number]} is not the one indexed); "
                "close the session and open it again"
            )
        try:
            return entry_from_json(data)
        except (ValueError, LedgerFormatError, RecursionError) as error:
            reason = error.message if isinstance(error, LedgerFormatError) else str(error)
            log.warning(
                "session %s: entry %s cannot be read (%s); kept, not shown",
                self._index.header.session_id,
                expected,
                shorten(reason, 200),
            )
            self._file.report_unreadable(number, raw, shorten(reason, 200))
            return UnknownEntry(raw=dict(data))

    def appended(self, number: int, entry: Entry, *, foreign: bool) -> None:
        """Hold `entry`, just appended at position `number` (after lines another program
        appended, when `foreign`), and extend the current branch with it."""
        self._held[number] = entry
        branch = None if foreign else self._branch
        parents = self._index.parents
        if branch is not None and (
            (branch and parents[number] == branch[-1]) or (not branch and parents[number] < 0)
        ):
            branch.append(number)
        else:
            self._branch = None

    def forget(self) -> None:
        """Drop the entries held in memory (the ledger is closed)."""
        self._held = {}


def _end(number: int, offsets: array[int], lengths: array[int]) -> int:
    return offsets[number] + lengths[number]
