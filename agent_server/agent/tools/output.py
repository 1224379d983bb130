"""Output bounds: no single tool result may fill the context window.

Every tool's text is held to MAX_LINES lines and MAX_BYTES bytes (UTF-8), whichever comes
first, and on a small window to less: a quarter of the compaction threshold in tokens
(`output_limits`), so that the step that brought a result can always be kept verbatim by a
compaction in the middle of its turn (the cut point keeps a last step of up to half the
threshold), and a long test run cannot fill most of a 32k window. What does not fit is saved
in full to a file in the session's spill directory, and the result says where and how to read
it (the read tool with offset/limit). Most tools keep the head of their output; bash keeps
its head too (a quarter of the bounds: a sorted report's top, a tool's banner) and the tail,
where a log's verdict is, with the lines between that report an error or a failure.
"""

from __future__ import annotations

import contextlib
import logging
import re
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agent_server.errors import redact

# What cut an output short: its number of lines, or its size.
CutBy = Literal["lines", "bytes"]

MAX_LINES = 2000
MAX_BYTES = 50 * 1024
# A command's output (bash) is held to less: the model did not choose what a command prints
# (a read names its lines), the whole is saved, and the lines it needs are one grep or recall
# away. Measured on `bench recall` at 4, 8, 12, 16 and 50 KB (BENCHMARKS.md, "What a result
# holds at once"); Codex holds a command's output to 10 KiB (codex-rs/core/src/tools/mod.rs,
# MODEL_FORMAT_MAX_BYTES), Claude Code to 30,000 characters.
COMMAND_MAX_BYTES = 8 * 1024
# On a small window: at most this share of the compaction threshold per result, counted at
# this many bytes per token (code and logs run about 3 characters a token).
RESULT_SHARE_OF_THRESHOLD = 4
BYTES_PER_TOKEN = 3
# The most of a command's output saved in its spill file before the rest is left out (but
# for its last MAX_BYTES, which the result shows and the file ends with). The file is for
# the model to page through (50 KB a read) or grep: 64 MB is over 1,300 pages, more than any
# turn reads, and a build or test log larger than that is one that runs away. Without a cap,
# `yes` for bash's 600 s maximum wrote gigabytes into the session's directory.
MAX_SAVED_BYTES = 64 * 1024 * 1024
# Of a command's output cut, its first lines are kept, in at most this share of the bounds
# (bytes and lines): a sorted report (a profile, `du | sort -rn`) and a tool's banner are at
# the head. Then the lines of the cut part that report an error or a failure (a test run's
# summary of its failures first, then a build's first error), each after its line number, in
# at most SALIENT_SHARE of the bound, each line at most SALIENT_LINE_BYTES; the tail has the
# rest.
HEAD_SHARE = 4
SALIENT_SHARE = 5
SALIENT_LINE_BYTES = 300
# A test runner's mark of one test failed, opening its line: TAP's `not ok 3 - name` (Node's
# `node --test`, tape, prove, bats), and the crosses of Jest (✕), Vitest (×), Node's spec
# reporter (✖), Playwright (✘) and others (✗).
_FAILED_MARK = r"[ \t]*(?:not ok\b|[✕✖×✗✘] )"
# A line that reports an error or a failure, in the words compilers, test runners and logs
# use, or with a runner's mark; not one that reports a test passing (pytest's "PASSED",
# cargo's and go's "ok"), nor an expected failure (pytest's XFAIL, TAP's `# TODO` and
# `# SKIP`), nor a word that names a file (a profile's `traceback.py:217(extract_stack)`,
# `errors.go`).
# (What opens a line is tried once at its start, not at each character the lazy scan for
# the words passes: a 17 MB output is scanned faster than with the words alone.)
_SALIENT = re.compile(
    r"^(?:[^\n]*?\b(?:errors?|(?:sub)?fail(?:ed|ures?|ing)?|fatal|panic(?:ked)?|exception"
    r"|traceback|assert(?:ion)?(?:error)?)\b(?!\.\w)|E {2,}\S|" + _FAILED_MARK + r")[^\n]*$",
    re.IGNORECASE | re.MULTILINE,
)
_NOT_SALIENT = re.compile(r"\bPASSED\b|^(?![ \t]*not ok\b).*\bok$|\bXFAIL\b"
                          r"|\b0 (?:errors?|failed|failures)\b|# ?(?i:todo|skip)\b")
