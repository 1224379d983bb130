"""Scenarios: what the simulated model answers, turn by turn, loaded from JSON or YAML.

A scenario is a list of turns. A turn names the user prompt it answers (`user`) and the
assistant messages (`steps`) the model sends in reply, one per model call:

```yaml
name: example
turns:
  - user: "List the files, then read the README."
    steps:
      - thinking: "Start with the top of the tree."      # optional
        text: "Let me look around."                      # optional
        tools:                                           # several = parallel calls
          - {name: ls, arguments: {path: "."}}
      - tools:
          - {name: read, arguments: {path: README.md}}
      - text: "The README says what the project is."
        textTokens: 300                                  # optional filler of ~300 tokens
```

A step may name the facts it relies on (`needs`), declared under `facts` (see `Fact` and
knowledge.py): the simulated model looks for each in the request before it answers, fetches a
missing one again with a tool, or acts without it in a recorded way. A step that explores
(lists, finds, searches) may name what it looks for (`finds`: files, or where a text is in a
file): when the request already shows all of it, the model does not take the step
(exploration.py). A step that reads a stretch of a file to see all of it may name its lines
(`sees`: path, text and line of each): when a client's result is cut before them, the model
reads on (reading.py).

A step with tools ends its model call with a tool-use stop; the step without tools is the last
of its turn. The scenario is consumed statelessly (see `responder.py`): which step answers a
request is read from the request itself, so retries and compactions are safe.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal, TypeAlias, get_args

import yaml

_STEP_KEYS = frozenset(("thinking", "text", "textTokens", "tools", "needs", "finds", "sees"))
_LOCATION_KEYS = frozenset(("path", "text", "line"))
_TURN_KEYS = frozenset(("user", "steps"))
_TOOL_KEYS = frozenset(("name", "arguments"))
_FACT_KEYS = frozenset(("id", "kind", "about", "text", "path", "lines", "fetch", "otherwise"))
FactKind: TypeAlias = Literal["file", "output", "rule", "request", "decision", "failed"]
FACT_KINDS: tuple[FactKind, ...] = get_args(FactKind)
# Kinds a tool can show again (a file's lines, a command's output); the others (what the user
# said, what was decided or tried) exist only in the conversation.
FETCHABLE: frozenset[FactKind] = frozenset(("file", "output"))


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True, slots=True)
class ToolInvocation:
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Location:
    """What an exploring step looks for: a file (`text` None), or the line of `path` that
    holds `text` (with its number, `line`, when the step needs that too: a read that starts
    there follows)."""

    path: str
    text: str | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Step:
    """One assistant message: thinking, then text (and filler), then tool calls."""

    thinking: str = ""
    text: str = ""
    text_tokens: int = 0
    tools: tuple[ToolInvocation, ...] = ()
    needs: tuple[str, ...] = ()  # ids of the facts this step relies on
    finds: tuple[Location, ...] = ()  # what this step's calls look for (an exploring step)
    # The lines this step's reads are meant to show, in order; a read cut before them is read
    # on (reading.py)
    sees: tuple[Location, ...] = ()


@dataclass(frozen=True, slots=True)
class Fact:
    """Something a step relies on from earlier in the session.

    `texts` are its distinguishing texts: the fact counts as known when every one of them is
    in the request (knowledge.py says how text is compared). A fetchable fact (`file`,
    `output`) has `fetch`, the call that shows it again (for a file: a read of its lines); an
    unfetchable one has `otherwise`, what the model does without it (breaks the rule, retries
    the failed approach, answers the older request)."""

    id: str
    kind: FactKind
    texts: tuple[str, ...]
    about: str = ""
    fetch: ToolInvocation | None = None
    otherwise: Step | None = None

    @property
    def command(self) -> str:
        """Of an output, the command that prints it (the one that fetches it again); else ""."""
        command = self.fetch.arguments.get("command") if self.fetch is not None else None
        return command if self.kind == "output" and isinstance(command, str) else ""


@dataclass(frozen=True, slots=True)
class Turn:
    user: str
    steps: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    turns: tuple[Turn, ...]
    facts: Mapping[str, Fact] = field(default_factory=dict)

    def find_turn(self, prompt: str) -> int | None:
        """The index of the turn whose `user` text equals `prompt`, whitespace-normalised."""
        wanted = normalise_prompt(prompt)
        for index, turn in enumerate(self.turns):
            if normalise_prompt(turn.user) == wanted:
                return index
        return None

    def find_turn_within(self, message: str) -> int | None:
        """The turn whose `user` text is contained in `message` (whitespace-normalised): a
        client that wraps the user's words in its own text, or keeps earlier prompts before the
        latest. The one that ends last wins (the latest), the longest on a tie."""
        text = normalise_prompt(message)
        best: tuple[int, int] | None = None
        found: int | None = None
        for index, turn in enumerate(self.turns):
            wanted = normalise_prompt(turn.user)
            at = text.rfind(wanted)
            if at < 0:
                continue
            key = (at + len(wanted), len(wanted))
            if best is None or key > best:
                best, found = key, index
        return found

    def turns_quoted(self, text: str) -> list[int]:
        """The turns whose `user` text is quoted whole in `text` (whitespace-normalised)."""
        flat = normalise_prompt(text)
        return [index for index, turn in enumerate(self.turns)
                if normalise_prompt(turn.user) in flat]

    def printed_by(self, fact_id: str) -> tuple[int, int] | None:
        """Of an output fact, the step (turn, index) whose run of its command printed it: the
        last run before the first step that needs it. None for any other fact, or when no
        step before that runs the command."""
        fact = self.facts[fact_id]
        if fact.kind != "output" or fact.fetch is None:
            return None
        found: tuple[int, int] | None = None
        for turn_index, turn in enumerate(self.turns):
            for index, step in enumerate(turn.steps):
                if fact_id in step.needs:
                    return found
                if fact.fetch in step.tools:
                    found = (turn_index, index)
        return found

    @property
    def prompts(self) -> tuple[str, ...]:
        """The user prompts in order: what a driver (the demo, a benchmark) sends."""
        return tuple(turn.user for turn in self.turns)


def normalise_prompt(text: str) -> str:
    return " ".join(text.split())


def parse_scenario(data: Any, source: str = "scenario") -> Scenario:
    """A scenario from parsed JSON/YAML: a list of turns, or `{name?, facts?, turns: [...]}`."""
    name = source
    facts: dict[str, Fact] = {}
    if isinstance(data, Mapping):
        unknown = set(data) - {"name", "turns", "description", "facts"}
        if unknown:
            raise ScenarioError(f"{source}: unknown top-level keys {sorted(unknown)}")
        if "name" in data:
            if not isinstance(data["name"], str):
                raise ScenarioError(f"{source}: name must be a string")
            name = data["name"]
        facts = _parse_facts(data.get("facts", []), source)
        turns_data = data.get("turns")
    else:
        turns_data = data
    if not isinstance(turns_data, list) or not turns_data:
        raise ScenarioError(f"{source}: expected a non-empty list of turns (under 'turns')")
    turns = tuple(_parse_turn(turn, f"{source}: turns[{i}]") for i, turn in enumerate(turns_data))
    seen: dict[str, int] = {}
    for index, turn in enumerate(turns):
        key = normalise_prompt(turn.user)
        if key in seen:
            raise ScenarioError(
                f"{source}: turns[{index}].user repeats turns[{seen[key]}].user; "
                "each turn must answer a distinct prompt"
            )
        seen[key] = index
        for step_index, step in enumerate(turn.steps):
            unknown_facts = [need for need in step.needs if need not in facts]
            if unknown_facts:
                raise ScenarioError(
                    f"{source}: turns[{index}].steps[{step_index}].needs: no fact "
                    f"{', '.join(unknown_facts)} under 'facts'"
                )
    return Scenario(name=name, turns=turns, facts=facts)


def load_scenario(path: Path) -> Scenario:
    """A scenario file, JSON (`.json`) or YAML (anything else)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read the scenario ({exc.strerror})") from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        kind = "JSON" if path.suffix == ".json" else "YAML"
        raise ScenarioError(f"{path}: not valid {kind}: {exc}") from exc
    return parse_scenario(data, str(path))


