"""The ledger: one session's append-only JSONL file, its tree of entries, and its lock.

A `Ledger` is what the agent holds of an open session, in three parts and the appends:

- `file` (ledger_file.py): the descriptor, opened with O_APPEND and locked; the file format,
  how a damaged file is repaired on open (`load_report`), durability, and the index's sidecar.
  `read_ledger` there parses a whole file without locking it (for display and scans).
- `tree` (tree.py): the entries, read on demand through the index: by id, along a branch,
  and the tail the projection needs (held in memory).
- `facts` (ledger_facts.py): what the index folds from every entry: the title, the model and
  thinking level in force, the system prompt and tool list recorded, the last call, usage.
- appending, here: `append` writes an entry as one line and makes it the leaf; `add` makes a
  new entry of a kind (session/entries.py) after the leaf, with a new id and the clock's
  time; `append_message` a message, under the id its streamed chunks carried; `rewind`
  appends a branch entry whose parent is the rewind target. Nothing is rewritten or deleted.

Tool calls left without a result at the end of the current branch (the process died while
they ran) get an appended "aborted" result on open, so that the file alone is a valid
conversation (append-only: nothing is rewritten); `load_report` says so.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Concatenate, ParamSpec, TypeAlias, TypeVar

from agent_server.errors import EntryNotFoundError, SessionError
from agent_server.llm.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
)
from agent_server.llm.stream import CacheRetention
from agent_server.session.entries import (
    BranchEntry,
    CompactionEntry,
    Entry,
    MessageEntry,
    SessionHeader,
    entry_from_json,
    entry_to_json,
    utc_timestamp,
)
from agent_server.session.facts import facts_of
from agent_server.session.ledger_facts import LedgerFacts
from agent_server.session.ledger_file import FsyncMode, LedgerFile, LoadReport, encode_line
from agent_server.session.tree import EntryTree

ENTRY_ID_BYTES = 4  # 8 hex characters; collisions within a file are retried

ABORTED_BY_EXIT = (
    "No result: agent-server stopped before this tool call finished, so it may or may not "
    "have run. Check its effects before running it again."
)
ABORTED_UNSAVED = (
    "No result: the result of this tool call could not be saved (the session file could not "
    "be written: a full disk?), so it is not known here. The call ran, or may have run: "
    "check its effects before running it again."
)

LedgerHook: TypeAlias = Callable[["Ledger"], None]
Fields = ParamSpec("Fields")
Kind = TypeVar("Kind", bound=Entry)


class Ledger:
    """One open session ledger. Create with `Ledger.create` or `Ledger.open`."""

    def __init__(
        self,
        file: LedgerFile,
        *,
        on_sync: LedgerHook | None,
        on_close: LedgerHook | None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.file = file
        self.tree = EntryTree(file.index, file)
        self.facts = LedgerFacts(file.index, self.tree)
        self._index = file.index
        self._clock = clock  # stamps the entries (the session's: tests move it over pauses)
        self._on_sync = on_sync
        self._on_close = on_close

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
        header = SessionHeader(
            session_id=session_id,
            workspace=workspace,
            created_at=created_at or stamp(clock),
            title=title,
            model=model,
        )
        file = LedgerFile.create(path, header, fsync=fsync)
        ledger = cls(file, on_sync=on_sync, on_close=on_close, clock=clock)
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
        file = LedgerFile.open(path, fsync=fsync, session_id=session_id)
        ledger = cls(file, on_sync=on_sync, on_close=on_close, clock=clock)
        ledger._answer_open_tool_calls()
        return ledger

    # --- identity and state ---------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self.file.path

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
    def entry_count(self) -> int:
        return len(self._index)

    @property
    def load_report(self) -> LoadReport:
        """What opening the file repaired, and entries found unreadable since."""
        return self.file.load_report

    @property
    def closed(self) -> bool:
        return self.file.closed

    # --- appending ------------------------------------------------------------------------

    def append(self, entry: Entry) -> Entry:
        """Write `entry` as one line and make it the leaf; returns the entry as stored.

        The returned entry is the one a reload would give (the line parsed back), so that a
        projection is the same before and after a restart, byte for byte.
        """
        with self.file.appending():
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
            number, foreign = self.file.write(line, facts_of(stored))
            self.tree.appended(number, stored, foreign=foreign)
            return stored

    def add(
        self,
        kind: Callable[Concatenate[str, str | None, str, Fields], Kind],
        /,
        *args: Fields.args,
        **fields: Fields.kwargs,
    ) -> Kind:
        """Append a new entry of `kind` (an entry class of session/entries.py) after the
        leaf, with a new id and `clock`'s time, its own fields given after those; returns it
        as stored. A compaction's first kept entry must be on the current branch."""
        entry = kind(self.new_id(), self.leaf_id, stamp(self._clock), *args, **fields)
        if isinstance(entry, CompactionEntry):
            first_kept = entry.first_kept_entry_id
            if first_kept is not None and not self.tree.is_on_branch(first_kept):
                raise EntryNotFoundError(
                    f"first kept entry {first_kept} is not on the current branch of "
                    f"session {self.session_id}"
                )
        return self._stored(entry)

    def append_message(
        self,
        message: Message,
        *,
        entry_id: str | None = None,
        cache_retention: CacheRetention | None = None,
    ) -> MessageEntry:
        """Append `message` after the leaf, as `entry_id` (default: a new id). An assistant
        answer is recorded under the id its streamed chunks carried, so the editor can tie
        them to the entry, with the cache retention its call used (`facts.last_call`)."""
        entry = MessageEntry(
            entry_id or self.new_id(), self.leaf_id, stamp(self._clock), message, cache_retention
        )
        return self._stored(entry)

    def rewind(self, entry_id: str | None, *, summary: str | None = None) -> BranchEntry:
        """Continue from `entry_id` (None: from the very start); nothing is deleted."""
        if entry_id is not None and entry_id not in self._index.position:
            raise EntryNotFoundError(
                f"cannot rewind to {entry_id}: no such entry in session {self.session_id}"
            )
        return self._stored(BranchEntry(self.new_id(), entry_id, stamp(self._clock), entry_id,
                                        summary))

    def new_id(self) -> str:
        """A fresh entry id, unique in this ledger."""
        while True:
            candidate = secrets.token_hex(ENTRY_ID_BYTES)
            if candidate not in self._index.position:
                return candidate

    def _stored(self, entry: Kind) -> Kind:
        stored = self.append(entry)
        assert isinstance(stored, type(entry))
        return stored

    # --- durability and lifetime ----------------------------------------------------------

    def sync(self) -> None:
        """Make every append durable (fsync, unless fsync="never"), refresh the meta, and
        store the index when it has grown by an eighth since it was last stored."""
        self.file.sync()
        self._notify_sync()

    def close(self) -> None:
        """Sync, store the index, release the lock, close the file. Idempotent."""
        if self.file.closed:
            return
        try:
            self.sync()
            self.file.store_index()
            if self._on_close is not None:
                self._on_close(self)
        finally:
            self.file.release()
            self.tree.forget()

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
        return f"<Ledger {self.session_id} {state} at {self.path}>"

    def _answer_open_tool_calls(self) -> None:
        """On open: the tool calls the current branch ends with that have no result (the
        process died while they ran) get an aborted one, so the file is a valid conversation
        alone."""
        missing = self.answer_open_tool_calls(ABORTED_BY_EXIT)
        if missing:
            self.file.load_report = dataclasses.replace(
                self.file.load_report, aborted_tool_calls=missing
            )

    def answer_open_tool_calls(self, text: str) -> tuple[str, ...]:
        """Append an aborted result (`text`) for each tool call the current branch ends with
        that has none, and sync; the ids of those calls. Raises SessionError when the file
        cannot be written (the next call tries again)."""
        answered: set[str] = set()
        calls: tuple[ToolCall, ...] = ()
        for entry_id, _kind in self.tree.walk_back():
            entry = self.tree.get(entry_id)
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

    def _notify_sync(self) -> None:
        if self._on_sync is not None:
            self._on_sync(self)


def stamp(clock: Callable[[], float]) -> str:
    """An entry's timestamp: `clock`'s time (seconds since the epoch) in ISO 8601 UTC."""
    return utc_timestamp(datetime.fromtimestamp(clock(), UTC))