# A line that opens with a test runner's verdict on one test: a run's summary of its failures
# (pytest's `FAILED x - Error`, `SUBFAILED(i=1) x`, `ERROR x`; unittest's `FAIL: x`; go's
# `--- FAIL: X`), or a failed test's mark (`_FAILED_MARK`). Case matters: "failed to open"
# is no verdict.
_VERDICT = re.compile(r"^(?:[ \t]*(?:--- )?(?:SUB)?(?:FAILED|FAIL|ERROR)\b|" + _FAILED_MARK
                      + r")[^\n]*$", re.MULTILINE)
# The test a verdict line names, by runner: pytest's node id (`FAILED x - msg`,
# `SUBFAILED(i=1) x`, `ERROR x`: a path with `.py` or `::`), unittest's `FAIL: name
# (module.Class.name)`, go's `--- FAIL: TestX (0.01s)`, TAP's `not ok 3 - name`, a cross's
# `✕ name (5 ms)`. The line may follow its number (`914: `, as a cut shows it, or grep's
# `914:`).
_FAILED_TEST = re.compile(
    r"^(?:\d+: ?)?[ \t]*(?:(?:SUB)?FAILED(?:\([^)\n]*\))? (?P<pytest>\S*(?:::|\.py)\S*)(?: - .*)?"
    r"|ERROR (?P<pytest_error>\S*(?:::|\.py)\S*)(?: - .*)?"
    r"|(?:FAIL|ERROR): (?P<unittest>\w+ \([\w.]+\))"
    r"|--- FAIL: (?P<go>\S+)(?: \(.*)?"
    r"|not ok \d+(?: -)? (?P<tap>.+?)"
    r"|[✕✖×✗✘] (?P<cross>.+?)(?: \(\d+(?:\.\d+)? ?m?s\))?)[ \t]*$",
    re.MULTILINE,
)
# A test's name shorter than this says too little to follow ("a", "works").
MIN_TEST_NAME = 6
# A followed test's lines kept in one output: pytest -v's status line, or TAP's subtest header
# and its `ok` line; the third and later (a name that is a prefix of many) are not.
LINES_PER_TEST = 2


@dataclass(frozen=True, slots=True)
class OutputLimits:
    """What one tool result may hold: lines and UTF-8 bytes."""

    max_lines: int = MAX_LINES
    max_bytes: int = MAX_BYTES

    def describe(self, cut_by: CutBy | None) -> str:
        """The bound that cut an output: "2000-line limit", "50 KB limit"."""
        if cut_by == "lines":
            return f"{self.max_lines}-line limit"
        return f"{self.size()} limit"

    def size(self) -> str:
        return f"{self.max_bytes // 1024} KB"


def output_limits(threshold: int) -> OutputLimits:
    """The bounds of one tool result for a model whose compaction threshold is `threshold`
    tokens: 2,000 lines and 50 KB, or a quarter of the threshold when that is less."""
    share = threshold // RESULT_SHARE_OF_THRESHOLD * BYTES_PER_TOKEN
    return OutputLimits(MAX_LINES, max(min(MAX_BYTES, share), 4 * 1024))


def command_limits(limits: OutputLimits) -> OutputLimits:
    """The bounds of a command's output where a tool result's are `limits`."""
    return OutputLimits(limits.max_lines, min(limits.max_bytes, COMMAND_MAX_BYTES))


