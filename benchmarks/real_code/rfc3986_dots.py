"""A link checker that resolves links out of their host, in rfc3986 2.0.0 (Apache-2.0; RFC 3986
URI references parsed, validated, normalised and resolved, in a src layout, run from the tree
with PYTHONPATH=src): `remove_dot_segments` drops the `..` segments of a path, and puts the
root back when one of them popped it; the planted change puts it back only when nothing is
left, so `/guide/../../assets/logo.png` comes out as `assets/logo.png`, and a link that climbs
above its site's root resolves to `https://docs.example.orgassets/logo.png`.

Written at stop 73, after every default of the product was set, as a session none of them was
tuned on, and the suite's first whose fix breaks another test: a docs team's report pasted (a
night's link check gone red, a log of the broken links), a rule against skipping or changing a
test and one against editing the module a subclass of theirs copies, a reproduction the
assistant writes, a 330 KB verbose suite run whose two failures sit 12 KB into it, far from
its end, a colleague's `strict=True` that does not help (the command exits 0), a decision on
where to fix it, a first fix that is too broad (every leading empty segment stripped before
the root is put back: the test that failed passes, and the one of a path that starts with two
slashes fails instead), a probe that shows what else the broad fix did (`/` itself became
empty), the fix narrowed, a regression test the user then asks to have moved and widened (the
correction), a third verbose run, and a release note.

Planted for the knowledge check: two rules, a decision, the failed approach, a correction, and
outputs and file lines later steps use; the first suite run's failures, the broad fix's
failure, the probe of the broad fix and the reproduction's first output are gone once the code
changed under them.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.real_code.script import PYTHON, Script, call, plant_change
from benchmarks.real_code.sources import Source

SOURCE = Source("rfc3986", "2.0.0",
                "97aacf9dbd4bfd829baad6e6309fa6573aaf1be3f6fa735c8ab05e46cecb261c",
                "Apache-2.0")
PACKAGE = "src/rfc3986"
NORMALIZERS = f"{PACKAGE}/normalizers.py"
MIXIN = f"{PACKAGE}/_mixin.py"
MISC = f"{PACKAGE}/misc.py"
BUILDER = f"{PACKAGE}/builder.py"
URI = f"{PACKAGE}/uri.py"
NORMALIZER_TESTS = "tests/test_normalizers.py"
URI_TESTS = "tests/test_uri.py"
NOTES = "docs/source/release-notes/unreleased.rst"
REPRO_FILE = "repro_links.py"
PROBE_FILE = "probe_dots.py"
RUN = f"PYTHONPATH=src {PYTHON}"
PYTEST = f"{RUN} -m pytest -p no:cacheprovider"
SUITE_VERBOSE = f"{PYTEST} -v tests"
NORMALIZERS_RUN = f"{PYTEST} -q {NORMALIZER_TESTS}"
URI_RUN = f"{PYTEST} -q {URI_TESTS}"
REPRO = f"{RUN} {REPRO_FILE}"
REPRO_STRICT = f"{RUN} {REPRO_FILE} strict"
PROBE = f"{RUN} {PROBE_FILE}"
BUILD = (f"{RUN} -c \"from rfc3986.builder import URIBuilder; "
         "b = URIBuilder().add_scheme('https').add_host('docs.example.org'); "
         "print(b.add_path('guide/../../assets/logo.png').geturl()); "
         "print('up:', b.add_path('..').geturl())\"")

_RELEASED = '    if s.startswith("/") and (not output or output[0]):\n'
_PLANTED = '    if s.startswith("/") and not output:\n'
# The first fix: the root put back on every absolute path, after every empty segment in
# front has been stripped (too broad: a path's leading "//", and "/" itself, go with them).
_BROAD = ('    if s.startswith("/"):\n'
          "        # An absolute path keeps exactly one root, however many '..' climbed.\n"
          "        while output and not output[0]:\n"
          "            output.pop(0)\n")
_DOUBLE_SLASH_CASE = '    ("//a/./b/../b/%63/%7Bfoo%7D", "//a/b/%63/%7Bfoo%7D"),\n'
_DOTS_ANCHOR = "def remove_dot_segments(s):"
_ROOT_ANCHOR = "    # If the path starts with '/' and the output is empty or the first string"
_RESOLVE_ANCHOR = "    def resolve_with(self, base_uri, strict=False):"
_MERGE_ANCHOR = "def merge_paths(base_uri, relative_path):"

_REPRO = '''"""The links of the docs' install page, resolved as our link checker resolves them."""
import sys