@functools.cache
def default_scenario() -> Scenario:
    """The built-in scenario: a repository exploration written against the sample workspace."""
    text = resources.files("agent_server.sim").joinpath("scenarios/default.yaml").read_text("utf-8")
    return parse_scenario(yaml.safe_load(text), "default.yaml")


def _parse_turn(data: Any, where: str) -> Turn:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{where}: expected an object with 'user' and 'steps'")
    unknown = set(data) - _TURN_KEYS
    if unknown:
        raise ScenarioError(f"{where}: unknown keys {sorted(unknown)} (expected user, steps)")
    user = data.get("user")
    if not isinstance(user, str) or not user.strip():
        raise ScenarioError(f"{where}.user: expected the user prompt as a non-empty string")
    steps_data = data.get("steps")
    if not isinstance(steps_data, list) or not steps_data:
        raise ScenarioError(f"{where}.steps: expected a non-empty list of steps")
    steps = tuple(_parse_step(step, f"{where}.steps[{i}]") for i, step in enumerate(steps_data))
    for index, step in enumerate(steps[:-1]):
        if not step.tools:
            raise ScenarioError(
                f"{where}.steps[{index}]: only the last step may end without tool calls "
                "(a step without tools ends the turn)"
            )
    if steps[-1].finds:
        raise ScenarioError(f"{where}.steps[{len(steps) - 1}].finds: the last step answers; "
                            "only a step that calls tools explores")
    if steps[-1].tools:
        raise ScenarioError(
            f"{where}.steps[{len(steps) - 1}]: the last step must not call tools "
            "(add a final step with text that ends the turn)"
        )
    return Turn(user=user, steps=steps)


