"""One home for each fact: a value set or a protocol method name written a second time fails.

- In the product (agent_server/, the simulator aside: it imports nothing from the product, so
  its copies of wire names are its own), a set of two or more names (a `Literal[...]`, or a
  tuple, list or set of string constants) is written in one place; everywhere else derives it
  (`get_args`, an import).
- A protocol method name is written only in agent_server/protocol.py.
- The extension's own TypeScript (client-vscode/src, the generated files aside) writes no
  value set of the protocol or the provider table again, and no method name: it imports them
  from the generated protocol/types.ts and protocol/providers.ts.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Literal, get_args, get_origin

from agent_server import protocol
from agent_server.llm.providers import PROVIDERS
from agent_server.lsp.typescript import GENERATED

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ROOT / "agent_server"
EXTENSION = ROOT / "client-vscode" / "src"
GENERATED_TS = {ROOT / name for name in GENERATED if name.endswith(".ts")}
_NAME = re.compile(r"^[A-Za-z][\w./-]*$")  # a value's name; punctuation sets are not value sets


def product_files() -> list[Path]:
    return sorted(p for p in PRODUCT.rglob("*.py") if "sim" not in p.relative_to(PRODUCT).parts)


def value_sets(path: Path) -> Iterable[tuple[frozenset[str], int]]:
    """Every set of two or more names written in `path`, with its line."""
    inner: set[int] = set()  # the tuple inside a Literal[...] is the same set
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        elements: list[ast.expr] | None = None
        if isinstance(node, ast.Subscript) and _is_literal(node.value):
            elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            inner.add(id(node.slice))
        elif isinstance(node, ast.Tuple | ast.List | ast.Set) and id(node) not in inner:
            elements = node.elts
        names = [e.value for e in elements or () if isinstance(e, ast.Constant)]
        if (
            elements is not None
            and len(names) == len(elements) >= 2
            and all(isinstance(n, str) and _NAME.match(n) for n in names)
        ):
            yield frozenset(names), node.lineno


def _where(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def _is_literal(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "Literal") or (
        isinstance(node, ast.Attribute) and node.attr == "Literal"
    )


def written_twice(files: Iterable[Path]) -> dict[frozenset[str], list[str]]:
    places: dict[frozenset[str], set[str]] = defaultdict(set)
    for path in files:
        for names, line in value_sets(path):
            places[names].add(f"{_where(path)}:{line}")
    return {names: sorted(where) for names, where in places.items() if len(where) > 1}


def test_no_value_set_is_written_twice() -> None:
    twice = written_twice(product_files())
    assert not twice, "\n".join(f"{sorted(k)} at {', '.join(v)}" for k, v in twice.items())


def test_a_value_set_written_twice_is_found(tmp_path: Path) -> None:
    (tmp_path / "one.py").write_text('Mode = Literal["ask", "allowAll"]\n')
    (tmp_path / "two.py").write_text('MODES = ("allowAll", "ask")\nSEP = (",", ":")\n')
    (tmp_path / "three.py").write_text('SEP = (",", ":")\n')
    files = sorted(tmp_path.glob("*.py"))
    assert list(written_twice(files)) == [frozenset({"ask", "allowAll"})]


def method_names_outside_the_protocol(files: Iterable[Path]) -> list[str]:
    names = {method.name for method in protocol.METHODS}
    found = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)
        }
        found += [
            f"{_where(path)}:{node.lineno}: {node.value}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and node.value in names
            and id(node) not in docstrings
        ]
    return found


def test_method_names_are_written_only_in_the_protocol() -> None:
    files = [p for p in product_files() if p != PRODUCT / "protocol.py"]
    assert method_names_outside_the_protocol(files) == []


def protocol_value_sets() -> dict[frozenset[str], str]:
    """The value sets the generated TypeScript exports, by their Python home."""
    out = {frozenset(PROVIDERS): "llm/providers.py PROVIDERS"}
    for name, value in vars(protocol).items():
        if get_origin(value) is Literal and len(get_args(value)) >= 2:
            out[frozenset(get_args(value))] = f"protocol.{name}"
    return out


_TS_ARRAY = re.compile(r"\[\s*('[\w./-]+'(?:\s*,\s*'[\w./-]+')+)\s*,?\s*\]")
_TS_UNION = re.compile(r"'[\w./-]+'(?:\s*\|\s*'[\w./-]+')+")
_TS_STRING = re.compile(r"'([^'\\\n]*)'")


def typescript_copies(files: Iterable[Path]) -> list[str]:
    """Value sets of the protocol and method names written again in TypeScript."""
    known = protocol_value_sets()
    methods = {method.name for method in protocol.METHODS}
    found = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        where = _where(path)
        for match in [*_TS_ARRAY.finditer(text), *_TS_UNION.finditer(text)]:
            names = frozenset(_TS_STRING.findall(match.group()))
            if names in known:
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{where}:{line}: {sorted(names)} is {known[names]}")
        for match in _TS_STRING.finditer(text):
            if match.group(1) in methods:
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{where}:{line}: the method name {match.group(1)}")
    return found


def test_the_extension_imports_the_protocol_instead_of_writing_it_again() -> None:
    files = [p for p in sorted(EXTENSION.rglob("*.ts")) if p not in GENERATED_TS]
    assert typescript_copies(files) == []


def test_a_typescript_copy_is_found(tmp_path: Path) -> None:
    copy = tmp_path / "copy.ts"
    copy.write_text(
        "const modes = ['ask', 'allowReads', 'allowAll'] as const;\n"
        "type Level = 'info' | 'warning' | 'error';\n"
        "const other = ['ask', 'later'];\n"
        "send('agent/turn');\n"
    )
    found = typescript_copies([copy])
    assert [line.split(": ")[0].rsplit(":", 1)[1] for line in found] == ["1", "2", "4"]
