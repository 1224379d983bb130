"""Property tests of the decision before a model call (context.decision): one pure function,
so its rules hold for every input, not only the ones a session happens to reach."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_server.context.decision import (
    ContextAction,
    ContextDecision,
    decide,
    decide_overflow,
    retries_after_overflow,
    server_reserve,
    went_cold,
)
from agent_server.context.trigger import (
    CompactionSettings,
    StepPosition,
    compaction_threshold,
    compacts_on_request,
    compacts_when_cold,
    leaves_no_summary_room,
    window_limit,
)
from agent_server.llm.models import BUILTIN_MODELS, ModelInfo

MODELS = {model.id: model for model in BUILTIN_MODELS}
LOCAL = ModelInfo("llama", "Llama", "local", 32_768, 4_096)
# How far an action goes: a later one never comes back to an earlier one as the context grows.
RANK: dict[ContextAction, int] = {"send": 0, "wait": 1, "compact": 2, "refuse": 3}


@dataclass(frozen=True)
class Facts:
    """Everything `decide` reads but the estimate."""

    model: ModelInfo
    settings: CompactionSettings
    manual: bool
    oversized: bool
    truncated: bool
    holds_rejected: bool
    next_step_tokens: int
    cold: bool
    position: StepPosition
    answer_tokens: int
    compacted_to: int | None

    def decide(self, tokens: int) -> ContextDecision:
        return decide(
            tokens,
            self.model,
            self.settings,
            manual=self.manual,
            oversized=self.oversized,
            truncated=self.truncated,
            holds_rejected=self.holds_rejected,
            next_step_tokens=self.next_step_tokens,
            cold=self.cold,
            position=self.position,
            answer_tokens=self.answer_tokens,
            compacted_to=self.compacted_to,
        )

    @property
    def threshold(self) -> int:
        return compaction_threshold(self.model, self.settings)


@st.composite
def compaction_settings(draw: st.DrawFn, model: ModelInfo) -> CompactionSettings:
    reserve = draw(st.one_of(st.none(), st.integers(0, model.context_window - 1)))
    return CompactionSettings(
        enabled=draw(st.booleans()),
        reserve_tokens=reserve,
        threshold=draw(st.one_of(st.none(), st.floats(0.05, 1.0), st.integers(2048, 300_000))),
        summary=draw(st.sampled_from(("cached", "fresh"))),
        cold_cache_share=draw(st.floats(0.05, 1.0)),
    )


STEP = st.one_of(st.integers(0, 2_000), st.integers(0, 60_000))  # small steps wait


@st.composite
def facts(draw: st.DrawFn, *, rare: bool = True) -> Facts:
    """Facts of a call; with `rare` False, no rule but the estimate's forces a compaction."""
    model = MODELS[draw(st.sampled_from(("sim-small", "sim-large")))]
    flag = st.booleans() if rare else st.just(False)
    seldom = st.sampled_from((False, False, False, True)) if rare else flag
    positions: tuple[StepPosition, ...] = ("turn", "break", "loop")
    return Facts(
        model=model,
        settings=draw(compaction_settings(model)),
        manual=draw(seldom),
        oversized=draw(seldom),
        truncated=draw(seldom),
        holds_rejected=draw(seldom),
        next_step_tokens=draw(STEP),
        cold=draw(flag),
        position=draw(st.sampled_from((*positions, "requested") if rare else positions)),
        answer_tokens=draw(st.one_of(st.integers(0, 1_000), st.integers(0, 20_000))),
        compacted_to=draw(st.one_of(st.none(), st.integers(0, 300_000))),
    )


TOKENS = st.integers(0, 400_000)


@settings(max_examples=400, deadline=None)
@given(facts(rare=False), TOKENS)
def test_nothing_compacts_at_or_below_the_threshold_unless_asked(f: Facts, tokens: int) -> None:
    """With no cut-off answer, no rejected context, no cold prefix and no request, a context
    at or below the threshold is sent, or compacted early for the cached summary's room."""
    decision = f.decide(min(tokens, f.threshold))
    if decision.action != "send":
        assert (decision.action, decision.reason) == ("compact", "threshold")
        assert leaves_no_summary_room(decision.tokens, f.next_step_tokens, f.model, f.settings)


