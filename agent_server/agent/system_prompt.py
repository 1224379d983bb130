"""The system prompt: fixed for the life of a session.

It holds tool guidance, the workspace root, and the project's AGENTS.md / CLAUDE.md as they
were when the session started. Nothing dynamic (date, time, git state, file lists, usage) goes
in: the system prompt is the head of every cached prefix. The session stores the text it was
started with, so a restart or an edited AGENTS.md does not change it mid-session.
"""

from __future__ import annotations

import logging
from pathlib import Path

from agent_server.agent.tools.paths import open_regular, resolve_in_workspace
from agent_server.errors import ToolError
from agent_server.stderr_log import shorten

log = logging.getLogger(__name__)

PROJECT_INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
MAX_INSTRUCTION_CHARS = 40_000

BASE_PROMPT = """\
You are a coding agent working inside the user's editor, in the workspace below. You help \
with software engineering tasks: reading and explaining code, making changes, running \
commands and tests.

Guidelines:
- Paths are relative to the workspace root (or absolute inside it); you cannot reach \
outside it.
- Explore with ls, find, grep and read rather than bash.
- Read before you edit. Make the smallest change that does the job; keep the project's \
style.
- When a tool's output is truncated, the result says where the full output was saved; read \
that file with offset and limit if you need more.
- Text in <editor-note> tags comes from the editor (for example that a file changed on disk), \
not from the user.
- Be concise. When you are done, say what you changed and how you checked it."""


def read_project_instructions(workspace: Path) -> list[tuple[str, str]]:
    """(file name, text) of each instruction file found at the workspace root. Read as the
    read tool reads: a link leading out of the workspace (a cloned repository's
    `AGENTS.md -> ~/.aws/credentials`) or anything but a regular file (a named pipe would
    block the session's start) is left out, and said in the log; a link inside is followed
    (`CLAUDE.md -> AGENTS.md`)."""
    found: list[tuple[str, str]] = []
    for name in PROJECT_INSTRUCTION_FILES:
        try:
            path = resolve_in_workspace(workspace, name)
            with open_regular(path, name, hard_links_allowed=True) as file:
                data = file.read(MAX_INSTRUCTION_CHARS * 4 + 1)
        except FileNotFoundError:
            continue
        except (OSError, ToolError) as error:
            why = error.message if isinstance(error, ToolError) else str(error)
            log.warning("%s left out of the system prompt: %s", name, shorten(why))
            continue
        text = data.decode("utf-8", errors="replace")
        if len(text) > MAX_INSTRUCTION_CHARS:
            text = text[:MAX_INSTRUCTION_CHARS] + "\n[... truncated]"
        found.append((name, text.strip()))
    return found


def build_system_prompt(workspace: Path) -> str:
    parts = [BASE_PROMPT, f"Workspace root: {workspace}"]
    for name, text in read_project_instructions(workspace):
        parts.append(f'<project-instructions file="{name}">\n{text}\n</project-instructions>')
    return "\n\n".join(parts)
