"""Terminal rendering of a session, from the editor protocol's notifications.

The demo (an LSP client) and `agent-server chat` (which runs the agent in-process and turns
its events into the same JSON with lsp.wire) share this printer, so both show the same
transcript, meter and compaction markers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

METER_WIDTH = 24


def meter_colour(fraction: float) -> str:
    """The meter's colour: green, then yellow at 70%, orange at 85%, red at 95%."""
    if fraction >= 0.95:
        return "red"
    if fraction >= 0.85:
        return "dark_orange"
    if fraction >= 0.70:
        return "yellow"
    return "green"


def format_tokens(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)


def meter_text(usage: Mapping[str, Any]) -> Text:
    used, size = int(usage["used"]), max(int(usage["size"]), 1)
    fraction = used / size
    filled = min(METER_WIDTH, round(fraction * METER_WIDTH))
    mark = round(int(usage["compactAt"]) / size * METER_WIDTH)
    bar = "".join("█" if i < filled else ("│" if i == mark else "░") for i in range(METER_WIDTH))
    text = Text("context ")
    text.append(bar, style=meter_colour(fraction))
    text.append(
        f" {format_tokens(used)}/{format_tokens(size)} ({fraction:.0%})"
        f" · window {usage['windowNumber']}"
        f" · cache {float(usage['cacheHitRate']):.0%}"
        f" · ${float(usage['cost']):.4f}",
        style="dim",
    )
    return text


class TranscriptPrinter:
    """Prints notifications as they arrive; keeps the last usage for the meter."""

    def __init__(
        self,
        console: Console | None = None,
        *,
        show_thinking: bool = False,
        max_message_lines: int | None = 12,
    ) -> None:
        self.console = console or Console(highlight=False)
        self.show_thinking = show_thinking
        self.max_message_lines = max_message_lines
        self._lines = 0
        self._hidden_lines = 0
        self.usage: Mapping[str, Any] | None = None
        self._open_message: str | None = None
        self._tool_titles: dict[str, str] = {}

    def prompt(self, text: str) -> None:
        self._close_message()
        self.console.print()
        self.console.print(Text("you › ", style="bold cyan") + Text(text))

    def update(self, params: Mapping[str, Any]) -> None:
        update = params["update"]
        kind = update["kind"]
        if kind == "messageChunk":
            if self._open_message != update["messageId"]:
                self._close_message()
                self.console.print(Text("agent › ", style="bold green"), end="")
                self._open_message = update["messageId"]
            self._stream(update["content"]["text"])
        elif kind == "thoughtChunk" and self.show_thinking:
            self._close_message()
            self.console.print(Text(update["content"]["text"], style="dim italic"))
        elif kind == "toolCall":
            self._close_message()
            self._tool_titles[update["toolCallId"]] = update["title"]
        elif kind == "toolCallUpdate" and update.get("status") in ("completed", "failed"):
            self._close_message()
            title = self._tool_titles.get(update["toolCallId"], update["toolCallId"])
            ok = update["status"] == "completed"
            line = Text("  ✓ " if ok else "  ✗ ", style="green" if ok else "red")
            line.append(title, style="dim" if ok else "red")
            self.console.print(line)
        elif kind == "notice":
            self._close_message()
            style = {"error": "bold red", "warning": "yellow"}.get(update["level"], "dim")
            self.console.print(Text(f"  ! {update['message']}", style=style))

    def usage_changed(self, usage: Mapping[str, Any]) -> None:
        self.usage = usage

    def compaction(self, params: Mapping[str, Any]) -> None:
        self._close_message()
        status = params["status"]
        if status == "started":
            self.console.print(
                Text(
                    f"  ⟳ compacting {format_tokens(int(params['tokensBefore']))} tokens "
                    f"({params['reason']})…",
                    style="magenta",
                )
            )
            return
        if status != "completed":
            self.console.print(
                Text(f"  ⟳ compaction {status}: {params.get('error', '')}", style="red")
            )
            return
        summary = str(params.get("summary", ""))
        preview = "\n".join(summary.strip().splitlines()[:6])
        self.console.print(
            Panel(
                Text(preview, style="dim"),
                title=(
                    f"compacted ({params['reason']}): {format_tokens(int(params['tokensBefore']))}"
                    f" → {format_tokens(int(params.get('tokensAfter', 0)))} tokens"
                ),
                title_align="left",
                border_style="magenta",
            )
        )

    def overflow(self, params: Mapping[str, Any]) -> None:
        self._close_message()
        what = f"{params['kind']}, {params['action']}"
        self.console.print(Text(f"  ⚠ overflow ({what}): {params['message']}", style="yellow"))

    def turn_ended(self, result: Mapping[str, Any]) -> None:
        self._close_message()
        if result.get("stopReason") not in ("end_turn", None):
            self.console.print(Text(f"  (turn ended: {result['stopReason']})", style="yellow"))
        usage = result.get("usage") or self.usage
        if usage:
            self.console.print(meter_text(usage))

    def _stream(self, text: str) -> None:
        """Print a chunk, up to `max_message_lines` lines per message; count the rest."""
        limit = self.max_message_lines
        if limit is None:
            self.console.print(text, end="", markup=False, highlight=False)
            return
        for piece in text.splitlines(keepends=True):
            if self._lines >= limit:
                self._hidden_lines += piece.endswith("\n")
                continue
            self.console.print(piece, end="", markup=False, highlight=False)
            self._lines += piece.endswith("\n")

    def _close_message(self) -> None:
        if self._open_message is not None:
            self.console.print()
            if self._hidden_lines:
                self.console.print(Text(f"  … {self._hidden_lines} more lines", style="dim"))
            self._open_message = None
            self._lines = self._hidden_lines = 0
