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
