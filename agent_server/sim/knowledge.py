"""What the simulated model knows: only what its request holds.

A scenario step may name facts it relies on (`Step.needs`, declared as `Fact`s in the
scenario). Before answering with the step, the model looks for each, in order, in the text of
the whole request: the system prompt, the tools' names, descriptions and schemas, and every
message (texts, thinking, tool calls' arguments, tool results; a summary handed over after a
compaction is a message like any other). The comparison is the same for every client
(`normalise`): per line, the line-number or path prefix a tool prints (`cat -n`'s `   12\\t`,
Claude Code's `   12→`, grep's `path:12:` and `12:`) is dropped, then all whitespace, so that
numbering, indentation and wrapping do not matter; a fact is known when every one of its
distinguishing texts is in the request. A text cut out of a long output (a head-and-tail
truncation) is not in the request, and the fact is not known.

When a fact is missing:

- one a tool can show again (`file`, `output`) is fetched again: the model answers with that
  call (a read of the file's lines, the command that printed the value), fitted to the
  client's own tools, and, when its result comes back, takes up the same step again: a
  recovery, a billed model call of its own. An output the client cut, whose result says where
  it saved the whole (agent-server, pi and Claude Code do; `saved_output_search`), is
  searched for in that file first, as a model told where the rest is would do, rather than
  run again and cut the same way; the command runs again only if that does not find it. The
  file is that of the run that printed the fact (`Scenario.printed_by`, or a run again to
  show it): a later run, after a change, printed something else, and a model looking for
  "the audit before the change" does not search the audit after it;
- one no tool can show (`rule`, `request`, `decision`, `failed`) is acted on wrongly, as the
  fact says (`Fact.otherwise`): its calls (retrying the approach that failed, breaking the
  rule) are a step of their own before the step, or, without calls, its text opens the step's
  answer: a violation, recorded with the step and the fact.

Before either (after the search of a saved output), when the client offers a recall tool (one
named `recall`, that searches the session's own history by a `query`: agent-server's), every
missing fact but a file's is looked up with it, as a model told that its history is
searchable would: the query is the fact's `about` (what it is about, never its text), and for
an output the command that printed it (the one the model would otherwise run again), and a
fact its result shows is `recovered`, a rule, a request, a decision or a failed approach
included. When the result's excerpts are cut before the whole fact but one of them shows part
of it (`recalled_entry`: a one-line text of it, or two of its lines in a row), the model
reads that entry with the tool's `entry`, from a few lines above where the excerpt showed it,
as a model that sees part of what it looks for would: one more call. A file is read again
instead: a read shows it as it is now.

Each is done at most once per fact and step (the search of a saved output, the recall and the
read of a recalled entry once more): the model knows it did it from the call ids in the
request (`..._<turn>_<step>d<need>_...`, `d<need>s` for the search, `d<need>r` for the recall,
`d<need>o` for the read of the entry). A
fetched fact still missing afterwards (the output cut again, or no tool to fetch it with) is
`lost`, and the step goes on without it.

Every check is recorded (`FactCheck`) on the request's record: the fact, its kind, the step
and the outcome: `found`, `fetch` (missing: fetched now), `recovered` (found after its own
fetch), `lost`, `violated` (missing: acted on wrongly now) or `carried` (still missing after
its violation in this step: not counted again).
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import shlex
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from agent_server.sim.scenario import FETCHABLE, Fact, ToolInvocation
from agent_server.sim.transcript import (
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
)

Outcome: TypeAlias = Literal["found", "fetch", "recovered", "lost", "violated", "carried"]

# A tool's prefix before a line's content: cat -n and Claude Code's Read (`   12<tab>`,
# `   12→`), grep with a path (`src/a.py:12:`, `src/a.py-12-`), grep without (`12:`, `12-`, and
# agent-server's `12,40:` for a text on several lines).
_LINE_PREFIX = re.compile(
    r"^[ \t]*\d+(?:\t|→)"
    r"|^[^\s:]*[A-Za-z_./][^\s:]*[:-]\d+[:-]"
    r"|^\d+(?:,\d+)*[:-]",
    re.MULTILINE,
)
_WHITESPACE = re.compile(r"\s+")
# Where a client says it saved an output it cut: agent-server ("Full output saved to PATH;
# read it ..."), Claude Code ("Full output saved to: PATH"), pi ("Full output: PATH]").
_SAVED_OUTPUT = re.compile(r"Full output(?: saved to)?:?[ \t]+(/[^\s;\])\"'`]+)")
# What a regular expression gives a meaning to, in grep -E, ripgrep and Python alike.
_REGEX_SPECIAL = re.compile(r"([\\.^$|?*+()\[\]{}])")
_SEPARATOR = "\x00"


@functools.lru_cache(maxsize=16384)
def normalise(text: str) -> str:
    """`text` as the knowledge check compares it: each line's tool prefix dropped, then every
    whitespace character."""
    return _WHITESPACE.sub("", _LINE_PREFIX.sub("", text))


@dataclass(frozen=True, slots=True)
class FactCheck:
    fact: str
    kind: str
    step: str  # "<turn>:<step>"
    outcome: Outcome

    def to_json(self) -> dict[str, str]:
        return {"fact": self.fact, "kind": self.kind, "step": self.step,
                "outcome": self.outcome}


class RequestText:
    """The normalised text of everything a request holds, searched for facts."""

    def __init__(self, transcript: Transcript) -> None:
        self._text = _SEPARATOR.join(normalise(piece) for piece in _pieces(transcript))

    def holds(self, fact: Fact) -> bool:
        return all(normalise(text) in self._text for text in fact.texts)


def _pieces(transcript: Transcript) -> Iterator[str]:
    yield transcript.system
    for tool in transcript.tools:
        yield tool.name
        yield tool.description
        yield json.dumps(tool.schema, ensure_ascii=False, sort_keys=True)
    for message in transcript.messages:
        for part in message.parts:
            if isinstance(part, TextPart | ThinkingPart | ToolResultPart):
                yield part.text
            elif isinstance(part, ToolCallPart):
                yield part.name
                yield from _strings(part.arguments)


def _strings(value: Any) -> Iterator[str]:
    """The strings in a tool call's arguments (a written file's content, a command)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
    elif value is not None:
        yield str(value)


