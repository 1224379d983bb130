"""Commands in the editor's terminal: the bash tool through `terminal/create`,
`terminal/output`, `terminal/wait_for_exit`, `terminal/kill` and `terminal/release`, when the
client offers `terminal: true`.

The editor runs the very command line the bash tool would run here, made whole by
`Launch.shell_argv` (bubblewrap with the protected paths when the session is sandboxed, the
cgroup and rlimits, no input, stderr merged, `env -i` with the scrubbed environment, which
goes in `env`: nothing of the editor's own environment reaches the command). The tool call
shows the terminal, live, and keeps showing it when the command ends. The output is read back
every POLL_SECONDS (less often as it grows) and goes through the tool's redaction and bounds,
so the model gets what a local run gives it. The timeout and a cancel kill the command
(`terminal/kill`, then what is left in its cgroup, before the release: an editor may answer a
release only once the output closes, which a leftover child holding it open would delay); the
terminal is released whatever happens, and no answer of the editor's is waited for past
KILL_WAIT. A command line that cannot be handed over (the seccomp filter of a sandbox with
network is a descriptor) runs here, as for a client without terminals.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path

from acp import RequestError
from acp.interfaces import Client
from acp.schema import (
    CreateTerminalResponse,
    EnvVariable,
    TerminalExitStatus,
    WaitForTerminalExitResponse,
)

from agent_server.agent.tools.base import CommandEnd, OutputCallback
from agent_server.errors import ToolError

log = logging.getLogger(__name__)

POLL_SECONDS = 0.5
# What the editor keeps of the output (it drops the beginning past it): far more than one
# poll interval brings, so the full output can be saved as a local run saves it.
OUTPUT_BYTE_LIMIT = 4 * 1024 * 1024
KILL_WAIT = 10.0  # seconds to wait for the editor to report the exit after a kill
_TAIL = 4096  # characters at the end of the last read that find where a new read overlaps it
LOST = "\n[... output the editor's terminal dropped before it was read ...]\n"


class EditorTerminal:
    """A session's `CommandTerminal` (agent/tools/base.py) in the editor. `flush` runs first,
    so that the editor has heard of the tool call; `show` tells the card its terminal."""

    def __init__(
        self,
        client: Client,
        session_id: str,
        *,
        flush: Callable[[], Awaitable[None]],
        show: Callable[[str, str], None],
    ) -> None:
        self._client = client
        self._session_id = session_id
        self._flush = flush
        self._show = show

    async def run(
        self,
        call_id: str,
        argv: Sequence[str],
        cwd: Path,
        env: Mapping[str, str],
        seconds: float,
        output: OutputCallback,
        kill_remaining: Callable[[], None],
    ) -> CommandEnd:
        await self._flush()
        creating = asyncio.ensure_future(
            self._client.create_terminal(
                session_id=self._session_id,
                command=argv[0],
                args=list(argv[1:]),
                env=[EnvVariable(name=name, value=value) for name, value in env.items()],
                cwd=str(cwd),
                output_byte_limit=OUTPUT_BYTE_LIMIT,
            )
        )
        try:
            created = await asyncio.shield(creating)
        except asyncio.CancelledError:
            await asyncio.shield(self._abandon(creating, kill_remaining))
            raise
        except RequestError as error:
            raise ToolError(f"The editor could not start the command: {error}") from error
        terminal_id = created.terminal_id
        self._show(call_id, terminal_id)
        await self._flush()  # the editor hears of the terminal before anything releases it
        reader = OutputReader(output)
        try:
            return await self._follow(terminal_id, seconds, reader, kill_remaining)
        finally:
            await asyncio.shield(self._release(terminal_id))

    async def _abandon(
        self, creating: asyncio.Future[CreateTerminalResponse], kill_remaining: Callable[[], None]
    ) -> None:
        """A cancel while the editor was starting the command: the command it starts anyway
        is killed and its terminal released once its id is known (no one else would)."""
        done, _ = await asyncio.wait({creating}, timeout=KILL_WAIT)
        if creating not in done or creating.cancelled() or creating.exception() is not None:
            creating.cancel()
            return
        terminal_id = creating.result().terminal_id
        await self._kill(terminal_id, kill_remaining)
        await self._release(terminal_id)

    async def _follow(
        self,
        terminal_id: str,
        seconds: float,
        reader: OutputReader,
        kill_remaining: Callable[[], None],
    ) -> CommandEnd:
        exited = asyncio.ensure_future(
            self._client.wait_for_terminal_exit(
                session_id=self._session_id, terminal_id=terminal_id
            )
        )
        timed_out = False
        try:
            async with asyncio.timeout(seconds):
                while not exited.done():
                    await asyncio.wait({exited}, timeout=reader.interval())
                    await self._read(terminal_id, reader)
        except TimeoutError:
            timed_out = True
            await self._kill(terminal_id, kill_remaining)
        except asyncio.CancelledError:
            await asyncio.shield(self._kill(terminal_id, kill_remaining))
            exited.cancel()
            raise
        status = await self._exit_status(exited)
        await self._read(terminal_id, reader)
        return CommandEnd(exit_code(status), timed_out)

    async def _exit_status(
        self, exited: asyncio.Future[WaitForTerminalExitResponse]
    ) -> WaitForTerminalExitResponse | TerminalExitStatus | None:
        done, _ = await asyncio.wait({exited}, timeout=KILL_WAIT)
        if exited not in done:
            exited.cancel()
            log.warning("the editor did not report the end of a killed command")
            return None
        try:
            return exited.result()
        except RequestError as error:
            log.warning("the editor did not report how the command ended: %s", error)
            return None

    async def _read(self, terminal_id: str, reader: OutputReader) -> None:
        try:
            response = await self._client.terminal_output(
                session_id=self._session_id, terminal_id=terminal_id
            )
        except (RequestError, ConnectionError) as error:
            log.warning("could not read the editor's terminal: %s", error)
            return
        reader.take(response.output)

    async def _kill(self, terminal_id: str, kill_remaining: Callable[[], None]) -> None:
        """The editor's kill of the command, then ours of what is left in its cgroup (a child
        that outlived the first process and still holds the output open)."""
        await self._request("kill", self._client.kill_terminal, terminal_id)
        kill_remaining()

    async def _release(self, terminal_id: str) -> None:
        await self._request("release", self._client.release_terminal, terminal_id)

    async def _request(
        self, what: str, method: Callable[..., Awaitable[object]], terminal_id: str
    ) -> None:
        """`terminal/kill` or `terminal/release`, waited for at most KILL_WAIT: an editor that
        never answers does not hold the turn (nor one that answers a release once the output
        closes, while a process the cgroup kill could not reach holds it open)."""
        with contextlib.suppress(asyncio.CancelledError):
            try:
                async with asyncio.timeout(KILL_WAIT):
                    await method(session_id=self._session_id, terminal_id=terminal_id)
            except TimeoutError:
                log.warning("the editor did not answer terminal/%s for %s", what, terminal_id)
            except (RequestError, ConnectionError) as error:
                log.warning("the editor could not %s terminal %s: %s", what, terminal_id, error)


class OutputReader:
    """Turns the editor's whole retained output, read again and again, into the pieces that
    are new since the last read. When the editor dropped the beginning (past its byte limit),
    the new part is what follows the longest end of the last read that the output starts
    with (found by where the last read's final _TAIL characters last occur in the new one,
    one search and one comparison however the output repeats); if the drop went past the
    last read, a note says output was lost. (An output repeating itself exactly can align
    more than one way: the longest overlap is taken.)"""

    def __init__(self, output: OutputCallback) -> None:
        self._output = output
        self._seen = ""

    def interval(self) -> float:
        """Seconds until the next read: longer as the output grows (each read brings all of
        it), from POLL_SECONDS up to ten times that past 2.5 MB."""
        return POLL_SECONDS * min(10, 1 + len(self._seen) // (256 * 1024))

    def take(self, text: str) -> None:
        self._give(self._new(text))
        self._seen = text

    def _new(self, text: str) -> str:
        seen = self._seen
        if text.startswith(seen):
            return text[len(seen) :]
        tail = seen[-_TAIL:]
        end = len(text)
        while tail and (at := text.rfind(tail, 0, end)) >= 0:
            overlap = at + len(tail)
            if seen.endswith(text[:overlap]):
                return text[overlap:]
            end = overlap - 1
        return LOST + text

    def _give(self, new: str) -> None:
        if new:
            self._output(new)


def exit_code(status: WaitForTerminalExitResponse | TerminalExitStatus | None) -> int | None:
    """The exit as asyncio reports a child's: the code, or minus the signal's number."""
    if status is None:
        return None
    if status.exit_code is not None:
        return status.exit_code
    name = (status.signal or "").upper()
    name = name if name.startswith("SIG") else f"SIG{name}"
    try:
        return -signal.Signals[name].value
    except KeyError:
        return None
