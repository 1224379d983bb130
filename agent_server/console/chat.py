"""`agent-server chat`: the agent in a terminal, one-shot or interactive.

It runs the same engine the language server runs (a WorkspaceAgent for the current
directory) and prints the same transcript, meter and compaction markers as the demo: the
agent's events are turned into the editor protocol's JSON and rendered by TranscriptPrinter
(answers as Markdown; everything shown literally). Interactive commands (console/commands.py,
`/help` lists them): /model, /mode, /rewind, /compact, /usage, /sessions [id], /new, /quit;
other agents' names (/clear, /resume) are aliases; an unknown
`/word` is answered, not sent. `@path` attaches a workspace file or folder (Tab completes
it), a pasted image path attaches the image. Ctrl-C stops a turn or /compact; at the prompt
it clears a typed line, and twice on an empty line (or Ctrl-D) quits. A session opened and
left without a prompt is not kept; one with prompts ends with the line that continues it. A
continued session (`--session`) first shows its last three prompts and what followed them.
/new keeps the settings of the session left (model, thinking level, permission mode, "always"
answers); only the conversation starts again.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console, Group
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from agent_server import protocol
from agent_server.agent import events
from agent_server.agent.checkpoints import RestorePlan
from agent_server.agent.context_manager import CompactionResult
from agent_server.agent.mcp.approval import NO_ANSWERS
from agent_server.agent.memory import pin_argument
from agent_server.agent.permissions import PermissionRequest
from agent_server.agent.rewind import RestoreChoice
from agent_server.agent.session import AgentSession
from agent_server.agent.settings import AgentSettings
from agent_server.agent.turn import TurnResult
from agent_server.agent.workspace import WorkspaceAgent, model_choices
from agent_server.console.activity import Activity
from agent_server.console.chat_start import HINT
from agent_server.console.commands import (
    COMMANDS,
    command_names,
    mode_named,
    prompt_with_images,
    read_command,
    written_commands,
)
from agent_server.console.line_input import LineReader, workspace_paths
from agent_server.console.render import (
    TranscriptPrinter,
    diff_text,
    fitting,
    format_tokens,
    meter_text,
    shown,
    stacked_table,
    usage_table,
)
from agent_server.console.sessions import sessions_table, show_tail
from agent_server.ending_signals import EndedBySignal, EndingSignals
from agent_server.errors import AgentServerError, SessionNotFoundError
from agent_server.llm.messages import TextContent, UserContent
from agent_server.lsp import items, wire

REWIND_LISTED = 9  # the latest prompts /rewind lists (any earlier one by its number)
REWIND_CHOICES: tuple[tuple[str, RestoreChoice | None], ...] = (
    ("conversation and files", "both"),
    ("conversation only", "conversation"),
    ("files only", "files"),
    ("cancel", None),
)


class TerminalChat:
    """One terminal conversation: prints the agent's events, asks its permission questions,
    reads prompts. Prompts and questions are read in the main thread between the event
    loop's runs (nothing else needs the loop then), so Ctrl-C is a plain KeyboardInterrupt
    there: at the idle prompt it asks for a second Ctrl-C (or Ctrl-D) to quit; during a turn
    it stops the turn, saying so at once, and a second one quits (`until_stopped`), and so
    during a /compact; at a permission question it rejects the call and stops the turn."""

    def __init__(
        self,
        console: Console,
        *,
        assume_yes: bool,
        interactive: bool,
        reader: LineReader | None = None,
    ) -> None:
        self.console = console
        self.printer = TranscriptPrinter(console, max_message_lines=None, markdown=True)
        self.assume_yes = assume_yes
        self.interactive = interactive
        self.session: AgentSession | None = None
        self.turn_id = ""
        self.seq = 0
        self.last_turn: dict[str, Any] | None = None
        self.reader = reader or LineReader(console, command_names)
        self.quitting = False  # a second Ctrl-C quit while a turn was stopping
        self.activity = Activity(console) if console.is_terminal else None
        self.printer.activity = self.activity
        if interactive:
            self.printer.output_hint = " (/output shows them all)"

    @property
    def session_id(self) -> str:
        return self.session.session_id if self.session is not None else ""

    def emit(self, event: events.AgentEvent) -> None:
        if self.quitting:  # the turn ends as the session closes, below the goodbye
            return
        sid = self.session_id
        if isinstance(event, events.UsageUpdated):
            self.printer.usage_changed(wire.usage_json(sid, event.snapshot))
        elif isinstance(event, events.CompactionStarted | events.CompactionFinished):
            self.printer.compaction(wire.compaction_json(sid, event))
        elif isinstance(event, events.OverflowHappened):
            self.printer.overflow(wire.overflow_json(sid, event))
        elif (update := items.update_json(event)) is not None:
            # (A prompt's update shows only what its mentions attached: the prompt itself is
            # on screen already.)
            self.printer.update(
                {"sessionId": sid, "turnId": self.turn_id, "seq": self.seq, "update": update}
            )
            self.seq += 1

    async def ask(self, request: PermissionRequest) -> str | None:
        if self.assume_yes:
            return "allow_once"
        with self.activity.paused() if self.activity else contextlib.nullcontext():
            return self.question(request)

    def question(self, request: PermissionRequest) -> str | None:
        self.show_request(request)
        options = request.options
        for number, option in enumerate(options, 1):
            self.console.print(Text(f"  {number} ", style="bold") + shown(option.name))
        allow = next(i for i, o in enumerate(options, 1) if o.kind == "allow_once")
        reject = next(i for i, o in enumerate(options, 1) if o.kind == "reject_once")
        words = {"y": allow, "yes": allow, "n": reject, "no": reject}
        # `a` (Codex's key) or `always`: the first, narrowest always-allow (this command).
        always = next((i for i, o in enumerate(options, 1) if o.kind == "allow_always"), None)
        if always is not None:
            words |= {"a": always, "always": always}
        with default_sigint():
            try:
                answer = self.pick("choose", len(options), default=reject, words=words)
            except (KeyboardInterrupt, EOFError):
                self.console.print(Text("\n  rejected; stopping the turn", style="yellow"))
                if self.session is not None:
                    self.session.interrupt()
                return None
        chosen = options[(answer or reject) - 1]
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

    async def turn(self, session: AgentSession, prompt: str, piped: str = "") -> str | None:
        """The turn's stop reason; None when a second Ctrl-C quit the chat meanwhile.
        `piped`: what was piped into a one-shot chat, sent before the prompt (the question
        after the material, as @-mentions are)."""
        if not self.interactive:
            self.printer.prompt(prompt)
        content, images = prompt_with_images(prompt, session.workspace)
        if piped:
            body = piped.rstrip("\n")
            content = (TextContent(f"<stdin>\n{body}\n</stdin>"), *content)
            lines = len(piped.splitlines())
            self.console.print(
                Text(f"  attached stdin ({lines} line{'' if lines == 1 else 's'})", style="dim")
            )
        for number, image in enumerate(images, 1):
            self.console.print(
                shown(
                    f"  attached image {number}: {image.path} ({image.mime_type}, "
                    f"{image.size // 1024 or 1} KB)",
                    "dim",
                )
            )
        self.printer.errors_shown = []
        self.printer.denials = 0
        self.seq = 0
        before = session.totals.to_json()
        if self.activity is not None:
            self.activity.waiting("waiting for the model")
        try:
            result = await self.run_stoppably(session, content)
        finally:
            if self.activity is not None:
                self.activity.stop()
        if result is None:
            return None
        after = session.totals.to_json()
        self.last_turn = {key: after[key] - before[key] for key in TURN_FIGURES}
        self.turn_id = result.turn_id
        self.printer.turn_ended(
            {
                "stopReason": result.stop_reason,
                "error": result.error,
                "usage": wire.usage_json(self.session_id, session.usage.snapshot()),
            }
        )
        if not self.interactive and self.printer.denials:
            self.console.print(shown(cannot_ask(self.printer.denials), "yellow"))
        return result.stop_reason

    async def run_stoppably(
        self, session: AgentSession, content: tuple[UserContent, ...]
    ) -> TurnResult | None:
        """The turn's result; None when a second Ctrl-C quit first."""
        turn = asyncio.ensure_future(session.run_turn(content))
        done = await self.until_stopped(turn, session.interrupt, "the turn")
        return None if done is None else done.result()

    async def until_stopped(
        self, work: asyncio.Future[T], stop: Callable[[], object], what: str
    ) -> asyncio.Future[T] | None:
        """`work` once it has ended; None when a second Ctrl-C quit first. Ctrl-C is taken
        here, not by asyncio.Runner (which says nothing until the work has stopped, and
        raises KeyboardInterrupt on the second one wherever the program is): the first
        `stop`s the work and says so at once; the second quits without waiting for it, and
        the chat ends as any exit does, saying how to continue (a turn ends, its end
        recorded, as the session closes). Both act from the event loop, between its
        callbacks."""
        loop = asyncio.get_running_loop()
        quit_asked: asyncio.Future[Any] = loop.create_future()
        stop_asked = False

        def pressed() -> None:
            nonlocal stop_asked
            if stop_asked:
                if not quit_asked.done():
                    quit_asked.set_result(None)
                return
            stop_asked = True
            self.stopping(what)
            stop()

        previous = signal.signal(
            signal.SIGINT, lambda _signal, _frame: loop.call_soon_threadsafe(pressed)
        )
        try:
            await asyncio.wait([work, quit_asked], return_when=asyncio.FIRST_COMPLETED)
        finally:
            signal.signal(signal.SIGINT, previous)
        if not work.done():
            self.quitting = True
            return None
        return work

    def stopping(self, what: str) -> None:
        """The first Ctrl-C of a turn or a /compact, said at once: killing a command or
        closing the model's answer can take seconds."""
        self.console.print(Text(f"  stopping {what} (Ctrl-C again quits)", style="yellow"))
        if self.activity is not None:
            self.activity.stopping(f"stopping {what}")

    def say_how_to_continue(self) -> None:
        """The command that continues the session, as the chat ends: whether by /quit,
        Ctrl-D or Ctrl-C twice (the session is saved either way). Nothing for a session that
        has no prompt (it is not kept): one the chat went on in (/sessions id, --session)
        says it too, though no prompt was typed here."""
        if self.session is not None and self.session.ledger.facts.meta.prompt_count:
            sid = self.session_id
            self.console.print(
                shown(f"session {sid}: `agent-server chat --session {sid[:8]}` continues it", "dim")
            )

    def enter(self, session: AgentSession) -> None:
        """The chat is in `session` from now on. Its last turn (for /usage) is the one its
        ledger records, until a turn here: none when it has had no prompt."""
        self.session, self.turn_id = session, ""
        self.last_turn = recorded_last_turn(session)

    def go_on_in(
        self, runner: asyncio.Runner, agent: WorkspaceAgent, session: AgentSession
    ) -> None:
        """The chat goes on in `session` (/new, /sessions id): the one left says how to
        continue it, and is closed (one that got no prompt is not kept)."""
        left = self.session
        self.say_how_to_continue()
        if left is not None:
            runner.run(agent.close_session(left.session_id))
        self.enter(session)
        self.printer.usage = None
        self.console.print(session_line(session))

    def new_session(
        self, runner: asyncio.Runner, agent: WorkspaceAgent, left: AgentSession
    ) -> AgentSession:
        """`/new` (`/clear`): a new session that works as the one `left` did: on its model, at
        its thinking level, in its permission mode, with the "always" answers given in it,
        as Claude Code's /clear keeps its permission rules: only the conversation starts
        again. Not its answers about the workspace's `.mcp.json` ("this session"; one
        declined says it is asked again in a new session)."""
        session = agent.create(
            model=left.model.id,
            thinking=left.thinking,
            carried=replace(left.permission_choices(), mcp_files=NO_ANSWERS),
            emit=self.emit,
            ask=self.ask if self.interactive else None,
            assume_yes=self.assume_yes,
        )
        self.go_on_in(runner, agent, session)
        if session.gate.rules:
            self.console.print(kept_answers(session))
        return session

    def fork_session(
        self, runner: asyncio.Runner, agent: WorkspaceAgent, left: AgentSession
    ) -> AgentSession:
        """`/fork`: the chat goes on in a copy of `left` (WorkspaceAgent.fork: its
        conversation, its model, thinking level, mode and answers); `left` stays as it was."""
        try:
            session = agent.fork(left.session_id, emit=self.emit,
                                 ask=self.ask if self.interactive else None,
                                 assume_yes=self.assume_yes)
        except AgentServerError as error:
            self.console.print(shown(error.message, "red"))
            return left
        self.go_on_in(runner, agent, session)
        return session

    def resume_command(
        self, runner: asyncio.Runner, agent: WorkspaceAgent, argument: str
    ) -> AgentSession | None:
        """`/sessions` (`/resume`): this workspace's sessions; `/sessions <id>`: the session
        the chat goes on in (None when it stays in this one)."""
        if not argument:
            self.console.print(sessions_table(agent.list(), "sessions", self.console))
            self.console.print(Text("/sessions <id> goes on with one", style="dim"))
            return None
        try:
            session_id = agent.store.resolve(argument)
            if session_id == self.session_id:
                self.console.print(Text("that is this session", style="dim"))
                return None
            ask = self.ask if self.interactive else None
            session = agent.open(session_id, emit=self.emit, ask=ask, assume_yes=self.assume_yes)
        except AgentServerError as error:
            self.console.print(shown(error.message, "red"))
            return None
        self.go_on_in(runner, agent, session)
        show_tail(session.ledger.tree.branch(), session.session_id, self.console)
        return session

    def show_usage(self, session: AgentSession) -> None:
        usage = wire.usage_json(session.session_id, session.usage.snapshot())
        self.console.print(meter_text(usage, self.console.width))
        self.console.print(usage_table(usage, self.last_turn, session.totals.to_json()))
        if self.last_turn is None:
            self.console.print(Text("no turn yet in this session", style="dim"))

    # --- commands -------------------------------------------------------------------------

    def show_help(self, session: AgentSession | None = None) -> None:
        """The commands as columns, or on a narrow terminal each command and its arguments
        on a line, what it does under it (nothing cut: an argument is typed back)."""
        rows = [
            (command.name, command.arguments, command.help) for command in COMMANDS
        ] + [
            (f"/{c.name}", c.hint, f"{c.description} ({c.origin}'s command)")
            for c in (written_commands(session.workspace) if session else [])
        ] + [
            ("@path", "", "attach a workspace file or folder (Tab completes)"),
            ("a/b.png", "", "an image file's path attaches the image"),
        ]
        table = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
        table.add_column(no_wrap=True)
        table.add_column(no_wrap=True)
        table.add_column()
        stacked = Table(show_header=False, box=None, padding=0)
        stacked.add_column(overflow="fold")
        for name, arguments, what in rows:
            # Text, not a str: Rich would read "[model id]" as markup and drop it.
            table.add_row(Text(name, style="bold"), Text(arguments), Text(what))
            usage = Text(name, style="bold") + Text(f" {arguments}".rstrip())
            stacked.add_row(Group(usage, Padding(Text(what), (0, 0, 0, 2))))
        self.console.print(fitting(self.console, table, stacked))

    def model_command(self, runner: asyncio.Runner, session: AgentSession, argument: str) -> None:
        """`/model`: the models of the session's provider; `/model <id>`: switch to one."""
        if not argument:
            self.console.print(models_table(self.console, session))
            self.console.print(Text("/model <id> switches this session", style="dim"))
            return
        try:
            switch = runner.run(session.switch_model(argument))
        except AgentServerError as error:
            self.console.print(shown(error.message, "red"))
            return
        self.console.print(shown(f"model: {switch.model.id} ({switch.model.name})", "magenta"))
        self.console.print(shown(switch.note, "dim"))

    def output_command(self, argument: str) -> None:
        """`/output`: the last command's output, whole (as the model got it); `/output N`:
        the Nth last."""
        outputs = self.printer.outputs
        if not outputs:
            self.console.print(Text("no command has run yet", style="dim"))
            return
        argument = argument.strip()
        number = int(argument) if argument.isdecimal() else 0 if argument else 1
        if not 1 <= number <= len(outputs):
            self.console.print(
                Text(f"/output takes 1 to {len(outputs)} (the Nth last command)", style="yellow")
            )
            return
        output = outputs[-number]
        self.console.print(shown(output.title, "bold", one_line=True))
        self.console.print(shown(output.text.rstrip("\n") or "(no output)"))
        if output.full_output_path:
            self.console.print(
                shown(f"({output.total_lines} lines in all: {output.full_output_path})", "dim")
            )

    def compact_command(
        self, runner: asyncio.Runner, session: AgentSession, argument: str
    ) -> bool:
        """`/compact [instructions]`: summarise the history now; False when a second Ctrl-C
        quit meanwhile. Ctrl-C stops it as it stops a turn, and comes back to the prompt,
        the history as it was."""
        if self.activity is not None:
            self.activity.waiting("compacting")
        ended = self.printer.compactions_ended

        async def compacting() -> asyncio.Future[CompactionResult] | None:
            work = asyncio.ensure_future(session.compact(argument or None))
            return await self.until_stopped(work, work.cancel, "the compaction")

        try:
            done = runner.run(compacting())
        finally:
            if self.activity is not None:
                self.activity.stop()
        if done is None:
            return False
        outcome = None if done.cancelled() else done.result()
        if outcome is None:
            if self.printer.compactions_ended == ended:  # stopped before it had begun
                self.printer.compaction_stopped()
        elif outcome.outcome == "noop":
            self.console.print(
                Text("nothing to compact yet: the history is already short", style="dim")
            )
        elif outcome.outcome == "compacted":  # the meter, as after a turn
            usage = wire.usage_json(session.session_id, session.usage.snapshot())
            self.console.print(meter_text(usage, self.console.width))
        # The compaction's own marker (or its failure) is on screen already.
        return True

    def mode_command(self, session: AgentSession, argument: str) -> None:
        """`/mode`: when tools ask first; `/mode <mode>`: switch."""
        if argument:
            mode = mode_named(argument)
            if mode is None:
                self.console.print(
                    shown(f"unknown mode {argument!r}: use ask, allowReads or allowAll", "red")
                )
                return
            session.set_mode(mode)
        mode = session.mode
        meaning = protocol.PERMISSION_MODE_NAMES[mode][1]
        self.console.print(
            Text(f"mode: {mode}", style="magenta") + Text(f" ({meaning})", style="dim")
        )
        # How commands run (whatever the mode: the sandbox is `tools.sandbox`'s).
        self.console.print(shown(f"commands: {session.confinement.describe()}", "dim"))

    def thinking_command(self, session: AgentSession, argument: str) -> None:
        """`/thinking`: how hard the model thinks; `/thinking <level>`: switch."""
        if not argument:
            can = "" if session.can_think else f" ({session.model.name} does not think on request)"
            self.console.print(Text(f"thinking: {session.thinking}", style="magenta") + Text(can))
            self.console.print(Text("/thinking off|low|medium|high switches", style="dim"))
            return
        try:
            switch = session.switch_thinking(argument.strip().lower())
        except AgentServerError as error:
            self.console.print(shown(error.message, "red"))
            return
        self.console.print(shown(f"thinking: {switch.thinking}", "magenta"))
        self.console.print(shown(switch.note, "dim"))

    def pins_command(self, session: AgentSession) -> None:
        """`/pins`: the pins in force and the task's plan."""
        pins = session.memory.pins()
        if not pins:
            self.console.print(Text("nothing pinned (/remember pins a rule)", style="dim"))
        for pin in pins:
            line = Text(f"  {pin.id} ", style="magenta") + Text(f"{pin.kind}, by the {pin.by}: ")
            self.console.print(line + shown(pin.text))
        plan = session.memory.plan()
        if plan:
            self.printer.update({"update": {"kind": "plan", "entries": items.plan_json(plan)}})

    def rewind_command(self, runner: asyncio.Runner, session: AgentSession) -> None:
        """`/rewind`: pick a prompt, see what would change, choose what goes back."""
        shown_events = session.transcript(limit=500).events
        prompts = [event for event in shown_events if isinstance(event, events.TurnStarted)]
        if not prompts:
            self.console.print(Text("nothing to rewind to yet", style="dim"))
            return
        earlier = max(0, len(prompts) - REWIND_LISTED)
        if earlier:
            self.console.print(
                Text(f"  … prompts 1 to {earlier} are earlier: type a number to pick one", "dim")
            )
        for number, prompt in enumerate(prompts[earlier:], earlier + 1):
            text = " ".join(_typed_text(prompt).split())
            self.console.print(
                Text(f"  {number} ", style="bold") + shown(text[:100], one_line=True)
            )
        picked = self.choose("rewind to before which prompt", len(prompts), cancel=True)
        if picked is None:
            return
        entry_id = prompts[picked - 1].entry_id
        plan = runner.run(asyncio.to_thread(session.rewinder.plan, entry_id))
        show_plan(self.console, plan)
        options = [o for o in REWIND_CHOICES if plan.files or o[1] in ("conversation", None)]
        for number, (label, _choice) in enumerate(options, 1):
            self.console.print(Text(f"  {number} ", style="bold") + Text(label))
        answer = self.choose("what goes back", len(options), cancel=False)
        choice = options[answer - 1][1] if answer is not None else None
        if choice is None:
            self.console.print(Text("  nothing changed", style="dim"))
            return
        try:
            rewound = runner.run(session.rewind(entry_id, restore=choice))
        except AgentServerError as error:
            self.console.print(shown(error.message, "red"))
            return
        for version in rewound.files:
            verb = "deleted" if version.after is None else "restored"
            self.console.print(shown(f"  {verb} {version.path}", "magenta"))
        for problem in rewound.problems:
            self.console.print(shown(f"  not restored: {problem}", "red"))
        if choice != "files":
            self.console.print(
                Text("  the conversation continues from before that prompt", style="magenta")
            )
        if rewound.prompt:
            texts = (b.text for b in rewound.prompt if isinstance(b, TextContent))
            self.reader.prefill = "\n".join(texts)

    def choose(self, question: str, count: int, *, cancel: bool) -> int | None:
        """A number from 1 to `count`; None when cancelled (Enter, when allowed; Ctrl-C;
        Ctrl-D)."""
        with default_sigint():
            try:
                if cancel:
                    return self.pick(f"{question} (Enter cancels)", count, listed=False)
                return self.pick(question, count)
            except (KeyboardInterrupt, EOFError):
                self.console.print()
                return None

    def pick(
        self,
        question: str,
        count: int,
        *,
        default: int | None = None,
        listed: bool = True,
        words: Mapping[str, int] | None = None,
    ) -> int | None:
        """The number typed (1 to `count`; one of `words`, which stand for numbers), asked
        again after anything else; Enter: `default` (None when there is none)."""
        label = f"  {question}"
        if listed:
            label += f" [{'/'.join(str(n) for n in range(1, count + 1))}]"
        if default is not None:
            label += f" ({default})"
        while True:
            answer = self.reader.answer(label + ": ").strip().lower()
            if not answer and (default is not None or not listed):
                return default
            if answer.isdecimal() and 1 <= int(answer) <= count:
                return int(answer)
            if words and answer in words:
                return words[answer]
            keys = [word for word in words or () if len(word) == 1]
            hint = f"type 1 to {count}" + (f", or {', '.join(keys)}" if keys else "")
            self.console.print(Text(hint, style="yellow"))


