"""What `agent-server chat` does before the agent has loaded: the settings, the first screen
and the first line typed.

The agent, the terminal renderer and the provider SDKs take seconds of CPU to import. An
interactive chat shows its first prompt line at once and loads them in a background thread
while the person types (readline waits for keys with the interpreter lock released); the
session is made when the first line is in. A one-shot chat, or one that continues a session
(`--session`, `--continue`, which says at once which session it opened), loads first.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import signal
import stat
import sys
import threading
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from agent_server.agent.config_file import flag_overrides, load_config, resolve_settings
from agent_server.agent.settings import AgentSettings
from agent_server.console.line_input import LineReader, PromptHistory, workspace_paths
from agent_server.errors import ConfigError

HINT = Text("/help lists the commands; @path attaches a file or folder; Ctrl-D quits", style="dim")


def load_agent(provider: str) -> None:
    """Import what the session needs (the chat, the agent, the provider's SDK; the simulator
    for `sim`). Errors are left for the main thread's own import to report."""
    with contextlib.suppress(Exception):
        import agent_server.console.chat
        from agent_server.llm.providers import preload_sdks

        preload_sdks((provider,))
        if provider == "sim":
            import agent_server.sim.server  # noqa: F401


def command_names(prefix: str, workspace: Path | None = None) -> list[str]:
    from agent_server.console.commands import command_names as names

    return names(prefix, workspace)


def _is_quit(line: str) -> bool:
    from agent_server.console.commands import read_command

    typed = read_command(line)
    return typed is not None and typed.command is not None and typed.command.name == "/quit"


def prompt_history(settings: AgentSettings, workspace: Path) -> PromptHistory:
    """The workspace's prompts, kept in its sessions folder."""
    from agent_server.session.store import prompt_history_path

    root = Path(settings.sessions_dir) if settings.sessions_dir else None
    return PromptHistory(prompt_history_path(root, workspace))


# The built-in simulator's answers are padded on purpose: said once, so that a newcomer does
# not take the repeated sentences (and the long answers cut in the terminal) for a fault.
SIM_NOTE = (
    "This is the built-in simulator, not a model: its answers are padded with plain filler "
    "sentences to a real answer's length, so the context meter, compaction and costs behave "
    "as they would. --provider with an API key talks to a model (README: From the terminal)."
)


def first_screen(console: Console, settings: AgentSettings, workspace: Path) -> None:
    from agent_server.llm.providers import PROVIDERS

    spec = PROVIDERS.get(settings.provider)
    model = settings.model or (spec.default_model if spec is not None else "")
    line = Text(f"{settings.provider} {model} · ", style="dim")
    line.append(str(workspace))  # a path, shown as it is (no markup)
    line.stylize("dim")
    console.print(line)
    if settings.provider == "sim":
        console.print(Text(SIM_NOTE, style="dim"))
    console.print(HINT)


def workspace_folder(given: str) -> Path:
    """The workspace `--workspace` names; ConfigError unless it is a folder (a session for a
    folder that is not there would be recorded, and its tools would fail)."""
    workspace = Path(given).expanduser().resolve()
    if not workspace.exists():
        raise ConfigError(f"--workspace {given}: no such folder")
    if not workspace.is_dir():
        raise ConfigError(f"--workspace {given}: not a folder; name the folder to work in")
    return workspace


def piped_input() -> str:
    """What is piped into a one-shot chat (`git diff | agent-server chat "review this"`), read
    to its end: stdin when it is a pipe or a file, else "" (a terminal, /dev/null, a socket
    nobody writes to). ConfigError when it holds more than a prompt may (the editor
    protocol's limit): cut, it would be answered as if it were whole."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return ""  # no stdin at all
    if not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        return ""
    from agent_server.lsp.wire import MAX_PROMPT_CHARS

    stream = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    text = stream.read(MAX_PROMPT_CHARS + 1)
    if len(text) > MAX_PROMPT_CHARS:
        raise ConfigError(
            f"stdin holds more than {MAX_PROMPT_CHARS:,} characters, more than a prompt may "
            "hold: nothing was sent. Pipe in a part of it (head, tail, grep)."
        )
    return text if text.strip() else ""


def first_line(console: Console, reader: LineReader, loading: threading.Thread) -> str | None:
    """The first prompt, once the agent has loaded; None to quit. Ctrl-C while it loads
    stops that prompt as Ctrl-C stops a turn: nothing is sent, and the prompt is put back on
    the input line (the loading goes on)."""
    while True:
        line = reader.read()
        if line is None or _is_quit(line):
            return None
        try:
            loading.join()
        except KeyboardInterrupt:
            console.print(
                Text(
                    "\n  (stopped while the agent was loading: nothing was sent; "
                    "your prompt is back on the input line)",
                    style="yellow",
                )
            )
            reader.prefill = line
            continue
        return line


def main(args: Any) -> int:
    prompt = " ".join(args.prompt) if args.prompt else None
    errors = Console(stderr=True, soft_wrap=True)  # one line each, whatever the width

    def warn(message: str) -> None:
        from agent_server.console.render import shown

        errors.print(shown(message, "yellow"))

    try:
        config = load_config(Path(args.config) if args.config else None, warn)
        settings = resolve_settings(config, flag_overrides(args))
        workspace = workspace_folder(args.workspace)
        piped = piped_input() if prompt is not None else ""
    except ConfigError as error:
        from agent_server.console.render import shown

        # Not wrapped: an error is one line, whatever the width (a long path stays whole).
        errors.print(shown(error.message, "red"))
        return 2
    options: dict[str, Any] = {
        "workspace": workspace,
        "settings": settings,
        "session_id": args.session,
        "continue_latest": args.continue_latest,
        "assume_yes": args.yes,
    }
    if prompt is not None:
        from agent_server.console.chat import run_chat

        return run_chat(prompt=prompt, piped=piped, **options)
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  (line editing and history for input())
    console = Console(highlight=False)
    reader = LineReader(console, functools.partial(command_names, workspace=workspace),
                        prompt_history(settings, workspace))
    if sys.stdin.isatty():
        # Ctrl-C at the prompt asks before quitting, as it stops a turn or rejects a question,
        # even where the chat was started with SIGINT ignored (a script's background job):
        # Python keeps an ignored SIGINT ignored, and the key did nothing at the prompt alone.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    with reader.keeping_typeahead():  # keys typed while the agent works wait for the next read
        return interactive(console, reader, options)


def interactive(console: Console, reader: LineReader, options: dict[str, Any]) -> int:
    """The interactive chat, on the terminal: the first prompt read while the agent loads
    (unless a session is continued: it says at once which session it opened)."""
    from_session = options["session_id"] or options["continue_latest"]
    if from_session:
        from agent_server.console.chat import run_chat

        return run_chat(prompt=None, console=console, reader=reader, **options)
    settings, workspace = options["settings"], options["workspace"]
    first_screen(console, settings, workspace)
    reader.install_completion(workspace_paths(workspace))
    loading = threading.Thread(
        target=load_agent, args=(settings.provider,), name="load-agent", daemon=True
    )
    loading.start()
    line = first_line(console, reader, loading)
    if line is None:
        return 0
    from agent_server.console.chat import run_chat

    return run_chat(prompt=None, console=console, reader=reader, first_line=line, **options)
