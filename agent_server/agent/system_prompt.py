"""The system prompt: fixed for the life of a session.

It holds tool guidance, the workspace root, and the project's AGENTS.md / CLAUDE.md as they
were when the session started. Nothing dynamic (date, time, git state, file lists, usage) goes
in: the system prompt is the head of every cached prefix. The session stores the text it was
started with, so a restart or an edited AGENTS.md does not change it mid-session.
"""

from __future__ import annotations

from pathlib import Path

PROJECT_INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
MAX_INSTRUCTION_CHARS = 40_000

BASE_PROMPT = """\
You are a coding agent working inside the user's editor, in the workspace below. You help \
with software engineering tasks: reading and explaining code, making changes, running \
commands and tests.

Tools:
- read: read a file (numbered lines; use offset and limit for large files).
- write: create or overwrite a file.
- edit: replace an exact, unique piece of text in a file. Read the file first; include enough \
context in oldText to make it unique.
- ls, find, grep: explore the workspace; prefer them over bash for reading.
- bash: run a shell command in the workspace root.

Guidelines:
- Paths are relative to the workspace root; you cannot reach outside it.
- Read before you edit. Make the smallest change that does the job; keep the project's style.
- When a tool's output is truncated, the result says where the full output was saved; read \
that file with offset and limit if you need more.
- Text in <editor-note> tags comes from the editor (for example that a file changed on disk), \
not from the user.
- Be concise. When you are done, say what you changed and how you checked it."""


def read_project_instructions(workspace: Path) -> list[tuple[str, str]]:
    """(file name, text) of each instruction file found at the workspace root."""
    found: list[tuple[str, str]] = []
    for name in PROJECT_INSTRUCTION_FILES:
        path = workspace / name
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if len(text) > MAX_INSTRUCTION_CHARS:
            text = text[:MAX_INSTRUCTION_CHARS] + "\n[... truncated]"
        found.append((name, text.strip()))
    return found


def build_system_prompt(workspace: Path) -> str:
    parts = [BASE_PROMPT, f"Workspace root: {workspace}"]
    for name, text in read_project_instructions(workspace):
        parts.append(f'<project-instructions file="{name}">\n{text}\n</project-instructions>')
    return "\n\n".join(parts)
