"""A feature across several modules of sqlparse 0.5.3 (BSD-3-Clause): a `strip_semicolon`
formatting option, from `format()` to the command line.

Nothing is planted in the code. The session reads how `format()` builds its filter stack,
finds the filter `split()` already has, validates the new option (`formatter.py`), tries to
strip in the preprocess stage first (it fails: those filters see a token stream, not a
statement), wires it into the statement stage, adds the CLI flag (`cli.py`), tests
(`tests/test_format.py`, `tests/test_cli.py`), documentation (`docs/source/api.rst`) and a
changelog entry, and checks how the option meets `reindent` and `strip_comments`. Planted for
the knowledge check: two rules (the lexer, new test files), a decision (the flag's name), the
failed approach, a correction, and the file lines and outputs later steps use.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.real_code.script import PYTHON, Script, call
from benchmarks.real_code.sources import Source

SOURCE = Source("sqlparse", "0.5.3",
                "09f67787f56a0b16ecdbde1bfc7f5d9c3371ca683cfeaa8e6ff60b4807ec9272",
                "BSD-3-Clause")
FORMATTER = "sqlparse/formatter.py"
CLI = "sqlparse/cli.py"
PYTEST = f"{PYTHON} -m pytest -p no:cacheprovider"

_COMPACT = """    compact = options.get('compact', False)
    if compact not in [True, False]:
        raise SQLParseError('compact requires a boolean value')
    options['compact'] = compact
"""
_VALIDATE = _COMPACT + """
    strip_semicolon = options.get('strip_semicolon', False)
    if strip_semicolon not in [True, False]:
        raise SQLParseError('Invalid value for strip_semicolon: '
                            '{!r}'.format(strip_semicolon))
    options['strip_semicolon'] = strip_semicolon
"""
_TRUNCATE = """    if options.get('truncate_strings'):
        stack.preprocess.append(filters.TruncateStringFilter(
            width=options['truncate_strings'], char=options['truncate_char']))
"""
_PREPROCESS = _TRUNCATE + """
    if options.get('strip_semicolon'):
        stack.preprocess.append(filters.StripTrailingSemicolonFilter())
"""
_RIGHT_MARGIN = """    if options.get('right_margin'):
        stack.enable_grouping()
        stack.stmtprocess.append(
            filters.RightMarginFilter(width=options['right_margin']))
"""
_STMTPROCESS = _RIGHT_MARGIN + """
    if options.get('strip_semicolon'):
        stack.stmtprocess.append(filters.StripTrailingSemicolonFilter())
"""
_CLI_COMPACT = """    group.add_argument(
        '--compact',
        dest='compact',
        default=False,
        type=bool,
        help='Try to produce more compact output (default False)')
"""
_CLI_FLAG = _CLI_COMPACT + """
    group.add_argument(
        '--strip-semicolon',
        dest='strip_semicolon',
        action='store_true',
        default=False,
        help='remove the semicolon that ends each statement')
"""
_FORMAT_TEST_ANCHOR = "    def test_preserve_ws(self):"
_FORMAT_TESTS = """    def test_strip_semicolon(self):
        sql = 'select * from foo;\\nselect 1 ;  '
        res = sqlparse.format(sql, strip_semicolon=True)
        assert res == 'select * from foo\\nselect 1'

    def test_strip_semicolon_invalid_option(self):
        with pytest.raises(SQLParseError):
            sqlparse.format('select 1;', strip_semicolon=None)

"""
_CLI_TEST_ANCHOR = """    sqlparse.cli.main([path, '--encoding=cp1251'])
    out, _ = capsys.readouterr()
    assert out == expected
"""
_CLI_TEST = """

def test_strip_semicolon(filepath, capsys):
    path = filepath('function.sql')
    sqlparse.cli.main([path, '--strip-semicolon'])
    out, _ = capsys.readouterr()
    assert not out.rstrip().endswith(';')
"""
_DOCS_ANCHOR = """``comma_first``
  If ``True`` comma-first notation for column names is used.
"""
_DOCS = _DOCS_ANCHOR + """
``strip_semicolon``
  If ``True`` the semicolon that ends each statement is removed (command line:
  ``--strip-semicolon``).
"""
_CHANGELOG_ANCHOR = "Release 0.5.3 (Dez 10, 2024)\n----------------------------\n"
_CHANGELOG = """Development Version
-------------------

Enhancements

* New formatting option ``strip_semicolon`` (``--strip-semicolon`` on the
  command line) removes the semicolon that ends each statement.


