"""`agent-server chat`: the agent in a terminal, one-shot or interactive.

It runs the same engine the language server runs (a WorkspaceAgent for the current
directory) and prints the same transcript, meter and compaction markers as the demo: the
agent's events are turned into the editor protocol's JSON and rendered by TranscriptPrinter
(answers as Markdown; everything shown literally). Interactive commands: /compact
[instructions], /usage, /sessions, /quit; Ctrl-C stops a turn, Ctrl-C twice or Ctrl-D at the
prompt quits. A session opened and left without a prompt is not kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.prompt import Prompt
from rich.text import Text

from agent_server.agent import events
from agent_server.agent.config_file import flag_overrides, load_config, resolve_settings
from agent_server.agent.permissions import PermissionRequest
from agent_server.agent.session import AgentSession
from agent_server.agent.settings import AgentSettings
from agent_server.agent.workspace import WorkspaceAgent
from agent_server.console.render import (
    TranscriptPrinter,
    diff_text,
    meter_text,
    shown,
    usage_table,
)
from agent_server.console.sessions import sessions_table
from agent_server.errors import AgentServerError, ConfigError
from agent_server.lsp import wire


class TerminalChat:
    """One terminal conversation: prints the agent's events, asks its permission questions,
    reads prompts. Prompts and questions are read in the main thread between the event
    loop's runs (nothing else needs the loop then), so Ctrl-C is a plain KeyboardInterrupt
    there: at the idle prompt it asks for a second Ctrl-C (or Ctrl-D) to quit; during a turn
    it stops the turn (asyncio.Runner cancels it); at a permission question it rejects the
    call and stops the turn."""

    def __init__(self, console: Console, *, assume_yes: bool, interactive: bool) -> None:
        self.console = console
        self.printer = TranscriptPrinter(console, max_message_lines=None, markdown=True)
        self.assume_yes = assume_yes
        self.interactive = interactive
        self.session: AgentSession | None = None
        self.turn_id = ""
        self.seq = 0
        self.last_turn: dict[str, Any] | None = None

    @property
    def session_id(self) -> str:
        return self.session.session_id if self.session is not None else ""

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
        self.show_request(request)
        options = request.options
        for number, option in enumerate(options, 1):
            self.console.print(Text(f"  {number} ", style="bold") + shown(option.name))
        reject = next(i for i, o in enumerate(options, 1) if o.kind == "reject_once")
        with default_sigint():
            try:
                answer = Prompt.ask(
                    Text("  choose"),
                    choices=[str(n) for n in range(1, len(options) + 1)],
                    default=str(reject),
                    console=self.console,
                )
            except (KeyboardInterrupt, EOFError):
                self.console.print(Text("\n  rejected; stopping the turn", style="yellow"))
                if self.session is not None:
                    self.session.interrupt()
                return None
        chosen = options[int(answer) - 1]
        if chosen.kind.endswith("always"):
            self.console.print(Text("  ") + shown(chosen.name, "dim"))
        return chosen.option_id

    def show_request(self, request: PermissionRequest) -> None:
        """The whole of what would run: the command, or the file change as a diff."""
        self.printer.diffs_shown.add(request.tool_call.id)
        title = Text("Allow ", style="bold yellow") + shown(request.title, "bold", one_line=True)
        self.console.print(title + Text("?", style="bold yellow"))
        if request.command is not None:
            self.console.print(Panel(shown(request.command), title="command", title_align="left"))
        elif request.change is not None:
            change = request.change
            if change.old_text is None:
                body, what = shown(change.new_text), f"new file {change.path}"
            else:
                body, what = diff_text(change.diff), f"changes to {change.path}"
            self.console.print(Panel(body, title=shown(what, one_line=True), title_align="left"))

    async def turn(self, session: AgentSession, prompt: str) -> str:
        if not self.interactive:
            self.printer.prompt(prompt)
        self.printer.errors_shown = []
        self.seq = 0
        before = session.totals.to_json()
        result = await session.run_turn(prompt)
        after = session.totals.to_json()
        self.last_turn = {key: after[key] - before[key] for key in TURN_FIGURES}
        self.turn_id = result.turn_id
        self.printer.turn_ended(
            {
                "stopReason": result.stop_reason,
                "error": result.error,
                "usage": wire.usage_json(self.session_id, session.usage_snapshot()),
            }
        )
        return result.stop_reason

    def read_prompt(self) -> str | None:
        """The next prompt; None to quit (Ctrl-D, or Ctrl-C twice in a row)."""
        interrupted = False
        while True:
            try:
                line = input(self.prompt_label())
            except EOFError:
                self.console.print()
                return None
            except KeyboardInterrupt:
                if interrupted:
                    self.console.print()
                    return None
                interrupted = True
                self.console.print(Text("\n(Ctrl-C again or Ctrl-D to quit)", style="dim"))
                continue
            if line.strip():
                return line.strip()

    def prompt_label(self) -> str:
        """`you › ` for input(), in bold cyan on a colour terminal: the colour codes are
        wrapped in readline's invisible markers (\\001, \\002), so line editing and history
        keep the cursor in the right place."""
        if not self.console.is_terminal or self.console.color_system is None:
            return "you › "
        start, end = ("\001", "\002") if "readline" in sys.modules else ("", "")
        return f"{start}\x1b[1;36m{end}you ›{start}\x1b[0m{end} "

    def show_usage(self, session: AgentSession) -> None:
        usage = wire.usage_json(session.session_id, session.usage_snapshot())
        self.console.print(meter_text(usage))
        self.console.print(usage_table(usage, self.last_turn, session.totals.to_json()))


TURN_FIGURES = ("calls", "input", "cacheRead", "cacheWrite", "output", "cost")


@contextlib.contextmanager
def default_sigint() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt here, even inside an asyncio.Runner's run (which
    would otherwise only cancel its task, leaving a blocking read waiting)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_chat(
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
    with asyncio.Runner() as runner:
        agent = WorkspaceAgent(workspace, settings)
        try:
            if session_id:
                session = agent.open(
                    agent.store.resolve(session_id),
                    emit=chat.emit,
                    ask=chat.ask,
                    assume_yes=assume_yes,
                )
            else:
                session = agent.create(emit=chat.emit, ask=chat.ask, assume_yes=assume_yes)
            chat.session = session
            console.print(
                shown(
                    f"session {session.session_id} · {settings.provider} {session.model.id}"
                    f" · {workspace}",
                    "dim",
                )
            )
            if prompt is not None:
                stop = runner.run(chat.turn(session, prompt))
                return 0 if stop in ("end_turn", "max_tokens") else 1
            if chat_loop(chat, runner, agent, session) == "interrupted":
                return 130
            return 0
        except AgentServerError as error:
            console.print(shown(error.message, "bold red"))
            return 1
        except KeyboardInterrupt:  # a second Ctrl-C while a turn was stopping
            console.print(Text("\ninterrupted", style="yellow"))
            return 130
        finally:
            runner.run(agent.close())


def chat_loop(
    chat: TerminalChat, runner: asyncio.Runner, agent: WorkspaceAgent, session: AgentSession
) -> str:
    console = chat.console
    console.print(
        Text("/usage, /compact [instructions], /sessions, /quit; Ctrl-D quits", style="dim")
    )
    while True:
        line = chat.read_prompt()
        if line is None or line in ("/quit", "/exit"):
            return "quit"
        if line == "/usage":
            chat.show_usage(session)
        elif line.startswith("/compact"):
            outcome = runner.run(session.compact(line.removeprefix("/compact").strip() or None))
            if outcome.outcome == "noop":
                console.print(
                    Text("nothing to compact yet: the history is already short", style="dim")
                )
            else:
                console.print(
                    Text(
                        f"compaction: {outcome.outcome} "
                        f"({outcome.tokens_before} → {outcome.tokens_after} tokens)",
                        style="magenta",
                    )
                )
        elif line == "/sessions":
            console.print(sessions_table(agent.list(), title="sessions"))
        else:
            runner.run(chat.turn(session, line))


def main(args: Any) -> int:
    try:
        config = load_config(Path(args.config) if args.config else None)
        settings = resolve_settings(config, flag_overrides(args))
    except ConfigError as error:
        Console(stderr=True).print(shown(error.message, "red"))
        return 2
    prompt = " ".join(args.prompt) if args.prompt else None
    if prompt is None:
        with contextlib.suppress(ImportError):
            import readline  # noqa: F401  (line editing and history for input())
    return run_chat(
        prompt=prompt,
        workspace=Path(args.workspace).resolve(),
        settings=settings,
        session_id=args.session,
        assume_yes=args.yes,
    )
