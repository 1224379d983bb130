"""The chat's input line: `input()` with readline's editing and history, a prompt put back
in the line (a rewound prompt), and Tab completion of `@path` mentions and /commands.

The prompts typed in a workspace are kept (PromptHistory, in the sessions folder) for the up
arrow of the next chat there, as the answers to questions are not.

A paste is one prompt, whatever its lines: the reader asks the terminal for bracketed paste
(readline's `enable-bracketed-paste`), so the pasted newlines stay in the line until Enter.

What is typed while the chat works (a turn, a command, the agent loading) waits whole for
the next read (`LineReader.keeping_typeahead`): Ctrl-D typed during a turn quits when it
ends, a text pasted then is one prompt, a line typed ahead is the next prompt.

It loads nothing of the agent, so the first prompt line shows before the agent has loaded
(console/chat_start.py); the path completion imports the workspace walk when Tab is first
pressed.

Completion never deletes what was typed. readline replaces the word by the longest prefix
its matches share, so only paths that extend the typed word are offered as matches; when
none does and several paths match loosely (`@weather/c` for `weather/api/client.py` and
`weather/cli.py`), they are listed under the line and the word stays as typed; a single
loose match replaces the word. A completed file gets a trailing space (CPython's readline
appends none), so the next word does not glue onto the path; a folder gets none, so Tab
goes on into it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import termios
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

CompletionSource = Callable[[str], list[tuple[str, bool]]]  # query -> (path, is folder)


def workspace_paths(workspace: Path) -> CompletionSource:
    def source(query: str) -> list[tuple[str, bool]]:
        from agent_server.agent.mentions import complete

        return [(c.path, c.kind == "directory") for c in complete(workspace, query)]

    return source


def mention_matches(text: str, found: list[tuple[str, bool]]) -> tuple[list[str], list[str]]:
    """(what readline may put in place of `text`, what to list under the line instead).

    `text` is the word typed, `@` included; `found` the paths for it, best first."""
    candidates = [
        "@" + (f'"{path}"' if " " in path else path) + ("" if folder else " ")
        for path, folder in found
    ]
    extending = [c for c in candidates if c.startswith(text)]
    if extending:
        return extending, []
    if len(candidates) == 1:
        return candidates, []
    return [], [c.rstrip() for c in candidates]


HISTORY_KEPT = 500  # the prompts a workspace's history keeps (twice as many before a trim)


class PromptHistory:
    """The prompts typed in one workspace, one JSON string a line (a prompt may hold
    newlines), for the up arrow of the next chat there. A file that cannot be read or
    written only leaves the history shorter: the chat goes on."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> list[str]:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return []
        prompts = [p for p in map(_json_string, lines) if p]
        if len(lines) > 2 * HISTORY_KEPT:
            self._rewrite(prompts[-HISTORY_KEPT:])
        return prompts[-HISTORY_KEPT:]

    def add(self, prompt: str) -> None:
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as file:
                file.write(json.dumps(prompt) + "\n")

    def _rewrite(self, prompts: list[str]) -> None:
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        with contextlib.suppress(OSError):
            temporary.write_text("".join(json.dumps(p) + "\n" for p in prompts), "utf-8")
            temporary.replace(self.path)


def _json_string(line: str) -> str:
    try:
        value = json.loads(line)
    except ValueError:
        return ""
    return value if isinstance(value, str) else ""


CONTINUATION = "   … "  # the prompt of a line that goes on after a `\\`
BRACKETED_PASTE_ON, BRACKETED_PASTE_OFF = "\x1b[?2004h", "\x1b[?2004l"


