"""Redaction of text that arrives in pieces: a secret split anywhere is caught like a whole one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_server.redaction import REDACTED, StreamRedactor, looks_like_key, redact

KEY = "sk-ant-api03-" + "Q7xZ" * 20  # the provider key
PHRASE = "correct horse battery"  # a secret with spaces in it

fragments = st.one_of(
    st.sampled_from([KEY, PHRASE, "sk-", "sk-ant", "ghp_" + "a1" * 12, "AKIA" + "Z" * 16]),
    st.builds(lambda k: KEY[:k], st.integers(1, len(KEY))),
    st.builds(lambda k: PHRASE[:k], st.integers(1, len(PHRASE))),
    st.text(alphabet="ab-_ sk\n:=Q7xZ", max_size=12),
)


def stream(text: str, cuts: list[int], secrets: tuple[str, ...], max_hold: int) -> str:
    redactor = StreamRedactor(secrets, max_hold=max_hold)
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    return "".join(redactor.feed(p) for p in pieces) + redactor.finish()


@settings(max_examples=400, deadline=None)
@given(
    parts=st.lists(fragments, max_size=12),
    cuts=st.lists(st.integers(0, 10_000), max_size=12),
    max_hold=st.sampled_from([4096, 16]),
)
def test_pieces_are_redacted_as_the_whole_text(
    parts: list[str], cuts: list[int], max_hold: int
) -> None:
    text = "".join(parts)
    streamed = stream(text, cuts, (KEY, PHRASE), max_hold)
    if max_hold == 4096:
        assert streamed == redact(text, KEY, PHRASE)
    assert KEY not in streamed and PHRASE not in streamed


def test_the_key_split_at_a_flush_boundary_is_caught() -> None:
    # What leaked before: a key straddling the 4096-character flush of one long line.
    line = "x" * 4090 + " " + KEY + " tail\n"
    redactor = StreamRedactor((KEY,))
    out = redactor.feed(line[:4096]) + redactor.feed(line[4096:]) + redactor.finish()
    assert KEY not in out and KEY[:12] not in out
    assert out == "x" * 4090 + f" {REDACTED} tail\n"


def test_a_run_longer_than_the_hold_is_dropped_to_its_end() -> None:
    redactor = StreamRedactor((), max_hold=8)
    out = redactor.feed("token sk-" + "A" * 30) + redactor.feed("B" * 10 + " next") + redactor.finish()
    assert out == f"token {REDACTED} next"


def test_plain_text_passes_through_and_only_a_trailing_word_waits() -> None:
    redactor = StreamRedactor((KEY,))
    assert redactor.feed("line one\nline two\n") == "line one\nline two\n"
    assert redactor.feed("partial wor") == "partial "
    assert redactor.finish() == "wor"


def test_key_shapes() -> None:
    for value in (KEY, "ghp_" + "a" * 36, "AKIAIOSFODNN7EXAMPLE", "xoxb-1234567890-abc"):
        assert looks_like_key(value), value
    for value in ("sk-short", "hello world", "/usr/bin", "AKIA-not"):
        assert not looks_like_key(value), value
