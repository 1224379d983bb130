"""`agent-server sessions list|show|export`: the stored sessions of a workspace.

Reading never takes a session's lock, so a session open in an editor can be shown and
exported while it runs.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from agent_server.console.render import format_tokens
from agent_server.errors import AgentServerError
from agent_server.llm.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agent_server.session.entries import (
    BranchEntry,
    CompactionEntry,
    Entry,
    MessageEntry,
    ModelChangeEntry,
    TitleEntry,
)
from agent_server.session.ledger import read_ledger
from agent_server.session.store import SessionStore, default_sessions_root


def open_store(workspace: Path, sessions_dir: str | None) -> SessionStore:
    root = Path(sessions_dir).expanduser() if sessions_dir else default_sessions_root()
    return SessionStore(root, workspace.resolve())


def list_sessions(store: SessionStore, console: Console) -> int:
    sessions = store.list()
    if not sessions:
        console.print(f"No sessions for {store.workspace} under {store.root}.")
        return 0
    table = Table(title=f"sessions of {store.workspace}", title_justify="left")
    table.add_column("id", no_wrap=True)
    table.add_column("title", max_width=40, overflow="ellipsis", no_wrap=True)
    for column in ("model", "updated", "entries", "size"):
        table.add_column(
            column, justify="right" if column in ("entries", "size") else "left", no_wrap=True
        )
    for info in sessions:
        table.add_row(
            info.session_id,
            info.title or "",
            info.model or "",
            _when(info.updated_at),
            str(info.entry_count),
            f"{info.size_bytes / 1024:.0f} KB",
        )
    console.print(table)
    return 0


def show_session(store: SessionStore, session_id: str, console: Console) -> int:
    contents = read_ledger(store.ledger_path(session_id))
    for issue in contents.report.issues:
        console.print(
            Text(f"line {issue.line_number}: {issue.reason} ({issue.action})", style="yellow")
        )
    for entry in contents.branch():
        _show_entry(entry, console)
    return 0


def _show_entry(entry: Entry, console: Console) -> None:
    if isinstance(entry, MessageEntry):
        message = entry.message
        if isinstance(message, UserMessage):
            console.print(Text("you › ", style="bold cyan") + Text(_user_text(message.content)))
        elif isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, TextContent) and block.text.strip():
                    console.print(Text("agent › ", style="bold green") + Text(block.text))
                elif isinstance(block, ToolCall):
                    args = json.dumps(block.arguments, ensure_ascii=False)
                    console.print(Text(f"  ⚙ {block.name} {args[:160]}", style="dim"))
            if message.stop_reason not in ("stop", "toolUse"):
                console.print(Text(f"  ({message.stop_reason})", style="yellow"))
        elif isinstance(message, ToolResultMessage) and message.is_error:
            console.print(Text(f"  ✗ {message.text[:200]}", style="red"))
    elif isinstance(entry, CompactionEntry):
        after = format_tokens(entry.tokens_after or 0)
        console.print(
            Panel(
                Text(entry.summary.strip(), style="dim"),
                title=(
                    f"compacted ({entry.reason}): {format_tokens(entry.tokens_before)} → {after}"
                ),
                title_align="left",
                border_style="magenta",
            )
        )
    elif isinstance(entry, BranchEntry):
        console.print(Text(f"  ↶ rewound to {entry.target_id}", style="magenta"))
    elif isinstance(entry, ModelChangeEntry):
        console.print(Text(f"  model: {entry.provider} {entry.model}", style="dim"))
    elif isinstance(entry, TitleEntry):
        console.print(Text(f"  title: {entry.title}", style="dim"))


def export_session(store: SessionStore, session_id: str, fmt: str, output: Path | None) -> int:
    path = store.ledger_path(session_id)
    if fmt == "jsonl":
        if output is None:
            sys.stdout.write(path.read_text(encoding="utf-8"))
        else:
            shutil.copyfile(path, output)
        return 0
    contents = read_ledger(path)
    if output is None:
        write_markdown(contents.branch(), sys.stdout)
    else:
        with output.open("w", encoding="utf-8") as stream:
            write_markdown(contents.branch(), stream)
    return 0


def write_markdown(entries: Iterable[Entry], out: TextIO) -> None:
    """The branch as a readable document: prompts, answers, tool calls, compactions."""
    for entry in entries:
        if isinstance(entry, MessageEntry):
            message = entry.message
            if isinstance(message, UserMessage):
                out.write(f"## You\n\n{_user_text(message.content)}\n\n")
            elif isinstance(message, AssistantMessage):
                out.write("## Agent\n\n")
                for block in message.content:
                    if isinstance(block, TextContent):
                        out.write(block.text.strip() + "\n\n")
                    elif isinstance(block, ThinkingContent) and block.thinking:
                        out.write("> " + block.thinking.strip().replace("\n", "\n> ") + "\n\n")
                    elif isinstance(block, ToolCall):
                        args = json.dumps(block.arguments, ensure_ascii=False)
                        out.write(f"`{block.name}` `{args}`\n\n")
            elif isinstance(message, ToolResultMessage):
                text = message.text
                if len(text) > 2000:
                    text = text[:2000] + f"\n[… {len(text) - 2000} more characters]"
                out.write(f"```text\n{text}\n```\n\n")
        elif isinstance(entry, CompactionEntry):
            out.write(
                f"---\n\n**Compacted** ({entry.reason}, {entry.tokens_before} → "
                f"{entry.tokens_after} tokens):\n\n{entry.summary.strip()}\n\n---\n\n"
            )


def _user_text(content: Iterable[TextContent | ImageContent]) -> str:
    parts = [b.text if isinstance(b, TextContent) else f"[image {b.mime_type}]" for b in content]
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
        Console(stderr=True).print(Text(error.message, style="red"))
        return 1
