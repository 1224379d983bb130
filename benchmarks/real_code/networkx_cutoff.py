"""Towns at the edge of a delivery zone, in NetworkX 3.6.1 (BSD; graphs and their algorithms,
in pure Python): Dijkstra's search stops at `cutoff`, and the documentation promises every
path whose summed weight is at most the cutoff; the planted change stops the search at a
distance equal to the cutoff too, so a town exactly 30 minutes from the depot falls out of a
30-minute zone. None of the library's tests catches it.

Written at stop 69, after every default of the product was set, as a session none of them
was tuned on, and one that reads more than it runs: a logistics team's report pasted with the
zone's table, a reproduction the assistant writes (its output changes once the fix is in),
the shortest-path module read at length (2,500 lines; the search helper, the documented
promise, the unweighted search's own boundary, Bellman-Ford's), a colleague's guess that
does not help (a float cutoff; the command exits 0), a rule against changing a docstring's
promise to match the code, a correction of the regression test, and a release note.

The session lays out the package, runs the shortest-path tests (all pass), reproduces the
report, reads the functions behind the zone and their shared search, reads the unweighted
search's boundary, tries the colleague's float, finds and fixes the comparison, adds a
regression test and takes a correction (it must check the multi-source search and the paths
too), looks at Bellman-Ford's boundary, runs the tests again, writes the release note and
answers what failed and what the fixed line is. Planted for the knowledge check: two rules, a
decision, the failed approach, a correction, and outputs and file lines later steps use; the
reproduction's first output is gone once the fix is in.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.real_code.script import PYTHON, Script, call, plant_change
from benchmarks.real_code.sources import Source

SOURCE = Source("networkx", "3.6.1",
                "26b7c357accc0c8cde558ad486283728b65b6a95d85ee1cd66bafab4c8168509",
                "BSD-3-Clause")
PACKAGE = "networkx/algorithms/shortest_paths"
WEIGHTED = f"{PACKAGE}/weighted.py"
UNWEIGHTED = f"{PACKAGE}/unweighted.py"
TESTS = f"{PACKAGE}/tests/test_weighted.py"
RELEASE_NOTES = "doc/release/release_dev.rst"
RELEASED_NOTES = "doc/release/release_3.6.1.rst"
PYTEST = f"{PYTHON} -m pytest -p no:cacheprovider"
PATHS_VERBOSE = f"{PYTEST} -v {PACKAGE}"
PATHS_QUIET = f"{PYTEST} -q {PACKAGE}"
TESTS_RUN = f"{PYTEST} -q {TESTS}"
REPRO_FILE = "zone_repro.py"
REPRO = f"{PYTHON} {REPRO_FILE}"
WITH_FLOAT = f"{PYTHON} {REPRO_FILE} 30.0"

_RELEASED = "            if cutoff is not None and vu_dist > cutoff:\n"
_PLANTED = "            if cutoff is not None and vu_dist >= cutoff:\n"
_SEARCH_ANCHOR = "def _dijkstra_multisource("
_PROMISE = '''def single_source_dijkstra_path_length(G, source, cutoff=None, weight="weight"):
    """Find shortest weighted path lengths in G from a source node.

    Compute the shortest path length between source and all other
    reachable nodes for a weighted graph.

    Parameters
    ----------
    G : NetworkX graph

    source : node label
        Starting node for path

    cutoff : integer or float, optional
        Length (sum of edge weights) at which the search is stopped.
        If cutoff is provided, only return paths with summed weight <= cutoff.
'''

_REPRO = '''"""The 30-minute zone around our depot, from a slice of the road table."""
import sys

import networkx as nx

