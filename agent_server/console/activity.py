"""What is running now, at the bottom of a terminal chat: a spinner with what the agent waits
for (the model, or a command) and how long it has, and a running command's last lines as
they arrive.

One region, redrawn in place (Rich's Live), below everything printed: the transcript goes
above it as usual and is never redrawn. The region is cut to the terminal's width (one row
per line, whatever the command writes) and to a few lines, so it never scrolls; it is gone
when the turn ends and before a question is asked. Text is shown literally. The first Ctrl-C
of a turn turns it into "stopping the turn" (with what Ctrl-C does now) until the turn has
stopped: killing a command or closing the model's answer can take seconds. A terminal
narrowed meanwhile wraps the region's longer lines onto more rows: the region is erased by
the rows its lines take at the new width (`_ReflowingRender`), not one row a line.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.control import Control
from rich.live import Live
from rich.live_render import LiveRender
from rich.segment import Segment
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
        self._stopping = False

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

    def stopping(self, label: str = "stopping the turn") -> None:
        """The user asked the turn (or a /compact) to stop: `label` said until it has
        (what it was running and a command's last lines stay below)."""
        self._stopping = False
        self._set(label, keep_lines=True)
        self._stopping = True

    def stop(self) -> None:
        """The turn ended (or was stopped): the region goes away."""
        if self._live is not None:
            self._live.stop()
            self._live = None
        self._label = ""
        self._stopping = False

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

    def _set(self, label: str, *, keep_lines: bool = False) -> None:
        if self._stopping:  # what the stopping turn still does
            return
        self._label, self._since = label, time.monotonic()
        if not keep_lines:
            self._lines, self._partial = [], ""
        if self._live is None:
            self._start()
        else:
            self._refresh()

    def _start(self) -> None:
        self._live = Live(_Region(self), console=self.console, refresh_per_second=8, transient=True)
        self._live._live_render = _ReflowingRender(self._live._live_render.renderable)
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
        keys = "Ctrl-C again quits" if activity._stopping else "Ctrl-C stops"
        head.append(f" {seconds:.0f}s · {keys} · ", style="dim")
        head.append_text(shown(activity._label, "bold", one_line=True))
        head.no_wrap, head.overflow = True, "ellipsis"
        rows: list[RenderableType] = [head]
        tail = [*activity._lines, activity._partial] if activity._partial else activity._lines
        for line in tail[-LIVE_LINES:]:
            row = Text("    ", style="dim") + shown(line, "dim", one_line=True)
            row.no_wrap, row.overflow = True, "ellipsis"
            rows.append(row)
        return Group(*rows)


class _ReflowingRender(LiveRender):
    """Rich's live render (what Live draws and erases), erasing as many rows as its last
    lines take at the terminal's width now. Rich counts one row a line; a terminal narrowed
    since has wrapped each longer line onto more rows (tmux, VTE, iTerm2, kitty and Windows
    Terminal reflow), and those rows would stay on screen as stale spinner lines."""

    def __init__(self, renderable: RenderableType) -> None:
        super().__init__(renderable)
        self._widths: list[int] = []  # the cells of each line last drawn
        self._console: Console | None = None

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = [0]
        for segment in super().__rich_console__(console, options):
            if isinstance(segment, Segment):  # (LiveRender yields nothing else)
                if segment.text == "\n":
                    widths.append(0)
                else:
                    widths[-1] += segment.cell_length
            yield segment
        self._widths, self._console = widths, console

    def position_cursor(self) -> Control:
        self._reflow()
        return super().position_cursor()

    def restore_cursor(self) -> Control:
        self._reflow()
        return super().restore_cursor()

    def _reflow(self) -> None:
        """The last render's height: the rows its lines take at the width now."""
        if self._shape is not None and self._console is not None:
            width = max(1, self._console.width)
            rows = sum(max(1, -(-cells // width)) for cells in self._widths)
            self._shape = (self._shape[0], rows)
