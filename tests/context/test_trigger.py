from __future__ import annotations

import pytest

from agent_server.context.decision import ContextDecision, decide
from agent_server.context.summary_prompt import note_message
from agent_server.context.trigger import (
    BREAK_DETAIL,
    COMPACTION_REQUEST_DETAIL,
    DEFAULT_MAX_THRESHOLD,
    CompactionSettings,
    OversizedPrompt,
    can_wait_for_break,
    compaction_threshold,
    compacts_on_request,
    compacts_when_cold,
    find_oversized_prompt,
    has_uncompacted_truncation,
    leaves_no_summary_room,
    max_kept_tokens,
    reserve_tokens,
    should_compact,
    step_position,
    window_limit,
)
from agent_server.errors import ConfigError
from agent_server.llm.messages import TextContent, ToolResultMessage
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
    # a large window compacts at 128k tokens by default, near the window when asked (share 1)
    assert compaction_threshold(large, CompactionSettings()) == 131_072
    huge = model(64_000, window=1_000_000)
    assert compaction_threshold(huge, CompactionSettings()) == 131_072
    # a window whose limit is under the bound compacts at the limit
    assert compaction_threshold(model(32_000, window=128_000), CompactionSettings()) == (
        128_000 - 20_480
    )
    assert compaction_threshold(large, CompactionSettings(threshold=1)) == 200_000 - 20_480
    assert compaction_threshold(large, CompactionSettings(threshold=100_000)) == 100_000
    assert window_limit(large, CompactionSettings()) == 200_000 - 20_480
    # a 32k window keeps its full 8k tail: the cap (a third of the threshold) is above it
    assert max_kept_tokens(small, CompactionSettings()) == 8000


def test_an_explicit_reserve_wins() -> None:
    assert reserve_tokens(model(64_000), CompactionSettings(reserve_tokens=50_000)) == 50_000
    assert reserve_tokens(model(64_000), CompactionSettings(reserve_tokens=1000)) == 1000
    with pytest.raises(ConfigError, match="smaller than the context window"):
        compaction_threshold(model(1000, window=16_000), CompactionSettings(reserve_tokens=16_000))


def test_a_window_too_small_for_the_default_reserve_says_so() -> None:
    """The reserve's floor (8,192) is not a setting the user made: the error names the
    window and what to do, not compaction.reserveTokens as the culprit."""
    with pytest.raises(ConfigError) as raised:
        window_limit(model(1000, window=8192), CompactionSettings())
    message = str(raised.value)
    assert "context window of m (8,192 tokens) is too small" in message
    assert "8,192 tokens of it for the model's answer" in message
    assert "'contextWindow'" in message
    assert not message.startswith("compaction.reserveTokens")


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
    # nor does a turn that failed after it (its recorded error is never sent)
    path += entries_of(user("again"), assistant(stop="error"), start=7)
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


def test_a_step_that_would_leave_the_cached_summary_no_room_compacts_before_it() -> None:
    m = model(4096, window=32_768)  # threshold 24,576; the summary needs 1,024 + 4,096 beside
    cached = CompactionSettings()
    # 20k now, and the last step added 8k: the next one would leave no room for the summary.
    assert leaves_no_summary_room(20_000, 8_000, m, cached)
    assert decide(20_000, m, cached, next_step_tokens=8_000).reason == "threshold"
    # Room enough after a step like the last one: sent as it is.
    assert not leaves_no_summary_room(20_000, 7_000, m, cached)
    assert decide(20_000, m, cached, next_step_tokens=7_000).action == "send"
    # Too little to summarise yet (under half the threshold): sent.
    assert not leaves_no_summary_room(12_000, 12_000, m, cached)
    # A last step larger than a compaction keeps verbatim would be folded unseen: sent.
    assert not leaves_no_summary_room(20_000, 12_289, m, cached)
    # The fresh summary needs no room beside the context.
    fresh = CompactionSettings(summary="fresh")
    assert decide(20_000, m, fresh, next_step_tokens=8_000).action == "send"
    # A large window compacting near it (threshold 1) leaves room whatever the step.
    near_window = CompactionSettings(threshold=1)
    assert decide(150_000, model(16_384), near_window, next_step_tokens=20_000).action == "send"


def test_a_cold_prefix_compacts_past_a_share_of_the_threshold() -> None:
    m = model(4096, window=32_768)  # threshold 24,576
    half = CompactionSettings()  # coldCacheShare 0.5: 12,288
    assert not compacts_when_cold(12_288, m, half)
    assert compacts_when_cold(12_289, m, half)
    assert decide(12_289, m, half, cold=True).reason == "idle"
    assert decide(12_289, m, half).action == "send"  # a warm cache: nothing to gain
    assert decide(12_000, m, half, cold=True).action == "send"
    most = CompactionSettings(cold_cache_share=0.9)
    assert decide(20_000, m, most, cold=True).action == "send"
    assert decide(23_000, m, most, cold=True).reason == "idle"
    off = CompactionSettings(enabled=False)
    assert decide(23_000, m, off, cold=True).action == "send"
    with pytest.raises(ConfigError, match="coldCacheShare"):
        CompactionSettings(cold_cache_share=1.5)


# --- the threshold setting ----------------------------------------------------------------------