@dataclass(frozen=True, slots=True)
class Gate:
    """What the needs of a step come to in one request: the checks made, and either a detour
    (the need to fetch or act on, by its index in `needs`) or the texts of violations that
    open the step's answer."""

    checks: tuple[FactCheck, ...]
    detour: int | None = None
    opening: tuple[str, ...] = ()
    # The detour searches the file the client saved the fact's output in.
    saved: bool = False
    # The detour asks the client's recall tool (a search of the session's own history).
    recall: bool = False
    # The detour reads the entry a recall's excerpt showed part of the fact from.
    open: bool = False


def check_needs(
    transcript: Transcript,
    facts: Mapping[str, Fact],
    needs: Iterable[str],
    step: str,
    detours_done: frozenset[int],
    can_detour: Mapping[int, bool],
    searches_done: frozenset[int] = frozenset(),
    can_search_saved: Callable[[int], bool] = lambda need: False,
    recalls_done: frozenset[int] = frozenset(),
    can_recall: bool = False,
    opens_done: frozenset[int] = frozenset(),
    can_open: Callable[[int], bool] = lambda need: False,
    compacted: frozenset[int] = frozenset(),
) -> Gate:
    """The knowledge gate of a step (`step` is "<turn>:<step>"). `detours_done`: the needs
    whose detour the request already holds; `can_detour`: whether the need's calls fit a
    tool the request declares; `searches_done`, `can_search_saved`: the same for the search
    of a saved output (asked only of a missing output); `recalls_done`, `can_recall`: the
    same for a search of the session's own history, with the client's recall tool (asked of
    every missing fact but a file's, which a read shows as it is now); `opens_done`,
    `can_open`: the same for reading whole the entry whose excerpt, in that search's result,
    showed part of the fact (an excerpt is cut; a model that sees part of what it looks for
    opens the entry); `compacted`: the needs whose fetch a compaction took away before it was
    read, not fetched whole again (searched, recalled, or run again narrowed: `can_search_saved`
    says whether it can be)."""
    text: RequestText | None = None
    checks: list[FactCheck] = []
    opening: list[str] = []
    needs = tuple(needs)
    for index in _in_order(needs, facts, can_detour, can_recall):
        fact = facts[needs[index]]
        text = text or RequestText(transcript)
        done = index in detours_done
        recalled = index in recalls_done or index in opens_done
        if text.holds(fact):
            fetched = done or index in searches_done
            recovered = recalled or (fetched and fact.kind in FETCHABLE)
            outcome: Outcome = "recovered" if recovered else "found"
            checks.append(FactCheck(fact.id, fact.kind, step, outcome))
            continue
        if fact.kind in FETCHABLE and index not in searches_done and can_search_saved(index):
            checks.append(FactCheck(fact.id, fact.kind, step, "fetch"))
            return Gate(tuple(checks), detour=index, saved=True)
        if can_recall and not recalled and not done and fact.kind != "file":
            checks.append(FactCheck(fact.id, fact.kind, step, "fetch"))
            return Gate(tuple(checks), detour=index, recall=True)
        if recalled and index not in opens_done and not done and can_open(index):
            checks.append(FactCheck(fact.id, fact.kind, step, "fetch"))
            return Gate(tuple(checks), detour=index, open=True)
        if fact.kind in FETCHABLE:
            if not done and index not in compacted and can_detour.get(index, False):
                checks.append(FactCheck(fact.id, fact.kind, step, "fetch"))
                return Gate(tuple(checks), detour=index)
            checks.append(FactCheck(fact.id, fact.kind, step, "lost"))
            continue
        if done:
            checks.append(FactCheck(fact.id, fact.kind, step, "carried"))
            continue
        checks.append(FactCheck(fact.id, fact.kind, step, "violated"))
        if can_detour.get(index, False):
            return Gate(tuple(checks), detour=index)
        if fact.otherwise is not None and fact.otherwise.text:
            opening.append(fact.otherwise.text)
    return Gate(tuple(checks), opening=tuple(opening))


