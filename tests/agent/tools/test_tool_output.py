"""Output bounds: head or tail within 2000 lines / 50 KB; the rest spilled, readable."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_server.agent.tools.output import (
    MAX_BYTES,
    MAX_LINES,
    SALIENT_LINE_BYTES,
    TRUNCATED,
    OutputLimits,
    SalientLines,
    StreamingOutput,
    bound_output,
    saved_output,
    truncate_head,
    truncate_tail,
)

# Tool output is decoded with errors="replace": it never holds lone surrogates.
texts = st.lists(
    st.text(
        alphabet=st.characters(codec="utf-8", exclude_characters="\n"),
        max_size=40,
    )
).map("\n".join)


@given(texts, st.integers(1, 20), st.integers(1, 200))
def test_head_is_a_bounded_prefix_of_whole_lines(text: str, lines: int, size: int) -> None:
    cut = truncate_head(text, lines, size)
    if not cut.truncated:
        assert cut.text == text
        return
    assert cut.text.count("\n") + 1 <= lines
    assert len(cut.text.encode()) <= size
    if cut.kept_lines > 1 or cut.cut_by == "lines":
        assert text.startswith(cut.text + "\n")


@given(texts, st.integers(1, 20), st.integers(1, 200))
def test_tail_is_a_bounded_suffix_of_whole_lines(text: str, lines: int, size: int) -> None:
    cut = truncate_tail(text, lines, size)
    if not cut.truncated:
        assert cut.text == text
        return
    assert cut.text.count("\n") + 1 <= lines
    assert len(cut.text.encode()) <= size
    without_final_newline = text[:-1] if text.endswith("\n") else text
    assert without_final_newline.endswith(cut.text)


def test_bound_output_spills_the_full_text_and_says_how_to_read_it(tmp_path: Path) -> None:
    text = "".join(f"row {i}\n" for i in range(1, 3001))
    bounded = bound_output(text, spill_dir=tmp_path / "spill", tool_name="grep")
    assert bounded.truncated
    assert bounded.full_output_path is not None
    assert bounded.full_output_path.read_text() == text
    shown = bounded.text.splitlines()
    assert shown[0] == "row 1"
    assert shown[MAX_LINES - 1] == f"row {MAX_LINES}"
    assert f"showing lines 1-{MAX_LINES} of 3000" in bounded.text
    assert f"offset {MAX_LINES + 1}" in bounded.text
    assert str(bounded.full_output_path) in bounded.text


def test_bound_output_scrubs_secrets_before_spilling(tmp_path: Path) -> None:
    text = "token=abc-secret-123\n" * 3000
    bounded = bound_output(
        text, spill_dir=tmp_path, tool_name="bash", keep="tail", secrets=("abc-secret-123",)
    )
    assert bounded.full_output_path is not None
    assert "abc-secret-123" not in bounded.full_output_path.read_text()
    assert "abc-secret-123" not in bounded.text


def test_small_output_is_untouched(tmp_path: Path) -> None:
    bounded = bound_output("a\nb\n", spill_dir=tmp_path / "never", tool_name="ls")
    assert bounded.text == "a\nb\n"
    assert not bounded.truncated
    assert not (tmp_path / "never").exists()


def test_streaming_output_keeps_a_bounded_head_and_tail_and_the_whole_file(
    tmp_path: Path,
) -> None:
    sink = StreamingOutput(tmp_path, "bash")
    expected: list[str] = []
    for i in range(20000):
        line = f"line {i} " + "." * (i % 50) + "\n"
        expected.append(line)
        sink.write(line)
    bounded = sink.finish()
    assert bounded.truncated
    assert bounded.total_lines == 20000
    assert bounded.full_output_path is not None
    assert bounded.full_output_path.read_text() == "".join(expected)
    body = bounded.text.split("\n\n", 1)[1]
    assert len(body.encode()) <= MAX_BYTES
    head, gap_and_tail = body.split("\n[lines ", 1)
    gap, tail = gap_and_tail.split("\n", 1)
    first, last = (int(n) for n in gap.removesuffix(" cut]").split("-"))
    assert "".join(expected).startswith(head + "\n") and "".join(expected).endswith(tail + "\n")
    assert (first, last) == (len(head.splitlines()) + 1, 20000 - len(tail.splitlines()))
    assert f"{last - first + 1} (lines {first}-{last}) of 20000 lines were cut" in bounded.text


def test_streaming_output_small_stays_in_memory(tmp_path: Path) -> None:
    sink = StreamingOutput(tmp_path / "spill", "bash")
    sink.write("one\n")
    sink.write("two")
    bounded = sink.finish()
    assert bounded.text == "one\ntwo"
    assert bounded.total_lines == 2
    assert not (tmp_path / "spill").exists()


def _log(failure_at: int, lines: int = 4000) -> str:
    """A test run's verbose log: a failure early on, passes, a verdict at the end."""
    out = [
        f"tests/test_t.py::test_{i} FAILED" if i == failure_at
        else f"tests/test_t.py::test_{i} PASSED"
        for i in range(lines)
    ]
    return "\n".join([*out, "= 1 failed, 3999 passed in 2.1s ="]) + "\n"


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(1, 5000), min_size=1, max_size=40))
def test_the_cut_part_of_a_tail_keeps_its_failures_whatever_the_chunks(
    tmp_path_factory: pytest.TempPathFactory, cuts: list[int]
) -> None:
    """A long command output keeps its head, its tail and, between them, each line of the cut
    part that reports an error or a failure, after its line number; how the output arrived
    in chunks does not change what is kept."""
    text = _log(failure_at=2000)
    sink = StreamingOutput(tmp_path_factory.mktemp("spill"), "bash", OutputLimits(2000, 8192))
    at = 0
    for size in cuts * (len(text) // sum(cuts) + 1):
        sink.write(text[at : at + size])
        at += size
        if at >= len(text):
            break
    bounded = sink.finish()
    notice, body = bounded.text.split("\n\n", 1)
    assert "showing the first" in notice and "1 of the cut lines that report errors or failures" in notice
    shown, tail = body.split("\n\n", 1)
    head, gap, flagged = shown.rsplit("\n", 2)
    assert text.startswith(head + "\n") and gap.startswith("[lines ") and gap.endswith(" cut]")
    assert flagged == "2001: tests/test_t.py::test_2000 FAILED"
    assert text.endswith(tail + "\n") and tail.endswith("= 1 failed, 3999 passed in 2.1s =")
    assert len(body.encode()) <= 8192
    assert bounded.full_output_path is not None
    assert bounded.full_output_path.read_text() == text


def test_what_is_flagged_in_a_cut_part() -> None:
    """Errors and failures in the words tools use, each once, the first ones up to the
    bound; a pass is not one, nor a line that only names a test about errors, nor a file
    named like one (a profile's row)."""
    flagged = SalientLines(300)
    flagged.feed(
        "tests/test_errors_module.py::test_a PASSED\n"
        "test result: ok\n"
        "src/a.c:3:5: error: expected ';'\n"
        "src/a.c:3:5: error: expected ';'\n"
        "E       assert 1 == 2\n"
        "thread 'main' panicked at src/main.rs:2:5\n"
        "Traceback (most recent call last):\n"
        "FAILED (failures=2)\n"
        "       13    0.000    0.000    0.001    0.000 traceback.py:217(extract_stack)\n"
        "pkg/errors.go:12: cannot use x: error.\n"
    )
    flagged.finish()
    assert flagged.found == [
        (3, "src/a.c:3:5: error: expected ';'"),
        (5, "E       assert 1 == 2"),
        (6, "thread 'main' panicked at src/main.rs:2:5"),
        (7, "Traceback (most recent call last):"),
        (8, "FAILED (failures=2)"),
        (10, "pkg/errors.go:12: cannot use x: error."),
    ]
    full = SalientLines(45)  # "1: error one" and its newline are 13 bytes
    full.feed("error one\nerror two\nerror three\nerror four\nerror five\n")
    assert [number for number, _ in full.found] == [1, 2, 3]
    long = SalientLines(10_000)
    long.feed("error: " + "x" * 5000)  # one line, never ended
    long.finish()
    assert len(long.found) == 1 and long.found[0][1].endswith("…")
    assert len(long.found[0][1].encode()) <= SALIENT_LINE_BYTES + 3


def test_a_runs_summary_of_its_failures_comes_before_the_first_errors() -> None:
    """A line that opens with a test runner's verdict (pytest's FAILED and SUBFAILED,
    unittest's FAIL:, go's --- FAIL:) is kept before the other lines that report a failure,
    wherever it is: a run's summary names each failure on a line, where the lines before it
    repeat one test's details. Within what is left, the first others as before; case matters
    ("failed to open" is no verdict)."""
    details = "".join(f"E       detail {i} of the first failure\n" for i in range(20))
    summary = (
        "=========================== short test summary info ============================\n"
        'SUBFAILED(id="cases[1]") tests/test_a.py::test_a - AssertionError: 1 != 2\n'
        "FAILED tests/test_b.py::test_b - KeyError: 'x'\n"
        "FAIL: test_c (tests.test_c.CTest.test_c)\n"
        "--- FAIL: TestD (0.00s)\n"
        "failed to open the cache, going on without it\n"
    )
    flagged = SalientLines(400)
    flagged.feed("tests/test_a.py::test_a SUBFAIL [ 10%]\n" + details + summary)
    flagged.finish()
    lines = [line for _, line in flagged.found]
    assert lines[:1] == ["tests/test_a.py::test_a SUBFAIL [ 10%]"]  # the first others
    assert lines[-4:] == [
        'SUBFAILED(id="cases[1]") tests/test_a.py::test_a - AssertionError: 1 != 2',
        "FAILED tests/test_b.py::test_b - KeyError: 'x'",
        "FAIL: test_c (tests.test_c.CTest.test_c)",
        "--- FAIL: TestD (0.00s)",
    ]
    assert [number for number, _ in flagged.found] == sorted(n for n, _ in flagged.found)
    assert sum(len(f"{n}: {line}".encode()) + 1 for n, line in flagged.found) <= 400
    assert "failed to open the cache, going on without it" not in lines[-4:]
    # A cut shows the lines of its cut part: verdicts in the end it keeps anyway (a summary
    # on the last page) take none of the room of those between.
    between = flagged.between(0, len(details.splitlines()) + 2)
    assert between[0] == "1: tests/test_a.py::test_a SUBFAIL [ 10%]" and len(between) == 9
    # However the output arrives: the lines and their numbers are the same.
    whole = "tests/test_a.py::test_a SUBFAIL [ 10%]\n" + details + summary
    for size in (7, 64, 1000):
        streamed = SalientLines(400)
        for at in range(0, len(whole), size):
            streamed.feed(whole[at : at + size])
        streamed.finish()
        assert streamed.found == flagged.found


def test_a_failed_tests_mark_is_a_verdict_in_other_runners_too() -> None:
    """TAP's `not ok` (Node's `node --test`, tape, prove) and the crosses of Jest, Vitest and
    Node's spec reporter open a failed test's line: kept first, as pytest's FAILED is. A
    passing `ok`, TAP's expected failures (`# TODO`, `# SKIP`) and its counts of none are
    not failures."""
    yaml = "".join(f"  stack: frame {i} (node:internal/test_runner/test:{i}:1)\n"
                   for i in range(30))
    tap = (
        "TAP version 13\n# Subtest: parses a caret range\nok 1 - parses a caret range\n"
        "not ok 2 - keeps the prerelease out of ^1.2.3\n  ---\n  failureType: 'testCodeFailure'\n"
        "  error: |-\n    Expected values to be strictly equal:\n" + yaml
        + "not ok 3 - later # TODO not written yet\nok 4 - gt\n"
        "    not ok 1 - an inner case fails too\n"
        "  ✕ adds 1 + 2 (3 ms)\n✖ two fails (0.7ms)\n   × vitest's cross\n"
        "# tests 4\n# pass 2\n# fail 2\n# skipped 0\n# todo 1\n"
    )
    flagged = SalientLines(330)
    flagged.feed(tap)
    flagged.finish()
    lines = [line for _, line in flagged.found]
    assert lines[:1] == ["not ok 2 - keeps the prerelease out of ^1.2.3"]
    assert [line for line in lines if line.lstrip()[:1] in "n✕✖×"] == [
        "not ok 2 - keeps the prerelease out of ^1.2.3",
        "    not ok 1 - an inner case fails too",
        "  ✕ adds 1 + 2 (3 ms)",
        "✖ two fails (0.7ms)",
        "   × vitest's cross",
    ]
    assert "  error: |-" in lines  # the first other, after the verdicts
    assert not any("TODO" in line or line.startswith(("ok ", "# skipped", "# todo"))
                   for line in lines)


def test_an_output_with_nothing_flagged_is_cut_as_before(tmp_path: Path) -> None:
    sink = StreamingOutput(tmp_path, "bash", OutputLimits(2000, 4096))
    sink.write("".join(f"line {i}\n" for i in range(3000)))
    bounded = sink.finish()
    assert bounded.text.startswith("[Output truncated: ")
    assert "report errors" not in bounded.text
    assert bounded.text.split("\n\n", 1)[1].startswith("line 0\nline 1\n")


def test_an_output_cut_by_its_lines_keeps_its_head_too(tmp_path: Path) -> None:
    """A short-lined output over the line bound (not the byte bound) keeps its first quarter
    of the lines as a long-lined one does."""
    sink = StreamingOutput(tmp_path, "bash", OutputLimits(100, 50 * 1024))
    sink.write("".join(f"n{i}\n" for i in range(1000)))
    body = sink.finish().text.split("\n\n", 1)[1]
    assert body.startswith("n0\nn1\n") and "\nn24\n[lines 26-926 cut]\nn926\n" in body
    assert body.endswith("\nn999") and len(body.splitlines()) == 100


def test_a_huge_last_line_after_a_short_head_is_cut_as_a_tail(tmp_path: Path) -> None:
    """A short first line and one line over the bound: the tail (the huge line's end) reaches
    the head, so the cut is the tail's alone, with the error line before it in full room."""
    sink = StreamingOutput(tmp_path, "bash", OutputLimits(2000, 8192))
    sink.write("error: short first line\n" + "y" * 20000 + "\n")
    bounded = sink.finish()
    assert "[lines 2-1 cut]" not in bounded.text and "lines 2-1" not in bounded.text
    body = bounded.text.split("\n\n", 1)[1]
    assert body.startswith("[lines 1-1 cut]\n1: error: short first line\n")
    assert 8000 < len(body.encode()) <= 8192  # the tail took all the room the line left it


def test_a_cut_output_with_its_head_stays_within_the_bound(tmp_path: Path) -> None:
    """Head, the line naming the lines cut, and tail together: at most the bound (the
    naming line's room is taken from the tail)."""
    sink = StreamingOutput(tmp_path, "bash", OutputLimits(100_000, 8192))
    sink.write("a\n" * 20_000)  # short lines: the tail fills its room to the byte
    body = sink.finish().text.split("\n\n", 1)[1]
    assert "\n[lines 1025-" in body
    assert 8100 < len(body.encode()) <= 8192


def test_a_saved_output_is_read_only_from_its_own_notice_in_the_spill_directory(
    tmp_path: Path,
) -> None:
    """The path recall reads a cut output's whole from is the one on the notice's own line,
    in the session's spill directory: not a path an output's text mentions, nor one elsewhere."""
    spill = tmp_path / "spill"
    spill.mkdir()
    saved = spill / "bash-1.txt"
    saved.write_text("the whole\n")
    notice = f"{TRUNCATED}: 9 lines. Full output saved to {saved}; read it with the read tool]"
    assert saved_output(f"{notice}\n\nthe tail", spill, 100) == "the whole\n"
    assert saved_output(f"the head\n\n{notice}", spill, 100) == "the whole\n"
    assert saved_output(f"the head\n\n{notice}", spill, 5) is None  # too large
    mentioned = f"log: Full output saved to {saved}; read it with the read tool"
    assert saved_output(f"{mentioned}\nthe tail", spill, 100) is None
    outside = tmp_path / "bash-2.txt"
    outside.write_text("elsewhere")
    assert saved_output(notice.replace(str(saved), str(outside)), spill, 100) is None
