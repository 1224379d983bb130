"""A behaviour change a team asked for, in tomlkit 0.15.3 (MIT; a 1,300-line parser, a
1,500-test suite, most of it the toml-test corpus): duplicate keys reported as a `ParseError`
at the line and column where the key is defined again.

Written after the rest of the suite, as a session none of the product's defaults was tuned
on. Nothing in the library is planted: what the team gave is, as a team would give it, three
failing tests at the end of `tests/test_parser.py` (a duplicate in an inline table escapes
`parse()` as a bare `KeyAlreadyPresent`; elsewhere the position is where the parser stopped,
a line too far down) and its audit script, `tools/error_report.py`, which parses every invalid
document of the corpus and prints what each error says (45 KB). The session explores widely
(the layout, the whole suite, the exceptions, the audit, the container, how a position is
computed, the parser's loops), tries a colleague's idea first (making `KeyAlreadyPresent` a
`ParseError` again, as the changelog says 0.11.1 did: it breaks every raise of it), reverts
it, adds `DuplicateKeyError` and a way to place an error at a given index, wires it into the
parser in four places, reruns the audit, checks the callers that catch `KeyAlreadyPresent`,
adds tests, a changelog entry (moved by a correction), and writes a note for the team.
Planted for the knowledge check: two rules (the messages' wording, the vendored corpus), the
team's request, a decision, the failed approach, a correction, and the file lines and outputs
later steps use; three outputs are needed after their command has stopped printing them.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.real_code.script import PYTHON, Script, call
from benchmarks.real_code.sources import Source

SOURCE = Source("tomlkit", "0.15.3",
                "b3c3020ec1a4bd469d12e31fb4da938e7f6ba758cdbec3fd9047db63120eaf81", "MIT")
PARSER = "tomlkit/parser.py"
EXCEPTIONS = "tomlkit/exceptions.py"
SOURCE_PY = "tomlkit/source.py"
CONTAINER = "tomlkit/container.py"
TESTS = "tests/test_parser.py"
AUDIT_SCRIPT = "tools/error_report.py"
PYTEST = f"{PYTHON} -m pytest -p no:cacheprovider"
AUDIT = f"{PYTHON} {AUDIT_SCRIPT} tests/toml-test/tests/invalid"
SUITE = f"{PYTEST} -q tests"
PARSER_AND_CORPUS = f"{PYTEST} -q {TESTS} tests/test_toml_tests.py"

# --- what the team gave: its tests, and its audit script -----------------------------------

TEAM_TESTS = '''

def test_duplicate_key_in_an_inline_table_is_a_parse_error() -> None:
    content = "point = {x = 1, y = 2, x = 3}\\n"

    with pytest.raises(ParseError) as e:
        parse(content)

    assert e.value.line == 1
    assert e.value.col == 23


def test_duplicate_key_is_reported_where_it_is_defined_again() -> None:
    content = "a = 1\\nb = 2\\na = 3\\nc = 4\\n"

    with pytest.raises(ParseError) as e:
        parse(content)

    assert e.value.line == 3
    assert e.value.col == 0


def test_duplicate_key_in_a_table_is_reported_where_it_is_defined_again() -> None:
    content = "[server]\\nhost = 'a'\\n  port = 1\\n  host = 'b'\\n\\n[client]\\n"

    with pytest.raises(ParseError) as e:
        parse(content)

    assert e.value.line == 4
    assert e.value.col == 2
'''

ERROR_REPORT = '''"""What the vendored tomlkit says about each invalid document of toml-test.

The lint service shows tomlkit's errors to users as they are, so after every update
of the vendored copy we check that each of them says where the problem is:

    .venv/bin/python tools/error_report.py tests/toml-test/tests/invalid

