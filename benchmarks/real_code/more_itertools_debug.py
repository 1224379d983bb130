"""A long debugging session over test output and a log, in more-itertools 10.7.0 (MIT; a
5,000-line module and a 6,000-line test file).

Planted: `windowed` pads its last window once too often when the step is at least the width
(`n - 1` became `n`), so `windowed(x, 1)` yields one window of fill values too many. The
symptom is elsewhere: `replace` feeds that window to its predicate, five of the library's
tests fail with a TypeError, and the team's nightly job (a small pipeline and its log, added
next to the library, as a user's repository would have them) crashes on one batch in a
2,900-line log. The session reads the log, runs the tests verbosely, reads `replace`, tries a
wrong fix first (a fill value of its own in `replace`: the tests still fail), finds `windowed`,
fixes it, adds a regression test, and checks the job. Planted for the knowledge check: two
rules (the log, skipping tests), a decision, the failed approach, a correction, and the file
lines, test output and log lines later steps use.
"""

from __future__ import annotations

import random
from pathlib import Path

from benchmarks.real_code.script import PYTHON, Script, call, plant_change
from benchmarks.real_code.sources import Source

SOURCE = Source("more-itertools", "10.7.0",
                "9fddd5403be01a94b204faadcff459ec3568cf110265d3c54323e1e866ad29d3", "MIT")
MORE = "more_itertools/more.py"
TESTS = "tests/test_more.py"
LOG = "logs/nightly.log"
PYTEST = f"{PYTHON} -m pytest -p no:cacheprovider"
_PADDING = "    padding = (fillvalue,) * (n - 1 if step >= n else step - 1)"
_PLANTED = "    padding = (fillvalue,) * (n if step >= n else step - 1)"
_WINDOWS = "    windows = windowed(it, window_size)"
_MARKED = "    windows = windowed(it, window_size, fillvalue=_marker)"
_FAILING_BATCH = 1187
_LOG_LINES = 2900

PIPELINE = '''"""The nightly job: meter readings, spikes replaced by nothing, hourly sums."""

import logging
from dataclasses import dataclass

import more_itertools as mi

log = logging.getLogger("nightly.transform")
SPIKE = 40.0


@dataclass(frozen=True)
class Reading:
    meter: str
    hour: int
    value: float
    baseline: float


def is_spike(reading):
    return reading.value - reading.baseline > SPIKE


def clean(readings):
    """The readings without spikes (each spike replaced by nothing)."""
    return list(mi.replace(readings, is_spike, [], window_size=1))


def hourly(readings):
    sums = {}
    for reading in readings:
        sums[reading.hour] = sums.get(reading.hour, 0.0) + reading.value
    return sums


def run_batch(number, readings):
    kept = clean(readings)
    log.info("batch=%d kept=%d dropped=%d", number, len(kept), len(readings) - len(kept))
    return hourly(kept)
'''


def nightly_log(seed: int = 11) -> str:
    """The job's log for one night: per batch an extract and a transform line, warnings about
    late meters, and the one batch that failed, with its traceback (varied, as a real job's
    log is: ids, counts, timings and meters change from line to line)."""
    rng = random.Random(seed)
    lines: list[str] = []
    second = 2 * 3600
    batch = 1000
    meters = [f"m-{rng.randrange(1000, 9999)}" for _ in range(60)]
    while len(lines) < _LOG_LINES:
        second += rng.randrange(3, 40)
        stamp = (f"2025-03-14 {second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d},"
                 f"{rng.randrange(1000):03d}")
        rows = rng.randrange(180, 320)
        lines.append(f"{stamp} INFO  nightly.extract batch={batch} source=meters rows={rows} "
                     f"took={rng.uniform(0.2, 3.9):.2f}s")
        if rng.random() < 0.18:
            lines.append(f"{stamp} WARN  nightly.extract batch={batch} late meter="
                         f"{rng.choice(meters)} lag={rng.randrange(61, 900)}s")
        if batch == _FAILING_BATCH:
            lines.extend(_failure(stamp, batch))
        else:
            dropped = rng.randrange(0, 4)
            lines.append(f"{stamp} INFO  nightly.transform batch={batch} kept={rows - dropped} "
                         f"dropped={dropped}")
        batch += 1
    return "\n".join(lines[:_LOG_LINES]) + "\n"


