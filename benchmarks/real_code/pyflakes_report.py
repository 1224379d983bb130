"""A user's bug report worked through in pyflakes 3.2.0 (MIT; a 2,200-line checker, 700 tests):
a false "imported but unused" for names exported through a concatenated `__all__`.

Written after the rest of the suite, to check its figures on a session none of the product's
defaults was tuned on: long pasted prompts (the report, a colleague's proposal), a 68 KB
`pytest -v` output, reads across the checker, the messages and the tests.

Planted: `ExportBinding` lost the line that adds the left operand when two lists are
concatenated (`__all__ = ['a'] + ['b']` exports only 'b'); two of the library's tests fail.
The session reproduces the report from stdin, runs the suite verbosely, reads the tests and
the binding, tries a colleague's fix first (dropping the augmented-assignment condition: the
tests still fail), reverts it, restores the line, adds a regression test, checks the
augmented form the user meant, reads how the messages are worded and where the checker
reports them, and writes a pull request description. Planted for the knowledge check: two
rules (NEWS.rst, the messages' wording), a decision, the failed approach, a correction, and
the file lines and outputs later steps use.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.real_code.script import PYTHON, Script, call, plant_change
from benchmarks.real_code.sources import Source

SOURCE = Source("pyflakes", "3.2.0",
                "1c61603ff154621fb2a9172037d84dca3500def8c8b630657d1701f026f8af3f", "MIT")
CHECKER = "pyflakes/checker.py"
MESSAGES = "pyflakes/messages.py"
TESTS = "pyflakes/test/test_imports.py"
PYTEST = f"{PYTHON} -m pytest -p no:cacheprovider"
_LEFT = (
    "                elif isinstance(left, (ast.List, ast.Tuple)):\n"
    "                    _add_to_names(left)\n"
)
_PLANTED = "                elif isinstance(left, (ast.List, ast.Tuple)):\n"
_AUG = "        if '__all__' in scope and isinstance(source, ast.AugAssign):"
_ANY = "        if '__all__' in scope:"
_FAILING = (f"{TESTS}::TestSpecialAll::test_list_concatenation_assignment",
            f"{TESTS}::TestSpecialAll::test_tuple_concatenation_assignment")
_REPRO = (f"printf '%s\\n' 'from .core import load, dump' \"__all__ = ['load'] + ['dump']\" "
          f"| {PYTHON} -m pyflakes")
_AUGMENTED = (f"printf '%s\\n' 'from .core import x, y' '__all__ = []' "
              f"\"__all__ += ['x'] + ['z']\" | {PYTHON} -m pyflakes")

REPORT = """\
Bug report from a user of our linter setup, pasted as they sent it:

