"""Compaction hooks: the user's shell commands run before and after each compaction.

The setting `compaction.hooks` (`before`, `after`: lists of commands; `timeout`: seconds)
holds them. They are the user's own settings (the editor's user settings, the command-line
front ends' config file), never a workspace's: in VS Code the keys are machine-scoped, so a
folder's `.vscode/settings.json` cannot set them (as `mcp.servers`). Each runs with
`sh -c` (`cmd /c` on Windows), in the workspace folder, outside the sandbox, with the
environment commands get (environment.py: no provider key; a secret-looking variable only
when `tools.env.pass` lists it), and receives one JSON object on its standard input:

- before: `{"event": "beforeCompaction", "sessionId", "workspace", "reason", "tokens",
  "threshold", "window", "model", "instructions"}` (`instructions`: what the user gave a
  manual compaction, or null);
- after: `{"event": "afterCompaction", "sessionId", "workspace", "reason", "tokensBefore",
  "tokensAfter", "summary", "firstKeptEntryId", "model"}`.

A `before` hook answers on its standard output: nothing (go on); a JSON object
`{"instructions": "..."}` (added to the summary's instructions) or `{"cancel": true,
"reason": "..."}`; text that is not JSON is taken as instructions (as Claude Code's
PreCompact). An output is read without a leading byte order mark (PowerShell and Notepad
start UTF-8 text with one) and without terminal escape sequences (a colourful script's
colours are not instructions), the answer's strings too (literal.without_escape_sequences).
Exit code 2 cancels too, its standard error the reason (Claude Code's convention). A cancel
holds for the compactions that can wait (threshold, requested, idle, manual); one that
cannot (the context overflowed, or an answer was cut off by the window) runs anyway, and the
editor is told. An `after` hook's output is ignored.

Bounded: each command is stopped (its whole process group) after `timeout` seconds; at most
MAX_OUTPUT bytes of its output are read, and the instructions are cut to MAX_INSTRUCTIONS
characters (a warning says so). An answer must be whole UTF-8 text: a `before` hook that
prints more than MAX_OUTPUT bytes (its answer would be read cut, a JSON object half of one)
or bytes that are not text (not UTF-8, or a NUL) has its output ignored, with a warning; its
exit code 2 still cancels. A hook that fails (cannot start, exits with another code, times
out, answers JSON of another shape: another object, an array, a string, a number) is
reported to the editor as a warning and changes nothing: the compaction goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_server.context.trigger import CompactionHooks
from agent_server.literal import without_escape_sequences
from agent_server.session.entries import CompactionReason
from agent_server.stderr_log import shorten

MAX_OUTPUT = 64 * 1024
MAX_INSTRUCTIONS = 4000
# The reasons whose compaction a hook may cancel: the context still fits without it.
CANCELLABLE: frozenset[str] = frozenset({"threshold", "requested", "idle", "manual"})
_CANCEL_EXIT = 2
# Seconds a cancelled run waits for its killed hook to be gone (see _reap).
_REAP_GRACE = 5.0
# The fields a `before` hook's JSON answer may have.
_ANSWER_FIELDS = ("cancel", "instructions", "reason")


@dataclass(frozen=True, slots=True)
class HookRun:
    """What one command did: its exit code (None: it did not finish), its output, and
    `problem` when it failed."""

    command: str
    exit_code: int | None
    stdout: str
    stderr: str
    problem: str | None = None
    # Why its standard output cannot be read as an answer (more than MAX_OUTPUT bytes, or not
    # text); `stdout` is then what was read, decoded with replacement characters.
    unreadable: str | None = None


@dataclass(frozen=True, slots=True)
class BeforeVerdict:
    """What the `before` hooks said: `cancel` with its `reason`, or the `instructions` they
    add (None: none); `problems`, one line per hook that failed."""

    cancel: bool = False
    reason: str = ""
    instructions: str | None = None
    problems: tuple[str, ...] = ()


class CompactionHookRunner:
    """Runs a session's compaction hooks. `environment` gives the variables a command gets
    (read at each run: the `tools.env.pass` setting may change)."""

    def __init__(
        self, workspace: Path, session_id: str, environment: Callable[[], Mapping[str, str]]
    ) -> None:
        self.workspace = workspace
        self.session_id = session_id
        self._environment = environment

    async def before(
        self, hooks: CompactionHooks, reason: CompactionReason, event: Mapping[str, Any]
    ) -> BeforeVerdict:
        """Runs every `before` hook, in order, with `event` (plus the common fields); a cancel
        stops the rest."""
        payload = self._payload("beforeCompaction", reason, event)
        instructions: list[str] = []
        problems: list[str] = []
        for command in hooks.before:
            run = await run_hook(command, payload, self.workspace, self._environment(),
                                 hooks.timeout)
            verdict = read_before(run)
            problems += verdict.problems
            if verdict.instructions:
                instructions.append(verdict.instructions)
            if verdict.cancel:
                return BeforeVerdict(True, verdict.reason, None, tuple(problems))
        text = "\n\n".join(instructions)
        if len(text) > MAX_INSTRUCTIONS:
            problems.append(
                f"the compaction hooks' instructions were cut to {MAX_INSTRUCTIONS} characters "
                f"(they gave {len(text)})"
            )
            text = text[:MAX_INSTRUCTIONS]
        return BeforeVerdict(False, "", text or None, tuple(problems))

    async def after(
        self, hooks: CompactionHooks, reason: CompactionReason, event: Mapping[str, Any]
    ) -> tuple[str, ...]:
        """Runs every `after` hook with `event`; the problems of those that failed."""
        payload = self._payload("afterCompaction", reason, event)
        problems: list[str] = []
        for command in hooks.after:
            run = await run_hook(command, payload, self.workspace, self._environment(),
                                 hooks.timeout)
            if run.problem is not None:
                problems.append(run.problem)
        return tuple(problems)

    def _payload(self, name: str, reason: CompactionReason, event: Mapping[str, Any]) -> bytes:
        data = {"event": name, "sessionId": self.session_id, "workspace": str(self.workspace),
                "reason": reason, **event}
        return json.dumps(data, ensure_ascii=False).encode("utf-8")


def read_before(run: HookRun) -> BeforeVerdict:
    """A `before` hook's answer, from its exit code and output (see the module docstring)."""
    where = f"compaction hook {shorten(run.command, 80)!r}"
    if run.exit_code == _CANCEL_EXIT and run.problem is None:
        said = run.stderr.strip() or run.stdout.strip() or "no reason given"
        return BeforeVerdict(True, f"{where}: {shorten(said, 500)}")
    if run.problem is not None:
        return BeforeVerdict(problems=(run.problem,))
    if run.unreadable is not None:
        return BeforeVerdict(problems=(f"{where} {run.unreadable}: its output is ignored",))
    text = run.stdout.strip()
    if not text:
        return BeforeVerdict()
    try:
        answer = json.loads(text)
    except ValueError:
        return BeforeVerdict(instructions=text)
    if not _understood(answer):
        return BeforeVerdict(problems=(
            f"{where} answered JSON this version does not understand ({shorten(text, 200)}); "
            'expected {"instructions": "..."} or {"cancel": true, "reason": "..."}',
        ))
    reason, instructions = (
        without_escape_sequences(answer.get(key) or "").strip()
        for key in ("reason", "instructions")
    )
    if answer.get("cancel"):
        return BeforeVerdict(True, f"{where}: {shorten(reason or 'no reason given', 500)}")
    return BeforeVerdict(instructions=instructions or None)


