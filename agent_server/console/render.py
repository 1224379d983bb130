"""Terminal rendering of a session, from the editor protocol's notifications.

The demo (an LSP client) and `agent-server chat` (which runs the agent in-process and turns
its events into the same JSON with lsp.wire) share this printer, so both show the same
transcript, meter and compaction markers.

Everything the model, a file or a tool wrote is shown literally: it goes into `Text` objects
(never Rich markup), and the characters that would act on the terminal (escape sequences,
carriage returns, bidi overrides, invisible characters) are shown as escapes in reverse video
(agent_server.literal). Markdown is rendered from text made safe the same way, with links
printed as `text (url)` and HTML shown as written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from markdown_it.token import Token
from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.segment import Segment, Segments
from rich.table import Table
from rich.text import Text

from agent_server.literal import literal, pieces

METER_WIDTH = 24
ESCAPE_STYLE = "reverse"


def shown(text: str, style: str = "", *, one_line: bool = False) -> Text:
    """`text` as it is: a `Text` (no markup), with each character that would act on the
    terminal replaced by its escape, in reverse video. `one_line` escapes line breaks too."""
    out = Text(style=style)
    for piece, escaped in pieces(text, keep="\t" if one_line else "\n\t"):
        out.append(piece, style=ESCAPE_STYLE if escaped else None)
    return out


class LiteralMarkdown(Markdown):
    """Markdown whose every character shows: HTML is printed as written (Rich would drop it),
    an image as its `![alt](url)` source, a link as `text (url)` (no hidden hyperlink), and
    control characters as escapes."""

    elements: ClassVar = dict(Markdown.elements)

    def __init__(self, markup: str) -> None:
        super().__init__(literal(markup), hyperlinks=False)
        self.parsed = list(_literal_tokens(self.parsed))


def _literal_tokens(tokens: Iterable[Token]) -> Iterable[Token]:
    for token in tokens:
        if token.type == "html_block":
            token.type, token.tag = "code_block", "code"
        elif token.type == "html_inline":
            token.type = "text"
        elif token.type == "image":
            alt = "".join(child.content for child in token.children or ())
            token.type, token.tag, token.nesting = "text", "", 0
            token.content = f"![{alt}]({token.attrs.get('src', '')})"
            token.children = None
        if token.children:
            token.children = list(_literal_tokens(token.children))
        yield token


def attachment_label(attachment: Mapping[str, Any]) -> str:
    """`README.md (40 lines)`: what a mention attached."""
    detail = attachment.get("detail")
    return f"{attachment.get('path')}" + (f" ({detail})" if detail else "")


def diff_text(diff: str) -> Text:
    """A unified diff, added lines green, removed red, hunk headers cyan; shown literally."""
    out = Text()
    for line in diff.splitlines(keepends=True):
        style = ""
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        out.append_text(shown(line, style))
    return out


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
    if used > int(usage["compactAt"]):
        text.append(" · past the compaction point: the next request compacts first", "yellow")
    return text


class TranscriptPrinter:
    """Prints notifications as they arrive; keeps the last usage for the meter.

    `markdown`: answers are rendered as Markdown, block by block as they stream (a block is
    printed once the blank line after it arrives, never inside a code fence); otherwise
    they are streamed as plain text, cut after `max_message_lines` lines."""

    def __init__(
        self,
        console: Console | None = None,
        *,
        show_thinking: bool = False,
        max_message_lines: int | None = 12,
        markdown: bool = False,
    ) -> None:
        self.console = console or Console(highlight=False)
        self.show_thinking = show_thinking
        self.max_message_lines = max_message_lines
        self.markdown = markdown
        self._lines = 0
        self._hidden_lines = 0
        self._pending = ""  # Markdown not printed yet: the block still streaming
        self._blocks = 0
        self.usage: Mapping[str, Any] | None = None
        self._open_message: str | None = None
        self._tool_titles: dict[str, str] = {}
        self.diffs_shown: set[str] = set()  # tool calls whose change is already on screen
        self.errors_shown: list[str] = []  # error notices of the current turn

    def prompt(self, text: str) -> None:
        self._close_message()
        self.errors_shown = []
        self.console.print()
        self.console.print(Text("you › ", style="bold cyan") + shown(text))

    def update(self, params: Mapping[str, Any]) -> None:
        update = params["update"]
        kind = update["kind"]
        if kind == "userMessage":
            # The prompt is on screen already (typed, or printed by `prompt`); what its
            # @-mentions attached is not.
            for attachment in update.get("attachments") or ():
                self.console.print(shown(f"  attached {attachment_label(attachment)}", "dim"))
        elif kind == "messageChunk":
            if self._open_message != update["messageId"]:
                self._close_message()
                label = Text("agent › ", style="bold green")
                self.console.print(label, end="\n" if self.markdown else "")
                self._open_message = update["messageId"]
            self._stream(update["content"]["text"])
        elif kind == "thoughtChunk" and self.show_thinking:
            self._close_message()
            self.console.print(shown(update["content"]["text"], "dim italic"))
        elif kind == "toolCall":
            self._close_message()
            self._tool_titles[update["toolCallId"]] = update["title"]
        elif kind == "toolCallUpdate" and update.get("status") in ("completed", "failed"):
            self._close_message()
            self._tool_finished(update)
        elif kind == "modelChange":
            self._close_message()
            what = f"  model: {update['model']}, thinking {update['thinking']}"
            self.console.print(shown(what, "magenta"))
            self.console.print(shown(f"  {update['note']}", "dim"))
        elif kind == "notice":
            self._close_message()
            style = {"error": "bold red", "warning": "yellow"}.get(update["level"], "dim")
            if update["level"] == "error":
                self.errors_shown.append(update["message"])
            self.console.print(Text("  ! ", style=style) + shown(update["message"], style))

    def _tool_finished(self, update: Mapping[str, Any]) -> None:
        call_id = update["toolCallId"]
        title = self._tool_titles.get(call_id, call_id)
        ok = update["status"] == "completed"
        line = Text("  ✓ " if ok else "  ✗ ", style="green" if ok else "red")
        line.append_text(shown(title, "dim" if ok else "red", one_line=True))
        raw = update.get("rawOutput")
        if not ok and isinstance(raw, Mapping) and raw.get("permission") == "denied":
            line.append_text(shown(f" (not run: {raw.get('reason', 'rejected')})", "red"))
        self.console.print(line)
        for content in update.get("content") or ():
            if content.get("type") == "diff" and call_id not in self.diffs_shown:
                self.console.print(diff_text(str(content.get("diff", ""))))

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
            error = shown(str(params.get("error", "")), "red")
            self.console.print(Text(f"  ⟳ compaction {status}: ", style="red") + error)
            return
        summary = str(params.get("summary", ""))
        preview = "\n".join(summary.strip().splitlines()[:6])
        self.console.print(
            Panel(
                shown(preview, "dim"),
                title=(
                    f"compacted ({params['reason']}): {format_tokens(int(params['tokensBefore']))}"
                    f" → {format_tokens(int(params.get('tokensAfter', 0)))} tokens"
                ),
                title_align="left",
                border_style="magenta",
            )
        )

    def overflow(self, params: Mapping[str, Any]) -> None:
        if params["action"] == "gaveUp":
            return  # the turn's error notice, which follows, says what happened and what to do
        self._close_message()
        what = f"{params['kind']}, {params['action']}"
        message = shown(str(params["message"]), "yellow")
        self.console.print(Text(f"  ⚠ overflow ({what}): ", style="yellow") + message)

    def turn_ended(self, result: Mapping[str, Any]) -> None:
        self._close_message()
        error = result.get("error")
        message = error.get("message") if isinstance(error, Mapping) else error
        if isinstance(message, str) and message and message not in self.errors_shown:
            self.console.print(shown(message, "bold red"))
        elif result.get("stopReason") not in ("end_turn", "error", None):
            self.console.print(Text(f"  (turn ended: {result['stopReason']})", style="yellow"))
        usage = result.get("usage") or self.usage
        if usage:
            self.console.print(meter_text(usage))

    def _stream(self, text: str) -> None:
        if self.markdown:
            self._pending += text
            self._print_blocks(final=False)
            return
        limit = self.max_message_lines
        for piece in text.splitlines(keepends=True):
            if limit is not None and self._lines >= limit:
                self._hidden_lines += piece.endswith("\n")
                continue
            self.console.print(shown(piece), end="")
            self._lines += piece.endswith("\n")

    def _print_blocks(self, *, final: bool) -> None:
        """Print the Markdown blocks that are complete (all of it when `final`)."""
        cut = len(self._pending) if final else _last_block_end(self._pending)
        ready, self._pending = self._pending[:cut], self._pending[cut:]
        if not ready.strip():
            return
        lines = self.console.render_lines(LiteralMarkdown(ready), pad=False)
        while lines and not "".join(segment.text for segment in lines[0]).strip():
            lines.pop(0)  # Rich starts some blocks (lists) with a blank line of its own
        if self._blocks:
            self.console.print()
        self.console.print(Segments([s for line in lines for s in (*line, Segment.line())]), end="")
        self._blocks += 1

    def _close_message(self) -> None:
        if self._open_message is None:
            return
        if self.markdown:
            self._print_blocks(final=True)
            self._blocks = 0
        else:
            self.console.print()
            if self._hidden_lines:
                self.console.print(Text(f"  … {self._hidden_lines} more lines", style="dim"))
        self._open_message = None
        self._lines = self._hidden_lines = 0


def _last_block_end(text: str) -> int:
    """Where the last complete Markdown block of `text` ends: after its last blank line
    outside a code fence (0: no block is complete yet)."""
    end = 0
    fence: str | None = None
    position = 0
    for line in text.splitlines(keepends=True):
        position += len(line)
        if not line.endswith("\n"):
            break  # still arriving
        stripped = line.lstrip()
        marker = stripped[:3]
        if marker in ("```", "~~~"):
            if fence is None:
                fence = marker
            elif marker == fence:
                fence = None
        elif fence is None and not stripped.strip():
            end = position
    return end


def usage_table(
    usage: Mapping[str, Any], turn: Mapping[str, int] | None, session: Mapping[str, Any]
) -> Table:
    """What `/usage` shows: the meter's figures, and the tokens and cost of the last turn and
    of the whole session, cache reads and writes apart."""
    table = Table(title="usage", title_justify="left", show_edge=False)
    table.add_column("")
    for column in ("last turn", "session"):
        table.add_column(column, justify="right")
    empty: Mapping[str, Any] = {}
    last = turn or empty
    for label, key in (
        ("model calls", "calls"),
        ("input (uncached)", "input"),
        ("cache reads", "cacheRead"),
        ("cache writes", "cacheWrite"),
        ("output", "output"),
    ):
        table.add_row(label, f"{int(last.get(key, 0)):,}", f"{int(session.get(key, 0)):,}")
    table.add_row(
        "cost", f"${float(last.get('cost', 0.0)):.4f}", f"${float(session.get('cost', 0)):.4f}"
    )
    table.add_row("cache-read share", "", f"{float(session.get('cacheHitRate', 0)):.0%}")
    size = max(int(usage["size"]), 1)
    table.add_row(
        "context",
        "",
        f"{format_tokens(int(usage['used']))} of {format_tokens(size)}"
        f" (compacts above {format_tokens(int(usage['compactAt']))}),"
        f" window {usage['windowNumber']}",
    )
    return table
