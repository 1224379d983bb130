"""The simulator's answer to a summary request: a deterministic, extractive, bounded summary.

The request is recognised from its words, the same way for every client
(`summary_requests.py`); nothing here knows a client. Two shapes are read:

- the conversation serialised in the instruction, inside `<conversation>...</conversation>`
  (agent-server's fresh prompt, pi's summariser): `[User]: ...`, `[Assistant]: ...`,
  `[Assistant tool call]: read(path="a.py")` or pi's `[Assistant tool calls]: read(...); ...`,
  `[Tool result read]: ...` or `[Tool result]: ...` entries, and the previous summary, if any,
  inside `<previous-summary>...</previous-summary>`;
- the conversation as the request's own messages (agent-server's cached request, Claude
  Code's, Codex's), the instruction last; a previous summary is a text handed over after a
  compaction (`summary_requests.is_summary_handoff`).

Two modes, for telling what a harness keeps by its own structure from what a summariser
happens to keep:

- `faithful`: the user's requests (quoted; the first is the goal, the latest is in
  progress, constraint-like sentences are listed), the files read (tools read, ls, grep,
  find, glob, and `cat`/`sed`/`head`/`tail`/`nl` in a shell) and modified (write, edit, a
  patch, a shell redirect), as well as file lists the instruction or the previous summary gives
  ("Read: a, b" lines, `<read-files>` blocks), commands run, failed tool calls, the first
  sentence of the assistant's texts, and the previous summary's sections, merged (a turn it
  split, whose request it gives under `## Request`, is the one in progress). Calls whose
  result is an error count as failures, not as files read or modified. Lists are capped and
  the whole is trimmed until it is at most MAX_SUMMARY_TOKENS, so a compaction always shrinks
  the context, whatever the size of what it summarises;
- `lossy`: a short goal (LOSSY_GOAL_CHARS) and the file lists only, like a summariser that
  drops the detail.

Either can be cut to a number of characters (`max_chars`: a summariser that keeps only that
much), at the last line break within it, as compaction-conformance-kit cuts its own
compactors' output to a budget.

The faithful answer is the bare summary in eight sections (## Goal ... ## Critical context),
then `## Where the work stands`: the last step whose results it summarised, or for a
serialised conversation the last call made, as the responder notes it, so that a turn
compacted in its middle goes on from there (a lossy summary does not say; a later summary
does not fold it in). A request about the early part of a turn only
(`summary_requests.asks_for_turn_prefix`) gets `## Request`, `## Done so far in this turn`
and `## State at the cut` instead. When the instruction asks for `<summary>` tags, the answer
is wrapped in them.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal, TypeAlias, get_args

from agent_server.sim.summary_requests import (
    SUMMARY_CLOSE,
    SUMMARY_OPEN,
    CarriedAfter,
    asks_for_turn_prefix,
    carried_after,
    handoff_body,
    is_summary_handoff,
    summary_instruction,
)
from agent_server.sim.tokenizer import count_tokens
from agent_server.sim.transcript import (
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
    TranscriptMessage,
    is_context_block,
)

SummaryMode: TypeAlias = Literal["faithful", "lossy"]
SUMMARY_MODES: tuple[SummaryMode, ...] = get_args(SummaryMode)
MAX_SUMMARY_TOKENS = 1500
LOSSY_GOAL_CHARS = 120
READ_TOOLS = frozenset(("read", "ls", "grep", "find", "glob", "view", "cat"))
WRITE_TOOLS = frozenset(("write", "edit", "multiedit", "multi_edit", "apply_patch", "create"))
SHELL_TOOLS = frozenset(("bash", "shell", "exec", "exec_command", "local_shell"))
_PATH_KEYS = ("path", "file_path", "filePath")
_SHELL_READERS = frozenset(("cat", "sed", "head", "tail", "nl", "less", "more"))

_CONSTRAINT_WORDS = re.compile(
    r"\b(must|never|always|don't|do not|avoid|prefer|only|without|keep)\b", re.IGNORECASE
)
_ENTRY = re.compile(
    r"^\[(?P<label>User|Assistant(?: thinking| tool calls?| error)?"
    r"|Tool result(?: (?P<tool>[^\]\s(]+))?(?P<error> \(error\))?)\]:[ ]?(?P<rest>.*)$"
)
_CALL = re.compile(r"^(?P<name>[\w.-]+)\((?P<args>.*)\)\s*$", re.DOTALL)
_ARG = re.compile(r'(?P<key>\w+)=(?P<value>"(?:[^"\\]|\\.)*"|[^,]*)')
_TOUCHED = re.compile(r"^(?P<kind>Read|Modified): (?P<paths>.+)$", re.MULTILINE)
_TOUCHED_BLOCK = re.compile(r"<(?P<kind>read|modified)-files>\n?(?P<paths>.*?)</(?P=kind)-files>",
                            re.DOTALL)
_PATCH_FILE = re.compile(r"^\*\*\* (?P<kind>Update|Add|Delete) File: (?P<path>.+)$",
                         re.MULTILINE)
_REDIRECT = re.compile(r"(?:^|[\s;&|])(?:>|>>|tee(?: -a)?)\s*(?P<path>[^\s;&|<>]+)")


@dataclass(slots=True)
class _Facts:
    requests: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    previous: dict[str, list[str]] = field(default_factory=dict)
    carried: CarriedAfter = field(default_factory=CarriedAfter)


def summarise(transcript: Transcript, mode: SummaryMode = "faithful",
              max_chars: int | None = None, progress: str = "") -> str:
    """The summary answering the summary request that ends `transcript` (its body at most
    `max_chars` characters, when given). A faithful summary ends with `progress`, where the
    work stands (the responder's note of the last step done), when there is one."""
    instruction = summary_instruction(transcript)
    facts = _Facts()
    conversation = _between(instruction, "<conversation>", "</conversation>")
    if conversation is not None:
        previous = _between(instruction, "<previous-summary>", "</previous-summary>")
        if previous is not None:
            _previous_summary(previous, facts)
        _facts_from_serialised(conversation, facts)
    else:
        _facts_from_messages(transcript.messages, facts, ignore=instruction)
    outer = _strip_regions(instruction)
    _touched(outer, facts)
    facts.carried = carried_after(outer)
    if mode == "lossy":
        body = _render_lossy(facts)
    elif asks_for_turn_prefix(outer):
        body = _render_turn_prefix(facts)
    else:
        body = _render(facts)
    if progress and mode == "faithful":
        body = f"{body}\n\n## Where the work stands\n{progress}"
    if max_chars is not None:
        body = _cut(body, max_chars)
    if SUMMARY_OPEN in outer:
        return f"{SUMMARY_OPEN}\n{body}\n{SUMMARY_CLOSE}"
    return body


def _touched(text: str, facts: _Facts) -> None:
    """File lists given in so many words: "Read: a, b" / "Modified: ..." lines, and
    `<read-files>` / `<modified-files>` blocks."""
    for match in _TOUCHED.finditer(text):
        target = facts.files_read if match["kind"] == "Read" else facts.files_modified
        for path in match["paths"].split(", "):
            _add(target, path, only_new=True)
    for match in _TOUCHED_BLOCK.finditer(text):
        target = facts.files_read if match["kind"] == "read" else facts.files_modified
        for path in match["paths"].splitlines():
            _add(target, path, only_new=True)


def _previous_summary(text: str, facts: _Facts) -> None:
    facts.previous = _parse_sections(text)
    _touched(text, facts)


# --- extraction -----------------------------------------------------------------------------


def _facts_from_messages(
    messages: Iterable[TranscriptMessage], facts: _Facts, ignore: str = ""
) -> None:
    calls: list[ToolCallPart] = []
    failed: dict[str, str] = {}
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart):
                if part.text == ignore:
                    continue
                if message.role == "user":
                    _user_text(part.text, facts)
                else:
                    _note(part.text, facts)
            elif isinstance(part, ToolCallPart):
                calls.append(part)
            elif isinstance(part, ToolResultPart) and part.is_error:
                failed[part.tool_call_id] = _first_line(part.text)
    for call in calls:
        if call.id in failed:
            _add(facts.failures, f"{call.name}: {failed[call.id]}")
        else:
            _tool_call(call.name, dict(call.arguments), facts)


