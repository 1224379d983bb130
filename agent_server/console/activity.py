"""What is running now, at the bottom of a terminal chat: a spinner with what the agent waits
for (the model, or a command) and how long it has, and a running command's last lines as
they arrive.

One region, redrawn in place (Rich's Live), below everything printed: the transcript goes
above it as usual and is never redrawn. The region is cut to the terminal's width (one row
per line, whatever the command writes) and to a few lines, so it never scrolls; it is gone
when the turn ends, before a question is asked, and at Ctrl-C. Text is shown literally.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from agent_server.console.render import shown

LIVE_LINES = 5  # a running command's last lines shown


class Activity:
    def __init__(self, console: Console) -> None:
        self.console = console
        self._live: Live | None = None
        self._label = ""
        self._since = 0.0
        self._lines: list[str] = []
        self._partial = ""
        self._paused = False

    def waiting(self, label: str) -> None:
        """Something runs with no output of its own to show (`thinking`, a tool)."""
        self._set(label)

    def command(self, title: str) -> None:
        """A command started: its output follows through `output`."""
        self._set(title)

    def output(self, text: str) -> None:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        self._lines = (self._lines + lines)[-LIVE_LINES:]
        self._refresh()

    def stop(self) -> None:
        """The turn ended (or was stopped): the region goes away."""
        self._label = ""
        if self._live is not None:
            self._live.stop()
            self._live = None

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No region while a question waits for an answer; back after."""
        live, self._live = self._live, None
        if live is not None:
            live.stop()
        try:
            yield
        finally:
            if live is not None and self._label:
                self._start()

    def _set(self, label: str) -> None:
        self._label, self._since = label, time.monotonic()
        self._lines, self._partial = [], ""
        if self._live is None:
            self._start()
        else:
            self._refresh()

    def _start(self) -> None:
        self._live = Live(_Region(self), console=self.console, refresh_per_second=8, transient=True)
        self._live.start()

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.refresh()


class _Region:
    """The region, drawn anew at each refresh (the spinner's frame and the seconds move)."""

    def __init__(self, activity: Activity) -> None:
        self.activity = activity
        self.spinner = Spinner("dots", style="cyan")

    def __rich__(self) -> RenderableType:
        activity = self.activity
        seconds = time.monotonic() - activity._since
        frame = self.spinner.render(time.monotonic())
        head = frame if isinstance(frame, Text) else Text()
        head.append(f" {seconds:.0f}s · Ctrl-C stops · ", style="dim")
        head.append_text(shown(activity._label, "bold", one_line=True))
        head.no_wrap, head.overflow = True, "ellipsis"
        rows: list[RenderableType] = [head]
        tail = [*activity._lines, activity._partial] if activity._partial else activity._lines
        for line in tail[-LIVE_LINES:]:
            row = Text("    ", style="dim") + shown(line, "dim", one_line=True)
            row.no_wrap, row.overflow = True, "ellipsis"
            rows.append(row)
        return Group(*rows)