def _understood(answer: object) -> bool:
    """Whether a JSON answer is one of the two a `before` hook may give (an object with only
    `cancel` (a boolean), `instructions` and `reason` (strings)); an array, a string, a number
    or another object is not."""
    if not isinstance(answer, dict) or set(answer) - set(_ANSWER_FIELDS):
        return False
    cancel, instructions, reason = (answer.get(k) for k in _ANSWER_FIELDS)
    return (
        isinstance(cancel, bool | None)
        and isinstance(instructions, str | None)
        and isinstance(reason, str | None)
    )


async def run_hook(
    command: str, payload: bytes, cwd: Path, env: Mapping[str, str], seconds: float
) -> HookRun:
    """Runs `command` through the shell with `payload` on its standard input, for at most
    `seconds` (then its process group is killed), reading at most MAX_OUTPUT bytes of
    each output."""
    where = f"compaction hook {shorten(command, 80)!r}"
    try:
        process = await asyncio.create_subprocess_exec(
            *_shell(command),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=sys.platform != "win32",
        )
    except OSError as error:
        return HookRun(command, None, "", "", f"{where} could not start: {error}")
    try:
        async with asyncio.timeout(seconds):
            (stdout, stdout_cut), (stderr, _), _ = await asyncio.gather(
                _read_bounded(process.stdout),
                _read_bounded(process.stderr),
                _feed(process, payload),
            )
            code = await process.wait()
    except TimeoutError:
        _kill(process)
        await process.wait()
        return HookRun(command, None, "", "", f"{where} did not finish in {seconds:g} s: stopped")
    except asyncio.CancelledError:
        _kill(process)
        await _reap(process)
        raise
    out, err = _decode(stdout), _decode(stderr)
    if code not in (0, _CANCEL_EXIT):
        # Said once, by the problem (the editor's warning); a log line too would repeat it
        # wherever the server's stderr is shown (the terminal chat's screen).
        detail = shorten(err.strip() or out.strip() or "no output", 300)
        return HookRun(command, code, out, err, f"{where} exited with code {code}: {detail}")
    return HookRun(command, code, out, err, unreadable=_unreadable(stdout, stdout_cut))