def _entries(conversation: str) -> list[tuple[str, str | None, bool, str]]:
    """A serialised conversation's entries: (label, tool, is an error, text)."""
    entries: list[tuple[str, str | None, bool, list[str]]] = []
    for line in conversation.splitlines():
        match = _ENTRY.match(line)
        if match is not None:
            entries.append((match["label"], match["tool"], bool(match["error"]), [match["rest"]]))
        elif entries:
            entries[-1][3].append(line)
    return [(label, tool, error, "\n".join(lines).strip())
            for label, tool, error, lines in entries]


def serialised_calls(transcript: Transcript) -> list[tuple[str, dict[str, object]]]:
    """The tool calls, in order, of the conversation a summary request serialises in its
    instruction (none when the conversation is the request's own messages)."""
    conversation = _between(summary_instruction(transcript), "<conversation>", "</conversation>")
    calls: list[tuple[str, dict[str, object]]] = []
    for label, _tool, _error, text in _entries(conversation or ""):
        if label.startswith("Assistant tool call"):
            for call_text in _split_calls(text):
                call = _CALL.match(call_text)
                if call is not None:
                    calls.append((call["name"], _call_arguments(call["args"])))
    return calls


def said_before_last_call(transcript: Transcript) -> str:
    """What the assistant said right before the last tool call of the conversation a summary
    request serialises in its instruction ("" when it said nothing there, or when the
    conversation is the request's own messages)."""
    conversation = _between(summary_instruction(transcript), "<conversation>", "</conversation>")
    said = last = ""
    for label, _tool, _error, text in _entries(conversation or ""):
        if label == "Assistant":
            said = text
        elif label.startswith("Assistant tool call"):
            last, said = said, ""
        else:
            said = ""
    return last