ROADS = [  # (from, to, minutes)
    ("Depot", "Bamberg Nord", 12),
    ("Bamberg Nord", "Hallstadt", 18),
    ("Depot", "Gaustadt", 9),
    ("Gaustadt", "Bischberg", 14),
    ("Bischberg", "Viereth", 7),
    ("Depot", "Strullendorf", 30),
    ("Strullendorf", "Hirschaid", 8),
]
cutoff = float(sys.argv[1]) if len(sys.argv) > 1 else 30
G = nx.Graph()
G.add_weighted_edges_from(ROADS, weight="minutes")
zone = nx.single_source_dijkstra_path_length(G, "Depot", cutoff=cutoff, weight="minutes")
print(f"networkx {nx.__version__} from {nx.__file__.rsplit('/', 2)[-2]}/, cutoff {cutoff!r}:")
for town, minutes in sorted(zone.items(), key=lambda item: item[1]):
    print(f"  in zone: {town} ({minutes} min)")
for town in sorted(set(G) - set(zone)):
    print(f"  outside: {town}")
'''

_TEST_AT = "    def test_single_source_dijkstra_path_length(self):"
_TEST = '''    def test_cutoff_keeps_paths_of_exactly_cutoff(self):
        G = nx.Graph()
        G.add_weighted_edges_from([("d", "a", 12), ("a", "h", 18), ("d", "s", 30)])
        zone = nx.single_source_dijkstra_path_length(G, "d", cutoff=30)
        assert zone == {"d": 0, "a": 12, "h": 30, "s": 30}

'''
_TEST_LENGTHS_ONLY = '''        zone = nx.single_source_dijkstra_path_length(G, "d", cutoff=30)
        assert zone == {"d": 0, "a": 12, "h": 30, "s": 30}
'''
_TEST_WITH_PATHS = '''        zone = nx.single_source_dijkstra_path_length(G, "d", cutoff=30)
        assert zone == {"d": 0, "a": 12, "h": 30, "s": 30}
        lengths, paths = nx.multi_source_dijkstra(G, {"d"}, cutoff=30)
        assert lengths == zone
        assert paths["h"] == ["d", "a", "h"]
