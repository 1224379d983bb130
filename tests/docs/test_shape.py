"""The product's shape: no function longer than about a screen (100 lines), so that each
feature stays one small function or file. The simulator (agent_server/sim/) is its own domain
and left out here."""

from __future__ import annotations

import ast
from pathlib import Path

PRODUCT = Path(__file__).resolve().parents[2] / "agent_server"
MAX_LINES = 100


def long_functions(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        if "sim" in path.relative_to(root).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_LINES:
                    out.append(f"{path.relative_to(root)}:{node.lineno} {node.name}: {lines}")
    return out


def test_no_function_is_longer_than_a_screen() -> None:
    assert long_functions(PRODUCT) == []


def test_a_long_function_is_found(tmp_path: Path) -> None:
    body = "\n".join(f"    x{n} = {n}" for n in range(MAX_LINES))
    (tmp_path / "long.py").write_text(f"def long() -> None:\n{body}\n")
    assert long_functions(tmp_path) == [f"long.py:1 long: {MAX_LINES + 1}"]


# No class over about 30 methods or 600 lines (issue 46). A class over it would be listed here
# with its size, to be split along its seams; until then it may not grow, and no other class may
# join it. None is over it now.
MAX_METHODS, MAX_CLASS_LINES = 30, 600
OVERSIZED: dict[str, tuple[int, int]] = {}  # name: (methods, lines) when it was listed


def class_sizes(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        if "sim" in path.relative_to(root).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                methods = sum(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                              for n in node.body)
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                out[f"{path.relative_to(root).as_posix()}:{node.name}"] = (methods, lines)
    return out


def oversized(
    sizes: dict[str, tuple[int, int]], known_sizes: dict[str, tuple[int, int]] = OVERSIZED
) -> list[str]:
    """Classes over the bounds that are not known to be, and known ones that grew."""
    out = []
    for name, (methods, lines) in sizes.items():
        known = known_sizes.get(name)
        if known is None and (methods > MAX_METHODS or lines > MAX_CLASS_LINES):
            out.append(f"{name}: {methods} methods, {lines} lines")
        elif known is not None and (methods > known[0] or lines > known[1]):
            out.append(f"{name} grew: {methods} methods, {lines} lines (was {known})")
    return out


def test_no_class_holds_too_much_and_none_too_big_grows() -> None:
    assert oversized(class_sizes(PRODUCT)) == []


def test_a_class_too_big_or_growing_is_found(tmp_path: Path) -> None:
    methods = "\n".join(f"    def m{n}(self) -> None: ..." for n in range(MAX_METHODS + 1))
    (tmp_path / "big.py").write_text(f"class Big:\n{methods}\n")
    assert oversized(class_sizes(tmp_path)) == [f"big.py:Big: {MAX_METHODS + 1} methods, "
                                                f"{MAX_METHODS + 2} lines"]
    known = {"big.py:Big": (MAX_METHODS + 1, MAX_METHODS + 2)}
    assert oversized(class_sizes(tmp_path), known) == []
    (tmp_path / "big.py").write_text(f"class Big:\n{methods}\n    def more(self) -> None: ...\n")
    assert oversized(class_sizes(tmp_path), known) == [
        f"big.py:Big grew: {MAX_METHODS + 2} methods, {MAX_METHODS + 3} lines "
        f"(was {known['big.py:Big']})"
    ]
