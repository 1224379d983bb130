"""The tests a session follows: those its tool results said failed, and those its calls wrote.

After a fix the whole suite is run again, and what the session wants from that run is the
lines of the tests it has been working on: the one that failed (does it pass now?) and the
one it wrote. A command's long output is cut to its head, its failure lines and its tail
(output.py), and a passing test's line sits in the middle, where a reader has to grep the
saved output for it. So a cut also keeps the lines that name a followed test
(`SalientLines`), at most two each, in the room the failure lines have.

The names come from the session's ledger, on its branch, so a compaction does not forget
them: each verdict line of a tool result (`output.failed_tests`: pytest's node id, unittest's
`name (module.Class.name)`, go's `TestX`, TAP's and Jest's test names), and each test a call
writes (`def test_x(` in Python, `func TestX(` in Go, `test("name"` and `it("name"` in
JavaScript; not those an edit's old text defines already). The newest MAX_FOLLOWED, newest
first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agent_server.agent.tools.output import MIN_TEST_NAME, failed_tests
from agent_server.llm.messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage
from agent_server.session.entries import Entry, MessageEntry

# The most tests followed at once: each costs a substring search of every long output.
MAX_FOLLOWED = 40

_DEFINED = re.compile(
    r"^[ \t]*(?:async[ \t]+)?def[ \t]+(test\w*)[ \t]*\("
    r"|^func[ \t]+(Test\w*)[ \t]*\("
    r"|\b(?:test|it)(?:\.only)?[ \t]*\([ \t]*(['\"`])(.+?)\3",
    re.MULTILINE,
)


def followed_tests(entries: Iterable[Entry]) -> tuple[str, ...]:
    """The tests the session on `entries` (a branch, in order) follows, newest first."""
    names: dict[str, None] = {}  # in the order last seen, newest last
    for entry in entries:
        if not isinstance(entry, MessageEntry):
            continue
        message = entry.message
        found: list[str] = []
        if isinstance(message, ToolResultMessage):
            for part in message.content:
                if isinstance(part, TextContent):
                    found += failed_tests(part.text)
        elif isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, ToolCall):
                    found += written_tests(block)
        for name in found:
            names.pop(name, None)
            names[name] = None
    return tuple(reversed(names))[:MAX_FOLLOWED]


def written_tests(call: ToolCall) -> list[str]:
    """The tests `call` writes: those its arguments define, but for those an edit's old text
    defines already (the lines around a change it quotes)."""
    old, new = call.arguments.get("oldText"), call.arguments.get("newText")
    if isinstance(old, str) and isinstance(new, str):
        before = defined_tests(old)
        return [name for name in defined_tests(new) if name not in before]
    return defined_tests(call.strings())


def defined_tests(source: str) -> list[str]:
    """The tests that `source` defines, by name, in order."""
    names: list[str] = []
    for match in _DEFINED.finditer(source):
        name = match[1] or match[2] or match[4]
        if len(name) >= MIN_TEST_NAME and name not in names:
            names.append(name)
    return names
