"""The real-code suite: sessions on code no one on this team wrote, fetched from PyPI (and one
from npm) at pinned versions (`sources.py`), each with planted rules, facts and a failed
approach (`script.py`):

- `tabulate_bugfix`: a library bugfix in tabulate 0.9.0 (one large module);
- `sqlparse_feature`: a feature across several modules of sqlparse 0.5.3;
- `more_itertools_debug`: a long debugging session over test output and a log, in
  more-itertools 10.7.0;
- `pyflakes_report`: a user's bug report (pasted, long prompts) worked through in pyflakes
  3.2.0, written after the product's defaults were set, as a session none of them was tuned
  on;
- `markdown_regression`: a regression hunt in the `toc` extension of Python-Markdown 3.7 (a
  table of contents nested wrongly after an upgrade), written later still, as a second
  held-out session;
- `tomlkit_change`: a behaviour change a team asked for (where duplicate keys are reported),
  across code, tests and the changelog, with a long exploratory phase, in tomlkit 0.15.3;
  held out as well;
- `pyparsing_perf`: a performance regression investigated and fixed in pyparsing 3.2.3 (the
  packrat cache created and never consulted: a CI job that times out, a rule that takes
  seconds), over timing runs and a 68 KB profile; held out as well;
- `toolz_feature`: a function added across toolz 1.0.0's namespaces (`batched`, curried by
  hand, checked by a namespace test), written after every default was set; held out as well;
- `boltons_cache`: a cache that keeps deleted keys in boltons 26.2.0 (a user's report with a
  pasted service log, a workaround that fails without a failing call), written at stop 68;
  held out as well;
- `simplejson_escape`: emoji that do not survive a round trip through simplejson 4.3.0's pure
  Python encoder (a customer's report with the API's response, a rule about the C twin the
  fix would tempt one to touch), written at stop 68; held out as well;
- `click_envvar`: a dry run that ran for real because click 8.5.1 left a dash in a
  subcommand's environment variable prefix (an incident pasted with a shell transcript, a
  230 KB verbose suite run, a reproduction the assistant writes), written at stop 69; held
  out as well;
- `networkx_cutoff`: towns exactly at the cutoff dropped from a delivery zone by NetworkX
  3.6.1's Dijkstra search (a team's report with its drive-time table, a 2,500-line module
  read at length, no test of the library catching it), written at stop 69; held out as well;
- `isodate_offset`: a payroll export whose St. John's clock-ins isodate 0.7.2 reads an hour
  early (an offset's sign kept off its minutes: a team's report, their data file a rule
  forbids editing, experiments before any code is read), written at stop 71; held out as well;
- `docutils_deprecation`: a review before a deprecation in Docutils 0.23.1 (every call of
  `nodes.unescape()` read where it is, the 3,300-line parser module in pages, before its
  ignored `respect_whitespace` argument warns; the review finds a call site that passes it
  for the argument it meant), written at stop 71; held out as well;
- `semver_range`: a dependency bot that took breaking 0.x minors because semver 7.7.2, from
  npm, gave a caret on a full 0.x version a 1.x bound (a team's fork and the bot's night
  pasted, their `node:test` files run with Node's own runner, a 56 KB TAP run whose failures
  sit in its middle, a reproduction the assistant writes), the suite's first session on
  JavaScript, written at stop 72; held out as well;
- `rfc3986_dots`: a docs link checker whose links above a site's root lost the slash after
  the host in rfc3986 2.0.0 (`remove_dot_segments` put the root back only when nothing was
  left: a team's report with the night's log, a 330 KB verbose suite run, a reproduction the
  assistant writes), the suite's first whose fix breaks another test (the first fix strips
  every leading empty segment, and the test of a path with two leading slashes fails), the
  fix narrowed and its regression test moved at the user's correction, written at stop 73;
  held out as well.

`workloads()` prepares each (the sdist extracted, the planted change applied, in a cache
directory) and returns what a benchmark runs: the scenario and a way to write a fresh copy of
the workspace.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_server.sim.scenario import Scenario
from benchmarks.real_code import (
    boltons_cache,
    click_envvar,
    docutils_deprecation,
    isodate_offset,
    markdown_regression,
    more_itertools_debug,
    networkx_cutoff,
    pyflakes_report,
    pyparsing_perf,
    rfc3986_dots,
    semver_range,
    simplejson_escape,
    sqlparse_feature,
    tabulate_bugfix,
    tomlkit_change,
    toolz_feature,
)
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
    Recipe("pyflakes-report", "a pasted bug report, long prompts", pyflakes_report.SOURCE,
           pyflakes_report.plant, pyflakes_report.script),
    Recipe("markdown-regression", "a regression hunt in an extension",
           markdown_regression.SOURCE, markdown_regression.plant, markdown_regression.script),
    Recipe("tomlkit-change", "a team's behaviour change, long exploration",
           tomlkit_change.SOURCE, tomlkit_change.plant, tomlkit_change.script),
    Recipe("pyparsing-perf", "a performance regression, profiled and fixed",
           pyparsing_perf.SOURCE, pyparsing_perf.plant, pyparsing_perf.script),
    Recipe("toolz-feature", "a function added across a package's namespaces",
           toolz_feature.SOURCE, toolz_feature.plant, toolz_feature.script),
    Recipe("boltons-cache", "a user's report: a cache that keeps deleted keys",
           boltons_cache.SOURCE, boltons_cache.plant, boltons_cache.script),
    Recipe("simplejson-escape", "a customer's report: emoji that do not round-trip",
           simplejson_escape.SOURCE, simplejson_escape.plant, simplejson_escape.script),
    Recipe("click-envvar", "an incident: a dry run that ran for real", click_envvar.SOURCE,
           click_envvar.plant, click_envvar.script),
    Recipe("networkx-cutoff", "a team's report: towns at the edge of a zone",
           networkx_cutoff.SOURCE, networkx_cutoff.plant, networkx_cutoff.script),
    Recipe("isodate-offset", "a user's data file a parser reads wrong",
           isodate_offset.SOURCE, isodate_offset.plant, isodate_offset.script),
    Recipe("docutils-deprecation", "a review before a deprecation",
           docutils_deprecation.SOURCE, docutils_deprecation.plant,
           docutils_deprecation.script),
    Recipe("semver-range", "a bot's night: 0.x minors a caret let in", semver_range.SOURCE,
           semver_range.plant, semver_range.script),
    Recipe("rfc3986-dots", "a fix that breaks another test: links above the root",
           rfc3986_dots.SOURCE, rfc3986_dots.plant, rfc3986_dots.script),
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


def prepare(recipe: Recipe, cache: Path | None = None, trees: Path | None = None
            ) -> RealWorkload:
    """The planted tree in a directory of this process's own, under `trees` (a run's own
    scratch directory; by default the cache's `trees`), removed when the process exits: runs
    in parallel, or another checkout's, each copy their workspaces from a tree no one else
    rewrites or removes meanwhile."""
    cache = cache or cache_dir()
    trees = trees or cache / "trees"
    trees.mkdir(parents=True, exist_ok=True)
    tree = Path(tempfile.mkdtemp(prefix=f"{recipe.name}-", dir=trees))
    atexit.register(shutil.rmtree, tree, ignore_errors=True)
    extract(recipe.source, tree, cache)
    recipe.plant(tree)
    scenario = recipe.script(tree).scenario()
    return RealWorkload(recipe.name, recipe.kind, recipe.source, scenario, tree)


def workloads(names: tuple[str, ...] | None = None, cache: Path | None = None,
              trees: Path | None = None) -> list[RealWorkload]:
    chosen = [r for r in RECIPES if names is None or r.name in names]
    return [prepare(recipe, cache, trees) for recipe in chosen]