def _facts_from_serialised(conversation: str, facts: _Facts) -> None:
    for label, tool, error, text in _entries(conversation):
        if label == "User":
            _user_text(text, facts)
        elif label == "Assistant":
            _note(text, facts)
        elif label.startswith("Assistant tool call"):
            for call_text in _split_calls(text):
                call = _CALL.match(call_text)
                if call is not None:
                    _tool_call(call["name"], _call_arguments(call["args"]), facts)
        elif error:
            _add(facts.failures, f"{tool or 'tool'}: {_first_line(text)}")
        elif label == "Assistant error":
            _add(facts.failures, f"model: {_first_line(text)}")


def _split_calls(text: str) -> Iterator[str]:
    """`a(x="1"); b(y=2)` as its calls: split on `; ` outside quotes and parentheses."""
    depth, quoted, escaped, start = 0, False, False, 0
    for index, char in enumerate(text):
        if quoted:
            escaped = char == "\\" and not escaped
            if char == '"' and not escaped:
                quoted = False
            continue
        if char == '"':
            quoted = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == ";" and depth == 0:
            yield text[start:index].strip()
            start = index + 1
    if text[start:].strip():
        yield text[start:].strip()


def _call_arguments(text: str) -> dict[str, object]:
    out: dict[str, object] = {}
    for match in _ARG.finditer(text):
        value = match["value"].strip()
        try:
            out[match["key"]] = json.loads(value)
        except json.JSONDecodeError:
            out[match["key"]] = value
    return out


def _user_text(text: str, facts: _Facts) -> None:
    stripped = text.strip()
    if not stripped or is_context_block(stripped):
        return
    if is_summary_handoff(stripped):
        _previous_summary(handoff_body(stripped), facts)
        rest = stripped.split(SUMMARY_CLOSE, 1)[1].strip() if SUMMARY_CLOSE in stripped else ""
        if rest:
            _user_text(rest, facts)
        return
    facts.requests.append(stripped)