""" + _CHANGELOG_ANCHOR


def _python(code: str) -> dict[str, object]:
    return call("bash", command=f'{PYTHON} -c "{code}"')


def plant(root: Path) -> None:
    """Nothing: the feature is built on the release as published."""


def script(root: Path) -> Script:
    s = Script("sqlparse-feature", root)
    _read_the_pipeline(s)
    _wire_and_expose(s)
    _check_and_document(s)
    return s


def _read_the_pipeline(s: Script) -> None:
    s.said_fact(
        "rule-lexer", "rule", "do not touch the lexer or sqlparse/keywords.py",
        "the rule about the lexer",
        otherwise_text="The semicolon is a token, so I'll mark it in the keyword table too.",
        otherwise_tools=[call("edit", path="sqlparse/keywords.py",
                              oldText="SQL_REGEX = [",
                              newText="# strip_semicolon: see formatter.py\nSQL_REGEX = [")])
    s.said_fact(
        "rule-test-files", "rule", "never create new test files",
        "the rule about test files",
        otherwise_text="I'll put the new tests in a file of their own.",
        otherwise_tools=[call("write", path="tests/test_strip_semicolon.py", content=(
            "import sqlparse\n\n\ndef test_strip_semicolon():\n"
            "    assert sqlparse.format('select 1;', strip_semicolon=True) == 'select 1'\n"))])
    s.turn(
        "We are adding a formatting option to sqlparse 0.5.3: strip_semicolon, which removes "
        "the semicolon that ends each statement, from format() down to the command line. Two "
        "rules: do not touch the lexer or sqlparse/keywords.py, and never create new test "
        "files; new tests go into the existing ones. Start by showing me the layout.",
        {"tools": [call("ls", path=".")]},
        {"tools": [s.read("README.rst"), call("ls", path="sqlparse")]},
        {"tools": [call("ls", path="sqlparse/filters"), call("ls", path="tests")],
         "finds": [s.where("sqlparse/filters/others.py"), s.where("tests/test_format.py"),
                   s.where("tests/test_cli.py")]},
        {"text": "The package is `sqlparse/` (the lexer, the engine that splits and groups "
                 "statements, and `filters/`), `format()` options are checked in "
                 "`formatter.py`, the command line is `cli.py`, and the tests sit under "
                 "`tests/`."},
    )
    validate = s.file_fact("validate-compact", FORMATTER, "    compact = options.get(", 4,
                           "how validate_options checks a boolean option",
                           before=0)
    stack = s.file_fact("build-filter-stack", FORMATTER, "def build_filter_stack(", 18,
                        "the start of build_filter_stack")
    s.turn(
        "How does format() turn its options into filters? Walk me through it.",
        {"tools": [s.read("sqlparse/__init__.py")]},
        {"tools": [s.read(FORMATTER)]},
        {"tools": [s.read("sqlparse/engine/filter_stack.py")]},
        {"needs": [validate, stack],
         "text": "`format()` validates its keyword arguments with `validate_options` (each "
                 "one checked, with an `SQLParseError` for a bad value), builds a "
                 "`FilterStack` with `build_filter_stack`, and runs it: `preprocess` filters "
                 "see the token stream, `stmtprocess` filters each grouped statement, "
                 "`postprocess` the statement before it is serialised."},
    )
    strip_filter = s.file_fact("strip-filter", "sqlparse/filters/others.py",
                               "class StripTrailingSemicolonFilter:", 7,
                               "StripTrailingSemicolonFilter")
    splitter = s.file_fact("filter-stack-init", "sqlparse/engine/filter_stack.py",
                           "def __init__(self, strip_semicolon=False):", 7,
                           "FilterStack's strip_semicolon")
    s.turn(
        "Is there anything that strips semicolons already?",
        {"tools": [call("grep", pattern="StripTrailingSemicolon|strip_semicolon",
                        path="sqlparse")],
         "finds": [s.where("sqlparse/filters/others.py", "class StripTrailingSemicolonFilter:",
                           numbered=False),
                   s.where("sqlparse/engine/filter_stack.py",
                           "def __init__(self, strip_semicolon=False):", numbered=False)]},
        {"tools": [s.read("sqlparse/filters/others.py")]},
        {"needs": [strip_filter, splitter],
         "text": "Yes: `split(..., strip_semicolon=True)` builds its `FilterStack` with "
                 "`StripTrailingSemicolonFilter` in the statement stage; `format()` has no "
                 "way to ask for it."},
    )
    baseline = s.output_fact(
        "baseline", ["80 passed, 2 xfailed"],
        call("bash", command=f"{PYTEST} -v tests/test_format.py tests/test_cli.py"),
        "the format and CLI tests' baseline")
    s.turn(
        "Run the format and command-line tests first, so that we know the baseline.",
        {"tools": [call("bash", command=f"{PYTEST} -v tests/test_format.py tests/test_cli.py")]},
        {"needs": [baseline],
         "text": "All pass before we change anything, two of them expected to fail."},
    )
    s.turn(
        "Add the strip_semicolon option to validate_options, checked like the other boolean "
        "options.",
        {"needs": [validate, stack], "tools": [s.edit(FORMATTER, _COMPACT, _VALIDATE)]},
        {"text": "`validate_options` accepts `strip_semicolon` (True or False, False by "
                 "default) and refuses anything else with an `SQLParseError`."},
    )


def _wire_and_expose(s: Script) -> None:
    # build_filter_stack as it stands now: validate_options, above it, has grown.
    stack = s.file_fact("build-filter-stack-now", FORMATTER, "def build_filter_stack(", 18,
                        "the start of build_filter_stack, below the new validation")
    check = "import sqlparse; print(repr(sqlparse.format('select 1;', strip_semicolon=True)))"
    failed = s.said_fact(
        "failed-preprocess", "failed", "Stripping it in the preprocess stage failed",
        "the approach that already failed (the preprocess stage)",
        otherwise_text="Let me strip it in the preprocess stage first, as early as possible.",
        otherwise_tools=[call("edit", path=FORMATTER, oldText=_TRUNCATE, newText=_PREPROCESS),
                         _python(check)])
    preprocess_error = s.output_fact(
        "preprocess-error", ["AttributeError: 'generator' object has no attribute 'tokens'"],
        _python(check), "the error the preprocess attempt raised")
    s.turn(
        "Now wire it into the filter stack. Strip it as early as possible: the preprocess "
        "stage, before anything else runs. Then try it.",
        {"needs": [stack, "strip-filter"],
         "tools": [s.edit(FORMATTER, _TRUNCATE, _PREPROCESS)]},
        {"tools": [_python(check)]},
        {"needs": [preprocess_error],
         "text": "Stripping it in the preprocess stage failed: the filter expects a "
                 "statement, and preprocess filters get the token stream."},
    )
    s.edit(FORMATTER, _PREPROCESS, _TRUNCATE)
    s.turn(
        "Then put it where it works, and try again.",
        {"needs": [failed, stack, "filter-stack-init"],
         "tools": [call("edit", path=FORMATTER, oldText=_PREPROCESS, newText=_TRUNCATE)]},
        {"tools": [s.edit(FORMATTER, _RIGHT_MARGIN, _STMTPROCESS)]},
        {"tools": [_python(check)]},
        {"text": "In the statement stage, after the other statement filters, it works: "
                 "`'select 1'`."},
    )
    s.said_fact(
        "decision-flag", "decision", "the flag is --strip-semicolon, with dashes",
        "the decision about the flag's name",
        otherwise_text="I'll call the flag `--strip_semicolon`, like the option.")
    cli_compact = s.file_fact("cli-compact", CLI, "        '--compact',", 6,
                              "how cli.py declares --compact", before=1)
    s.turn(
        "Add the command-line flag.",
        {"tools": [s.read(CLI)]},
        {"needs": [cli_compact],
         "text": "The other flags mix dashes and underscores; for a new one I'll follow "
                 "argparse's usual form: the flag is --strip-semicolon, with dashes, and "
                 "`dest='strip_semicolon'`.",
         "tools": [s.edit(CLI, _CLI_COMPACT, _CLI_FLAG)]},
        {"tools": [call("bash", command=f"printf 'select 1;\\nselect 2;\\n' | {PYTHON} -m "
                                        "sqlparse --strip-semicolon -")]},
        {"text": "The flag reaches `format()` through `vars(args)`."},
    )
    format_tests = s.file_fact("format-test-style", "tests/test_format.py",
                               "    def test_strip_ws_invalid_option(self):", 4,
                               "how test_format.py tests an invalid option")
    s.turn(
        "Add tests for the option and for the flag, then run the format and command-line "
        "tests.",
        {"tools": [s.read("tests/test_format.py", "class TestFormat:", 170, before=6)]},
        {"tools": [s.read("tests/test_cli.py")]},
        {"needs": [format_tests, "rule-test-files"],
         "tools": [s.edit("tests/test_format.py", _FORMAT_TEST_ANCHOR,
                          _FORMAT_TESTS + _FORMAT_TEST_ANCHOR)]},
        {"needs": ["rule-test-files"],
         "tools": [s.edit("tests/test_cli.py", _CLI_TEST_ANCHOR, _CLI_TEST_ANCHOR + _CLI_TEST)]},
        {"tools": [call("bash", command=f"{PYTEST} -v tests/test_format.py tests/test_cli.py")]},
        {"text": "Three new tests, all passing, in the existing files."},
    )


def _check_and_document(s: Script) -> None:
    docs = s.file_fact("docs-options", "docs/source/api.rst", "``comma_first``", 2,
                       "where api.rst lists the last option")
    s.turn(
        "Document the option in docs/source/api.rst, with its command-line flag.",
        {"tools": [s.read("docs/source/api.rst")]},
        {"needs": [docs, "decision-flag"],
         "tools": [s.edit("docs/source/api.rst", _DOCS_ANCHOR, _DOCS)]},
        {"text": "Documented with the other options, naming the flag."},
    )
    suite = s.output_fact(
        "suite", ["464 passed"], call("bash", command=f"{PYTEST} -v tests"),
        "the whole suite's result")
    s.turn(
        "Run the whole test suite.",
        {"tools": [call("bash", command=f"{PYTEST} -v tests")]},
        {"needs": [suite], "text": "The whole suite passes: 464 tests, 2 expected failures "
                                   "as before."},
    )
    multi = "import sqlparse; print(sqlparse.format('select 1; select 2;', " \
            "strip_semicolon=True, reindent=True))"
    reindented = s.output_fact(
        "reindent-output", ["select 1select 2"], _python(multi),
        "what reindent and strip_semicolon print together")
    s.turn(
        "How does it behave with reindent=True on two statements in one string?",
        {"tools": [_python(multi)]},
        {"tools": [s.read("sqlparse/filters/reindent.py", "    def process(self, stmt):", 30,
                          before=10)]},
        {"needs": [reindented],
         "text": "The statements run together: each loses its semicolon and the whitespace "
                 "before the next one, so nothing separates them any more. The separator has "
                 "to survive."},
    )
    correction = s.said_fact(
        "correction-comments", "request", "I meant together with strip_comments",
        "the correction (with strip_comments)",
        otherwise_text="With reindent the statements still run together.")
    commented = "import sqlparse; print(repr(sqlparse.format('select 1; -- one\\nselect 2;', " \
                "strip_semicolon=True, strip_comments=True)))"
    s.turn(
        "Correction: I meant together with strip_comments, where a comment follows the "
        "semicolon. Check that case and read how statements are split.",
        {"tools": [_python(commented)]},
        {"tools": [s.read("sqlparse/engine/statement_splitter.py")]},
        {"tools": [s.read("sqlparse/engine/grouping.py", "def group(stmt):", 60, before=40)]},
        {"needs": [correction, "strip-filter"],
         "text": "With strip_comments the comment goes first and the semicolon then ends the "
                 "statement, so it is stripped; the splitter keeps the comment with the "
                 "statement it follows."},
    )
    s.turn(
        "Is the lexer involved in any of this? Read it and tell me.",
        {"tools": [s.read("sqlparse/lexer.py")]},
        {"needs": ["rule-lexer"],
         "text": "Only in making the semicolon a punctuation token; nothing there changes for "
                 "this option."},
    )
    s.turn(
        "Add an entry to CHANGELOG for the next release.",
        {"tools": [s.read("CHANGELOG", "Release 0.5.3 (Dez 10, 2024)", 30)]},
        {"needs": ["decision-flag"],
         "tools": [s.edit("CHANGELOG", _CHANGELOG_ANCHOR, _CHANGELOG)]},
        {"text": "Added under a new Development Version heading."},
    )
    s.turn(
        "What went wrong on the way, for the pull request's description? Quote the error it "
        "raised; the code no longer raises it.",
        {"needs": ["failed-preprocess", "preprocess-error"],
         "text": "The first place we put the filter was the wrong stage; the error said so, "
                 "and the statement stage works."},
    )
    wired = s.file_fact("wired", FORMATTER, "    if options.get('strip_semicolon'):", 2,
                        "the new filter stack lines")
    validated = s.file_fact("validated", FORMATTER, "    strip_semicolon = options.get(", 5,
                            "the new validation")
    s.turn(
        "Final check: show me the validation and the filter stack wiring once more, and tell "
        "me whether we kept to the rules.",
        {"tools": [s.read(FORMATTER, "    strip_semicolon = options.get(", 12)]},
        {"tools": [s.read(FORMATTER, "    if options.get('strip_semicolon'):", 8, before=5)]},
        {"needs": [wired, validated, "rule-lexer", "rule-test-files", "decision-flag"],
         "text": "Both are in place, the lexer is untouched and the tests went into the "
                 "existing files."},
    )
