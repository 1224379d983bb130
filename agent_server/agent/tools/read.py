"""read: a text file's lines as they are, a page at a time; images as image content.

Lines come back bare, without line numbers: the edit tool matches exact text, so a number
prefix is only something to strip (and a source of edits that include it), and it costs
about 3 tokens a line, every request the result stays in the context. A page that is not the
whole file says which lines it shows, so a line can still be located and cited (grep gives
numbers for matches). A re-read of lines that are unchanged since a read the model still has
in its current context is answered by a short note instead of the same lines again.

In a log or a saved output (`folds_repeats`: a `.log`, `.out` or `.err` file, a rotated
`.log.1`, or a tool's full output in the session's directory), a run of lines that repeats,
within the same page, a run shown above it in full (a traceback logged again and again) is
shown once: later copies become one note, `[lines 116-136 repeat lines 25-45 above]`, from
which the page can be rebuilt line for line (`unfold_repeats`). Only runs of at least
MIN_REPEAT_LINES lines and MIN_REPEAT_CHARS characters are folded; on logs this is a quarter to
a half of the page, paid for on every later request. Source code and data are never folded:
their repeated runs (overloads, test tables) are few (0.8% to 3.5% of the lines of the
real-code suite's three libraries), and a model that edits there would have to rebuild the
exact text from the note (BENCHMARKS.md, issue 26). The write and edit tools refuse content
that copies such a note instead of the lines it stands for.
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import io
import os
import re
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from agent_server.agent.tools import line_index
from agent_server.agent.tools.base import (
    EarlierOutput,
    ToolContext,
    ToolKind,
    ToolResult,
    display_arg,
    int_arg,
    path_of,
    str_arg,
)
from agent_server.agent.tools.output import MAX_BYTES, MAX_LINES, printable
from agent_server.agent.tools.paths import (
    check_hard_links,
    display_path,
    file_info,
    open_regular,
    resolve_in_workspace,
)
from agent_server.agent.tools.regex_search import SNIFF_BYTES, looks_binary
from agent_server.errors import ToolError, redact
from agent_server.literal import as_pictures
from agent_server.llm.messages import ImageContent, TextContent, ToolSpec
from agent_server.redaction import REDACTED

MAX_LINE_CHARS = 2000
# What is kept of a line before the cut: enough bytes for MAX_LINE_CHARS characters of any
# UTF-8 text; the rest is read in chunks and counted.
LINE_HEAD_BYTES = MAX_LINE_CHARS * 4
_LINE_CHUNK = 1 << 20
MAX_IMAGE_BYTES = 5 * 1024 * 1024
_UNCHANGED_END = "refer to that result.]"
# The results of read that show no lines: the unchanged note, an image's caption.
_NOT_LINES = re.compile(
    rf"\[[^\n]*{re.escape(_UNCHANGED_END)}|Image [^\n]* \(image/[a-z]+, \d+ bytes\):"
)
_PAGE_NOTE = re.compile(r"\n\n\[Showing lines (\d+)-(\d+) of \d+\.[^\]\n]*\]\Z")
# A repeated run is folded when it is at least this long (lines and characters).
MIN_REPEAT_LINES = 4
MIN_REPEAT_CHARS = 200
_REPEAT_NOTE = re.compile(r"\[lines (\d+)-(\d+) repeat lines (\d+)-(\d+) above\]")
# The files whose repeated runs are folded: logs and outputs (see the module docstring).
_OUTPUT_SUFFIXES = frozenset({".log", ".out", ".err"})
_ROTATED_LOG = re.compile(r".+\.log\.\d+")

_IMAGE_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
_IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})

SPEC = ToolSpec(
    name="read",
    description=(
        "Read a file in the workspace: its lines as they are (no line numbers), at most "
        f"{MAX_LINES} lines or {MAX_BYTES // 1024} KB per call; lines over {MAX_LINE_CHARS} "
        "characters are cut. A partial page says which lines it shows and the offset to "
        "continue from. In a log or a saved output, a run of lines repeating a run shown above "
        "it in the same page is shown once, then as '[lines a-b repeat lines c-d above]'. "
        "Lines unchanged since a read still in this conversation come back as a note: refer "
        "to that earlier result. Images (png, jpg, gif, webp) come back as images; binary "
        "files are refused. Also reads the full outputs other tools save."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "File path",
            },
            "offset": {
                "type": "integer",
                "minimum": 1,
                "description": "Line number to start reading from (1-based, default 1)",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": f"Maximum number of lines to read (default and cap {MAX_LINES})",
            },
        },
        "required": ["path"],
    },
)


class ReadTool:
    spec = SPEC
    read_only = True
    kind: ToolKind = "read"

    def paths(self, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        return path_of(arguments)

    def title(self, arguments: Mapping[str, Any]) -> str:
        return f"Read {display_arg(arguments, 'path', '?')}"

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        given = str_arg(arguments, "path")
        offset = int_arg(arguments, "offset", 1)
        limit = min(int_arg(arguments, "limit", MAX_LINES), MAX_LINES)
        if offset < 1 or limit < 1:
            raise ToolError("offset and limit must be at least 1.")
        path = resolve_in_workspace(ctx.workspace, given, extra_roots=(ctx.spill_dir,))
        shown = display_path(ctx.workspace, path)
        info = file_info(path, shown)
        if info is None:
            raise ToolError(f"File not found: {shown}. Use ls or find to locate the file.")
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{shown} is a directory, not a file. Use ls to list it.")
        check_hard_links(info, shown, ctx.hard_links_allowed)
        if ctx.files.holds(path):
            # The editor's buffer, which may differ from the disk; a binary or image file is
            # still told by its bytes on the disk.
            head = await asyncio.to_thread(_head, path, shown, ctx.hard_links_allowed)
            if image_type(path, head) is None:
                _refuse_binary(head, shown)
                text = await ctx.files.read_text(
                    path, errors="replace", hard_links_allowed=ctx.hard_links_allowed
                )
                return _read_text(io.BytesIO(text.encode("utf-8")), path, shown, offset, limit, ctx)
        return await asyncio.to_thread(_read_disk, path, shown, offset, limit, ctx)


def _read_disk(path: Path, shown: str, offset: int, limit: int, ctx: ToolContext) -> ToolResult:
    with open_regular(path, shown, hard_links_allowed=ctx.hard_links_allowed) as handle:
        head = handle.read(SNIFF_BYTES)
        mime = image_type(path, head)
        if mime is not None:
            return _read_image(handle, shown, mime)
        _refuse_binary(head, shown)
        if os.fstat(handle.fileno()).st_size > line_index.INDEXED_FROM:
            index = line_index.index_of(handle)
            line_index.seek_line(handle, index, offset)
            return _read_text(handle, path, shown, offset, limit, ctx, total=index.lines)
        handle.seek(0)
        return _read_text(handle, path, shown, offset, limit, ctx)


def _head(path: Path, shown: str, hard_links_allowed: bool) -> bytes:
    with open_regular(path, shown, hard_links_allowed=hard_links_allowed) as handle:
        return handle.read(SNIFF_BYTES)


def _refuse_binary(head: bytes, shown: str) -> None:
    if looks_binary(head):
        raise ToolError(
            f"{shown} is a binary file and cannot be shown as text. "
            "Use bash with a suitable tool (file, xxd, unzip -l, ...) to inspect it."
        )


def image_type(path: Path, head: bytes) -> str | None:
    """The MIME type of an image file (by its name and its first bytes), or None."""
    if path.suffix.lower() not in _IMAGE_SUFFIXES:
        return None
    for signature, mime in _IMAGE_SIGNATURES:
        if head.startswith(signature):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _read_image(handle: BinaryIO, shown: str, mime: str) -> ToolResult:
    size = os.fstat(handle.fileno()).st_size
    if size > MAX_IMAGE_BYTES:
        raise ToolError(
            f"{shown} is an image of {size // 1024} KB, larger than the "
            f"{MAX_IMAGE_BYTES // (1024 * 1024)} MB that can be sent to the model. "
            "Make a smaller copy with bash (e.g. ImageMagick's convert) and read that."
        )
    handle.seek(0)
    data = base64.b64encode(handle.read()).decode("ascii")
    return ToolResult(
        (TextContent(f"Image {shown} ({mime}, {size} bytes):"), ImageContent(data, mime)),
        details={"path": shown, "mimeType": mime, "bytes": size},
    )


def _read_text(
    handle: BinaryIO, path: Path, shown: str, offset: int, limit: int, ctx: ToolContext,
    total: int | None = None,
) -> ToolResult:
    """A page of the text from `handle`: read from its start, or, when the file's `total`
    lines are known (line_index), from line `offset`, where `handle` stands."""
    out: list[str] = []
    size = 0
    counted = 0
    last_shown = offset - 1
    stopped_by_bytes = False
    first = 1 if total is None else offset
    for number, (raw, rest) in enumerate(bounded_lines(handle), start=first):
        counted = number
        if len(out) >= limit or stopped_by_bytes:
            if total is not None:
                break
            continue
        if number < offset:
            continue
        line = render_line(raw, rest)
        line_size = len(line.encode("utf-8")) + 1
        if out and size + line_size > ctx.limits.max_bytes:
            stopped_by_bytes = True
            continue
        out.append(line)
        size += line_size
        last_shown = number
    if total is None:
        total = counted
    details: dict[str, Any] = {"path": shown, "totalLines": total}
    if total == 0:
        return ToolResult.of_text(f"{shown} is empty.", details=details)
    if offset > total:
        raise ToolError(
            f"offset {offset} is past the end of {shown}, which has {total} lines. "
            f"Use an offset between 1 and {total}."
        )
    details.update(startLine=offset, endLine=last_shown)
    scrubbed = printable(redact("\n".join(out), *ctx.secrets)).split("\n")
    if _seen_unchanged(path, offset, scrubbed, ctx):
        whole = offset == 1 and last_shown == total
        what = shown if whole else f"{shown} lines {offset}-{last_shown}"
        return ToolResult.of_text(
            f"[{what}: unchanged since your earlier read, which is still in this conversation; "
            + _UNCHANGED_END,
            details={**details, "unchanged": True},
        )
    text = "\n".join(fold_repeats(out, offset) if folds_repeats(path, ctx) else out)
    if last_shown < total:
        text += (
            f"\n\n[Showing lines {offset}-{last_shown} of {total}. "
            f"Continue with offset={last_shown + 1}.]"
        )
    elif offset > 1:
        text += f"\n\n[Showing lines {offset}-{last_shown} of {total}.]"
    return ToolResult.of_text(text, details=details)


def bounded_lines(handle: BinaryIO) -> Iterator[tuple[bytes, int]]:
    """Each line of `handle` as (its first LINE_HEAD_BYTES bytes, how many characters follow
    them): a line of any length (a 1 GB minified file, a sparse file of NULs past the binary
    check) is read in chunks and takes bounded memory, not the whole line at once."""
    while True:
        head = handle.readline(LINE_HEAD_BYTES)
        if not head:
            return
        rest = 0
        if not head.endswith(b"\n"):
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            while chunk := handle.readline(_LINE_CHUNK):
                rest += len(decoder.decode(chunk.removesuffix(b"\n").removesuffix(b"\r")))
                if chunk.endswith(b"\n"):
                    break
            rest += len(decoder.decode(b"", final=True))
        yield head, rest


def render_line(raw: bytes, rest: int = 0) -> str:
    """One line of a file as read shows it: decoded, without its terminator, its control
    characters as control pictures (an ESC as `␛`: literal.as_pictures; the edit tool takes
    them back), cut when long (`rest`: characters of it past `raw`, which bounded_lines did
    not keep)."""
    line = as_pictures(raw.decode("utf-8", errors="replace").rstrip("\n").rstrip("\r"))
    if len(line) + rest > MAX_LINE_CHARS:
        cut = len(line) + rest - MAX_LINE_CHARS
        line = f"{line[:MAX_LINE_CHARS]} [... {cut} more characters on this line]"
    return line


def shown_lines(earlier: EarlierOutput) -> tuple[int, list[str]] | None:
    """(first line number, the lines) an earlier read's result showed the model; None for a
    result that showed no lines of text (a note, an image, an empty file)."""
    text = earlier.text
    if not text or _NOT_LINES.fullmatch(text):
        return None
    page = _PAGE_NOTE.search(text)
    if page is not None:
        start = int(page.group(1))
        return start, unfold_repeats(text[: page.start()].split("\n"), start)
    offset = earlier.arguments.get("offset")
    start = offset if isinstance(offset, int) and not isinstance(offset, bool) else 1
    return start, unfold_repeats(text.split("\n"), start)


def folds_repeats(path: Path, ctx: ToolContext) -> bool:
    """Whether read folds the repeated runs of `path`: a log or an output (a `.log`, `.out`
    or `.err` file, a rotated log, a tool's full output saved in the session's directory),
    never source code or data."""
    name = path.name.lower()
    return (
        path.suffix.lower() in _OUTPUT_SUFFIXES
        or _ROTATED_LOG.fullmatch(name) is not None
        or path.is_relative_to(ctx.spill_dir.resolve())
    )


def fold_repeats(lines: list[str], first: int) -> list[str]:
    """`lines` (lines `first`, `first + 1`, ... of a file) with each run of at least
    MIN_REPEAT_LINES lines and MIN_REPEAT_CHARS characters that repeats a run shown above it in
    full replaced by one note naming both (at each place, the longest run that repeats). A page
    with a line that reads like such a note is left as it is, so that every folded page unfolds
    exactly."""
    if len(lines) < 2 * MIN_REPEAT_LINES or any(_REPEAT_NOTE.fullmatch(x) for x in lines):
        return lines
    out: list[str] = []
    literal = [False] * len(lines)
    windows: dict[tuple[str, ...], list[int]] = {}  # MIN_REPEAT_LINES shown lines -> starts
    i = 0
    while i < len(lines):
        length, source = 0, -1
        for j in reversed(windows.get(tuple(lines[i : i + MIN_REPEAT_LINES]), ())[-32:]):
            k = MIN_REPEAT_LINES
            while i + k < len(lines) and j + k < i and literal[j + k]:
                if lines[j + k] != lines[i + k]:
                    break
                k += 1
            if k > length:
                length, source = k, j
        if length and sum(len(x) for x in lines[i : i + length]) >= MIN_REPEAT_CHARS:
            out.append(
                f"[lines {first + i}-{first + i + length - 1} repeat lines "
                f"{first + source}-{first + source + length - 1} above]"
            )
            i += length
            continue
        out.append(lines[i])
        literal[i] = True
        start = i - MIN_REPEAT_LINES + 1
        if start >= 0 and all(literal[start : i + 1]):
            windows.setdefault(tuple(lines[start : i + 1]), []).append(start)
        i += 1
    return out


def unfold_repeats(shown: list[str], first: int) -> list[str]:
    """The lines of a page as `fold_repeats` gave them back, with its notes unfolded."""
    lines: list[str] = []
    for line in shown:
        note = _REPEAT_NOTE.fullmatch(line)
        if note is None:
            lines.append(line)
            continue
        start, end = int(note.group(3)) - first, int(note.group(4)) - first
        lines.extend(lines[start : end + 1])
    return lines


def refuse_repeat_notes(new: str, old: str | None, shown: str) -> None:
    """Refuses `new` text for `shown` when it copies read's note for repeated lines (and the
    file's text `old` did not have it): the note stands for lines, it is not content."""
    for note in _REPEAT_NOTE.finditer(new):
        line_start = new.rfind("\n", 0, note.start()) + 1
        line_end = new.find("\n", note.end())
        whole_line = new[line_start : len(new) if line_end == -1 else line_end].strip()
        if whole_line == note.group(0) and (old is None or note.group(0) not in old):
            raise ToolError(
                f"The text for {shown} contains read's note '{note.group(0)}', which stands "
                "for lines shown earlier in that read, not for content. Write those lines "
                "themselves."
            )