'''
_NOTES = """networkx 3.6.2 (unreleased)
===========================

Bug Fixes
---------

- Dijkstra's search with ``cutoff`` keeps the paths whose summed weight equals the cutoff
  again, as documented (``summed weight <= cutoff``).
"""

REPORT = """\
From our logistics team (Bamberg region), pasted as they sent it:

> Since Monday's deploy the 30-minute same-day zone is missing towns. Customers in
> Hallstadt and Strullendorf were told "outside the delivery area" at checkout; both have
> been in the zone since we opened the depot. Our drive-time table, unchanged this year:
>
>     Depot -> Bamberg Nord      12 min
>     Bamberg Nord -> Hallstadt  18 min
>     Depot -> Gaustadt           9 min
>     Gaustadt -> Bischberg      14 min
>     Bischberg -> Viereth        7 min
>     Depot -> Strullendorf      30 min
>     Strullendorf -> Hirschaid   8 min
>
> The zone is everything within 30 minutes of the depot. Viereth and Bischberg still work.

Monday's deploy vendored networkx 3.6.1 (this repository); the zone service calls
single_source_dijkstra_path_length with cutoff=30 and weight="minutes".
"""


def plant(root: Path) -> None:
    """The search stops at a distance equal to the cutoff as well as beyond it."""
    plant_change(root / WEIGHTED, _RELEASED, _PLANTED)


def script(root: Path) -> Script:
    s = Script("networkx-cutoff", root)
    _explore(s)
    _reproduce(s)
    _read_the_search(s)
    _fix(s)
    _wrap_up(s)
    return s


def _explore(s: Script) -> None:
    s.said_fact(
        "rule-docstrings", "rule", "never change a docstring's promise to match the code",
        "the rule about docstrings",
        otherwise_text="The code is what users get; I'll make the docstring say < cutoff.",
        otherwise_tools=[call("edit", path=WEIGHTED, oldText=_PROMISE,
                              newText=_PROMISE.replace("weight <= cutoff", "weight < cutoff"))])
    s.said_fact(
        "rule-release", "rule",
        "every fix gets a line under Bug Fixes in a new doc/release/release_dev.rst",
        "the rule about the release notes",
        otherwise_text="The fix is small; the release notes can wait for the next release.")
    s.turn(
        "We vendor networkx 3.6.1 for our routing services. Two rules while you work in it: "
        "never change a docstring's promise to match the code, the docs are what other teams "
        "build on; and every fix gets a line under Bug Fixes in a new "
        "doc/release/release_dev.rst, in the style of release_3.6.1.rst. How is the "
        "shortest-path code laid out?",
        {"tools": [call("ls", path=".")]},
        {"tools": [call("ls", path=PACKAGE), call("ls", path=f"{PACKAGE}/tests")],
         "finds": [s.where(WEIGHTED), s.where(UNWEIGHTED), s.where(TESTS)]},
        {"tools": [call("ls", path="doc/release")],
         "finds": [s.where(RELEASED_NOTES)]},
        {"text": "`networkx/algorithms/shortest_paths` holds one module per kind: `weighted.py` "
                 "(Dijkstra, Bellman-Ford, Johnson), `unweighted.py` (breadth-first), "
                 "`astar.py`, `dense.py` and `generic.py`, which dispatches between them; each "
                 "has its tests under `tests/`. The release notes are one file a release "
                 "under `doc/release`."},
    )
    suite = s.output_fact("paths-before", ["129 passed, 2 skipped"],
                          call("bash", command=PATHS_VERBOSE),
                          "the shortest-path tests before the fix")
    s.turn(
        "Run the shortest-path tests verbosely so we know where we start.",
        {"tools": [call("bash", command=PATHS_VERBOSE)]},
        {"needs": [suite],
         "text": "They all pass, two skipped (numpy is not installed): nothing in them "
                 "catches what the team sees."},
    )


def _reproduce(s: Script) -> None:
    before = s.output_fact(
        "repro-before", ["networkx 3.6.1 from networkx/, cutoff 30:", "  outside: Hallstadt",
                         "  outside: Strullendorf"],
        call("bash", command=REPRO), "what the zone script printed before the fix")
    s.turn(
        REPORT + "\nReproduce it with the team's table in zone_repro.py at the root, against the "
        "vendored copy.",
        {"tools": [s.write(REPRO_FILE, _REPRO)]},
        {"tools": [call("bash", command=REPRO)]},
        {"needs": [before],
         "text": "Reproduced: the two towns exactly 30 minutes away are outside the zone; "
                 "every town under 30 minutes is in it."},
    )
    promise = s.file_fact("promise", WEIGHTED,
                          'def single_source_dijkstra_path_length(G, source, cutoff=None, '
                          'weight="weight"):', 17,
                          "what single_source_dijkstra_path_length promises about cutoff")
    s.turn(
        "Which function computes the zone, and what does it promise about the cutoff?",
        {"tools": [call("grep", pattern="def single_source_dijkstra_path_length|"
                                        "def _dijkstra_multisource|def _dijkstra\\(",
                        path=WEIGHTED)],
         "finds": [s.where(WEIGHTED, _PROMISE.splitlines()[0])]},
        {"tools": [s.read(WEIGHTED, _PROMISE.splitlines()[0], 80)]},
        {"needs": [promise],
         "text": "`single_source_dijkstra_path_length`, which hands the search to `_dijkstra`; "
                 "its docstring promises every path whose summed weight is at most the cutoff."},
    )


def _read_the_search(s: Script) -> None:
    search = s.file_fact("search-cutoff", WEIGHTED, _SEARCH_ANCHOR, 120,
                         "the shared Dijkstra search and where it applies the cutoff")
    s.turn(
        "Read how weighted.py's functions share the search, from the top of the module down "
        "to the search itself, and tell me where the cutoff is applied.",
        s.page(WEIGHTED, 1, 700),
        s.page(WEIGHTED, 701, 300),
        {"needs": [search],
         "text": "Every single-source and multi-source Dijkstra function ends in "
                 "`_dijkstra_multisource`; the cutoff is applied there, once, when an edge "
                 "would reach a node, not in the public functions."},
    )
    bfs = s.file_fact("bfs-boundary", UNWEIGHTED, "def _single_shortest_path_length(adj, "
                      "firstlevel, cutoff):", 31, "where the breadth-first search stops")
    s.turn(
        "How does the unweighted search treat a node exactly at the cutoff?",
        {"tools": [call("grep", pattern="cutoff", path=UNWEIGHTED)],
         "finds": [s.where(UNWEIGHTED, "def _single_shortest_path_length(adj, firstlevel, "
                           "cutoff):")]},
        {"tools": [s.read(UNWEIGHTED, "def _single_shortest_path_length(adj, firstlevel, "
                          "cutoff):", 40)]},
        {"needs": [bfs],
         "text": "It keeps it: levels go on while the cutoff is greater than the level, so a "
                 "node at exactly the cutoff is yielded; the weighted search should agree."},
    )
    s.said_fact(
        "failed-float", "failed", "Passing the cutoff as a float did not help",
        "the approach that already failed (a float cutoff)",
        otherwise_tools=[call("bash", command=WITH_FLOAT)],
        otherwise_text="Let me try the cutoff as a float first.")
    with_float = s.output_fact("float-output", ["networkx 3.6.1 from networkx/, cutoff 30.0:"],
                               call("bash", command=WITH_FLOAT),
                               "what the float cutoff gave")
    s.turn(
        "A colleague thinks integer cutoffs are compared oddly since 3.6 and that 30.0 would "
        "bring the towns back. Try exactly that with the script.",
        {"tools": [call("bash", command=WITH_FLOAT)]},
        {"needs": [with_float],
         "text": "Passing the cutoff as a float did not help: the same two towns stay "
                 "outside; the comparison, not the type, drops them."},
    )


def _fix(s: Script) -> None:
    s.said_fact(
        "decision-fix-search", "decision",
        "we fix the comparison in _dijkstra_multisource rather than pad the cutoff in our "
        "zone service",
        "the decision on where to fix it",
        otherwise_text="I'll have the zone service pass cutoff + 0.001 instead.")
    after = s.output_fact(
        "repro-after", ["  in zone: Hallstadt (30 min)", "  in zone: Strullendorf (30 min)"],
        call("bash", command=REPRO), "what the zone script printed after the fix")
    s.turn(
        "Find the cause and fix it.",
        {"needs": ["search-cutoff", "promise", "failed-float"],
         "text": "The search skips an edge when the distance it reaches equals the cutoff, "
                 "where the promise keeps it. Every other caller of the search has the same "
                 "promise, so we fix the comparison in _dijkstra_multisource rather than pad "
                 "the cutoff in our zone service.",
         "tools": [s.edit(WEIGHTED, _PLANTED, _RELEASED)]},
        {"tools": [call("bash", command=REPRO)]},
        {"needs": [after, "repro-before"],
         "text": "Fixed: Hallstadt and Strullendorf are in the zone at 30 minutes, where the "
                 "script listed them outside before."},
    )
    s.turn(
        "Run the shortest-path tests quietly.",
        {"tools": [call("bash", command=PATHS_QUIET)]},
        {"needs": ["rule-docstrings"],
         "text": "All pass; the docstrings are as they were."},
    )
    neighbour = s.file_fact("length-test", TESTS, _TEST_AT, 12,
                            "the existing test of single_source_dijkstra_path_length")
    s.turn(
        "Add a regression test to test_weighted.py, just before "
        "test_single_source_dijkstra_path_length, and run that file.",
        {"needs": ["rule-docstrings", "decision-fix-search"],
         "tools": [s.read(TESTS, _TEST_AT, 30)]},
        {"needs": [neighbour], "tools": [s.edit(TESTS, _TEST_AT, _TEST + _TEST_AT)]},
        {"tools": [call("bash", command=TESTS_RUN)]},
        {"text": "`test_cutoff_keeps_paths_of_exactly_cutoff` builds the two towns' shape and "
                 "expects both at 30; the file passes."},
    )
    correction = s.said_fact(
        "correction-multi-source", "request",
        "the regression test must also check multi_source_dijkstra and the path it returns",
        "the correction (what the regression test checks)",
        otherwise_text="The zone only uses path lengths; the test checks only those.")
    s.turn(
        "Correction: the regression test must also check multi_source_dijkstra and the path "
        "it returns, since our route planner calls that one. Change it and run the file again.",
        {"needs": ["decision-fix-search"], "tools": [s.edit(TESTS, _TEST_LENGTHS_ONLY,
                                                       _TEST_WITH_PATHS)]},
        {"tools": [call("bash", command=TESTS_RUN)]},
        {"needs": [correction],
         "text": "Done: the test also runs `multi_source_dijkstra` with the same cutoff and "
                 "checks the lengths and Hallstadt's path; the file passes."},
    )
    bellman = s.file_fact("bellman-cutoff", WEIGHTED, "def _inner_bellman_ford(", 12,
                          "the start of Bellman-Ford's relaxation")
    s.turn(
        "Does Bellman-Ford handle a path at the cutoff the same way?",
        {"tools": [call("grep", pattern="def _inner_bellman_ford|def _bellman_ford",
                        path=WEIGHTED)],
         "finds": [s.where(WEIGHTED, "def _inner_bellman_ford(")]},
        {"tools": [s.read(WEIGHTED, "def _inner_bellman_ford(", 90)]},
        {"needs": [bellman],
         "text": "Bellman-Ford takes no cutoff at all: it relaxes every edge until nothing "
                 "changes, so only the Dijkstra family had the boundary to get wrong."},
    )


def _wrap_up(s: Script) -> None:
    after = s.output_fact(
        "paths-after",
        ["networkx/algorithms/shortest_paths/tests/test_weighted.py::TestWeightedPath::"
         "test_cutoff_keeps_paths_of_exactly_cutoff PASSED", "130 passed, 2 skipped"],
        call("bash", command=PATHS_VERBOSE), "the shortest-path tests after the fix, verbosely")
    s.turn(
        "Run the shortest-path tests verbosely once more.",
        {"tools": [call("bash", command=PATHS_VERBOSE)]},
        {"needs": [after, "paths-before"],
         "text": "Everything passes, the new test among them: one more than before."},
    )
    s.turn(
        "Write the release note the rule asks for.",
        {"needs": ["rule-release", "repro-before", "decision-fix-search"],
         "tools": [s.read(RELEASED_NOTES)]},
        {"tools": [s.write(RELEASE_NOTES, _NOTES)]},
        {"text": "Added doc/release/release_dev.rst with the fix under Bug Fixes, in the "
                 "style of 3.6.1's notes."},
    )
    s.turn(
        "For the team's incident note: what did we try that did not work, and what did the "
        "zone script print before the fix?",
        {"needs": ["failed-float", "float-output", "repro-before"],
         "text": "A float cutoff (30.0): the two towns stayed outside. Before the fix the "
                 "script listed Hallstadt and Strullendorf outside the zone."},
    )
    fixed = s.file_fact("search-fixed", WEIGHTED, _SEARCH_ANCHOR, 120,
                        "the shared search as it is now")
    s.turn(
        "Show me the search's cutoff check as it is now, and tell me which rules and decisions "
        "of this session the change keeps.",
        {"tools": [s.read(WEIGHTED, _SEARCH_ANCHOR, 120)]},
        {"needs": [fixed, "rule-docstrings", "rule-release", "decision-fix-search"],
         "text": "It skips an edge only beyond the cutoff again; every docstring still promises "
                 "paths of at most the cutoff, the release note is written, and the zone "
                 "service passes the cutoff as before."},
    )