def _line(text: str) -> int:
    """The line of the pipeline's source that holds `text`."""
    return next(i + 1 for i, line in enumerate(PIPELINE.splitlines()) if text in line)


def _failure(stamp: str, batch: int) -> list[str]:
    return [
        f"{stamp} ERROR nightly.transform batch={batch} failed after 0 readings kept",
        "Traceback (most recent call last):",
        f'  File "etl/pipeline.py", line {_line("kept = clean(")}, in run_batch',
        "    kept = clean(readings)",
        f'  File "etl/pipeline.py", line {_line("return list(mi.replace")}, in clean',
        "    return list(mi.replace(readings, is_spike, [], window_size=1))",
        '  File "more_itertools/more.py", line 3272, in replace',
        "    if pred(*w):",
        f'  File "etl/pipeline.py", line {_line("return reading.value -")}, in is_spike',
        "    return reading.value - reading.baseline > SPIKE",
        "AttributeError: 'NoneType' object has no attribute 'value'",
        f"{stamp} ERROR nightly.runner batch={batch} marked failed; the night's sums are "
        "incomplete (1 of 1 retries used)",
    ]


def plant(root: Path) -> None:
    plant_change(root / MORE, _PADDING, _PLANTED)
    (root / "etl").mkdir()
    (root / "etl" / "__init__.py").write_text("", encoding="utf-8")
    (root / "etl" / "pipeline.py").write_text(PIPELINE, encoding="utf-8")
    (root / "logs").mkdir()
    (root / LOG).write_text(nightly_log(), encoding="utf-8")


def _failed_at() -> int:
    """The log's line where the failed batch is reported."""
    return next(i for i, line in enumerate(nightly_log().splitlines()) if " ERROR " in line) + 1


def _page(s: Script, start: int, count: int = 380) -> dict[str, object]:
    """A step that reads `count` lines of the log from `start`, all of them: a client whose
    result is cut reads on from where it stops (`Script.page`)."""
    return s.page(LOG, start, count)


def script(root: Path) -> Script:
    s = Script("more-itertools-debug", root)
    _read_the_log(s)
    _chase_the_cause(s)
    _fix_and_check(s)
    return s


