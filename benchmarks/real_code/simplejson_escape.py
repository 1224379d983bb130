"""Emoji that do not survive a round trip, in simplejson 4.3.0 (MIT; a JSON encoder and decoder
in pure Python beside an optional C extension, which is not built here, so the Python one
runs): `py_encode_basestring_ascii` writes a character beyond the Basic Multilingual Plane as
a surrogate pair, and the planted change shifts the high surrogate by eleven bits where it
takes ten, so `dumps` writes a pair that decodes to another character.

Written at stop 68, after every default of the product was set, as a session none of them was
tuned on: a customer's report pasted with the API's response, a 27 KB verbose suite run with
four failures twice, two modules read whole, a reproduction whose output changes once the fix
is in, a colleague's guess that does not help (the command exits 0), a rule about a file the
fix would tempt one to touch (the C extension has the same formula), and a changelog entry.

The session lays out the package, runs the suite (four failures), reproduces the report, reads
the encoder and the failing tests, tries the colleague's `strict=False`, finds and fixes the
shift, takes a correction (the regression test goes through `dumps` and `loads` too), reads the
decoder's side of surrogate pairs, runs the suite again, writes the changelog entry and
answers what failed and what the fixed lines are. Planted for the knowledge check: two rules, a
decision, the failed approach, a correction, and outputs and file lines later steps use; the
suite's failures and the reproduction's first output are gone once the fix is in.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.real_code.script import PYTHON, Script, call, plant_change
from benchmarks.real_code.sources import Source

SOURCE = Source("simplejson", "4.3.0",
                "ffe34ab51a0d37e6d1c661a5672df00d2d5e18804e38eac07abffb83fa5ec3d7", "MIT")
ENCODER = "simplejson/encoder.py"
DECODER = "simplejson/decoder.py"
SPEEDUPS = "simplejson/_speedups.c"
ASCII_TESTS = "simplejson/tests/test_encode_basestring_ascii.py"
UNICODE_TESTS = "simplejson/tests/test_unicode.py"
CHANGES = "CHANGES.txt"
PYTEST = f"{PYTHON} -m pytest -p no:cacheprovider"
SUITE_VERBOSE = f"{PYTEST} -v simplejson/tests"
SUITE_QUIET = f"{PYTEST} -q simplejson/tests"
ASCII_RUN = f"{PYTEST} -q {ASCII_TESTS}"
REPRO = (f"{PYTHON} -c \"import simplejson as json; s = json.dumps({{'name': 'Pizza "
         "\\U0001F355'}); print(s); print('round trip:', json.loads(s) == {'name': 'Pizza "
         "\\U0001F355'})\"")
STRICT = (f"{PYTHON} -c \"import simplejson as json; s = json.dumps({{'name': 'Pizza "
          "\\U0001F355'}); print('with strict=False:', json.loads(s, strict=False) == "
          "{'name': 'Pizza \\U0001F355'})\"")

_RELEASED = "                s1 = 0xd800 | ((n >> 10) & 0x3ff)\n"
_PLANTED = "                s1 = 0xd800 | ((n >> 11) & 0x3ff)\n"

_TEST_AT = "    def test_sorted_dict(self):"
_TEST = '''    def test_beyond_the_bmp(self):
        encode = simplejson.encoder.py_encode_basestring_ascii
        self.assertEqual(encode(u'\\U0001f355'), '"\\\\ud83c\\\\udf55"')


'''
_TEST_ENCODE = '''        self.assertEqual(encode(u'\\U0001f355'), '"\\\\ud83c\\\\udf55"')
'''
_TEST_ROUND_TRIP = '''        self.assertEqual(encode(u'\\U0001f355'), '"\\\\ud83c\\\\udf55"')
        text = u'Pizza \\U0001f355'
        self.assertEqual(simplejson.loads(simplejson.dumps(text)), text)
'''
_CHANGES_AT = "Version 4.3.0 released 2026-11-10\n"
_CHANGES = ("Version 4.3.1 released XXXX-XX-XX\n\n"
            "* The pure Python ``encode_basestring_ascii`` writes the right surrogate\n"
            "  pair for characters beyond the Basic Multilingual Plane again\n\n")

REPORT = """\
A customer of our catalogue API writes (their message, trimmed):

