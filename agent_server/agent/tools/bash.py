"""bash: run a shell command in the workspace.

The command runs as `bash -c` in its own session (so in its own process group), with the
workspace as working directory, no standard input (or, with `tools.terminal.visible`, what the
user types in the editor's terminal: command_input.py), stdout and stderr merged, in the sandbox
when the session's confinement says so (sandbox.py). Output is redacted as it arrives (once,
for every sink: the live stream, the saved full output, the model's copy) and streams through
`ctx.on_output` line by line, up to the output bounds. A timeout, or cancelling the call, ends
the whole process group: SIGTERM, then SIGKILL after a short grace. The environment loses
every variable that holds a secret (environment.py). The result keeps the head and the tail
of the output (and the error lines between: output.py), as text: colours kept (an editor
draws them), every other escape sequence (a title, OSC 52, OSC 8, a cursor move) taken out
whole, other control and invisible characters (a lone ESC or
CR, bidi overrides) shown as escapes (literal.output_text).

Where the session has a `CommandTerminal` (an ACP editor that offers terminals), the same
confined command line, made whole by `Launch.shell_argv`, runs there instead, with the same
environment, timeout and output bounds, and the model gets the same result.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import re
import signal
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_server.agent.tools.base import (
    CommandTerminal,
    ToolContext,
    ToolKind,
    ToolResult,
    display_arg,
    float_arg,
    str_arg,
)
from agent_server.agent.tools.command_input import CommandInput
from agent_server.agent.tools.environment import tool_environment
from agent_server.agent.tools.output import (
    COMMAND_MAX_BYTES,
    TRUNCATED,
    StreamingOutput,
    command_limits,
)
from agent_server.agent.tools.paths import resolve_in_workspace
from agent_server.agent.tools.sandbox import Launch, confine
from agent_server.errors import ToolError
from agent_server.literal import literal, output_text, without_escape_sequences
from agent_server.llm.messages import TextContent, ToolSpec
from agent_server.redaction import StreamRedactor

MAX_TIMEOUT = 600.0
KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL
DRAIN_GRACE = 1.0  # seconds to wait for output after bash exits (background jobs may hold it)
_CHUNK = 65536
# How an output ended, noted in the result's details (`ending`): the whole output when it
# is this short (a reproduction's few lines), else its last line (a run's verdict), at most
# LAST_LINE_CHARS.
SHORT_OUTPUT_CHARS = 300
LAST_LINE_CHARS = 200
# A run that ends with a block of counts, a line each, says its verdict there, not on its
# last line (Node's `node --test`: "# tests 193", "# pass 193", "# fail 0", ... "# duration_ms
# 189.8"; its spec reporter the same after "ℹ"): the block is the ending, its lines joined,
# the time it took left out (the same run is the same ending).
_COUNT_LINE = re.compile(
    r"^\s*(?:[#ℹ]\s*)?[A-Za-z][A-Za-z_ ]{0,20}?:?\s+\d[\d.,]*(?:\s?[a-z]{1,2})?$")
_TIMING = re.compile(r"duration|time|elapsed", re.IGNORECASE)
_COUNTS_JOINED = " · "
_PARTIAL_FLUSH = 4096  # stream an unfinished line once it is this long
_INTERRUPTED = "The user interrupted the command (Ctrl-C in the editor's terminal)."

logger = logging.getLogger(__name__)

SPEC = ToolSpec(
    name="bash",
    description=(
        "Run a shell command with bash in the workspace root (stdout and stderr merged, no "
        "input). Returns the output and the exit code; a non-zero exit code is reported as an "
        "error. Long output keeps its first and last lines (at most "
        f"{COMMAND_MAX_BYTES // 1024} KB in all) and the lines between "
        "that report errors; the full output is saved to a file that grep and read can open "
        "(recall finds it too). The command is killed, with its child processes, when it "
        "exceeds the timeout (seconds; the default is the user's setting, normally 120; at "
        f"most {int(MAX_TIMEOUT)}). Do not start interactive programs or servers that never "
        "exit; a command's background jobs may be stopped when it ends, and their later "
        "output is lost. Commands normally run in a sandbox (the workspace writable, the "
        "home directory empty, no network unless the user allowed it); only when one failed "
        "because of that, run it again with outsideSandbox: the user is asked."
    ),
    parameters={
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line, run with bash -c"},
            "timeout": {
                "type": "number",
                "minimum": 1,
                "maximum": MAX_TIMEOUT,
                "description": "Seconds before the command is killed",
            },
            "outsideSandbox": {
                "type": "boolean",
                "description": "Ask the user to run it outside the sandbox",
            },
        },
        "required": ["command"],
    },
)


class BashTool:
    spec = SPEC
    read_only = False
    kind: ToolKind = "execute"

    def paths(self, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        return ()

    def title(self, arguments: Mapping[str, Any]) -> str:
        where = " outside the sandbox" if arguments.get("outsideSandbox") is True else ""
        return f"Run{where}: {display_arg(arguments, 'command', '?')}"

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        command = str_arg(arguments, "command")
        if not command.strip():
            raise ToolError("command is empty. Give a shell command to run.")
        timeout = min(float_arg(arguments, "timeout", ctx.bash_timeout), MAX_TIMEOUT)
        if ctx.confinement.refused:
            raise ToolError(
                "Commands are not run here: the user's setting tools.sandbox is `always` and "
                f"{ctx.confinement.reason}. Do not retry; tell the user."
            )
        cwd = resolve_in_workspace(ctx.workspace, ".")
        environment = tool_environment(os.environ, ctx.secrets, ctx.env_pass)
        if environment.withheld:
            logger.debug("withheld from bash: %s", ", ".join(environment.withheld))
        launch = confine(["bash", "-c", command], cwd, ctx.confinement)
        try:
            argv = launch.shell_argv(environment.env) if ctx.terminal is not None else None
            if ctx.terminal is not None and argv is not None:
                result = await _in_terminal(
                    ctx.terminal, launch, argv, cwd, environment.env, timeout, ctx
                )
            else:
                result = await self._run(launch, cwd, environment.env, timeout, ctx)
        finally:
            await asyncio.shield(launch.aclose())
        if arguments.get("outsideSandbox") is True and ctx.confinement.sandboxed:
            kept_in = "It ran in the sandbox: the user did not let it out."
            return replace(result, content=(*result.content, TextContent("\n\n" + kept_in)))
        return result

    async def _run(
        self,
        launch: Launch,
        cwd: Path,
        env: dict[str, str],
        seconds: float,
        ctx: ToolContext,
    ) -> ToolResult:
        inputs = ctx.command_input
        stdin = await inputs.open(ctx.call_id) if inputs is not None else None
        try:
            return await self._run_with(launch, cwd, env, seconds, ctx, stdin)
        finally:
            if inputs is not None and stdin is not None:
                inputs.release(ctx.call_id)

    async def _run_with(
        self,
        launch: Launch,
        cwd: Path,
        env: dict[str, str],
        seconds: float,
        ctx: ToolContext,
        stdin: CommandInput | None,
    ) -> ToolResult:
        """The command with `stdin` as its input (what the user types in the editor's
        terminal), or none."""
        read_fd, write_fd = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                *launch.argv,
                cwd=cwd,
                env=env,
                stdin=stdin.read_fd if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=write_fd,
                stderr=write_fd,
                start_new_session=True,
                preexec_fn=_as_a_terminal_starts_it(launch.before_exec),
                pass_fds=launch.pass_fds,
            )
        except OSError as exc:
            os.close(read_fd)
            raise ToolError(f"Could not start bash: {exc}") from exc
        finally:
            os.close(write_fd)
            if stdin is not None:
                stdin.started()
        if stdin is not None:  # Ctrl-C in the editor's terminal: SIGINT, as a terminal's
            spared = proc.pid if launch.wrapped else None
            stdin.on_interrupt(lambda: _interrupt(proc.pid, spared))
        # Our own pipe (not asyncio's subprocess pipes), so that waiting for bash does not
        # wait for background jobs that inherited the pipe, and so that we can stop reading.
        pipe = os.fdopen(read_fd, "rb", buffering=0)
        output = StreamingOutput(ctx.spill_dir, "bash", command_limits(ctx.limits), ctx.limits,
                             followed=ctx.followed())
        transport: asyncio.BaseTransport | None = None
        pump: asyncio.Task[None] | None = None
        timed_out = False
        detached = False
        try:
            reader = asyncio.StreamReader(limit=2 * _CHUNK)
            transport, _ = await asyncio.get_running_loop().connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), pipe
            )
            pump = asyncio.create_task(_pump(reader, output, ctx))
            try:
                async with asyncio.timeout(seconds):
                    await proc.wait()
            except TimeoutError:
                timed_out = True
                await _shielded_terminate(proc.pid)
            done, _ = await asyncio.wait({pump}, timeout=DRAIN_GRACE)
            if pump not in done:
                detached = True  # background jobs still hold the output pipe
        except asyncio.CancelledError:
            await _shielded_terminate(proc.pid)
            raise
        finally:
            if stdin is not None:
                stdin.on_interrupt(None)  # reaped: its group id may be reused
            if pump is not None:
                await _stop(pump)
            if transport is not None:
                transport.close()
            else:
                pipe.close()
            output.close()
        notes = launch.limit_notes()
        if stdin is not None and stdin.interrupted:
            notes.append(_INTERRUPTED)
        return _result(output, proc.returncode, timed_out, detached, seconds, ctx, notes)


async def _in_terminal(
    terminal: CommandTerminal,
    launch: Launch,
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    seconds: float,
    ctx: ToolContext,
) -> ToolResult:
    """The command run in the editor's terminal (which shows it live, so nothing streams
    through `on_output`); its output redacted and bounded as a local run's is. The editor's
    kill (timeout, cancel) ends the command's first process: what is left in its cgroup is
    killed right after it (`kill_remaining`, before the terminal is released), as a local run
    ends its whole process group."""
    output = StreamingOutput(ctx.spill_dir, "bash", command_limits(ctx.limits), ctx.limits,
                             followed=ctx.followed())
    redactor = StreamRedactor(ctx.secrets)

    def record(piece: str) -> None:
        output.write(redactor.feed(piece))

    try:
        end = await terminal.run(
            ctx.call_id, argv, cwd, env, seconds, record, launch.kill_remaining
        )
        output.write(redactor.finish())
    except asyncio.CancelledError:
        launch.kill_remaining()  # a cancel before the terminal existed, or after its kill
        raise
    finally:
        output.close()
    return _result(output, end.code, end.timed_out, False, seconds, ctx, launch.limit_notes())


def _result(
    output: StreamingOutput,
    code: int | None,
    timed_out: bool,
    detached: bool,
    timeout: float,
    ctx: ToolContext,
    limit_notes: list[str],
) -> ToolResult:
    bounded = output.finish()
    # What the model (and the editor) gets is text: colours kept, other escape sequences
    # dropped whole, other control or invisible characters (a lone ESC, CR, U+202E) escaped.
    text = output_text(bounded.text)
    text = text if text.strip() else "(no output)"
    details: dict[str, Any] = {
        "exitCode": code,
        "timedOut": timed_out,
        **bounded.details(),
        "sandbox": ctx.confinement.to_json(),
        **({"ending": ending} if (ending := _ending(bounded.text)) else {}),
    }
    notes: list[str] = list(limit_notes)
    if detached:
        notes.append(
            "Background processes started by the command are still running; their further "
            "output is not captured."
        )
    if timed_out:
        notes.append(
            f"The command timed out after {timeout:g} seconds and was killed together with its "
            f"child processes. If it needs longer, pass a larger timeout (at most "
            f"{int(MAX_TIMEOUT)})."
        )
        return ToolResult.error(_join(text, notes), details)
    if code is None:
        notes.append("The command's exit status is unknown (the terminal did not report it).")
        return ToolResult.error(_join(text, notes), details)
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        notes.append(f"The command was killed by signal {name}.")
        return ToolResult.error(_join(text, notes), details)
    if code:
        notes.append(f"Exit code {code}.")
        return ToolResult.error(_join(text, notes), details)
    return ToolResult.of_text(_join(text, notes), details=details)


def _ending(output: str) -> str:
    """How the output ended, without its colours: the whole output when it is short, its
    lines as they are (their indentation kept: a table's alignment, a listing's nesting;
    blank lines left out), else its last line, or the block of counts it ends with
    (`_COUNT_LINE`), cut to LAST_LINE_CHARS (never the note of a cut); a compaction carries
    it beside a command that worked."""
    lines = [literal(line.rstrip()) for line in without_escape_sequences(output).splitlines()]
    lines = [line for line in lines if line.strip() and not line.lstrip().startswith(TRUNCATED)]
    if not lines:
        return ""
    whole = "\n".join(lines)
    if len(whole) <= SHORT_OUTPUT_CHARS:
        return whole
    last = lines[-1].strip()
    counts = _trailing_counts(lines)
    if len(counts) > 1 and (said := [c for c in counts if not _TIMING.search(c)]):
        last = _COUNTS_JOINED.join(said)
    return last if len(last) <= LAST_LINE_CHARS else last[: LAST_LINE_CHARS - 1] + "…"


def _trailing_counts(lines: list[str]) -> list[str]:
    """The block of count lines the output ends with (`_COUNT_LINE`), stripped, in order."""
    start = len(lines)
    while start > 0 and _COUNT_LINE.match(lines[start - 1]):
        start -= 1
    return [line.strip() for line in lines[start:]]


def _join(text: str, notes: list[str]) -> str:
    return "\n\n".join([text.rstrip("\n"), *notes]) if notes else text


async def _stop(pump: asyncio.Task[None]) -> None:
    if not pump.done():
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pump
    elif not pump.cancelled() and pump.exception() is not None:
        logger.warning("reading the command's output failed: %s", pump.exception())


async def _pump(reader: asyncio.StreamReader, output: StreamingOutput, ctx: ToolContext) -> None:
    """Reads the command's output, redacts it (as one text, whatever the chunks), records it
    and streams it line by line, up to the output bounds."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    redactor = StreamRedactor(ctx.secrets)
    pending = ""
    while True:
        data = await reader.read(_CHUNK)
        final = not data
        pending += decoder.decode(data, final=final)
        cut = max(pending.rfind("\n"), pending.rfind("\r")) + 1
        if final or (cut == 0 and len(pending) >= _PARTIAL_FLUSH):
            cut = len(pending)
        piece, pending = pending[:cut], pending[cut:]
        safe = redactor.feed(piece) + (redactor.finish() if final else "")
        live = output.write(safe)
        if live and ctx.on_output is not None:
            try:
                ctx.on_output(live)
            except Exception:
                logger.exception("on_output callback failed")
        if final:
            return


