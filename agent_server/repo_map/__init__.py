"""The repository map: the definitions that matter most in a tree, fitted to a token budget.

A port of Aider's repository map (`aider/repomap.py`, https://aider.chat/docs/repomap.html):
tree-sitter tags (`tags.py`), PageRank over the files and the names they share, personalised
by the files in the chat and the names mentioned (`ranking.py`), and the longest prefix of the
ranking whose rendering fits the budget, found by binary search on the number of tags
(`RepoMap.render`, Aider's `get_ranked_tags_map_uncached`). Each file's definitions are shown
in their scopes by grep-ast's `TreeContext`, as Aider shows them:

```
sqlparse/formatter.py:
⋮
│def validate_options(options):
⋮
│def build_filter_stack(stack, options):
```

The packages it needs are the `repomap` extra (`pip install 'agent-server[repomap]'`);
`available()` says whether they are installed. Nothing here imports the rest of the product:
the repo_map tool (agent/tools/repo_map.py) and the benchmarks' Aider baseline
(benchmarks/strategies.py) both build on `RepoMap`.
"""

from __future__ import annotations

import importlib.util
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agent_server.repo_map.ranking import Graph, Ranked, ranked_key
from agent_server.repo_map.tags import FileTags, ReadFile, Tag, TagCache, language_of

if TYPE_CHECKING:
    from grep_ast import TreeContext

REQUIRED_PACKAGES = ("tree_sitter", "tree_sitter_language_pack", "grep_ast")
INSTALL_HINT = "pip install 'agent-server[repomap]'"
OK_ERROR = 0.15  # Aider stops searching once a map is within 15% of the budget
MAX_LINE = 100  # Aider cuts every line of the map there (minified code, say)
# The lines of the files whose scopes stay parsed (grep-ast's TreeContext holds about 3 kB a
# line: 26 files of Django's took 80 MB), and the maps kept by what they were asked with.
CONTEXT_LINES_KEPT = 5_000
MAPS_KEPT = 8


def available() -> bool:
    """Whether the packages of the `repomap` extra are installed."""
    return all(importlib.util.find_spec(name) is not None for name in REQUIRED_PACKAGES)


def is_source(path: str) -> bool:
    """Whether the map can read definitions from the file (its language is known)."""
    return language_of(path) is not None