def _parse_step(data: Any, where: str) -> Step:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{where}: expected an object (thinking, text, textTokens, tools)")
    unknown = set(data) - _STEP_KEYS
    if unknown:
        raise ScenarioError(
            f"{where}: unknown keys {sorted(unknown)} "
            "(expected thinking, text, textTokens, tools, needs, finds, sees)"
        )
    thinking = _optional_str(data, "thinking", where)
    text = _optional_str(data, "text", where)
    text_tokens = data.get("textTokens", 0)
    if isinstance(text_tokens, bool) or not isinstance(text_tokens, int) or text_tokens < 0:
        raise ScenarioError(f"{where}.textTokens: expected a non-negative integer")
    tools_data = data.get("tools", [])
    if not isinstance(tools_data, list):
        raise ScenarioError(f"{where}.tools: expected a list of {{name, arguments}}")
    tools = tuple(_parse_tool(t, f"{where}.tools[{i}]") for i, t in enumerate(tools_data))
    if not text and not text_tokens and not tools:
        raise ScenarioError(f"{where}: a step needs text, textTokens or tools")
    needs = data.get("needs", [])
    if not isinstance(needs, list) or not all(isinstance(n, str) and n for n in needs):
        raise ScenarioError(f"{where}.needs: expected a list of fact ids")
    finds = data.get("finds", [])
    if not isinstance(finds, list):
        raise ScenarioError(f"{where}.finds: expected a list of {{path, text?, line?}}")
    return Step(thinking=thinking, text=text, text_tokens=text_tokens, tools=tools,
                needs=tuple(needs),
                finds=tuple(_parse_location(f, f"{where}.finds[{i}]") for i, f in enumerate(finds)),
                sees=_parse_sees(data.get("sees", []), tools, where))


def _parse_sees(data: Any, tools: tuple[ToolInvocation, ...], where: str
                ) -> tuple[Location, ...]:
    """The lines a step's reads are to show: each with its path, text and line, put in order
    of path and line."""
    if not isinstance(data, list):
        raise ScenarioError(f"{where}.sees: expected a list of {{path, text, line}}")
    sees = [_parse_location(item, f"{where}.sees[{i}]") for i, item in enumerate(data)]
    for index, place in enumerate(sees):
        if place.line is None:
            raise ScenarioError(f"{where}.sees[{index}]: expected the line's text and number")
    if sees and not tools:
        raise ScenarioError(f"{where}.sees: only a step that calls tools reads lines")
    return tuple(sorted(sees, key=lambda place: (place.path, place.line or 0)))


def _parse_location(data: Any, where: str) -> Location:
    if not isinstance(data, Mapping) or set(data) - _LOCATION_KEYS:
        raise ScenarioError(f"{where}: expected an object with path, and text and line if "
                            "the step looks for a line")
    path, text, line = data.get("path"), data.get("text"), data.get("line")
    if not isinstance(path, str) or not path.strip():
        raise ScenarioError(f"{where}.path: expected the file's path")
    if text is not None and (not isinstance(text, str) or not text.strip()):
        raise ScenarioError(f"{where}.text: expected the text the step looks for")
    if line is not None and (isinstance(line, bool) or not isinstance(line, int) or line < 1
                             or text is None):
        raise ScenarioError(f"{where}.line: expected the 1-based number of the text's line")
    return Location(path.removeprefix("./"), text, line)


