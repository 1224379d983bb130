from __future__ import annotations

import pytest

from agent_server.context.summary_prompt import note_message
from agent_server.context.trigger import (
    CompactionSettings,
    ContextDecision,
    OversizedPrompt,
    compaction_threshold,
    decide,
    find_oversized_prompt,
    has_uncompacted_truncation,
    max_kept_tokens,
    reserve_tokens,
    should_compact,
)
from agent_server.errors import ConfigError
from agent_server.llm.models import ModelInfo
from agent_server.session.entries import TitleEntry

from .builders import assistant, call, compaction, entries_of, result, user


def model(max_output: int, window: int = 200_000) -> ModelInfo:
    return ModelInfo("m", "M", "local", window, max_output)


@pytest.mark.parametrize(
    ("max_output", "expected"),
    [
        (1000, 8192),
        (4096, 8192),
        (4097, 8193),
        (10_000, 14_096),
        (16_384, 20_480),
        (64_000, 20_480),
    ],
)
def test_reserve_is_max_output_plus_4096_clamped(max_output: int, expected: int) -> None:
    assert reserve_tokens(model(max_output), CompactionSettings()) == expected


def test_typical_windows() -> None:
    small = model(4096, window=32_768)  # like sim-small
    large = model(64_000, window=200_000)  # like a Claude model
    assert compaction_threshold(small, CompactionSettings()) == 32_768 - 8192
    assert compaction_threshold(large, CompactionSettings()) == 200_000 - 20_480
    # a 32k window keeps its full 8k tail: the cap (a third of the threshold) is above it
    assert max_kept_tokens(small, CompactionSettings()) == 8000


def test_an_explicit_reserve_wins() -> None:
    assert reserve_tokens(model(64_000), CompactionSettings(reserve_tokens=50_000)) == 50_000
    assert reserve_tokens(model(64_000), CompactionSettings(reserve_tokens=1000)) == 1000
    with pytest.raises(ConfigError, match="smaller than the context window"):
        compaction_threshold(model(1000, window=16_000), CompactionSettings(reserve_tokens=16_000))


def test_should_compact_strictly_above_the_threshold() -> None:
    m = model(4096, window=32_768)
    settings = CompactionSettings()
    assert not should_compact(24_576, m, settings)
    assert should_compact(24_577, m, settings)
    assert not should_compact(10**9, m, CompactionSettings(enabled=False))


def test_small_windows_cap_the_kept_tail() -> None:
    m = model(4096, window=16_384)  # threshold 8192
    assert max_kept_tokens(m, CompactionSettings()) == 8192 // 3
    assert max_kept_tokens(m, CompactionSettings(keep_recent_tokens=1000)) == 1000


@pytest.mark.parametrize(
    "kwargs", [{"reserve_tokens": -1}, {"keep_recent_tokens": -5}, {"keep_recent_turns": 0}]
)
def test_settings_are_validated(kwargs: dict[str, int]) -> None:
    with pytest.raises(ConfigError):
        CompactionSettings(**kwargs)  # type: ignore[arg-type]


def test_truncation_forces_a_compaction_until_one_follows() -> None:
    cut_off = assistant("half an answ", stop="contextOverflow")
    path = entries_of(user("go"), cut_off)
    assert has_uncompacted_truncation(path)
    # a later user prompt or tool result does not hide it
    path += entries_of(user("continue"), start=5)
    assert has_uncompacted_truncation(path)
    path.append(TitleEntry("t", None, "", "x"))
    assert has_uncompacted_truncation(path)
    # a compaction after it does
    assert not has_uncompacted_truncation([*path, compaction("c", None, None)])
    # a later assistant message that completed does
    later = entries_of(assistant("done"), start=9)
    assert not has_uncompacted_truncation(path + later)
    assert not has_uncompacted_truncation(
        entries_of(user("a"), assistant("b", call("c1")), result("c1", "x"))
    )
    assert not has_uncompacted_truncation([])
    # a truncation before a compaction is already handled
    assert not has_uncompacted_truncation(
        [
            *entries_of(user("go"), cut_off),
            compaction("c", "m1", None),
            *entries_of(user("x"), start=7),
        ]
    )


# --- the decision before a call -----------------------------------------------------------------


def test_decide_names_the_reason_with_the_estimate_and_threshold() -> None:
    m = model(4096, window=32_768)  # threshold 24576
    settings = CompactionSettings()
    assert decide(24_576, m, settings) == ContextDecision("send", None, 24_576, 24_576, 32_768)
    assert decide(24_577, m, settings).action == "compact"
    assert decide(24_577, m, settings).reason == "threshold"
    assert decide(10, m, settings, truncated=True).reason == "truncation"
    assert decide(10, m, settings, holds_rejected=True).reason == "overflow"
    off = CompactionSettings(enabled=False)
    assert decide(10**9, m, off, truncated=True, holds_rejected=True).action == "send"


def test_only_a_prompt_awaiting_its_answer_can_be_oversized() -> None:
    path = entries_of(user("hi"), assistant("hello"), user("x" * 40_000))  # 10k tokens
    found = find_oversized_prompt(path, prefix_tokens=1000, threshold=10_000)
    assert found == OversizedPrompt("m2", 10_000, 9_000)
    assert find_oversized_prompt(path, prefix_tokens=1000, threshold=11_000) is None
    # Once answered, or when the last message is a result or a note, it is history.
    answered = entries_of(user("x" * 40_000), assistant("ok"))
    assert find_oversized_prompt(answered, prefix_tokens=1000, threshold=10_000) is None
    noted = entries_of(user("hi"), note_message("externalEdit", "x" * 40_000))
    assert find_oversized_prompt(noted, prefix_tokens=1000, threshold=10_000) is None
    titled = [*path, TitleEntry("t", "m2", "", "a title")]
    assert find_oversized_prompt(titled, prefix_tokens=1000, threshold=10_000) is not None
