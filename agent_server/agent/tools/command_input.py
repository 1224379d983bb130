"""What the user types into a running command: its standard input, from the editor.

With `tools.terminal.visible` on, the editor shows the session's commands in a terminal of
its own and sends the keys typed there (`agent/tool/input`). The bash tool then gives the
command a pipe for its standard input, instead of /dev/null, and registers its writing end
here under the tool call's id while the command runs; the front end writes what arrives to
it (`CommandInputs.write`). The command still runs in the server, confined as any other.

The front end that runs a turn says where its commands' input comes from
(`AgentSession.run_turn(..., command_input=...)`); the turn loop gives it to each tool call's
context (`ToolContext.command_input`). Where no front end gives one (the terminal chat, ACP,
a test), commands get no input.

Ctrl-C in that terminal interrupts the command, as a terminal's would: the bash tool says how
(`CommandInput.on_interrupt`: SIGINT to the command's process group) while the command runs,
and `CommandInputs.interrupt` does it. The command ends as it handles SIGINT; the turn goes on,
and the result tells the model the user interrupted it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable

logger = logging.getLogger(__name__)

# What one running command's input may hold, written but not yet read: past it, more input
# is dropped (a command that reads nothing does not make the server hold what is typed).
MAX_BUFFERED = 1 << 20


class CommandInput:
    """One command's standard input: a pipe whose reading end the command gets (`read_fd`,
    closed here once the command has it: `started`) and whose writing end is ours."""

    def __init__(self) -> None:
        self.read_fd, write_fd = os.pipe()
        self._read_open = True
        os.set_blocking(write_fd, False)
        self._file = os.fdopen(write_fd, "wb", buffering=0)
        self._transport: asyncio.WriteTransport | None = None
        self._pipe: _WritingEnd | None = None
        self._interrupt: Callable[[], bool] | None = None
        self.interrupted = False  # the user interrupted the command (Ctrl-C)

    async def connect(self) -> None:
        """The writing end on the event loop (writes then wait there, never block it)."""
        loop = asyncio.get_running_loop()
        self._transport, self._pipe = await loop.connect_write_pipe(_WritingEnd, self._file)

    def started(self) -> None:
        """The command has the reading end (or could not start): ours is closed, so that the
        pipe breaks when the command, not the server, lets it go."""
        if self._read_open:
            self._read_open = False
            os.close(self.read_fd)

    def on_interrupt(self, interrupt: Callable[[], bool] | None) -> None:
        """How to interrupt the command while it runs (True when it was signalled); None
        once it has ended, so that a late Ctrl-C signals nothing."""
        self._interrupt = interrupt

    def interrupt(self) -> bool:
        """Ctrl-C: the command interrupted; False when it does not run (yet, or any more)."""
        if self._interrupt is None or not self._interrupt():
            return False
        self.interrupted = True
        return True

    def write(self, data: bytes, end: bool) -> bool:
        """`data` to the command, then (`end`) the end of its input; False when the input is
        already closed, or `data` would fill what it may hold."""
        transport = self._transport
        if transport is None or transport.is_closing():
            return False
        if transport.get_write_buffer_size() + len(data) > MAX_BUFFERED:
            return False
        if data:
            transport.write(data)
        if end:
            transport.close()  # after what is buffered: the command reads it, then EOF
        return True

    def close(self) -> None:
        """The command has ended: the pipe goes, whatever is left unread."""
        if self._transport is not None:
            if self._pipe is not None and not self._pipe.lost:
                self._transport.abort()
        else:
            self._file.close()
        self.started()


class _WritingEnd(asyncio.BaseProtocol):
    """The writing end's protocol: whether the pipe is gone (its transport then is too)."""

    lost = False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True


class CommandInputs:
    """The running commands of one session's turn that take input, by tool call id.
    `enabled` is read as each command starts (the session's `tools.terminal.visible`)."""

    def __init__(self, enabled: Callable[[], bool] = lambda: True) -> None:
        self._enabled = enabled
        self._running: dict[str, CommandInput] = {}

    async def open(self, call_id: str) -> CommandInput | None:
        """A pipe for the command of `call_id`, registered until `release`; None when the
        setting is off (the command gets /dev/null)."""
        if not self._enabled():
            return None
        pipe = CommandInput()
        try:
            await pipe.connect()
        except BaseException:
            pipe.close()
            raise
        self._running[call_id] = pipe
        return pipe

    def release(self, call_id: str) -> None:
        pipe = self._running.pop(call_id, None)
        if pipe is not None:
            pipe.close()

    def write(self, call_id: str, data: str, end: bool = False) -> bool:
        """What the user typed, to the running command of `call_id`; False (nothing written)
        when no such command is running, its input was closed, or it holds too much."""
        pipe = self._running.get(call_id)
        return pipe is not None and pipe.write(data.encode("utf-8"), end)

    def interrupt(self, call_id: str) -> bool:
        """Ctrl-C for the running command of `call_id`; False when no such command runs."""
        pipe = self._running.get(call_id)
        return pipe is not None and pipe.interrupt()
