"""What a line typed in `agent-server chat` is: a command, or a prompt (with the images its
paths name).

The slash commands are one table: /help lists it, Tab completes from it, and a line that
starts with a word of the form `/name` that is not in it, nor a command the user or the
workspace wrote (agent/prompt_commands.py, sent as their prompt), is answered ("unknown
command"), never sent to the model. A line whose first word is a path (`/etc/hosts is empty?`) is a
prompt.

A prompt may name image files by path, as terminals paste a file dragged onto them
(`/home/me/shot.png`, `'~/My Pictures/a b.png'`, `a\\ b.png`): each such file is attached as
an image, and its path in the text becomes `[image N: name]`. `@path` mentions are left to the
agent (agent/mentions.py), which attaches workspace files and folders.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from pathlib import Path

from agent_server.agent.prompt_commands import PromptCommand, prompt_commands
from agent_server.agent.tools.read import MAX_IMAGE_BYTES, image_type
from agent_server.llm.messages import ImageContent, TextContent, UserContent


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    arguments: str
    help: str


COMMANDS: tuple[Command, ...] = (
    Command("/help", "", "list these commands"),
    Command(
        "/model", "[model id]", "the models you can switch to; with an id, switch this session"
    ),
    Command("/mode", "[ask|allowReads|allowAll]", "when tools ask first; with a mode, switch"),
    Command(
        "/thinking",
        "[off|low|medium|high]",
        "how hard the model thinks; with a level, switch (says what it costs)",
    ),
    Command(
        "/rewind",
        "",
        "go back to an earlier prompt: the conversation, the files the agent changed, or both",
    ),
    Command("/output", "[n]", "the last command's whole output (n: the nth last)"),
    Command("/compact", "[instructions]", "summarise the history now"),
    Command(
        "/remember",
        "[fact:] text",
        "pin a rule (or a fact) for this session: kept verbatim through every compaction",
    ),
    Command("/forget", "id", "remove a pin (/pins lists them with their ids)"),
    Command("/pins", "", "the pinned rules and facts, and the task's plan"),
    Command("/usage", "", "tokens and cost of the last turn and the session"),
    Command("/new", "", "start a new session (also /clear); this one is kept"),
    Command("/fork", "", "go on in a copy of this session (its conversation so far); this one "
            "is kept as it is"),
    Command(
        "/sessions",
        "[id]",
        "the sessions of this workspace; with an id (or its start), go on with that one "
        "(also /resume)",
    ),
    Command("/quit", "", "leave (also /exit, or Ctrl-D)"),
)
# Other agents' words: Claude Code's /clear, Claude Code's, Codex's and pi's /resume.
ALIASES = {"/exit": "/quit", "/?": "/help", "/clear": "/new", "/resume": "/sessions"}
# Words /mode takes besides the modes' own names.
MODE_WORDS = {
    "ask": "ask",
    "reads": "allowReads",
    "allowreads": "allowReads",
    "allow-reads": "allowReads",
    "all": "allowAll",
    "allowall": "allowAll",
    "allow-all": "allowAll",
}


@dataclass(frozen=True, slots=True)
class Typed:
    """A typed line read as a command: the command (None: unknown), the word typed, and the
    rest of the line."""

    command: Command | None
    word: str
    argument: str


def read_command(line: str) -> Typed | None:
    """The command `line` is, or None when it is a prompt."""
    stripped = line.strip()
    if not stripped.startswith("/"):
        return None
    word, _, rest = stripped.partition(" ")
    if "/" in word[1:] or word == "/":
        return None  # a path, not a command
    name = ALIASES.get(word.lower(), word.lower())
    command = next((c for c in COMMANDS if c.name == name), None)
    return Typed(command, word, rest.strip())


def command_names(prefix: str, workspace: Path | None = None) -> list[str]:
    """The commands that start with `prefix` (Tab completes them): the chat's own, then the
    user's and the workspace's prompt commands (agent/prompt_commands.py)."""
    written = [f"/{c.name}" for c in written_commands(workspace)] if workspace else []
    return [name for name in [c.name for c in COMMANDS] + written if name.startswith(prefix)]


def written_commands(workspace: Path) -> list[PromptCommand]:
    """The prompt commands of other names than the chat's own (theirs come first here)."""
    own = {name[1:] for name in [c.name for c in COMMANDS] + list(ALIASES)}
    return prompt_commands(workspace, leave_out=own)


def mode_named(word: str) -> str | None:
    return MODE_WORDS.get(word.strip().lower())


# --- images by path -------------------------------------------------------------------------

_IMAGE_PATH = re.compile(
    r"""(?<![\S@])(?:'([^'\n]+\.(?:png|jpe?g|gif|webp))'"""
    r"""|"([^"\n]+\.(?:png|jpe?g|gif|webp))\""""
    r"""|(?!@)((?:\\[ ]|[^\s'"])+?\.(?:png|jpe?g|gif|webp)))(?=[.,;:!?)\]]*(?:\s|$))""",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class PastedImage:
    path: Path
    mime_type: str
    size: int


def prompt_with_images(line: str, cwd: Path) -> tuple[tuple[UserContent, ...], list[PastedImage]]:
    """The prompt's blocks: its text (each image path replaced by `[image N: name]`), then
    one image block per image file the line names (up to 5 MB each)."""
    images: list[PastedImage] = []
    blocks: list[UserContent] = []

    def attach(match: re.Match[str]) -> str:
        written = match.group(1) or match.group(2) or match.group(3).replace("\\ ", " ")
        path = (cwd / Path(written).expanduser()).resolve()
        try:
            with path.open("rb") as handle:
                head = handle.read(16)
            size = path.stat().st_size
        except OSError:
            return match.group(0)
        mime = image_type(path, head)
        if mime is None or size > MAX_IMAGE_BYTES:
            return match.group(0)
        images.append(PastedImage(path, mime, size))
        blocks.append(ImageContent(base64.b64encode(path.read_bytes()).decode("ascii"), mime))
        return f"[image {len(images)}: {path.name}]"

    text = _IMAGE_PATH.sub(attach, line)
    return (TextContent(text), *blocks), images