def models_table(console: Console, session: AgentSession) -> Table:
    """The models `/model` lists, each id whole (it is what `/model <id>` takes): as
    columns, or one cell per model on a narrow terminal."""
    title = f"models ({session.settings.provider})"
    table = Table(title=title, title_justify="left")
    for column in ("", "model", "window", "max output", "$/M in · out · cache read"):
        table.add_column(column)
    stacked = stacked_table(title)
    for choice in model_choices(session.settings):
        model, pricing = choice.model, choice.model.pricing
        prices = f"{pricing.input:g} · {pricing.output:g} · {pricing.cache_read:g}"
        mark = "●" if model.id == session.model.id else ""
        name = shown(model.name + ("  (yours)" if choice.source == "user" else ""))
        window, output = format_tokens(model.context_window), format_tokens(model.max_output)
        table.add_row(mark, shown(model.id + "  ") + name, window, output, prices)
        figures = (
            f"window {window} · max output {output}\n$/M in {pricing.input:g} · out "
            f"{pricing.output:g} · cache read {pricing.cache_read:g}"
        )
        stacked.add_row(
            Text(f"{mark} " if mark else "") + shown(model.id) + Text("\n") + name
            + Text(f"\n{figures}", style="dim")
        )
    return fitting(console, table, stacked)


