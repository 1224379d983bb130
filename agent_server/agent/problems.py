"""What the editor knows: the problems an edit of the agent's introduced, as the editor's
language servers see them (Cline reports them back to its model the same way).

After the agent writes or edits a file, the VS Code extension waits for the diagnostics the
editor's language servers publish for it and sends, with `agent/problems`, the errors and
warnings that were not there before the change (compared by severity, message, source and
code, not by line: an edit moves lines). They reach the model as a note appended before its
next request (`AgentSession.note`: never in the cached prefix; its tokens are counted in the
meter like any message), at most MAX_PROBLEMS of them, errors first, each message cut at
MAX_MESSAGE characters and its control characters shown as pictures. A plain LSP editor or
an ACP client gets nothing unless it sends the same request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent_server.agent.tools.paths import listed_path
from agent_server.literal import as_pictures
from agent_server.protocol import ProblemSeverity as Severity

NOTE_KIND = "problems"
MAX_PROBLEMS = 10
MAX_MESSAGE = 300


@dataclass(frozen=True, slots=True)
class Problem:
    line: int  # 1-based
    severity: Severity
    message: str
    source: str = ""  # the language server's name (Pylance, eslint, ...)


def problems_note(path: str, problems: Sequence[Problem]) -> str | None:
    """The note telling the model what its change of `path` broke (None: nothing)."""
    if not problems:
        return None
    shown = sorted(problems, key=lambda p: (p.severity != "error", p.line))[:MAX_PROBLEMS]
    lines = []
    for problem in shown:
        message = " ".join(problem.message.split())
        if len(message) > MAX_MESSAGE:
            message = message[:MAX_MESSAGE] + "…"
        source = f" ({as_pictures(problem.source)})" if problem.source else ""
        lines.append(f"- line {problem.line}: {problem.severity}: {as_pictures(message)}{source}")
    more = len(problems) - len(shown)
    if more:
        lines.append(f"- and {more} more")
    return (f"The editor reports problems in {listed_path(path)} that were not there before "
            "your last change to it:\n" + "\n".join(lines))