import rfc3986

strict = sys.argv[1:] == ["strict"]
page = "https://docs.example.org/guide/install"
how = "strictly" if strict else "leniently"
print(f"rfc3986 {rfc3986.__version__}, resolving {how} from {page}:")
for href in ["../../assets/logo.png", "../../../index.html", "../api/", "./step-2",
             "/search?q=uri"]:
    target = rfc3986.uri_reference(href).resolve_with(page, strict=strict)
    print(f"  {href:<24} -> {target.unsplit()}")
print("normalised:", rfc3986.normalize_uri("https://docs.example.org/../robots.txt"))
'''

_PROBE = '''"""remove_dot_segments over paths with a root, two slashes, or none."""
from rfc3986.normalizers import remove_dot_segments

for path in ["/", "/guide/../../assets/logo.png", "/../foo/bar", "//a/./b/../b",
             "//cdn/../x", "a/../b", "/guide/..", "/./"]:
    print(f"{path!r:>32} -> {remove_dot_segments(path)!r}")
'''

_URI_TESTS_END = '''        T = R.resolve_with(B)
        assert T.path is None
        assert T.query == "query"
'''
_URI_TEST = '''
    def test_dot_segments_above_the_root_keep_it(self):
        R = URIReference.from_string("../../assets/logo.png")
        T = R.resolve_with("https://docs.example.org/guide/install")
        assert (T.host, T.path) == ("docs.example.org", "/assets/logo.png")
'''
_NORMALIZER_TESTS_AT = '''def test_remove_dot_segments(path_fixture):
    to_normalize, expected = path_fixture
    assert expected == remove_dot_segments(to_normalize)
'''
_NORMALIZER_TEST = '''

def test_remove_dot_segments_keeps_the_root():
    """'..' above the root of an absolute path keeps its slash; a leading '//' and the
    root alone are left as they are."""
    assert remove_dot_segments("/guide/../../assets/logo.png") == "/assets/logo.png"
    assert remove_dot_segments("/guide/../..") == "/"
    assert remove_dot_segments("//cdn/../x") == "//x"
    assert remove_dot_segments("/") == "/"