def _read_the_log(s: Script) -> None:
    s.said_fact(
        "rule-log", "rule", "never write anything under logs/",
        "the rule about logs/",
        otherwise_text="I'll keep a trimmed copy of the log next to it.",
        otherwise_tools=[call("bash", command=f"tail -n 400 {LOG} > logs/nightly-tail.log")])
    s.said_fact(
        "rule-no-skip", "rule", "never skip or deselect a failing test",
        "the rule about skipping tests",
        otherwise_text="Let me leave the replace tests out and look at the rest first.",
        otherwise_tools=[call("bash", command=f"{PYTEST} -q {TESTS} --deselect "
                                              f"{TESTS}::ReplaceTests")])
    s.turn(
        "Our nightly job (etl/pipeline.py) crashed last night, right after we updated the "
        "vendored more-itertools 10.7.0 in this repository. The night's log is "
        f"{LOG}. Two rules: never write anything under logs/ (it is the production copy), "
        "and never skip or deselect a failing test. First, what is in the repository?",
        {"tools": [call("ls", path=".")]},
        {"tools": [call("ls", path="more_itertools"), call("ls", path="etl"),
                   call("ls", path="tests")],
         "finds": [s.where(MORE), s.where("more_itertools/recipes.py"), s.where(TESTS)]},
        {"tools": [s.read("etl/pipeline.py"),
                   s.read("README.rst", "readthedocs.org/projects/more-itertools/badge", 60,
                          before=4)]},
        {"text": "The vendored library (`more_itertools/more.py`, `recipes.py`), its tests "
                 "under `tests/`, and our job in `etl/pipeline.py`, which drops spikes with "
                 "`mi.replace` and sums by hour."},
    )
    lines = nightly_log().splitlines()
    failed_at = _failed_at()
    failure_line = s.file_fact("log-failure", LOG, "ERROR nightly.transform", 12,
                               "the failed batch in the log")
    first_page = s.file_fact("log-start", LOG, "batch=1000 source=meters", 2,
                             "the log's first batch")
    s.turn(
        "Read the log from the start and find where it goes wrong.",
        _page(s, 1),
        _page(s, 381),
        {"tools": [call("grep", pattern="ERROR|Traceback", path=LOG)]},
        _page(s, max(failed_at - 200, 1)),
        {"needs": [failure_line, first_page],
         "text": f"Batch {_FAILING_BATCH} failed: `replace` called our `is_spike` with "
                 "`None` instead of a reading, an AttributeError; every batch before it went "
                 "through."},
    )
    warning = next(line for line in lines[failed_at:] if " WARN " in line)
    late = s.file_fact("log-late", LOG, warning, 1, "a late meter after the failure")
    s.turn(
        "Is anything else odd in the rest of the night, after that batch?",
        _page(s, failed_at),
        _page(s, failed_at + 380),
        {"tools": [call("grep", pattern="WARN", path=LOG)]},
        _page(s, failed_at + 760),
        {"needs": [late],
         "text": "Only late meters, as on other nights; the job stopped at the failed batch "
                 "and later batches ran without sums."},
    )
    last = s.file_fact("log-end", LOG, lines[-1], 1, "the log's last line")
    # The slowest extract of the rest of the night: a line in the middle of a page, where a
    # client that keeps only the head and the tail of a long output does not have it.
    rest = lines[failed_at + 1139 :]
    slowest = max((line for line in rest if "took=" in line),
                  key=lambda line: float(line.rsplit("took=", 1)[1].rstrip("s")))
    slow = s.file_fact("log-slowest", LOG, slowest, 1, "the night's slowest extract")
    s.turn(
        "Read the rest of the log to the end: did the later batches finish, and which "
        "extract was the slowest?",
        _page(s, failed_at + 1140),
        _page(s, failed_at + 1520),
        _page(s, failed_at + 1900),
        _page(s, failed_at + 2280, _LOG_LINES),
        {"needs": [last, failure_line, slow],
         "text": "They were extracted and transformed to the end of the log; only the failed "
                 "batch is missing from the night's sums. The slowest extract took just under "
                 "four seconds, an ordinary night's worst."},
    )