def remember_command(console: Console, session: AgentSession, argument: str) -> None:
    """`/remember [fact:] text`: pin a rule or a fact for the session."""
    kind, text = pin_argument(argument)
    try:
        pin = session.pin(kind, text)
    except AgentServerError as error:
        console.print(shown(error.message, "red"))
        return
    console.print(Text(f"pinned {pin.kind} {pin.id}: ", style="magenta") + shown(pin.text))


def forget_command(console: Console, session: AgentSession, argument: str) -> None:
    """`/forget id`: remove a pin."""
    if not argument.strip():
        console.print(Text("/forget takes a pin's id: /pins lists them with their ids", "yellow"))
        return
    try:
        pin = session.unpin(argument.strip())
    except AgentServerError as error:
        console.print(shown(error.message, "red"))
        return
    console.print(Text(f"removed {pin.kind} {pin.id}: ", style="dim") + shown(pin.text))


def show_plan(console: Console, plan: RestorePlan) -> None:
    """What restoring the files for a rewind would put back, and what it cannot."""
    if plan.files:
        console.print(Text("files a restore puts back:", style="bold"))
        for planned in plan.files:
            what = "delete (it did not exist then)" if planned.target is None else "restore"
            line = shown(f"  {planned.path}: {what}")
            if planned.changed_since:
                line.append(" (changed since the agent's edit: that change is lost)", "yellow")
            console.print(line)
    else:
        console.print(Text("no file the agent wrote or edited changed since then", style="dim"))
    if plan.commands or plan.untracked:
        console.print(Text("not restorable:", style="bold yellow"))
        for command in plan.commands:
            console.print(shown(f"  ran: {command}", "yellow", one_line=True))
        for path in plan.untracked:
            console.print(shown(f"  {path} (changed by a command or outside the agent)", "yellow"))
        if plan.untracked_more:
            console.print(Text(f"  and {plan.untracked_more} more files", style="yellow"))


