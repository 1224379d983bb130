"""What every tool is made of: the `Tool` protocol, the context a call runs in, its result.

A tool is stateless: the same instance serves every session. Its `spec` (name, description,
argument schema) never changes, because the tool list is part of the cached prompt prefix.
Everything that differs between sessions or calls lives in the `ToolContext`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeAlias

from agent_server.agent.tools.command_input import CommandInputs
from agent_server.agent.tools.files import LOCAL_FILES, FileAccess
from agent_server.agent.tools.output import DEFAULT_LIMITS, OutputLimits
from agent_server.agent.tools.sandbox import Confinement
from agent_server.errors import InvalidToolArgumentsError
from agent_server.llm.messages import (
    ImageContent,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    calls_that_succeeded,
)

# The Agent Client Protocol's tool kinds; the editor picks an icon by it.
from agent_server.protocol import ToolKind as ToolKind
from agent_server.session.entries import Pin, PinAuthor, PinKind, PlanItem

OutputCallback: TypeAlias = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call gives back.

    `content` goes to the model. `details` are for the editor only (the diff of an edit, the
    path of a spilled full output, an exit code): they are never sent to the model.
    """

    content: tuple[TextContent | ImageContent, ...]
    is_error: bool = False
    details: Mapping[str, Any] | None = None

    @staticmethod
    def of_text(
        text: str, *, is_error: bool = False, details: Mapping[str, Any] | None = None
    ) -> ToolResult:
        return ToolResult((TextContent(text),), is_error=is_error, details=details)

    @staticmethod
    def error(message: str, details: Mapping[str, Any] | None = None) -> ToolResult:
        return ToolResult((TextContent(message),), is_error=True, details=details)

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content if isinstance(block, TextContent))

    def to_message(self, call: ToolCall) -> ToolResultMessage:
        """The tool-result message the model gets for `call` (details left out)."""
        return ToolResultMessage(
            tool_call_id=call.id, tool_name=call.name, content=self.content, is_error=self.is_error
        )


@dataclass(frozen=True, slots=True)
class EarlierOutput:
    """A tool call in the model's current context and the text its result gave the model."""

    tool: str
    arguments: Mapping[str, Any]
    text: str


def outputs_in_context(messages: Sequence[Message]) -> tuple[EarlierOutput, ...]:
    """The successful tool results the model has in `messages` (the context just sent),
    oldest first. Derived from what is sent, never from memory: a result a compaction folded
    into its summary is not in it."""
    return tuple(
        EarlierOutput(call.name, call.arguments, result.text)
        for call, result in calls_that_succeeded(messages)
    )


class Memory(Protocol):
    """The session's pins and plan, as the remember and plan tools change them
    (agent/memory.py)."""

    def pin(self, kind: PinKind, text: str, by: PinAuthor) -> Pin: ...

    def set_plan(self, items: Sequence[PlanItem]) -> None: ...


@dataclass(frozen=True, slots=True)
class CommandEnd:
    """How a command run in a terminal ended: `code` as asyncio gives it (negative: the
    signal that ended it; None: unknown), and whether the timeout killed it."""

    code: int | None
    timed_out: bool = False


class CommandTerminal(Protocol):
    """Where the bash tool runs its command instead of as the server's child: a terminal the
    user watches (an ACP editor's, acp/terminal.py). `run` starts `argv` (a whole confined
    command line: Launch.shell_argv) with exactly `env`, gives each piece of its output to
    `output` as it arrives, kills it after `seconds` and when cancelled (then calls
    `kill_remaining`, which kills what is left of it, before the release), and releases it."""

    async def run(
        self,
        call_id: str,
        argv: Sequence[str],
        cwd: Path,
        env: Mapping[str, str],
        seconds: float,
        output: OutputCallback,
        kill_remaining: Callable[[], None],
    ) -> CommandEnd: ...


