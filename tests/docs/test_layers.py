"""DESIGN.md's layers, checked against the code: each layer imports only the layers below it
(the order of the tree under "## Layers"), the top-level modules outside the tree import no
layer, the two editor front ends never import each other, and each official SDK is imported
only in its one home."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ROOT / "agent_server"
DESIGN = ROOT / "docs" / "DESIGN.md"

# Each SDK and the only places (paths under agent_server/, or their starts) that import it.
SDK_HOMES = {
    "anthropic": ("llm/",),
    "openai": ("llm/",),
    "pygls": ("lsp/", "console/demo.py"),
    "lsprotocol": ("lsp/", "console/demo.py"),
    "acp": ("acp/",),
    "mcp": ("agent/mcp/",),
}
FRONT_ENDS = ("lsp", "acp")


def layer_order(design: str) -> list[str]:
    """The layers of DESIGN.md's tree, bottom up: `name/` or `name.py` at the tree's indent."""
    section = design.split("## Layers", 1)[1]
    tree = section.split("```", 2)[1]
    names = re.findall(r"^  (\w+)(?:/|\.py)\s", tree, flags=re.MULTILINE)
    return [name for name in names if name != "cli"] + ["cli"]


def imports(path: Path) -> list[str]:
    """The modules `path` imports, lazily (inside functions) or not; TYPE_CHECKING ones too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return found


def top(path: Path, root: Path) -> str:
    """The layer or top-level module `path` belongs to."""
    parts = path.relative_to(root).parts
    return parts[0] if len(parts) > 1 else path.stem


def upward_imports(root: Path, order: list[str]) -> list[str]:
    """Every import of a layer that is not below the importer's (a top-level module outside
    the tree counts as below every layer, and may import no layer)."""
    rank = {name: n for n, name in enumerate(order)}
    out = []
    for path in sorted(root.rglob("*.py")):
        mine = top(path, root)
        if mine in ("__main__", "__init__"):
            continue
        for module in imports(path):
            parts = module.split(".")
            if parts[0] != root.name or len(parts) < 2 or parts[1] == mine:
                continue
            theirs = parts[1]
            if theirs not in rank:
                continue  # a top-level module outside the tree: below every layer
            if mine not in rank or rank[theirs] >= rank[mine]:
                out.append(f"{path.relative_to(root)} imports {module}")
    return out


def crossed_front_ends(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        mine = top(path, root)
        if mine not in FRONT_ENDS:
            continue
        for module in imports(path):
            parts = module.split(".")
            crossing = len(parts) > 1 and parts[0] == root.name and parts[1] in FRONT_ENDS
            if crossing and parts[1] != mine:
                out.append(f"{path.relative_to(root)} imports {module}")
    return out


def sdks_outside_their_home(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        for module in imports(path):
            homes = SDK_HOMES.get(module.split(".")[0])
            if homes is not None and not any(where.startswith(home) for home in homes):
                out.append(f"{where} imports {module}")
    return out


def test_the_tree_names_every_layer_of_the_package() -> None:
    order = layer_order(DESIGN.read_text(encoding="utf-8"))
    packages = {path.name for path in PRODUCT.iterdir() if (path / "__init__.py").exists()}
    assert packages <= set(order), packages - set(order)
    assert order.index("llm") < order.index("session") < order.index("agent") < order.index("lsp")


def test_each_layer_imports_only_the_layers_below_it() -> None:
    order = layer_order(DESIGN.read_text(encoding="utf-8"))
    assert upward_imports(PRODUCT, order) == []


def test_the_editor_front_ends_never_import_each_other() -> None:
    assert crossed_front_ends(PRODUCT) == []


def test_each_sdk_is_imported_only_in_its_home() -> None:
    assert sdks_outside_their_home(PRODUCT) == []


def test_an_upward_import_a_crossing_and_a_stray_sdk_are_found(tmp_path: Path) -> None:
    root = tmp_path / "agent_server"
    for name in ("llm", "agent", "lsp", "acp"):
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text("")
    (root / "errors.py").write_text("")
    (root / "llm" / "bad.py").write_text(
        "from agent_server.errors import X\n"  # below every layer: fine
        "def later():\n    from agent_server.agent import session\n"  # lazily, still upward
    )
    (root / "acp" / "server.py").write_text("import agent_server.lsp.wire\nimport pygls\n")
    (root / "agent" / "ok.py").write_text("from agent_server.llm import messages\n")
    order = ["llm", "agent", "lsp", "acp", "cli"]
    assert upward_imports(root, order) == ["llm/bad.py imports agent_server.agent"]
    assert crossed_front_ends(root) == ["acp/server.py imports agent_server.lsp.wire"]
    assert sdks_outside_their_home(root) == ["acp/server.py imports pygls"]
