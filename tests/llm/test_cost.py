"""Cost per call, totals over a session, and the no-caching comparison, by hand."""

from __future__ import annotations

import pytest

from agent_server.llm.cost import (
    SessionTotals,
    cache_hit_rate,
    call_cost,
    priced_usage,
    session_totals,
    uncached_cost,
)
from agent_server.llm.messages import AssistantMessage, TextContent, Usage
from agent_server.llm.models import ModelRegistry

REGISTRY = ModelRegistry()
SIM = REGISTRY.require("sim-large")  # $3 in, $15 out, $3.75 5m write, $6 1h write, $0.30 read


def test_one_call_by_hand() -> None:
    usage = priced_usage(SIM, input=1000, output=500, cache_read=10_000, cache_write_short=2000)
    assert usage.input == 1000
    assert usage.cache_write == 2000
    assert usage.total_tokens == 13_500
    assert usage.cost.input == pytest.approx(0.003)
    assert usage.cost.output == pytest.approx(0.0075)
    assert usage.cost.cache_read == pytest.approx(0.003)
    assert usage.cost.cache_write == pytest.approx(0.0075)
    assert usage.cost.total == pytest.approx(0.021)


def test_long_retention_writes_cost_more() -> None:
    short = call_cost(SIM.pricing, input=0, output=0, cache_write_short=1_000_000)
    long = call_cost(SIM.pricing, input=0, output=0, cache_write_long=1_000_000)
    assert short.cache_write == pytest.approx(3.75)
    assert long.cache_write == pytest.approx(6.0)


def test_registry_prices() -> None:
    sonnet = REGISTRY.require("claude-sonnet-5-5").pricing
    assert (
        sonnet.input,
        sonnet.output,
        sonnet.cache_write_5m,
        sonnet.cache_write_1h,
        sonnet.cache_read,
    ) == (
        pytest.approx(2.0),
        pytest.approx(10.0),
        pytest.approx(2.5),
        pytest.approx(4.0),
        pytest.approx(0.10),
    )
    gpt = REGISTRY.require("gpt-5.5").pricing
    assert (gpt.input, gpt.cache_read, gpt.output) == (5.0, 0.5, 30.0)


def test_long_prompts_are_billed_at_the_long_prompt_rates() -> None:
    haiku = REGISTRY.require("claude-haiku-5-5").pricing  # $0.10/$0.50 up to 100k, 5x above
    at_threshold = call_cost(haiku, input=100_000, output=1000)
    above = call_cost(haiku, input=100_001, output=1000)
    assert at_threshold.total == pytest.approx(100_000 * 0.10e-6 + 1000 * 0.50e-6)
    assert above.total == pytest.approx(100_001 * 0.50e-6 + 1000 * 2.50e-6)
    gpt = REGISTRY.require("gpt-5.5").pricing  # above 272k input: 2x input, 1.5x output
    assert call_cost(gpt, input=300_000, output=1000).total == pytest.approx(
        300_000 * 10e-6 + 1000 * 45e-6
    )


def test_what_it_would_have_cost_without_caching() -> None:
    usage = priced_usage(SIM, input=1000, output=500, cache_read=10_000, cache_write_short=2000)
    # 13,000 prompt tokens at $3 + 500 output tokens at $15.
    assert uncached_cost(usage, SIM.pricing) == pytest.approx(0.039 + 0.0075)


def test_session_totals() -> None:
    totals = SessionTotals()
    first = priced_usage(SIM, input=5000, output=100, cache_write_short=0)
    second = priced_usage(SIM, input=200, output=300, cache_read=5000, cache_write_short=100)
    totals.add(first, SIM)
    totals.add(second, SIM)
    assert (totals.calls, totals.input, totals.output) == (2, 5200, 400)
    assert (totals.cache_read, totals.cache_write) == (5000, 100)
    assert totals.cache_hit_rate == pytest.approx(5000 / (5200 + 5000 + 100))
    assert totals.cost == pytest.approx(first.cost.total + second.cost.total)
    assert totals.uncached_cost == pytest.approx((5000 + 5300) * 3e-6 + 400 * 15e-6)
    assert totals.savings == pytest.approx(totals.uncached_cost - totals.cost)
    assert totals.to_json()["cacheHitRate"] == pytest.approx(totals.cache_hit_rate)


def test_totals_of_messages_skip_calls_without_usage() -> None:
    messages = [
        AssistantMessage((TextContent("a"),), "stop", usage=priced_usage(SIM, input=10, output=1)),
        AssistantMessage((), "error", error_message="boom"),
    ]
    assert session_totals(messages).calls == 1


def test_hit_rate_of_nothing_is_zero() -> None:
    assert cache_hit_rate(0, 0, 0) == 0.0
    assert SessionTotals().cache_hit_rate == 0.0
    assert Usage().cost.total == 0.0