def _parse_facts(data: Any, source: str) -> dict[str, Fact]:
    if not isinstance(data, list):
        raise ScenarioError(f"{source}: facts: expected a list of facts")
    facts: dict[str, Fact] = {}
    for index, item in enumerate(data):
        fact = _parse_fact(item, f"{source}: facts[{index}]")
        if fact.id in facts:
            raise ScenarioError(f"{source}: facts[{index}].id: {fact.id!r} is declared twice")
        facts[fact.id] = fact
    return facts


def _parse_fact(data: Any, where: str) -> Fact:
    """A fact: `{id, kind, about?, text, ...}`; a `file` fact names `path` and `lines`
    ([first, last], 1-based) and is fetched again by reading them; an `output` fact names its
    `fetch` call; the other kinds name what the model does `otherwise`."""
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{where}: expected an object (id, kind, text, ...)")
    unknown = set(data) - _FACT_KEYS
    if unknown:
        raise ScenarioError(f"{where}: unknown keys {sorted(unknown)}")
    fact_id, kind = data.get("id"), data.get("kind")
    if not isinstance(fact_id, str) or not fact_id:
        raise ScenarioError(f"{where}.id: expected a non-empty string")
    if kind not in FACT_KINDS:
        raise ScenarioError(f"{where}.kind: expected one of {', '.join(FACT_KINDS)}")
    texts = data.get("text")
    texts = [texts] if isinstance(texts, str) else texts
    if not isinstance(texts, list) or not texts or not all(
        isinstance(t, str) and t.strip() for t in texts
    ):
        raise ScenarioError(f"{where}.text: expected its distinguishing text (a string or list)")
    about = _optional_str(data, "about", where)
    fetch: ToolInvocation | None = None
    otherwise: Step | None = None
    if kind == "file":
        fetch = _file_fetch(data, where)
    elif kind in FETCHABLE:
        if "fetch" not in data:
            raise ScenarioError(f"{where}.fetch: an {kind} fact needs the call that shows it")
        fetch = _parse_tool(data["fetch"], f"{where}.fetch")
    else:
        if "otherwise" not in data:
            raise ScenarioError(
                f"{where}.otherwise: a {kind} fact needs what the model does without it"
            )
        otherwise = _parse_step(data["otherwise"], f"{where}.otherwise")
    if kind in FETCHABLE and "otherwise" in data:
        raise ScenarioError(f"{where}.otherwise: a {kind} fact is fetched again, not acted on")
    return Fact(id=fact_id, kind=kind, texts=tuple(texts), about=about, fetch=fetch,
                otherwise=otherwise)


def _file_fetch(data: Mapping[str, Any], where: str) -> ToolInvocation:
    path, lines = data.get("path"), data.get("lines")
    if not isinstance(path, str) or not path:
        raise ScenarioError(f"{where}.path: a file fact needs the file's path")
    if (not isinstance(lines, list) or len(lines) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in lines)
            or not 1 <= lines[0] <= lines[1]):
        raise ScenarioError(f"{where}.lines: expected [first, last], 1-based")
    if "fetch" in data:
        return _parse_tool(data["fetch"], f"{where}.fetch")
    return ToolInvocation("read", {"path": path, "offset": lines[0],
                                   "limit": lines[1] - lines[0] + 1})


def _parse_tool(data: Any, where: str) -> ToolInvocation:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{where}: expected an object with 'name' and 'arguments'")
    unknown = set(data) - _TOOL_KEYS
    if unknown:
        raise ScenarioError(f"{where}: unknown keys {sorted(unknown)} (expected name, arguments)")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ScenarioError(f"{where}.name: expected the tool name as a non-empty string")
    arguments = data.get("arguments", {})
    if not isinstance(arguments, Mapping):
        raise ScenarioError(f"{where}.arguments: expected an object")
    try:
        canonical = json.loads(json.dumps(arguments, sort_keys=True))
    except (TypeError, ValueError) as exc:
        raise ScenarioError(f"{where}.arguments: not representable as JSON ({exc})") from exc
    return ToolInvocation(name=name, arguments=canonical)


def _optional_str(data: Mapping[str, Any], key: str, where: str) -> str:
    value = data.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ScenarioError(f"{where}.{key}: expected a string")
    return value

