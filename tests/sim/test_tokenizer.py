"""The tokenizer: deterministic, close to real BPE ratios, fast on large inputs."""

from __future__ import annotations

import base64
import inspect
import itertools
import json
import random
import re

from hypothesis import given
from hypothesis import strategies as st

from agent_server.sim import anthropic_api, simulator
from agent_server.sim.tokenizer import (
    count_tokens,
    filler_text,
    split_tokens,
    truncate_to_tokens,
)

PROSE = (
    "The committee met on Tuesday to review the proposal for the new library. After a long "
    "discussion about the budget, the members agreed that the building should be finished "
    "before the end of next year, provided that the city contributes half of the cost. Several "
    "residents spoke in favour of the plan, although a few worried about the noise and the "
    "traffic during construction. The chair thanked everyone for their patience and promised "
    "to publish the minutes within a week, so that people who could not attend would still "
    "know what had been decided and why. "
) * 20


def chars_per_token(text: str) -> float:
    return len(text) / count_tokens(text)


def test_english_prose_is_about_four_characters_per_token() -> None:
    assert 3.8 <= chars_per_token(PROSE) <= 4.6


def test_python_source_is_three_to_three_and_a_half_characters_per_token() -> None:
    source = inspect.getsource(anthropic_api) + inspect.getsource(simulator)
    assert 3.0 <= chars_per_token(source) <= 3.6


def test_dense_text_costs_more_than_chars_over_four() -> None:
    rng = random.Random(1)
    b64 = base64.b64encode(bytes(rng.randrange(256) for _ in range(30_000))).decode()
    records = [
        {"id": i, "sku": f"SKU{i:06d}", "price": round(i * 1.37, 2), "tags": ["a", "b"]}
        for i in range(1500)
    ]
    minified = json.dumps(records, separators=(",", ":"))
    for dense in (b64, minified):
        assert 1.5 <= chars_per_token(dense) <= 2.5
        assert count_tokens(dense) > len(dense) / 4 * 1.5


def test_counting_is_deterministic_and_memoised_counts_match() -> None:
    big = PROSE * 150  # about 1 MB
    assert len(big) > 1_000_000
    first = count_tokens(big)
    assert count_tokens(big) == first
    assert count_tokens("".join(list(big))) == first  # a different string object, same text


@given(st.text(max_size=300))
def test_tokens_cover_the_text_exactly(text: str) -> None:
    pieces = split_tokens(text)
    assert "".join(pieces) == text
    assert count_tokens(text) == len(pieces)


@given(st.text(max_size=300), st.integers(min_value=0, max_value=120))
def test_truncation_is_a_prefix_within_the_limit(text: str, limit: int) -> None:
    cut = truncate_to_tokens(text, limit)
    assert text.startswith(cut)
    assert count_tokens(cut) <= limit
    assert count_tokens(cut) == min(limit, count_tokens(text))


def test_filler_has_exactly_the_requested_size() -> None:
    for size in (1, 2, 13, 100, 999, 4096):
        assert count_tokens(filler_text(size, seed=size)) == size
    assert filler_text(50, seed=3) == filler_text(50, seed=3)
    assert filler_text(0) == ""


def test_filler_reads_as_plain_sentences() -> None:
    text = filler_text(600, seed=7)
    sentences = [s.strip() for s in re.split(r"(?<=\.)\s+", text.strip()) if s.strip()]
    assert len(sentences) > 10
    for sentence in sentences:
        assert sentence[0].isupper() and sentence.endswith("."), sentence
        assert len(sentence.split()) >= 1
    assert all(a != b for a, b in itertools.pairwise(sentences))