One line per document (its error class, and the message with its position), then
the totals: how many errors carry a line and column, and which do not.
"""

from __future__ import annotations

import sys

from collections import Counter
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import tomlkit  # noqa: E402

from tomlkit.exceptions import ParseError  # noqa: E402


def main(root: Path) -> int:
    placed: Counter[str] = Counter()
    unplaced: Counter[str] = Counter()
    accepted = skipped = 0
    for path in sorted(root.rglob("*.toml")):
        name = path.relative_to(root).as_posix()
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            skipped += 1
            print(f"{name}: not UTF-8, skipped")
            continue
        try:
            tomlkit.parse(text)
        except ParseError as e:
            placed[type(e).__name__] += 1
            print(f"{name}: {type(e).__name__}: {e}")
        except Exception as e:
            unplaced[type(e).__name__] += 1
            print(f"{name}: {type(e).__name__} (no position): {e}")
        else:
            accepted += 1
            print(f"{name}: accepted")
    total = sum(placed.values()) + sum(unplaced.values()) + accepted + skipped
    print()
    print(f"{total} documents: {sum(placed.values())} errors with a position, "
          f"{sum(unplaced.values())} without, {accepted} accepted, {skipped} not UTF-8")
    for name, count in placed.most_common():
        print(f"  {name:<28} {count:>4}")
    if unplaced:
        print("without a position:")
        for name, count in unplaced.most_common():
            print(f"  {name:<28} {count:>4}")
    else:
        print("without a position: none")
    return 1 if unplaced else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/toml-test/tests/invalid")))
'''

# --- the edits ----------------------------------------------------------------------------

_KEY_PRESENT = "class KeyAlreadyPresent(TOMLKitError):"
_KEY_PRESENT_PARSE = "class KeyAlreadyPresent(ParseError):"
_KEY_PRESENT_END = '''        message = f'Key "{key}" already exists.'

        super().__init__(message)
'''
_DUPLICATE_CLASS = _KEY_PRESENT_END + '''

class DuplicateKeyError(ParseError, KeyAlreadyPresent):
    """
    A key was defined twice in the TOML being parsed. The error references
    the line and column where the second definition starts. It is also a
    ``KeyAlreadyPresent``, so code that catches that keeps working.
    """

    def __init__(self, line: int, col: int, message: str) -> None:
        super().__init__(line, col, message=message)
'''
_LINECOL = '''    def _to_linecol(self) -> tuple[int, int]:
        # `keepends` keeps each line's own terminator inside its length: a "\\r\\n"
        # break occupies two characters, and assuming a single one made the
        # running offset fall one behind per CRLF line, so an error later in the
        # document was reported on the wrong line and column.
        lines = self.splitlines(keepends=True)
        cur = 0
        for i, line in enumerate(lines):
            if cur + len(line) > self.idx:
                return (i + 1, self.idx - cur)
'''
_LINECOL_AT = '''    def parse_error_at(
        self,
        idx: int,
        exception: type[ParseError] = ParseError,
        *args: Any,
        **kwargs: Any,
    ) -> ParseError:
        """
        Creates a "parse error" at the index ``idx`` of the input, e.g. where
        the item that could not be added started, rather than where parsing
        stands now.
        """
        line, col = self._to_linecol(idx)

        return exception(line, col, *args, **kwargs)

    def _to_linecol(self, idx: int | None = None) -> tuple[int, int]:
        # `keepends` keeps each line's own terminator inside its length: a "\\r\\n"
        # break occupies two characters, and assuming a single one made the
        # running offset fall one behind per CRLF line, so an error later in the
        # document was reported on the wrong line and column.
        if idx is None:
            idx = self.idx
        lines = self.splitlines(keepends=True)
        cur = 0
        for i, line in enumerate(lines):
            if cur + len(line) > idx:
                return (i + 1, idx - cur)
'''
_IMPORTS = '''from tomlkit.exceptions import EmptyKeyError
from tomlkit.exceptions import EmptyTableNameError
from tomlkit.exceptions import InternalParserError
from tomlkit.exceptions import InvalidCharInStringError
from tomlkit.exceptions import InvalidControlChar
from tomlkit.exceptions import InvalidDateError
from tomlkit.exceptions import InvalidDateTimeError
from tomlkit.exceptions import InvalidNumberError
from tomlkit.exceptions import InvalidTimeError
from tomlkit.exceptions import InvalidUnicodeValueError
from tomlkit.exceptions import ParseError
'''
_IMPORTS_NEW = ("from tomlkit.exceptions import DuplicateKeyError\n"
                + _IMPORTS.replace("from tomlkit.exceptions import ParseError\n",
                                   "from tomlkit.exceptions import KeyAlreadyPresent\n"
                                   "from tomlkit.exceptions import ParseError\n"))
_PARSE = '''            # Otherwise, take and append one KV
            item = self._parse_item()
            if not item:
                break

            key, value = item
            if (key is not None and key.is_multi()) or not self._merge_ws(value, body):
                # We actually have a table
                try:
                    body.append(key, value)
                except Exception as e:
                    raise self.parse_error(ParseError, str(e)) from e

            self.mark()

        while not self.end():
            key, value = self._parse_table()
            if isinstance(value, Table) and value.is_aot_element():
                # This is just the first table in an AoT. Parse the rest of the array
                # along with it.
                value = self._parse_aot(value, key)

            try:
                body.append(key, value)
            except Exception as e:
                raise self.parse_error(ParseError, str(e)) from e

        body.parsing(False)

        return body
'''
_PARSE_NEW = '''            # Otherwise, take and append one KV
            start = self._idx
            item = self._parse_item()
            if not item:
                break

            key, value = item
            if (key is not None and key.is_multi()) or not self._merge_ws(value, body):
                # We actually have a table
                try:
                    body.append(key, value)
                except KeyAlreadyPresent as e:
                    raise self._duplicate_key(e, start + len(value.trivia.indent)) from e
                except Exception as e:
                    raise self.parse_error(ParseError, str(e)) from e

            self.mark()

        while not self.end():
            start = self._idx
            key, value = self._parse_table()
            if isinstance(value, Table) and value.is_aot_element():
                # This is just the first table in an AoT. Parse the rest of the array
                # along with it.
                value = self._parse_aot(value, key)

            try:
                body.append(key, value)
            except KeyAlreadyPresent as e:
                raise self._duplicate_key(e, start) from e
            except Exception as e:
                raise self.parse_error(ParseError, str(e)) from e

        body.parsing(False)

        return body

    def _duplicate_key(self, error: KeyAlreadyPresent, start: int) -> ParseError:
        """
        The error for a key defined twice, at ``start``, where its second
        definition begins; the message is the one the container raised.
        """
        return self._src.parse_error_at(start, DuplicateKeyError, str(error))
'''
_TABLE_BODY = '''        while not self.end():
            parsed = self._parse_item()
            if parsed:
                _key, _val = parsed
                if not self._merge_ws(_val, values):
                    try:
                        table.raw_append(_key, _val)
                    except Exception as e:
                        raise self.parse_error(ParseError, str(e)) from e
'''
_TABLE_BODY_NEW = '''        while not self.end():
            start = self._idx
            parsed = self._parse_item()
            if parsed:
                _key, _val = parsed
                if not self._merge_ws(_val, values):
                    try:
                        table.raw_append(_key, _val)
                    except KeyAlreadyPresent as e:
                        raise self._duplicate_key(e, start + len(_val.trivia.indent)) from e
                    except Exception as e:
                        raise self.parse_error(ParseError, str(e)) from e
'''
_INLINE = '''                key, val = self._parse_key_value(False)
                elems.add(key, val)
'''
_INLINE_NEW = '''                start = self._idx
                key, val = self._parse_key_value(False)
                try:
                    elems.add(key, val)
                except KeyAlreadyPresent as e:
                    raise self._duplicate_key(e, start) from e
'''
_TEST_IMPORTS = '''from tomlkit import parse
from tomlkit.exceptions import EmptyTableNameError
from tomlkit.exceptions import InternalParserError
from tomlkit.exceptions import InvalidNumberError
from tomlkit.exceptions import InvalidUnicodeValueError
from tomlkit.exceptions import ParseError
'''
_TEST_IMPORTS_NEW = '''from tomlkit import parse
from tomlkit.exceptions import DuplicateKeyError
from tomlkit.exceptions import EmptyTableNameError
from tomlkit.exceptions import InternalParserError
from tomlkit.exceptions import InvalidNumberError
from tomlkit.exceptions import InvalidUnicodeValueError
from tomlkit.exceptions import KeyAlreadyPresent
from tomlkit.exceptions import ParseError
'''
_TEAM_LAST = '''    content = "[server]\\nhost = 'a'\\n  port = 1\\n  host = 'b'\\n\\n[client]\\n"

    with pytest.raises(ParseError) as e:
        parse(content)

    assert e.value.line == 4
    assert e.value.col == 2
'''
_OUR_TESTS = _TEAM_LAST + '''

def test_a_table_defined_twice_is_reported_at_its_second_header() -> None:
    content = "[a]\\nb = 1\\n\\n[a]\\nc = 2\\n"

    with pytest.raises(DuplicateKeyError) as e:
        parse(content)

    assert e.value.line == 4
    assert e.value.col == 0


def test_duplicate_key_error_is_still_a_key_already_present() -> None:
    with pytest.raises(KeyAlreadyPresent) as e:
        parse("point = {x = 1, x = 2}\\n")

    assert isinstance(e.value, ParseError)
    assert str(e.value) == 'Key "x" already exists. at line 1 col 16'
'''
_UNRELEASED = "## [Unreleased]\n\n"
_ENTRY = ("- Report a key defined twice at the line and column where it is defined again: "
          "`parse()` now raises `DuplicateKeyError`, a `ParseError` that is also a "
          "`KeyAlreadyPresent`, where it raised a bare `KeyAlreadyPresent` with no position "
          "inside inline tables and placed the error past the duplicate elsewhere. The "
          "messages are unchanged.\n\n")
_FIXED = _UNRELEASED + "### Fixed\n\n" + _ENTRY
_CHANGED = _UNRELEASED + "### Changed\n\n" + _ENTRY

_COMPAT = f'''{PYTHON} - <<'EOF'
import tomlkit
from tomlkit.exceptions import KeyAlreadyPresent
try:
    tomlkit.parse("point = {{x = 1, x = 2}}\\n")
except KeyAlreadyPresent as e:
    print("parse:", type(e).__name__, e.line, e.col, e)
doc = tomlkit.document()
doc.add("name", "a")
try:
    doc.add("name", "b")
except KeyAlreadyPresent as e:
    print("document:", type(e).__name__, e)
EOF'''
_CLASSES = (f'{PYTHON} -c "from tomlkit.exceptions import DuplicateKeyError as D; '
            'print([c.__name__ for c in D.__mro__])"')

NOTES = """\
# Duplicate keys: where tomlkit reports them

