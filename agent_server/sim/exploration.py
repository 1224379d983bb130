"""Exploring: what a step that lists, finds or searches looks for, and whether the request
already shows it.

A scenario step may say what its calls look for (`Step.finds`): files, or the line of a file
that holds a text (a definition), with its number when a read starting there follows. The
simulated model does not take such a step when its request already shows every one of them,
whoever put it there (an earlier listing or search, a read, a summary, a repository map), and
goes on to the next step. The rule is the same for every client:

- a file is shown when its path is written anywhere in the request (a prompt, a listing, a
  map, a tool call's arguments);
- a line is shown when one piece of the request (a message's text, or a tool result with its
  call's arguments) holds a line with the text, and the path: in the call's arguments (a
  read), on that line (`path:12:text`, grep's way), or on the nearest heading line above it
  (a path alone on its line, with or without a colon: a map's way, or ripgrep's `--heading`);
  when the line's number is needed, that number is written on that same line (`12│`, `12:`,
  `12<tab>`).

When a step's finds are not all shown and the request declares a tool that maps the
repository (`repo_map` or a usual name of it: tool_fitting.py) but holds no result of one, the
model calls it first (an `explore:<turn>:<step>` call), with the names it is about to look
for as its focus: those of the latest prompt and of the step's own search patterns. When the
map comes back, the step is looked at again: skipped if the map shows what it looks for,
taken as written if not. The map is called again only when the request no longer holds one
(a compaction dropped it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from agent_server.sim.scenario import Location, Step
from agent_server.sim.tool_fitting import declared_tool
from agent_server.sim.transcript import (
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
)

MAP_CALL = "repo_map"  # the capability's name in the scenario vocabulary
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_CODE_WORD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(\(?)")
_MAX_FOCUS = 20


def _pieces(transcript: Transcript) -> Iterator[tuple[str, str]]:
    """(text, its call's arguments) for every piece of the request."""
    yield transcript.system, ""
    for message in transcript.messages:
        for part in message.parts:
            if isinstance(part, TextPart | ThinkingPart):
                yield part.text, ""
            elif isinstance(part, ToolCallPart):
                arguments = json.dumps(part.arguments, ensure_ascii=False)
                yield arguments, arguments
            elif isinstance(part, ToolResultPart):
                call = transcript.tool_call(part.tool_call_id)
                arguments = json.dumps(call.arguments, ensure_ascii=False) if call else ""
                yield part.text, arguments


def shown(transcript: Transcript, location: Location) -> bool:
    """Whether the request shows `location` (the module docstring's rule)."""
    return any(_in_piece(text, arguments, location)
               for text, arguments in _pieces(transcript))


def all_shown(transcript: Transcript, step: Step) -> bool:
    return bool(step.finds) and all(shown(transcript, place) for place in step.finds)


def _in_piece(text: str, arguments: str, location: Location) -> bool:
    if location.path not in text and location.path not in arguments:
        return False
    if location.text is None:
        return True
    wanted = " ".join(location.text.split())
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if wanted not in " ".join(line.split()):
            continue
        if location.line is not None and not re.search(
            rf"(?<![\w.]){location.line}(?![\w.])", line
        ):
            continue
        if location.path in arguments or location.path in line:
            return True
        heading = _heading_above(lines, index)
        if heading is not None and location.path in heading:
            return True
    return False


def _heading_above(lines: list[str], index: int) -> str | None:
    """The nearest line above `index` that is a path alone (a map's or a grouped search's
    heading), with or without a colon."""
    for line in reversed(lines[:index]):
        stripped = line.strip()
        if stripped and " " not in stripped and "│" not in stripped \
                and re.fullmatch(r"[\w./@+-]+\.\w+:?", stripped):
            return stripped
    return None


def holds_map(transcript: Transcript) -> bool:
    """Whether the request holds a call of the map tool it declares (and so its result)."""
    tool = declared_tool("map", transcript.tools)
    return tool is not None and any(
        call.name == tool.name for message in transcript.messages for call in message.tool_calls)


def wants_map(transcript: Transcript, step: Step) -> bool:
    """Whether the model asks for the map before `step`: it explores, what it looks for is
    not all shown, a map tool is declared and the request holds none of its results."""
    return (bool(step.finds) and not all_shown(transcript, step)
            and declared_tool("map", transcript.tools) is not None
            and not holds_map(transcript))


def focus(transcript: Transcript, step: Step) -> list[str]:
    """The names the model is about to look for: those the latest prompt writes as code
    (`snake_case`, `camelCase`, `dotted.names`, `called()`), and the words of the step's
    search patterns."""
    found = [match.group(1) for match in _CODE_WORD.finditer(transcript.latest_prompt())
             if _looks_like_code(match.group(1), match.group(2))]
    for call in step.tools:
        found += _WORD.findall(str(call.arguments.get("pattern", "")))
    return list(dict.fromkeys(found))[:_MAX_FOCUS]


def _looks_like_code(word: str, after: str) -> bool:
    return "_" in word or "." in word or after == "(" or any(c.isupper() for c in word[1:])
