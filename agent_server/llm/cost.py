"""What model calls cost: per call from usage and list prices, and summed over a session.

Prices come from the model registry (`ModelInfo.pricing`, dollars per million tokens). A call
is priced at the rates for its prompt size (some models bill long prompts at higher rates);
cache writes at the short-retention price (Anthropic 5 minutes, OpenAI 30 minutes) or the
long one (1 hour / extended), as the provider reported or as the request asked.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agent_server.llm.messages import AssistantMessage, Cost, Message, Usage
from agent_server.llm.models import ModelInfo, Pricing

_PER_TOKEN = 1 / 1_000_000


def call_cost(
    pricing: Pricing,
    *,
    input: int,
    output: int,
    cache_read: int = 0,
    cache_write_short: int = 0,
    cache_write_long: int = 0,
) -> Cost:
    """The cost of one call: `input` is the uncached input; cache writes split by retention."""
    prompt = input + cache_read + cache_write_short + cache_write_long
    rates = pricing.for_prompt(prompt)
    return Cost(
        input=input * rates.input * _PER_TOKEN,
        output=output * rates.output * _PER_TOKEN,
        cache_read=cache_read * rates.cache_read * _PER_TOKEN,
        cache_write=(
            cache_write_short * rates.cache_write_5m + cache_write_long * rates.cache_write_1h
        )
        * _PER_TOKEN,
    )


def priced_usage(
    model: ModelInfo,
    *,
    input: int,
    output: int,
    cache_read: int = 0,
    cache_write_short: int = 0,
    cache_write_long: int = 0,
) -> Usage:
    """Normalised usage of one call with its cost at `model`'s list prices."""
    return Usage(
        input=input,
        output=output,
        cache_read=cache_read,
        cache_write=cache_write_short + cache_write_long,
        cost=call_cost(
            model.pricing,
            input=input,
            output=output,
            cache_read=cache_read,
            cache_write_short=cache_write_short,
            cache_write_long=cache_write_long,
        ),
    )


def uncached_cost(usage: Usage, pricing: Pricing) -> float:
    """What this call would have cost with no caching at all: every prompt token at the input
    price (no cache reads, no cache-write premium), plus the output."""
    rates = pricing.for_prompt(usage.prompt_tokens)
    return (usage.prompt_tokens * rates.input + usage.output * rates.output) * _PER_TOKEN


def cache_hit_rate(cache_read: int, input: int, cache_write: int) -> float:
    """cacheRead / (input + cacheRead + cacheWrite); 0 when nothing was sent."""
    prompt = input + cache_read + cache_write
    return cache_read / prompt if prompt else 0.0


class SessionTotals:
    """Usage summed over the calls of a session (or a turn, or a benchmark run).

    An accumulator: `add` counts one more call. `cost` is the total in US dollars,
    `cost_breakdown` the same by category. `uncached_cost` sums what each call would have
    cost without caching; it counts only calls added with their model.
    """

    __slots__ = (
        "cache_read",
        "cache_write",
        "calls",
        "cost_breakdown",
        "input",
        "output",
        "uncached_cost",
    )

    def __init__(self) -> None:
        self.calls = 0
        self.input = 0
        self.output = 0
        self.cache_read = 0
        self.cache_write = 0
        self.cost_breakdown = Cost()
        self.uncached_cost = 0.0

    def add(self, usage: Usage, model: ModelInfo | None = None) -> None:
        """Counts one call's usage (and, given its model, its cost without caching)."""
        self.calls += 1
        self.input += usage.input
        self.output += usage.output
        self.cache_read += usage.cache_read
        self.cache_write += usage.cache_write
        self.cost_breakdown = self.cost_breakdown + usage.cost
        if model is not None:
            self.uncached_cost += uncached_cost(usage, model.pricing)

    def add_sum(self, usage: Usage, calls: int) -> None:
        """Counts `calls` calls whose usage sums to `usage` (their cost without caching is
        not known: it depends on each call's prompt size)."""
        self.calls += calls
        self.input += usage.input
        self.output += usage.output
        self.cache_read += usage.cache_read
        self.cache_write += usage.cache_write
        self.cost_breakdown = self.cost_breakdown + usage.cost

    @property
    def cost(self) -> float:
        """US dollars over all calls."""
        return self.cost_breakdown.total

    def as_usage(self) -> Usage:
        """The sums as one Usage (tokens and cost by category)."""
        return Usage(
            self.input, self.output, self.cache_read, self.cache_write, self.cost_breakdown
        )

    @property
    def prompt_tokens(self) -> int:
        return self.input + self.cache_read + self.cache_write

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.output

    @property
    def cache_hit_rate(self) -> float:
        """cacheRead / (input + cacheRead + cacheWrite) over all calls."""
        return cache_hit_rate(self.cache_read, self.input, self.cache_write)

    @property
    def savings(self) -> float:
        """Dollars caching saved against `uncached_cost` (negative when writes cost more)."""
        return self.uncached_cost - self.cost

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "totalTokens": self.total_tokens,
            "cacheHitRate": self.cache_hit_rate,
            "cost": self.cost,
            "uncachedCost": self.uncached_cost,
        }

    def __repr__(self) -> str:
        return (
            f"SessionTotals(calls={self.calls}, input={self.input}, output={self.output}, "
            f"cache_read={self.cache_read}, cache_write={self.cache_write}, "
            f"cost={self.cost:.6f})"
        )


def session_totals(messages: Iterable[Message], model: ModelInfo | None = None) -> SessionTotals:
    """Totals over the assistant messages that carry usage (errors before any byte carry none)."""
    totals = SessionTotals()
    for message in messages:
        if isinstance(message, AssistantMessage) and message.usage is not None:
            totals.add(message.usage, model)
    return totals
