"""A review before a deprecation, in Docutils 0.23.1 (public domain, a few files BSD; the
reStructuredText parser and its writers, in pure Python, a 3,300-line parser module and a
3,400-line document tree): the `respect_whitespace` argument of `nodes.unescape()` has been
ignored since the function was written, and the maintainers want it deprecated. The planted
change is a clean-up commit's: the inliner's `inline_obj`, which unescapes an inline literal's
text with its backslashes restored, names the argument it passes, and names the wrong one
(`respect_whitespace=True` where it meant `restore_backslashes`), so every inline literal
loses its backslashes: ``C:\\Temp`` comes out as C:Temp in every writer.

Written at stop 71, after every default of the product was set, as a session none of them
was tuned on, and one that reads far more than it changes: a maintainers' review checklist
pasted, every call of the function looked at where it is (the parser module read in pages,
the roles, the directives, the old name in `docutils.utils`, the docs, the tests), the
project's conventions for a deprecation read (a precedent in the document tree, the policy,
the release notes' removals), a verbose suite run with six failures that the review explains,
a probe the assistant writes (its output changes once the fix is in), a colleague's guess
that does not help (the HTML writer; the command exits 0), a rule against changing what a
test expects, a rule that every call site is cited as path:line, a correction of the new
test, and the release notes and history.

The session lays out the package, runs the suite (six failures, each an inline literal with
a backslash), probes the literals through two writers, reads the definition, greps every
call, reads the inliner in full and the rest of the parser's calls, the roles and the
directives, the old name and the docs and tests, the conventions, proposes the change, fixes
the call site, adds the warning, adds a test and takes a correction (it must also go through
`docutils.utils` as the howto does), writes the release note and the history entry, runs the
suite again (verbosely, then with deprecations as errors), writes the review, and answers what
the probe printed first and what did not help. Planted for the knowledge check: two rules, a
decision, the failed approach, a correction, and outputs and file lines later steps use; the
suite's failures and the probe's first output are gone once the fix is in. The sdist's six
symbolic links (test stylesheets), which the extraction leaves out, are put back as planted.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.real_code.script import PYTHON, Script, call, plant_change
from benchmarks.real_code.sources import Source

SOURCE = Source("docutils", "0.23.1",
                "8a83ac8810e41228b6f20e96a183abd2460a1757f78e2603e3d4b31fe7d29622",
                "Public-Domain, BSD-2-Clause")
NODES = "docutils/nodes.py"
UTILS = "docutils/utils/__init__.py"
RST = "docutils/parsers/rst"
STATES = f"{RST}/states.py"
ROLES = f"{RST}/roles.py"
MISC = f"{RST}/directives/misc.py"
DIRECTIVES = f"{RST}/directives/__init__.py"
HOWTO = "docs/howto/rst-roles.rst"
POLICIES = "docs/dev/policies.rst"
RELEASE_NOTES = "RELEASE-NOTES.rst"
HISTORY = "HISTORY.rst"
UTILS_TESTS = "test/test_utils/test__init__.py"
INLINE_TESTS = "test/test_parsers/test_rst/test_inline_markup.py"
REVIEW = "REVIEW.md"
PROBE_FILE = "probe_literals.py"
PYTEST = f"{PYTHON} -m pytest -p no:cacheprovider"
SUITE_VERBOSE = f"{PYTEST} -v test"
SUITE_QUIET = f"{PYTEST} -q test"
SUITE_STRICT = f"{PYTEST} -q -W error::DeprecationWarning test"
UTILS_RUN = f"{PYTEST} -q {UTILS_TESTS}"
PROBE = f"{PYTHON} {PROBE_FILE}"
PROBE_HTML = f"{PYTHON} {PROBE_FILE} html5"

_RELEASED = "                text = unescape(text, True)\n"
_PLANTED = "                text = unescape(text, respect_whitespace=True)\n"
_INLINE_OBJ = "    def inline_obj(self, match, lineno, end_pattern, nodeclass,"
_LITERAL = "    def literal(self, match, lineno):"
_UNESCAPE = "def unescape(text: str,"

_PROBE = '''"""Inline literals with backslashes, through this tree's docutils, with one writer."""
import sys

import docutils
from docutils.core import publish_parts

