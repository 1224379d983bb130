"""The definitions and references of a source file, read with tree-sitter.

As Aider's repository map does (`aider/repomap.py`, `RepoMap.get_tags_raw`): a file's language
comes from its name (grep-ast's table, `filename_to_lang`), its syntax tree from the grammar of
tree-sitter's language pack, and its tags from a query: a capture named
`name.definition.*` is a definition, `name.reference.*` a reference.

Python has its query here (the classes, functions and module-level constants a file defines,
the names it calls: tree-sitter-python's tags query as Aider uses it). Every other language of
the pack is read by one rule instead of a query of its own: a node whose type names a
definition (`function_definition`, `class_declaration`, `struct_item`, `type_spec`,
`method`, ...) defines the name in its `name` field (or at the end of its `declarator` chain,
as C declares functions), and every other identifier is a reference. That is what Aider falls
back to for a language whose query has no references (every name token, from pygments).

Tags are cached per file by modification time and size, as `FileTags`: the definitions with
their lines, the references as names and counts (the map needs no more of them, and a tree of
11,000 files holds millions), each name's string shared. The map of an unchanged tree is not
parsed twice.
"""

from __future__ import annotations

import re
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Parser, Query

TagKind = Literal["def", "ref"]

# tree-sitter-python's tags query as aider/queries/tree-sitter-language-pack/python-tags.scm
# has it: classes and functions defined, names called, and module-level constants, a pattern
# that the pack's Python grammar never matches (it puts no expression_statement around a
# module-level assignment): in Aider's map as here, constants are not definitions.
PYTHON_TAGS = """
(module (expression_statement (assignment left: (identifier) @name.definition.constant)))
(class_definition name: (identifier) @name.definition.class)
(function_definition name: (identifier) @name.definition.function)
(call function: [(identifier) @name.reference.call
                 (attribute attribute: (identifier) @name.reference.call)])
"""
QUERIES: dict[str, str] = {"python": PYTHON_TAGS}

# Words of a node type that make it a definition, and words that make it something else.
_DEFINING = frozenset((
    "class", "function", "method", "struct", "enum", "interface", "trait", "module", "mod",
    "namespace", "type", "union", "macro", "protocol", "record", "object", "impl",
    "constructor", "signature", "def", "defn", "extension", "actor",
))
_NOT_DEFINING = frozenset((
    "call", "invocation", "parameter", "parameters", "argument", "arguments", "expression",
    "reference", "identifier", "import", "use", "literal", "pattern", "arguments", "list",
))
# Languages of the pack that hold data, markup or configuration rather than definitions: their
# files are listed by name only (Aider has no tags query for them either).
NOT_CODE = frozenset((
    "beancount", "bibtex", "csv", "css", "dockerfile", "dtd", "gitattributes", "gitcommit",
    "gitignore", "gomod", "gosum", "html", "json", "jsdoc", "kconfig", "latex", "linkerscript",
    "luadoc", "luap", "make", "markdown", "org", "pem", "pgn", "po", "printf", "properties",
    "psv", "pymanifest", "qmldir", "readline", "regex", "requirements", "rst", "scss", "toml",
    "tsv", "typst", "udev", "xcompose", "xml", "yaml",
))
_NAME = re.compile(r"[A-Za-z_$][\w$]*[!?]?")
MAX_FILE_BYTES = 1_000_000  # larger files (generated, minified) are left out of the map


@dataclass(frozen=True, slots=True)
class Tag:
    path: str  # relative to the workspace root, POSIX
    line: int  # 0-based, as tree-sitter counts
    name: str
    kind: TagKind


@dataclass(frozen=True, slots=True)
class FileTags:
    """What one file defines (each definition once, by line) and references (how often)."""

    definitions: tuple[Tag, ...]
    referenced: tuple[str, ...]  # sorted (two tuples take a fifth of a dict's memory)
    counts: tuple[int, ...]  # how often each is referenced

    @property
    def references(self) -> Mapping[str, int]:
        return dict(zip(self.referenced, self.counts, strict=True))

    @classmethod
    def of(cls, tags: Iterable[Tag]) -> FileTags:
        definitions: set[Tag] = set()
        references: Counter[str] = Counter()
        for tag in tags:
            if tag.kind == "def":
                definitions.add(Tag(tag.path, tag.line, sys.intern(tag.name), "def"))
            else:
                references[sys.intern(tag.name)] += 1
        names = sorted(references)
        return cls(tuple(sorted(definitions, key=lambda tag: (tag.line, tag.name))),
                   tuple(names), tuple(references[name] for name in names))


NO_TAGS = FileTags((), (), ())


def language_of(path: str) -> str | None:
    """The language pack's name for the file's programming language, from its name (grep-ast's
    table); None for a file of data, markup or configuration, or of no language known."""
    from grep_ast.parsers import filename_to_lang

    language = filename_to_lang(path)
    return language if isinstance(language, str) and language not in NOT_CODE else None


