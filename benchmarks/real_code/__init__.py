"""The real-code suite: sessions on code no one on this team wrote, fetched from PyPI at pinned
versions (`sources.py`), each with planted rules, facts and a failed approach (`script.py`):

- `tabulate_bugfix`: a library bugfix in tabulate 0.9.0 (one large module);
- `sqlparse_feature`: a feature across several modules of sqlparse 0.5.3;
- `more_itertools_debug`: a long debugging session over test output and a log, in
  more-itertools 10.7.0.

`workloads()` prepares each (the sdist extracted, the planted change applied, in a cache
directory) and returns what a benchmark runs: the scenario and a way to write a fresh copy of
the workspace.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_server.sim.scenario import Scenario
from benchmarks.real_code import more_itertools_debug, sqlparse_feature, tabulate_bugfix
from benchmarks.real_code.script import Script
from benchmarks.real_code.sources import Source, cache_dir, extract


@dataclass(frozen=True, slots=True)
class Recipe:
    name: str
    kind: str  # what the session does
    source: Source
    plant: Callable[[Path], None]
    script: Callable[[Path], Script]


RECIPES: tuple[Recipe, ...] = (
    Recipe("tabulate-bugfix", "library bugfix", tabulate_bugfix.SOURCE, tabulate_bugfix.plant,
           tabulate_bugfix.script),
    Recipe("sqlparse-feature", "feature across several files", sqlparse_feature.SOURCE,
           sqlparse_feature.plant, sqlparse_feature.script),
    Recipe("more-itertools-debug", "debugging over test output and a log",
           more_itertools_debug.SOURCE, more_itertools_debug.plant,
           more_itertools_debug.script),
)


@dataclass(frozen=True, slots=True)
class RealWorkload:
    """A prepared session: its scenario, and the tree each run starts from."""

    name: str
    kind: str
    source: Source
    scenario: Scenario
    tree: Path

    def write(self, dest: Path) -> None:
        """A fresh copy of the workspace at `dest`, with `.venv` linked to this Python's
        environment (pytest is there), as a repository's own virtual environment."""
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(self.tree, dest, symlinks=True)
        (dest / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)


# What the scripted commands run with, for every client alike: no bytecode written into the
# workspace, no pytest plugins of this checkout loaded into the library's test runs.
ENVIRONMENT = {"PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def prepare(recipe: Recipe, cache: Path | None = None) -> RealWorkload:
    cache = cache or cache_dir()
    # A tree of this process's own: test workers (pytest -n) prepare the same recipe at once,
    # and one's rmtree must not pull the tree from under another. Removed at exit, and the
    # trees of processes gone without running it (xdist's workers) when the next one starts.
    trees = cache / "trees"
    trees.mkdir(parents=True, exist_ok=True)
    _remove_orphans(trees)
    tree = Path(tempfile.mkdtemp(prefix=f"{recipe.name}.{os.getpid()}.", dir=trees))
    atexit.register(functools.partial(shutil.rmtree, tree, ignore_errors=True))
    extract(recipe.source, tree, cache)
    recipe.plant(tree)
    scenario = recipe.script(tree).scenario()
    return RealWorkload(recipe.name, recipe.kind, recipe.source, scenario, tree)


def _remove_orphans(trees: Path) -> None:
    for tree in trees.iterdir():
        _name, _, rest = tree.name.partition(".")
        pid = rest.partition(".")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(tree, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def workloads(names: tuple[str, ...] | None = None, cache: Path | None = None
              ) -> list[RealWorkload]:
    chosen = [r for r in RECIPES if names is None or r.name in names]
    return [prepare(recipe, cache) for recipe in chosen]
