"""A library bugfix in tabulate 0.9.0 (MIT; one 2,700-line module): numbers with thousands
separators no longer line up on the decimal point.

Planted: `_afterpoint` lost its `_isnumber_with_thousands_separator` check (one test of the
library's own suite fails). The session lays out the package, runs the suite, reads the test
and the alignment code, tries a wrong fix first (loosening the thousands regex: the test still
fails), reverts it, fixes `_afterpoint`, adds a regression test, checks the path with
`disable_numparse`, updates the README and answers the release manager. Planted for the
knowledge check: two rules (the public signature, CHANGELOG), the failed approach, a
correction, and the file lines and outputs later steps use.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.real_code.script import PYTHON, Script, call, plant_change
from benchmarks.real_code.sources import Source

SOURCE = Source("tabulate", "0.9.0",
                "0095b12bf5966de529c0feb1fa08671671b3368eec77d7ef7ab114be2c068b3c", "MIT")
MODULE = "tabulate/__init__.py"
PYTEST = f"{PYTHON} -m pytest -p no:cacheprovider"
_GUARD = "    if _isnumber(string) or _isnumber_with_thousands_separator(string):"
_PLANTED = "    if _isnumber(string):"
_REGEX = 'r"^(([+-]?[0-9]{1,3})(?:,([0-9]{3}))*)?(?(1)\\.[0-9]*|\\.[0-9]+)?$"'
_LOOSE = 'r"^(([+-]?[0-9]{1,3})(?:,([0-9]{3}))*)?(?(1)\\.?[0-9]*|\\.[0-9]+)?$"'
_FAILING = "test/test_internal.py::test_align_column_decimal_with_thousand_separators"


def plant(root: Path) -> None:
    plant_change(root / MODULE, _GUARD, _PLANTED)


def script(root: Path) -> Script:
    s = Script("tabulate-bugfix", root)
    _reproduce(s)
    _wrong_fix_then_fix(s)
    _other_paths(s)
    _docs_and_review(s)
    return s


def _reproduce(s: Script) -> None:
    s.said_fact(
        "rule-signature", "rule", "never change the signature of the public tabulate()",
        "the rule about tabulate()'s signature",
        otherwise_text="The simplest way is a new `thousands` keyword on tabulate() itself.")
    s.said_fact(
        "rule-changelog", "rule", "never edit CHANGELOG",
        "the rule about CHANGELOG",
        otherwise_text="I'll add the entry to CHANGELOG myself.",
        otherwise_tools=[call("bash", command="printf '%s\\n' '- 0.9.1: Decimal alignment of "
                                              "numbers with commas.' >> CHANGELOG")])
    s.turn(
        "This is our vendored copy of tabulate 0.9.0; the code is in tabulate/__init__.py. Two "
        "ground rules for this session: never change the signature of the public tabulate() "
        "function, and never edit CHANGELOG (the release manager writes it). First, how is "
        "the package laid out?",
        {"text": "Let me look at the top of the tree.", "tools": [call("ls", path=".")]},
        {"tools": [s.read("README.md", "Pretty-print tabular data in Python", 260, before=3),
                   s.read("pyproject.toml")]},
        {"tools": [call("ls", path="test")],
         "finds": [s.where("test/test_internal.py"), s.where("test/test_output.py"),
                   s.where("test/test_regression.py")]},
        {"text": "One module, `tabulate/__init__.py` (about 2,700 lines), its tests under "
                 "`test/`, packaged with `pyproject.toml`; the README doubles as the manual."},
    )
    failing_out = s.output_fact(
        "failing-test", ["FAILED " + _FAILING], call("bash", command=f"{PYTEST} -v test"),
        "which test fails")
    s.turn(
        "Run the test suite and tell me what fails.",
        {"tools": [call("bash", command=f"{PYTEST} -v test")]},
        {"needs": [failing_out],
         "text": "One test fails, the decimal alignment of a column with a thousands "
                 "separator; everything else passes or is skipped."},
    )
    test_lines = s.file_fact("failing-test-body", "test/test_internal.py",
                             "def test_align_column_decimal_with_thousand_separators", 14,
                             "the failing test's body")
    padfn = s.file_fact("padfn", MODULE, "def _align_column_choose_padfn", 24,
                        "_align_column_choose_padfn")
    s.turn(
        "Show me the failing test and the code it exercises.",
        {"tools": [s.read("test/test_internal.py")]},
        {"tools": [call("grep", pattern="def _align_column", path=MODULE)],
         "finds": [s.where(MODULE, "def _align_column_choose_padfn")]},
        {"tools": [s.read(MODULE, "def _align_column_choose_padfn", 260)]},
        {"needs": [test_lines, padfn],
         "text": "The test expects `1,234.5` to line up with the other numbers; the column is "
                 "padded by `_align_column_choose_padfn`, which pads each string by the digits "
                 "after its point, as `_afterpoint` counts them."},
    )
    afterpoint = s.file_fact("afterpoint", MODULE, "def _afterpoint(string):", 28,
                             "_afterpoint as it was")
    regex = s.file_fact("thousands-regex", MODULE, "_float_with_thousands_separators = re.",
                        3, "the thousands-separator regex")
    s.turn(
        "Where does the position of the decimal point come from?",
        {"tools": [call("grep", pattern="_afterpoint|_isnumber_with_thousands_separator",
                        path=MODULE)],
         "finds": [s.where(MODULE, "def _afterpoint(string):"),
                   s.where(MODULE, "def _isnumber_with_thousands_separator")]},
        {"tools": [s.read(MODULE, "def _afterpoint(string):", 90)]},
        {"tools": [s.read(MODULE, "def _isnumber_with_thousands_separator", 190, before=60)]},
        {"needs": [afterpoint, regex],
         "text": "From `_afterpoint`: it counts the symbols after the last point of anything "
                 "that parses as a number; with a comma, `1,234.5` is not a number to "
                 "`_isnumber`, so it gets -1."},
    )


def _wrong_fix_then_fix(s: Script) -> None:
    failed = s.said_fact(
        "failed-regex", "failed", "Loosening the thousands regex did not help",
        "the approach that already failed (loosening the regex)",
        otherwise_tools=[call("edit", path=MODULE, oldText=_REGEX, newText=_LOOSE),
                         call("bash", command=f"{PYTEST} -q {_FAILING}")],
        otherwise_text="Let me try loosening the thousands regex first.")
    s.turn(
        "Try the quick thing first: the thousands regex looks too strict to me; loosen it so "
        "that the point is optional, and rerun that one test.",
        {"needs": ["thousands-regex"], "tools": [s.edit(MODULE, _REGEX, _LOOSE)]},
        {"tools": [call("bash", command=f"{PYTEST} -q {_FAILING}")]},
        {"text": "Loosening the thousands regex did not help: the test fails exactly as "
                 "before, because `_afterpoint` never asks that regex."},
    )
    loose = s.file_fact("loose-regex", MODULE, "_float_with_thousands_separators = re.", 3,
                        "the loosened thousands-separator regex")
    s.turn(
        "Revert that, then find the real cause.",
        {"needs": [loose], "tools": [s.edit(MODULE, _LOOSE, _REGEX)]},
        {"needs": ["afterpoint", failed],
         "tools": [call("grep", pattern="_isnumber_with_thousands_separator\\(", path=MODULE)]},
        {"text": "The regex is only used by its own helper, and `_afterpoint` only calls "
                 "`_isnumber`: a number written with commas is never measured. Its guard has "
                 "to accept both forms."},
    )
    fix = s.edit(MODULE, _PLANTED, _GUARD)
    s.turn(
        "Fix it properly in _afterpoint, then run the failing test and the internal tests.",
        {"needs": ["afterpoint", "padfn", "rule-signature", failed], "tools": [fix]},
        {"tools": [call("bash", command=f"{PYTEST} -v test/test_internal.py")]},
        {"text": "Fixed: `_afterpoint` measures numbers written with thousands separators "
                 "again, and the internal tests pass."},
    )
    s.file_fact("afterpoint-fixed", MODULE, "def _afterpoint(string):", 28,
                "_afterpoint as fixed")
    regression = s.file_fact("regression-commas", "test/test_regression.py",
                             "def test_alignment_of_decimal_numbers_with_commas", 12,
                             "the skipped regression test about commas")
    new_test = (
        "\n\ndef test_decimal_alignment_with_thousands_separators():\n"
        '    "Regression: numbers with thousands separators align on the point"\n'
        '    table = [["1,234,567.891"], ["12.5"], ["3"]]\n'
        '    result = tabulate(table, tablefmt="plain", colalign=("decimal",))\n'
        '    expected = "\\n".join(["1,234,567.891", "       12.5", "        3"])\n'
        "    assert_equal(result, expected)\n"
    )
    anchor = "    # assert_equal(result, expected)\n\n\ndef test_long_integers():"
    s.turn(
        "Add a regression test for a number like 1,234,567.891 in test/test_regression.py, "
        "next to the old comma test, and run the regression tests.",
        {"tools": [s.read("test/test_regression.py")]},
        {"needs": [regression, "failing-test-body"],
         "tools": [s.edit("test/test_regression.py", anchor, anchor.replace(
             "\n\n\ndef test_long_integers():",
             new_test + "\n\ndef test_long_integers():"))]},
        {"tools": [call("bash", command=f"{PYTEST} -v test/test_regression.py")]},
        {"text": "The new regression test passes next to the old (still skipped) one."},
    )
    s.turn(
        "The release manager asks what changed, for the changelog. Tell me in two lines; do "
        "not write it anywhere.",
        {"needs": ["rule-changelog", "afterpoint-fixed", regression],
         "text": "- `_afterpoint` measures numbers with thousands separators again, so "
                 "decimal alignment lines them up.\n- A regression test covers 1,234,567.891."},
    )


def _other_paths(s: Script) -> None:
    numparse_out = s.output_fact(
        "numparse-off", ["1,234.5\n   12.25"],
        call("bash", command=f"{PYTHON} -c \"from tabulate import tabulate; print(tabulate("
                             "[['1,234.5'], ['12.25']], colalign=['decimal'], "
                             "disable_numparse=True, tablefmt='plain'))\""),
        "what disable_numparse=True prints")
    column_type = s.file_fact("column-type", MODULE, "def _column_type(strings", 26,
                              "_column_type")
    s.turn(
        "Does decimal alignment still work when disable_numparse is set? Check that path.",
        {"tools": [s.read(MODULE, "def _column_type(strings", 140)]},
        {"tools": [call("bash", command=f"{PYTHON} -c \"from tabulate import tabulate; print("
                                        "tabulate([['1,234.5'], ['12.25']], colalign="
                                        "['decimal'], disable_numparse=True, "
                                        "tablefmt='plain'))\"")]},
        {"needs": [column_type, numparse_out, "padfn"],
         "text": "It works: with number parsing off, `colalign=['decimal']` still lines "
                 "`1,234.5` up with `12.25`, because the padding asks `_afterpoint`, not the "
                 "column's type."},
    )
    correction = s.said_fact(
        "correction-default", "request", "I meant with number parsing on, the default",
        "the correction to the request (number parsing on)",
        otherwise_text="As asked, with disable_numparse=True the commas stay text.")
    s.turn(
        "Correction: I meant with number parsing on, the default. Compare the two, on the same "
        "column, and read how the column type is decided for that case.",
        {"tools": [call("bash", command=f"{PYTHON} -c \"from tabulate import tabulate; print("
                                        "tabulate([['1,234.5'], ['12.25']], colalign="
                                        "['decimal'], tablefmt='plain'))\"")]},
        {"tools": [s.read(MODULE, "def _type(string, has_invisible=True", 36)]},
        {"tools": [s.read(MODULE, "def _normalize_tabular_data(", 200)]},
        {"needs": [correction, numparse_out, column_type],
         "text": "Both print the same column: with parsing on (the default) `1,234.5` is "
                 "still typed as text by `_type`, since `_isnumber` rejects the comma, but the "
                 "decimal alignment only asks the fixed `_afterpoint`."},
    )
    docstring = s.file_fact("column-alignment-docs", MODULE, "    Column alignment",
                            12, "tabulate()'s docstring on column alignment")
    s.turn(
        "Read tabulate()'s docstring about alignment and number formats, and the part of "
        "tabulate() that picks the default alignments.",
        {"tools": [s.read(MODULE, "def tabulate(", 300)]},
        {"tools": [s.read(MODULE, "def tabulate(", 300, before=-300)]},
        {"tools": [s.read(MODULE, 'numalign = "decimal" if numalign == _DEFAULT_ALIGN', 160,
                          before=60)]},
        {"needs": [docstring],
         "text": "Numbers default to decimal alignment unless the format is `pretty`, which "
                 "turns number parsing off."},
    )
    s.turn(
        "Which of the output tests exercise column alignment? Look at a few of them.",
        {"tools": [call("grep", pattern="colalign|numalign", path="test/test_output.py")]},
        {"tools": [s.read("test/test_output.py", "def test_column_alignment", 300,
                          before=120)]},
        {"text": "The output tests pin whole tables per format; alignment is covered by the "
                 "`colalign` and `numalign` cases, none of them with thousands separators."},
    )


def _docs_and_review(s: Script) -> None:
    readme = s.file_fact("readme-alignment", "README.md", "### Column alignment", 24,
                         "the README's column alignment section")
    readme_note = (
        "Aligning by a decimal point works best when you need to compare numbers\n"
        "at a glance:"
    )
    s.turn(
        "Mention in the README, in the column alignment section, that numbers written with "
        "thousands separators are aligned by their decimal point too.",
        {"tools": [s.read("README.md", "### Column alignment", 120)]},
        {"needs": [readme, "rule-signature"],
         "tools": [s.edit("README.md", readme_note, readme_note.replace(
             "at a glance:", "at a glance (numbers written with thousands separators, such "
                             "as `1,234.5`, are aligned by their point too):"))]},
        {"text": "Done: one sentence in the README's column alignment section."},
    )
    suite_out = s.output_fact(
        "suite-passes", ["248 passed"], call("bash", command=f"{PYTEST} -v test"),
        "the whole suite's result")
    s.turn(
        "Run the whole suite again.",
        {"tools": [call("bash", command=f"{PYTEST} -v test")]},
        {"needs": [suite_out],
         "text": "Everything passes now: 248 tests, the skipped ones as before."},
    )
    s.turn(
        "What did we try that did not work, so that I can tell the reviewer? And quote the "
        "line of the first test run that named the failing test: the run passes now, so it "
        "cannot show it again.",
        {"needs": ["failed-regex", "thousands-regex", "failing-test"],
         "text": "The regex change: it was the wrong place, and it was reverted before the "
                 "fix. The first run failed on the decimal alignment test of "
                 "`test_internal.py`, the one the fix makes pass."},
    )
    s.turn(
        "Show me the final _afterpoint once more, and tell me which rules of this session the "
        "change keeps.",
        {"tools": [s.read(MODULE, "def _afterpoint(string):", 30)]},
        {"needs": ["afterpoint-fixed", "rule-signature", "rule-changelog",
                   "failing-test-body"],
         "text": "`_afterpoint` now accepts both number forms; tabulate()'s signature is "
                 "unchanged and CHANGELOG is untouched."},
    )
