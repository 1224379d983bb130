"""Writing a scenario against real code: the calls, and the facts each step relies on, checked
against the files as they stand at that point of the session.

A `Script` follows the workspace through the session: it reads the prepared tree, applies
each scripted edit and write to its own copy (so that a later fact about an edited file has
the edited text, and its line numbers are right), and refuses what would make the benchmark
dishonest:

- an edit whose old text is not in the file exactly once (every client's edit tool would
  refuse it);
- a file fact whose distinguishing lines are short (under MIN_FACT_CHARS once normalised), or
  are found in another file of the workspace (one holding a copy of the whole passage aside),
  or in a prompt or a scripted text (they would count as known without the file);
- a rule, correction or request fact whose text is not in the prompt that states it, or is in
  any other prompt or scripted text;
- an output fact whose text is in a prompt or a scripted text (it must come from the tool).

Texts are compared as the simulated model compares them (`agent_server.sim.knowledge.normalise`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_server.sim.knowledge import normalise
from agent_server.sim.scenario import Scenario, parse_scenario

MIN_FACT_CHARS = 16
# The interpreter every scripted command runs, as a repository's own virtual environment
# (`RealWorkload.write` links the benchmark's there): the same for every client, whatever a
# client's shell does to PATH (Codex runs a login shell, which resets it).
PYTHON = ".venv/bin/python"
_TEXT_SUFFIXES = frozenset((".py", ".md", ".rst", ".txt", ".cfg", ".toml", ".ini", ".log",
                            ".yml", ".yaml", ".json", ""))


class ScriptError(ValueError):
    """A scenario that would not measure what it claims to."""


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def plant_change(path: Path, old: str, new: str) -> None:
    """The planted bug: `old`, which the file at its pinned version holds exactly once,
    replaced by `new`."""
    text = path.read_text(encoding="utf-8")
    if text.count(old) != 1:
        raise ScriptError(f"{path.name}: the text to plant over is there {text.count(old)} "
                          f"times, not once: {old[:60]!r}")
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


class Script:
    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.root = root
        self._files: dict[str, str] = {}
        self._facts: list[dict[str, Any]] = []
        self._turns: list[dict[str, Any]] = []
        self._stated: dict[str, int] = {}  # fact id -> the turn whose prompt states it

    # --- the workspace as it stands ---------------------------------------------------------

    def text(self, path: str) -> str:
        if path not in self._files:
            self._files[path] = (self.root / path).read_text(encoding="utf-8")
        return self._files[path]

    def line_of(self, path: str, anchor: str, after: int = 0) -> int:
        """The 1-based number of the one line (from line `after` + 1 on) that holds `anchor`."""
        lines = self.text(path).splitlines()
        found = [i + 1 for i, line in enumerate(lines) if anchor in line and i + 1 > after]
        if not found:
            raise ScriptError(f"{self.name}: {anchor!r} is not in {path}")
        if len(found) > 1 and after == 0:
            raise ScriptError(f"{self.name}: {anchor!r} is on lines {found} of {path}")
        return found[0]

    def lines(self, path: str, first: int, last: int) -> list[str]:
        return self.text(path).splitlines()[first - 1 : last]

    # --- tool calls (the simulator's vocabulary) --------------------------------------------

    def read(self, path: str, anchor: str | None = None, count: int | None = None,
             before: int = 0) -> dict[str, Any]:
        """A read of the whole file, or of `count` lines starting `before` lines above the
        line holding `anchor`."""
        if anchor is None:
            return call("read", path=path)
        first = max(self.line_of(path, anchor) - before, 1)
        return call("read", path=path, offset=first, limit=count or 60)

    def page(self, path: str, first: int, count: int) -> dict[str, Any]:
        """A step that reads `count` lines of `path` from line `first` to see every one of
        them: the read, and the lines it is meant to show (`sees`: those long enough and found
        once in the file), so that a model whose result comes back cut reads on
        (`agent_server.sim.reading`) as it would to see the rest."""
        lines = self.text(path).splitlines()
        once = Counter(normalise(line) for line in lines)
        sees = [{"path": path, "text": line, "line": number}
                for number, line in enumerate(lines[first - 1 : first - 1 + count], first)
                if len(normalise(line)) >= MIN_FACT_CHARS and once[normalise(line)] == 1]
        return {"tools": [call("read", path=path, offset=first, limit=count)], "sees": sees}

    def edit(self, path: str, old: str, new: str) -> dict[str, Any]:
        text = self.text(path)
        if text.count(old) != 1:
            raise ScriptError(f"{self.name}: the old text of an edit of {path} is there "
                              f"{text.count(old)} times, not once: {old[:60]!r}")
        self._files[path] = text.replace(old, new, 1)
        return call("edit", path=path, oldText=old, newText=new)

    def where(self, path: str, anchor: str | None = None, *, numbered: bool = True
              ) -> dict[str, Any]:
        """What an exploring step looks for (a step's `finds`): the file `path`, or the line
        that holds `anchor` there, with its number unless `numbered` is False (the number is
        needed when a read that starts there follows)."""
        if anchor is None:
            self.text(path)  # the file must exist
            return {"path": path}
        found: dict[str, Any] = {"path": path, "text": anchor}
        line = self.line_of(path, anchor)
        if numbered:
            found["line"] = line
        return found

    def write(self, path: str, content: str) -> dict[str, Any]:
        self._files[path] = content
        return call("write", path=path, content=content)

    # --- facts ------------------------------------------------------------------------------

    def file_fact(self, fact_id: str, path: str, anchor: str, count: int, about: str,
                  before: int = 0) -> str:
        """The lines `path` holds, as it stands now, from `before` lines above the one with
        `anchor` on, `count` in all; their distinguishing lines (long enough, found in no
        other file) are what must be in the request."""
        first = max(self.line_of(path, anchor) - before, 1)
        last = first + count - 1
        shown = self.lines(path, first, last)
        texts = [line for line in shown
                 if len(normalise(line)) >= MIN_FACT_CHARS
                 and not self._elsewhere(line, path, shown)]
        if not texts:
            raise ScriptError(f"{self.name}: {fact_id}: no distinguishing line in {path} "
                              f"{first}-{last}")
        self._facts.append({"id": fact_id, "kind": "file", "about": about, "path": path,
                            "lines": [first, last], "text": texts})
        return fact_id

    def output_fact(self, fact_id: str, texts: Sequence[str], fetch: dict[str, Any],
                    about: str) -> str:
        """A value a tool printed (`texts`), shown again by `fetch`."""
        self._facts.append({"id": fact_id, "kind": "output", "about": about, "text": list(texts),
                            "fetch": fetch})
        return fact_id

    def said_fact(self, fact_id: str, kind: str, text: str, about: str,
                  otherwise_text: str = "", otherwise_tools: Sequence[dict[str, Any]] = ()
                  ) -> str:
        """Something said in the conversation (a rule, a correction, a decision, what failed):
        `text` must be in the prompt or scripted text that states it, and nowhere else."""
        otherwise: dict[str, Any] = {}
        if otherwise_text:
            otherwise["text"] = otherwise_text
        if otherwise_tools:
            otherwise["tools"] = list(otherwise_tools)
        self._facts.append({"id": fact_id, "kind": kind, "about": about, "text": text,
                            "otherwise": otherwise})
        return fact_id

    # --- turns ------------------------------------------------------------------------------

    def turn(self, user: str, *steps: Mapping[str, Any]) -> None:
        self._turns.append({"user": user, "steps": [dict(step) for step in steps]})

    # --- the result -------------------------------------------------------------------------

    def data(self) -> dict[str, Any]:
        data = {"name": self.name, "facts": self._facts, "turns": self._turns}
        self._validate(data)
        return data

    def scenario(self) -> Scenario:
        return parse_scenario(self.data(), self.name)

    def _elsewhere(self, line: str, path: str, block: list[str]) -> bool:
        """Whether `line` is in another file of the workspace, a copy of the whole `block` it
        is read in aside (tabulate's PKG-INFO holds its README)."""
        needle = normalise(line)
        whole = normalise("\n".join(block))
        return any(needle in normalise(text) and whole not in normalise(text)
                   for other, text in self._workspace_texts() if other != path)

    def _workspace_texts(self) -> Iterable[tuple[str, str]]:
        for file in sorted(self.root.rglob("*")):
            if not file.is_file() or file.suffix not in _TEXT_SUFFIXES:
                continue
            relative = file.relative_to(self.root).as_posix()
            try:
                yield relative, self._files.get(relative) or file.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue

    def _validate(self, data: dict[str, Any]) -> None:
        prompts = [normalise(turn["user"]) for turn in data["turns"]]
        scripted = [normalise(step.get("text", "")) for turn in data["turns"]
                    for step in turn["steps"]]
        scripted += [normalise(fact.get("otherwise", {}).get("text", ""))
                     for fact in data["facts"]]
        arguments = normalise(json.dumps([step.get("tools", []) for turn in data["turns"]
                                          for step in turn["steps"]], ensure_ascii=False))
        for fact in data["facts"]:
            for text in ([fact["text"]] if isinstance(fact["text"], str) else fact["text"]):
                self._check_fact_text(fact, text, prompts, scripted, arguments)

    def _check_fact_text(self, fact: Mapping[str, Any], text: str, prompts: list[str],
                         scripted: list[str], arguments: str) -> None:
        needle = normalise(text)
        in_prompts = [i for i, prompt in enumerate(prompts) if needle in prompt]
        in_scripted = sum(needle in step for step in scripted)
        where = f"{self.name}: fact {fact['id']}"
        if fact["kind"] in ("file", "output") and (in_prompts or in_scripted):
            raise ScriptError(f"{where}: {text!r} is in a prompt or a scripted text")
        if fact["kind"] == "output" and needle in arguments:
            raise ScriptError(f"{where}: {text!r} is in a scripted call's arguments")
        if fact["kind"] in ("rule", "request") and (len(in_prompts) != 1 or in_scripted):
            raise ScriptError(f"{where}: {text!r} must be in one prompt only "
                              f"(prompts {in_prompts}, scripted texts {in_scripted})")
        if fact["kind"] in ("decision", "failed") and (in_prompts or in_scripted != 1):
            raise ScriptError(f"{where}: {text!r} must be in one scripted text only "
                              f"(prompts {in_prompts}, scripted texts {in_scripted})")