@dataclass(frozen=True, slots=True)
class Recallable:
    """One piece of the session's history that the recall tool searches (tools/recall.py):
    the text of a prompt, an answer, a tool call or a tool result, with its ledger entry, the
    turn it came in (the user's prompts counted from 1), what it was and where a search may
    look for it."""

    entry_id: str
    turn: int
    what: str
    text: str
    source: str = "results"  # "prompts", "answers" or "results" (recall's `in`)
    # For a call or a result: what it was for, in words (the turn's prompt, the answer that
    # made the call), which its own text seldom says ("the test run after the quick patch").
    context: str = ""
    # For a command's result: the command, the same for every run of it.
    command: str = ""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Where and how one tool call runs.

    workspace: the root every path must stay inside.
    spill_dir: the session's directory for full outputs that were too long to return; the
        read tool may read files in it (the one exception to the workspace rule).
    on_output: receives partial output while a long call runs (bash), for live display.
    secrets: values scrubbed from every text a tool returns or streams, and never given to a
        command in its environment.
    bash_timeout: seconds before a bash command is killed, unless the call asks otherwise.
    env_pass: environment variable names (or globs) that commands receive even though they
        look secret (the `tools.env.pass` setting); see environment.py.
    confinement: whether commands run in the sandbox, with network or not (sandbox.py).
    hard_links_allowed: the user allowed this call although a file it names has several
        hard links (it may also exist outside the workspace).
    in_context: the tool results the model has in its current context (outputs_in_context),
        so that read can answer a re-read of unchanged lines with a note.
    files: where read, edit and write get and put the text of a file (the disk, or the
        editor's buffers).
    context_share: the context's estimate as a share of the compaction threshold (None:
        automatic compaction is off), for the compact tool.
    memory: the session's pins and plan (None where there is no session: remember and
        plan then refuse).
    limits: what one result may hold (output.py: less on a small window).
    session_files: the workspace files this session has read or written (from the ledger,
        so a compaction does not forget them): the files repo_map favours.
    repo_map_tokens: the budget of a repo_map call that names none (`tools.repoMapTokens`).
    call_id: the id of the tool call this context runs.
    terminal: where bash runs its commands when not as the server's child (an ACP editor's
        terminal); None: here.
    history: the session's history on its branch, for recall (None where there is no
        session: recall then refuses).
    followed: the tests the session follows, newest first (followed.py), whose lines a cut
        command output keeps.
    command_input: where a command's standard input comes from, by call id (the editor's
        terminal, `tools.terminal.visible`: command_input.py, given by the front end that
        runs the turn); None: nowhere (/dev/null).
    """

    workspace: Path
    spill_dir: Path
    on_output: OutputCallback | None = None
    secrets: tuple[str, ...] = ()
    bash_timeout: float = 120.0
    env_pass: tuple[str, ...] = ()
    confinement: Confinement = field(default_factory=Confinement)
    hard_links_allowed: bool = False
    in_context: tuple[EarlierOutput, ...] = ()
    files: FileAccess = LOCAL_FILES
    context_share: Callable[[], float | None] = lambda: None
    memory: Memory | None = None
    limits: OutputLimits = DEFAULT_LIMITS
    session_files: tuple[str, ...] = ()
    repo_map_tokens: int = 1024
    call_id: str = ""
    terminal: CommandTerminal | None = None
    history: Callable[[], Sequence[Recallable]] | None = None
    followed: Callable[[], Sequence[str]] = lambda: ()
    command_input: CommandInputs | None = None


class Tool(Protocol):
    """A coding tool the agent can call.

    `read_only` tools change nothing (the default permission mode runs them without asking).
    A tool with a true `session_only` attribute (optional: the plan, the pins, compact) acts on
    the session alone and is never asked about, in any mode (agent/permissions.py).
    `kind` and `title` are for display and for permission prompts ("Run: npm test").
    `paths` names the workspace files the call reads or writes, as the model wrote them
    (resolve them with `resolve_in_workspace`); `title` and `paths` must accept any
    arguments, valid or not, and never raise.
    """

    @property
    def spec(self) -> ToolSpec: ...

    @property
    def read_only(self) -> bool: ...

    @property
    def kind(self) -> ToolKind: ...

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult: ...

    def paths(self, arguments: Mapping[str, Any]) -> tuple[str, ...]: ...

    def title(self, arguments: Mapping[str, Any]) -> str: ...


# --- typed access to (already validated) arguments ------------------------------------------


def path_of(arguments: Mapping[str, Any]) -> tuple[str, ...]:
    """`Tool.paths` of a tool that works on the one file named by its `path` argument."""
    path = arguments.get("path")
    return (path,) if isinstance(path, str) and path else ()


def str_arg(arguments: Mapping[str, Any], name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str):
        raise InvalidToolArgumentsError(f"'{name}' must be a string")
    return value


def optional_str_arg(arguments: Mapping[str, Any], name: str) -> str | None:
    value = arguments.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidToolArgumentsError(f"'{name}' must be a string")
    return value


def int_arg(arguments: Mapping[str, Any], name: str, default: int) -> int:
    value = arguments.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidToolArgumentsError(f"'{name}' must be an integer")
    return value


def float_arg(arguments: Mapping[str, Any], name: str, default: float) -> float:
    value = arguments.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidToolArgumentsError(f"'{name}' must be a number")
    return float(value)


def bool_arg(arguments: Mapping[str, Any], name: str, default: bool) -> bool:
    value = arguments.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InvalidToolArgumentsError(f"'{name}' must be true or false")
    return value


def display_arg(arguments: Mapping[str, Any], name: str, default: str = "") -> str:
    """An argument as one short line for a title; never raises."""
    value = arguments.get(name) if isinstance(arguments, Mapping) else None
    text = value if isinstance(value, str) else default
    first, _, rest = text.strip().partition("\n")
    if len(first) > 100:
        return first[:99] + "…"
    return first + (" …" if rest.strip() else "")