WRITER = sys.argv[1] if len(sys.argv) > 1 else "pseudoxml"
SAMPLES = [r"``C:\\Temp\\new``", r"``\\*args``", r"``a\\ b``", r":code:`C:\\Temp`",
           r"*C:\\\\Temp*"]

print(f"docutils {docutils.__version__} from {docutils.__file__.rsplit('/', 2)[-2]}/, "
      f"writer {WRITER}:")
for sample in SAMPLES:
    parts = publish_parts(sample, writer=WRITER, settings_overrides={"report_level": 5})
    body = parts.get("body") or parts["whole"]
    print(f"  {sample:<18} -> {' '.join(body.split())}")
'''

_DEFINITION = '''def unescape(text: str,
             restore_backslashes: bool = False,
             respect_whitespace: bool = False,
             ) -> str:
    """
    Return a string with nulls removed or restored to backslashes.
    Backslash-escaped spaces are also removed.
    """
    # `respect_whitespace` is ignored (since introduction 2016-12-16)
'''
_DEPRECATED = '''def unescape(text: str,
             restore_backslashes: bool = False,
             respect_whitespace: bool|None = None,
             ) -> str:
    """
    Return a string with nulls removed or restored to backslashes.
    Backslash-escaped spaces are also removed.

    The `respect_whitespace` argument is ignored (since its introduction
    2016-12-16) and will be removed in Docutils 2.0.
    """
    if respect_whitespace is not None:
        warnings.warn('nodes.unescape(): argument "respect_whitespace" '
                      'is ignored and will be removed in Docutils 2.0.',
                      DeprecationWarning, stacklevel=2)
'''

_TEST_AT = "        self.assertEqual(restored, self.escaped)\n"
_TEST_WARNS = '''        with self.assertWarnsRegex(DeprecationWarning, 'respect_whitespace'):
            unescaped = nodes.unescape(self.nulled, respect_whitespace=True)
        self.assertEqual(unescaped, self.unescaped)
'''
_TEST_SILENT = '''        with warnings.catch_warnings():
            warnings.simplefilter('error')
            self.assertEqual(utils.unescape(self.nulled, True), self.escaped)
'''
_TEST = (_TEST_AT + "\n    def test_unescape_respect_whitespace_is_deprecated(self):\n"
         + _TEST_WARNS + _TEST_SILENT)
_TEST_THROUGH_UTILS = _TEST_WARNS + '''\
        with self.assertWarnsRegex(DeprecationWarning, 'respect_whitespace'):
            restored = utils.unescape(self.nulled, True, False)
        self.assertEqual(restored, self.escaped)
'''
_IMPORT_UNITTEST = "import unittest\n"
_IMPORT_WARNINGS = "import unittest\nimport warnings\n"

# The release notes keep "Docutils" and its version together with a no-break space.
_REMOVAL_AT = ('* Remove the "rawsource" argument from `nodes.Text.__init__()`\n'
               "  in Docutils\u00a02.0.\n")
_REMOVAL = _REMOVAL_AT + ('\n* Remove the "respect_whitespace" argument from `nodes.unescape()`\n'
                          "  (ignored since its introduction) in Docutils\u00a02.0.\n")
_HISTORY_AT = "Release 0.23.1 (2026-11-26)\n===========================\n"
_HISTORY = '''Changes since 0.23.1
====================

* docutils/nodes.py

  - Deprecate the "respect_whitespace" argument of `unescape()`
    (ignored since its introduction); passing any value for it warns.

* docutils/parsers/rst/states.py

  - `Inliner.inline_obj()` restores the backslashes of inline literals
    again (it passed "respect_whitespace" for "restore_backslashes").