DEFAULT_LIMITS = OutputLimits()

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Truncation:
    text: str  # what is kept
    total_lines: int
    kept_lines: int
    truncated: bool
    cut_by: CutBy | None = None


_SURROGATES = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` with lone surrogates (from undecodable file names) replaced by U+FFFD, so that
    it can be encoded as UTF-8 and sent as JSON."""
    return _SURROGATES.sub("\ufffd", text)


def _split_lines(text: str) -> list[str]:
    """Lines without their terminators; a trailing newline does not add an empty line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def count_lines(text: str) -> int:
    return len(_split_lines(text))


def _cut_bytes(text: str, max_bytes: int, *, from_end: bool) -> str:
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    if max_bytes <= 0:
        return ""
    part = data[-max_bytes:] if from_end else data[:max_bytes]
    return part.decode("utf-8", errors="ignore")


def truncate_head(text: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> Truncation:
    """The first whole lines of `text` that fit both bounds."""
    return _truncate(text, max_lines, max_bytes, from_end=False)


def truncate_tail(text: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> Truncation:
    """The last whole lines of `text` that fit both bounds."""
    return _truncate(text, max_lines, max_bytes, from_end=True)


def _truncate(text: str, max_lines: int, max_bytes: int, *, from_end: bool) -> Truncation:
    lines = _split_lines(text)
    total = len(lines)
    kept: list[str] = []
    size = 0
    cut_by: CutBy | None = None
    for line in reversed(lines) if from_end else lines:
        if len(kept) == max_lines:
            cut_by = "lines"
            break
        line_size = len(line.encode("utf-8")) + 1
        if size + line_size > max_bytes:
            cut_by = "bytes"
            if not kept:  # one enormous line: keep the part nearest the kept end
                kept.append(_cut_bytes(line, max_bytes, from_end=from_end))
            break
        kept.append(line)
        size += line_size
    if cut_by is None:
        return Truncation(text, total, total, False)
    if from_end:
        kept.reverse()
    return Truncation("\n".join(kept), total, len(kept), True, cut_by)


def new_spill_path(spill_dir: Path, tool_name: str) -> Path:
    spill_dir.mkdir(parents=True, exist_ok=True)
    return spill_dir / f"{tool_name}-{uuid.uuid4().hex[:12]}.txt"


def spill(spill_dir: Path, tool_name: str, text: str) -> Path | None:
    """Save `text` in full; None (logged) when the spill directory cannot be written."""
    try:
        path = new_spill_path(spill_dir, tool_name)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        logger.warning("could not save the full %s output in %s: %s", tool_name, spill_dir, exc)
        return None
    return path


def _how_to_read(path: Path | None, first_line: int, limits: OutputLimits) -> str:
    if path is None:
        return "The full output could not be saved."
    return (
        f"Full output saved to {path}; read it with the read tool "
        f'(path "{path}", offset {first_line}, limit {limits.max_lines}), or search it with '
        "grep; after a compaction, recall finds it again."
    )


# How the line that says a result was cut starts (recall does not search it for words).
TRUNCATED = "[Output truncated"
# The path in that line (a line of its own, first or last in the result: not the output's).
_SAVED_AT = re.compile(
    rf"^{re.escape(TRUNCATED)}[^\n]*?Full output saved to (.+?); read it with the read tool",
    re.MULTILINE,
)


def saved_output(text: str, spill_dir: Path, max_bytes: int) -> str | None:
    """The whole output that a cut result (`text`) says was saved, read from the session's
    spill directory (a path anywhere else is not read); None when the result names no saved
    file, it is gone, or it is larger than `max_bytes`."""
    found = _SAVED_AT.search(text)
    if found is None:
        return None
    path = Path(found[1])
    try:
        if path.resolve().parent != spill_dir.resolve() or path.stat().st_size > max_bytes:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    return data.decode("utf-8", errors="replace")


def head_notice(cut: Truncation, path: Path | None, limits: OutputLimits = DEFAULT_LIMITS) -> str:
    return (
        f"{TRUNCATED} at the {limits.describe(cut.cut_by)}: showing lines "
        f"1-{cut.kept_lines} of {cut.total_lines}. "
        f"{_how_to_read(path, cut.kept_lines + 1, limits)}]"
    )


def tail_notice(
    cut: Truncation,
    path: Path | None,
    limits: OutputLimits = DEFAULT_LIMITS,
    left_out: str = "",
    salient: int = 0,
    head: int = 0,
    *,
    followed: bool = False,
) -> str:
    """`left_out`: what the saved file leaves out, when it is cut too; `salient`: how many
    lines of the cut part are shown for reporting an error or a failure (`followed`: or for
    naming a test the session follows); `head`: how many of the first lines are shown."""
    dropped = cut.total_lines - cut.kept_lines - head
    saved = f" {left_out}" if left_out and path is not None else ""
    shown = f"the last {cut.kept_lines}"
    if salient:
        kept = "report errors or failures"
        if followed:
            kept += ", or name a test that failed or was written earlier in this session"
        shown = f"{salient} of the cut lines that {kept} (each after its line number), then {shown}"
    which = f"the first {dropped}"
    if head:
        which = f"{dropped} (lines {head + 1}-{head + dropped})"
        shown = f"the first {head}, {shown}"
    return (
        f"{TRUNCATED}: {which} of {cut.total_lines} lines were cut; showing "
        f"{shown}. {_how_to_read(path, head + 1, limits)}{saved}]"
    )


def _size(size: int) -> str:
    """`size` bytes in MB (one decimal), in KB below 1 MB."""
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):.1f} MB"
    return f"{size // 1024} KB" if size >= 1024 else f"{size} bytes"


@dataclass(frozen=True, slots=True)
class BoundedOutput:
    text: str  # what the model gets, with a notice when something was cut
    truncated: bool
    total_lines: int
    full_output_path: Path | None = None
    left_out_bytes: int = 0  # of the output, not in the saved file (past MAX_SAVED_BYTES)

    def details(self) -> dict[str, Any]:
        out: dict[str, Any] = {"truncated": self.truncated, "totalLines": self.total_lines}
        if self.full_output_path is not None:
            out["fullOutputPath"] = str(self.full_output_path)
        if self.left_out_bytes:
            out["fullOutputLeftOutBytes"] = self.left_out_bytes
        return out


def bound_output(
    text: str,
    *,
    spill_dir: Path,
    tool_name: str,
    keep: Literal["head", "tail"] = "head",
    secrets: tuple[str, ...] = (),
    limits: OutputLimits = DEFAULT_LIMITS,
) -> BoundedOutput:
    """`text` held to the bounds; the full text (secrets scrubbed) spilled when cut."""
    text = printable(redact(text, *secrets))
    cut_at = (truncate_head if keep == "head" else truncate_tail)
    cut = cut_at(text, limits.max_lines, limits.max_bytes)
    if not cut.truncated:
        return BoundedOutput(text, False, cut.total_lines)
    path = spill(spill_dir, tool_name, text)
    if keep == "head":
        shown = f"{cut.text}\n\n{head_notice(cut, path, limits)}"
    else:
        shown = f"{tail_notice(cut, path, limits)}\n\n{cut.text}"
    return BoundedOutput(shown, True, cut.total_lines, path)


LIVE_CUT_NOTICE = (
    "\n[Live output stops here: the output passed {limit}. The end of it will be shown when "
    "the command finishes, and all of it is saved to a file.]\n"
)


def reports_failure(line: str) -> bool:
    """Whether `line` reports an error or a failure, as the lines a cut keeps do."""
    return _SALIENT.search(line) is not None and _NOT_SALIENT.search(line) is None


def failed_tests(text: str) -> list[str]:
    """The tests that `text`'s verdict lines say failed, by name, in order, each once (an
    expected failure, TAP's `# TODO` or `# SKIP`, is none)."""
    names: list[str] = []
    for match in _FAILED_TEST.finditer(text):
        name = next(group for group in match.groups() if group is not None)
        if match["tap"] is not None and _NOT_SALIENT.search(match.group()):
            continue
        if len(name) >= MIN_TEST_NAME and name not in names:
            names.append(name)
    return names


