"""Choosing a session's model: which models the session's provider can serve, and what a
switch costs.

A session keeps its provider (the `provider` setting: one API, one key); the models offered
are the registry's and the models file's that this provider serves. A switch keeps the
session, its ledger and its context: the next request sends the same conversation to the
other model. What it costs is the prompt cache: caches are per model, so the next request
writes the whole context to the new model's cache instead of reading it from the old one's;
and a context past the new model's compaction point is summarised first. `switch_note` says
so in numbers, before the user pays it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_server.context.trigger import CompactionSettings, compaction_threshold
from agent_server.llm.cost import call_cost
from agent_server.llm.messages import AssistantMessage
from agent_server.llm.models import BUILTIN_MODELS, ModelInfo, ModelRegistry
from agent_server.llm.providers import PROVIDERS, cache_ttl, can_think, serves, thinking_in_prefix
from agent_server.session.entries import (
    CompactionEntry,
    Entry,
    MessageEntry,
    timestamp_seconds,
)

_BUILTIN_IDS = frozenset(model.id for model in BUILTIN_MODELS)


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """A model as a picker shows it: window, output limit and list prices (US dollars per
    million tokens), and whether it is the user's (a models file) or built in."""

    model: ModelInfo
    source: str  # "builtin" or "user"
    thinks: bool = False  # it takes a thinking level on the provider's API

    def to_json(self, current: str | None = None) -> dict[str, Any]:
        model, pricing = self.model, self.model.pricing
        return {
            "id": model.id,
            "name": model.name,
            "vendor": model.vendor,
            "contextWindow": model.context_window,
            "maxOutput": model.max_output,
            "pricing": {
                "input": pricing.input,
                "output": pricing.output,
                "cacheRead": pricing.cache_read,
                "cacheWrite": pricing.cache_write_5m,
            },
            "images": model.images,
            "thinking": self.thinks,
            "source": self.source,
            "current": model.id == current,
        }


def choices(provider: str, registry: ModelRegistry) -> list[ModelChoice]:
    """The models `provider` serves, the user's first (they were defined on purpose), then
    the built-in ones in registry order."""
    spec = PROVIDERS.get(provider)
    out = [
        ModelChoice(
            model,
            "builtin" if model.id in _BUILTIN_IDS else "user",
            spec is not None and spec.api.thinks(model),
        )
        for model in registry
        if serves(provider, model)
    ]
    return sorted(out, key=lambda choice: choice.source != "user")


@dataclass(frozen=True, slots=True)
class SwitchCost:
    """What moving a context of `tokens` tokens from one model to another costs at the next
    request, at list prices: `switched`, writing it to the new model's cache (or sending it
    uncached), less the `warm` tokens its cache still holds from an earlier call, which are
    read; `stayed`, reading it from the old model's cache."""

    tokens: int
    switched: float
    stayed: float
    compacts: bool  # the context is past the new model's compaction point
    threshold: int
    window: int
    warm: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "switchedCost": round(self.switched, 6),
            "stayedCost": round(self.stayed, 6),
            "compacts": self.compacts,
            "compactAt": self.threshold,
            "window": self.window,
            "warm": self.warm,
        }


def warm_prefix(entries: Sequence[Entry], model: ModelInfo, api: str, now: float) -> int:
    """Tokens at the start of this context that `model`'s cache still holds: what its latest
    call since the last compaction cached, if that cache has not expired by `now` (seconds
    on the ledger's clock). Requests only append, so that call's prompt is still a prefix."""
    for entry in reversed(entries):
        if isinstance(entry, CompactionEntry):
            return 0
        if not isinstance(entry, MessageEntry) or not isinstance(entry.message, AssistantMessage):
            continue
        answer = entry.message
        if answer.model != model.id:
            continue
        at = timestamp_seconds(entry.timestamp)
        ttl = cache_ttl(api, model, entry.cache_retention) if entry.cache_retention else None
        if answer.usage is None or at is None or ttl is None or now - at > ttl:
            return 0
        return answer.usage.cache_read + answer.usage.cache_write
    return 0