class LineReader:
    """Reads prompts; `prefill` is put in the next line to edit (when readline is there).
    With a `history`, the up arrow finds the prompts of earlier chats too."""

    def __init__(
        self,
        console: Console,
        command_names: Callable[[str], list[str]],
        history: PromptHistory | None = None,
    ) -> None:
        self.console = console
        self.prefill = ""
        self.history = history
        self._command_names = command_names
        self._matches: list[str] = []
        # While keeping_typeahead: the terminal's mode for a read, and between reads.
        self._fd = 0
        self._modes: tuple[list[Any], list[Any]] | None = None
        readline = sys.modules.get("readline")
        if readline is None:
            return
        # CPython turns readline's bracketed paste off; without it a terminal sends a
        # pasted text's newlines as Enter keys, each line a prompt of its own.
        readline.parse_and_bind("set enable-bracketed-paste on")
        for prompt in history.load() if history is not None else ():
            readline.add_history(prompt)

    def read(self) -> str | None:
        """The next prompt; None to quit (Ctrl-D, or Ctrl-C twice in a row on an empty line).
        Ctrl-C on a line with text in it clears the line, as in a shell; a line typed (or
        cleared) between two Ctrl-Cs makes them no pair. A line that ends with `\\` goes
        on in the next (Ctrl-C there drops the whole prompt)."""
        interrupted = False
        prefill, self.prefill = self.prefill, ""
        while True:
            try:
                line = self._between_reads(self.input_line, prefill)
            except EOFError:
                self.console.print()
                return None
            except KeyboardInterrupt:
                self.console.print()
                if self.typed_so_far().strip():
                    interrupted, prefill = False, ""
                    continue
                if interrupted:
                    return None
                interrupted = True
                self.console.print(Text("(Ctrl-C again or Ctrl-D to quit)", style="dim"))
                continue
            interrupted, prefill = False, ""
            try:
                prompt = self.continued(line).strip()
            except KeyboardInterrupt:
                self.console.print()
                continue
            if prompt:
                if self.history is not None:
                    self.history.add(prompt)
                return prompt

    def continued(self, line: str) -> str:
        """`line`, and the lines that follow while each ends with a backslash (which is
        dropped), one prompt in the history. Ctrl-D on a following line ends the prompt."""
        if not line.endswith("\\"):
            return line
        readline = sys.modules.get("readline")
        first = readline.get_current_history_length() if readline is not None else 0
        while line.endswith("\\"):
            try:
                more = self.answer(CONTINUATION)
            except EOFError:
                more = ""
            line = line[:-1] + "\n" + more
        if readline is not None and first:
            readline.replace_history_item(first - 1, line)
        return line

    def answer(self, label: str) -> str:
        """A line answering a question, `label` as its prompt (given to input(), so that
        readline knows where the line starts and ends it with a newline even when it is
        empty); kept out of the prompt history, where the up arrow finds prompts."""
        readline = sys.modules.get("readline")
        before = readline.get_current_history_length() if readline is not None else 0
        line = self._between_reads(input, label)
        if readline is not None and readline.get_current_history_length() > before:
            readline.remove_history_item(readline.get_current_history_length() - 1)
        return line

    @contextlib.contextmanager
    def keeping_typeahead(self) -> Iterator[None]:
        """While entered, what is typed between two reads waits whole for the next one.

        In the terminal's own line mode a Ctrl-D typed while nothing reads is turned into
        nothing when readline next switches to its raw mode, and a paste arrives without
        its bracketed-paste marks (readline asks for them only while it reads), its
        newlines as Enter keys: one prompt a line. So between reads the terminal is kept
        uncooked and unechoed (the keys wait in its buffer as typed, shown by readline
        when it reads them; Ctrl-C still interrupts) with bracketed paste on. Each read
        turns the echo back on first (readline echoes nothing on a terminal that does not,
        taking it for a password's). The terminal's own mode is put back at the end. Not
        a terminal: nothing to keep."""
        try:
            fd = sys.stdin.fileno()
            saved = termios.tcgetattr(fd) if os.isatty(fd) else None
        except (OSError, ValueError, termios.error):
            saved = None
        if saved is None:
            yield
            return
        reading = [*saved[:6], list(saved[6])]
        reading[3] &= ~termios.ICANON
        reading[6][termios.VMIN], reading[6][termios.VTIME] = 1, 0
        waiting = [*reading[:6], reading[6]]
        waiting[3] = reading[3] & ~termios.ECHO
        self._fd, self._modes = fd, (reading, waiting)
        try:
            self._set(waiting)
            yield
        finally:
            self._modes = None
            self._set(saved)
            self._write(BRACKETED_PASTE_OFF)

    def _between_reads(self, read: Callable[[str], str], label: str) -> str:
        """`read(label)` with the terminal echoing, then typeahead kept again (readline
        turns bracketed paste off as a read ends)."""
        if self._modes is None:
            return read(label)
        self._set(self._modes[0])
        try:
            return read(label)
        finally:
            if self._modes is not None:
                self._set(self._modes[1])

    def _set(self, mode: list[Any]) -> None:
        """The terminal's mode set to `mode` (and bracketed paste on while typeahead is
        kept); a closed terminal is let be."""
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(self._fd, termios.TCSANOW, mode)
        if self._modes is not None:
            self._write(BRACKETED_PASTE_ON)

    @staticmethod
    def _write(sequence: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.write(sequence)
            sys.stdout.flush()

    @staticmethod
    def typed_so_far() -> str:
        """What the line held when input() was interrupted: readline keeps it; without
        readline there is no knowing, and "" keeps the Ctrl-C pair quitting."""
        readline = sys.modules.get("readline")
        return str(readline.get_line_buffer()) if readline is not None else ""

    def input_line(self, prefill: str) -> str:
        """input(), with `prefill` already typed in the line when readline is there to edit
        it (else it is shown above, to copy)."""
        readline = sys.modules.get("readline")
        if not prefill:
            return input(self.prompt_label())
        if readline is None:
            from agent_server.console.render import shown

            self.console.print(Text("your prompt was: ", style="dim") + shown(prefill))
            return input(self.prompt_label())
        readline.set_startup_hook(lambda: readline.insert_text(prefill))
        try:
            return input(self.prompt_label())
        finally:
            readline.set_startup_hook(None)

    def install_completion(self, paths: CompletionSource) -> None:
        """Tab completes `@path` mentions from `paths` and /commands."""
        readline = sys.modules.get("readline")
        if readline is None:
            return

        def completer(text: str, state: int) -> str | None:
            if state == 0:
                self._matches = []
                if text.startswith("@"):
                    self._matches, listed = mention_matches(text, paths(text[1:]))
                    if listed:
                        self._list_under_line(readline, listed)
                elif text.startswith("/") and readline.get_line_buffer().lstrip() == text:
                    self._matches = self._command_names(text)
            return self._matches[state] if state < len(self._matches) else None

        readline.set_completer_delims(" \t\n")
        readline.set_completer(completer)
        readline.parse_and_bind("tab: complete")

    def _list_under_line(self, readline: object, listed: list[str]) -> None:
        """Shows loose matches under the line, then the prompt and the line again, the
        cursor where it was (readline offers no match, so it keeps the word typed)."""
        line = readline.get_line_buffer()  # type: ignore[attr-defined]
        end = readline.get_endidx()  # type: ignore[attr-defined]
        out = sys.stdout
        out.write("\n" + "  ".join(listed) + "\n")
        out.write(self.prompt_label().replace("\001", "").replace("\002", "") + line)
        if end < len(line):
            out.write(f"\x1b[{len(line) - end}D")
        out.flush()

    def prompt_label(self) -> str:
        """`you › ` for input(), in bold cyan on a colour terminal: the colour codes are
        wrapped in readline's invisible markers (\\001, \\002), so line editing and history
        keep the cursor in the right place."""
        if not self.console.is_terminal or self.console.color_system is None:
            return "you › "
        start, end = ("\001", "\002") if "readline" in sys.modules else ("", "")
        return f"{start}\x1b[1;36m{end}you ›{start}\x1b[0m{end} "