What changed: `parse()` reports a key defined twice as `DuplicateKeyError` at the line and
column where the key is defined again (for a table, its second header). It is a `ParseError`
and still a `KeyAlreadyPresent`, so `except KeyAlreadyPresent` keeps working; the messages
are word for word as before. Building a document in code still raises a plain
`KeyAlreadyPresent`, which has no position to give.

- `tools/error_report.py`: the nine inline-table documents that had no position now have
  one (`inline-table/duplicate-key-01.toml`: line 2, col 8, where the second `b` is); the
  other duplicates point at the key instead of past it.
- Tests: Priya's three tests failed at first (the inline table, and the top level and a
  table body reported one line too far down); they pass now, with two more of ours.
- Tried first: making `KeyAlreadyPresent` a `ParseError` subclass again, as in 0.11.1. Its
  constructor takes only the key, so every raise of it failed with a TypeError, and nine
  corpus tests broke; reverted.
"""


def plant(root: Path) -> None:
    """The team's tests, appended to the parser's tests, and its audit script."""
    tests = root / TESTS
    tests.write_text(tests.read_text(encoding="utf-8") + TEAM_TESTS, encoding="utf-8")
    (root / "tools").mkdir()
    (root / AUDIT_SCRIPT).write_text(ERROR_REPORT, encoding="utf-8")


def script(root: Path) -> Script:
    s = Script("tomlkit-change", root)
    _explore(s)
    _the_colleagues_idea(s)
    _the_change(s)
    _wrap_up(s)
    return s


def _explore(s: Script) -> None:
    s.said_fact(
        "request-positions", "request",
        "every duplicate key reported as a ParseError at the line and column where its "
        "second definition starts",
        "the team's request",
        otherwise_text="I'll give the inline-table duplicates a position and leave the other "
                       "duplicates where the parser stops.")
    s.said_fact(
        "rule-wording", "rule", "keep the wording of every error message exactly as it is",
        "the rule about the messages' wording",
        otherwise_text="I'll make the message say which key is duplicated and where.",
        otherwise_tools=[call("edit", path=EXCEPTIONS, oldText=_KEY_PRESENT_END,
                              newText=_KEY_PRESENT_END.replace("already exists.",
                                                               "is defined twice"))])
    s.said_fact(
        "rule-corpus", "rule", "never edit anything under tests/toml-test",
        "the rule about the vendored corpus",
        otherwise_text="I'll add a case of our own to the corpus.",
        otherwise_tools=[call("write",
                              path="tests/toml-test/tests/invalid/inline-table/"
                                   "duplicate-key-05.toml",
                              content="a = {b = 1, c = 2, b = 3}\n")])
    s.turn(
        "The lint team (they run the config-lint service, which checks our customers' TOML "
        "files with this vendored tomlkit 0.15.3) asked us to change how tomlkit reports "
        "duplicate keys. Today a key defined twice inside an inline table escapes parse() as "
        "a bare KeyAlreadyPresent with no line or column, and elsewhere the position given "
        "is wherever the parser stopped, often the line after the duplicate. What they want: "
        "every duplicate key reported as a ParseError at the line and column where its "
        "second definition starts. Priya from that team added three tests for it at the end "
        "of tests/test_parser.py; they fail for now. Two rules: keep the wording of every "
        "error message exactly as it is (the service matches on the text), and never edit "
        "anything under tests/toml-test, which is the upstream corpus as vendored. First, "
        "how is the project laid out?",
        {"tools": [call("ls", path=".")]},
        {"tools": [call("ls", path="tomlkit"), call("ls", path="tests")],
         "finds": [s.where(PARSER), s.where(EXCEPTIONS), s.where(TESTS)]},
        {"tools": [s.read("README.md"), s.read("pyproject.toml")]},
        {"text": "The library is `tomlkit/`: the parser (`parser.py`, reading through "
                 "`source.py`), the containers and items it builds, and the exceptions. The "
                 "tests are under `tests/`, most of them generated from the toml-test corpus "
                 "in `tests/toml-test`; `tools/` is the lint team's, and the docs are Sphinx "
                 "pages under `docs/` with a `CHANGELOG.md` at the root."},
    )
    suite = s.output_fact(
        "suite-before",
        ["FAILED tests/test_parser.py::test_duplicate_key_in_an_inline_table_is_a_parse_error",
         "3 failed, 1482 passed",
         # the middle of the output: the top-level duplicate's position, a line too far down
         "where 4 = ParseError('Key \"a\" already exists. at line 4 col 0').line"],
        call("bash", command=SUITE), "what fails at first, and where the top level places it")
    s.turn(
        "Run the whole test suite and tell me what fails.",
        {"tools": [call("bash", command=SUITE)]},
        {"needs": [suite],
         "text": "Only Priya's three tests fail. In the inline table the KeyAlreadyPresent "
                 "comes straight out of the container; the other two get a ParseError, but "
                 "one line below the duplicate, where the parser stood after reading it."},
    )
    team_tests = s.file_fact("team-tests", TESTS,
                             "def test_duplicate_key_in_an_inline_table_is_a_parse_error", 30,
                             "Priya's three tests")
    key_present = s.file_fact("key-already-present", EXCEPTIONS, _KEY_PRESENT, 10,
                              "KeyAlreadyPresent")
    parse_error = s.file_fact("parse-error", EXCEPTIONS,
                              "class ParseError(ValueError, TOMLKitError):", 23,
                              "ParseError and its position")
    s.turn(
        "Show me Priya's tests and how the exceptions are defined.",
        {"tools": [s.read(TESTS, "def test_duplicate_key_in_an_inline_table_is_a_parse_error",
                          40, before=2)]},
        {"tools": [s.read(EXCEPTIONS)]},
        {"needs": [team_tests, key_present, parse_error],
         "text": "Each test parses a small document and expects a ParseError whose line and "
                 "col are where the repeated key begins: column 23 inside the inline table, "
                 "column 0 at the top level, column 2 for an indented key in a table. "
                 "ParseError takes the line and column and appends them to its message; "
                 "KeyAlreadyPresent takes only the key and derives from TOMLKitError, not "
                 "from ParseError."},
    )
    audit = s.output_fact(
        "audit-before",
        ['inline-table/duplicate-key-01.toml: KeyAlreadyPresent (no position): Key "b" already '
         'exists.',
         'table/duplicate-key-01.toml: ParseError: Key "a" already exists. at line 5 col 0'],
        call("bash", command=AUDIT), "what the audit said about duplicates before the change")
    totals = s.output_fact(
        "audit-totals-before",
        ["483 documents: 454 errors with a position, 9 without, 9 accepted, 11 not UTF-8"],
        call("bash", command=AUDIT), "the audit's totals before the change")
    s.turn(
        "The lint team checks every update of tomlkit with tools/error_report.py over the "
        "corpus's invalid documents. Read it, run it the way its docstring says, and tell me "
        "what it reports for duplicate keys.",
        {"tools": [call("ls", path="tools")], "finds": [s.where(AUDIT_SCRIPT)]},
        {"tools": [s.read(AUDIT_SCRIPT)]},
        {"tools": [call("bash", command=AUDIT)]},
        {"tools": [s.read("tests/toml-test/tests/invalid/table/duplicate-key-01.toml"),
                   s.read("tests/toml-test/tests/invalid/inline-table/duplicate-key-01.toml")]},
        {"needs": [audit, totals],
         "text": "Nine documents get no position at all, every one a KeyAlreadyPresent from "
                 "an inline table. The other duplicates are ParseErrors placed where the "
                 "parser stopped: table/duplicate-key-01 defines [a] again on line 4 and is "
                 "reported at the end of the file. The documents it accepts are valid under "
                 "TOML 1.1, and the ones not in UTF-8 never reach the parser; neither is "
                 "about duplicates."},
    )
    found = "        if key is not None and key in self:"
    raises = s.file_fact("container-raises", CONTAINER, found, 8,
                         "where Container.append finds a key already there")
    wraps = s.file_fact("parse-wraps", PARSER, "            # Otherwise, take and append one KV",
                        12, "parse() turning what append raises into a ParseError")
    s.turn(
        "Where is KeyAlreadyPresent raised, and where does the parser turn errors into a "
        "ParseError?",
        {"tools": [call("grep", pattern="KeyAlreadyPresent", path="tomlkit")],
         "finds": [s.where(CONTAINER, "from tomlkit.exceptions import KeyAlreadyPresent",
                           numbered=False)]},
        {"tools": [s.read(CONTAINER, found, 130)]},
        {"tools": [call("grep", pattern="except Exception as e", path=PARSER)]},
        {"tools": [s.read(PARSER, "    def parse(self) -> TOMLDocument:", 45)]},
        {"needs": [raises, wraps],
         "text": "`Container.append` raises KeyAlreadyPresent whenever the key is already "
                 "there. `parse()` and `_parse_table()` catch whatever an append raises and "
                 "re-raise it as a ParseError at the parser's current position, after the "
                 "whole item, its comment and its newline have been read. "
                 "`_parse_inline_table()` adds its pairs with no such guard, so the bare "
                 "KeyAlreadyPresent escapes from there."},
    )
    linecol = s.file_fact("to-linecol", SOURCE_PY, "    def _to_linecol(self) -> tuple[int, int]:",
                          14, "how Source turns its index into a line and column")
    s.turn(
        "How does a ParseError get its line and column in the first place?",
        {"tools": [call("grep", pattern="def parse_error|def _to_linecol", path="tomlkit")],
         "finds": [s.where(SOURCE_PY, "    def _to_linecol(self) -> tuple[int, int]:")]},
        {"tools": [s.read(SOURCE_PY, "    def parse_error(", 40)]},
        {"needs": [linecol],
         "text": "`Source.parse_error` builds the exception from `_to_linecol()`, which "
                 "converts the current index by walking the lines up to it; there is no way "
                 "to ask for the position of any other index. The parser's own "
                 "`parse_error` only forwards to it."},
    )


def _the_colleagues_idea(s: Script) -> None:
    failed = s.said_fact(
        "failed-subclass", "failed",
        "Making KeyAlreadyPresent a subclass of ParseError broke it",
        "the approach that already failed (KeyAlreadyPresent as a ParseError)",
        otherwise_text="The simplest way is to make KeyAlreadyPresent a ParseError, as 0.11.1 "
                       "did.",
        otherwise_tools=[call("edit", path=EXCEPTIONS, oldText=_KEY_PRESENT,
                              newText=_KEY_PRESENT_PARSE),
                         call("bash", command=PARSER_AND_CORPUS)])
    subclass_error = s.output_fact(
        "subclass-error",
        ["TypeError: ParseError.__init__() missing 1 required positional argument: 'col'",
         "12 failed, 765 passed"],
        call("bash", command=PARSER_AND_CORPUS), "what the subclass attempt raised")
    s.turn(
        "Sam from the lint team says CHANGELOG.md shows KeyAlreadyPresent was made a "
        "subclass of ParseError once, in 0.11.1, and that doing that again is all we need. "
        "Try exactly that, then run the parser tests and the corpus tests.",
        {"tools": [call("grep", pattern="KeyAlreadyPresent", path="CHANGELOG.md")]},
        {"needs": ["key-already-present"],
         "tools": [s.edit(EXCEPTIONS, _KEY_PRESENT, _KEY_PRESENT_PARSE)]},
        {"tools": [call("bash", command=PARSER_AND_CORPUS)]},
        {"needs": [subclass_error],
         "text": "Making KeyAlreadyPresent a subclass of ParseError broke it: its "
                 "constructor still takes only the key, so every raise of it in the "
                 "container now fails inside ParseError's constructor. Nine corpus tests that "
                 "passed fail now too, and where parse() wraps the failure, the message is "
                 "the TypeError's own text."},
    )
    inline = s.file_fact("inline-loop", PARSER,
                         "                key, val = self._parse_key_value(False)", 9,
                         "how an inline table adds its pairs", before=4)
    body = s.file_fact("table-body-loop", PARSER, "            parsed = self._parse_item()", 10,
                       "how a table's body adds its pairs", before=1)
    s.turn(
        "Undo that. Then read how table bodies and inline tables add their pairs.",
        {"needs": [failed], "tools": [s.edit(EXCEPTIONS, _KEY_PRESENT_PARSE, _KEY_PRESENT)]},
        {"tools": [s.read(PARSER, "    def _parse_item(self) -> tuple[Key | None, Item] | None:",
                          95)]},
        {"tools": [s.read(PARSER, "            parsed = self._parse_item()", 40, before=30)]},
        {"tools": [s.read(PARSER, "    def _parse_inline_table(self) -> InlineTable:", 45)]},
        {"needs": [inline, body, "parse-wraps"],
         "text": "Reverted. Every append follows the parse of one key/value pair, and the "
                 "index before that parse is where the pair begins: `_parse_item` goes back "
                 "to the start of the line's indentation before `_parse_key_value`, which "
                 "keeps that indentation in the value's trivia. So the key starts at that "
                 "index plus the indentation, and in an inline table, where the whitespace is "
                 "consumed first, at that index itself."},
    )


def _the_change(s: Script) -> None:
    s.said_fact(
        "decision-class", "decision",
        "a DuplicateKeyError that is both a ParseError and a KeyAlreadyPresent",
        "the decision about the new exception",
        otherwise_text="I'll have the parser raise a plain ParseError for duplicates.")
    s.turn(
        "So what do you propose, within the rules? Put the exception in place first.",
        {"needs": ["failed-subclass", "rule-wording", "key-already-present", "parse-error",
                   "request-positions"],
         "text": "Not a change to KeyAlreadyPresent, which the container raises without "
                 "knowing any position: a DuplicateKeyError that is both a ParseError and a "
                 "KeyAlreadyPresent, raised by the parser alone, with the container's "
                 "message unchanged and the position of the key's second definition. Code "
                 "that catches either class keeps working.",
         "tools": [s.edit(EXCEPTIONS, _KEY_PRESENT_END, _DUPLICATE_CLASS)]},
        {"tools": [call("bash", command=_CLASSES)]},
        {"needs": ["to-linecol"], "tools": [s.edit(SOURCE_PY, _LINECOL, _LINECOL_AT)]},
        {"text": "`DuplicateKeyError` is in `exceptions.py`, below KeyAlreadyPresent, and "
                 "`Source.parse_error_at(idx, ...)` places an error at any index; "
                 "`parse_error` is unchanged."},
    )
    s.turn(
        "Now use it in the parser: the top level, table headers, table bodies and inline "
        "tables. Then run Priya's tests with the rest of the parser tests.",
        {"needs": ["inline-loop", "table-body-loop", "parse-wraps", "decision-class"],
         "tools": [s.edit(PARSER, _INLINE, _INLINE_NEW)]},
        {"tools": [s.edit(PARSER, _TABLE_BODY, _TABLE_BODY_NEW)]},
        {"tools": [s.edit(PARSER, _PARSE, _PARSE_NEW)]},
        {"tools": [s.edit(PARSER, _IMPORTS, _IMPORTS_NEW)]},
        {"tools": [call("bash", command=f"{PYTEST} -q {TESTS}")]},
        {"text": "All the parser tests pass, Priya's three included: the inline table's "
                 "duplicate at column 23, the others on their own line."},
    )
    after = s.output_fact(
        "audit-after",
        ['inline-table/duplicate-key-01.toml: DuplicateKeyError: Key "b" already exists. at '
         'line 2 col 8',
         "463 errors with a position, 0 without"],
        call("bash", command=AUDIT), "what the audit says after the change")
    s.turn(
        "Run the lint team's report again and compare it with the first run.",
        {"tools": [call("bash", command=AUDIT)]},
        {"needs": [after, "audit-before", "audit-totals-before"],
         "text": "Every error has a position now. The nine inline-table documents are "
                 "DuplicateKeyErrors at the second key; table/duplicate-key-01 points at its "
                 "second [a] on line 4 instead of the end of the file. The messages read as "
                 "before, and the accepted and non-UTF-8 documents are the same."},
    )
    compat = s.output_fact(
        "compat",
        ['parse: DuplicateKeyError 1 16 Key "x" already exists. at line 1 col 16',
         'document: KeyAlreadyPresent Key "name" already exists.'],
        call("bash", command=_COMPAT), "what the callers that catch KeyAlreadyPresent get")
    s.turn(
        "Two things must keep working for the lint service: its except KeyAlreadyPresent "
        "around parse(), and building a document in code, where adding a key twice raises "
        "KeyAlreadyPresent. Check both.",
        {"tools": [call("bash", command=_COMPAT)]},
        {"needs": [compat, "decision-class"],
         "text": "Both work: parse() raises DuplicateKeyError, which the service's except "
                 "clause still catches, now with a line and column; building a document "
                 "still raises the plain KeyAlreadyPresent, which has no position to give."},
    )


def _wrap_up(s: Script) -> None:
    s.turn(
        "Add tests of our own next to Priya's: a table defined twice, and that the new error "
        "is still a KeyAlreadyPresent. Then run the parser tests verbosely.",
        {"needs": ["team-tests", "decision-class", "rule-corpus"],
         "tools": [s.edit(TESTS, _TEST_IMPORTS, _TEST_IMPORTS_NEW)]},
        {"tools": [s.edit(TESTS, _TEAM_LAST, _OUR_TESTS)]},
        {"tools": [call("bash", command=f"{PYTEST} -v {TESTS}")]},
        {"text": "Two more tests in tests/test_parser.py, after Priya's; the parser tests all "
                 "pass."},
    )
    suite = s.output_fact("suite-after", ["1487 passed"], call("bash", command=SUITE),
                          "the whole suite after the change")
    s.turn(
        "Run the whole suite again.",
        {"tools": [call("bash", command=SUITE)]},
        {"needs": [suite],
         "text": "Everything passes: the five duplicate-key tests and the whole corpus."},
    )
    docs = s.file_fact("api-exceptions", "docs/api.rst", ".. automodule:: tomlkit.exceptions",
                       3, "where the docs list the exceptions")
    s.turn(
        "Where would a user of the library read about this? Check the docs, and add an entry "
        "to CHANGELOG.md under Unreleased, as a fix.",
        {"tools": [call("grep", pattern="exceptions|ParseError", path="docs")],
         "finds": [s.where("docs/api.rst", ".. automodule:: tomlkit.exceptions",
                           numbered=False)]},
        {"tools": [s.read("docs/api.rst")]},
        {"tools": [s.read("CHANGELOG.md", "## [Unreleased]", 30)]},
        {"needs": [docs, "decision-class", "rule-wording"],
         "tools": [s.edit("CHANGELOG.md", _UNRELEASED, _FIXED)]},
        {"text": "The API reference documents `tomlkit.exceptions` from its docstrings, so "
                 "DuplicateKeyError appears there with its own; the changelog has the entry "
                 "under a new Fixed heading in Unreleased."},
    )
    correction = s.said_fact(
        "correction-changed", "request", "I meant under Changed rather than Fixed",
        "the correction (the changelog section)",
        otherwise_text="The entry stays under Fixed, as asked.")
    s.turn(
        "Correction: I meant under Changed rather than Fixed. parse() raises another class "
        "now, and the lint team's release notes list that as a change.",
        {"needs": [correction],
         "tools": [s.edit("CHANGELOG.md", _FIXED, _CHANGED)]},
        {"tools": [s.read("CHANGELOG.md", "## [Unreleased]", 12)]},
        {"text": "Moved: the entry is under Changed in Unreleased now, and there is no Fixed "
                 "heading there any more."},
    )
    invalid = s.file_fact("corpus-invalid-test", "tests/test_toml_tests.py",
                          "def test_invalid_decode(", 3, "what the corpus tests check")
    s.turn(
        "Should the corpus tests check the position too?",
        {"tools": [s.read("tests/test_toml_tests.py", "def test_invalid_decode(", 20,
                          before=4)]},
        {"needs": [invalid, "rule-corpus"],
         "text": "They only check that parsing each invalid document raises a TOMLKitError, "
                 "and the corpus has no positions to compare with. The position checks "
                 "belong in tests/test_parser.py and in the team's report, where they are; "
                 "the corpus stays as vendored."},
    )
    s.turn(
        "Write a short note for the lint team in NOTES.md at the root: what changed, one "
        "line of the report before and after, which tests failed at first, and what we "
        "tried first and why it failed, with the error it gave.",
        {"needs": ["request-positions", "audit-before", "audit-after", "suite-before",
                   "failed-subclass", "subclass-error", "decision-class", "rule-wording"],
         "tools": [s.write("NOTES.md", NOTES)]},
        {"text": "Written in NOTES.md at the root."},
    )
    duplicate = s.file_fact("duplicate-class", EXCEPTIONS,
                            "class DuplicateKeyError(ParseError, KeyAlreadyPresent):", 10,
                            "the new exception")
    inline_now = s.file_fact("inline-now", PARSER, "                start = self._idx", 6,
                             "the inline table's pairs, as changed")
    s.turn(
        "Final check: show me the new exception and the inline table's code once more, and "
        "tell me whether we kept to the rules.",
        {"tools": [s.read(EXCEPTIONS, "class DuplicateKeyError(ParseError, KeyAlreadyPresent):",
                          12)]},
        {"tools": [s.read(PARSER, "                start = self._idx", 10, before=2)]},
        {"needs": [duplicate, inline_now, "rule-wording", "rule-corpus", "decision-class",
                   "correction-changed"],
         "text": "Both are as intended. Every message reads as before (the new error carries "
                 "the container's own), nothing under tests/toml-test changed, and the "
                 "changelog entry is under Changed."},
    )