def cannot_ask(denied: int) -> str:
    """Why a one-shot chat's calls were not run, and how to let them run."""
    calls = "1 tool call was" if denied == 1 else f"{denied} tool calls were"
    return (
        f"{calls} not run: a one-shot chat cannot ask for permission. To allow them, run "
        "it again with --yes (every call runs), or set permissions.mode to allowAll in the "
        "settings file; `agent-server chat` without a prompt asks before each one."
    )


def kept_answers(session: AgentSession) -> Text:
    """The "always" answers a new session (/new) keeps from the one left, in words."""
    said = [
        f"always {'allow' if rule.allowed else 'reject'} {rule.describe()}"
        for rule in session.gate.rules
    ]
    return shown(f"kept from the last session: {'; '.join(said)}", "dim")


def recorded_last_turn(session: AgentSession) -> dict[str, Any] | None:
    """The figures of the session's last turn (TURN_FIGURES) as its ledger records them;
    None when it has had no prompt."""
    if not session.ledger.facts.meta.prompt_count:
        return None
    return dict(wire.usage_json(session.session_id, session.usage.snapshot())["lastTurn"])


def _typed_text(prompt: events.TurnStarted) -> str:
    return "\n".join(block.text for block in prompt.content if isinstance(block, TextContent))


INTERRUPTED = Text("interrupted", style="yellow")
TURN_FIGURES = ("calls", "input", "cacheRead", "cacheWrite", "output", "cost")