class SalientLines:
    """The lines of a streamed output that report an error or a failure, with their 1-based
    numbers, gathered as the output arrives: at most `max_bytes` of them, each once. First
    the lines that open with a test runner's verdict (pytest's `FAILED x` and `SUBFAILED(..)
    x`, unittest's `FAIL: x`, go's `--- FAIL: X`, `ERROR x`): a run's summary, a failure to a
    line, its message after it; then the lines that name a test of `followed` (the session's:
    one that failed before passing now is a verdict too), at most LINES_PER_TEST each; then
    the first others (a build's first error is usually its cause). The search runs over
    whole chunks, so an output with none costs a regular expression's scan, a substring
    search per followed test and a line count; once the others fill the bound, only lines
    that open with a verdict are looked for."""

    def __init__(self, max_bytes: int, followed: Sequence[str] = ()) -> None:
        self._max_bytes = max_bytes
        self._followed = {name: 0 for name in followed if name}  # lines kept of each
        self._lines_before = 0  # complete lines before `_partial`
        self._partial = ""  # the line begun and not ended (its first characters)
        self._seen: set[str] = set()
        # (number, line, bytes shown), each kind within max_bytes
        self._verdicts: list[tuple[int, str, int]] = []
        self._others: list[tuple[int, str, int]] = []
        self._follows: list[tuple[int, str, int]] = []

    @property
    def found(self) -> list[tuple[int, str]]:
        """The lines kept, in order: the verdicts first within the bound, then the lines of
        followed tests, then the others."""
        return self._chosen(0, None)

    def between(self, after: int, before: int) -> list[str]:
        """The lines kept below line `after` and above line `before` (the verdicts there
        first within the bound, then the followed tests' lines, then the others), each after
        its number."""
        return [f"{number}: {text}" for number, text in self._chosen(after, before)]

    def _chosen(self, after: int, before: int | None) -> list[tuple[int, str]]:
        chosen: list[tuple[int, str]] = []
        size = 0
        for number, line, shown in (*self._verdicts, *self._follows, *self._others):
            within = after < number and (before is None or number < before)
            if within and size + shown <= self._max_bytes:
                chosen.append((number, line))
                size += shown
        return sorted(chosen)

    def feed(self, text: str) -> None:
        end = text.rfind("\n")
        if end < 0:
            self._extend_partial(text)
            return
        first = text.find("\n")
        self._scan(self._partial + text[:first + 1])
        self._scan(text[first + 1 : end + 1])
        self._partial = ""
        self._extend_partial(text[end + 1 :])

    def finish(self) -> None:
        if self._partial:
            self._scan(self._partial + "\n")
            self._partial = ""

    def _extend_partial(self, text: str) -> None:
        room = SALIENT_LINE_BYTES * 4 - len(self._partial)
        if room > 0:
            self._partial += text[:room]

    def _full(self, kept: list[tuple[int, str, int]]) -> bool:
        return sum(shown for _, _, shown in kept) >= self._max_bytes

    @property
    def follows(self) -> bool:
        """Whether a line was kept for naming a followed test."""
        return bool(self._follows)

    def _scan(self, block: str) -> None:
        """`block`: whole lines, each ended by a newline."""
        self._scan_failures(block)
        self._scan_followed(block)
        self._lines_before += block.count("\n")

    def _scan_failures(self, block: str) -> None:
        """The lines that report a failure until the others fill the bound, then only those
        that open with a verdict."""
        at, counted = 0, 0  # where the search is, and the lines of `block` before it
        for pattern in (_SALIENT, _VERDICT):
            if pattern is _SALIENT and self._full(self._others):
                continue
            for match in pattern.finditer(block, at):
                counted += block.count("\n", at, match.start())
                at = match.start()
                self._add(self._lines_before + counted + 1, match.group())
                if self._full(self._verdicts) and self._full(self._others):
                    break
                if pattern is _SALIENT and self._full(self._others):
                    counted += block.count("\n", at, match.end())
                    at = match.end()
                    break
            else:
                break  # the block searched to its end
            if self._full(self._verdicts):
                break

    def _scan_followed(self, block: str) -> None:
        """The lines that name a followed test, the name standing apart (no letter, digit or
        underscore on either side), LINES_PER_TEST a test at most: all of them, not only as
        many as the bound holds, since those in the head or the tail the cut keeps anyway
        take none of its room (`_chosen`)."""
        found: dict[int, list[str]] = {}  # where each line to keep starts: its tests
        for name, kept in self._followed.items():
            at = block.find(name)
            while at >= 0 and kept < LINES_PER_TEST:
                end = at + len(name)
                if not (_word_char(block, at - 1) or _word_char(block, end)):
                    found.setdefault(block.rfind("\n", 0, at) + 1, []).append(name)
                    kept += 1
                    at = block.find("\n", end)
                at = block.find(name, at + 1) if at >= 0 else -1
        counted, at = 0, 0
        for start, names in sorted(found.items()):
            counted += block.count("\n", at, start)
            at = start
            line = block[start : block.find("\n", start)].rstrip("\r")
            wanted = [name for name in names if self._followed[name] < LINES_PER_TEST]
            if line in self._seen or not wanted:
                continue
            for name in wanted:
                self._followed[name] += 1
            self._seen.add(line)
            self._follows.append(_kept(self._lines_before + counted + 1, line))

    def _add(self, number: int, line: str) -> None:
        """Keep `line` if it is one to keep and its kind's bound has room."""
        line = line.rstrip("\r")
        if line in self._seen or not reports_failure(line):
            return
        kept = self._verdicts if _VERDICT.match(line) else self._others
        if self._full(kept):
            return
        self._seen.add(line)
        kept.append(_kept(number, line))


