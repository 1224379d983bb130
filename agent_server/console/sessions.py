"""`agent-server sessions list|show|export`: the stored sessions of a workspace, and the end
of one that `chat --session` continues (shown as `show` shows it).

Reading never takes a session's lock, so a session open in an editor can be shown and
exported while it runs.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from agent_server.agent.tools import default_tools
from agent_server.console.render import (
    LiteralMarkdown,
    attachment_label,
    fitting,
    format_tokens,
    shown,
    stacked_table,
)
from agent_server.context.projection import is_prompt
from agent_server.context.summary_prompt import note_text
from agent_server.errors import AgentServerError
from agent_server.literal import literal
from agent_server.llm.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    attachment_to_json,
)
from agent_server.session.entries import (
    BranchEntry,
    CompactionEntry,
    Entry,
    FileRestoreEntry,
    MessageEntry,
    ModelChangeEntry,
    TitleEntry,
)
from agent_server.session.ledger_file import read_ledger
from agent_server.session.store import SessionInfo, SessionStore, default_sessions_root

TOOLS = {tool.spec.name: tool for tool in default_tools(repo_map=True)}
MAX_EXPORTED_OUTPUT = 2000
RESUMED_PROMPTS = 3  # the latest prompts a continued chat shows again, with what followed


def open_store(workspace: Path, sessions_dir: str | None) -> SessionStore:
    root = Path(sessions_dir).expanduser() if sessions_dir else default_sessions_root()
    return SessionStore(root, workspace.resolve())


def list_sessions(store: SessionStore, console: Console) -> int:
    sessions = store.list()
    if not sessions:
        console.print(shown(f"No sessions for {store.workspace} under {store.root}."))
        return 0
    console.print(sessions_table(sessions, f"sessions of {store.workspace}", console))
    return 0


def sessions_table(sessions: Iterable[SessionInfo], title: str, console: Console) -> Table:
    """Newest first. Each row has the whole id (never cut: it is what `show`, `export` and
    `chat --session` take, as is or by a unique prefix), the title with the first prompt
    (when it differs) and the start time under it, when it was last used, and how many
    prompts it holds: sessions with the same title stay apart. On a terminal too narrow for
    the columns, each session is one cell, its id on the first line."""
    table = Table(title=shown(title, one_line=True), title_justify="left")
    table.add_column("id", no_wrap=True, min_width=16)
    table.add_column("title", overflow="fold", ratio=1, min_width=20)
    table.add_column("last used", no_wrap=True)
    table.add_column("prompts", justify="right", no_wrap=True)
    stacked = stacked_table(shown(title, one_line=True))
    for info in sessions:
        label = shown(info.title or "(untitled)", one_line=True)
        first = info.first_prompt or ""
        if first and not first.startswith((info.title or "").rstrip("…")):
            label.append("\n")
            label.append_text(shown(first[:120], "dim", one_line=True))
        started = Text(f"started {_when(info.created_at)}", style="dim")
        table.add_row(
            info.session_id, label + "\n" + started, _when(info.updated_at), str(info.prompt_count)
        )
        used = f" · last used {_when(info.updated_at)} · {info.prompt_count} prompts"
        stacked.add_row(Text(info.session_id + "\n") + label + "\n" + started + Text(used, "dim"))
    return fitting(console, table, stacked)


def show_session(store: SessionStore, session_id: str, console: Console) -> int:
    contents = read_ledger(store.ledger_path(store.resolve(session_id)))
    for issue in contents.report.issues:
        console.print(
            Text(f"line {issue.line_number}: {issue.reason} ({issue.action})", style="yellow")
        )
    results = _results_by_call(contents.branch())
    for entry in contents.branch():
        _show_entry(entry, results, console)
    return 0


def show_tail(entries: Sequence[Entry], session_id: str, console: Console) -> None:
    """The end of the branch a chat continues, as `show` shows it: everything from the
    RESUMED_PROMPTS-th last prompt on (a compaction as its one line, not its summary), then
    how many earlier prompts there are and where to read them. Nothing for a session
    without prompts."""
    starts = [
        n
        for n, entry in enumerate(entries)
        if isinstance(entry, MessageEntry) and is_prompt(entry.message)
    ]
    if not starts:
        return
    tail = entries[starts[max(0, len(starts) - RESUMED_PROMPTS)] :]
    results = _results_by_call(tail)
    for entry in tail:
        if not isinstance(entry, TitleEntry):  # the session's name, not the conversation
            _show_entry(entry, results, console, whole=False)
    earlier = len(starts) - RESUMED_PROMPTS
    if earlier > 0:
        prompts = "1 earlier prompt" if earlier == 1 else f"{earlier} earlier prompts"
        console.print(
            Text(
                f"{prompts} not shown: agent-server sessions show {session_id[:8]} has them all",
                style="dim",
            )
        )


def _show_entry(
    entry: Entry, results: Mapping[str, ToolResultMessage], console: Console, *, whole: bool = True
) -> None:
    """One entry as `show` prints it; `whole=False` (a continued chat's tail) gives a
    compaction and an editor's note one line each, their text being what `show` is for."""
    if isinstance(entry, MessageEntry):
        message = entry.message
        if isinstance(message, UserMessage) and message.note is not None:
            # The editor's note (an external edit, a branch left behind): not a prompt.
            note = note_text(message)
            if not whole and "\n" in note:
                note = note.split("\n", 1)[0] + " …"
            console.print(shown(f"  note: {note}", "dim"))
        elif isinstance(message, UserMessage):
            console.print(Text("you › ", style="bold cyan") + shown(_user_text(message)))
        elif isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, TextContent) and block.text.strip():
                    console.print(Text("agent › ", style="bold green"))
                    console.print(LiteralMarkdown(block.text))
                elif isinstance(block, ToolCall):
                    result = results.get(block.id)
                    ok = result is not None and not result.is_error
                    line = Text("  ✓ " if ok else "  ✗ ", style="green" if ok else "red")
                    line.append_text(shown(_tool_title(block), "dim", one_line=True))
                    console.print(line)
                    if result is not None and result.is_error:
                        console.print(shown(f"    {result.text[:300]}", "red"))
            if message.error_message:
                console.print(shown(f"  error: {message.error_message}", "red"))
            elif message.stop_reason not in ("stop", "toolUse"):
                console.print(Text(f"  ({message.stop_reason})", style="yellow"))
    elif isinstance(entry, CompactionEntry):
        after = format_tokens(entry.tokens_after or 0)
        title = f"compacted ({entry.reason}): {format_tokens(entry.tokens_before)} → {after}"
        if not whole:
            console.print(Text(f"  ⟳ {title}", style="magenta"))
            return
        console.print(
            Panel(
                shown(entry.summary.strip(), "dim"),
                title=title,
                title_align="left",
                border_style="magenta",
            )
        )
    elif isinstance(entry, BranchEntry):
        console.print(Text(f"  ↶ rewound to {entry.target_id}", style="magenta"))
    elif isinstance(entry, ModelChangeEntry):
        console.print(shown(f"  model: {entry.provider} {entry.model}", "dim"))
    elif isinstance(entry, TitleEntry):
        console.print(shown(f"  title: {entry.title}", "dim"))
    elif isinstance(entry, FileRestoreEntry):
        files = ", ".join(v.path + (" (deleted)" if v.after is None else "") for v in entry.files)
        console.print(shown(f"  ↺ files restored: {files}", "magenta"))