> After upgrading to pyflakes 3.2.0 our CI started failing on a package whose __init__.py
> builds its export list from two lists, roughly:
>
>     from .core import load, dump
>     __all__ = ['load'] + ['dump']
>
> pyflakes now says that the import of load is unused, although it is exported. With a
> single list (__all__ = ['load', 'dump']) there is no warning. We have the same pattern with
> tuples in two other packages. We pin pyflakes, so we noticed only on the upgrade; we
> would rather not rewrite the export lists, since a code generator writes them.
"""


def plant(root: Path) -> None:
    plant_change(root / CHECKER, _LEFT, _PLANTED)


def script(root: Path) -> Script:
    s = Script("pyflakes-report", root)
    _reproduce(s)
    _colleague_then_fix(s)
    _around_the_fix(s)
    _wrap_up(s)
    return s


def _reproduce(s: Script) -> None:
    s.said_fact(
        "rule-news", "rule", "never edit NEWS.rst",
        "the rule about NEWS.rst",
        otherwise_text="I'll add a line to NEWS.rst for the fix.",
        otherwise_tools=[call("bash", command="printf '%s\\n' '- Fix __all__ concatenation' "
                                              ">> NEWS.rst")])
    s.said_fact(
        "rule-wording", "rule", "do not change the wording of any message in messages.py",
        "the rule about the messages' wording",
        otherwise_text="I'll make the unused-import message mention __all__.",
        otherwise_tools=[call("edit", path=MESSAGES,
                              oldText="    message = '%r imported but unused'",
                              newText="    message = '%r imported but unused (not in "
                                      "__all__)'")])
    s.turn(
        REPORT + "\nThis is our vendored copy of pyflakes 3.2.0. Two rules while you work on "
        "it: never edit NEWS.rst (the maintainers write it when they release), and do not "
        "change the wording of any message in messages.py (editors and CI tools parse "
        "those texts). First, how is the project laid out?",
        {"tools": [call("ls", path=".")]},
        {"tools": [call("ls", path="pyflakes"), call("ls", path="pyflakes/test")],
         "finds": [s.where(CHECKER), s.where(MESSAGES), s.where(TESTS)]},
        {"tools": [s.read("README.rst"), s.read("setup.py")]},
        {"text": "The checker is one module, `pyflakes/checker.py`, with its warnings in "
                 "`pyflakes/messages.py` and the tests under `pyflakes/test/`, one file per "
                 "area; `api.py` is the command line."},
    )
    repro = s.output_fact(
        "repro-unused", ["<stdin>:1:1: '.core.load' imported but unused"],
        call("bash", command=_REPRO), "what pyflakes says about the report's module")
    s.turn(
        "Reproduce the report without writing any file: feed the two lines to pyflakes on "
        "stdin.",
        {"tools": [call("bash", command=_REPRO)]},
        {"needs": [repro],
         "text": "Reproduced: only the left-hand list's name is reported as an unused import; "
                 "the right-hand one counts as exported."},
    )
    failing = s.output_fact(
        "failing-tests", [f"FAILED {_FAILING[0]}", f"FAILED {_FAILING[1]}",
                          # a verbose line from the middle of the output
                          f"{TESTS}::Test::test_redefinedByFor PASSED"],
        call("bash", command=f"{PYTEST} -v pyflakes/test"), "which tests fail")
    s.turn(
        "Run the whole test suite verbosely and tell me what fails.",
        {"tools": [call("bash", command=f"{PYTEST} -v pyflakes/test")]},
        {"needs": [failing],
         "text": "Two tests of the special `__all__` handling fail, the list and the tuple "
                 "concatenation; the other seven hundred pass or are skipped."},
    )
    tests = s.file_fact("concat-tests", TESTS, "    def test_list_concatenation_assignment", 17,
                        "the two concatenation tests")
    binding = s.file_fact("export-binding", CHECKER, "class ExportBinding(Binding):", 46,
                          "ExportBinding as it is")
    s.turn(
        "Show me those two tests and the code that collects the names of __all__.",
        {"tools": [s.read(TESTS, "class TestSpecialAll(", 260)]},
        {"tools": [call("grep", pattern="class ExportBinding|ExportBinding\\(",
                        path=CHECKER)],
         "finds": [s.where(CHECKER, "class ExportBinding(Binding):")]},
        {"tools": [s.read(CHECKER, "class ExportBinding(Binding):", 120)]},
        {"needs": [tests, binding],
         "text": "The tests expect all three names of `['a'] + ['b'] + ['c']` to be "
                 "exported; `ExportBinding.__init__` walks the concatenation from the right "
                 "and collects each list's string constants."},
    )


def _colleague_then_fix(s: Script) -> None:
    failed = s.said_fact(
        "failed-augassign", "failed", "Dropping the AugAssign condition changed nothing",
        "the approach that already failed (the augmented-assignment condition)",
        otherwise_tools=[call("edit", path=CHECKER, oldText=_AUG, newText=_ANY),
                         call("bash", command=f"{PYTEST} -q {' '.join(_FAILING)}")],
        otherwise_text="Let me try my colleague's change to the AugAssign check first.")
    s.turn(
        "A colleague looked at this last week and wrote to me:\n\n> I am fairly sure the "
        "culprit is the first line of ExportBinding.__init__: it only starts from the "
        "previous names when the assignment is augmented, so a plain concatenation loses "
        "them. Make that check unconditional (keep the '__all__' in scope part, drop the "
        "isinstance on the source) and the tests should pass.\n\nTry exactly that, and run "
        "the two failing tests.",
        {"needs": ["export-binding"], "tools": [s.edit(CHECKER, _AUG, _ANY)]},
        {"tools": [call("bash", command=f"{PYTEST} -q {' '.join(_FAILING)}")]},
        {"text": "Dropping the AugAssign condition changed nothing: both tests fail as "
                 "before, since a module's first `__all__` has no earlier names to start "
                 "from."},
    )
    changed = s.file_fact("export-binding-changed", CHECKER, "class ExportBinding(Binding):",
                          20, "ExportBinding with the colleague's change")
    s.turn(
        "Revert that, then find the real cause in the loop.",
        {"needs": [changed], "tools": [s.edit(CHECKER, _ANY, _AUG)]},
        {"needs": ["export-binding", failed],
         "tools": [s.read(CHECKER, "        # If concatenating lists or tuples", 24)]},
        {"text": "When only two lists are left, the loop's second branch stops without "
                 "adding the left one: the call that collects it is missing, so "
                 "`['load'] + ['dump']` exports `dump` alone."},
    )
    s.said_fact(
        "decision-branch", "decision", "we restore only the missing line in that branch",
        "the decision to change only the two-list branch",
        otherwise_text="While I am here I'll rewrite the loop as a recursive walk.")
    s.turn(
        "Fix it, then run the import tests verbosely.",
        {"needs": ["export-binding", failed, "rule-wording"],
         "text": "The two-list branch must add its left operand before it stops; we restore "
                 "only the missing line in that branch, nothing else of the loop.",
         "tools": [s.edit(CHECKER, _PLANTED, _LEFT)]},
        {"tools": [call("bash", command=f"{PYTEST} -v {TESTS}")]},
        {"text": "Fixed: every import test passes, the two concatenation tests included."},
    )


def _around_the_fix(s: Script) -> None:
    s.file_fact("export-binding-fixed", CHECKER, "class ExportBinding(Binding):", 46,
                "ExportBinding as fixed")
    anchor = "    def test_all_with_attributes(self):"
    regression = (
        "    def test_concatenated_imports_are_exported(self):\n"
        '        """\n'
        "        Names imported and exported through a concatenation of two lists are\n"
        "        used (a regression: the left list was dropped).\n"
        '        """\n'
        "        self.flakes('''\n"
        "        from .core import load, dump\n"
        "        __all__ = ['load'] + ['dump']\n"
        "        ''')\n\n"
    )
    s.turn(
        "Add a regression test with the report's two lines next to the concatenation tests, "
        "and run the tests of that class.",
        {"needs": ["concat-tests", "repro-unused"],
         "tools": [s.edit(TESTS, anchor, regression + anchor)]},
        {"tools": [call("bash", command=f"{PYTEST} -q {TESTS} -k TestSpecialAll")]},
        {"text": "The new test passes with the fix, next to the list and tuple ones."},
    )
    correction = s.said_fact(
        "correction-augmented", "request",
        "I meant the augmented form, __all__ += with a concatenation",
        "the correction (the augmented form)",
        otherwise_text="As asked, the plain concatenation is covered now.")
    augmented = s.output_fact(
        "augmented-output", ["<stdin>:3:1: undefined name 'z' in __all__",
                             "<stdin>:1:1: '.core.y' imported but unused"],
        call("bash", command=_AUGMENTED), "what pyflakes says about the augmented form")
    s.turn(
        "Correction: for the other two packages I meant the augmented form, __all__ += with a "
        "concatenation on the right. Check that one on stdin too, with one name that is not "
        "defined, and tell me exactly what it reports.",
        {"tools": [call("bash", command=_AUGMENTED)]},
        {"needs": [correction, augmented, "export-binding-fixed"],
         "text": "The augmented form starts from the names already exported and then walks "
                 "the concatenation the same way: both operands count now, and only the "
                 "name that is really missing is reported."},
    )
    unused = s.file_fact("message-unused", MESSAGES, "class UnusedImport(Message):", 6,
                         "the UnusedImport message")
    undefined = s.file_fact("message-undefined", MESSAGES, "class UndefinedExport(Message):",
                            6, "the UndefinedExport message")
    s.turn(
        "Which message classes produce those two warnings, and how are they worded?",
        {"tools": [s.read(MESSAGES, "class Message:", 110)]},
        {"needs": [unused, undefined, "rule-wording"],
         "text": "`UnusedImport` and `UndefinedExport`, both formatted from the name with "
                 "`%r`; nothing in them needs to change for this fix."},
    )
    dead = s.file_fact("dead-scopes", CHECKER, "            all_binding = scope.get('__all__')",
                       20, "where the checker reports undefined exports")
    s.turn(
        "Where does the checker decide to report an undefined export or an unused import, "
        "and does it treat an __init__.py differently?",
        {"tools": [call("grep", pattern="UndefinedExport|all_binding", path=CHECKER)],
         "finds": [s.where(CHECKER, "            all_binding = scope.get('__all__')")]},
        {"tools": [s.read(CHECKER, "    def checkDeadScopes(self):", 90)]},
        {"needs": [dead],
         "text": "In `checkDeadScopes`, once a scope is done: an import whose name is in "
                 "`__all__` counts as used, and undefined exports are not reported at all in a "
                 "file named `__init__.py`, which is why the user saw only the unused import."},
    )