T = TypeVar("T")


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
    piped: str = "",
    settings: AgentSettings,
    session_id: str | None,
    assume_yes: bool,
    continue_latest: bool = False,
    console: Console | None = None,
    reader: LineReader | None = None,
    first_line: str | None = None,
) -> int:
    """One-shot (`prompt`, with what was `piped` in) or interactive. An interactive chat
    that read its first line before the agent had loaded (console/chat_start.py) passes it
    as `first_line`, with the reader that read it; its first screen is on the terminal
    already. `continue_latest` (`--continue`) opens the workspace's latest session."""
    console = console or Console(highlight=False)
    chat = TerminalChat(console, assume_yes=assume_yes, interactive=prompt is None, reader=reader)
    # A one-shot chat has no one to ask: the gate denies what would ask (unless --yes), and
    # tells the model so.
    ask = chat.ask if chat.interactive else None
    # A closed terminal or a SIGTERM ends the chat as a quit does (agent_server/ending_signals.py).
    with asyncio.Runner() as runner, EndingSignals():
        agent = WorkspaceAgent(workspace, settings, rewind="prompt")  # /rewind lists prompts
        try:
            if continue_latest:
                session_id = latest_session(agent)
            if session_id:
                session = agent.open(
                    agent.store.resolve(session_id), emit=chat.emit, ask=ask, assume_yes=assume_yes
                )
            else:
                session = agent.create(emit=chat.emit, ask=ask, assume_yes=assume_yes)
            chat.enter(session)
            if first_line is None:
                console.print(session_line(session))
            if session_id:  # the user continues where they left off, not blind
                show_tail(session.ledger.tree.branch(), session.session_id, console)
            if prompt is not None:
                stop = runner.run(chat.turn(session, prompt, piped))
                if stop is None:  # a second Ctrl-C while the turn was stopping
                    console.print(INTERRUPTED)
                    return 130
                return 0 if stop in ("end_turn", "max_tokens") else 1
            ended = chat_loop(chat, runner, agent, session, first_line)
            if ended == "interrupted":
                console.print(INTERRUPTED)
            chat.say_how_to_continue()
            return 130 if ended == "interrupted" else 0
        except AgentServerError as error:
            console.print(shown(error.message, "bold red"))
            return 1
        except EndedBySignal as closed:  # nobody to tell: the sessions are closed below
            chat.quitting = True  # a write to a closed terminal fails: the turn ends unsaid
            return int(closed.code or 1)
        except KeyboardInterrupt:  # Ctrl-C, then another, in a command's work (/model, ...)
            console.print(Text("\n") + INTERRUPTED)
            chat.say_how_to_continue()
            return 130
        finally:
            runner.run(agent.close())


