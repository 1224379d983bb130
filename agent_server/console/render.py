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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from markdown_it.token import Token
from rich.console import Console
from rich.markdown import Markdown
from rich.measure import Measurement
from rich.panel import Panel
from rich.segment import Segment, Segments
from rich.table import Table
from rich.text import Text

from agent_server.literal import literal, pieces

if TYPE_CHECKING:
    from agent_server.console.activity import Activity

METER_WIDTH = 24
ESCAPE_STYLE = "reverse"
# A finished command's output under it: its first and last lines, with how many between (as
# Codex's TUI shows a command: the start says what ran, the end how it ended).
COLLAPSED_HEAD = 2
COLLAPSED_TAIL = 3


@dataclass(frozen=True, slots=True)
class CommandOutput:
    """A finished command's output as the model got it (`/output` shows it whole)."""

    title: str
    text: str
    total_lines: int
    full_output_path: str | None


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


def meter_text(usage: Mapping[str, Any], width: int = 80) -> Text:
    """`context ██░░│░ 21.8k/32.8k (67%) · cached 92% · $0.2700 · compacted 1×`: the
    context's estimate against the window (the bar's mark is the compaction point), the
    session's cache-read share of prompt tokens, its cost, and its compactions so far. The
    bar narrows so the line fits `width` columns."""
    used, size = int(usage["used"]), max(int(usage["size"]), 1)
    fraction = used / size
    compactions = int(usage.get("windowNumber", 1)) - 1
    figures = (
        f" {format_tokens(used)}/{format_tokens(size)} ({fraction:.0%})"
        f" · cached {float(usage['cacheHitRate']):.0%}"
        f" · ${float(usage['cost']):.4f}"
        + (f" · compacted {compactions}×" if compactions > 0 else "")
    )
    bar_width = max(8, min(METER_WIDTH, width - 1 - len("context ") - len(figures)))
    filled = min(bar_width, round(fraction * bar_width))
    mark = round(int(usage["compactAt"]) / size * bar_width)
    bar = "".join("█" if i < filled else ("│" if i == mark else "░") for i in range(bar_width))
    text = Text("context ")
    text.append(bar, style=meter_colour(fraction))
    text.append(figures, style="dim")
    if used > int(usage["compactAt"]):
        text.append("\n  past the compaction point: the next request compacts first", "yellow")
    return text


def compaction_reason(params: Mapping[str, Any], compact_at: int | None) -> str:
    """Why a compaction ran, in words. "threshold" is either rule of the trigger: past the
    compaction point, or close enough that the next step would leave no room to summarise."""
    reason = str(params.get("reason", ""))
    if reason == "threshold":
        before = int(params.get("tokensBefore", 0))
        if compact_at is not None and before <= compact_at:
            return (
                f"near the compaction point ({format_tokens(compact_at)}): "
                "the next step would leave no room to summarise"
            )
        return "past the compaction point" + (
            f" ({format_tokens(compact_at)})" if compact_at is not None else ""
        )
    return {
        "overflow": "the provider refused the request as too long",
        "truncation": "an answer was cut off by the window",
        "manual": "asked for",
        "idle": "the cache went cold: the prefix is written again either way",
        "requested": "the model asked for it at a break",
    }.get(reason, reason)