@lru_cache(maxsize=64)
def _grammar(language: str) -> tuple[Language, Parser] | None:
    from tree_sitter_language_pack import get_language, get_parser

    try:
        return get_language(language), get_parser(language)  # type: ignore[arg-type]
    except (LookupError, ValueError, RuntimeError, OSError):
        return None


# How a file's bytes are read: OSError when it cannot be (or must not be: the agent's tool
# refuses a link or a file with other hard links, swapped in after the files were listed).
ReadFile = Callable[[Path], bytes]


class TagCache:
    """Tags by file, kept while the file's modification time and size stay the same (the
    same FileTags object: `Graph.sync` skips a file whose tags it already has)."""

    def __init__(self, read: ReadFile = Path.read_bytes) -> None:
        self._tags: dict[Path, tuple[tuple[int, int], FileTags]] = {}
        self._lock = threading.Lock()
        self._read = read

    def tags(self, root: Path, relative: str) -> FileTags:
        path = root / relative
        try:
            stat = path.stat()
        except OSError:
            with self._lock:
                self._tags.pop(path, None)
            return NO_TAGS
        key = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            cached = self._tags.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        tags = (
            FileTags.of(read_tags(path, relative, self._read))
            if stat.st_size <= MAX_FILE_BYTES else NO_TAGS
        )
        with self._lock:
            self._tags[path] = (key, tags)
        return tags


def read_tags(path: Path, relative: str, read: ReadFile = Path.read_bytes) -> Iterator[Tag]:
    """The file's definitions and references (none when its language is not known)."""
    language = language_of(relative)
    grammar = _grammar(language) if language else None
    if grammar is None or language is None:
        return
    try:
        source = read(path)
    except OSError:
        return
    tree = grammar[1].parse(source)
    query = QUERIES.get(language)
    if query is not None:
        yield from _query_tags(grammar[0], query, tree.root_node, relative)
    else:
        yield from _generic_tags(tree.root_node, relative)


def _query_tags(language: Language, query: str, root: Node, relative: str) -> Iterator[Tag]:
    from tree_sitter import QueryCursor

    captures = QueryCursor(_query(language, query)).captures(root)
    for capture, nodes in sorted(captures.items()):
        if capture.startswith("name.definition."):
            kind: TagKind = "def"
        elif capture.startswith("name.reference."):
            kind = "ref"
        else:
            continue
        for node in sorted(nodes, key=lambda n: n.start_byte):
            name = _text(node)
            if name:
                yield Tag(relative, node.start_point[0], name, kind)


@lru_cache(maxsize=16)
def _query(language: Language, text: str) -> Query:
    from tree_sitter import Query

    return Query(language, text)


def _generic_tags(root: Node, relative: str) -> Iterator[Tag]:
    """Definitions by the type of their node, references by identifier (module docstring)."""
    names: set[tuple[int, int]] = set()
    stack = [root]
    found: list[Tag] = []
    leaves: list[Node] = []
    while stack:
        node = stack.pop()
        if node.is_named and _is_definition(node):
            name = _defined_name(node)
            if name is not None and (name.start_byte, name.end_byte) not in names:
                names.add((name.start_byte, name.end_byte))
                found.append(Tag(relative, name.start_point[0], _text(name), "def"))
        if node.child_count == 0:
            if node.is_named:
                leaves.append(node)
        else:
            stack.extend(reversed(node.children))
    for leaf in leaves:
        if (leaf.start_byte, leaf.end_byte) in names:
            continue
        if "identifier" in leaf.type or leaf.type in ("constant", "name", "word"):
            text = _text(leaf)
            if _NAME.fullmatch(text):
                found.append(Tag(relative, leaf.start_point[0], text, "ref"))
    yield from sorted(found, key=lambda tag: (tag.line, tag.kind, tag.name))


def _is_definition(node: Node) -> bool:
    words = set(node.type.split("_"))
    if not words & _DEFINING or words & _NOT_DEFINING:
        return False
    # `struct point *p` names a struct without defining it: a specifier defines with a body.
    return not node.type.endswith("_specifier") or node.child_by_field_name("body") is not None


def _defined_name(node: Node) -> Node | None:
    name = node.child_by_field_name("name")
    declarator = node.child_by_field_name("declarator")
    while name is None and declarator is not None:
        name = declarator.child_by_field_name("name")
        if name is None and declarator.child_by_field_name("declarator") is None:
            name = declarator
        declarator = declarator.child_by_field_name("declarator")
    if name is None or not _NAME.fullmatch(_text(name)):
        return None
    return name


def _text(node: Node) -> str:
    raw = node.text
    return raw.decode("utf-8", errors="replace") if raw is not None else ""
