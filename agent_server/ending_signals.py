"""SIGHUP and SIGTERM end the chat and the servers through their own close.

Left to Python's default, either signal ended the process at once: a command a turn was
running (in a process group of its own, perhaps unsandboxed) ran on with no one to stop it,
and the turn's end was never recorded. An editor that kills its language server or ACP agent
(rather than closing its input) sends one of them; a closed terminal sends SIGHUP.

While `EndingSignals` is entered, the first of them ends the process the way its normal close
does, and records the exit status it asks for (128 + the signal's number, as a shell says):

- by default (the chat) it raises `EndedBySignal` from wherever the main thread is: the chat
  waits for a line in a blocking `input()`, at its prompt or in a permission question inside
  a turn, where no event loop would run a callback;
- with `through_loop` (the LSP and ACP servers) it cancels what the server awaits through
  `stopping(work)`, the reading of its input, from the event loop: a callback between tasks'
  steps (as asyncio's own Ctrl-C handling does), never in the middle of one. The server goes
  on as at its input's end, closing its sessions (a running command is stopped: its process
  group gets SIGTERM, then SIGKILL; the turn's end is recorded), and exits with `status`.

Later signals, while that close runs, are let be: the close is bounded, and a second signal
must not cut it short. Bounded by a watchdog too: a close still under way CLOSE_LIMIT seconds
after the signal (a thread that never returns keeps the interpreter from exiting) has every
thread's stack written to stderr (the server's log) and the process ends with the status
anyway: a closed terminal or an editor's SIGTERM always ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import os
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from types import FrameType, TracebackType
from typing import Any, TypeVar

ENDING_SIGNALS = (signal.SIGHUP, signal.SIGTERM)
# Seconds the close after a signal may take before the process ends regardless: well past
# its bounded steps (a stopped turn's end, agent/turn.TURN_END_WAIT; MCP servers' exits).
CLOSE_LIMIT = 30.0
T = TypeVar("T")


class EndedBySignal(SystemExit):
    """SIGHUP or SIGTERM, raised where the chat is (its code is the exit status). A
    SystemExit, so that it leaves the event loop from wherever the signal lands (asyncio
    keeps other exceptions in the task they hit)."""


class EndingSignals:
    """The first SIGHUP or SIGTERM while entered: its exit status in `status`, and the
    process ending through its close (see the module's description). A server passes
    `through_loop`: a signal ends only what it awaits through `stopping`, from the loop,
    and one that comes while nothing is, is recorded (the next `stopping` ends at once)."""

    def __init__(self, *, through_loop: bool = False) -> None:
        self.status: int | None = None
        self._end: Callable[[], object] = _nothing if through_loop else self._raise
        self._previous: dict[int, Callable[[int, FrameType | None], object] | int | None] = {}

    def __enter__(self) -> EndingSignals:
        for number in ENDING_SIGNALS:
            self._previous[number] = signal.signal(number, self._received)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous.clear()

    def _received(self, number: int, _frame: FrameType | None) -> None:
        if self.status is not None:
            return  # the close is under way
        self.status = 128 + number
        watchdog = threading.Timer(CLOSE_LIMIT, _end_now, args=(self.status,))
        watchdog.daemon = True  # a process that ends first takes it along
        watchdog.start()
        self._end()

    def signalled(self) -> bool:
        """Whether a signal came (a method: it changes behind a type checker's back)."""
        return self.status is not None

    def _raise(self) -> None:
        raise EndedBySignal(self.status)

    async def stopping(self, work: Coroutine[Any, Any, T]) -> T | None:
        """What `work` gives; None when a signal ended it (cancelled, from the loop) or had
        come before it started. A signal after it, while the caller closes, is recorded."""
        if self.signalled():
            work.close()
            return None
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(work)
        previous, self._end = self._end, lambda: loop.call_soon_threadsafe(task.cancel)
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not self.signalled() or (current is not None and current.cancelling()):
                raise  # cancelled from outside, not by a signal
            return None
        finally:
            self._end = previous


def _end_now(status: int) -> None:
    """The close after a signal outlived CLOSE_LIMIT: say where every thread is, and end."""
    with contextlib.suppress(Exception):
        sys.stderr.write(
            f"agent-server: still closing {CLOSE_LIMIT:g} s after the signal; ending now. "
            "Where each thread was:\n"
        )
        sys.stderr.flush()
        faulthandler.dump_traceback(all_threads=True)
    os._exit(status)


def _nothing() -> None:
    """What a signal does while a server is not reading: nothing but record its status."""