class RepoMap:
    """The map of one tree. It keeps what it read (tags, scopes) by file and the graph they
    make, so a map asked for again after a few edits parses only the files that changed and
    changes the graph only there. Safe to share between threads."""

    def __init__(
        self, root: Path, count_tokens: Callable[[str], int], read: ReadFile = Path.read_bytes
    ) -> None:
        self.root = root
        self.count_tokens = count_tokens
        self._read = read
        self._tags = TagCache(read)
        self._contexts: OrderedDict[str, tuple[tuple[int, int], TreeContext]] = OrderedDict()
        self._graph = Graph()
        self._maps: OrderedDict[tuple[object, ...], str] = OrderedDict()
        self._lock = threading.Lock()
        self._ranking = threading.Lock()

    def tags(self, path: str) -> FileTags:
        return self._tags.tags(self.root, path)

    def render(
        self,
        chat_files: Collection[str],
        other_files: Collection[str],
        max_tokens: int,
        mentioned_files: Collection[str] = (),
        mentioned_idents: Collection[str] = (),
        *,
        hide_chat_files: bool = True,
        line_numbers: bool = False,
        strict: bool = False,
        first: Collection[str] = (),
    ) -> str:
        """The map: as many of the ranked definitions as fit `max_tokens`, "" when nothing
        does. `hide_chat_files` leaves the files in the chat out, as Aider does (their text is
        in the chat); `line_numbers` numbers each line shown; `strict` never goes over the
        budget (Aider takes a map up to 15% over it); the definitions of the names in `first`
        come before the ranking (a mention only weighs on the edges of names some file uses,
        so in Aider's map a name nobody calls stays where it is however often it is named)."""
        # (Aider puts its "important files" (aider/special.py) first when the ranking does not
        # list them; it always lists every file, so they never move: left out here.)
        with self._ranking:
            self._graph.sync(self.tags, set(chat_files) | set(other_files))
            ranked = self._graph.rank(chat_files, other_files, mentioned_files,
                                      mentioned_idents, skip_chat_definitions=hide_chat_files)
            key = (self._graph.version, ranked_key(chat_files, other_files, mentioned_files,
                                                   mentioned_idents, hide_chat_files),
                   max_tokens, line_numbers, strict, tuple(sorted(first)))
            found = self._maps.get(key)
        if found is not None:
            return found
        if first:
            pinned = [item for item in ranked if isinstance(item, Tag) and item.name in first]
            pinned_set = set(pinned)
            ranked = [*pinned, *(item for item in ranked if item not in pinned_set)]
        hidden = set(chat_files) if hide_chat_files else set()
        text = self._fit(ranked, hidden, max_tokens, line_numbers, strict)
        with self._ranking:
            self._maps[key] = text
            while len(self._maps) > MAPS_KEPT:
                self._maps.popitem(last=False)
        self._trim_contexts()
        return text

    def _trim_contexts(self) -> None:
        """Drop the scopes least recently used past CONTEXT_LINES_KEPT (after a map: the
        search for the longest map that fits parses each of its files once)."""
        with self._lock:
            kept = sum(len(held.lines) for _, held in self._contexts.values())
            while kept > CONTEXT_LINES_KEPT and self._contexts:
                _, (_, dropped) = self._contexts.popitem(last=False)
                kept -= len(dropped.lines)

    def _fit(self, ranked: Sequence[Ranked], hidden: set[str], max_tokens: int,
             line_numbers: bool, strict: bool) -> str:
        """Aider's binary search on the number of ranked items shown."""
        lower, upper = 0, len(ranked)
        middle = min(max_tokens // 25, len(ranked))
        best, best_tokens = "", 0
        while lower <= upper:
            tree = self._tree(ranked[:middle], hidden, line_numbers)
            tokens = self.count_tokens(tree) if tree else 0
            error = abs(tokens - max_tokens) / max_tokens if max_tokens > 0 else 1.0
            close = error < OK_ERROR and (tokens <= max_tokens or not strict)
            if (tokens <= max_tokens and tokens > best_tokens) or close:
                best, best_tokens = tree, tokens
                if close:
                    break
            if tokens < max_tokens:
                lower = middle + 1
            else:
                upper = middle - 1
            middle = (lower + upper) // 2
        return best

    def _tree(self, items: Sequence[Ranked], hidden: set[str], line_numbers: bool) -> str:
        """Aider's `to_tree`: each file once, in path order, with its definitions' lines in
        their scopes, or its name alone."""
        by_file: dict[str, list[int] | None] = {}
        for item in items:
            path = item.path if isinstance(item, Tag) else item
            if path in hidden:
                continue
            lines = by_file.setdefault(path, None if not isinstance(item, Tag) else [])
            if isinstance(item, Tag):
                if lines is None:
                    lines = by_file[path] = []
                lines.append(item.line)
        out: list[str] = []
        for path in sorted(by_file):
            lines = by_file[path]
            if lines is None:
                out.append(f"\n{path}\n")
            else:
                out.append(f"\n{path}:\n{self._scoped(path, lines, line_numbers)}")
        if not out:
            return ""
        return "\n".join(line[:MAX_LINE] for line in "".join(out).splitlines()) + "\n"

    def _scoped(self, path: str, lines: list[int], line_numbers: bool) -> str:
        """The lines of interest of `path` in their scopes (grep-ast's TreeContext, as
        Aider's `render_tree` sets it up)."""
        context = self._context(path, line_numbers)
        if context is None:
            return ""
        with self._lock:
            context.lines_of_interest = set()
            context.add_lines_of_interest(lines)
            context.add_context()
            return str(context.format())

    def _context(self, path: str, line_numbers: bool) -> TreeContext | None:
        from grep_ast import TreeContext

        file = self.root / path
        try:
            stat = file.stat()
            key = (stat.st_mtime_ns, stat.st_size)
            cache_key = f"{int(line_numbers)}:{path}"
            with self._lock:
                cached = self._contexts.get(cache_key)
                if cached is not None:
                    self._contexts.move_to_end(cache_key)
            if cached is not None and cached[0] == key:
                return cached[1]
            code = self._read(file).decode("utf-8", errors="replace")
        except OSError:
            return None
        if not code.endswith("\n"):
            code += "\n"
        try:
            context = TreeContext(
                path, code, color=False, line_number=line_numbers, child_context=False,
                last_line=False, margin=0, mark_lois=False, loi_pad=0,
                show_top_of_file_parent_scope=False,
            )
        except ValueError:  # a language grep-ast cannot parse after all
            return None
        with self._lock:
            self._contexts[cache_key] = (key, context)
        return context
