"""@-mentions: workspace files and folders a prompt names, attached for the model to see.

A prompt's text may name workspace paths as `@src/app.py`, `@src/` or `@"docs/my notes.md"`
(an `@` at the start or after a space), and lines of a file as `@src/app.py#L10-20` (or `#L10`;
an editor's "add the selection" writes these). Each one that names an existing file or folder
inside the workspace is attached to the prompt: a file as the read tool shows it (numbered
lines, at most 2000 lines or 50 KB; only the lines named, if any; an image as an image), a
folder as the ls tool lists it. Attaching
through the tools themselves keeps one set of rules for what the model is shown (the workspace
rule, limits, binary files, secrets scrubbed).

The attachments become the first content blocks of the prompt's user message, before the
typed text (the question after the material, as the providers advise). That message is
appended at the end of the conversation like any prompt and recorded in the ledger as sent,
so later requests repeat it byte for byte: attaching never touches the system prompt or
anything before it, and a file changed later does not change the cached prefix (the agent is
told of the change by the usual external-edit note). `@word` that names nothing stays text.

`complete` gives the completions an editor offers while the user types a mention.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_server.agent.tools import Tool, ToolContext, run_tool
from agent_server.agent.tools.paths import display_path, resolve_in_workspace
from agent_server.agent.tools.walk import walk_files
from agent_server.errors import ToolError
from agent_server.llm.messages import (
    Attachment,
    AttachmentKind,
    ImageContent,
    TextContent,
    UserContent,
)

MAX_ATTACHMENTS = 10  # per prompt; more are named in a notice and not attached
MAX_COMPLETIONS = 50
MAX_WALKED = 20_000  # entries looked at for completions (a huge tree answers with what it saw)
# `@` at the start or after whitespace, then a quoted path or a run of non-space characters.
MENTION = re.compile(r'(?<!\S)@(?:"([^"\n]+)"|([^\s"]+))')
_TRAILING = ".,;:!?)]}'"
# Lines of a file: `#L10`, `#L10-20` (or `#L10-L20`, as GitHub writes them) after its path.
LINES = re.compile(r"#L(\d+)(?:-L?(\d+))?$")


@dataclass(frozen=True, slots=True)
class Mention:
    path: str  # as written, quotes removed
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Attached:
    """What the mentions of a prompt attached: the blocks (in order, before the typed text),
    one `Attachment` per mention attached, and what could not be attached, in words."""

    blocks: tuple[UserContent, ...] = ()
    attachments: tuple[Attachment, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(a.path for a in self.attachments)


def find_mentions(text: str) -> list[Mention]:
    """The `@path` mentions in `text`, in order (whether they name anything is not checked)."""
    return [
        Mention(match.group(1) or match.group(2), match.start(), match.end())
        for match in MENTION.finditer(text)
    ]


def mentioned_paths(content: Iterable[UserContent]) -> list[str]:
    """Every mention in the text blocks of `content`, once each, in order."""
    seen: dict[str, None] = {}
    for block in content:
        if isinstance(block, TextContent):
            for mention in find_mentions(block.text):
                seen.setdefault(mention.path, None)
    return list(seen)


def existing_path(workspace: Path, written: str) -> Path | None:
    """The workspace file or folder a mention names, or None. Trailing punctuation ("see
    @README.md.") is dropped when the path with it does not exist. Raises ToolError for a
    path outside the workspace."""
    for candidate in (written, written.rstrip(_TRAILING)):
        if not candidate:
            continue
        path = resolve_in_workspace(workspace, candidate)
        if path.exists():
            return path
    return None


def named_lines(workspace: Path, written: str) -> tuple[Path | None, tuple[int, int] | None]:
    """The file or folder a mention names, and the lines it names (first, last) when it ends
    with `#L...` and the path before that exists (a file named with `#L` in it wins).
    Raises ToolError for a path outside the workspace."""
    whole = existing_path(workspace, written)
    match = LINES.search(written.rstrip(_TRAILING))
    if whole is not None or match is None:
        return whole, None
    first, last = int(match.group(1)), int(match.group(2) or match.group(1))
    if first < 1 or last < first:
        return None, None
    return existing_path(workspace, written[: match.start()]), (first, last)


async def attach_mentions(
    content: Sequence[UserContent],
    *,
    tools: Mapping[str, Tool],
    context: ToolContext,
) -> Attached:
    """Attach what the mentions in `content` name (see the module docstring)."""
    blocks: list[UserContent] = []
    attachments: list[Attachment] = []
    problems: list[str] = []
    done: set[tuple[Path, tuple[int, int] | None]] = set()
    for written in mentioned_paths(content):
        try:
            path, lines = named_lines(context.workspace, written)
        except ToolError as refused:
            problems.append(f"@{written} was not attached: {refused.message}")
            continue
        if path is None or (path, lines) in done:
            continue
        if len(attachments) >= MAX_ATTACHMENTS:
            problems.append(
                f"@{written} was not attached: at most {MAX_ATTACHMENTS} files or folders can "
                "be attached to one prompt."
            )
            continue
        done.add((path, lines))
        shown = display_path(context.workspace, path)
        if path.is_dir():
            shown = shown.rstrip("/") + "/"
            result = await run_tool(tools["ls"], {"path": shown}, context)
        else:
            span = {} if lines is None else {"offset": lines[0], "limit": lines[1] - lines[0] + 1}
            result = await run_tool(tools["read"], {"path": shown, **span}, context)
        if result.is_error:
            problems.append(f"@{written} was not attached: {result.text}")
            continue
        attachment, attached_blocks = _wrap(shown, path.is_dir(), result.content, result.details)
        attachments.append(attachment)
        blocks.extend(attached_blocks)
    return Attached(tuple(blocks), tuple(attachments), tuple(problems))


def _wrap(
    shown: str,
    is_dir: bool,
    content: Sequence[TextContent | ImageContent],
    details: Mapping[str, object] | None,
) -> tuple[Attachment, list[UserContent]]:
    """The blocks the model sees for one attachment, and its record."""
    details = details or {}
    where = json.dumps(shown, ensure_ascii=False)
    images = [block for block in content if isinstance(block, ImageContent)]
    if images:
        head = TextContent(f'<attachment path={where} kind="image"/>')
        size = details.get("bytes")
        detail = f"{images[0].mime_type}, {size} bytes" if isinstance(size, int) else ""
        return Attachment(shown, "image", 1 + len(images), detail), [head, *images]
    text = "".join(block.text for block in content if isinstance(block, TextContent))
    kind: AttachmentKind = "directory" if is_dir else "file"
    block = TextContent(f"<attachment path={where} kind={json.dumps(kind)}>\n{text}\n</attachment>")
    return Attachment(shown, kind, 1, _detail(kind, details)), [block]


def _detail(kind: str, details: Mapping[str, object]) -> str:
    if kind == "directory":
        entries = details.get("entries")
        return f"{entries} entries" if isinstance(entries, int) else ""
    total, start, end = details.get("totalLines"), details.get("startLine"), details.get("endLine")
    if not isinstance(total, int):
        return ""
    start = start if isinstance(start, int) else 1
    if isinstance(end, int) and (start > 1 or end < total):
        return f"lines {start}-{end} of {total}"
    return f"{total} line{'' if total == 1 else 's'}"


# --- completion -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Completion:
    path: str  # workspace-relative, POSIX; a folder ends with "/"
    kind: str  # "file" or "directory"

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "kind": self.kind}


def complete(workspace: Path, query: str, limit: int = MAX_COMPLETIONS) -> list[Completion]:
    """Workspace files and folders for a mention being typed (`query`: what follows the `@`),
    best first: paths that start with it, then names that do, then paths that contain it,
    then paths that hold its characters in order; within each, shallower first, then
    shorter, then by name.
    The directories the tools never search (.git, node_modules, ...) are left out. The
    workspace's entries come from its index (`_entries`), not a walk per keystroke."""
    wanted = query.strip().strip('"').lower()
    ranked: list[tuple[tuple[int, int, int, str], Completion]] = []
    for shown, lowered, depth, is_dir in _entries(workspace.resolve()):
        rank = _rank(lowered, wanted)
        if rank is None:
            continue
        # Shallower first; for a query, shorter (closer) first; then by name.
        key = (rank, depth, len(shown) if wanted else 0, shown)
        ranked.append((key, Completion(shown, "directory" if is_dir else "file")))
    ranked.sort(key=lambda item: item[0])
    return [completion for _key, completion in ranked[:limit]]


# A workspace's entries for completion: (as shown, lower-cased, depth, is a folder).
_Entry = tuple[str, str, int, bool]
# Each workspace's index: when it was built (time.monotonic) and its entries. A keystroke
# takes the index as it is; one older than INDEX_FRESH seconds is rebuilt on a thread of its
# own meanwhile (a file made a moment ago shows from the next keystroke on). A walk per
# keystroke took 200 ms on a 20,000-file tree.
INDEX_FRESH = 2.0
_INDEXES: dict[Path, tuple[float, tuple[_Entry, ...]]] = {}
_REBUILDING: set[Path] = set()
_INDEX_LOCK = threading.Lock()


def _entries(root: Path) -> tuple[_Entry, ...]:
    with _INDEX_LOCK:
        index = _INDEXES.get(root)
        stale = index is not None and time.monotonic() - index[0] > INDEX_FRESH
        if stale and root not in _REBUILDING:
            _REBUILDING.add(root)
            threading.Thread(target=_rebuild, args=(root,), daemon=True).start()
    if index is None:
        return _build(root)
    return index[1]


def _rebuild(root: Path) -> None:
    try:
        _build(root)
    finally:
        with _INDEX_LOCK:
            _REBUILDING.discard(root)


def _build(root: Path) -> tuple[_Entry, ...]:
    built = time.monotonic()
    entries: list[_Entry] = []
    for number, entry in enumerate(walk_files(root, include_dirs=True)):
        if number >= MAX_WALKED:
            break
        relative = entry.relative_to(root).as_posix()
        is_dir = entry.is_dir()
        shown = relative + "/" if is_dir else relative
        entries.append((shown, shown.lower(), relative.count("/"), is_dir))
    index = tuple(entries)
    with _INDEX_LOCK:
        if len(_INDEXES) >= 64 and root not in _INDEXES:
            _INDEXES.clear()
        _INDEXES[root] = (built, index)
    return index


def _rank(path: str, wanted: str) -> int | None:
    if not wanted or path.startswith(wanted):
        return 0
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if name.startswith(wanted):
        return 1
    if wanted in path:
        return 2
    return 3 if _in_order(wanted, path) else None


def _in_order(wanted: str, text: str) -> bool:
    position = 0
    for char in wanted:
        position = text.find(char, position) + 1
        if position == 0:
            return False
    return True
