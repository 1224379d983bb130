"""Output bounds: head or tail within 2000 lines / 50 KB; the rest spilled, readable."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from agent_server.agent.tools.output import (
    MAX_BYTES,
    MAX_LINES,
    StreamingOutput,
    bound_output,
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


def test_streaming_output_keeps_a_bounded_tail_and_the_whole_file(tmp_path: Path) -> None:
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
    assert "".join(expected).endswith(body + "\n")
    dropped = 20000 - len(body.splitlines())
    assert f"the first {dropped} of 20000 lines were cut" in bounded.text


def test_streaming_output_small_stays_in_memory(tmp_path: Path) -> None:
    sink = StreamingOutput(tmp_path / "spill", "bash")
    sink.write("one\n")
    sink.write("two")
    bounded = sink.finish()
    assert bounded.text == "one\ntwo"
    assert bounded.total_lines == 2
    assert not (tmp_path / "spill").exists()