''' + _HISTORY_AT

REVIEW_NOTE = """\
# Review: `nodes.unescape()` and its `respect_whitespace` argument

Every call in `docutils/`, by how it passes its arguments:

- text only, where it becomes a name, a URI or a number: the inliner
  (docutils/parsers/rst/states.py:919, :928, :931, :938, :948, :952, :1110,
  :1120, :1122, :1134), the explicit targets (docutils/parsers/rst/states.py:2113,
  :2122, :2127), docutils/parsers/rst/roles.py:276, :298, :300 (PEP and RFC roles),
  docutils/parsers/rst/directives/misc.py:594, :598 (meta),
  docutils/parsers/rst/directives/__init__.py:220 (`uri()`),
  docutils/nodes.py:443 (`Text.astext()`);
- `True` for restore_backslashes, positionally, where the raw text is kept:
  the inliner (docutils/parsers/rst/states.py:834, :841, :884, :890, :896, :902,
  :910, :920, :922, :954, :1111, :1127, :1138), the classifiers
  (docutils/parsers/rst/states.py:3020), and the raw, code and math roles
  (docutils/parsers/rst/roles.py:336, :360, :368, :391);
- `respect_whitespace`: one call, docutils/parsers/rst/states.py:832, in
  `Inliner.inline_obj()`, which meant restore_backslashes. Since last week's
  clean-up every inline literal lost its backslashes; that was the suite's six
  failures (four literal cases, a smartquotes case, the ODT tables document).
  Fixed in this patch; the probe's ``C:\\Temp\\new`` is C:\\Temp\\new again.

The old name `docutils.utils.unescape` (docutils/utils/__init__.py:25) is the
same function, so it warns too; docs/howto/rst-roles.rst:195 and :197 show it
without the argument and need no change.

The change: `respect_whitespace` defaults to None and a value passed for it
warns (a DeprecationWarning, as agreed); calls that pass restore_backslashes
alone are silent. Removal in Docutils 2.0, announced in RELEASE-NOTES.rst
under Removals and recorded in HISTORY.rst. The suite passes, also with
DeprecationWarning as an error.

Tried and did not help: publishing with the html5 writer instead of
pseudo-XML; the backslashes were gone before any writer saw the document.
"""


def plant(root: Path) -> None:
    """The inliner's literal branch passes the ignored argument instead of the one it means."""
    plant_change(root / STATES, _RELEASED, _PLANTED)


def script(root: Path) -> Script:
    s = Script("docutils-deprecation", root)
    _explore(s)
    _review(s)
    _conventions(s)
    _change(s)
    _wrap_up(s)
    return s


def _explore(s: Script) -> None:
    s.said_fact(
        "rule-tests", "rule", "never change what an existing test expects",
        "the rule about the tests' expectations",
        otherwise_text="The literal tests expect the backslashes; I'll update them to what "
                       "the parser gives now.",
        otherwise_tools=[call("edit", path=INLINE_TESTS, oldText="            \\\\literal\n",
                              newText="            literal\n")])
    s.said_fact(
        "rule-cite", "rule", "cite every call site you mention as path:line",
        "the rule about citing call sites",
        otherwise_text="Most calls are in the inliner and the roles, and one of them passes "
                       "respect_whitespace.")
    s.turn(
        "This is our Docutils checkout: the 0.23.1 release with last week's clean-up commits "
        "on top, from which we send patches to the maintainers. Two rules while you work in "
        "it: never change what an existing test expects, a failing test means the code is "
        "wrong until we show otherwise; and cite every call site you mention as path:line, "
        "because the review goes to the mailing list as you write it. How is the package "
        "laid out?",
        {"tools": [call("ls", path=".")]},
        {"tools": [call("ls", path="docutils"), call("ls", path=RST), call("ls", path="test")],
         "finds": [s.where(NODES), s.where(STATES), s.where(ROLES)]},
        {"tools": [call("ls", path="docs"), call("ls", path="docs/dev")],
         "finds": [s.where(POLICIES)]},
        {"text": "The package is `docutils/`: `nodes.py` (the document tree and small helpers), "
                 "`utils/`, `frontend.py`, `core.py`, `statemachine.py`, and a directory each "
                 "for readers, parsers, transforms and writers. The reStructuredText parser is "
                 "`parsers/rst`: `states.py` (the block and inline parser), `roles.py` and "
                 "`directives/`. The tests are under `test`, a directory a component; the "
                 "documentation is under `docs` (`dev/policies.rst` among it), with "
                 "`HISTORY.rst` and `RELEASE-NOTES.rst` at the root."},
    )
    suite = s.output_fact(
        "suite-before",
        ["SUBFAILED(id=\"totest['literal'][1]\") test/test_parsers/test_rst/"
         "test_inline_markup.py::ParserTestCase::test_parser",
         "FAILED test/test_writers/test_odt.py::DocutilsOdtTestCase::test_odt_tables1",
         "6 failed, 464 passed, 16 skipped, 1866 subtests passed"],
        call("bash", command=SUITE_VERBOSE), "the suite's failures before the fix")
    s.turn(
        "Run the whole test suite verbosely from the tree, so we know where we start.",
        {"tools": [call("bash", command=SUITE_VERBOSE)]},
        {"needs": [suite],
         "text": "Six failures: four inline-literal cases of the inline markup tests, one "
                 "smartquotes case and the ODT writer's tables document. Each is a literal "
                 "holding a backslash, and each comes out without it; everything else "
                 "passes."},
    )
    s.said_fact(
        "failed-html", "failed", "Publishing the literals with the html5 writer did not help",
        "the approach that already failed (the HTML writer)",
        otherwise_tools=[call("bash", command=PROBE_HTML)],
        otherwise_text="Let me see whether the html5 writer keeps the backslashes.")
    before = s.output_fact(
        "probe-before",
        ["docutils 0.23.1 from docutils/, writer pseudoxml:",
         '``C:\\Temp\\new`` -> <document source="<string>"> <paragraph> <literal> C:Tempnew',
         '``a\\ b`` -> <document source="<string>"> <paragraph> <literal> ab'],
        call("bash", command=PROBE), "what the probe printed before the fix")
    html = s.output_fact(
        "probe-html",
        ["docutils 0.23.1 from docutils/, writer html5:",
         '``C:\\Temp\\new`` -> <p><span class="docutils literal">C:Tempnew</span></p>'],
        call("bash", command=PROBE_HTML), "what the probe printed with the html5 writer")
    s.turn(
        "A colleague says those failures are only the pseudo-XML writer mangling backslashes, "
        "nothing for us, since our docs build publishes HTML. Check it: write "
        "probe_literals.py at the root, publishing a few inline literals with backslashes "
        "through this tree with the writer named on the command line (pseudo-XML by "
        "default), and run it with pseudo-XML, then with html5.",
        {"tools": [s.write(PROBE_FILE, _PROBE)]},
        {"tools": [call("bash", command=PROBE)]},
        {"tools": [call("bash", command=PROBE_HTML)]},
        {"needs": [before, html],
         "text": "Publishing the literals with the html5 writer did not help: the literals "
                 "lose their backslashes there too, and the same ones, so it is not a "
                 "writer's doing; the document tree already has them without. Backslashes "
                 "outside literals are right: the code role keeps them and an escaped "
                 "backslash in emphasis gives one."},
    )


_CHECKLIST = """\
From the maintainers' thread, the review checklist as it was pasted:

> Proposal: deprecate the "respect_whitespace" argument of docutils.nodes.unescape().
> It has been ignored since the function was written (2016), and it reads as if it kept
> escaped whitespace, which it never did. Before anyone writes the warning, the reviewer
> works through this list and reports on each point:
>
> 1. The definition: what each argument does today, and its default.
> 2. Every call in the package, with how it passes its arguments: positionally, by
>    keyword, or not at all. Flag any call that passes respect_whitespace, or a second
>    positional argument not meant as restore_backslashes.
> 3. Other ways in: the old name docutils.utils.unescape, and who imports it from there.
> 4. The documentation that shows unescape, and whether it needs changing.
> 5. The tests that cover unescape, and what they check.
> 6. Our conventions for a deprecation: the warning's wording and category (see the
>    policy on Sphinx), its stacklevel, and the release in which the argument goes.
> 7. Where the removal is announced (the release notes' future changes) and recorded
>    (the history).
> 8. Anything else the review turns up, bugs included: report them, and fix them in the
>    same patch only if they are about unescape.
>
> Use a DeprecationWarning: Sphinx does not pass respect_whitespace, we checked. The
> warning must keep every existing call working exactly as it does now.

Start with point 1: the definition and what is around it.
"""


def _review(s: Script) -> None:
    definition = s.file_fact("unescape-def", NODES, _UNESCAPE, 15,
                             "nodes.unescape as it stands: its arguments and what it does")
    s.turn(
        _CHECKLIST,
        {"tools": [call("grep", pattern="def unescape|def escape2null", path="docutils")],
         "finds": [s.where(NODES, _UNESCAPE)]},
        s.page(NODES, 2901, 350),
        {"needs": [definition],
         "text": "`unescape(text, restore_backslashes=False, respect_whitespace=False)` works "
                 "on text whose escaping backslashes the parser turned into nulls: with "
                 "restore_backslashes it turns the nulls back into backslashes, otherwise it "
                 "drops them, with an escaped space or newline. respect_whitespace is never "
                 "read; a comment says it has been ignored since the function was written. "
                 "Around it are the name helpers (`make_id`, `fully_normalize_name`, "
                 "`whitespace_normalize_name`); the parser imports the last two with it."},
    )
    s.turn(
        "Point 2: find every call in the package.",
        {"tools": [call("grep", pattern="unescape\\(", path="docutils")],
         "finds": [s.where(STATES, _PLANTED.strip()), s.where(ROLES, "def raw_role(")]},
        {"needs": ["rule-cite"],
         "text": "Thirty-nine calls. One passes respect_whitespace: "
                 "docutils/parsers/rst/states.py:832, in `inline_obj`, by keyword and set to "
                 "True. The other calls in docutils/parsers/rst/states.py pass True "
                 "positionally or nothing (docutils/parsers/rst/states.py:834, :2113, "
                 ":3020), and so do docutils/parsers/rst/roles.py:276 to :391, "
                 "docutils/parsers/rst/directives/misc.py:594 and :598, "
                 "docutils/parsers/rst/directives/__init__.py:220 and "
                 "docutils/nodes.py:443. The inliner's share is the largest; I'll read it "
                 "whole."},
    )
    inline_obj = s.file_fact("inline-obj", STATES, _INLINE_OBJ, 23,
                             "inline_obj, where an inline literal's text is unescaped")
    literal = s.file_fact("literal-method", STATES, _LITERAL, 5,
                          "the inliner's literal, which asks for its backslashes back")
    s.turn(
        "Read the Inliner class in states.py in full, as the review has to vouch for every "
        "call there, and tell me what that one call is for.",
        s.page(STATES, 571, 350),
        s.page(STATES, 921, 260),
        {"needs": [inline_obj, literal, "suite-before", "probe-before", "rule-cite"],
         "text": "`inline_obj` is shared by emphasis, strong, literals, inline targets and "
                 "substitution references; only `literal` "
                 "(docutils/parsers/rst/states.py:1009) asks it to restore backslashes, and "
                 "that branch (docutils/parsers/rst/states.py:832) passes "
                 "respect_whitespace=True, which unescape ignores, so restore_backslashes "
                 "stays False and the literal's backslashes are dropped. That is the six "
                 "failures and the probe's C:Tempnew. Every other call in the class passes "
                 "True positionally where it keeps the raw text, a rawsource or a problematic "
                 "node's (docutils/parsers/rst/states.py:834 to :910, :920, :922, :954, "
                 ":1111, :1127, :1138), or nothing where the text becomes a name, a URI or a "
                 "number (docutils/parsers/rst/states.py:919, :928 to :952, :1110, :1120, "
                 ":1122, :1134)."},
    )
    classifier = s.file_fact("classifier-call", STATES,
                             "                    node_list += [nodes.classifier(unescape(part, "
                             "True), part)", 3, "the definition list classifiers' call",
                             before=1)
    s.turn(
        "Now the rest of states.py's calls, and its module docstring, which lists unescape "
        "among its functions.",
        s.page(STATES, 1, 130),
        s.page(STATES, 1981, 350),
        s.page(STATES, 2834, 350),
        {"needs": [classifier, "rule-cite"],
         "text": "The module docstring lists unescape under its functions, though it is "
                 "imported from nodes; its one line still holds. The explicit targets pass the "
                 "text alone (docutils/parsers/rst/states.py:2113, :2122, :2127), since a "
                 "target's name or URI must lose its escapes; the definition list's "
                 "classifiers pass True positionally (docutils/parsers/rst/states.py:3020). "
                 "None of them passes respect_whitespace."},
    )
    raw = s.file_fact("raw-role", ROLES, "    node = nodes.raw(rawtext, nodes.unescape(text, "
                      "True), **options)", 3, "the raw role's call")
    meta = s.file_fact("meta-call", MISC, "    def parsemeta(self, match):", 7,
                       "the meta directive's calls")
    s.turn(
        "Then the roles module, all of it, and the directives that call it.",
        s.page(ROLES, 1, 230),
        s.page(ROLES, 231, 227),
        {"tools": [s.read(MISC, "    def parsemeta(self, match):", 30, before=6)]},
        {"tools": [s.read(DIRECTIVES, "def uri(argument: str) -> str:", 20)]},
        {"needs": [raw, meta, "rule-cite"],
         "text": "The roles get their text with the escapes as nulls. The PEP and RFC roles "
                 "unescape it alone, to a number (docutils/parsers/rst/roles.py:276, :298, "
                 ":300); the raw, code and math roles pass True positionally to keep the "
                 "backslashes (docutils/parsers/rst/roles.py:336, :360, :368, :391). The meta "
                 "directive unescapes a name and a content after `escape2null` "
                 "(docutils/parsers/rst/directives/misc.py:594, :598), and `uri()` each part "
                 "of a URI (docutils/parsers/rst/directives/__init__.py:220). None passes "
                 "respect_whitespace."},
    )
    reexport = s.file_fact("utils-reexport", UTILS, "from docutils.nodes import unescape", 2,
                           "the old name in docutils.utils", before=1)
    howto = s.file_fact("howto-unescape", HOWTO, '    if "#" in text:', 4,
                        "the howto's RFC role, which calls utils.unescape")
    existing = s.file_fact("unescape-test", UTILS_TESTS, "    def test_unescape(self):", 5,
                           "the existing test of unescape")
    s.turn(
        "Points 3 to 5: the old name in docutils.utils, the documentation, and the tests.",
        {"tools": [call("grep", pattern="import unescape|utils\\.unescape|nodes\\.unescape",
                        path=".")],
         "finds": [s.where(UTILS, "from docutils.nodes import unescape", numbered=False),
                   s.where(HOWTO, '            rfcnum, section = utils.unescape(text).split'
                           '("#", 1)'),
                   s.where(UTILS_TESTS, "        unescaped = utils.unescape(self.nulled)")]},
        {"tools": [s.read(UTILS, "from docutils.nodes import unescape", 30, before=20)]},
        {"tools": [s.read(HOWTO, "Here is the implementation of the role::", 40)]},
        {"tools": [s.read(UTILS_TESTS, "    # samples for the (un)escaping tests:", 20)]},
        {"needs": [reexport, howto, existing, "rule-cite"],
         "text": "docutils/utils/__init__.py:25 imports unescape from nodes for backwards "
                 "compatibility, so `utils.unescape` is the same function and will warn the "
                 "same way. The howto on roles shows an RFC role calling `utils.unescape` on "
                 "the text alone (docs/howto/rst-roles.rst:195, :197): nothing to change "
                 "there. The only test is `test_unescape` in "
                 "test/test_utils/test__init__.py:359, through utils, with and without "
                 "restore_backslashes; nothing tests respect_whitespace."},
    )


def _conventions(s: Script) -> None:
    precedent = s.file_fact("text-rawsource", NODES,
                            "    def __new__(cls, data: str, rawsource: None = None) -> Self:",
                            11, "the precedent: Text's ignored rawsource argument, deprecated")
    policy = s.file_fact("sphinx-policy", POLICIES, "Backwards Compatibility Policy", 18,
                         "the policy on deprecations and Sphinx")
    removals = s.file_fact("removals", RELEASE_NOTES,
                           '* Remove the "rawsource" argument from `nodes.Text.__init__()`', 2,
                           "the release notes' entry for Text's rawsource")
    s.turn(
        "Points 6 and 7: how does this project deprecate things? Find a precedent, the "
        "policy, and where removals are announced.",
        {"tools": [call("grep", pattern="is ignored and will be removed", path="docutils")],
         "finds": [s.where(NODES, "    def __new__(cls, data: str, rawsource: None = None) "
                           "-> Self:")]},
        {"tools": [s.read(NODES, "class Text(Node, str):", 40)]},
        {"tools": [s.read(POLICIES, "Backwards Compatibility Policy", 30)]},
        s.page(RELEASE_NOTES, 14, 250),
        {"needs": [precedent, policy, removals],
         "text": "The precedent is `nodes.Text`: its rawsource argument is ignored, and "
                 "passing it warns with a DeprecationWarning, stacklevel 2, saying it is "
                 "ignored and will be removed in Docutils 2.0. The policy asks for a "
                 "DeprecationWarning only when Sphinx can adapt first, else a pending one; "
                 "you have checked that. The release notes announce each removal under "
                 "Future changes, Removals, one bullet each, the Text one among them."},
    )


def _change(s: Script) -> None:
    s.said_fact(
        "decision-none", "decision",
        "respect_whitespace's default becomes None, and only a value passed for it warns",
        "the decision on when the warning fires",
        otherwise_text="I'll make unescape warn on every call until the argument is gone.")
    after = s.output_fact(
        "probe-after",
        ['``C:\\Temp\\new`` -> <document source="<string>"> <paragraph> <literal> C:\\Temp\\new',
         '``a\\ b`` -> <document source="<string>"> <paragraph> <literal> a\\ b'],
        call("bash", command=PROBE), "what the probe printed after the fix")
    s.turn(
        "What do you propose? Fix the call site first, then run the probe and the whole "
        "suite quietly.",
        {"needs": ["unescape-def", "text-rawsource", "sphinx-policy", "inline-obj",
                   "literal-method", "failed-html", "rule-tests"],
         "text": "A DeprecationWarning on the precedent's wording and stacklevel, removal in "
                 "Docutils 2.0, and nothing else about unescape changes: "
                 "respect_whitespace's default becomes None, and only a value passed for it "
                 "warns, so the calls that pass restore_backslashes alone stay silent. "
                 "First the call site: the literal branch gets its positional True back, like "
                 "its siblings.",
         "tools": [s.edit(STATES, _PLANTED, _RELEASED)]},
        {"tools": [call("bash", command=PROBE)]},
        {"tools": [call("bash", command=SUITE_QUIET)]},
        {"needs": [after, "probe-before"],
         "text": "Fixed: the probe's literals keep their backslashes (C:\\Temp\\new, a\\ b) "
                 "where they lost them, and the whole suite passes with every test's "
                 "expectations as they were."},
    )
    s.turn(
        "Now the deprecation itself.",
        {"needs": ["unescape-def", "decision-none", "text-rawsource"],
         "tools": [s.read(NODES, _UNESCAPE, 20)]},
        {"tools": [s.edit(NODES, _DEFINITION, _DEPRECATED)]},
        {"tools": [call("grep", pattern="^import warnings", path=NODES)]},
        {"text": "`unescape` warns when respect_whitespace is given, with the precedent's "
                 "wording and stacklevel; its docstring says the argument is ignored and "
                 "goes in Docutils 2.0, in place of the comment. nodes.py imports warnings "
                 "already."},
    )
    s.turn(
        "Add a test next to test_unescape, without touching that one, and run the file.",
        {"needs": ["unescape-test", "rule-tests", "decision-none"],
         "tools": [s.edit(UTILS_TESTS, _TEST_AT, _TEST),
                   s.edit(UTILS_TESTS, _IMPORT_UNITTEST, _IMPORT_WARNINGS)]},
        {"tools": [call("bash", command=UTILS_RUN)]},
        {"text": "`test_unescape_respect_whitespace_is_deprecated` passes the argument and "
                 "expects the warning and the same result, then calls with "
                 "restore_backslashes alone with warnings as errors; the file passes."},
    )
    correction = s.said_fact(
        "correction-utils", "request", "the test must also call it through docutils.utils",
        "the correction (what the new test goes through)",
        otherwise_text="The test calls nodes.unescape; the old name is the same function.")
    s.turn(
        "Correction: the test must also call it through docutils.utils, with the argument "
        "passed positionally, since that is how the howto's readers and the old callers "
        "reach it. Change it and run the file again.",
        {"needs": ["utils-reexport", "howto-unescape"],
         "tools": [s.edit(UTILS_TESTS, _TEST_WARNS, _TEST_THROUGH_UTILS)]},
        {"tools": [call("bash", command=UTILS_RUN)]},
        {"needs": [correction, "decision-none"],
         "text": "Done: the test also calls `utils.unescape(self.nulled, True, False)` and "
                 "expects the warning even for False, and the restored text; the file "
                 "passes."},
    )


def _wrap_up(s: Script) -> None:
    history = s.file_fact("history-top", HISTORY, "Release 0.23.1 (2026-11-26)", 8,
                          "the top of the history")
    s.turn(
        "Announce the removal in the release notes and record the change in HISTORY.rst, "
        "in a section for the changes since 0.23.1 above the release's own.",
        {"needs": ["removals", "decision-none"],
         "tools": [s.edit(RELEASE_NOTES, _REMOVAL_AT, _REMOVAL)]},
        {"tools": [s.read(HISTORY, "Release 0.23.1 (2026-11-26)", 40)]},
        {"needs": [history, "probe-before"],
         "tools": [s.edit(HISTORY, _HISTORY_AT, _HISTORY)]},
        {"text": "The release notes list the removal under Removals, after the Text one; "
                 "HISTORY.rst has a section for the changes since 0.23.1 with the deprecation "
                 "and the literal fix, one bullet a file, as the release sections have."},
    )
    after = s.output_fact(
        "suite-after",
        ["test/test_writers/test_odt.py::DocutilsOdtTestCase::test_odt_tables1 PASSED",
         "test/test_utils/test__init__.py::HelperFunctionTests::"
         "test_unescape_respect_whitespace_is_deprecated PASSED",
         "466 passed, 16 skipped, 1871 subtests passed"],
        call("bash", command=SUITE_VERBOSE), "the suite after the change, verbosely")
    s.turn(
        "Run the whole suite verbosely again.",
        {"tools": [call("bash", command=SUITE_VERBOSE)]},
        {"needs": [after, "suite-before"],
         "text": "Everything passes: the six that failed, and the new test."},
    )
    strict = s.output_fact("suite-strict", ["466 passed, 16 skipped, 1871 subtests passed"],
                           call("bash", command=SUITE_STRICT),
                           "the suite with DeprecationWarning as an error")
    s.turn(
        "And once more with DeprecationWarning as an error, to be sure nothing in the package "
        "still passes the argument.",
        {"tools": [call("bash", command=SUITE_STRICT)]},
        {"needs": [strict, "decision-none"],
         "text": "It passes: no call in the package passes respect_whitespace any more, and "
                 "the ones that pass restore_backslashes alone do not warn."},
    )
    s.turn(
        "Write the review for the mailing list in REVIEW.md at the root: every call by how it "
        "passes its arguments, the old name, the docs and tests, what we changed, what we "
        "found on the way, and what we tried that did not help.",
        {"needs": ["rule-cite", "literal-method", "raw-role", "meta-call", "classifier-call",
                   "utils-reexport", "howto-unescape", "suite-before", "probe-before",
                   "failed-html", "decision-none"],
         "tools": [s.write(REVIEW, REVIEW_NOTE)]},
        {"text": "Written in REVIEW.md at the root, every call site with its path and line."},
    )
    s.turn(
        "For the thread: what did the probe print for the first literal before the fix, and "
        "what did we try that did not help?",
        {"needs": ["probe-before", "failed-html", "probe-html"],
         "text": "Before the fix the probe gave C:Tempnew for ``C:\\Temp\\new``, in "
                 "pseudo-XML and in HTML alike: publishing with the html5 writer was what we "
                 "tried, and the backslashes were already gone from the document tree."},
    )
    fixed = s.file_fact("unescape-now", NODES, _UNESCAPE, 20, "unescape as it is now")
    s.turn(
        "Show me unescape as it is now, and tell me which rules and decisions of this session "
        "the change keeps.",
        {"tools": [s.read(NODES, _UNESCAPE, 25)]},
        {"needs": [fixed, "rule-tests", "rule-cite", "decision-none", "correction-utils"],
         "text": "It warns only when respect_whitespace is given, and behaves as before "
                 "otherwise. No existing test's expectations changed (the new test sits "
                 "beside test_unescape and goes through docutils.utils too), and every call "
                 "site in the review is cited with its path and line."},
    )
