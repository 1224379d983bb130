"""recall: the model searches and reads the session's own history (issue 45).

A compaction replaces older messages with a summary in what the model sees; the ledger keeps
them. recall searches every prompt, answer, tool call and tool result on the session's branch
(before and after every compaction; a rewound branch's are not on it) and returns bounded
excerpts, each saying which entry it came from, so that what the session saw (a rule the user
gave, an output, an error since fixed, what was tried and failed, a decision) stays in reach.
Given an entry's id, it reads that entry whole, a page at a time. Read-only, on the session
alone: never asked about, in the fixed tool list.

Ranking: by the query's words an entry holds, each weighted by how few entries hold it (its
inverse document frequency), then by BM25 (Robertson and Zaragoza, "The Probabilistic
Relevance Framework: BM25 and Beyond", 2009), then the newer first. A word is cut to its stem
("quickest" finds "quick", "renders" finds "rendered") and matches where a word starts,
identifiers' parts included ("place" finds "places", not "replace"; "error" finds the "Error"
of "ParseError", "cache" the "Cache" of "_parseNoCache"); a word of two letters matches
only a whole word ("no" of `-p no:cacheprovider` is not the start of every `-> None`). A
word naming a decision ("decision", "decided") also matches the words one is stated with
("propose", "chose", "choice"): the tool offers decisions to look for, and they are seldom
called that. An
answer also holds the words of its turn's prompt, and a call or a result those and the answer
that made the call (a result its call too: the command, the path), at half weight in BM25: an
output seldom says what it was for, nor what printed it. The text of an answer that searched
with recall is not searched ("let me look up the decision" is not the decision).

A result cut short is searched, shown and read whole, from the file its whole output was
saved in (the session's spill directory; at most SAVED_BYTES): what the cut left out is in
reach with one search, under the line numbers of the whole.

Excerpts: at most MAX_EXCERPTS, the best at most FIRST_EXCERPT_CHARS and the others
EXCERPT_CHARS; the room a short best entry leaves goes to the next (a long output ranked
second after a one-line result is not cut to the others' size). Each is the stretch of its
entry with the most of the words, and of as many, where its rarer words gather (a test run's
failures, not the first line that says both "test" and "failure"), cut at line ends. Of a
long tool result, a third of that (at least half of EXCERPT_CHARS) under the lines it is
("[lines 180-201]"), then, each after its line number, the other lines holding the most of
the words (of as many, those reporting an error or a failure first; as grep would show
them; not the note a cut output opens with) and the lines that report an error or a
failure (a test run's summary of its failures first, as a cut keeps them), then its end
(where a run's verdict is), under its lines too, the stretch running on to the end when only
a line or two lie between: as a reader of an output looks, and so that reading the entry
from a line (`entry` and `offset`, a page of whole lines) goes on from what an excerpt
showed. Under a command's result, the same command's other runs that are
not shown themselves, newest first, each as the lines holding the most of the words, or, where
none holds any, as the lines it printed that the run shown did not: which run a query means
("before the fix") is seldom in its words, and how the runs differ is what tells them apart.
"""

from __future__ import annotations

import asyncio
import functools
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agent_server.agent.tools.base import (
    Recallable,
    ToolContext,
    ToolKind,
    ToolResult,
    display_arg,
    optional_str_arg,
)
from agent_server.agent.tools.output import (
    TRUNCATED,
    SalientLines,
    reports_failure,
    saved_output,
)
from agent_server.context.projection import is_prompt
from agent_server.errors import ToolError
from agent_server.llm.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from agent_server.session.entries import Entry, MessageEntry