def switch_cost(
    tokens: int,
    old: ModelInfo,
    new: ModelInfo,
    *,
    cache_retention: str,
    settings: CompactionSettings,
    warm: int = 0,
) -> SwitchCost:
    threshold = compaction_threshold(new, settings)
    if cache_retention == "none":
        warm = 0
        switched = call_cost(new.pricing, input=tokens, output=0).total
        stayed = call_cost(old.pricing, input=tokens, output=0).total
    else:
        warm = min(warm, tokens)
        switched = (
            _written(new, tokens - warm, long=cache_retention == "long")
            + call_cost(new.pricing, input=0, output=0, cache_read=warm).total
        )
        stayed = call_cost(old.pricing, input=0, output=0, cache_read=tokens).total
    return SwitchCost(
        tokens, switched, stayed, tokens > threshold, threshold, new.context_window, warm
    )


def _written(model: ModelInfo, tokens: int, *, long: bool) -> float:
    """Writing `tokens` to the model's cache; a model that does not bill cache writes takes
    them as plain input."""
    pricing = model.pricing
    rate = pricing.cache_write_1h if long else pricing.cache_write_5m
    if rate <= 0:
        return call_cost(pricing, input=tokens, output=0).total
    if long:
        return call_cost(pricing, input=0, output=0, cache_write_long=tokens).total
    return call_cost(pricing, input=0, output=0, cache_write_short=tokens).total


def switch_note(old: ModelInfo, new: ModelInfo, cost: SwitchCost, cache_retention: str) -> str:
    """The switch's cost in words, for the transcript."""
    tokens = f"{cost.tokens:,}"
    if old.id == new.id:
        return f"Already using {new.name}."
    if cost.tokens == 0:
        text = f"Switched to {new.name}: nothing to resend yet, the switch costs nothing."
    elif cost.warm:
        text = (
            f"Switched back to {new.name}, whose cache still holds the first {cost.warm:,} of "
            f"the context's {tokens} tokens: the next request reads them and writes the "
            f"{cost.tokens - cost.warm:,} added since, about ${cost.switched:.4f}, where "
            f"{old.name} would have read it all from its cache for about ${cost.stayed:.4f}."
        )
    elif cache_retention == "none":
        text = (
            f"Switched to {new.name}. Prompt caching is off, so the next request sends the "
            f"context ({tokens} tokens) in full either way: about ${cost.switched:.4f} with "
            f"{new.name}, ${cost.stayed:.4f} with {old.name}."
        )
    else:
        text = (
            f"Switched to {new.name}. Prompt caches are per model: the next request writes "
            f"the whole context ({tokens} tokens) to {new.name}'s cache, about "
            f"${cost.switched:.4f}, where {old.name} would have read it from its cache for "
            f"about ${cost.stayed:.4f}. Later requests read from the new cache again; "
            f"switching back while {old.name}'s cache is still warm reuses it."
        )
    if cost.compacts:
        text += (
            f" The context is past {new.name}'s compaction point ({cost.threshold:,} of "
            f"{cost.window:,} tokens): it is summarised before the next request."
        )
    return text


THINKING_WORDS: dict[str, str] = {
    "off": "off",
    "low": "low effort",
    "medium": "medium effort",
    "high": "high effort",
}


def thinking_note(
    model: ModelInfo,
    api: str,
    old: str,
    new: str,
    cost: SwitchCost,
    cache_retention: str,
) -> str:
    """A change of the thinking level in words, for the transcript: where the API caches
    messages per thinking setting (Anthropic's: providers.thinking_in_prefix) a change
    re-reads the messages without the cache (tools and the system prompt stay cached); on
    OpenAI's the effort is not part of the prompt. `cost` is switch_cost of the messages'
    tokens, the model to itself."""
    level = THINKING_WORDS.get(new, new)
    if old == new:
        return f"Thinking is already {level}."
    if not can_think(api, model):
        return (
            f"Thinking: {level}. {model.name} does not think on request, so nothing changes "
            "for it; the level applies to a model that can."
        )
    head = f"Thinking: {level} (was {THINKING_WORDS.get(old, old)})."
    if not thinking_in_prefix(api):
        return (
            f"{head} The prompt does not change, so its cache holds; reasoning is billed as "
            "output."
        )
    if cost.tokens == 0:
        return f"{head} Nothing to resend yet: the change costs nothing."
    tokens = f"{cost.tokens:,}"
    if cache_retention == "none":
        return f"{head} Prompt caching is off: the next request sends everything in full anyway."
    return (
        f"{head} Anthropic caches messages per thinking setting: the next request re-reads the "
        f"conversation ({tokens} tokens) without the cache and writes it again, about "
        f"${cost.switched:.4f}, where keeping the level would read it for about "
        f"${cost.stayed:.4f}. Tools and the system prompt stay cached."
    )