def _in_order(needs: tuple[str, ...], facts: Mapping[str, Fact],
              can_detour: Mapping[int, bool], can_recall: bool = False) -> list[int]:
    """Needs in the order they are checked: what can be fetched first, then what is acted on
    with calls of its own, then what only changes the answer's text; so that a violation that
    changes the text is only ever decided in the request that answers with the step."""

    def rank(index: int) -> tuple[int, int]:
        if facts[needs[index]].kind in FETCHABLE:
            return (0, index)
        return (1 if can_recall or can_detour.get(index, False) else 2, index)

    return sorted(range(len(needs)), key=rank)


# A recall result's excerpt begins with a line naming its entry: "--- entry 3f2a9c1e: ...".
_RECALLED_ENTRY = re.compile(r"^--- entry (\S+?): .*$", re.MULTILINE)
# How an excerpt says which lines of its entry it shows, and a line shown on its own.
_STRETCH = re.compile(r"^\[lines (\d+)-(\d+)\]$")
_OWN_LINE = re.compile(r"^(\d+): ")
# A line of a fact shorter than this (once normalised) is no sign of it: "</ul>", "ok".
_MIN_SIGN_CHARS = 16


def recalled_entry(result: str, fact: Fact) -> tuple[str, int] | None:
    """The first entry of a recall result whose excerpt shows part of `fact`, and the line of
    the entry where it does (an excerpt says which lines it shows: "[lines 180-201]", or
    "212: ..." for a line of its own), which the model reads from; None when no excerpt
    shows part of it. Part of a fact: one of its texts of one line, or two of its lines in a
    row of a longer one (a line alone may be in a later output as well, the fixed table that
    still lists the same headings)."""
    signs: list[tuple[str, int]] = []  # (normalised, lines it spans)
    for text in fact.texts:
        lines = [line for line in text.splitlines() if line.strip()]
        runs = itertools.pairwise(lines) if len(lines) > 1 else [(line,) for line in lines]
        signs.extend((normalise("\n".join(run)), len(run)) for run in runs)
    signs = [(sign, size) for sign, size in signs if len(sign) >= _MIN_SIGN_CHARS]
    heads = list(_RECALLED_ENTRY.finditer(result))
    ends = [head.start() for head in heads[1:]] + [len(result)] * bool(heads)
    for head, end in zip(heads, ends, strict=True):
        shown = _numbered(result[head.end() : end].strip("\n").split("\n"))
        for at, (_, number) in enumerate(shown):
            for sign, size in signs:
                if sign in normalise("\n".join(line for line, _ in shown[at : at + size])):
                    return head.group(1), number
    return None