def _note(text: str, facts: _Facts) -> None:
    sentence = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    if sentence:
        facts.notes.append(sentence[:200])


def _tool_call(name: str, arguments: dict[str, object], facts: _Facts) -> None:
    path = next((str(arguments[key]) for key in _PATH_KEYS if key in arguments), None)
    lowered = name.lower()
    patch = next((value for value in arguments.values()
                  if isinstance(value, str) and "*** Begin Patch" in value), None)
    if patch is not None:
        for match in _PATCH_FILE.finditer(patch):
            _add(facts.files_modified, match["path"].strip())
    elif lowered in WRITE_TOOLS and path:
        _add(facts.files_modified, path)
    elif lowered in READ_TOOLS and path:
        _add(facts.files_read, path)
    elif lowered in SHELL_TOOLS:
        command = _command(arguments)
        if command:
            _add(facts.commands, _clip(command, 200))
            _shell_files(command, facts)


def _command(arguments: dict[str, object]) -> str:
    """A shell call's command line: `command` or `cmd`, a string or an argv list (whose last
    item is the script of `bash -lc`)."""
    value = arguments.get("command", arguments.get("cmd", ""))
    if isinstance(value, list):
        value = value[-1] if value else ""
    return str(value).strip()


def _shell_files(command: str, facts: _Facts) -> None:
    """The files a shell command reads (`cat`, `sed -n`, `head`, `tail`, `nl` of a path) or
    writes (a redirect, `tee`, a patch)."""
    first_line = command.split("\n", 1)[0]
    for match in _REDIRECT.finditer(first_line):
        _add(facts.files_modified, match["path"].strip("'\""))
    for match in _PATCH_FILE.finditer(command):
        _add(facts.files_modified, match["path"].strip())
    for segment in re.split(r"[|;&]+", first_line):
        try:
            words = shlex.split(segment)
        except ValueError:
            continue
        if not words or words[0] not in _SHELL_READERS:
            continue
        for word in words[1:]:
            if not word.startswith("-") and ("." in word or "/" in word) \
                    and not re.fullmatch(r"[\d,]+p", word):
                _add(facts.files_read, word)


# --- previous summary -----------------------------------------------------------------------