MAX_EXCERPTS = 5
# Where a search may look (`in`), by the kind of piece (Recallable.source).
SOURCES = ("all", "prompts", "answers", "results")
EXCERPT_CHARS = 800
FIRST_EXCERPT_CHARS = 2400
LINE_CHARS = 300  # the most of a line an excerpt shows on its own (a numbered line)
# Of a result's other runs (the same call again): the lines of each, and of all of them.
OTHER_RUN_LINES = 2
OTHER_RUN_CHARS = 2 * LINE_CHARS
OTHER_RUNS_CHARS = 800
PAGE_CHARS = 8000
# A result cut short is searched and read whole when its saved output is at most this large,
# and while all of those read for one search are at most SAVED_TOTAL_BYTES.
SAVED_BYTES = 1024 * 1024
SAVED_TOTAL_BYTES = 16 * 1024 * 1024
# BM25's parameters, at the values its authors recommend; the weight of a match in the words
# around an entry against one in its own text.
_K1 = 1.2
_B = 0.75
_CONTEXT_WEIGHT = 0.5
# Suffixes a word's stem drops (the longest first), when at least _MIN_STEM letters remain.
_SUFFIXES = ("ing", "est", "ed", "es", "er", "s")
_MIN_STEM = 4
# Words too common to tell entries apart.
_STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "had",
    "has", "have", "how", "i", "in", "is", "it", "its", "of", "on", "or", "that", "the",
    "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "why", "with",
    "you", "your", "about",
))
# A query's word this short matches only a whole word: "no" is not the start of "None".
_WHOLE_WORD = 2
# A query's word that names a decision (the tool's description offers "a decision" to look
# for) also matches the words a decision is stated with: one is seldom called one ("I
# propose", "we chose", "decided"). Stems, each matching where a word starts.
_DECISION = ("decision", "decid")
_DECISION_SAID_WITH = ("decision", "decid", "propos", "chose", "choos", "choice")
_WORD = re.compile(r"[\w.\-/]+", re.UNICODE)
# at_word_start in an ASCII text: after a character that is not a letter or a digit, or at a
# capital after a small letter or a digit, or at a capital before a small one after a capital.
_ASCII_WORD_START = r"(?:(?<![A-Za-z0-9])|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z]))"
# A ranked entry: (the words it holds, weighted; its BM25; its order in the history), the
# entry, its text in lower case.
_Scored = tuple[tuple[float, float, int], Recallable, str]

SPEC = ToolSpec(
    name="recall",
    description=(
        "Search this session's history (every prompt, answer, tool call and result, what "
        "compactions summarised away included) for what is no longer in your context: a rule "
        "or correction, an output or error, what did not work, a decision. Returns the best "
        "excerpts, each naming its entry; pass `entry` to read one whole."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words to look for, in any order"},
            "entry": {"type": "string", "description": "An entry id from a result: read it"},
            "offset": {
                "type": "integer",
                "description": "With entry: the line to start at (default 1)",
            },
            "in": {
                "type": "string",
                "enum": list(SOURCES),
                "description": "prompts (the user's), answers (yours, with your calls), "
                "results (the tools'), or all (default)",
            },
        },
        "required": [],
    },
)