def refuse_redacted(new: str, old: str | None, shown: str) -> None:
    """Refuses `new` text for `shown` when it holds `[redacted]` (and the file's text `old`
    did not): it stands for a secret the tool results hid, and writing it would replace the
    secret in the user's file."""
    if REDACTED in new and (old is None or new.count(REDACTED) > old.count(REDACTED)):
        raise ToolError(
            f"The text for {shown} contains {REDACTED}, which stands for a secret the tool "
            "results hid from you, not for content: writing it would destroy the secret. "
            "Leave those lines as they are (edit the other lines), or ask the user."
        )


def _seen_unchanged(path: Path, start: int, lines: list[str], ctx: ToolContext) -> bool:
    """Whether the model still has lines start..start+len(lines)-1 of `path`, exactly as they
    are now, from an earlier read in its current context."""
    end = start + len(lines) - 1
    for earlier in reversed(ctx.in_context):
        if earlier.tool != SPEC.name:
            continue
        given = earlier.arguments.get("path")
        if not isinstance(given, str):
            continue
        try:
            earlier_path = resolve_in_workspace(ctx.workspace, given, extra_roots=(ctx.spill_dir,))
        except ToolError:
            continue
        if earlier_path != path:
            continue
        seen = shown_lines(earlier)
        if seen is None:
            continue
        first, seen_lines = seen
        covered = first <= start and end <= first + len(seen_lines) - 1
        if covered and seen_lines[start - first : end - first + 1] == lines:
            return True
    return False
