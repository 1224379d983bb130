"""`agent-server chat`: the agent in a terminal, one-shot or interactive.

It runs the same engine the language server runs (a WorkspaceAgent for the current
directory) and prints the same transcript, meter and compaction markers as the demo: the
agent's events are turned into the editor protocol's JSON and rendered by TranscriptPrinter.
Interactive commands: /compact [instructions], /usage, /sessions, /quit.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.prompt import Prompt
from rich.text import Text

from agent_server.agent import events
from agent_server.agent.config_file import flag_overrides, load_config, resolve_settings
from agent_server.agent.permissions import PermissionRequest
from agent_server.agent.session import AgentSession
from agent_server.agent.settings import AgentSettings
from agent_server.agent.workspace import WorkspaceAgent
from agent_server.console.render import TranscriptPrinter, meter_text
from agent_server.errors import AgentServerError, ConfigError
from agent_server.lsp import wire


class TerminalChat:
    def __init__(self, console: Console, *, assume_yes: bool, interactive: bool) -> None:
        self.console = console
        self.printer = TranscriptPrinter(console, max_message_lines=None)
        self.assume_yes = assume_yes
        self.interactive = interactive
        self.session_id = ""
        self.turn_id = ""
        self.seq = 0

    def emit(self, event: events.AgentEvent) -> None:
        sid = self.session_id
        if isinstance(event, events.UsageUpdated):
            self.printer.usage_changed(wire.usage_json(sid, event.snapshot))
        elif isinstance(event, events.CompactionStarted | events.CompactionFinished):
            self.printer.compaction(wire.compaction_json(sid, event))
        elif isinstance(event, events.OverflowHappened):
            self.printer.overflow(wire.overflow_json(sid, event))
        elif (update := wire.update_json(event)) is not None:
            if isinstance(event, events.TurnStarted):
                return  # the prompt is already on screen
            self.printer.update(
                {"sessionId": sid, "turnId": self.turn_id, "seq": self.seq, "update": update}
            )
            self.seq += 1

    async def ask(self, request: PermissionRequest) -> str | None:
        if self.assume_yes:
            return "allow_once"
        if not self.interactive:
            return None
        answer = await asyncio.to_thread(
            Prompt.ask,
            f"[yellow]Allow[/yellow] {request.title}? [dim](y)es, (a)lways, (n)o[/dim]",
            choices=["y", "a", "n"],
            default="n",
            console=self.console,
        )
        return {"y": "allow_once", "a": "allow_always"}.get(answer, "reject_once")

    async def turn(self, session: AgentSession, prompt: str) -> str:
        self.printer.prompt(prompt)
        self.seq = 0
        result = await session.run_turn(prompt)
        self.turn_id = result.turn_id
        self.printer.turn_ended(
            {
                "stopReason": result.stop_reason,
                "usage": wire.usage_json(self.session_id, session.usage_snapshot()),
            }
        )
        if result.error:
            self.console.print(Text(result.error, style="red"))
        return result.stop_reason


async def run_chat(
    *,
    prompt: str | None,
    workspace: Path,
    settings: AgentSettings,
    session_id: str | None,
    assume_yes: bool,
    console: Console | None = None,
) -> int:
    console = console or Console(highlight=False)
    chat = TerminalChat(console, assume_yes=assume_yes, interactive=prompt is None)
    agent = WorkspaceAgent(workspace, settings)
    try:
        if session_id:
            session = agent.open(session_id, emit=chat.emit, ask=chat.ask, assume_yes=assume_yes)
        else:
            session = agent.create(emit=chat.emit, ask=chat.ask, assume_yes=assume_yes)
        chat.session_id = session.session_id
        console.print(
            Text(
                f"session {session.session_id} · {settings.provider} {session.model.id}"
                f" · {workspace}",
                style="dim",
            )
        )
        if prompt is not None:
            stop = await chat.turn(session, prompt)
            return 0 if stop in ("end_turn", "max_tokens") else 1
        while True:
            try:
                line = await asyncio.to_thread(
                    Prompt.ask, "[bold cyan]you[/bold cyan]", console=console
                )
            except (EOFError, KeyboardInterrupt):
                return 0
            line = line.strip()
            if not line:
                continue
            if line in ("/quit", "/exit"):
                return 0
            if line == "/usage":
                console.print(
                    meter_text(wire.usage_json(session.session_id, session.usage_snapshot()))
                )
            elif line.startswith("/compact"):
                outcome = await session.compact(line.removeprefix("/compact").strip() or None)
                console.print(
                    Text(
                        f"compaction: {outcome.outcome} "
                        f"({outcome.tokens_before} → {outcome.tokens_after} tokens)",
                        style="magenta",
                    )
                )
            elif line == "/sessions":
                for info in agent.list():
                    console.print(
                        f"{info.session_id}  {info.title or ''}  ({info.entry_count} entries)"
                    )
            else:
                await chat.turn(session, line)
    except AgentServerError as error:
        console.print(Text(error.message, style="bold red"))
        return 1
    finally:
        await agent.close()


def main(args: Any) -> int:
    try:
        config = load_config(Path(args.config) if args.config else None)
        settings = resolve_settings(config, flag_overrides(args))
    except ConfigError as error:
        Console(stderr=True).print(Text(error.message, style="red"))
        return 2
    prompt = " ".join(args.prompt) if args.prompt else None
    return asyncio.run(
        run_chat(
            prompt=prompt,
            workspace=Path(args.workspace).resolve(),
            settings=settings,
            session_id=args.session,
            assume_yes=args.yes,
        )
    )