class RecallTool:
    spec = SPEC
    read_only = True
    session_only = True  # reads the session's own history: never asked about
    kind: ToolKind = "search"

    def paths(self, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        return ()

    def title(self, arguments: Mapping[str, Any]) -> str:
        if isinstance(arguments.get("entry"), str):
            return f"Recall entry {display_arg(arguments, 'entry')}"
        return f"Recall: {display_arg(arguments, 'query')}"

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        if ctx.history is None:
            raise ToolError("recall is not available here: there is no session history.")
        history = [item for item in ctx.history() if item.text.strip()]
        # Reading the saved outputs and searching them all can take a second in a long
        # session: off the event loop, which goes on serving the editor meanwhile.
        return await asyncio.to_thread(_answer, history, arguments, ctx.spill_dir)


def _answer(
    history: Sequence[Recallable], arguments: Mapping[str, Any], spill_dir: Path
) -> ToolResult:
    """recall's answer to `arguments` from `history` (the saved outputs in `spill_dir`, read
    only for the entry asked for, or the pieces a search looks in)."""
    entry = optional_str_arg(arguments, "entry")
    if entry:
        pieces = [item for item in history if item.entry_id == entry]
        return _read_entry(with_whole_outputs(pieces, spill_dir), entry, arguments.get("offset"))
    query = optional_str_arg(arguments, "query") or ""
    terms = query_terms(query)
    if not terms:
        raise ToolError("Give `query` (words to look for) or `entry` (an id to read).")
    where = optional_str_arg(arguments, "in") or "all"
    if where not in SOURCES:
        raise ToolError(f"`in` must be one of {', '.join(SOURCES)}")
    looked_in = [item for item in history if where in ("all", item.source)]
    found = search(with_whole_outputs(looked_in, spill_dir), terms)
    if not found:
        return ToolResult.of_text(f"Nothing in this session's history matches {query!r}.")
    parts = [
        f"{len(found)} of the entries that match {query!r}, best first "
        f"(recall with `entry` to read one whole):"
    ]
    for item, excerpt in found:
        parts.append(f"--- entry {item.entry_id}: {item.what}, turn {item.turn} ---\n{excerpt}")
    return ToolResult.of_text("\n".join(parts))


def with_whole_outputs(history: Sequence[Recallable], spill_dir: Path) -> list[Recallable]:
    """`history`, each result cut short whose whole output was saved (in `spill_dir`, at most
    SAVED_BYTES) with that whole output as its text: what was cut is searched, shown and read
    too, under its own line numbers. Newest first, while SAVED_TOTAL_BYTES last; a larger
    output keeps the part its result showed (its head, its errors and its end)."""
    out = list(history)
    left = SAVED_TOTAL_BYTES
    for at in range(len(out) - 1, -1, -1):
        item = out[at]
        if item.source != "results" or TRUNCATED not in item.text:
            continue
        saved = saved_output(item.text, spill_dir, min(SAVED_BYTES, left))
        if saved is not None:
            out[at] = replace(item, what=f"{item.what}, its whole output", text=saved)
            left -= len(saved)
    return out


def query_terms(query: str) -> tuple[str, ...]:
    """The words of `query` that tell entries apart, lowercased and cut to their stems, each
    once."""
    words = (word.strip(".-/").lower() for word in _WORD.findall(query))
    seen: dict[str, None] = {}
    for word in words:
        if len(word) >= 2 and word not in _STOPWORDS:
            seen.setdefault(_stem(word))
    return tuple(seen)


def lower(text: str) -> str:
    """`text` in lower case, each character where it was: an excerpt's offsets, found in the
    lowered text, are taken in the text. (A few characters lower to two, "İ" to "i̇"; those
    stay as they are.)"""
    lowered = text.lower()
    if len(lowered) == len(text):  # no character lowers to more than one
        return lowered
    return "".join(low if len(low := char.lower()) == 1 else char for char in text)


def at_word_start(text: str, at: int) -> bool:
    """Whether a word of `text` starts at `at`: after a character that is not a letter or a
    digit (a space, "_", ".", "/"), or at a capital after a small letter or a digit, or
    before a small letter after a capital (the "Error" of "ParseError" and "HTTPError"). A
    query's word matches there only: "place" finds "places", not "replace"."""
    if at == 0 or not text[at - 1].isalnum():
        return True
    if not text[at].isupper():
        return False
    return not text[at - 1].isupper() or text[at + 1 : at + 2].islower()


def find(text: str, lowered: str, term: str, start: int = 0, end: int | None = None) -> int:
    """Where `term` first starts a word of `text` (`lowered`: its lower case, each character
    where it was) between `start` and `end`; -1 where it does not."""
    end = len(text) if end is None else end
    at = lowered.find(term, start, end)
    while at >= 0 and not matches_at(text, at, term):
        at = lowered.find(term, at + 1, end)
    return at


def matches_at(text: str, at: int, term: str) -> bool:
    """Whether `term`, found in `text` at `at`, is where a word starts, and, for a term of at
    most _WHOLE_WORD characters, where it also ends."""
    if not at_word_start(text, at):
        return False
    after = at + len(term)
    return (len(term) > _WHOLE_WORD or after >= len(text) or not text[after].isalnum()
            or at_word_start(text, after))


def word_starts(text: str, lowered: str, term: str) -> list[int]:
    """Where the words of `text` that start with `term` start, the first first (each after
    the one before it ends)."""
    at, often = _first(text, lowered, term)
    if often:
        return [match.start() for match in _word_pattern(term).finditer(text, at)]
    return _word_starts_from(text, lowered, term, at)


def occurrences(text: str, lowered: str, term: str) -> int:
    """How many words of `text` start with `term`."""
    at, often = _first(text, lowered, term)
    if often:
        return len(_word_pattern(term).findall(text, at))
    return len(_word_starts_from(text, lowered, term, at))


def _word_starts_from(text: str, lowered: str, term: str, at: int) -> list[int]:
    """word_starts by the loop, from `at`, where `term` is first in `lowered` (-1: nowhere)."""
    found: list[int] = []
    while at >= 0:
        if matches_at(text, at, term):
            found.append(at)
            at = lowered.find(term, at + len(term))
        else:
            at = lowered.find(term, at + 1)
    return found


# Where an ASCII text (most outputs) holds a term often, it is searched by a regular
# expression that states at_word_start's and matches_at's rules, in C: the loop of `find`
# takes seconds over a saved megabyte for a common word ("test" in a verbose test run). Where
# it holds it seldom, the loop is quicker than the expression's scan, and where it does not
# hold it, one `find` says so. The two agree; a property test says so.
_LOOP_MOST = 32


def _first(text: str, lowered: str, term: str) -> tuple[int, bool]:
    """Where `term` is first in `lowered` (-1: nowhere), and whether it is there often enough,
    in an ASCII text, to be searched by the expression."""
    at = lowered.find(term)
    return at, at >= 0 and lowered.count(term, at) > _LOOP_MOST and text.isascii()


@functools.lru_cache(maxsize=256)
def _word_pattern(term: str) -> re.Pattern[str]:
    """`term` where a word of an ASCII text starts with it (the term first, and then what is
    before it: a literal is found fastest), only the term ignoring case."""
    return re.compile(_ascii_word(term), re.ASCII)


def _ascii_word(term: str) -> str:
    said = f"(?i:{re.escape(term)})"
    # a short term also ends a word: before a character not a letter or a digit, or the end,
    # or where a word starts
    ends = f"(?:(?![A-Za-z0-9])|{_ASCII_WORD_START})" if len(term) <= _WHOLE_WORD else ""
    return f"{said}(?<={_ASCII_WORD_START}{said}){ends}"


def said_with(term: str) -> tuple[str, ...]:
    """The words `term` matches: itself, or, for a word naming a decision, the words one is
    stated with."""
    return _DECISION_SAID_WITH if term.startswith(_DECISION) else (term,)


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
            return word[: -len(suffix)]
    return word


def search(
    history: Sequence[Recallable], terms: Sequence[str]
) -> list[tuple[Recallable, str]]:
    """The best entries for `terms` with their excerpts (module docstring: the ranking)."""
    lowered = [lower(item.text) for item in history]
    said = [said_with(term) for term in terms]
    counts = [
        [sum(occurrences(item.text, text, word) for word in words) for words in said]
        for item, text in zip(history, lowered, strict=True)
    ]
    near = [
        [any(find(item.context, around, word) >= 0 for word in words) for words in said]
        for item in history
        for around in (lower(item.context),)
    ]
    total = len(history)
    weights = [
        math.log(1 + (total - held + 0.5) / (held + 0.5))
        for held in (
            sum(1 for i in range(total) if counts[i][t] or near[i][t]) for t in range(len(terms))
        )
    ]
    mean_length = sum(len(text) for text in lowered) / max(total, 1) or 1.0
    scored: list[_Scored] = []
    for order, item in enumerate(history):
        norm = _K1 * (1 - _B + _B * len(lowered[order]) / mean_length)
        matched = bm25 = 0.0
        for weight, count, is_near in zip(weights, counts[order], near[order], strict=True):
            if count or is_near:
                matched += weight
                bm25 += weight * (count * (_K1 + 1) / (count + norm) + _CONTEXT_WEIGHT * is_near)
        if matched:
            scored.append(((round(matched, 9), bm25, order), item, lowered[order]))
    scored.sort(key=lambda found: found[0], reverse=True)
    best = scored[:MAX_EXCERPTS]
    shown = {item.entry_id for _, item, _ in best}
    terms = [word for words in said for word in words]
    found: list[tuple[Recallable, str]] = []
    held_by_run: dict[int, list[tuple[int, str]]] = {}  # _other_runs's lines, by run, once
    more = FIRST_EXCERPT_CHARS - EXCERPT_CHARS  # the best's more room, unless it is shorter
    for _, item, text in best:
        budget = EXCERPT_CHARS + more
        more -= min(more, max(0, len(item.text) - EXCERPT_CHARS))
        shown_text = excerpt(item.text, text, terms, budget, output=item.source == "results")
        others = _other_runs(item, history, lowered, terms, shown, held_by_run)
        found.append((item, shown_text + others))
    return found


def _other_runs(
    item: Recallable, history: Sequence[Recallable], lowered: Sequence[str],
    terms: Sequence[str], shown: set[str], held_by_run: dict[int, list[tuple[int, str]]],
) -> str:
    """Of a command's result, where the same command ran more than once, the other runs not
    shown, newest first: each one's lines holding the most of the words (holding none, those
    it printed that the run shown did not), under its turn and entry. The words cannot say
    which run is meant ("the audit before the change"); the model can, seeing them side by
    side. `held_by_run` keeps each run's lines holding the words, found once for every
    result shown."""
    if not item.command:
        return ""
    lines: list[str] = []
    size = 0
    printed: set[str] | None = None  # the lines of the run shown, once one is compared to it
    for order in range(len(history) - 1, -1, -1):
        other = history[order]
        if other.command != item.command or other.entry_id in shown:
            continue
        held = held_by_run.get(order)
        if held is None:
            held = held_by_run[order] = _lines_with(
                other.text, lowered[order], terms, (0, 0), len(other.text), OTHER_RUN_CHARS
            )
        if not held:  # none of the words: where it differs from the run shown
            printed = set(item.text.split("\n")) if printed is None else printed
            held = _lines_not_in(other.text, printed, OTHER_RUN_CHARS)
        if not held:
            continue
        found = [f"turn {other.turn}, entry {other.entry_id}:"]
        found += [f"  {number}: {line}" for number, line in sorted(held[:OTHER_RUN_LINES])]
        size += sum(len(line) + 1 for line in found)
        if lines and size > OTHER_RUNS_CHARS:
            break
        lines += found
    if not lines:
        return ""
    return "\n[the same call's other runs, newest first]\n" + "\n".join(lines)


def _lines_not_in(text: str, printed: set[str], budget: int) -> list[tuple[int, str]]:
    """The lines of `text` not among `printed` (blank ones aside), the first first, at most
    `budget` characters of them, each with its number: what one run of a command printed
    that another did not."""
    out: list[tuple[int, str]] = []
    size = 0
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip() or line in printed:
            continue
        line = line[:LINE_CHARS]
        size += len(line) + 8
        if size > budget:
            break
        out.append((number, line))
    return out


def excerpt(
    text: str, lowered: str, terms: Sequence[str], budget: int = EXCERPT_CHARS,
    *, output: bool = False,
) -> str:
    """`text` in at most about `budget` characters (module docstring: the excerpts); "..."
    where it was cut."""
    if len(text) <= budget:
        return text
    if not output:
        start, end = _window(text, lowered, terms, budget)
        return _cut(text, start, end)
    start, end = _window(text, lowered, terms, max(budget // 3, EXCERPT_CHARS // 2))
    tail = max(end, text.find("\n", len(text) - budget // 4) + 1 or len(text))
    if tail - end <= budget // 8:  # a line or two between the stretch and the end: shown too
        end = tail = len(text)
    parts = [_stretch(text, start, end)]
    elsewhere = _lines_with(text, lowered, terms, (start, end), tail, budget // 4)
    flagged = SalientLines(budget // 6)
    flagged.feed(text[:start] + "\n" + text[end:tail])
    flagged.finish()
    shown = {line for _, line in elsewhere}
    more = [(number, line) for number, line in flagged.found if line not in shown]
    lines = sorted(elsewhere + more)
    if lines:
        parts.append("\n".join(f"{number}: {line}" for number, line in lines))
    if tail < len(text):
        parts.append(_stretch(text, tail, len(text)))
    return "\n".join(part.strip("\n") for part in parts)


def _stretch(text: str, start: int, end: int) -> str:
    """`text[start:end]` under a line saying which of its lines it is (whole lines: the start
    moved back to its line's start)."""
    start = text.rfind("\n", 0, start) + 1
    first = text.count("\n", 0, start) + 1
    last = first + text.count("\n", start, end)
    shown = text[start:end]
    if end < len(text) and not shown.endswith("\n"):
        shown += "..."
    return f"[lines {first}-{last}]\n{shown}"


def _lines_with(
    text: str, lowered: str, terms: Sequence[str], window: tuple[int, int], tail: int,
    budget: int,
) -> list[tuple[int, str]]:
    """The lines of `text` outside `window` and before `tail` holding the most of `terms`
    (then the first), at most `budget` characters of them, each with its number: a long
    output's other mentions, as grep would show them."""
    found: list[tuple[int, bool, int, str]] = []
    at = 0
    for number, line in enumerate(lowered[:tail].split("\n"), 1):
        start, at = at, at + len(line) + 1
        if window[0] <= start < window[1] or line.startswith(TRUNCATED.lower()):
            continue  # the stretch shown, or the note of a cut (its saved path, its words)
        held = sum(  # the substring first: most lines hold none of the words
            1 for term in terms if term in line and find(text, lowered, term, start, at - 1) >= 0
        )
        if held:  # the most of the words; of as many, one reporting a failure first
            shown = text[start : start + min(len(line), LINE_CHARS)]
            found.append((-held, not reports_failure(shown), number, shown))
    found.sort()
    out: list[tuple[int, str]] = []
    size = 0
    for _, _, number, line in found:
        size += len(line) + 8
        if size > budget:
            break
        out.append((number, line))
    return out


def _window(text: str, lowered: str, terms: Sequence[str], size: int) -> tuple[int, int]:
    """The start and end of the stretch of `text` (about `size` characters) holding the most
    of `terms`, widened to whole lines where that fits."""
    positions = sorted(
        (at, term) for term in set(terms) for at in word_starts(text, lowered, term)
    )
    total = Counter(term for _, term in positions)  # each word's matches in the whole text
    # A match's weight is 1 / its word's total, summed exactly: over a common denominator.
    denominator = math.prod(set(total.values()))
    weight = {term: denominator // count for term, count in total.items()}
    ends = [at + len(term) for at, term in positions]
    by_end = sorted(range(len(positions)), key=ends.__getitem__)
    entered, left = [False] * len(positions), [False] * len(positions)
    inside: Counter[str] = Counter()  # the words of the matches inside the window
    weighed = entering = leaving = 0
    best: tuple[int, int] = (-1, 0)
    best_start = 0
    for start, _ in positions:  # a window from a quarter of `size` before each match
        low, high = max(0, start - size // 4), start + size * 3 // 4
        while entering < len(by_end) and ends[by_end[entering]] <= high:  # ends in it
            match = by_end[entering]
            entered[match], entering = True, entering + 1
            if not left[match]:
                inside[positions[match][1]] += 1
                weighed += weight[positions[match][1]]
        while leaving < len(positions) and positions[leaving][0] < low:  # starts before it
            left[leaving], leaving = True, leaving + 1
            if entered[leaving - 1]:
                inside[positions[leaving - 1][1]] -= 1
                weighed -= weight[positions[leaving - 1][1]]
        # the most of the words, then the most of each word's own mentions in the text:
        # where its rarer words gather (a test run's failures, not its every "test")
        score = (sum(1 for count in inside.values() if count), weighed)
        if score > best:
            best, best_start = score, low
    end = min(len(text), best_start + size)
    start = best_start
    line_start = text.rfind("\n", 0, start) + 1
    if start - line_start < size // 8:
        start = line_start
    line_end = text.find("\n", end)
    if line_end != -1 and line_end - start <= size + size // 8:
        end = line_end
    return start, end


def _cut(text: str, start: int, end: int) -> str:
    return ("..." if start > 0 else "") + text[start:end] + ("..." if end < len(text) else "")


def _read_entry(history: Sequence[Recallable], entry_id: str, offset: Any) -> ToolResult:
    """The entry whole, a page at a time (whole lines, at most PAGE_CHARS, from line
    `offset`): every piece of it (an answer and its calls)."""
    pieces = [item for item in history if item.entry_id == entry_id]
    if not pieces:
        raise ToolError(f"No entry {entry_id!r} in this session's history.")
    first = pieces[0]
    text = (
        first.text if len(pieces) == 1
        else "\n\n".join(f"[{item.what}]\n{item.text}" for item in pieces)
    )
    lines = text.split("\n")
    start = offset if isinstance(offset, int) and not isinstance(offset, bool) else 1
    if not 1 <= start <= len(lines):
        raise ToolError(f"offset must be a line between 1 and {len(lines)}")
    end, size = start, 0
    while end <= len(lines) and (end == start or size + len(lines[end - 1]) < PAGE_CHARS):
        size += len(lines[end - 1]) + 1
        end += 1
    shown = "\n".join(lines[start - 1 : end - 1])
    if len(shown) > PAGE_CHARS:  # one line longer than a page
        shown = shown[:PAGE_CHARS] + "..."
    more = (
        f"; recall with entry {entry_id!r} and offset {end} for the rest"
        if end <= len(lines) else ""
    )
    return ToolResult.of_text(
        f"--- entry {entry_id}: {first.what}, turn {first.turn}, lines {start}-{end - 1} of "
        f"{len(lines)}{more} ---\n{shown}"
    )


# --- the history, from the ledger -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Call:
    name: str
    shown: str
    said: str  # the text of the answer that made the call
    command: str  # a command's (its `command` argument), else ""


def recallable(entries: Iterable[Entry]) -> list[Recallable]:
    """What recall searches of a branch's entries, in order: each message's text, with what it
    was and the turn (the user's prompts counted from 1) it came in."""
    out: list[Recallable] = []
    calls: dict[str, _Call] = {}
    turn = 0
    prompt = ""
    for entry in entries:
        if not isinstance(entry, MessageEntry):
            continue
        message = entry.message
        if is_prompt(message):
            turn += 1
            prompt = _texts(message.content)
        for source, what, text, said, command in _pieces(message, calls):
            around = f"{prompt}\n{said}" if said is not None else ""
            out.append(Recallable(entry.id, max(turn, 1), what, text, source, around, command))
    return out


def _pieces(
    message: Any, calls: dict[str, _Call]
) -> Iterable[tuple[str, str, str, str | None, str]]:
    """(source, what, text, the words around it, the command) of each piece of `message`
    recall searches: for an answer, none but the turn's prompt; for a call or a result, the
    text of the answer that made the call too; None for a prompt's own text. The command:
    of a command's result, else ""."""
    if isinstance(message, UserMessage):
        text = _texts(message.content)
        if message.note is None:
            yield "prompts", "the user's prompt", text, None, ""
        else:
            yield "results", "a note to you", text, None, ""
    elif isinstance(message, AssistantMessage):
        text = _texts(message.content)
        searching = any(
            isinstance(part, ToolCall) and part.name == SPEC.name for part in message.content
        )
        if text.strip() and not searching:  # "let me look that up" is not what it found
            yield "answers", "your answer", text, "", ""
        for part in message.content:
            if isinstance(part, ToolCall):
                shown = _call_shown(part)
                command = part.arguments.get("command")
                command = command if isinstance(command, str) else ""
                calls[part.id] = _Call(part.name, shown, text, command)
                if part.name != SPEC.name:  # a search is not what it searched for
                    what = f"your {part.name} call ({shown[:80]})"
                    yield "answers", what, part.strings(), text, ""
    elif isinstance(message, ToolResultMessage):
        call = calls.get(message.tool_call_id)
        if message.tool_name == SPEC.name:
            return
        named = f"{call.name} result ({call.shown[:80]})" if call else f"{message.tool_name} result"
        what = ("error of " if message.is_error else "") + named
        # What the result was for: the answer that made the call, and the call itself (a
        # command's output seldom names the command; "error_report.py's output" should find it).
        said, command = (f"{call.said}\n{call.shown}", call.command) if call else ("", "")
        yield "results", what, _texts(message.content), said, command


def _texts(content: Iterable[Any]) -> str:
    return "\n".join(part.text for part in content if isinstance(part, TextContent))


def _call_shown(call: ToolCall) -> str:
    arguments = call.arguments
    for key in ("command", "path", "pattern", "query", "text"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value
    return ", ".join(f"{k}={v!r}" for k, v in arguments.items())