SUMMARY_PREVIEW_LINES = 6


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
        self._tool_kinds: dict[str, str] = {}
        self.diffs_shown: set[str] = set()  # tool calls whose change is already on screen
        self.errors_shown: list[str] = []  # error notices of the current turn
        self.denials = 0  # tool calls of the current turn not allowed to run
        self.compactions_ended = 0  # the compactions whose end (or failure) is on screen
        self.outputs: list[CommandOutput] = []  # the commands' outputs, oldest first
        self.output_hint = ""  # how to see a collapsed output whole, if there is a way
        self.activity: Activity | None = None  # what runs now, in a terminal chat

    def prompt(self, text: str) -> None:
        self._close_message()
        self.errors_shown = []
        self.denials = 0
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
                if self.activity is not None:
                    self.activity.waiting("answering")
            self._stream(update["content"]["text"])
        elif kind == "messageDiscarded":
            self._discard()
        elif kind == "thoughtChunk" and self.show_thinking:
            self._close_message()
            self.console.print(shown(update["content"]["text"], "dim italic"))
        elif kind == "toolCall":
            self._close_message()
            call_id = update["toolCallId"]
            self._tool_titles[call_id] = update["title"]
            self._tool_kinds[call_id] = update.get("toolKind", "other")
            if self.activity is not None:
                self.activity.waiting(update["title"])
        elif kind == "toolCallUpdate" and update.get("status") in ("completed", "failed"):
            self._close_message()
            self._tool_finished(update)
            if self.activity is not None:
                self.activity.waiting("waiting for the model")
        elif kind == "toolCallUpdate" and self.activity is not None:
            if self._tool_kinds.get(update["toolCallId"]) == "execute":
                for text in _texts(update):
                    self.activity.output(text)
        elif kind == "modelChange":
            self._close_message()
            what = f"  model: {update['model']}, thinking {update['thinking']}"
            self.console.print(shown(what, "magenta"))
            self.console.print(shown(f"  {update['note']}", "dim"))
        elif kind == "plan":
            self._close_message()
            self._plan(update["entries"])
        elif kind == "notice":
            self._close_message()
            style = {"error": "bold red", "warning": "yellow"}.get(update["level"], "dim")
            if update["level"] == "error":
                self.errors_shown.append(update["message"])
            self.console.print(Text("  ! ", style=style) + shown(update["message"], style))

    def _discard(self) -> None:
        """The call that streamed `message_id` failed and is retried: what arrived of its
        answer stays on screen (printed whole), then a line says it is discarded; the retried
        answer streams from its start under a label of its own."""
        self._close_message()
        self.console.print(
            Text(
                "  ✗ partial answer discarded: the call failed mid-answer; "
                "the retry answers again from the start",
                style="yellow",
            )
        )

    def _plan(self, entries: list[Mapping[str, Any]]) -> None:
        """The task's plan as a checklist: done, the step in progress, the rest."""
        self.console.print(Text("  plan", style="bold magenta"))
        marks = {"completed": ("✓", "dim"), "in_progress": ("▶", "bold"), "pending": ("·", "")}
        for entry in entries:
            mark, style = marks.get(str(entry.get("status")), ("·", ""))
            self.console.print(Text(f"    {mark} ", style=style) + shown(entry["content"], style))

    def _tool_finished(self, update: Mapping[str, Any]) -> None:
        call_id = update["toolCallId"]
        title = self._tool_titles.get(call_id, call_id)
        ok = update["status"] == "completed"
        line = Text("  ✓ " if ok else "  ✗ ", style="green" if ok else "red")
        line.append_text(shown(title, "dim" if ok else "red", one_line=True))
        raw = update.get("rawOutput")
        denial = raw if isinstance(raw, Mapping) and raw.get("permission") == "denied" else None
        if denial is not None:
            self.denials += 1
            line.append_text(shown(f" (not run: {denial.get('reason', 'rejected')})", "red"))
        self.console.print(line)
        for content in update.get("content") or ():
            if content.get("type") == "diff" and call_id not in self.diffs_shown:
                self.console.print(diff_text(str(content.get("diff", ""))))
        if self._tool_kinds.get(call_id) == "execute" and denial is None:
            self._command_output(title, update)

    def _command_output(self, title: str, update: Mapping[str, Any]) -> None:
        """A finished command's first and last lines under it, with how many between."""
        text = "".join(_texts(update))
        raw = update.get("rawOutput")
        raw = raw if isinstance(raw, Mapping) else {}
        lines = text.rstrip("\n").splitlines()
        total = max(int(raw.get("totalLines") or 0), len(lines))
        path = raw.get("fullOutputPath")
        self.outputs.append(
            CommandOutput(title, text, total, str(path) if isinstance(path, str) else None)
        )
        head, tail = COLLAPSED_HEAD, COLLAPSED_TAIL
        if len(lines) <= head + tail + 1:
            head, tail = len(lines), 0
        rows: list[Text] = [shown(piece, "dim", one_line=True) for piece in lines[:head]]
        if tail:
            hidden = total - head - tail  # lines the model's copy already left out count too
            rows.append(Text(f"… +{hidden} lines", style="dim") + Text(self.output_hint, "dim"))
            rows += [shown(piece, "dim", one_line=True) for piece in lines[-tail:]]
        elif total > len(lines):  # the model's copy is the tail of a longer output
            rows.insert(0, Text(f"… +{total - len(lines)} lines", style="dim"))
        for row in rows:
            row = Text("    ") + row
            row.no_wrap, row.overflow = True, "ellipsis"
            self.console.print(row)

    def usage_changed(self, usage: Mapping[str, Any]) -> None:
        self.usage = usage

    def compaction(self, params: Mapping[str, Any]) -> None:
        self._close_message()
        status = params["status"]
        if self.activity is not None:
            self.activity.waiting("compacting" if status == "started" else "waiting for the model")
        compact_at = int(self.usage["compactAt"]) if self.usage else None
        reason = compaction_reason(params, compact_at)
        if status == "started":
            self.console.print(
                Text(
                    f"  ⟳ compacting {format_tokens(int(params['tokensBefore']))} tokens "
                    f"({reason})…",
                    style="magenta",
                )
            )
            return
        if status != "completed":
            error = str(params.get("error") or "")  # none when Ctrl-C cancelled it
            if not error and status == "cancelled":  # the user stopped it: no failure
                self.compaction_stopped()
                return
            self.compactions_ended += 1
            marker = Text(f"  ⟳ compaction {status}" + (": " if error else ""), style="red")
            self.console.print(marker + shown(error, "red"))
            return
        self.compactions_ended += 1
        lines = str(params.get("summary", "")).strip().splitlines()
        preview = shown("\n".join(lines[:SUMMARY_PREVIEW_LINES]), "dim")
        if len(lines) > SUMMARY_PREVIEW_LINES:
            preview.append(f"\n… {len(lines) - SUMMARY_PREVIEW_LINES} more lines", style="italic")
        self.console.print(
            Panel(
                preview,
                title=(
                    f"compacted: {format_tokens(int(params['tokensBefore']))}"
                    f" → {format_tokens(int(params.get('tokensAfter', 0)))} tokens"
                ),
                title_align="left",
                border_style="magenta",
            )
        )

    def compaction_stopped(self) -> None:
        """A compaction the user stopped (Ctrl-C), said once."""
        self.compactions_ended += 1
        self.console.print(
            Text("  ⟳ compaction cancelled: the history is unchanged", style="yellow")
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
            self.console.print(meter_text(usage, self.console.width))

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


def _texts(update: Mapping[str, Any]) -> list[str]:
    """The text content of a tool call update."""
    return [
        str(item["content"].get("text", ""))
        for item in update.get("content") or ()
        if item.get("type") == "content" and isinstance(item.get("content"), Mapping)
    ]


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
    of the whole session, cache reads and writes apart. No "last turn" column when there was
    no turn (`turn` None): zeros there would read as a turn that cost nothing."""
    table = Table(title="usage", title_justify="left", show_edge=False)
    table.add_column("")
    columns = ("last turn", "session") if turn is not None else ("session",)
    for column in columns:
        table.add_column(column, justify="right")

    def row(label: str, last: str, whole: str) -> None:
        table.add_row(label, *((last, whole) if turn is not None else (whole,)))

    last: Mapping[str, Any] = turn or {}
    for label, key in (
        ("model calls", "calls"),
        ("input (uncached)", "input"),
        ("cache reads", "cacheRead"),
        ("cache writes", "cacheWrite"),
        ("output", "output"),
    ):
        row(label, f"{int(last.get(key, 0)):,}", f"{int(session.get(key, 0)):,}")
    row("cost", f"${float(last.get('cost', 0.0)):.4f}", f"${float(session.get('cost', 0)):.4f}")
    row("cache-read share", "", f"{float(session.get('cacheHitRate', 0)):.0%}")
    size = max(int(usage["size"]), 1)
    row("context", "", f"{format_tokens(int(usage['used']))} of {format_tokens(size)}")
    row("compacts above", "", format_tokens(int(usage["compactAt"])))
    row("compactions", "", str(int(usage.get("windowNumber", 1)) - 1))
    return table


def fitting(console: Console, table: Table, stacked: Table) -> Table:
    """`table` when its columns fit the console's width with every word whole (an id is one
    word: cut, it could not be typed back), else `stacked`: the same rows as one column, which
    folds what is wider than the screen rather than cutting it."""
    options = console.options.update_width(10**6)  # measured unconstrained
    needs = Measurement.get(console, options, table).minimum  # the longest word of each column
    for column in table.columns:
        if column.no_wrap:  # a column that never wraps needs its whole text
            sizes = [Measurement.get(console, options, cell) for cell in column.cells]
            needs += max((m.maximum - m.minimum for m in sizes), default=0)
    return table if needs <= console.width else stacked


def stacked_table(title: Text | str) -> Table:
    """The one-column form of a table, for a narrow terminal: a cell per row, lines between."""
    table = Table(title=title, title_justify="left", show_header=False, show_lines=True)
    table.add_column(overflow="fold")
    return table