def export_session(store: SessionStore, session_id: str, fmt: str, output: Path | None) -> int:
    """The session as Markdown or its raw ledger, to `output` or to stdout."""
    path = store.ledger_path(store.resolve(session_id))
    if output is None:
        if fmt == "jsonl":
            return write_stdout(path.read_text(encoding="utf-8"))
        markdown = io.StringIO()
        write_markdown(read_ledger(path).branch(), markdown)
        return write_stdout(markdown.getvalue())
    try:
        if fmt == "jsonl":
            shutil.copyfile(path, output)
        else:
            with output.open("w", encoding="utf-8") as stream:
                write_markdown(read_ledger(path).branch(), stream)
    except OSError as error:
        raise AgentServerError(f"cannot write {output}: {error.strerror or error}") from error
    return 0


def write_stdout(text: str) -> int:
    """`text` to stdout. On a terminal it is shown literally (escape sequences and bidi
    controls as `\\x1b`, `\\u202e`), as `show` shows it; a pipe gets it as it is, to
    process. A reader that stops early (`| head`) ends the export quietly, as Rich ends
    `show`: stdout is pointed at /dev/null so that Python's flush at exit finds no pipe."""
    if sys.stdout.isatty():
        text = literal(text)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


def write_markdown(entries: Iterable[Entry], out: TextIO) -> None:
    """The branch as a readable document: prompts, answers, and each tool call of a step
    followed by its own output (labelled, fenced), then compactions."""
    entries = list(entries)
    results = _results_by_call(entries)
    calls = _calls(entries)
    for entry in entries:
        if isinstance(entry, MessageEntry):
            message = entry.message
            if isinstance(message, UserMessage):
                out.write(f"## You\n\n{_user_text(message)}\n\n")
            elif isinstance(message, AssistantMessage):
                out.write("## Agent\n\n")
                for block in message.content:
                    if isinstance(block, TextContent):
                        out.write(block.text.strip() + "\n\n")
                    elif isinstance(block, ThinkingContent) and block.thinking:
                        out.write("> " + block.thinking.strip().replace("\n", "\n> ") + "\n\n")
                    elif isinstance(block, ToolCall):
                        _write_tool_call(block, results.get(block.id), out)
                if message.error_message:
                    out.write(f"**Error:** {message.error_message}\n\n")
            elif isinstance(message, ToolResultMessage) and message.tool_call_id not in calls:
                _write_output("Output (its call is not on this branch)", message, out)
        elif isinstance(entry, CompactionEntry):
            out.write(
                f"---\n\n**Compacted** ({entry.reason}, {entry.tokens_before} → "
                f"{entry.tokens_after} tokens):\n\n{entry.summary.strip()}\n\n---\n\n"
            )


