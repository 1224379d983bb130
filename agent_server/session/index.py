"""The ledger's index: where each entry's line is, what it follows, and what the whole file sums
to, so that opening a session reads only the lines it needs.

The JSONL file stays the only truth. The index is derived from it line by line (`scan`, the
one place that decides what a line is and what to do with a damaged one) and kept in a sidecar,
`<id>.index.json`, which says which state of the file it describes: the size up to its last
complete line, a digest of the bytes just before that size, and a digest of the header line.
On open the sidecar is used when it matches, extended when the file has only grown since it
was written (another process appended, or the server stopped before writing it), and rebuilt
by a scan when it is missing, unreadable or does not match.

Per entry the index holds an id, the byte offset and length of its line, its parent (as a
position) and a one-letter kind; that is about 60 bytes an entry, held in arrays and one dict
of plain strings and ints (which the cyclic garbage collector never scans). Besides, the folds
that need the whole file: the session list's meta (title, model, last update, count), the
usage summed over every model call, and where the latest model change and system prompt are,
and the latest model answer that recorded its cache retention (when the cache was last used).

A rebuild reads the file once, in blocks, and builds no entries: it folds what the index keeps
of each line (`EntryFacts`) straight from the line's JSON. A message line is checked as far as
the index needs (its envelope, a `message` object with a known role and a content list); its
content blocks are checked when the entry is read (`EntryTree.read`), where one this version
cannot read is kept in the tree and not shown, as an entry of an unknown type is. The sidecar
keeps the per-entry arrays as base64 of their bytes, so that reading it builds no int objects.
"""

from __future__ import annotations

import base64
import codecs
import dataclasses
import hashlib
import json
import os
import sys
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

import jiter
import msgspec

from agent_server.errors import LedgerFormatError
from agent_server.llm.messages import Cost, Usage, usage_from_json, usage_to_json
from agent_server.session.entries import (
    Entry,
    SessionHeader,
    UnknownEntry,
    entry_from_json,
)
from agent_server.session.facts import (
    ASSISTANT,
    MODEL_CHANGE,
    SYSTEM,
    TOOLS,
    EntryFacts,
    facts_of,
    line_facts,
    message_facts,
)
from agent_server.session.meta import MetaFold
from agent_server.whole_file import write_whole

# 4: lastCall; 5: entries of unknown types reported; 6: the arrays as base64 of their bytes;
# 7: pins and plans (a sidecar built before indexed them as unknown)
INDEX_VERSION = 7
INDEX_SUFFIX = ".index.json"
DIGEST_SPAN = 256
ASCII_SPAN = 16 << 10  # `_not_utf8` looks for bytes above 127 this many at a time

IssueAction: TypeAlias = Literal[
    "skipped", "truncated", "newline_added", "reattached", "unknownType"
]

@dataclass(frozen=True, slots=True)
class LoadIssue:
    """Something wrong with one line of a ledger, and what loading did about it."""

    line_number: int  # 1-based; line 1 is the header
    offset: int  # byte offset of the line's start
    reason: str
    action: IssueAction
    excerpt: str = ""  # the start of the line, for the log