def _chase_the_cause(s: Script) -> None:
    failing = s.output_fact(
        "failing-tests", ["FAILED tests/test_more.py::ReplaceTests::test_basic",
                          # a verbose line from the middle of the output
                          "tests/test_more.py::WindowedTests::test_basic PASSED",
                          "TypeError: unsupported operand type(s) for %: 'NoneType' and 'int'"],
        call("bash", command=f"{PYTEST} -v {TESTS}"), "which tests fail, and how")
    s.turn(
        "Run the library's tests verbosely and tell me what fails.",
        {"tools": [call("bash", command=f"{PYTEST} -v {TESTS}")]},
        {"needs": [failing, "rule-no-skip"],
         "text": "Five tests of `replace` fail, each with a TypeError from its predicate (the "
                 "windowed tests themselves pass): it "
                 "is given `None`, just as our job was."},
    )
    replace_code = s.file_fact("replace-code", MORE, "    windows = windowed(it, window_size)",
                               26, "replace's loop", before=4)
    replace_tests = s.file_fact("replace-tests", TESTS, "class ReplaceTests(TestCase):", 14,
                                "the first replace tests")
    s.turn(
        "Read replace and its tests.",
        {"tools": [s.read(MORE, "def replace(iterable, pred, substitutes", 120)]},
        {"tools": [s.read(TESTS, "class ReplaceTests(TestCase):", 150)]},
        {"needs": [replace_code, replace_tests],
         "text": "`replace` pads the input with `_marker` items, slides `windowed` over it "
                 "and calls `pred(*w)` on every window; a window of `None` reaches the "
                 "predicate, so one window too many comes out of `windowed`."},
    )
    failed = s.said_fact(
        "failed-marker", "failed", "Giving windowed our own fill value did not help",
        "the approach that already failed (a fill value in replace)",
        otherwise_text="Let me give windowed a fill value of its own in replace first.",
        otherwise_tools=[call("edit", path=MORE, oldText=_WINDOWS, newText=_MARKED),
                         call("bash", command=f"{PYTEST} -q {TESTS} -k ReplaceTests")])
    marker_error = s.output_fact(
        "marker-error", ["TypeError: unsupported operand type(s) for %: 'object' and 'int'"],
        call("bash", command=f"{PYTEST} -q {TESTS} -k ReplaceTests"),
        "what the fill-value attempt raised")
    s.turn(
        "Try the smallest change first: in replace, give windowed a fill value that the loop "
        "already skips, then rerun the replace tests.",
        {"needs": [replace_code], "tools": [s.edit(MORE, _WINDOWS, _MARKED)]},
        {"tools": [call("bash", command=f"{PYTEST} -q {TESTS} -k ReplaceTests")]},
        {"needs": [marker_error],
         "text": "Giving windowed our own fill value did not help: the extra window now holds "
                 "the marker instead of `None`, and the predicate still gets it."},
    )
    windowed_code = s.file_fact("windowed-code", MORE, "def windowed(seq, n, fillvalue=None",
                                58, "windowed as it is")
    extra = s.output_fact(
        "extra-window", ["[(0,), (1,), (2,), (None,)]"],
        call("bash", command=f"{PYTHON} -c \"import more_itertools as mi; "
                             "print(list(mi.windowed(range(3), 1)))\""),
        "what windowed(range(3), 1) yields")
    s.turn(
        "Undo that and look at windowed itself.",
        {"needs": [failed], "tools": [s.edit(MORE, _MARKED, _WINDOWS)]},
        {"tools": [s.read(MORE, "def windowed(seq, n, fillvalue=None", 100)]},
        {"tools": [call("bash", command=f"{PYTHON} -c \"import more_itertools as mi; "
                                        "print(list(mi.windowed(range(3), 1)))\"")]},
        {"needs": [windowed_code, extra],
         "text": "`windowed(range(3), 1)` yields a fourth window of fill values: when the "
                 "step is at least the width, the padding is one item too long."},
    )
    windowed_tests = s.file_fact("windowed-tests", TESTS, "class WindowedTests(TestCase):", 24,
                                 "the first windowed tests")
    s.turn(
        "Which windowed tests should have caught it? Read them.",
        {"tools": [s.read(TESTS, "class WindowedTests(TestCase):", 170)]},
        {"needs": [windowed_tests],
         "text": "None of them slides a width of 1 over a non-empty input with the default "
                 "step, which is the case that breaks."},
    )
    s.said_fact(
        "decision-minimal", "decision", "we fix only the padding length in windowed",
        "the decision to change only windowed's padding",
        otherwise_text="While I am here I'll also rewrite replace's padding.")
    s.turn(
        "Fix it.",
        {"needs": [windowed_code, failed],
         "text": "The padding needs `n - 1` items when the step is at least the width; we fix "
                 "only the padding length in windowed, nothing in replace.",
         "tools": [s.edit(MORE, _PLANTED, _PADDING)]},
        {"tools": [call("bash", command=f"{PYTEST} -q {TESTS} -k 'WindowedTests or "
                                        "ReplaceTests'")]},
        {"text": "Fixed: the windowed and replace tests pass."},
    )