def _wrap_up(s: Script) -> None:
    suite = s.output_fact(
        "suite-after", ["709 passed, 22 skipped"],
        call("bash", command=f"{PYTEST} -v pyflakes/test"), "the suite's result after the fix")
    s.turn(
        "Run the whole suite verbosely once more.",
        {"tools": [call("bash", command=f"{PYTEST} -v pyflakes/test")]},
        {"needs": [suite],
         "text": "All pass: the two concatenation tests, the new regression test and the rest."},
    )
    s.turn(
        "Write the maintainers a short pull request description in PR.md at the root: the "
        "report, the cause, the fix and the test.",
        {"needs": ["repro-unused", "export-binding-fixed", "failed-augassign", "rule-news",
                   "decision-branch"],
         "tools": [s.write("PR.md", (
             "# Exports built by concatenating two lists\n\n"
             "- Report: `__all__ = ['load'] + ['dump']` made pyflakes call the import of "
             "`load` unused.\n"
             "- Cause: `ExportBinding` stopped at the last two operands without adding the "
             "left one.\n"
             "- Fix: that branch adds the left operand again; nothing else changes.\n"
             "- Test: `test_concatenated_imports_are_exported` in "
             "`pyflakes/test/test_imports.py`.\n"))]},
        {"text": "Written in PR.md at the root; NEWS.rst is untouched."},
    )
    s.turn(
        "What did we try first that did not work, and why not?",
        {"needs": ["failed-augassign"],
         "text": "My colleague's change to the first condition: a plain concatenation has no "
                 "earlier names, so the left list was still lost."},
    )
    fixed = s.file_fact("loop-fixed", CHECKER, "        # If concatenating lists or tuples", 18,
                        "the concatenation loop as fixed")
    s.turn(
        "Show me the fixed loop once more, and tell me which rules of this session the change "
        "keeps.",
        {"tools": [s.read(CHECKER, "        # If concatenating lists or tuples", 20)]},
        {"needs": [fixed, "rule-news", "rule-wording", "decision-branch"],
         "text": "The branch for the last two lists adds the left one again; NEWS.rst and "
                 "the messages are untouched, and only that line changed."},
    )
