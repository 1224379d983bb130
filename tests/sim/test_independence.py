"""The simulated model is a stand-in for the providers, not a part of the product it measures:
nothing under agent_server/sim imports the product. The one exception is the model table
(`agent_server.llm.models`: each model's window, output limit, minimum cacheable prefix and
prices), the providers' published facts that the product and the simulated providers both
read from one place."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import agent_server.sim

SIM = Path(agent_server.sim.__file__).parent
ALLOWED = {"agent_server.llm.models"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_module_of_the_simulator_imports_the_product() -> None:
    offending = {
        f"{path.name}: {name}"
        for path in sorted(SIM.glob("*.py"))
        for name in imported_modules(path)
        if name.startswith("agent_server") and not name.startswith("agent_server.sim")
        and name not in ALLOWED
    }
    assert not offending, offending


def loaded_by(modules: list[str]) -> set[str]:
    """The agent_server modules a fresh interpreter holds after importing `modules`."""
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('agent_server'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                          text=True)
    return set(json.loads(done.stdout))


def test_loading_the_whole_simulator_loads_nothing_of_the_product() -> None:
    modules = sorted(f"agent_server.sim.{path.stem}" for path in SIM.glob("*.py")
                     if path.stem != "__init__")
    allowed = loaded_by(sorted(ALLOWED))  # the model table and what it needs itself
    product = sorted(name for name in loaded_by(modules) - allowed
                     if not name.startswith("agent_server.sim"))
    assert product == []


def test_the_checks_above_would_see_an_import_of_the_product(tmp_path: Path) -> None:
    module = tmp_path / "tailored.py"
    module.write_text("from agent_server.context.summary_prompt import SUMMARY_PREFIX\n"
                      "import agent_server.agent.session\n")
    assert imported_modules(module) == {"agent_server.context.summary_prompt",
                                        "agent_server.agent.session"}