def _parse_sections(text: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        heading = re.match(r"^##\s+(.+?)\s*$", line)
        if heading:
            current = heading.group(1)
            sections.setdefault(current, [])
            continue
        if current is not None and line.strip():
            sections[current].append(line.rstrip())
    return sections


def _bullets(lines: Iterable[str]) -> list[str]:
    out = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(("- ", "* ")):
            out.append(stripped[2:].strip())
    return out


def _subsection(lines: list[str], name: str) -> list[str]:
    out: list[str] = []
    inside = False
    for line in lines:
        heading = re.match(r"^###\s+(.+?)\s*$", line)
        if heading:
            inside = heading.group(1).lower() == name.lower()
            continue
        if inside and line.strip().startswith(("- ", "* ")):
            out.append(line.strip()[2:].strip())
    return out


# --- rendering ------------------------------------------------------------------------------


def _render(facts: _Facts) -> str:
    caps = {"requests": 6, "files": 30, "items": 8, "quote": 400}
    while True:
        text = _render_with(facts, caps)
        if count_tokens(text) <= MAX_SUMMARY_TOKENS or caps["files"] <= 1:
            return text
        caps = {key: max(1, value // 2) for key, value in caps.items()}
        caps["quote"] = max(caps["quote"], 60)


def _render_with(facts: _Facts, caps: dict[str, int]) -> str:
    previous = facts.previous
    requests = facts.requests
    quote = caps["quote"]
    goal_lines = [line for line in previous.get("Goal", []) if line.strip()]
    if goal_lines:
        goal = _clip(" ".join(line.strip() for line in goal_lines), quote)
    elif requests:
        goal = f'"{_clip(requests[0], quote)}"'
    else:
        goal = "(not stated)"

    constraints = _merge(
        _bullets(previous.get("Constraints and preferences", [])),
        [
            f'"{_clip(sentence, 200)}"'
            for request in requests
            for sentence in re.split(r"(?<=[.!?])\s+", request)
            if _CONSTRAINT_WORDS.search(sentence)
        ],
        caps["items"],
    )
    progress = previous.get("Progress", [])
    # A turn the previous compaction split (its early part summarised on its own, under
    # "## Request": pi's and ours) was in progress after everything its Progress says: what
    # that says is in progress was answered before it, and it is the latest request when
    # nothing was asked since.
    split = " ".join(line.strip() for line in previous.get("Request", []) if line.strip())
    answered = _subsection(progress, "In progress") if split else []
    done = _merge(
        _subsection(progress, "Done"),
        [f"Answered: {_clip(item, 120)}" for item in answered]
        + [f'Answered: "{_clip(request, 120)}"' for request in requests[:-1]],
        caps["items"],
    )
    if facts.files_read or facts.files_modified or facts.commands:
        done.append(
            f"Since the last summary: {len(facts.files_read)} path(s) read, "
            f"{len(facts.files_modified)} modified, {len(facts.commands)} command(s) run."
        )
    in_progress = (
        [f'"{_clip(requests[-1], 200)}"'] if requests
        else [split] if split
        else _subsection(progress, "In progress")
    )
    blocked = _merge(
        _subsection(progress, "Blocked"),
        _not_carried(facts.failures, facts.carried.failed_calls, CARRIED_FAILURES),
        caps["items"],
    )

    modified = _merge(_bullets(previous.get("Files modified", [])), facts.files_modified,
                      caps["files"])
    modified_keys = {_path_key(path) for path in modified}
    read = [
        path
        for path in _merge(_bullets(previous.get("Files read", [])), facts.files_read,
                           caps["files"])
        if _path_key(path) not in modified_keys
    ]
    decisions = _merge(_bullets(previous.get("Key decisions", [])), facts.notes, caps["items"])
    next_steps = (
        [f'Continue with the latest request: "{_clip(requests[-1], 200)}"'] if requests
        else [f"Continue with the latest request: {split}"] if split
        else _bullets(previous.get("Next steps", []))[: caps["items"]]
    )
    if modified:
        next_steps.append("Re-read a modified file before editing it again.")
    critical = _merge(
        _bullets(previous.get("Critical context", [])),
        _not_carried(
            [f'User said: "{_clip(request, quote)}"' for request in requests],
            facts.carried.user_messages,
            CARRIED_MESSAGES,
        )[-caps["requests"] :]
        + [f"Ran: `{command}`" for command in facts.commands[-4:]],
        caps["items"] + caps["requests"],
    )

    def listed(lines: list[str], empty: str = "Nothing") -> str:
        return "\n".join(f"- {line}" for line in lines) if lines else f"- {empty}"

    return "\n\n".join(
        (
            f"## Goal\n{goal}",
            f"## Constraints and preferences\n{listed(constraints, 'None stated')}",
            "## Progress\n"
            f"### Done\n{listed(done)}\n"
            f"### In progress\n{listed(in_progress)}\n"
            f"### Blocked\n{listed(blocked)}",
            f"## Key decisions\n{listed(decisions, 'None recorded')}",
            f"## Files read\n{listed([_code(p) for p in read], 'None')}",
            f"## Files modified\n{listed([_code(p) for p in modified], 'None')}",
            f"## Next steps\n{listed(next_steps, 'Wait for the next request')}",
            f"## Critical context\n{listed(critical, 'None')}",
        )
    )


# What a summary told not to copy out what comes verbatim after it says instead.
CARRIED_MESSAGES = "The user's messages are carried verbatim after this summary."
CARRIED_FAILURES = "The failed tool calls are carried verbatim after this summary."


def _not_carried(items: list[str], carried: int, reference: str) -> list[str]:
    """`items` less the newest `carried` of them (the instruction says those come verbatim
    after the summary), and then one line referring to them."""
    if not carried or not items:
        return items
    return [*items[: max(len(items) - carried, 0)], reference]


def _render_lossy(facts: _Facts) -> str:
    """A short goal and the file lists: what a summariser that drops the detail keeps."""
    goal_lines = [line.strip() for line in facts.previous.get("Goal", []) if line.strip()]
    goal = " ".join(goal_lines) if goal_lines else (facts.requests[0] if facts.requests else "")
    modified = _merge(_bullets(facts.previous.get("Files modified", [])), facts.files_modified,
                      30)
    modified_keys = {_path_key(path) for path in modified}
    read = [path for path in _merge(_bullets(facts.previous.get("Files read", [])),
                                    facts.files_read, 30)
            if _path_key(path) not in modified_keys]
    listed_read = "\n".join(f"- {_code(p)}" for p in read) or "- None"
    listed_modified = "\n".join(f"- {_code(p)}" for p in modified) or "- None"
    return (f"## Goal\n{_clip(goal, LOSSY_GOAL_CHARS) or '(not stated)'}\n\n"
            f"## Files read\n{listed_read}\n\n## Files modified\n{listed_modified}")


def _render_turn_prefix(facts: _Facts) -> str:
    request = f'"{_clip(facts.requests[0], 400)}"' if facts.requests else "(not stated)"
    done = [f"Read {_code(p)}" for p in facts.files_read[-20:]]
    done += [f"Modified {_code(p)}" for p in facts.files_modified[-20:]]
    done += [f"Ran `{c}`" for c in facts.commands[-6:]]
    done += [f"Failed: {f}" for f in facts.failures[-6:]]
    state = facts.notes[-3:] or ["Working through the request."]
    text = (
        f"## Request\n{request}\n\n## Done so far in this turn\n"
        + ("\n".join(f"- {line}" for line in done) or "- Nothing yet")
        + "\n\n## State at the cut\n"
        + "\n".join(f"- {line}" for line in state)
    )
    while count_tokens(text) > MAX_SUMMARY_TOKENS and len(text) > 200:
        text = text[: len(text) * 3 // 4]
    return text


def _merge(old: list[str], new: list[str], cap: int) -> list[str]:
    """old + new without duplicates (the later occurrence wins), the most recent `cap`."""
    seen: dict[str, str] = {}
    for item in [*old, *new]:
        key = _path_key(item)
        if key and item.strip() not in ("Nothing", "None", "None stated", "None recorded"):
            seen.pop(key, None)
            seen[key] = item.strip()
    items = list(seen.values())
    return items[-cap:] if cap > 0 else []


def _path_key(item: str) -> str:
    return item.strip().strip("`").strip()


def _code(path: str) -> str:
    return f"`{_path_key(path)}`"


def _add(items: list[str], value: str, *, only_new: bool = False) -> None:
    value = value.strip()
    if not value:
        return
    if value in items:
        if only_new:
            return
        items.remove(value)
    items.append(value)


def _first_line(text: str) -> str:
    return _clip(next((line for line in text.splitlines() if line.strip()), ""), 160)


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _cut(text: str, limit: int) -> str:
    """The first `limit` characters of `text`, ended at the last line break within them."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = cut.rfind("\n")
    return (cut[:end] if end > 0 else cut).rstrip()


def _between(text: str, opening: str, closing: str) -> str | None:
    start = text.find(opening)
    if start < 0:
        return None
    end = text.find(closing, start + len(opening))
    if end < 0:
        return text[start + len(opening) :]
    return text[start + len(opening) : end]


def _strip_regions(text: str) -> str:
    for opening, closing in (
        ("<conversation>", "</conversation>"),
        ("<previous-summary>", "</previous-summary>"),
    ):
        while (start := text.find(opening)) >= 0:
            end = text.find(closing, start)
            text = text[:start] + (text[end + len(closing) :] if end >= 0 else "")
    return text