def _numbered(lines: list[str]) -> list[tuple[str, int]]:
    """An excerpt's lines, each with its line in the entry (1 where the excerpt does not
    say)."""
    out: list[tuple[str, int]] = []
    left, number = 0, 1
    for line in lines:
        stretch = _STRETCH.match(line)
        if stretch is not None:
            number, left = int(stretch[1]), int(stretch[2]) - int(stretch[1]) + 1
            continue
        if left:
            out.append((line, number))
            number, left = number + 1, left - 1
            continue
        own = _OWN_LINE.match(line)
        out.append((line, int(own[1]) if own else number))
    return out


def saved_output_search(
    transcript: Transcript, fact: Fact, printed: Callable[[str], bool] = lambda _: True,
) -> ToolInvocation | None:
    """A search for an output fact's texts in the file where the client saved the whole
    output of the fact's command, when the latest result of a run that `printed` it (by the
    call's id) names one (the client cut the output it showed); None otherwise. A run of the
    command after a change prints something else: the model knows which run showed it
    ("the audit before the change") and does not look for it in another's file."""
    command = fact.command
    if not command:
        return None
    ran = {
        part.id
        for message in transcript.messages
        for part in message.parts
        if isinstance(part, ToolCallPart) and any(command in s for s in _strings(part.arguments))
        and printed(part.id)
    }
    path = None
    for message in transcript.messages:
        for part in message.parts:
            if isinstance(part, ToolResultPart) and part.tool_call_id in ran:
                found = _SAVED_OUTPUT.findall(part.text)
                path = found[-1].rstrip(".,:") if found else None  # the latest run decides
    if path is None:
        return None
    pattern = _looked_for(fact)
    return ToolInvocation("grep", {"pattern": pattern, "path": path}) if pattern else None


def narrowed_run(fact: Fact) -> ToolInvocation | None:
    """An output fact's command run again with its output narrowed to the lines the model
    looks for (`cmd 2>&1 | grep -E ...`): what a model does once the whole output, fetched
    again, was compacted away before it could read it (run whole, it would overflow the window
    again). None for a fact no shell command prints."""
    if fact.fetch is None or fact.fetch.name != "bash" or not fact.command:
        return None
    pattern = _looked_for(fact)
    if not pattern:
        return None
    return ToolInvocation("bash", {"command": f"{fact.command} 2>&1 | grep -E "
                                              f"{shlex.quote(pattern)}"})


def _looked_for(fact: Fact) -> str:
    """The first two thirds of each line of the fact, as a regular expression: what the model
    looks for, not what it would find (the call's own arguments are in the request, and must
    not make the fact known)."""
    lines = [line.strip() for text in fact.texts for line in text.splitlines() if line.strip()]
    starts = (line[: max(1, len(line) * 2 // 3)] for line in lines)
    return "|".join(_REGEX_SPECIAL.sub(r"\\\1", start) for start in starts)
