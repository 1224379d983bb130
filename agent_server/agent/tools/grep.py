"""grep: search file contents by regular expression.

Uses ripgrep (`rg`) when it is installed, a Python walk otherwise; both give the same output:
`line:text` for matching lines, `line-text` for context lines, `--` between groups, under a
heading line with the file's path when a directory is searched (as `rg --heading` prints
them: a path once per file, not once per line), as paths.listed_path shows it (a name with a
control character quoted). Both search hidden files, skip binary files
and the directories find skips, and do not follow symbolic links. A directory search leaves
out the matches in regular files with more than one hard link (they may be files outside the
workspace under another name) unless the call was allowed for them, and says which files it
left out; only the files that matched are checked. A single file is opened here, checked
(tools/paths.py), and searched as opened (ripgrep gets it as /dev/fd/N), so a link swapped in
for its name meanwhile is never followed. A directory is opened the same way; the Python
search walks it through descriptors (walk.py) and opens each file from its directory without
following a link; ripgrep, which walks by names, runs in a jail (sandbox.jail_argv) that holds
nothing but the system's programs and that directory, mounted from its descriptor; where no
jail can be made, no sandbox can either (the same bubblewrap), commands run unconfined, and
ripgrep walks the directory by names as before. The Python fallback speaks
Python's regex dialect; ripgrep's is nearly the same, and a pattern ripgrep rejects but Python
accepts (look-around, backreferences) is run by the fallback.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import logging
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_server.agent.tools import regex_search
from agent_server.agent.tools.base import (
    ToolContext,
    ToolKind,
    ToolResult,
    bool_arg,
    display_arg,
    int_arg,
    optional_str_arg,
    str_arg,
)
from agent_server.agent.tools.output import bound_output, printable
from agent_server.agent.tools.paths import (
    display_path,
    file_info,
    has_other_links,
    listed_path,
    open_directory,
    open_regular,
    resolve_in_workspace,
    secret_file,
)
from agent_server.agent.tools.sandbox import jail_argv
from agent_server.agent.tools.walk import (
    SKIPPED_DIRS,
    Glob,
    compile_glob,
    walk_directory,
)
from agent_server.errors import ToolError, redact
from agent_server.literal import as_pictures
from agent_server.llm.messages import ToolSpec
from agent_server.stderr_log import shorten

log = logging.getLogger(__name__)

MAX_MATCHES = 500
MAX_CONTEXT = 10
MAX_LINE_CHARS = 500
MAX_LEFT_OUT_NAMED = 10  # hard-linked files named in the note; the rest are counted
# The Python search stops a pattern that takes longer than this on one line: a line of a
# text file takes milliseconds, a catastrophic pattern ((a+)+$ on 40 a's) runs for hours.
LINE_TIME_LIMIT = 10.0
# Bytes: the longest line a search's output may have (a match in a minified file is one
# long line; asyncio's default of 64 KB failed the call).
MAX_SEARCH_LINE = 1 << 30

SPEC = ToolSpec(
    name="grep",
    description=(
        "Search file contents in the workspace with a regular expression. Prints matching "
        "lines as 'line:text' (context lines as 'line-text'), under each file's path when "
        "searching a directory; without context, a text matching on several lines of a file "
        "is printed once with all its line numbers ('25,116,141:text'). Searches hidden "
        "files; skips binary files and .git, node_modules, .venv, __pycache__ and similar. "
        f"At most {MAX_MATCHES} matches; lines are cut at {MAX_LINE_CHARS} characters."
    ),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression to search for"},
            "path": {
                "type": "string",
                "description": "File or directory to search (default: the workspace root)",
            },
            "glob": {
                "type": "string",
                "description": "Only search files matching this glob, e.g. '*.py' or 'src/**/*.ts'",
            },
            "ignoreCase": {"type": "boolean", "description": "Case-insensitive search"},
            "context": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_CONTEXT,
                "description": "Lines of context to show before and after each match",
            },
        },
        "required": ["pattern"],
    },
)


@dataclass(frozen=True, slots=True)
class GrepLine:
    path: str  # relative to the workspace root
    line: int
    text: str
    is_match: bool


@dataclass(slots=True)
class GrepOutcome:
    lines: list[GrepLine]
    matches: int
    more: bool  # stopped at MAX_MATCHES
    engine: str


@dataclass(slots=True)
class HardLinkSieve:
    """Leaves out the lines of regular files with more than one hard link (they may be files
    outside the workspace under another name). Only files that matched are checked, once each;
    `left_out` names the files left out, in path order."""

    root: Path
    left_out: list[str] = field(default_factory=list)
    secret: list[str] = field(default_factory=list)  # files that may hold secrets, left out
    _checked: dict[str, bool] = field(default_factory=dict)

    def leaves_out(self, path: str, links: int | None = None) -> bool:
        """Whether the lines of `path` (relative to `root`) are left out: hard-linked, or a
        file that may hold secrets (read asks before it shows one). `links`: how many hard
        links the file searched has, when the search knows (it asked the file it read); else
        the file now at `path` is asked."""
        known = self._checked.get(path)
        if known is None and secret_file(path):
            self._checked[path] = known = True
            self.secret.append(path)
        if known is None:
            known = links > 1 if links is not None else self._linked_now(path)
            self._checked[path] = known
            if known:
                self.left_out.append(path)
        return known

    def forget(self) -> None:
        """Start again (a search run again from the start)."""
        self.left_out.clear()
        self.secret.clear()
        self._checked.clear()

    def in_path_order(self) -> None:
        """Put the files met in path order (a search that met them in another order)."""
        self.left_out.sort(key=path_order)
        self.secret.sort(key=path_order)

    def _linked_now(self, path: str) -> bool:
        try:
            return has_other_links(os.stat(self.root / path, follow_symlinks=False))
        except OSError:
            return False  # gone since it was searched: nothing to say about its links


def path_order(path: str) -> list[str]:
    """The key that puts paths in the order of a walk that lists each directory sorted by
    name (walk.walk_directory, ripgrep's --sort path): `a/x` before `a.py`."""
    return path.split("/")


HARD_LINKED_WHY = "hard-linked file(s), which may also exist outside the workspace"
SECRET_WHY = "file(s) that may hold secrets"


def left_out_note(paths: list[str], why: str = HARD_LINKED_WHY) -> str:
    """One line telling the model which files a search left out, why, and what to do."""
    named = ", ".join(listed_path(path) for path in paths[:MAX_LEFT_OUT_NAMED])
    if len(paths) > MAX_LEFT_OUT_NAMED:
        named += f" and {len(paths) - MAX_LEFT_OUT_NAMED} more"
    return f"[Left out matches in {len(paths)} {why}: {named}. Read one by name to be asked.]"


class GrepTool:
    """`rg`: the ripgrep executable to use; "auto" finds it on PATH, None forces the fallback."""

    spec = SPEC
    read_only = True
    kind: ToolKind = "search"

    def __init__(self, rg: str | None = "auto") -> None:
        self._rg = rg

    def paths(self, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        return ()

    def title(self, arguments: Mapping[str, Any]) -> str:
        where = display_arg(arguments, "path")
        return f"Grep {display_arg(arguments, 'pattern', '?')}" + (f" in {where}" if where else "")

    def _rg_path(self) -> str | None:
        return shutil.which("rg") if self._rg == "auto" else self._rg

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        pattern = str_arg(arguments, "pattern")
        if not pattern:
            raise ToolError("pattern is empty. Give a regular expression to search for.")
        glob = optional_str_arg(arguments, "glob") or None
        ignore_case = bool_arg(arguments, "ignoreCase", False)
        context = max(0, min(int_arg(arguments, "context", 0), MAX_CONTEXT))
        given = optional_str_arg(arguments, "path") or "."
        # The spill directory too: a cut result says its full output can be searched.
        top = resolve_in_workspace(ctx.workspace, given, extra_roots=(ctx.spill_dir,))
        root = resolve_in_workspace(ctx.workspace, ".")
        shown_top = display_path(ctx.workspace, top)
        info = file_info(top, shown_top)
        if info is None:
            raise ToolError(f"Path not found: {shown_top}.")
        searching_dir = stat.S_ISDIR(info.st_mode)
        if not searching_dir and secret_file(top) and not ctx.hard_links_allowed:
            raise ToolError(
                f"{shown_top} may hold secrets (keys, passwords). Read it with the read tool, "
                "which asks the user first."
            )
        if has_other_links(info) and not ctx.hard_links_allowed:
            raise ToolError(
                f"{shown_top} has {info.st_nlink} hard links: the same file may also exist "
                "outside the workspace. Read it with the read tool, which asks the user first."
            )
        # A file searched alone was checked above; one in a directory, when it matches.
        sieve = None if ctx.hard_links_allowed or not searching_dir else HardLinkSieve(root)
        # Searched as opened and checked, never by its name again.
        fd = await asyncio.to_thread(
            _open_searched, top, shown_top, searching_dir, ctx.hard_links_allowed
        )
        try:
            searched = Searched(top, shown_top, fd, searching_dir)
            outcome = await self._search(
                pattern, searched, root, glob, ignore_case, context, sieve
            )
        finally:
            os.close(fd)
        details: dict[str, Any] = {
            "pattern": pattern,
            "path": shown_top,
            "matches": outcome.matches,
            "engine": outcome.engine,
        }
        # Said after the bounds, so that a long output cannot cut it off.
        note = ""
        for key, files, why in (
            ("leftOutHardLinked", sieve.left_out if sieve else [], HARD_LINKED_WHY),
            ("leftOutSecret", sieve.secret if sieve else [], SECRET_WHY),
        ):
            if files:
                details[key] = files
                note += "\n\n" + printable(redact(left_out_note(files, why), *ctx.secrets))
        if not outcome.lines:
            where = "the workspace" if shown_top == "." else shown_top
            filtered = f" (files matching {glob!r})" if glob else ""
            return ToolResult.of_text(
                f"No matches for {pattern!r} in {where}{filtered}.{note}", details=details
            )
        text = format_lines(outcome.lines, headings=searching_dir)
        if outcome.more:
            text += (
                f"\n\n[Stopped after {MAX_MATCHES} matches. Narrow the pattern, the path or the "
                "glob to see the rest.]"
            )
        bounded = bound_output(
            text, spill_dir=ctx.spill_dir, tool_name="grep", secrets=ctx.secrets, limits=ctx.limits
        )
        return ToolResult.of_text(bounded.text + note, details={**details, **bounded.details()})

    async def _search(
        self,
        pattern: str,
        searched: Searched,
        root: Path,
        glob: str | None,
        ignore_case: bool,
        context: int,
        sieve: HardLinkSieve | None,
    ) -> GrepOutcome:
        """ripgrep's result where it runs, the Python search's otherwise."""
        try:
            regex: re.Pattern[str] | None = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
            regex_error = ""
        except re.error as exc:
            regex, regex_error = None, str(exc)
        rg = self._rg_path()
        if rg is not None:
            outcome = await _run_rg(rg, pattern, searched, root, glob, ignore_case, context, sieve)
            if outcome is not None:
                return outcome
        if regex is None:
            raise ToolError(
                f"Invalid regular expression {pattern!r}: {regex_error}. Escape special "
                "characters such as ( [ { . * + ? with a backslash to match them literally."
            )
        return await _run_python(pattern, ignore_case, searched, root, glob, context, sieve)


@dataclass(frozen=True, slots=True)
class Searched:
    """What a search reads: the file or directory `top` (checked), open as `fd`."""

    top: Path
    shown: str  # as the output names it
    fd: int
    is_dir: bool


def _open_searched(top: Path, shown: str, is_dir: bool, hard_links_allowed: bool) -> int:
    """A descriptor of the directory or regular file `top`, opened without following a link
    (paths.py): what was checked."""
    if is_dir:
        return open_directory(top, shown)
    with open_regular(top, shown, hard_links_allowed=hard_links_allowed) as opened:
        return os.dup(opened.fileno())


def format_lines(lines: list[GrepLine], *, headings: bool = True) -> str:
    """Matches as `line:text`, context as `line-text`, `--` between groups of a file; with
    `headings`, each file's lines under its path, files separated by a blank line. Without
    context, a text that matches on several lines of a file is printed once, where it first
    matches, with all its line numbers (`25,116,141:text`): a log's repeated lines cost once."""
    out: list[str] = []
    numbers: list[list[int]] = []  # per line of `out`: the line numbers it is printed with
    printed: dict[str, int] = {}  # a match's text -> its index in `out`, in the current file
    previous: GrepLine | None = None
    with_context = any(not line.is_match for line in lines)
    for item in lines:
        new_file = previous is None or item.path != previous.path
        if new_file:
            printed.clear()
        if new_file and headings:
            if previous is not None:
                out.append("")
                numbers.append([])
            out.append(listed_path(item.path))
            numbers.append([])
        elif previous is not None and (new_file or item.line > previous.line + 1) and with_context:
            out.append("--")  # groups only matter with context
            numbers.append([])
        previous = item
        text = as_pictures(item.text)  # an ESC as `␛`, as read shows it (the edit takes it)
        if len(text) > MAX_LINE_CHARS:
            cut = len(item.text) - MAX_LINE_CHARS
            text = f"{text[:MAX_LINE_CHARS]} [... {cut} more characters]"
        first = printed.get(text) if not with_context else None
        if first is not None:
            numbers[first].append(item.line)
            continue
        printed[text] = len(out)
        out.append(f"{':' if item.is_match else '-'}{text}")
        numbers.append([item.line])
    return "\n".join(
        ",".join(map(str, lines_of)) + line if lines_of else line
        for lines_of, line in zip(numbers, out, strict=True)
    )


def _trim_after_cut(lines: list[GrepLine], more: bool, context: int) -> list[GrepLine]:
    """Without the leading context of the first match not shown (when the search stopped)."""
    if not more:
        return lines
    last = max((i for i, x in enumerate(lines) if x.is_match), default=-1)
    if last < 0:
        return []
    anchor = lines[last]
    end = last + 1
    while (
        end < len(lines)
        and lines[end].path == anchor.path
        and lines[end].line <= anchor.line + context
    ):
        end += 1
    return lines[:end]


def _clean(text: str) -> str:
    return text.rstrip("\n").rstrip("\r")


_END_GRACE = 5.0  # seconds a search's process has to end once its search is over


async def _end(proc: asyncio.subprocess.Process) -> None:
    """Ends a search's process: killed if it still runs, waited for, and its pipes read to
    their end (what is left is dropped). asyncio closes the process's transport only once the
    process has exited and each of its pipes has been closed; `wait()` does not see to the
    pipes when the exit is already known (ripgrep in its jail: the killed bubblewrap is
    reported gone while ripgrep's output has not ended yet). A pipe still open when the event
    loop closes fails later, when the transport is collected ("Event loop is closed").
    Bounded (_END_GRACE): a process that keeps writing past its kill does not hold the call."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(_END_GRACE):
            if proc.stdin is not None:
                proc.stdin.close()
                with contextlib.suppress(OSError):
                    await proc.stdin.wait_closed()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        while await stream.read(1 << 16):
                            pass
            await proc.wait()


# --- ripgrep ---------------------------------------------------------------------------------


async def _run_rg(
    rg: str,
    pattern: str,
    searched: Searched,
    workspace: Path,
    glob: str | None,
    ignore_case: bool,
    context: int,
    sieve: HardLinkSieve | None,
    sort: bool = False,
) -> GrepOutcome | None:
    """ripgrep's result, or None when ripgrep cannot run (or not in its jail, for a
    directory) or rejects the pattern.

    ripgrep searches on every core unless told to sort (`--sort path` took twice as long on
    11,000 files); each file's lines still come together and in order, so the files are put
    in path order here. Past MAX_MATCHES, which matches came first would depend on the
    threads: then it runs again, sorted, and the first ones in path order are kept."""
    command = await _rg_command(rg, pattern, searched, workspace, glob, ignore_case, context,
                                sort)
    if command is None:
        return None
    try:
        proc = await asyncio.create_subprocess_exec(
            *command,
            cwd=workspace,
            pass_fds=(searched.fd,),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=MAX_SEARCH_LINE,
        )
    except OSError:
        return None
    assert proc.stdout is not None
    assert proc.stderr is not None
    lines: list[GrepLine] = []
    matches = 0
    more = False
    try:
        while True:
            raw = await proc.stdout.readline()
            if not raw:
                break
            item = _parse_rg_line(raw)
            if item is None or (sieve is not None and sieve.leaves_out(item.path)):
                continue
            if item.is_match:
                if matches == MAX_MATCHES:
                    more = True
                    break
                matches += 1
            lines.append(item)
        if more:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        stderr = await proc.stderr.read()  # rg prints a rejected pattern's error here
        code = await proc.wait()
    finally:
        await _end(proc)
    if code == 2 and not lines and stderr.strip():
        return None  # a pattern ripgrep rejects: let the Python fallback decide
    if more and not sort and searched.is_dir:
        if sieve is not None:
            sieve.forget()
        return await _run_rg(rg, pattern, searched, workspace, glob, ignore_case, context,
                             sieve, sort=True)
    if not sort:
        lines.sort(key=lambda item: path_order(item.path))  # stable: each file's own order
        if sieve is not None:
            sieve.in_path_order()
    return GrepOutcome(_trim_after_cut(lines, more, context), matches, more, "ripgrep")


async def _rg_command(
    rg: str,
    pattern: str,
    searched: Searched,
    workspace: Path,
    glob: str | None,
    ignore_case: bool,
    context: int,
    sort: bool,
) -> list[str] | None:
    """The command that runs ripgrep on what is searched: a file through its descriptor
    (/dev/fd/N); a directory in a jail (rg_jail) where nothing else exists, since ripgrep
    walks it by names, and a link swapped in for one meanwhile would lead it outside. Where
    no jail can be made, by names as before: no sandbox can be made there either, so the
    commands that could swap a link run unconfined and reach whatever it would show."""
    args = [
        "--json",
        *(("--sort", "path") if sort else ()),
        "--hidden",
        "--no-ignore",
        "--no-config",
        "--no-messages",
    ]
    if ignore_case:
        args.append("--ignore-case")
    if context:
        args += ["--context", str(context)]
    if glob and searched.is_dir:
        args += ["--glob", glob]
    for name in sorted(SKIPPED_DIRS):
        args += ["--glob", f"!{name}"]
    args += ["--regexp", pattern, "--"]
    if not searched.is_dir:
        return [rg, *args, f"/dev/fd/{searched.fd}"]
    bwrap = await asyncio.to_thread(rg_jail, rg)
    if bwrap is None:
        return [rg, *args, searched.shown]
    # Run where the output's paths are relative to the workspace root, as it shows them.
    cwd = workspace if searched.top.is_relative_to(workspace) else Path("/")
    return jail_argv(bwrap, searched.fd, searched.top, cwd, [rg, *args, searched.shown])


@functools.cache
def rg_jail(rg: str) -> str | None:
    """bubblewrap, when it can run `rg` in a jail here (sandbox.jail_argv); tried once per
    process. None elsewhere (no bubblewrap, not Linux, no namespaces): then ripgrep walks a
    directory unjailed (_rg_command)."""
    bwrap = shutil.which("bwrap") if sys.platform.startswith("linux") else None
    if bwrap is None:
        log.info("grep runs ripgrep on directories unjailed: no bubblewrap here")
        return None
    with tempfile.TemporaryDirectory(prefix="agent-grep-probe-") as probe:
        Path(probe, "probe.txt").write_text("jailed\n")
        real = Path(os.path.realpath(probe))
        fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            argv = jail_argv(bwrap, fd, real, real, [rg, "--no-config", "-l", "jailed", "."])
            tried = subprocess.run(
                argv, pass_fds=(fd,), capture_output=True, timeout=20, stdin=subprocess.DEVNULL
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.info("grep runs ripgrep on directories unjailed: %s", exc)
            return None
        finally:
            os.close(fd)
    if tried.returncode != 0 or b"probe.txt" not in tried.stdout:
        why = shorten(tried.stderr.decode("utf-8", errors="replace").strip())
        log.info("grep runs ripgrep on directories unjailed: the jail failed (%s)", why)
        return None
    return bwrap


def _parse_rg_line(raw: bytes) -> GrepLine | None:
    try:
        message = json.loads(raw)
    except ValueError:
        return None
    kind = message.get("type")
    if kind not in ("match", "context"):
        return None
    data = message.get("data", {})
    path = _rg_text(data.get("path", {}), errors="surrogateescape")  # as os names it
    text = _rg_text(data.get("lines", {}), errors="replace")
    number = data.get("line_number")
    if path is None or text is None or not isinstance(number, int):
        return None
    while path.startswith("./"):
        path = path[2:]
    return GrepLine(path, number, _clean(text), kind == "match")


def _rg_text(value: Mapping[str, Any], *, errors: str) -> str | None:
    if "text" in value:
        return str(value["text"])
    if "bytes" in value:
        return base64.b64decode(value["bytes"]).decode("utf-8", errors=errors)
    return None


# --- Python fallback -------------------------------------------------------------------------


async def _run_python(
    pattern: str,
    ignore_case: bool,
    searched: Searched,
    workspace: Path,
    glob: str | None,
    context: int,
    sieve: HardLinkSieve | None,
) -> GrepOutcome:
    """The Python search's result. It runs in a child process (regex_search.py), stopped when
    one line takes longer than LINE_TIME_LIMIT (a catastrophic pattern would run for ever,
    and `re` cannot be interrupted in a thread) and when the turn is interrupted. The child
    reads what was opened and checked, through its descriptor: a file as /dev/fd/N; the
    files of a directory from it, one name at a time without following a link, as the walk
    (walk.py) found them."""
    if searched.is_dir:
        matcher = compile_glob(glob) if glob else None
        found = await asyncio.to_thread(lambda: list(_files(searched.fd, matcher)))
        files = [(relative, True) for relative in found]
        shown = [display_path(workspace, searched.top / relative) for relative in found]
    else:
        files = [(f"/dev/fd/{searched.fd}", False)]  # searched whatever it holds
        shown = [searched.shown]
    request = json.dumps(
        {
            "pattern": pattern,
            "ignoreCase": ignore_case,
            "context": context,
            "directory": searched.fd if searched.is_dir else None,
            "files": [[path, check_binary] for path, check_binary in files],
        }
    ).encode()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",  # no PYTHON* variables, no user site, no script directory on sys.path
        str(Path(regex_search.__file__)),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        pass_fds=(searched.fd,),
        limit=MAX_SEARCH_LINE,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    lines: list[GrepLine] = []
    matches = 0
    more = False
    try:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(request)
            await proc.stdin.drain()
            proc.stdin.close()
        while True:
            try:
                raw = await asyncio.wait_for(proc.stdout.readline(), LINE_TIME_LIMIT)
            except TimeoutError:
                raise ToolError(
                    f"The pattern took more than {LINE_TIME_LIMIT:g} seconds on one line and "
                    "was stopped (catastrophic backtracking?). Simplify it: no nested repeats "
                    "such as (a+)+ or (.*)*, no repeated alternatives that overlap such as "
                    "(a|ab)*."
                ) from None
            if not raw:
                break
            item = json.loads(raw)
            if not item:
                continue  # the search moves on
            index, number, text, is_match, links = item
            if sieve is not None and sieve.leaves_out(shown[index], links):
                continue
            if is_match:
                if matches == MAX_MATCHES:
                    more = True
                    break
                matches += 1
            lines.append(GrepLine(shown[index], number, text, is_match))
        # Waited for, not killed: killing a child that has just exited may reap it behind
        # asyncio's back (which then reports exit code 255).
        code = None if more else await proc.wait()
    finally:
        await _end(proc)
    if code:
        raise ToolError(f"The Python search failed (exit code {code}).")
    return GrepOutcome(_trim_after_cut(lines, more, context), matches, more, "python")


def _files(top: int, matcher: Glob | None) -> Iterator[str]:
    """The regular files below the open directory `top` to search (relative paths), as its
    walk finds them (links are not searched)."""
    for entry in walk_directory(top):
        if not entry.is_file:
            continue
        if matcher is not None and not matcher.fullmatch(entry.relative):
            continue
        yield entry.relative