class LedgerIndex:
    """The index of one ledger file (see the module docstring). Positions are 0-based, in
    file order; an entry's position never changes."""

    def __init__(self, header: SessionHeader, header_digest: str) -> None:
        self.header = header
        self.header_digest = header_digest
        self.ids: list[str] = []
        self.position: dict[str, int] = {}
        self.offsets = array("q")
        self.lengths = array("q")
        self.parents = array("q")  # -1: no parent
        self.kinds = bytearray()
        self.meta = MetaFold.start(header)
        # The usage of every call, summed as plain numbers (input, output, cache read,
        # cache write, then the four costs): an add makes no objects.
        self._sums: list[float] = [0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0]
        self.calls = 0
        self.model_change = -1  # position of the latest model change entry, -1: none
        self.system_prompt = -1
        self.tool_list = -1  # position of the latest tool list entry, -1: none
        # Position of the latest model answer that recorded its cache retention, -1: none.
        self.last_call = -1
        self.issues: list[LoadIssue] = []
        self.size = 0  # bytes covered: up to the end of the last complete line
        self.line_count = 1  # lines covered, the header included

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, facts: EntryFacts, offset: int, length: int) -> int:
        """Record an entry read or written at `offset` (its line is `length` bytes, newline
        included); returns its position. The caller has checked its id and parent."""
        number = len(self.ids)
        entry_id = facts.id
        self.ids.append(entry_id)
        self.position[entry_id] = number
        self.offsets.append(offset)
        self.lengths.append(length)
        parent = facts.parent_id
        self.parents.append(self.position[parent] if parent is not None else -1)
        kind = facts.kind
        self.kinds.append(ord(kind))
        self.meta.add(facts)
        usage = facts.usage
        if usage is not None:
            sums, cost = self._sums, usage.cost
            sums[0] += usage.input
            sums[1] += usage.output
            sums[2] += usage.cache_read
            sums[3] += usage.cache_write
            sums[4] += cost.input
            sums[5] += cost.output
            sums[6] += cost.cache_read
            sums[7] += cost.cache_write
            self.calls += 1
        if kind == MODEL_CHANGE:
            self.model_change = number
        elif kind == SYSTEM:
            self.system_prompt = number
        elif kind == TOOLS:
            self.tool_list = number
        elif kind == ASSISTANT and facts.retained:
            self.last_call = number
        return number

    @property
    def usage(self) -> Usage:
        """The usage of every model call the file records, summed."""
        sums = self._sums
        return Usage(
            int(sums[0]),
            int(sums[1]),
            int(sums[2]),
            int(sums[3]),
            Cost(sums[4], sums[5], sums[6], sums[7]),
        )

    @usage.setter
    def usage(self, usage: Usage) -> None:
        cost = usage.cost
        self._sums = [
            usage.input,
            usage.output,
            usage.cache_read,
            usage.cache_write,
            cost.input,
            cost.output,
            cost.cache_read,
            cost.cache_write,
        ]

    def kind(self, number: int) -> str:
        return chr(self.kinds[number])

    def walk(self, number: int) -> Iterator[int]:
        """Positions from `number` back to the root, following parents."""
        parents = self.parents
        while number >= 0:
            yield number
            number = parents[number]

    # --- the sidecar ----------------------------------------------------------------------

    def to_json(self, tail_digest: str) -> dict[str, Any]:
        return {
            "version": INDEX_VERSION,
            "sessionId": self.header.session_id,
            "sizeBytes": self.size,
            "lineCount": self.line_count,
            "tailDigest": tail_digest,
            "headerDigest": self.header_digest,
            "meta": {
                "title": self.meta.title,
                "model": self.meta.model,
                "updatedAt": self.meta.updated_at,
                "firstPrompt": self.meta.first_prompt,
                "promptCount": self.meta.prompt_count,
            },
            "usage": usage_to_json(self.usage),
            "calls": self.calls,
            "modelChange": self.model_change,
            "systemPrompt": self.system_prompt,
            "toolList": self.tool_list,
            "lastCall": self.last_call,
            "issues": [
                {
                    "line": issue.line_number,
                    "offset": issue.offset,
                    "reason": issue.reason,
                    "action": issue.action,
                    "excerpt": issue.excerpt,
                }
                for issue in self.issues
            ],
            "ids": self.ids,
            "offsets": _packed(self.offsets),
            "lengths": _packed(self.lengths),
            "parents": _packed(self.parents),
            "kinds": self.kinds.decode("ascii"),
        }

    @classmethod
    def from_json(cls, data: Any, header: SessionHeader, header_digest: str) -> LedgerIndex:
        """The index a sidecar holds; ValueError (or KeyError/TypeError) when it is not one
        this version wrote for this header."""
        if not isinstance(data, dict) or data.get("version") != INDEX_VERSION:
            raise ValueError("not an index of this version")
        if data["headerDigest"] != header_digest or data["sessionId"] != header.session_id:
            raise ValueError("the index belongs to another header")
        index = cls(header, header_digest)
        ids = data["ids"]
        count = len(ids)
        if not all(isinstance(i, str) for i in ids):
            raise ValueError("ids must be strings")
        index.ids = ids
        index.position = {entry_id: number for number, entry_id in enumerate(ids)}
        index.offsets = _unpacked(data["offsets"])
        index.lengths = _unpacked(data["lengths"])
        index.parents = _unpacked(data["parents"])
        index.kinds = bytearray(data["kinds"], "ascii")
        sizes = {len(index.offsets), len(index.lengths), len(index.parents), len(index.kinds)}
        if len(index.position) != count or sizes != {count}:
            raise ValueError("the index's arrays disagree")
        if count and not all(-1 <= p < n for n, p in enumerate(index.parents)):
            raise ValueError("a parent follows its child")
        meta = data["meta"]
        index.meta = MetaFold(
            meta["title"],
            meta["model"],
            str(meta["updatedAt"]),
            count,
            meta["firstPrompt"],
            int(meta["promptCount"]),
        )
        index.usage = usage_from_json(data["usage"])
        index.calls = int(data["calls"])
        index.model_change = int(data["modelChange"])
        index.system_prompt = int(data["systemPrompt"])
        index.tool_list = int(data["toolList"])
        index.last_call = int(data["lastCall"])
        index.issues = [
            LoadIssue(int(i["line"]), int(i["offset"]), str(i["reason"]), i["action"], i["excerpt"])
            for i in data["issues"]
        ]
        index.size = int(data["sizeBytes"])
        index.line_count = int(data["lineCount"])
        return index