def _shell(command: str) -> Sequence[str]:
    if sys.platform == "win32":
        return ("cmd", "/c", command)
    return ("/bin/sh", "-c", command)


async def _feed(process: asyncio.subprocess.Process, payload: bytes) -> None:
    stdin = process.stdin
    assert stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(payload)
        await stdin.drain()
    stdin.close()


async def _read_bounded(stream: asyncio.StreamReader | None) -> tuple[bytes, bool]:
    """At most MAX_OUTPUT bytes of `stream`, and whether there was more; the rest is read and
    dropped, so that the command never blocks on a full pipe."""
    assert stream is not None
    kept = bytearray()
    cut = False
    while chunk := await stream.read(65536):
        room = max(0, MAX_OUTPUT - len(kept))
        cut = cut or len(chunk) > room
        kept += chunk[:room]
    return bytes(kept), cut


def _unreadable(data: bytes, cut: bool) -> str | None:
    """Why a command's standard output (`data`: what was read; `cut`: there was more) cannot
    be read as an answer, or None: a cut answer is not parsed as a half of one, and bytes
    that are not text are not handed to the model as instructions."""
    if cut:
        return f"printed more than {MAX_OUTPUT:,} bytes (the most an answer may be)"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"printed bytes that are not UTF-8 text (at byte {error.start:,})"
    nul = data.find(b"\0")
    if nul >= 0:
        return f"printed binary data (a NUL at byte {nul:,})"
    return None


def _decode(data: bytes) -> str:
    """A command's output as text: without a leading byte order mark, nor terminal escape
    sequences (see the module docstring)."""
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    return without_escape_sequences(text)


async def _reap(process: asyncio.subprocess.Process) -> None:
    """Waits for a killed hook to be gone, its pipes closed: asyncio closes the process's
    transport only then, and one left open when the event loop closes fails later, when it is
    collected ("Event loop is closed"). Bounded: a child that left the process group can hold
    the pipes open."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(_REAP_GRACE):
            await process.wait()


def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if sys.platform == "win32":
            process.kill()
        else:
            os.killpg(process.pid, signal.SIGKILL)