def _kept(number: int, line: str) -> tuple[int, str, int]:
    """A line kept: its number, its text (at most SALIENT_LINE_BYTES) and the bytes shown."""
    data = line.encode("utf-8")
    if len(data) > SALIENT_LINE_BYTES:
        line = data[:SALIENT_LINE_BYTES].decode("utf-8", errors="ignore") + "…"
    return number, line, len(f"{number}: {line}".encode()) + 1


def _word_char(text: str, index: int) -> bool:
    """Whether `text` has a letter, a digit or an underscore at `index` (False outside it)."""
    return 0 <= index < len(text) and (text[index].isalnum() or text[index] == "_")


class StreamingOutput:
    """Collects a long-running command's output without holding all of it in memory.

    Small outputs stay in memory. Once the output passes the bounds it is written to a spill
    file as it arrives, and only a tail large enough for `truncate_tail` is kept in memory.
    The file holds at most MAX_SAVED_BYTES of it; past that, only the tail
    kept in memory is added when the file is closed, after a line saying how much was left
    out. Text given to `write` should already be scrubbed of secrets.

    `write` also returns the part of the text to show live: the live view gets the output up
    to `live` (by default the model's copy's bounds; a command's live view keeps a tool
    result's, more than its model's copy), then one notice, then nothing more (the result,
    with the tail and the saved file's path, follows when the command ends).
    """

    def __init__(
        self, spill_dir: Path, tool_name: str, limits: OutputLimits = DEFAULT_LIMITS,
        live: OutputLimits | None = None, followed: Sequence[str] = (),
    ) -> None:
        self._spill_dir = spill_dir
        self._tool_name = tool_name
        self._limits = limits
        self._live_limits = live or limits
        self._saved_bytes = 0
        # Past max_saved: what was not written to the file (the last pieces are still held).
        self._unsaved_pieces = 0
        self._unsaved_bytes = 0
        self._unsaved_newlines = 0
        self._left_out_bytes = 0  # known once the file is closed
        self._pieces: deque[str] = deque()
        self._piece_bytes: deque[int] = deque()
        self._held_bytes = 0
        self._newlines = 0
        self._last_char = ""
        self._file: Any = None
        self._path: Path | None = None
        self._spill_failed = False
        self._live_bytes = 0
        self._live_lines = 0
        self._live_cut = False
        self._salient = SalientLines(limits.max_bytes // SALIENT_SHARE, followed)
        self._head = ""  # the output's first HEAD_SHARE of the bound
        self._head_room = limits.max_bytes // HEAD_SHARE

    def write(self, text: str) -> str:
        """Record `text`; returns what of it to stream live ("" past the bounds)."""
        if not text:
            return ""
        live = self._live(text)
        self._salient.feed(text)
        if self._head_room > 0:
            part = _cut_bytes(text, self._head_room, from_end=False)
            self._head += part
            self._head_room -= len(part.encode("utf-8")) or self._head_room
        size = len(text.encode("utf-8"))
        self._pieces.append(text)
        self._piece_bytes.append(size)
        self._held_bytes += size
        self._newlines += text.count("\n")
        self._last_char = text[-1]
        if self._file is not None:
            try:
                self._save(text, size)
            except OSError as exc:  # a full disk must not stop the command's output
                logger.warning("could not save the full %s output: %s", self._tool_name, exc)
                self.close()
                self._path = None
                self._spill_failed = True
                self._left_out_bytes = 0  # no file to say it of
            self._trim()
        elif self._spill_failed:
            self._trim()
        elif self._held_bytes > self._limits.max_bytes or self._newlines > self._limits.max_lines:
            self._start_spill()
        return live

    def _live(self, text: str) -> str:
        if self._live_cut:
            return ""
        limits = self._live_limits
        lines_left = limits.max_lines - self._live_lines
        bytes_left = limits.max_bytes - self._live_bytes
        size = len(text.encode("utf-8"))
        newlines = text.count("\n")
        if size <= bytes_left and newlines <= lines_left:
            self._live_bytes += size
            self._live_lines += newlines
            return text
        cut = truncate_head(text, max_lines=lines_left, max_bytes=bytes_left)
        self._live_cut = True
        limit = f"{limits.max_lines} lines" if cut.cut_by == "lines" else limits.size()
        kept = cut.text + ("\n" if cut.text else "")
        return kept + LIVE_CUT_NOTICE.format(limit=limit)

    def _start_spill(self) -> None:
        try:
            self._path = new_spill_path(self._spill_dir, self._tool_name)
            self._file = self._path.open("w", encoding="utf-8")
            for piece, size in zip(self._pieces, self._piece_bytes, strict=True):
                self._save(piece, size)
        except OSError as exc:
            logger.warning("could not save the full %s output: %s", self._tool_name, exc)
            self._spill_failed = True
            self._file = None
            self._path = None
        self._trim()

    def _save(self, text: str, size: int) -> None:
        """Write `text` to the file, or count it as left out once the file is full."""
        if self._unsaved_pieces == 0 and self._saved_bytes + size <= MAX_SAVED_BYTES:
            self._file.write(text)
            self._saved_bytes += size
            return
        self._unsaved_pieces += 1
        self._unsaved_bytes += size
        self._unsaved_newlines += text.count("\n")

    def _end_saved_file(self) -> None:
        """After a cut: a line saying what was left out, then the tail still held."""
        held = min(self._unsaved_pieces, len(self._pieces))
        tail = list(self._pieces)[len(self._pieces) - held :]
        tail_bytes = sum(list(self._piece_bytes)[len(self._pieces) - held :])
        self._left_out_bytes = self._unsaved_bytes - tail_bytes
        if not self._left_out_bytes:
            self._file.write("".join(tail))
            return
        lines = self._unsaved_newlines - sum(piece.count("\n") for piece in tail)
        self._file.write(
            f"\n[{_size(self._left_out_bytes)} of output ({lines} lines) left out here: "
            f"this file keeps the first {_size(self._saved_bytes)} and the last "
            f"{_size(tail_bytes)} of it.]\n" + "".join(tail)
        )

    def _trim(self) -> None:
        # Keep just over the byte bound so truncate_tail can always cut at a line start.
        bound = self._limits.max_bytes
        while len(self._pieces) > 1 and self._held_bytes - self._piece_bytes[0] > bound:
            self._held_bytes -= self._piece_bytes.popleft()
            self._pieces.popleft()

    @property
    def total_lines(self) -> int:
        return self._newlines + (1 if self._last_char not in ("", "\n") else 0)

    def finish(self) -> BoundedOutput:
        """The head and the tail held to the bounds, with a notice when lines were cut, and
        the lines of the cut part between them that report an error or a failure."""
        self.close()
        self._salient.finish()
        held = "".join(self._pieces)
        total = self.total_lines
        limits = self._limits
        cut = truncate_tail(held, limits.max_lines, limits.max_bytes)
        if not cut.truncated:
            return BoundedOutput(held, False, total)
        head = self._head[: self._head.rfind("\n") + 1]  # whole lines (all, if cut by lines)
        head = "".join(head.splitlines(keepends=True)[: limits.max_lines // HEAD_SHARE])
        head_lines = head.count("\n")
        gap_room = len(f"[lines {total}-{total} cut]") + 1  # the line naming the lines cut
        lines_left = limits.max_lines - head_lines - 1
        bytes_left = limits.max_bytes - len(head.encode("utf-8")) - gap_room
        cut = truncate_tail(held, lines_left, bytes_left)
        if total - cut.kept_lines <= head_lines:  # the tail reaches the head (a huge last line)
            head, head_lines = "", 0
            lines_left, bytes_left = limits.max_lines - 1, limits.max_bytes - gap_room
            cut = truncate_tail(held, limits.max_lines, limits.max_bytes)
        salient = self._salient.between(head_lines, total - cut.kept_lines + 1)
        if salient:  # they take their room from the tail
            room = sum(len(line.encode("utf-8")) + 1 for line in salient) + 1
            cut = truncate_tail(held, lines_left - len(salient) - 1, bytes_left - room)
            salient = self._salient.between(head_lines, total - cut.kept_lines + 1)
        # `held` may be only the tail of the output: count lines over all of it.
        cut = Truncation(cut.text, total, cut.kept_lines, True, cut.cut_by)
        left_out = ""
        if self._left_out_bytes:
            left_out = (
                f"The saved file is cut too: {_size(self._left_out_bytes)} of the output "
                f"in the middle were left out (it keeps the first "
                f"{_size(self._saved_bytes)} and the end)."
            )
        notice = tail_notice(cut, self._path, limits, left_out, len(salient), head_lines,
                             followed=self._salient.follows)
        first_tail = total - cut.kept_lines + 1
        gap = f"[lines {head_lines + 1}-{first_tail - 1} cut]"
        parts = [head.rstrip("\n")] if head_lines else []
        parts += [gap, *salient, "", cut.text] if salient else [gap, cut.text]
        shown = "\n".join(parts) if head_lines or salient else cut.text
        return BoundedOutput(
            f"{notice}\n\n{shown}", True, total, self._path, self._left_out_bytes
        )

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                if self._unsaved_pieces:
                    self._end_saved_file()
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