@settings(max_examples=400, deadline=None)
@given(facts(), TOKENS, st.one_of(st.integers(0, 2_000), TOKENS))
def test_the_decision_never_goes_back_as_the_context_grows(f: Facts, a: int, more: int) -> None:
    """Monotonic in the estimate: send, then wait, then compact (a refusal whatever it is)."""
    smaller, larger = f.decide(a), f.decide(a + more)
    assert RANK[smaller.action] <= RANK[larger.action]


@settings(max_examples=400, deadline=None)
@given(facts(), TOKENS)
def test_the_reason_is_the_rule_that_holds(f: Facts, tokens: int) -> None:
    decision = f.decide(tokens)
    assert (decision.tokens, decision.threshold) == (tokens, f.threshold)
    assert decision.window == f.model.context_window
    assert (decision.reason is None) == (decision.action == "send")
    if f.manual:
        assert (decision.action, decision.reason) == ("compact", "manual")
        return
    assert decision.reason != "manual"
    assert (decision.action == "refuse") == f.oversized == (decision.reason == "oversized")
    if f.oversized:
        return
    if not f.settings.enabled:
        assert decision.action == "send"
        return
    expected = {
        "truncation": f.truncated,
        "overflow": f.holds_rejected and not f.truncated,
        "requested": f.position == "requested" and compacts_on_request(
            tokens, f.model, f.settings
        ),
        "idle": f.cold and compacts_when_cold(tokens, f.model, f.settings),
        "threshold": tokens > f.threshold
        or leaves_no_summary_room(tokens, f.next_step_tokens, f.model, f.settings),
    }
    if decision.reason is not None:
        assert expected[decision.reason]
    if expected["truncation"] or expected["overflow"] or expected["idle"]:
        assert decision.action == "compact"  # none of them waits for a break
    if decision.action == "wait":
        assert f.position == "loop" and decision.reason == "threshold"
        assert tokens + f.next_step_tokens + f.answer_tokens < f.model.context_window


@settings(max_examples=300, deadline=None)
@given(facts(), TOKENS)
def test_a_context_over_the_window_or_already_rejected_is_never_sendable(
    f: Facts, tokens: int
) -> None:
    unsendable = f.decide(tokens).unsendable
    window = f.model.context_window
    if tokens > window:
        assert unsendable == "window"
    else:
        assert unsendable == ("rejected" if f.holds_rejected else None)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from((LOCAL, MODELS["sim-small"])),
    st.booleans(),
    st.booleans(),
    st.one_of(st.none(), st.integers(1, 70_000)),
    st.integers(0, 20_000),
)
def test_an_overflow_compacts_once_and_believes_only_a_local_servers_window(
    model: ModelInfo, enabled: bool, recovered: bool, server_window: int | None, prefix: int
) -> None:
    compaction = CompactionSettings(enabled=enabled)
    step = decide_overflow(
        model, compaction, recovered=recovered, server_window=server_window, prefix_tokens=prefix
    )
    smaller = (
        model.vendor == "local" and server_window is not None
        and server_window < model.context_window
    )
    if smaller:
        assert server_window is not None
        too_small = server_window <= server_reserve(model, compaction, server_window) + prefix
        assert step == ("server too small" if too_small else "server window")
    else:
        assert step == ("spent" if recovered or not enabled else "compact")


@settings(max_examples=300, deadline=None)
@given(facts(), TOKENS, TOKENS, st.booleans())
def test_an_overflow_retries_only_a_smaller_context_that_fits(
    f: Facts, before: int, after_tokens: int, compacted: bool
) -> None:
    after = f.decide(after_tokens)
    retries = retries_after_overflow(before, after, f.model, f.settings, compacted=compacted)
    if retries:
        assert compacted and after_tokens < before
        assert after_tokens <= window_limit(f.model, f.settings) and after.unsendable is None
    elif compacted and after_tokens < before and not f.holds_rejected:
        assert after_tokens > window_limit(f.model, f.settings)


@given(st.one_of(st.none(), st.floats(0, 10_000)), st.one_of(st.none(), st.floats(0, 10_000)))
def test_a_prefix_goes_cold_only_after_a_pause_longer_than_the_cache(
    pause: float | None, ttl: float | None
) -> None:
    assert went_cold(pause, ttl) == (pause is not None and ttl is not None and pause > ttl)