def _write_tool_call(call: ToolCall, result: ToolResultMessage | None, out: TextIO) -> None:
    out.write(f"**Tool call: {_tool_title(call)}** (`{call.name}`)\n\n")
    arguments = json.dumps(call.arguments, ensure_ascii=False, indent=2)
    out.write(_fenced("Arguments", arguments, "json"))
    if result is None:
        out.write("*No output: the call did not complete.*\n\n")
        return
    _write_output("Error" if result.is_error else "Output", result, out)


def _write_output(label: str, result: ToolResultMessage, out: TextIO) -> None:
    text = result.text
    if len(text) > MAX_EXPORTED_OUTPUT:
        more = len(text) - MAX_EXPORTED_OUTPUT
        text = f"{text[:MAX_EXPORTED_OUTPUT]}\n[… {more} more characters]"
    out.write(_fenced(label, text, "text"))


def _fenced(label: str, text: str, language: str) -> str:
    """A labelled code block whose fence is longer than any run of backquotes inside, so
    nothing in the text can close it early."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{label}:\n\n{fence}{language}\n{text}\n{fence}\n\n"


def _results_by_call(entries: Iterable[Entry]) -> dict[str, ToolResultMessage]:
    return {
        entry.message.tool_call_id: entry.message
        for entry in entries
        if isinstance(entry, MessageEntry) and isinstance(entry.message, ToolResultMessage)
    }


def _calls(entries: Iterable[Entry]) -> set[str]:
    return {
        block.id
        for entry in entries
        if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage)
        for block in entry.message.tool_calls
    }


def _tool_title(call: ToolCall) -> str:
    """The tool's own title for the call ("Read README.md", "Run: npm test")."""
    tool = TOOLS.get(call.name)
    if tool is None:
        return call.name
    try:
        return tool.title(call.arguments)
    except Exception:  # a title is a courtesy
        return call.name


def _user_text(message: UserMessage) -> str:
    """What the user typed (images named), then what the prompt's mentions attached."""
    parts = [
        b.text if isinstance(b, TextContent) else f"[image {b.mime_type}]" for b in message.typed
    ]
    parts += [f"[attached: {attachment_label(attachment_to_json(a))}]" for a in message.attachments]
    return "\n".join(parts)


def _when(timestamp: str) -> str:
    try:
        return datetime.fromisoformat(timestamp).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return timestamp


def main(command: str, workspace: Path, sessions_dir: str | None, **options: object) -> int:
    console = Console(highlight=False)
    store = open_store(workspace, sessions_dir)
    try:
        if command == "list":
            return list_sessions(store, console)
        session_id = str(options["session_id"])
        if command == "show":
            return show_session(store, session_id, console)
        output = options.get("output")
        return export_session(
            store,
            session_id,
            str(options.get("format") or "markdown"),
            Path(str(output)) if output else None,
        )
    except AgentServerError as error:
        # Not wrapped: an error is one line, whatever the width (a long path stays whole).
        Console(stderr=True, soft_wrap=True).print(shown(error.message, "red"))
        return 1
