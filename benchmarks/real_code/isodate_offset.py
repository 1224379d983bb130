"""A time-clock export read an hour wrong, in isodate 0.7.2 (BSD; ISO 8601 dates, times,
durations and time zone offsets parsed into Python's types, in a src layout, run from the tree
with PYTHONPATH=src): an offset is built from its sign, its hours and its minutes, and the
planted change applies the sign to the hours only, so `-03:30` (St. John's, Newfoundland) is
read as two and a half hours west of UTC, and every clock-in there lands an hour early in UTC.
Offsets east of UTC, and whole hours west of it, are read right.

Written at stop 71, after every default of the product was set, as a session none of them
was tuned on, and one that starts from a user's data rather than from a failing call: a
payroll team's report pasted (one site paid an hour too much a shift), their export in the
repository, which a rule forbids editing, a question answered by experiments before any code
is read (a script that pays the export as the importer does, and a spread of offsets), a
verbose suite run whose failures print two equal-looking values, a colleague's guess that
does not help (the basic form of the offset; the command exits 0), a rule that every time
quoted to the user is in UTC, a correction of the regression test, and a changelog entry.

The session lays out the package, reads the export, pays it with a script the assistant
writes, runs the suite (three failures), tries the colleague's basic form, probes a spread of
offsets, reads where an offset is built and how FixedOffset wants its parts, fixes the sign,
runs the probes and the time tests again, adds a regression test and takes a correction (it
must parse a whole clock-in and check its UTC time), reads how an offset is formatted back,
runs the suite again, writes the changelog entry and answers what failed and what the fixed
lines are. Planted for the knowledge check: two rules, a decision, the failed approach, a
correction, and outputs and file lines later steps use; the suite's failures and the
script's first output are gone once the fix is in.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.real_code.script import PYTHON, Script, call, plant_change
from benchmarks.real_code.sources import Source

SOURCE = Source("isodate", "0.7.2",
                "4cd1aa0f43ca76f4a6c6c0292a85f40b35ec2e43e315b59f06e6d32171a953e6",
                "BSD-3-Clause")
PACKAGE = "src/isodate"
TZINFO_PARSER = f"{PACKAGE}/isotzinfo.py"
TIME_PARSER = f"{PACKAGE}/isotime.py"
TZINFO = f"{PACKAGE}/tzinfo.py"
TIME_TESTS = "tests/test_time.py"
CHANGES = "CHANGES.txt"
EXPORT = "data/timeclock-2025-w10.csv"
PAY_FILE = "pay_export.py"
PROBE_FILE = "probe_offsets.py"
RUN = f"PYTHONPATH=src {PYTHON}"
PYTEST = f"{RUN} -m pytest -p no:cacheprovider"
SUITE_VERBOSE = f"{PYTEST} -v tests"
TIME_RUN = f"{PYTEST} -q {TIME_TESTS} tests/test_datetime.py"
PAY = f"{RUN} {PAY_FILE}"
PAY_BASIC = f"{RUN} {PAY_FILE} basic"
PROBE = f"{RUN} {PROBE_FILE}"

_RELEASED = "    return FixedOffset(tzsign * tzhour, tzsign * tzmin, tzname)\n"
_PLANTED = "    return FixedOffset(tzsign * tzhour, tzmin, tzname)\n"
_BUILD_ANCHOR = 'def build_tzinfo(tzname, tzsign="+", tzhour=0, tzmin=0):'

_EXPORT = """\
employee,site,clock_in,clock_out,break
E1042,St. John's,2025-03-03T08:00:00-03:30,2025-03-03T20:00:00Z,PT30M
E1187,St. John's,2025-03-03T09:15:00-03:30,2025-03-03T21:15:00Z,PT45M
E2210,Halifax,2025-03-03T07:30:00-04:00,2025-03-03T20:00:00Z,PT30M
E2231,Halifax,2025-03-03T12:00:00-04:00,2025-03-04T00:30:00Z,PT30M
E3301,Toronto,2025-03-03T08:30:00-05:00,2025-03-03T22:00:00Z,PT30M
E3345,Toronto,2025-03-03T10:00:00-05:00,2025-03-04T00:00:00Z,PT1H
E4407,Pune,2025-03-03T09:30:00+05:30,2025-03-03T12:30:00Z,PT30M
E4419,Pune,2025-03-03T13:00:00+05:30,2025-03-03T16:30:00Z,PT1H
E1042,St. John's,2025-03-04T08:00:00-03:30,2025-03-04T20:30:00Z,PT30M
E1187,St. John's,2025-03-04T09:00:00-03:30,2025-03-04T21:00:00Z,PT1H
E2210,Halifax,2025-03-04T07:30:00-04:00,2025-03-04T19:30:00Z,PT30M
E2231,Halifax,2025-03-04T12:00:00-04:00,2025-03-05T00:00:00Z,PT30M
E3301,Toronto,2025-03-04T08:30:00-05:00,2025-03-04T21:30:00Z,PT30M
E3345,Toronto,2025-03-04T10:00:00-05:00,2025-03-04T23:30:00Z,PT45M
E4407,Pune,2025-03-04T09:30:00+05:30,2025-03-04T12:00:00Z,PT30M
E4419,Pune,2025-03-04T13:00:00+05:30,2025-03-04T16:00:00Z,PT45M
"""

_PAY = '''"""The time-clock export paid as our importer pays it: clock_out - clock_in - break."""
import csv
import re
import sys
from collections import defaultdict

import isodate

EXPORT = "data/timeclock-2025-w10.csv"
basic = sys.argv[1:] == ["basic"]  # -03:30 read as -0330, in memory only
print(f"isodate {isodate.__version__}, offsets {'in basic form' if basic else 'as written'}:")
week = defaultdict(float)
with open(EXPORT, newline="", encoding="utf-8") as export:
    for row in csv.DictReader(export):
        clock_in = row["clock_in"]
        if basic:
            clock_in = re.sub(r"([+-][0-9]{2}):([0-9]{2})$", r"\\1\\2", clock_in)
        start = isodate.parse_datetime(clock_in)
        end = isodate.parse_datetime(row["clock_out"])
        hours = (end - start - isodate.parse_duration(row["break"])).total_seconds() / 3600
        week[row["employee"], row["site"]] += hours
        utc = isodate.datetime_isoformat(start.astimezone(isodate.UTC))
        print(f"  {row['employee']} {clock_in:<25} in at {utc}  paid {hours:.2f} h")
for (employee, site), hours in week.items():
    print(f"{employee} {site}: {hours:.2f} h for the week")
'''

_PROBE = '''"""A spread of offsets through isodate: what it builds, and what it formats back."""
from datetime import timedelta

import isodate

for written in ["Z", "+05:30", "+0545", "-05:00", "-04", "-03:30", "-0330", "-09:30"]:
    clock_in = isodate.parse_datetime("2025-03-03T08:00:00" + written)
    minutes = clock_in.utcoffset() // timedelta(minutes=1)
    print(f"{written:>7} -> {minutes:+5d} min -> {isodate.tz_isoformat(clock_in)}")
'''

_TIME_TESTS_END = '''    elif format is not None:
        assert time_isoformat(expectation, format) == timestring
'''
_ASSERT_OFFSET = ('    assert parse_time("08:00-03:30").utcoffset() == '
                  "-timedelta(hours=3, minutes=30)\n")
_TEST = '''

def test_negative_offset_keeps_the_sign_on_its_minutes():
    """-03:30 (St. John's) is three and a half hours west of UTC, not two and a half."""
''' + _ASSERT_OFFSET
_IMPORT_TIME = "from datetime import time\n"
_IMPORT_TIMEDELTA = "from datetime import time, timedelta\n"
_IMPORT_PARSE_TIME = "    parse_time,\n"
_TEST_CLOCK_IN = _ASSERT_OFFSET + '''    clock_in = parse_datetime("2025-03-03T08:00:00-03:30")
    assert clock_in.astimezone(UTC).isoformat() == "2025-03-03T11:30:00+00:00"
'''
_CHANGES_AT = "- no changes yet\n"
_CHANGES = ("- negative time zone offsets with minutes keep their sign on the minutes again\n"
            "  (-03:30 was read as -02:30, two and a half hours west of UTC)\n")

REPORT = """\
From payroll, forwarded as they sent it:

> Week 10 came out wrong for St. John's, and only for St. John's. For the Monday and
> Tuesday we have released so far, the importer paid E1042 18.50 hours and E1187 17.25
> hours; their supervisors' sheets say 16.50 and 15.25. Both worked both days, so that is
> one extra hour a shift, every shift, both people. Halifax, Toronto and Pune reconcile to
> the minute for the same two days, and Wednesday on is on hold until we know why.
>
> What we checked: Newfoundland did not change its clocks that week (it moves on the 9th),
> the badge reader in St. John's was synced on the 1st and shows the right local time, and
> the clock-outs come from the mobile app, in UTC, and match the supervisors' sheets.
>
> The export for the two days is in the repository as the time clock wrote it (under
> data/), untouched. Last month reconciled. The one change since: the importer now reads
> the export with the isodate 0.7.2 vendored here, where it had a regex of its own.

The importer pays clock_out - clock_in - break for every row, with parse_datetime for the
two times and parse_duration for the break. Is our export wrong, or the way it is read?
"""


def plant(root: Path) -> None:
    """The sign of an offset applied to its hours only; and the team's export at its place."""
    plant_change(root / TZINFO_PARSER, _RELEASED, _PLANTED)
    (root / "data").mkdir()
    (root / EXPORT).write_text(_EXPORT, encoding="utf-8")


def script(root: Path) -> Script:
    s = Script("isodate-offset", root)
    _explore(s)
    _experiment(s)
    _read_the_parser(s)
    _fix(s)
    _wrap_up(s)
    return s


def _explore(s: Script) -> None:
    s.said_fact(
        "rule-export", "rule", "never edit the export under data/",
        "the rule about the export",
        otherwise_text="I'll rewrite the St. John's offsets in the export to UTC.",
        otherwise_tools=[call("edit", path=EXPORT, oldText="2025-03-03T08:00:00-03:30",
                              newText="2025-03-03T11:30:00Z")])
    s.said_fact(
        "rule-utc", "rule", "whenever you quote a time to me, give it in UTC with a Z",
        "the rule about quoting times",
        otherwise_text="E1042 clocked in at 08:00 local time on Monday.")
    s.turn(
        "We vendor isodate 0.7.2 here for our payroll importer, and payroll has a problem with "
        "it I'll paste next. Two rules while you work on it: never edit the export under "
        "data/, it is what the time clock wrote and the auditors compare against it; and "
        "whenever you quote a time to me, give it in UTC with a Z, our sites span four "
        "offsets. How is the package laid out?",
        {"tools": [call("ls", path=".")]},
        {"tools": [call("ls", path=PACKAGE), call("ls", path="tests")],
         "finds": [s.where(TZINFO_PARSER), s.where(TIME_PARSER), s.where(TIME_TESTS)]},
        {"tools": [s.read("README.rst")]},
        {"text": "The package is under `src/isodate`, one module a kind: `isodates.py`, "
                 "`isotime.py`, `isodatetime.py`, `isoduration.py`, `isotzinfo.py` for the "
                 "offsets and `tzinfo.py` for the tzinfo classes; the tests are under `tests`, "
                 "one file a module. Our data sits beside them under `data`."},
    )
    monday = s.file_fact("export-monday", EXPORT, "employee,site,clock_in,clock_out,break", 9,
                         "Monday's rows of the export")
    s.turn(
        REPORT + "\nLook at the export first.",
        {"tools": [call("ls", path="data")], "finds": [s.where(EXPORT)]},
        {"tools": [s.read(EXPORT)]},
        {"needs": [monday],
         "text": "Sixteen rows, eight a day: the clock-in as the badge reader wrote it, local "
                 "time with its offset (St. John's -03:30, Halifax -04:00, Toronto -05:00, "
                 "Pune +05:30), the clock-out from the app in UTC, and the break as an ISO "
                 "duration. Nothing in it looks wrong; St. John's is the only site whose "
                 "offset has minutes and is west of UTC."},
    )


def _experiment(s: Script) -> None:
    before = s.output_fact(
        "pay-before", ["E1042 St. John's: 18.50 h for the week",
                       "E1042 2025-03-03T08:00:00-03:30 in at 2025-03-03T10:30:00Z paid 9.00 h"],
        call("bash", command=PAY), "what paying the export printed before the fix")
    s.turn(
        "Pay it the way the importer does, in pay_export.py at the root, against the vendored "
        "copy, one line a row and the week's hours a person.",
        {"needs": ["rule-export"], "tools": [s.write(PAY_FILE, _PAY)]},
        {"tools": [call("bash", command=PAY)]},
        {"needs": [before, "rule-utc"],
         "text": "The script pays exactly what payroll got: 18.50 and 17.25 hours for the two "
                 "St. John's people and the sheets' hours everywhere else. Every St. John's "
                 "clock-in lands an hour early in UTC: E1042's Monday shift starts at 10:30Z "
                 "where its clock-in is 11:30Z. The clock-outs are right, so the export is read "
                 "wrong, not written wrong."},
    )
    suite = s.output_fact(
        "suite-before",
        ["tests/test_time.py::test_parse[15:27:46-05:30-expectation27-%H:%M:%S%Z] FAILED",
         "3 failed, 277 passed"],
        call("bash", command=SUITE_VERBOSE), "the suite's failures before the fix")
    s.turn(
        "Run the whole test suite verbosely from the tree (PYTHONPATH=src), so we know whether "
        "the library's own tests see anything.",
        {"tools": [call("bash", command=SUITE_VERBOSE)]},
        {"needs": [suite],
         "text": "Three tests fail, of 280: two time tests and a date-time test, each parsing "
                 "an offset west of UTC with minutes. Their assertions print two equal-looking "
                 "values, because a FixedOffset shows only its name, not the offset it holds."},
    )
    s.said_fact(
        "failed-basic", "failed", "Writing the offsets in the basic form did not help",
        "the approach that already failed (the offset's basic form)",
        otherwise_tools=[call("bash", command=PAY_BASIC)],
        otherwise_text="Let me try the offsets in the basic form first.")
    basic = s.output_fact(
        "basic-output", ["isodate 0.7.2, offsets in basic form:",
                         "E1042 2025-03-03T08:00:00-0330 in at 2025-03-03T10:30:00Z paid 9.00 h"],
        call("bash", command=PAY_BASIC), "what paying with the basic form gave")
    s.turn(
        "A colleague says isodate only learned the colon form of an offset in 0.6 and still "
        "mis-reads it; the basic form without the colon would be read right, and the badge "
        "reader can be set to write that. Try exactly that with the script.",
        {"needs": ["rule-export"], "tools": [call("bash", command=PAY_BASIC)]},
        {"needs": [basic],
         "text": "Writing the offsets in the basic form did not help: E1042's Monday still "
                 "starts an hour early and the week still pays 18.50 hours. The colon is not "
                 "the problem; the suite's failures had both forms too."},
    )
    probe = s.output_fact(
        "probe-before", ["-03:30 -> -150 min -> -02:30", "-09:30 -> -510 min -> -08:30",
                         "+05:30 -> +330 min -> +05:30"],
        call("bash", command=PROBE), "what the probe of offsets printed before the fix")
    s.turn(
        "Before we read any code: which offsets does it get wrong? Try a spread of them, east "
        "and west, with and without minutes, in a probe_offsets.py.",
        {"tools": [s.write(PROBE_FILE, _PROBE)]},
        {"tools": [call("bash", command=PROBE)]},
        {"needs": [probe],
         "text": "Only offsets west of UTC with minutes are wrong, and always by twice their "
                 "minutes: -03:30 comes back as -02:30 and -09:30 as -08:30. East of UTC "
                 "(+05:30, +0545), whole hours west (-05:00, -04) and Z are right. The minutes "
                 "are added where they should be subtracted."},
    )


def _read_the_parser(s: Script) -> None:
    build = s.file_fact("build-tzinfo", TZINFO_PARSER, _BUILD_ANCHOR, 15,
                        "how an offset is built from its sign, hours and minutes")
    time_tz = s.file_fact("time-tzinfo", TIME_PARSER, "            tzinfo = build_tzinfo(", 10,
                          "how parse_time hands the offset's parts over", before=4)
    s.turn(
        "Now find where an offset is built from the string.",
        {"tools": [call("grep", pattern="build_tzinfo|FixedOffset\\(", path=PACKAGE)],
         "finds": [s.where(TZINFO_PARSER, _BUILD_ANCHOR),
                   s.where(TIME_PARSER, "            tzinfo = build_tzinfo(")]},
        {"tools": [s.read(TZINFO_PARSER, _BUILD_ANCHOR, 40)]},
        {"tools": [s.read(TIME_PARSER, "            tzinfo = build_tzinfo(", 20, before=8)]},
        {"needs": [build, time_tz],
         "text": "`parse_time` matches the time and its offset with one regular expression "
                 "and hands the sign, hours and minutes to `build_tzinfo` in isotzinfo.py, "
                 "which `parse_tzinfo` uses too; `build_tzinfo` turns the sign into 1 or -1 "
                 "and builds a FixedOffset from the hours and the minutes."},
    )
    fixed_offset = s.file_fact("fixed-offset", TZINFO,
                               'def __init__(self, offset_hours=0, offset_minutes=0, '
                               'name="UTC"):', 8, "how FixedOffset wants its parts")
    s.turn(
        "How does FixedOffset want the two parts of a negative offset?",
        {"tools": [call("grep", pattern="class FixedOffset|def __init__", path=TZINFO)],
         "finds": [s.where(TZINFO, "class FixedOffset(tzinfo):")]},
        {"tools": [s.read(TZINFO, "class FixedOffset(tzinfo):", 40)]},
        {"tools": [call("grep", pattern="FixedOffset\\(-", path="tests")]},
        {"needs": [fixed_offset],
         "text": "Both negative: it adds hours and minutes as two timedelta parts, and the "
                 "tests build every offset west of UTC with a negative hour and a negative "
                 "minute part. So the parts it is given decide the sign of each."},
    )


def _fix(s: Script) -> None:
    s.said_fact(
        "decision-fix-build", "decision",
        "we fix the sign in build_tzinfo, where the offset is parsed, and leave FixedOffset's "
        "arguments as they are",
        "the decision on where to fix it",
        otherwise_text="I'll make FixedOffset take the sign of the hours for the minutes too.")
    after = s.output_fact(
        "pay-after", ["E1042 St. John's: 16.50 h for the week",
                      "E1042 2025-03-03T08:00:00-03:30 in at 2025-03-03T11:30:00Z paid 8.00 h"],
        call("bash", command=PAY), "what paying the export printed after the fix")
    s.turn(
        "Find the cause and fix it.",
        {"needs": ["build-tzinfo", "fixed-offset", "failed-basic", "probe-before"],
         "text": "`build_tzinfo` applies the sign to the hours and not to the minutes, so "
                 "-03:30 becomes minus three hours plus thirty minutes. FixedOffset is public "
                 "and its callers already pass both parts signed, so we fix the sign in "
                 "build_tzinfo, where the offset is parsed, and leave FixedOffset's arguments "
                 "as they are.",
         "tools": [s.edit(TZINFO_PARSER, _PLANTED, _RELEASED)]},
        {"needs": ["rule-export"], "tools": [call("bash", command=PAY)]},
        {"needs": [after, "pay-before", "export-monday", "rule-utc"],
         "text": "Fixed: E1042's Monday starts at 11:30Z and pays 8.00 hours, and the two "
                 "St. John's people get 16.50 and 15.25 hours, the supervisors' figures, "
                 "where the script paid an hour a shift more before. The export is as it was."},
    )
    probe = s.output_fact(
        "probe-after", ["-03:30 -> -210 min -> -03:30", "-09:30 -> -570 min -> -09:30"],
        call("bash", command=PROBE), "what the probe of offsets printed after the fix")
    quick = s.output_fact("time-after", ["88 passed"], call("bash", command=TIME_RUN),
                          "the time and date-time tests after the fix")
    s.turn(
        "Run the probe again, then the time and date-time tests quietly.",
        {"tools": [call("bash", command=PROBE)]},
        {"tools": [call("bash", command=TIME_RUN)]},
        {"needs": [probe, quick],
         "text": "Every offset comes back as it was written, and the time and date-time "
                 "tests pass, the three that failed among them."},
    )
    neighbour = s.file_fact("offset-case", TIME_TESTS, '        "15:27:46-05:30",', 9,
                            "the existing time tests of offsets with minutes")
    s.turn(
        "Add a regression test to tests/test_time.py, after the last test there, with our "
        "offset, and run that file.",
        {"needs": ["decision-fix-build"],
         "tools": [s.read(TIME_TESTS, '        "15:27:46-05:30",', 40, before=8)]},
        {"needs": [neighbour],
         "tools": [s.edit(TIME_TESTS, _TIME_TESTS_END, _TIME_TESTS_END + _TEST),
                   s.edit(TIME_TESTS, _IMPORT_TIME, _IMPORT_TIMEDELTA)]},
        {"tools": [call("bash", command=f"{PYTEST} -q {TIME_TESTS}")]},
        {"text": "`test_negative_offset_keeps_the_sign_on_its_minutes` parses 08:00-03:30 and "
                 "expects an offset of minus three and a half hours; the file passes."},
    )
    correction = s.said_fact(
        "correction-clock-in", "request",
        "the regression test must also parse a whole clock-in with its date and check the UTC "
        "time it gives",
        "the correction (what the regression test checks)",
        otherwise_text="The offset is what broke; the test checks only the offset.")
    s.turn(
        "Correction: the regression test must also parse a whole clock-in with its date and "
        "check the UTC time it gives, since payroll never looks at an offset, only at the "
        "times. Change it and run the file again.",
        {"needs": ["pay-before"],
         "tools": [s.edit(TIME_TESTS, _ASSERT_OFFSET, _TEST_CLOCK_IN),
                   s.edit(TIME_TESTS, _IMPORT_PARSE_TIME, "    parse_datetime,\n"
                          + _IMPORT_PARSE_TIME)]},
        {"tools": [call("bash", command=f"{PYTEST} -q {TIME_TESTS}")]},
        {"needs": [correction, "rule-utc"],
         "text": "Done: the test also parses E1042's Monday clock-in and expects 11:30Z; the "
                 "file passes."},
    )
    formatting = s.file_fact("tz-format", TZINFO_PARSER, 'def tz_isoformat(dt, format="%Z"):',
                             31, "how an offset is formatted back")
    s.turn(
        "Does writing an offset back out have the same problem? Our importer writes the UTC "
        "times, but the audit report writes local ones.",
        {"tools": [call("grep", pattern="def tz_isoformat", path=PACKAGE)],
         "finds": [s.where(TZINFO_PARSER, 'def tz_isoformat(dt, format="%Z"):')]},
        {"tools": [s.read(TZINFO_PARSER, 'def tz_isoformat(dt, format="%Z"):', 35)]},
        {"needs": [formatting],
         "text": "No: `tz_isoformat` takes the whole offset in seconds, keeps its sign apart "
                 "and splits the absolute value into hours and minutes, so a negative offset "
                 "is written with both parts right; the probe's third column showed only what "
                 "the parser had built."},
    )


def _wrap_up(s: Script) -> None:
    after = s.output_fact(
        "suite-after",
        ["tests/test_datetime.py::test_parse[1985-W15-5T10:15-0430-expected6-%Y-W%W-%wT%H:%M%z-"
         "1985-W15-5T10:15-0430] PASSED", "281 passed"],
        call("bash", command=SUITE_VERBOSE), "the suite after the fix, verbosely")
    s.turn(
        "Run the whole suite verbosely once more.",
        {"tools": [call("bash", command=SUITE_VERBOSE)]},
        {"needs": [after, "suite-before"],
         "text": "Everything passes: the three that failed, and the new test."},
    )
    s.turn(
        "Add the entry to CHANGES.txt, under 0.7.3 (unreleased) in place of its placeholder, "
        "worded like the entries below it.",
        {"tools": [s.read(CHANGES, "0.7.3 (unreleased)", 20)]},
        {"needs": ["decision-fix-build", "probe-before"],
         "tools": [s.edit(CHANGES, _CHANGES_AT, _CHANGES)]},
        {"text": "Added under 0.7.3: the sign of a negative offset's minutes, with -03:30 as "
                 "the example."},
    )
    s.turn(
        "For payroll's reconciliation: what did we try that did not work, and what did the "
        "script pay for E1042 before the fix?",
        {"needs": ["failed-basic", "basic-output", "pay-before", "rule-utc", "rule-export"],
         "text": "The offsets in the basic form, converted in memory: the same hour too much. "
                 "Before the fix the script paid E1042 18.50 hours for the two days, with "
                 "Monday's clock-in at 10:30Z instead of 11:30Z; the export itself was never "
                 "edited."},
    )
    fixed = s.file_fact("build-fixed", TZINFO_PARSER, _BUILD_ANCHOR, 15,
                        "the offset code as it is now")
    s.turn(
        "Show me build_tzinfo as it is now, and tell me which rules and decisions of this "
        "session the change keeps.",
        {"tools": [s.read(TZINFO_PARSER, _BUILD_ANCHOR, 20)]},
        {"needs": [fixed, "rule-export", "rule-utc", "decision-fix-build"],
         "text": "Both parts of an offset get its sign again; FixedOffset takes its arguments "
                 "as before, the export under data/ is untouched, and every time I quoted "
                 "was in UTC."},
    )