def test_the_threshold_setting_is_a_share_of_the_window_or_tokens_never_past_the_limit() -> None:
    large = model(16_384)  # window 200k, reserve 20,480: limit 179,520
    assert compaction_threshold(large, CompactionSettings()) == DEFAULT_MAX_THRESHOLD
    assert compaction_threshold(large, CompactionSettings(threshold=0.5)) == 100_000
    assert compaction_threshold(large, CompactionSettings(threshold=120_000)) == 120_000
    # Never past the window less the reserve (the answer's room).
    assert compaction_threshold(large, CompactionSettings(threshold=1)) == 179_520
    assert compaction_threshold(large, CompactionSettings(threshold=500_000)) == 179_520
    assert window_limit(large, CompactionSettings(threshold=50_000)) == 179_520
    # The kept tail follows the threshold the user chose.
    assert max_kept_tokens(model(16_384, 32_768), CompactionSettings(threshold=0.25)) == 8192 // 3
    assert should_compact(50_001, large, CompactionSettings(threshold=50_000))
    assert not should_compact(50_001, large, CompactionSettings(threshold=50_000, enabled=False))


@pytest.mark.parametrize("value", [0, -0.5, 1.5, 1000, 60_000.5, float("nan"), float("inf")])
def test_a_threshold_that_cannot_work_is_refused_with_the_key(value: float) -> None:
    with pytest.raises(ConfigError, match=r"compaction\.threshold"):
        CompactionSettings(threshold=value)


# --- natural breaks and the model's request ------------------------------------------------------


def test_the_step_position_reads_the_last_step() -> None:
    prompt = entries_of(user("go"))
    assert step_position(prompt) == "turn"
    assert step_position([]) == "turn"
    loop = entries_of(user("go"), assistant("", call("c1")), result("c1", "x"))
    assert step_position(loop) == "loop"
    # An editor note after the results does not end the loop; one before a prompt neither.
    assert step_position([*loop, *entries_of(note_message("externalEdit", "e"), start=3)]) == (
        "loop"
    )
    noted = entries_of(user("a"), assistant("b"), note_message("externalEdit", "e"), user("c"))
    assert step_position(noted) == "turn"
    marked = ToolResultMessage("c2", "plan", (TextContent("ok"),), details={BREAK_DETAIL: True})
    done = entries_of(user("go"), assistant("", call("c1"), call("c2")), result("c1", "x"), marked)
    assert step_position(done) == "break"
    asked = ToolResultMessage(
        "c2", "compact", (TextContent("ok"),), details={COMPACTION_REQUEST_DETAIL: True}
    )
    requested = entries_of(user("go"), assistant("", call("c2", "compact")), asked)
    assert step_position(requested) == "requested"
    # Only the last step counts: a request answered by a later step is stale.
    later = entries_of(assistant("", call("c3")), result("c3", "y"), start=3)
    assert step_position([*requested, *later]) == "loop"
    # A compaction since: what came before it is not the last step.
    assert step_position([*requested, compaction("k", "m2", None)]) == "turn"


def test_past_the_threshold_a_tool_loop_waits_for_a_break_while_a_step_leaves_room() -> None:
    m = model(4096, window=32_768)  # threshold 24,576; the summary needs 1,024 + 4,096 beside
    s = CompactionSettings()
    # 25k and a 1k step, counted twice: 25k + 2k + 5,120 = 32,120, inside the window: the loop
    # goes on.
    waiting = decide(25_000, m, s, position="loop", next_step_tokens=700, answer_tokens=300)
    assert (waiting.action, waiting.reason) == ("wait", "threshold")
    # A step one token larger than half the room: compact now.
    room = (32_768 - 25_000 - 5_120) // 2
    assert decide(25_000, m, s, position="loop", next_step_tokens=room).action == "wait"
    assert decide(25_000, m, s, position="loop", next_step_tokens=room + 1).action == "compact"
    # The answer counts as part of the step.
    too_big = decide(25_000, m, s, position="loop", next_step_tokens=room, answer_tokens=1)
    assert too_big.action == "compact"
    # At a break, or answering a prompt, past the threshold compacts at once.
    for position in ("turn", "break", "requested"):
        assert decide(25_000, m, s, position=position).reason == "threshold"  # type: ignore[arg-type]
    # A cut-off answer, a rejected context and a cold prefix do not wait.
    assert decide(25_000, m, s, position="loop", truncated=True).reason == "truncation"
    assert decide(25_000, m, s, position="loop", holds_rejected=True).reason == "overflow"
    assert decide(25_000, m, s, position="loop", cold=True).reason == "idle"
    # Under the threshold nothing changes.
    assert decide(24_000, m, s, position="loop").action == "send"
    assert can_wait_for_break(25_000, 1_324, m, s)
    assert not can_wait_for_break(25_000, 1_325, m, s)


def test_a_requested_compaction_runs_past_half_the_threshold() -> None:
    m = model(4096, window=32_768)  # threshold 24,576: half is 12,288
    s = CompactionSettings()
    assert not compacts_on_request(12_288, m, s)
    assert compacts_on_request(12_289, m, s)
    assert decide(12_289, m, s, position="requested").reason == "requested"
    assert decide(12_288, m, s, position="requested").action == "send"
    assert decide(12_289, m, s, position="break").action == "send"
    assert decide(12_289, m, CompactionSettings(enabled=False), position="requested").action == (
        "send"
    )
    # Past the threshold it is a threshold compaction.
    assert decide(30_000, m, s, position="requested").reason == "threshold"