def _fix_and_check(s: Script) -> None:
    s.file_fact("windowed-fixed-code", MORE, "def windowed(seq, n, fillvalue=None", 58,
                "windowed as fixed")
    regression_anchor = "class SubstringsTests(TestCase):"
    regression = (
        "    def test_width_one_default_step(self):\n"
        "        # One window per item: no window of fill values at the end.\n"
        "        actual = list(mi.windowed(range(3), 1))\n"
        "        self.assertEqual(actual, [(0,), (1,), (2,)])\n\n\n"
    )
    s.turn(
        "Add a regression test to WindowedTests for the width-one case.",
        {"needs": ["windowed-tests", "decision-minimal"],
         "tools": [s.edit(TESTS, regression_anchor, regression + regression_anchor)]},
        {"tools": [call("bash", command=f"{PYTEST} -q {TESTS} -k WindowedTests")]},
        {"text": "The new test passes with the fix, and failed without it."},
    )
    suite = s.output_fact(
        "suite-after", ["536 passed"], call("bash", command=f"{PYTEST} -v {TESTS}"),
        "the test file's result after the fix")
    s.turn(
        "Run the whole test file verbosely again.",
        {"tools": [call("bash", command=f"{PYTEST} -v {TESTS}")]},
        {"needs": [suite, "rule-no-skip"],
         "text": "All pass: the five replace tests and the new windowed one included."},
    )
    recipes = s.file_fact("recipes-sliding", "more_itertools/recipes.py",
                          "def sliding_window(iterable, n):", 22, "sliding_window")
    s.turn(
        "Does anything else in the library build on windowed, or on the same padding idea?",
        {"tools": [call("grep", pattern="windowed\\(", path="more_itertools")]},
        {"tools": [s.read("more_itertools/recipes.py", "def sliding_window(iterable, n):", 60)]},
        {"tools": [s.read(MORE, "def stagger(iterable", 80)]},
        {"needs": [recipes, "windowed-fixed-code"],
         "text": "`replace` and a few others call `windowed`; `sliding_window` in the recipes "
                 "has its own deque and no padding, so only `windowed`'s callers were "
                 "affected."},
    )
    rerun = (f"{PYTHON} -c \"from etl.pipeline import Reading, run_batch; print(run_batch("
             "1187, [Reading('m-1', 1, 10.0, 9.0), Reading('m-1', 2, 99.0, 9.0)]))\"")
    batch_out = s.output_fact(
        "batch-rerun", ["batch=1187 kept=1 dropped=1", "{1: 10.0}"],
        call("bash", command=rerun.replace("print(", "import logging; "
                                                     "logging.basicConfig(level=20); print(")),
        "the failed batch's rerun")
    s.turn(
        f"Rerun batch {_FAILING_BATCH} through the job's code with two readings, one of them "
        "a spike.",
        {"tools": [call("bash", command=rerun.replace(
            "print(", "import logging; logging.basicConfig(level=20); print("))]},
        {"needs": [batch_out, "log-failure"],
         "text": "It goes through: the spike is dropped and the hour's sum is there."},
    )
    correction = s.said_fact(
        "correction-window", "request", "I meant with window_size=2, as the weekly job uses",
        "the correction (window_size=2)",
        otherwise_text="With window_size=1, as shown, the batch goes through.")
    weekly = (f"{PYTHON} -c \"import more_itertools as mi; print(list(mi.replace(range(6), "
              "lambda a, b: a + b == 5, ['x'], window_size=2)))\"")
    s.turn(
        "Correction: I meant with window_size=2, as the weekly job uses. Check replace with "
        "pairs, and read the part of the log around the failure again for the batch's size.",
        {"tools": [call("bash", command=weekly)]},
        _page(s, max(_failed_at() - 40, 1), 80),
        {"needs": [correction, "log-failure"],
         "text": "With pairs it works too: the pair that sums to five is replaced once, and "
                 "the padding at the end is skipped."},
    )
    s.turn(
        "Write a short incident note for the team in NOTES.md at the root: cause, fix, test.",
        {"needs": ["log-failure", "windowed-fixed-code", "failed-marker", "rule-log"],
         "tools": [s.write("NOTES.md", (
             "# Nightly job, 2025-03-14\n\n"
             f"- Batch {_FAILING_BATCH} failed: `replace` passed `None` to our predicate.\n"
             "- Cause: the vendored `windowed` padded its last window once too often when "
             "the step was at least the width.\n"
             "- Fix: the padding length in `windowed`; a regression test in "
             "`WindowedTests`.\n"))]},
        {"text": "Written in NOTES.md, at the root, not under logs/."},
    )
    s.turn(
        "What did we try first that did not work, and why not? Quote the error the test run "
        "gave then: that attempt is reverted, so a run now cannot show it.",
        {"needs": ["failed-marker", "marker-error"],
         "text": "A fill value of our own in `replace`: the extra window still reached the "
                 "predicate."},
    )
    fixed = s.file_fact("windowed-fixed", MORE, "    # Create the filler for the next windows.",
                        5, "windowed's padding as fixed")
    s.turn(
        "Show me the fixed lines of windowed once more, and confirm which rules we kept.",
        {"tools": [s.read(MORE, "    # Create the filler for the next windows.", 12)]},
        {"needs": [fixed, "rule-log", "rule-no-skip", "decision-minimal"],
         "text": "The padding is `n - 1` long again when the step is at least the width; "
                 "nothing was written under logs/, no test was skipped, and only "
                 "windowed's padding changed."},
    )