def _packed(values: array[int]) -> str:
    """An array of 64-bit ints as base64 of its bytes, little-endian."""
    if sys.byteorder != "little":
        values = array("q", values)
        values.byteswap()
    return base64.b64encode(values.tobytes()).decode("ascii")


def _unpacked(text: object) -> array[int]:
    if not isinstance(text, str):
        raise ValueError("an index array must be a base64 string")
    values = array("q")
    values.frombytes(base64.b64decode(text, validate=True))
    if sys.byteorder != "little":
        values.byteswap()
    return values


# --- reading lines ------------------------------------------------------------------------------


def decode_line(raw: bytes) -> Any:
    """One ledger line's JSON. jiter first (twice as fast on the long strings of tool
    output); whatever it refuses is given to `json.loads`, whose verdict (and error) counts."""
    try:
        return jiter.from_json(raw)
    except ValueError:
        return json.loads(raw)


@dataclass(frozen=True, slots=True)
class ScanEnd:
    """Where a scan stopped: the end of the last complete line, and what lies after it."""

    complete_size: int  # bytes up to the end of the last complete line (where a repair cuts)
    missing_newline: bool  # the bytes after it are a whole entry lacking only its newline


def scan(
    data: bytes,
    base: int,
    index: LedgerIndex,
    *,
    at_end: bool = True,
    on_entry: Callable[[Entry], None] | None = None,
    fast: bool = True,
) -> ScanEnd:
    """Fold the lines of `data` (which starts at byte `base` of the file, at a line start,
    right after what `index` covers) into `index`, entry by entry; the one place that decides
    what a damaged line costs:

    - a torn last line (`at_end`: `data` runs to the end of the file) is reported
      (`truncated`) and left out of the covered size, so that a repair cuts it off; one that is
      a whole entry lacking only its newline is kept (`newline_added`);
    - a corrupt line elsewhere (bad JSON or UTF-8, a malformed entry, a duplicate id) is
      reported (`skipped`) and skipped, and left in the file;
    - an entry whose parent was lost that way is attached to the entry before it in the file
      (`reattached`), which is where an append-only writer found it.

    `on_entry` sees each entry kept, as parsed from its line. Without it, the message lines
    that `line_facts` takes are read without building their content (`fast`; False: every
    line decoded in full, the reference the fast read is tested against).
    """
    cut = data.rfind(b"\n") + 1  # bytes, not text: U+2028 and friends stay in their line
    complete = base + cut
    # Not at the end of the file, an unfinished line is one being written: it waits.
    stop = len(data) if at_end else cut
    view = memoryview(data)
    fast = fast and on_entry is None
    bad = _not_utf8(data) if fast else set()
    position = index.position
    missing_newline = False
    line_number = index.line_count
    lines = 0
    previous = index.ids[-1] if index.ids else None
    begin = 0
    while begin < stop:
        end = data.find(b"\n", begin)
        is_torn = end < 0
        end = stop if is_torn else end
        line_number += 1
        lines += not is_torn
        start = base + begin
        if fast and not is_torn and begin not in bad:
            # Most lines are read without building their content; what `line_facts` or the
            # checks here leave is decoded in full below.
            facts = line_facts(view[begin:end])
            if (
                facts is not None
                and facts.id not in position
                and (facts.parent_id is None or facts.parent_id in position)
            ):
                index.add(facts, start, end - begin + 1)
                previous = facts.id
                begin = end + 1
                continue
        raw = data[begin:end]
        begin = end + 1
        if not raw or raw.isspace():
            continue
        parsed = _parsed(raw, line_number, start, is_torn, index.issues, on_entry is not None)
        if parsed is None:
            continue
        if is_torn:
            missing_newline = True
            complete = base + len(data)
            index.issues.append(
                LoadIssue(
                    line_number,
                    start,
                    "the last line is complete but lacks its newline",
                    "newline_added",
                    excerpt(raw),
                )
            )
        placed = _placed(*parsed, index, previous, line_number, start, raw)
        if placed is None:
            continue
        facts, entry = placed
        if isinstance(entry, UnknownEntry):
            index.issues.append(
                LoadIssue(
                    line_number,
                    start,
                    f"an entry of type {entry.type[:40]!r}, which this version does not "
                    "know (written by a newer agent-server?); kept in the file and the tree, "
                    "not shown",
                    "unknownType",
                    excerpt(raw),
                )
            )
        index.add(facts, start, len(raw) + 1)
        if on_entry is not None and entry is not None:
            on_entry(entry)
        previous = facts.id
    index.size = complete
    index.line_count += lines + (1 if missing_newline else 0)
    return ScanEnd(complete, missing_newline)