> Since your release on Tuesday, product names with emoji come back wrong. We PUT
> {"name": "Pizza 🍕", "sku": "PZ-104"} and GET it back as
>
>     HTTP/1.1 200 OK
>     Content-Type: application/json
>
>     {"name": "Pizza \\ud81e\\udf55", "sku": "PZ-104", "price": {"amount": 1190,
>      "currency": "EUR"}, "tags": ["food", "hot"]}
>
> Our JSON library turns that escape into a character from a script nobody here reads,
> and our search index now has 2,300 products named like that. Plain accented names
> (Crème brûlée) are fine.

Our API serialises with the vendored simplejson, ensure_ascii on (a proxy of theirs
mangles raw UTF-8), and nothing else changed on Tuesday but the vendoring.
"""


def plant(root: Path) -> None:
    """The high surrogate shifted by eleven bits instead of ten."""
    plant_change(root / ENCODER, _RELEASED, _PLANTED)


def script(root: Path) -> Script:
    s = Script("simplejson-escape", root)
    _explore(s)
    _reproduce(s)
    _fix(s)
    _wrap_up(s)
    return s


def _explore(s: Script) -> None:
    s.said_fact(
        "rule-speedups", "rule", "never edit simplejson/_speedups.c",
        "the rule about the C extension",
        otherwise_text="The C extension computes the same pair; I'll touch it up too.",
        otherwise_tools=[call("edit", path=SPEEDUPS,
                              oldText="                    c = 0xd800 | ((v >> 10) & 0x3ff);",
                              newText="                    c = 0xd800 | ((v >> 10) & 0x3ff); "
                                      "/* checked */")])
    s.said_fact(
        "rule-changes", "rule",
        "every fix gets an entry in CHANGES.txt under a new 4.3.1 heading",
        "the rule about CHANGES.txt",
        otherwise_text="A fix this small needs no changelog entry.")
    s.turn(
        "We vendor simplejson 4.3.0 in our API. Two rules: never edit simplejson/_speedups.c, "
        "the C build belongs to the platform team and is not built here anyway; and every fix "
        "gets an entry in CHANGES.txt under a new 4.3.1 heading, in the style of the entries "
        "below it. How is the package laid out?",
        {"tools": [call("ls", path=".")]},
        {"tools": [call("ls", path="simplejson"), call("ls", path="simplejson/tests")],
         "finds": [s.where(ENCODER), s.where(DECODER), s.where(ASCII_TESTS)]},
        {"tools": [s.read("README.rst")]},
        {"text": "An encoder and a decoder in pure Python (`encoder.py`, `decoder.py`, "
                 "`scanner.py`), each with a C twin in `_speedups.c` used when it is built, "
                 "and the tests under `simplejson/tests`."},
    )
    suite = s.output_fact(
        "suite-before",
        ["FAILED simplejson/tests/test_unicode.py::TestUnicode::test_big_unicode_encode",
         "4 failed, 234 passed, 44 skipped"],
        call("bash", command=SUITE_VERBOSE), "the suite's failures before the fix")
    s.turn(
        "Run the whole test suite verbosely so we know where we start.",
        {"tools": [call("bash", command=SUITE_VERBOSE)]},
        {"needs": [suite],
         "text": "Four tests fail, all about characters beyond the Basic Multilingual Plane: "
                 "the ASCII escaping, a big unicode encode, and the command-line tool's two "
                 "UTF-8 tests. The C tests are skipped: the extension is not built."},
    )


def _reproduce(s: Script) -> None:
    before = s.output_fact(
        "repro-before", ['{"name": "Pizza \\ud81e\\udf55"}', "round trip: False"],
        call("bash", command=REPRO), "what the reproduction printed before the fix")
    s.turn(
        REPORT + "\nReproduce it from the outside with the vendored copy.",
        {"tools": [call("bash", command=REPRO)]},
        {"needs": [before],
         "text": "Reproduced: the pizza comes out as a surrogate pair that is not the "
                 "pizza's, and it does not round-trip."},
    )
    escape = s.file_fact("escape-ascii", ENCODER, "def py_encode_basestring_ascii(s, _PY3=PY3):",
                         38, "how the encoder escapes a string to ASCII")
    chosen = s.file_fact("encoder-choice", ENCODER, "encode_basestring_ascii = (", 2,
                         "which escaping function the encoder uses")
    s.turn(
        "Which code writes that escape?",
        {"tools": [call("grep", pattern="def py_encode_basestring_ascii|"
                                        "encode_basestring_ascii = ", path=ENCODER)],
         "finds": [s.where(ENCODER, "def py_encode_basestring_ascii(s, _PY3=PY3):")]},
        {"tools": [s.read(ENCODER)]},
        {"needs": [escape, chosen],
         "text": "`py_encode_basestring_ascii` in encoder.py, used because the C "
                 "`encode_basestring_ascii` is not built: it escapes each character beyond "
                 "the BMP as a surrogate pair computed from the code point."},
    )
    failing = s.file_fact("big-unicode-test", UNICODE_TESTS,
                          "    def test_big_unicode_encode(self):", 9, "the failing unicode tests")
    s.turn(
        "What do the failing tests expect?",
        {"tools": [s.read(UNICODE_TESTS, "    def test_big_unicode_encode(self):", 12)]},
        {"tools": [s.read(ASCII_TESTS)]},
        {"needs": [failing, "suite-before"],
         "text": "The exact pair for U+1D120, `\\ud834\\udd20`, from `dumps` and from the "
                 "ASCII escaping directly, and a round trip of it."},
    )
    s.said_fact(
        "failed-strict", "failed", "Decoding with strict=False did not help",
        "the approach that already failed (decoding with strict=False)",
        otherwise_tools=[call("bash", command=STRICT)],
        otherwise_text="Let me try decoding with strict=False first.")
    strict = s.output_fact("strict-output", ["with strict=False: False"],
                           call("bash", command=STRICT), "what decoding with strict=False gave")
    s.turn(
        "A colleague thinks the decoder is too strict about surrogates and that loads with "
        "strict=False would read it back right. Try exactly that.",
        {"tools": [call("bash", command=STRICT)]},
        {"needs": [strict],
         "text": "Decoding with strict=False did not help: the text still does not come "
                 "back, because `strict` only concerns control characters, and the pair was "
                 "already wrong when it was written."},
    )


def _fix(s: Script) -> None:
    s.said_fact(
        "decision-fix-encoder", "decision",
        "we fix the shift in py_encode_basestring_ascii rather than turn ensure_ascii off",
        "the decision on where to fix it",
        otherwise_text="I'll switch the API to ensure_ascii=False, which skips the escaping.")
    after = s.output_fact(
        "repro-after", ['{"name": "Pizza \\ud83c\\udf55"}', "round trip: True"],
        call("bash", command=REPRO), "what the reproduction printed after the fix")
    s.turn(
        "Find the cause and fix it.",
        {"needs": ["escape-ascii", "failed-strict"],
         "text": "The high surrogate is shifted by eleven bits where the ten bits above the "
                 "low ten are wanted; ensure_ascii=False would hide it, but the customer's "
                 "proxy needs ASCII, so we fix the shift in py_encode_basestring_ascii rather "
                 "than turn ensure_ascii off.",
         "tools": [s.edit(ENCODER, _PLANTED, _RELEASED)]},
        {"tools": [call("bash", command=REPRO)]},
        {"needs": [after, "repro-before"],
         "text": "Fixed: the pizza is written as `\\ud83c\\udf55` and reads back, where it "
                 "was `\\ud81e\\udf55` before."},
    )
    quiet = s.output_fact("suite-quiet", ["238 passed, 44 skipped"],
                          call("bash", command=SUITE_QUIET), "the suite after the fix, quietly")
    s.turn(
        "Run the suite quietly.",
        {"tools": [call("bash", command=SUITE_QUIET)]},
        {"needs": [quiet, "rule-speedups"],
         "text": "All pass; the C extension is untouched, and its own formula was right."},
    )
    cases = s.file_fact("ascii-cases", ASCII_TESTS,
                        "    (u'\\U0001d120', '\"\\\\ud834\\\\udd20\"'),", 1,
                        "the astral case of the ASCII tests")
    s.turn(
        "Add a regression test for the pizza to test_encode_basestring_ascii.py, and run that "
        "file.",
        {"needs": ["rule-changes", "decision-fix-encoder"],
         "tools": [s.read(ASCII_TESTS, "class TestEncodeBaseStringAscii(TestCase):", 30)]},
        {"needs": [cases], "tools": [s.edit(ASCII_TESTS, _TEST_AT, _TEST + _TEST_AT)]},
        {"tools": [call("bash", command=ASCII_RUN)]},
        {"text": "`test_beyond_the_bmp` checks the pair for U+1F355; the file passes."},
    )
    correction = s.said_fact(
        "correction-round-trip", "request",
        "the regression test must also round-trip the text through dumps and loads",
        "the correction (what the regression test checks)",
        otherwise_text="The escape alone is what broke; the test checks only that.")
    s.turn(
        "Correction: the regression test must also round-trip the text through dumps and "
        "loads, since that is what the customer saw, not only the escape. Change it and run "
        "the file again.",
        {"needs": ["repro-before"], "tools": [s.edit(ASCII_TESTS, _TEST_ENCODE,
                                                      _TEST_ROUND_TRIP)]},
        {"tools": [call("bash", command=ASCII_RUN)]},
        {"needs": [correction],
         "text": "Done: the test also dumps and loads 'Pizza' with the emoji; the file "
                 "passes."},
    )
    scan = s.file_fact("decoder-pairs", DECODER, "            # Check for surrogate pair on UCS-4 "
                       "systems", 14, "how the decoder joins a surrogate pair")
    s.turn(
        "Is the decoder's side of surrogate pairs right?",
        {"tools": [call("grep", pattern="surrogate", path=DECODER)],
         "finds": [s.where(DECODER, "            # Check for surrogate pair on UCS-4 systems")]},
        {"tools": [s.read(DECODER)]},
        {"needs": [scan],
         "text": "Yes: `py_scanstring` joins a high and a low surrogate with the inverse "
                 "formula, ten bits each, and passes an unpaired one through."},
    )


def _wrap_up(s: Script) -> None:
    after = s.output_fact(
        "suite-after", ["simplejson/tests/test_unicode.py::TestUnicode::test_big_unicode_encode "
                        "PASSED", "239 passed, 44 skipped"],
        call("bash", command=SUITE_VERBOSE), "the suite after the fix, verbosely")
    s.turn(
        "Run the whole suite verbosely once more.",
        {"tools": [call("bash", command=SUITE_VERBOSE)]},
        {"needs": [after, "suite-before"],
         "text": "Everything passes: the four that failed, and the new test."},
    )
    s.turn(
        "Write the changelog entry the rule asks for.",
        {"needs": ["rule-changes", "repro-before", "decision-fix-encoder"],
         "tools": [s.edit(CHANGES, _CHANGES_AT, _CHANGES + _CHANGES_AT)]},
        {"text": "Added under a new 4.3.1 heading, in the style of the entries below."},
    )
    s.turn(
        "What did we try that did not work, and what did the reproduction print before the "
        "fix?",
        {"needs": ["failed-strict", "strict-output", "repro-before"],
         "text": "Decoding with `strict=False`: the pizza still did not come back. Before the "
                 "fix the reproduction wrote the wrong pair and the round trip failed."},
    )
    fixed = s.file_fact("escape-fixed", ENCODER, "def py_encode_basestring_ascii(s, _PY3=PY3):",
                        38, "the escaping as it is now")
    s.turn(
        "Show me the escaping as it is now, and tell me which rules and decisions of this "
        "session the change keeps.",
        {"tools": [s.read(ENCODER, "def py_encode_basestring_ascii(s, _PY3=PY3):", 38)]},
        {"needs": [fixed, "rule-speedups", "rule-changes", "decision-fix-encoder"],
         "text": "It computes the high surrogate from the ten bits above the low ten again; "
                 "the C extension was not touched, the changelog has its entry, and "
                 "ensure_ascii stays on."},
    )