async def _shielded_terminate(pgid: int) -> None:
    """Ends the process group, even if the caller is cancelled again meanwhile."""
    await asyncio.shield(asyncio.ensure_future(terminate_process_group(pgid)))


async def terminate_process_group(pgid: int, grace: float = KILL_GRACE) -> None:
    """SIGTERM to every process in the group; SIGKILL to those still there after `grace`."""
    if not _signal_group(pgid, signal.SIGTERM):
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    while loop.time() < deadline:
        await asyncio.sleep(0.05)
        if not _group_alive(pgid):
            return
    _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        logger.warning("not allowed to signal process group %d", pgid)
        return False
    return True


def _group_alive(pgid: int) -> bool:
    """Whether any process of the group is still running (zombies do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _has_live_member(pgid)


def _as_a_terminal_starts_it(before: Callable[[], None] | None) -> Callable[[], None] | None:
    """What the child runs before exec: SIGINT and SIGQUIT back to their defaults and no
    signal blocked, as a terminal starts a program, then `before`. A server started with
    SIGINT ignored (a script's background job) or with signals blocked would pass that on
    through exec, and through the sandbox to the command, and Ctrl-C in the editor's terminal
    would reach nothing. Only where this thread holds one so (a handler of its own is reset by
    exec anyway): with nothing to run before exec, the child is started without forking the
    whole server (vfork), 0.5 ms against 13 ms for a server of 300 MB."""
    held = (signal.SIGINT, signal.SIGQUIT)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    if not any(signal.getsignal(sig) == signal.SIG_IGN or sig in blocked for sig in held):
        return before

    def run() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        if before is not None:
            before()

    return run


def _has_live_member(pgid: int) -> bool:
    members = _live_members(pgid)
    return True if members is None else bool(members)  # no /proc: the SIGKILL is harmless


def _live_members(pgid: int) -> list[int] | None:
    """The processes of the group that are not zombies; None where /proc cannot say."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    found: list[int] = []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read().decode("ascii", errors="replace")
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) >= 3 and fields[2] == str(pgid) and fields[0] != "Z":
            found.append(int(name))
    return found


def _interrupt(pgid: int, spared: int | None) -> bool:
    """Ctrl-C: SIGINT to the command's process group, as a terminal's goes to its foreground
    group, but not to `spared`, the sandbox's launcher: it would die of it and take the
    command with it before the command could handle it (a test run's summary, a trap). True
    when a process was signalled."""
    members = _live_members(pgid) if spared is not None else None
    if members is None:
        return _signal_group(pgid, signal.SIGINT)
    sent = False
    for pid in members:
        if pid != spared:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGINT)
                sent = True
    return sent