def session_line(session: AgentSession) -> Text:
    """The line a session starts with: its id, provider, model and workspace."""
    return shown(
        f"session {session.session_id} · {session.settings.provider} {session.model.id} · "
        f"{session.workspace}",
        "dim",
    )


def latest_session(agent: WorkspaceAgent) -> str:
    """The id of the workspace's most recently used session (`chat --continue`)."""
    sessions = agent.list()
    if not sessions:
        raise SessionNotFoundError(
            f"no session to continue in {agent.root}: `agent-server chat` starts one"
        )
    return sessions[0].session_id


def chat_loop(
    chat: TerminalChat,
    runner: asyncio.Runner,
    agent: WorkspaceAgent,
    session: AgentSession,
    first_line: str | None = None,
) -> str:
    console = chat.console
    if first_line is None:
        console.print(HINT)
        chat.reader.install_completion(workspace_paths(session.workspace))
    while True:
        line, first_line = first_line or chat.reader.read(), None
        if line is None:
            return "quit"
        typed = read_command(line)
        if typed is None:
            if runner.run(chat.turn(session, line)) is None:
                return "interrupted"
            continue
        if typed.command is None and typed.word[1:] in {
                c.name for c in written_commands(session.workspace)}:
            # A command the user or the workspace wrote: the turn sends its prompt.
            if runner.run(chat.turn(session, line)) is None:
                return "interrupted"
            continue
        if typed.command is None:
            console.print(
                shown(
                    f"unknown command {typed.word}: nothing was sent; /help lists the commands",
                    "yellow",
                )
            )
            continue
        if typed.argument and not typed.command.arguments:
            # "/new fix the parser": the words would be lost, neither done nor sent.
            console.print(
                shown(
                    f"{typed.word} takes nothing after it: nothing was done and nothing sent "
                    "(the up arrow brings the line back)",
                    "yellow",
                )
            )
            continue
        name = typed.command.name
        if name == "/quit":
            return "quit"
        if name == "/help":
            chat.show_help(session)
        elif name == "/usage":
            chat.show_usage(session)
        elif name == "/output":
            chat.output_command(typed.argument)
        elif name == "/compact":
            if not chat.compact_command(runner, session, typed.argument):
                return "interrupted"
        elif name == "/sessions":
            session = chat.resume_command(runner, agent, typed.argument) or session
        elif name == "/new":
            session = chat.new_session(runner, agent, session)
        elif name == "/fork":
            session = chat.fork_session(runner, agent, session)
        elif name == "/model":
            chat.model_command(runner, session, typed.argument)
        elif name == "/mode":
            chat.mode_command(session, typed.argument)
        elif name == "/thinking":
            chat.thinking_command(session, typed.argument)
        elif name == "/rewind":
            chat.rewind_command(runner, session)
        elif name == "/remember":
            remember_command(console, session, typed.argument)
        elif name == "/forget":
            forget_command(console, session, typed.argument)
        elif name == "/pins":
            chat.pins_command(session)
