"""Commands the user writes: a prompt kept in a file, typed as `/name words`.

As Claude Code's `.claude/commands` and Codex's prompts. Each `*.md` file of two folders is a
command named by its file's name (`review.md` is `/review`):

- the user's, `commands/` beside the settings file (`~/.config/agent-server/commands` on Linux);
- the workspace's, `.agent-server/commands/`.

A file may start with front matter (`description:` and `argument-hint:` between `---` lines),
which the command lists show; the rest is the prompt. In it `$ARGUMENTS` stands for the words
typed after the name and `$1` to `$9` for each of them; a prompt with neither gets the words
after a blank line. `/review src/app.py` with `review.md` holding `Review $1 for bugs.` sends
`Review src/app.py for bugs.`

The user's command wins over the workspace's of the same name: a repository cannot change what
a command the user wrote says. A front end's own commands (the terminal's /model, ACP's
/compact) come first in that front end, and its lists leave out files of those names. A file
is read when the command is used or listed (an edit counts at once), never through a symbolic
link (a repository's `x.md` linking to a key would send the key), and at most MAX_BYTES of it.

The expansion happens when a turn starts (AgentSession.run_turn), so every front end (LSP, ACP,
the terminal) runs the same commands; the prompt recorded and sent is the expanded text.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from agent_server.llm.messages import TextContent, UserContent
from agent_server.protocol import CommandOrigin as Origin

WORKSPACE_FOLDER = Path(".agent-server") / "commands"
MAX_BYTES = 64 * 1024
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_POSITIONAL = re.compile(r"\$([1-9])")


@dataclass(frozen=True, slots=True)
class PromptCommand:
    name: str  # without the slash
    description: str
    hint: str  # what to type after the name ("" when the prompt takes no words)
    prompt: str
    origin: Origin


def user_folder() -> Path:
    return Path(platformdirs.user_config_dir("agent-server")) / "commands"


def prompt_commands(workspace: Path, leave_out: Collection[str] = ()) -> list[PromptCommand]:
    """The commands of both folders, by name; `leave_out`: a front end's own commands."""
    found: dict[str, PromptCommand] = {}
    folders: tuple[tuple[Origin, Path], ...] = (
        ("workspace", workspace / WORKSPACE_FOLDER), ("user", user_folder()))
    for origin, folder in folders:
        for command in _read_folder(folder, origin):
            found[command.name] = command  # the user's last: theirs wins
    return [found[name] for name in sorted(found) if name not in leave_out]


def expanded(content: Sequence[UserContent], workspace: Path) -> tuple[UserContent, ...]:
    """`content` with a leading `/name words` of a command replaced by its prompt (as it is
    when it names no command)."""
    if not content or not isinstance(content[0], TextContent):
        return tuple(content)
    text = content[0].text
    match = re.match(r"\s*/([A-Za-z0-9][A-Za-z0-9_.-]*)(?:[ \t]+|(?=\n)|$)", text)
    if match is None:
        return tuple(content)
    command = next((c for c in prompt_commands(workspace) if c.name == match.group(1)), None)
    if command is None:
        return tuple(content)
    first, _, rest = text[match.end():].partition("\n")
    body = expand(command, first.strip())
    if rest:
        body += "\n" + rest
    return (TextContent(body), *content[1:])


def expand(command: PromptCommand, arguments: str) -> str:
    """The command's prompt with the words typed after its name put in (module docstring)."""
    words = arguments.split()
    prompt = command.prompt
    uses_words = "$ARGUMENTS" in prompt or _POSITIONAL.search(prompt) is not None
    prompt = _POSITIONAL.sub(lambda m: words[int(m.group(1)) - 1]
                             if int(m.group(1)) <= len(words) else "", prompt)
    prompt = prompt.replace("$ARGUMENTS", arguments)
    if arguments and not uses_words:
        prompt = f"{prompt.rstrip()}\n\n{arguments}"
    return prompt


def _read_folder(folder: Path, origin: Origin) -> list[PromptCommand]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    out: list[PromptCommand] = []
    for file_name in names:
        name = file_name[:-3] if file_name.endswith(".md") else ""
        if not _NAME.fullmatch(name):
            continue
        text = _read(folder / file_name)
        if text is not None:
            out.append(_parse(name, text, origin))
    return out


def _read(path: Path) -> str | None:
    """The file's text: a regular file, not a link, its first MAX_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, MAX_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def _parse(name: str, text: str, origin: Origin) -> PromptCommand:
    """Front matter (`description`, `argument-hint`), then the prompt."""
    description = hint = ""
    body = text
    lines = text.splitlines(keepends=True)
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if end is not None:
            for line in lines[1:end]:
                key, _, value = line.partition(":")
                value = value.strip().strip("\"'")
                if key.strip() == "description":
                    description = value
                elif key.strip() in ("argument-hint", "argument_hint"):
                    hint = value
            body = "".join(lines[end + 1:])
    body = body.strip("\n")
    if not description:
        description = next((line.strip().lstrip("#").strip() for line in body.splitlines()
                            if line.strip()), name)[:100]
    if not hint and ("$ARGUMENTS" in body or _POSITIONAL.search(body)):
        hint = "arguments"
    return PromptCommand(name, description, hint, body, origin)