def _not_utf8(data: bytes) -> set[int]:
    """Where the lines of `data` that are not valid UTF-8 start (`line_facts` does not check
    the text it skips): the ASCII decoder (the fastest scan the standard library has) finds
    each byte above 127, and the line that holds it is decoded as UTF-8."""
    bad: set[int] = set()
    if data.isascii():
        return bad
    view = memoryview(data)
    position = 0
    while position < len(data):
        try:
            codecs.ascii_decode(view[position : position + ASCII_SPAN])
        except UnicodeDecodeError as error:
            high = position + error.start
        else:
            position += ASCII_SPAN
            continue
        begin = data.rfind(b"\n", 0, high) + 1
        end = data.find(b"\n", high)
        position = len(data) if end < 0 else end
        try:
            codecs.utf_8_decode(view[begin:position], "strict", True)
        except UnicodeDecodeError:
            bad.add(begin)
    return bad


Parsed: TypeAlias = tuple[EntryFacts, Entry | None]


def _parsed(
    raw: bytes,
    line_number: int,
    start: int,
    torn: bool,
    issues: list[LoadIssue],
    entries: bool,
) -> Parsed | None:
    """What the index keeps of one line, and its entry (`entries`: always; else only when
    it is not a message, see `message_facts`); None, the problem added to `issues`, when it
    cannot be read (`torn`: the file's unfinished last line, to be cut off)."""
    try:
        data = decode_line(raw)
        if not entries and isinstance(data, dict) and data.get("type") == "message":
            return message_facts(data), None
        entry = entry_from_json(data)
        return facts_of(entry), entry
    except (ValueError, LedgerFormatError, RecursionError) as exc:
        if isinstance(exc, LedgerFormatError):
            reason = exc.message
        elif isinstance(exc, UnicodeDecodeError):
            reason = "not valid UTF-8"
        else:
            reason = "not valid JSON"
    if torn:
        issues.append(
            LoadIssue(
                line_number,
                start,
                f"incomplete last line ({reason}); the server probably stopped while writing it",
                "truncated",
                excerpt(raw),
            )
        )
    else:
        issues.append(LoadIssue(line_number, start, reason, "skipped", excerpt(raw)))
    return None


def _placed(
    facts: EntryFacts,
    entry: Entry | None,
    index: LedgerIndex,
    previous: str | None,
    line_number: int,
    start: int,
    raw: bytes,
) -> Parsed | None:
    """The entry as the index takes it: None for a second entry with its id (skipped);
    attached to `previous`, the entry before it in the file, when its parent was lost."""
    if facts.id in index.position:
        index.issues.append(
            LoadIssue(line_number, start, f"duplicate entry id {facts.id}", "skipped", excerpt(raw))
        )
        return None
    if facts.parent_id is not None and facts.parent_id not in index.position:
        index.issues.append(
            LoadIssue(
                line_number,
                start,
                f"parent {facts.parent_id} is missing (a corrupt line?); "
                f"attached to {previous or 'the start'}",
                "reattached",
                excerpt(raw),
            )
        )
        facts = msgspec.structs.replace(facts, parent_id=previous)
        return facts, with_parent(entry, previous) if entry is not None else None
    return facts, entry


def with_parent(entry: Entry, parent_id: str | None) -> Entry:
    if isinstance(entry, UnknownEntry):
        return UnknownEntry({**entry.raw, "parentId": parent_id})
    return dataclasses.replace(entry, parent_id=parent_id)


def excerpt(raw: bytes, limit: int = 120) -> str:
    text = raw[: limit * 4].decode("utf-8", errors="replace")
    return text if len(text) <= limit else text[:limit] + "..."


# --- the sidecar on disk ------------------------------------------------------------------------


def index_path_for(ledger_path: Path) -> Path:
    name = ledger_path.name
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return ledger_path.with_name(stem + INDEX_SUFFIX)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def tail_digest(fd: int, size: int) -> str:
    """The digest of the `DIGEST_SPAN` bytes before `size` in the file open on `fd`."""
    begin = max(0, size - DIGEST_SPAN)
    return digest(os.pread(fd, size - begin, begin))


def read_sidecar(
    path: Path, header: SessionHeader, header_digest: str
) -> tuple[LedgerIndex, str] | None:
    """The index stored beside the ledger at `path` and the tail digest it recorded, or None
    when there is none this version can use for this header."""
    try:
        data = decode_line(index_path_for(path).read_bytes())
        return LedgerIndex.from_json(data, header, header_digest), str(data["tailDigest"])
    except (OSError, ValueError, KeyError, TypeError, LedgerFormatError):
        return None


def write_sidecar(path: Path, index: LedgerIndex, tail: str) -> None:
    """Store `index` beside the ledger at `path` (atomically: temp file, rename)."""
    target = index_path_for(path)
    payload = json.dumps(index.to_json(tail), ensure_ascii=False, separators=(",", ":"))
    write_whole(target, payload.encode())