'''
_NOTES_AT = "- *Add Items here*\n"
_NOTES = ("- Fix ``remove_dot_segments`` dropping the root of an absolute path when a\n"
          "  ``..`` segment climbs above it, so resolving ``../../a`` against\n"
          "  ``https://host/b/c`` gave ``https://hosta`` instead of ``https://host/a``.\n"
          "  A path that starts with ``//`` and the root alone are kept as they are.\n")

REPORT = """\
From the docs team's channel this morning, as they posted it:

> The nightly link check of docs.example.org went red at 02:14 with 1,906 broken links, up
> from 3 the night before. Nothing in the docs changed overnight. A sample of the log:
>
>     02:14:07 WARN page=https://docs.example.org/guide/install href=../../assets/logo.png
>                   resolved=https://docs.example.orgassets/logo.png
>                   error=ConnectError: [Errno -2] Name or service not known
>     02:14:07 WARN page=https://docs.example.org/guide/install href=../../../index.html
>                   resolved=https://docs.example.orgindex.html
>                   error=ConnectError: [Errno -2] Name or service not known
>     02:14:09 OK   page=https://docs.example.org/guide/install href=../api/
>     02:14:09 OK   page=https://docs.example.org/guide/install href=./step-2
>
> Every broken link we looked at climbs with `..` above the root of the site; the ones that
> stay inside it are fine. Browsers take all of them to the right page.

The one change yesterday: the checker now resolves every href with
`rfc3986.uri_reference(href).resolve_with(page)`, from the rfc3986 2.0.0 vendored here, where
it used urllib.parse.urljoin before.
"""


def plant(root: Path) -> None:
    """The root put back only when the `..` segments left nothing at all."""
    plant_change(root / NORMALIZERS, _RELEASED, _PLANTED)


def script(root: Path) -> Script:
    s = Script("rfc3986-dots", root)
    _explore(s)
    _reproduce(s)
    _read(s)
    _first_fix(s)
    _narrow(s)
    _wrap_up(s)
    return s


def _explore(s: Script) -> None:
    s.said_fact(
        "rule-tests", "rule",
        "never skip, xfail or change an existing test to get the suite green",
        "the rule about the library's tests",
        otherwise_text="That test's expectation is odd; I'll change it to what the fix gives.",
        otherwise_tools=[call("edit", path=NORMALIZER_TESTS, oldText=_DOUBLE_SLASH_CASE,
                              newText=_DOUBLE_SLASH_CASE.replace('"//a/b', '"/a/b'))])
    s.said_fact(
        "rule-mixin", "rule", "do not edit src/rfc3986/_mixin.py at all",
        "the rule about the module their subclass copies",
        otherwise_text="I'll put the root back in resolve_with, in _mixin.py.",
        otherwise_tools=[call("edit", path=MIXIN, oldText="                        path=path,\n",
                              newText='                        path="/" + path.lstrip("/"),\n')])
    s.turn(
        "Our docs link checker vendors rfc3986 2.0.0 in this repository, and it broke last "
        "night; the report comes next. Two rules while you work in it: never skip, xfail or "
        "change an existing test to get the suite green, whatever you think of the test; and "
        "do not edit src/rfc3986/_mixin.py at all, our checker's URIReference subclass carries "
        "a copy of its resolve_with and the two are diffed in CI. First, how is the repository "
        "laid out?",
        {"tools": [call("ls", path=".")]},
        {"tools": [call("ls", path=PACKAGE), call("ls", path="tests")],
         "finds": [s.where(NORMALIZERS), s.where(MIXIN), s.where(NORMALIZER_TESTS)]},
        {"tools": [s.read("README.rst")]},
        {"text": "The package is under `src/rfc3986`: `uri.py` and `_mixin.py` for the "
                 "URIReference class and its resolution, `normalizers.py` for the "
                 "normalisation of each component, `misc.py` for the regular expressions and "
                 "path merging, `builder.py`, `validators.py` and the IRI and parse-result "
                 "variants. The tests are under `tests`, one file per module, and the docs "
                 "under `docs/source` with release notes per version."},
    )


def _reproduce(s: Script) -> None:
    before = s.output_fact(
        "repro-before",
        ["../../assets/logo.png    -> https://docs.example.orgassets/logo.png",
         "../../../index.html      -> https://docs.example.orgindex.html",
         "normalised: https://docs.example.orgrobots.txt"],
        call("bash", command=REPRO), "what the reproduction printed before any fix")
    s.turn(
        REPORT + "\nReproduce it with the install page's links, in repro_links.py at the root, "
                 "against the vendored copy.",
        {"tools": [s.write(REPRO_FILE, _REPRO)]},
        {"tools": [call("bash", command=REPRO)]},
        {"needs": [before],
         "text": "Reproduced: the two links that climb above the site's root lose the slash "
                 "between the host and the path: the host runs into `assets/logo.png` and "
                 "into `index.html`. The links that stay inside the site are right, "
                 "and normalising a URI whose path starts with `/..` loses its root the same "
                 "way, without any resolution."},
    )
    suite = s.output_fact(
        "suite-before",
        ["tests/test_normalizers.py::test_remove_dot_segments[path_fixture7] FAILED",
         "tests/test_normalizers.py::test_normalized_equality[uris7] FAILED",
         "2 failed, 2834 passed"],
        call("bash", command=SUITE_VERBOSE), "the suite's failures before any fix")
    s.turn(
        "Run the whole test suite verbosely from the tree (PYTHONPATH=src), so we know where we "
        "start.",
        {"tools": [call("bash", command=SUITE_VERBOSE)]},
        {"needs": [suite],
         "text": "Two tests fail, of some 2,800, both in test_normalizers.py and both on the "
                 "eighth path of its table: `remove_dot_segments` itself, and the equality of "
                 "two references that normalise to the same path. Every resolution test in "
                 "test_uri.py passes; none climbs above a root. The rest of the output is "
                 "deprecation warnings of the old validation methods."},
    )
    s.said_fact(
        "failed-strict", "failed", "Resolving strictly did not help",
        "the approach that already failed (strict=True)",
        otherwise_tools=[call("bash", command=REPRO_STRICT)],
        otherwise_text="Let me try resolve_with with strict=True first.")
    strict = s.output_fact(
        "strict-output",
        ["resolving strictly from https://docs.example.org/guide/install:",
         "../../assets/logo.png    -> https://docs.example.orgassets/logo.png"],
        call("bash", command=REPRO_STRICT), "what resolving strictly printed")
    s.turn(
        "A colleague says resolve_with is lenient by default and that strict=True makes it "
        "follow RFC 3986 to the letter, which browsers do. The script already takes a `strict` "
        "argument: try exactly that.",
        {"tools": [call("bash", command=REPRO_STRICT)]},
        {"needs": [strict],
         "text": "Resolving strictly did not help: the logo still resolves with its host run "
                 "into its path, and so does the index page. `strict` only decides whether a "
                 "reference with the base's own scheme is treated as relative; our links have "
                 "no scheme at all."},
    )


def _read(s: Script) -> None:
    resolve = s.file_fact("resolve-code", MIXIN,
                          "                    if resolving.path.startswith(\"/\"):", 10,
                          "how resolve_with merges and normalises a relative path")
    merge = s.file_fact("merge-paths", MISC, _MERGE_ANCHOR, 9,
                        "how merge_paths joins a base's directory and a relative path")
    s.turn(
        "Where does a relative link get resolved?",
        {"tools": [call("grep", pattern="def resolve_with|def merge_paths|normalize_path\\(",
                        path=PACKAGE)],
         "finds": [s.where(MIXIN, _RESOLVE_ANCHOR), s.where(MISC, _MERGE_ANCHOR)]},
        {"tools": [s.read(MIXIN, _RESOLVE_ANCHOR, 70)]},
        {"tools": [s.read(MISC, _MERGE_ANCHOR, 12, before=1)]},
        {"needs": [resolve, merge, "rule-mixin"],
         "text": "`resolve_with` in _mixin.py takes a path that does not start with a slash, "
                 "joins it to the base's directory with `merge_paths` (everything up to the "
                 "base path's last slash, then the link) and hands the result to "
                 "`normalizers.normalize_path`. For our logo that is "
                 "`/guide/../../assets/logo.png`, which is right so far: the dots are "
                 "removed afterwards. I only read _mixin.py."},
    )
    dots = s.file_fact("dots-planted", NORMALIZERS, _DOTS_ANCHOR, 33,
                       "remove_dot_segments as the session found it")
    paths = s.file_fact("paths-table", NORMALIZER_TESTS, "paths = [", 15,
                        "the table of paths the normaliser tests use")
    first = s.line_of(NORMALIZERS, _DOTS_ANCHOR)
    s.turn(
        "Read what normalises the path, and the table the failing tests use.",
        {"tools": [call("grep", pattern="def normalize_path|def remove_dot_segments",
                        path=NORMALIZERS)],
         "finds": [s.where(NORMALIZERS, _DOTS_ANCHOR)]},
        s.page(NORMALIZERS, first - 38, 74),
        {"tools": [s.read(NORMALIZER_TESTS, "paths = [", 40)]},
        {"needs": [dots, paths, "suite-before"],
         "text": "`normalize_path` upper-cases the percent escapes and calls "
                 "`remove_dot_segments`, which splits the path on slashes, drops `.`, lets "
                 "`..` pop the last segment kept, and then puts an empty first segment back "
                 "for an absolute path. It does that only when nothing is left, while the "
                 "comment above it says: when nothing is left or the first segment kept is "
                 "not empty. The eighth entry of the table, `/../foo/bar`, is exactly that "
                 "case: the `..` pops the root and `foo` is left first."},
    )
    add_path = s.file_fact("builder-add-path", BUILDER,
                           "            path=normalizers.normalize_path(path),", 12,
                           "how URIBuilder.add_path normalises its path", before=10)
    s.turn(
        "Who else goes through that function? I'd like to know what a change there touches.",
        {"tools": [call("grep", pattern="normalize_path|remove_dot_segments",
                        path="src")],
         "finds": [s.where(BUILDER, "            path=normalizers.normalize_path(path),"),
                   s.where(URI, "            normalizers.normalize_path(self.path or \"\"),")]},
        {"tools": [s.read(BUILDER, "    def add_path(self, path):", 26)]},
        {"tools": [s.read(URI, "            normalizers.normalize_path(self.path or \"\"),", 10,
                          before=8)]},
        {"needs": [add_path, "dots-planted"],
         "text": "Three callers: `resolve_with`, four times; `URIReference.normalize`, for "
                 "every comparison of two references; and `URIBuilder.add_path`, which puts a "
                 "slash in front of a relative path first. Whatever `remove_dot_segments` "
                 "does to an absolute path, all three see."},
    )


def _first_fix(s: Script) -> None:
    s.said_fact(
        "decision-normalizer", "decision",
        "we fix remove_dot_segments in normalizers.py rather than strip the extra .. "
        "segments from the links in our checker",
        "the decision on where to fix it",
        otherwise_text="I'll drop the `..` segments that climb above the root from each href "
                       "in our checker before it resolves them.")
    after = s.output_fact(
        "repro-after",
        ["../../assets/logo.png    -> https://docs.example.org/assets/logo.png",
         "normalised: https://docs.example.org/robots.txt"],
        call("bash", command=REPRO), "what the reproduction printed after the fix")
    s.turn(
        "Find the cause and fix it.",
        {"needs": ["dots-planted", "resolve-code", "failed-strict", "rule-mixin"],
         "text": "The root is put back only when `..` left nothing, so `/../foo/bar`, and our "
                 "logo, keep `foo` or `assets` first and lose their slash. Browsers keep a "
                 "`..` above the root at the root, RFC 3986's section 5.2.4 does too, and "
                 "normalize() loses the root with no link involved, so we fix "
                 "remove_dot_segments in normalizers.py rather than strip the extra .. "
                 "segments from the links in our checker. An absolute path should come out "
                 "with one root, however many `..` climbed.",
         "tools": [s.edit(NORMALIZERS, _PLANTED, _BROAD)]},
        {"tools": [call("bash", command=REPRO)]},
        {"needs": [after, "repro-before"],
         "text": "The logo and the index page resolve under the host with their slash, and the "
                 "normalised URI keeps its root; before, both lost the slash "
                 "after the host."},
    )
    broad = s.output_fact(
        "suite-broad",
        ["tests/test_normalizers.py::test_remove_dot_segments[path_fixture7] PASSED",
         "tests/test_normalizers.py::test_remove_dot_segments[path_fixture9] FAILED",
         "1 failed, 2835 passed"],
        call("bash", command=SUITE_VERBOSE), "the suite after the first fix: another failure")
    s.turn(
        "Run the whole suite verbosely again and compare it with the first run.",
        {"tools": [call("bash", command=SUITE_VERBOSE)]},
        {"needs": [broad, "suite-before"],
         "text": "The two that failed pass now, but a different test fails that passed in the "
                 "first run: `test_remove_dot_segments` on the tenth path of the table. So the "
                 "fix is not done."},
    )


def _narrow(s: Script) -> None:
    probe = s.output_fact(
        "probe-broad", ["'/' -> ''", "'//a/./b/../b' -> '/a/b'", "'//cdn/../x' -> '/x'"],
        call("bash", command=PROBE), "what the probe printed with the first fix in")
    s.turn(
        "Why does that one fail? And no, the test stays as it is.",
        {"needs": ["rule-tests", "paths-table"],
         "tools": [s.read(NORMALIZER_TESTS, "paths = [", 16)]},
        {"tools": [s.write(PROBE_FILE, _PROBE)]},
        {"tools": [call("bash", command=PROBE)]},
        {"needs": [probe, "suite-broad"],
         "text": "The tenth path starts with two slashes, and my loop strips every empty "
                 "segment in front before it puts one root back, so the two slashes become "
                 "one. The probe shows more than the suite does: the root alone comes out "
                 "empty, and any path that starts with two slashes loses one. The fix was "
                 "too broad: only the root that a `..` popped should come back, nothing that "
                 "was there should go. The test stays as it is."},
    )
    broad_code = s.file_fact("dots-broad", NORMALIZERS, _ROOT_ANCHOR, 8,
                             "the root's condition as the first fix left it")
    probe_after = s.output_fact(
        "probe-after", ["'/' -> '/'", "'//cdn/../x' -> '//x'",
                        "'/guide/../../assets/logo.png' -> '/assets/logo.png'"],
        call("bash", command=PROBE), "what the probe printed with the narrowed fix")
    quick = s.output_fact("normalizers-after", ["46 passed"],
                          call("bash", command=NORMALIZERS_RUN),
                          "the normaliser tests with the narrowed fix")
    s.turn(
        "Narrow it, then run the probe and the normaliser tests.",
        {"needs": [broad_code, "probe-broad", "decision-normalizer"],
         "text": "The root goes back in only where a `..` popped it: when nothing is left, or "
                 "when the first segment kept is not the empty one, which is what the comment "
                 "above the condition describes. No loop, nothing stripped.",
         "tools": [s.edit(NORMALIZERS, _BROAD, _RELEASED)]},
        {"tools": [call("bash", command=PROBE)]},
        {"tools": [call("bash", command=NORMALIZERS_RUN)]},
        {"needs": [probe_after, quick, "probe-broad"],
         "text": "The root alone stays a root, two leading slashes stay two, and the logo "
                 "keeps its slash; the normaliser tests pass, the table's tenth path among "
                 "them, unchanged."},
    )
    built = s.output_fact("builder-after", ["https://docs.example.org/assets/logo.png",
                                            "up: https://docs.example.org/"],
                          call("bash", command=BUILD), "what URIBuilder built after the fix")
    s.turn(
        "Our sitemap generator builds its URLs with URIBuilder.add_path. Check that it is "
        "right now with a path that climbs too far.",
        {"needs": ["builder-add-path"], "tools": [call("bash", command=BUILD)]},
        {"needs": [built],
         "text": "Right: `add_path` roots a relative path first, and the `..` segments above "
                 "that root stop at it, for the logo and for a bare `..`."},
    )
    s.turn(
        "Add a regression test for our logo link to tests/test_uri.py, after the last test of "
        "the resolution class, and run that file.",
        {"needs": ["rule-tests", "decision-normalizer"],
         "tools": [s.read(URI_TESTS, "class TestURIReferencesResolve:", 90)]},
        {"tools": [s.edit(URI_TESTS, _URI_TESTS_END, _URI_TESTS_END + _URI_TEST)]},
        {"tools": [call("bash", command=URI_RUN)]},
        {"text": "`test_dot_segments_above_the_root_keep_it` resolves the logo's link against "
                 "the install page and expects it under the host; the file passes."},
    )
    correction = s.said_fact(
        "correction-normalizers", "request",
        "move the regression test to tests/test_normalizers.py, right after "
        "test_remove_dot_segments",
        "the correction (where the regression test goes, and what it checks)",
        otherwise_text="The regression test stays in test_uri.py, on the resolution.")
    s.turn(
        "Correction: move the regression test to tests/test_normalizers.py, right after "
        "test_remove_dot_segments, calling the function directly, since that is where the bug "
        "was. And make it check what the first fix broke as well, the root alone and a path "
        "with two leading slashes, not only our link. Run that file.",
        {"needs": [correction, "probe-broad", "suite-broad"],
         "tools": [s.edit(URI_TESTS, _URI_TEST, "")]},
        {"tools": [s.edit(NORMALIZER_TESTS, _NORMALIZER_TESTS_AT,
                          _NORMALIZER_TESTS_AT + _NORMALIZER_TEST)]},
        {"tools": [call("bash", command=NORMALIZERS_RUN)]},
        {"needs": ["rule-tests"],
         "text": "Moved: `test_remove_dot_segments_keeps_the_root` follows "
                 "`test_remove_dot_segments` and checks the logo's path, a bare climb to the "
                 "root, a path with two leading slashes and the root alone; test_uri.py is as "
                 "it was, and the file passes."},
    )


def _wrap_up(s: Script) -> None:
    after = s.output_fact(
        "suite-after",
        ["tests/test_normalizers.py::test_remove_dot_segments[path_fixture9] PASSED",
         "tests/test_normalizers.py::test_remove_dot_segments_keeps_the_root PASSED",
         "2837 passed"],
        call("bash", command=SUITE_VERBOSE), "the suite after the narrowed fix, verbosely")
    s.turn(
        "Run the whole suite verbosely once more, and tell me how it compares with the first "
        "two runs.",
        {"tools": [call("bash", command=SUITE_VERBOSE)]},
        {"needs": [after, "suite-before", "suite-broad"],
         "text": "Everything passes: the two tests that failed at the start, the one the "
                 "first fix broke, and the new test, one more than the suite had."},
    )
    notes = s.file_fact("notes-unreleased", NOTES, "2.x.y - 202z-aa-bb", 4,
                        "the placeholder of the unreleased release notes")
    s.turn(
        "Add a release note in docs/source/release-notes/unreleased.rst, in place of its "
        "placeholder, worded like the notes of 1.5.0.",
        {"tools": [s.read(NOTES), s.read("docs/source/release-notes/1.5.0.rst")]},
        {"needs": [notes, "decision-normalizer", "repro-before"],
         "tools": [s.edit(NOTES, _NOTES_AT, _NOTES)]},
        {"text": "Added in place of the placeholder: the root of an absolute path kept when a "
                 "`..` climbs above it, with a resolution as the example, and the two cases "
                 "the fix leaves alone."},
    )
    s.turn(
        "For the docs team's write-up: what did we try that did not work, which test broke "
        "after the first fix and why, and what did the checker's logo link resolve to before "
        "any fix?",
        {"needs": ["failed-strict", "strict-output", "suite-broad", "probe-broad",
                   "repro-before"],
         "text": "Resolving with `strict=True`: the same broken URL. The first fix put one "
                 "root back on every absolute path after stripping every empty segment in "
                 "front, which broke `test_remove_dot_segments` on the path that starts with "
                 "two slashes (the tenth of its table), and quietly turned the root alone into "
                 "an empty path; the narrowed fix only restores a root a `..` popped. Before "
                 "any fix the logo resolved with the host run into `assets/logo.png`, no "
                 "slash between them."},
    )
    fixed = s.file_fact("dots-fixed", NORMALIZERS, _ROOT_ANCHOR, 8,
                        "the root's condition as it is now")
    s.turn(
        "Show me the lines that decide the root as they are now, and tell me which rules and "
        "decisions of this session the change keeps.",
        {"tools": [s.read(NORMALIZERS, _ROOT_ANCHOR, 12)]},
        {"needs": [fixed, "rule-tests", "rule-mixin", "decision-normalizer"],
         "text": "An absolute path gets its root back when nothing is left or the first "
                 "segment kept is not empty. The fix is in normalizers.py, not in our checker; "
                 "_mixin.py is untouched, and no existing test was skipped or changed, the "
                 "one the first fix broke included."},
    )
