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
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

from agent_server.errors import LedgerFormatError
from agent_server.llm.messages import (
    AssistantMessage,
    ToolResultMessage,
    Usage,
    UserMessage,
    usage_from_json,
    usage_to_json,
)
from agent_server.session.entries import (
    BranchEntry,
    CompactionEntry,
    Entry,
    FileRestoreEntry,
    MessageEntry,
    ModelChangeEntry,
    PinEntry,
    PlanEntry,
    SessionHeader,
    SystemPromptEntry,
    TitleEntry,
    ToolListEntry,
    UnknownEntry,
    entry_from_json,
)
from agent_server.session.meta import MetaFold

INDEX_VERSION = 6  # 4: lastCall; 5: entries of unknown types reported; 6: pins and plans
INDEX_SUFFIX = ".index.json"
DIGEST_SPAN = 256

IssueAction: TypeAlias = Literal[
    "skipped", "truncated", "newline_added", "reattached", "unknownType"
]

# One letter per entry kind (messages by role): what paging and walking need without parsing.
USER, ASSISTANT, TOOL_RESULT, COMPACTION, BRANCH, MODEL_CHANGE, TITLE, SYSTEM, TOOLS, UNKNOWN = (
    "U",
    "A",
    "R",
    "C",
    "B",
    "M",
    "T",
    "S",
    "L",
    "X",
)
# A file restore (a sidecar built before this kind existed indexed such lines as UNKNOWN;
# readers that look for restores read those too).
FILE_RESTORE = "F"
# Pins and plans (a sidecar built before these kinds existed indexed them as UNKNOWN).
PIN, PLAN = "P", "N"


_ENTRY_KINDS: dict[type, str] = {
    CompactionEntry: COMPACTION,
    BranchEntry: BRANCH,
    ModelChangeEntry: MODEL_CHANGE,
    TitleEntry: TITLE,
    SystemPromptEntry: SYSTEM,
    FileRestoreEntry: FILE_RESTORE,
    ToolListEntry: TOOLS,
    PinEntry: PIN,
    PlanEntry: PLAN,
}
_MESSAGE_KINDS: dict[type, str] = {
    UserMessage: USER,
    AssistantMessage: ASSISTANT,
    ToolResultMessage: TOOL_RESULT,
}


def kind_of(entry: Entry) -> str:
    if isinstance(entry, MessageEntry):
        return _MESSAGE_KINDS.get(type(entry.message), UNKNOWN)
    return _ENTRY_KINDS.get(type(entry), UNKNOWN)


@dataclass(frozen=True, slots=True)
class LoadIssue:
    """Something wrong with one line of a ledger, and what loading did about it."""

    line_number: int  # 1-based; line 1 is the header
    offset: int  # byte offset of the line's start
    reason: str
    action: IssueAction
    excerpt: str = ""  # the start of the line, for the log


def usage_of(entry: Entry) -> Usage | None:
    """The usage a ledger entry records: a model call's answer, or a compaction's summaries."""
    if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
        return entry.message.usage
    if isinstance(entry, CompactionEntry):
        return entry.usage
    return None


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
        self.usage = Usage()
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

    def add(self, entry: Entry, offset: int, length: int) -> int:
        """Record an entry read or written at `offset` (its line is `length` bytes, newline
        included); returns its position. The caller has checked its id and parent."""
        number = len(self.ids)
        self.ids.append(entry.id)
        self.position[entry.id] = number
        self.offsets.append(offset)
        self.lengths.append(length)
        parent = entry.parent_id
        self.parents.append(self.position[parent] if parent is not None else -1)
        kind = kind_of(entry)
        self.kinds.append(ord(kind))
        self.meta.add(entry)
        usage = usage_of(entry)
        if usage is not None:
            self.usage = self.usage + usage
            self.calls += 1
        if kind == MODEL_CHANGE:
            self.model_change = number
        elif kind == SYSTEM:
            self.system_prompt = number
        elif kind == TOOLS:
            self.tool_list = number
        elif kind == ASSISTANT and isinstance(entry, MessageEntry) and entry.cache_retention:
            self.last_call = number
        return number

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
            "offsets": self.offsets.tolist(),
            "lengths": self.lengths.tolist(),
            "parents": self.parents.tolist(),
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
        index.offsets = array("q", data["offsets"])
        index.lengths = array("q", data["lengths"])
        index.parents = array("q", data["parents"])
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


# --- reading lines ------------------------------------------------------------------------------


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

    `on_entry` sees each entry kept, as parsed from its line.
    """
    lines = data.split(b"\n")  # bytes split: U+2028 and friends inside JSON stay in the line
    tail = lines.pop()  # b"" when `data` ends with a newline
    complete = base + len(data) - len(tail)
    # Not at the end of the file, an unfinished line is one being written: it waits.
    torn = tail if at_end else b""
    body = [*lines, torn] if torn else lines
    offset = base
    missing_newline = False
    line_number = index.line_count
    previous = index.ids[-1] if index.ids else None
    last = len(body) - 1
    for number, raw in enumerate(body):
        line_number += 1
        start = offset
        offset += len(raw) + 1
        is_torn = bool(torn) and number == last
        if not raw.strip():
            continue
        parsed = _parsed(raw, line_number, start, is_torn, index.issues)
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
        entry = _placed(parsed, index, previous, line_number, start, raw)
        if entry is None:
            continue
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
        index.add(entry, start, len(raw) + 1)
        if on_entry is not None:
            on_entry(entry)
        previous = entry.id
    index.size = complete
    index.line_count += len(lines) + (1 if missing_newline else 0)
    return ScanEnd(complete, missing_newline)


def _parsed(
    raw: bytes, line_number: int, start: int, torn: bool, issues: list[LoadIssue]
) -> Entry | None:
    """The entry on one line; None, the problem added to `issues`, when it cannot be read
    (`torn`: the file's unfinished last line, to be cut off)."""
    try:
        return entry_from_json(json.loads(raw))
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
    entry: Entry,
    index: LedgerIndex,
    previous: str | None,
    line_number: int,
    start: int,
    raw: bytes,
) -> Entry | None:
    """`entry` as the index takes it: None for a second entry with its id (skipped);
    attached to `previous`, the entry before it in the file, when its parent was lost."""
    if entry.id in index.position:
        index.issues.append(
            LoadIssue(line_number, start, f"duplicate entry id {entry.id}", "skipped", excerpt(raw))
        )
        return None
    if entry.parent_id is not None and entry.parent_id not in index.position:
        index.issues.append(
            LoadIssue(
                line_number,
                start,
                f"parent {entry.parent_id} is missing (a corrupt line?); "
                f"attached to {previous or 'the start'}",
                "reattached",
                excerpt(raw),
            )
        )
        return with_parent(entry, previous)
    return entry


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
        data = json.loads(index_path_for(path).read_bytes())
        return LedgerIndex.from_json(data, header, header_digest), str(data["tailDigest"])
    except (OSError, ValueError, KeyError, TypeError, LedgerFormatError):
        return None


def write_sidecar(path: Path, index: LedgerIndex, tail: str) -> None:
    """Store `index` beside the ledger at `path` (atomically: temp file, rename)."""
    target = index_path_for(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    payload = json.dumps(index.to_json(tail), ensure_ascii=False, separators=(",", ":"))
    temporary.write_text(payload, "utf-8")
    os.replace(temporary, target)
