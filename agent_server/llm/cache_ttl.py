"""How long a provider keeps a cached prompt prefix after its last use, by API and retention.

The documented lifetimes (each read refreshes them):
- Anthropic Messages: 5 minutes, or 1 hour with `cache_control.ttl: "1h"` (the long retention);
- OpenAI, models before GPT-5.6: "in memory", 5 to 10 minutes of inactivity (10 here: the
  prefix is known to be cold only when even the longest of them has passed), or 24 hours with
  `prompt_cache_retention: "24h"`;
- OpenAI from GPT-5.6 on (`ModelInfo.bills_cache_writes`): `prompt_cache_options.ttl`, 30
  minutes, or 12 hours on the Responses API with the long retention;
- a local OpenAI-compatible server, or no caching: unknown (None).

Each wire API's description (`llm/providers.py`) names its rules; the context manager
compares the pause since the last call with them to know, before the next call, that the
prefix is cold (context/trigger.py decides what to do about it).
"""

from __future__ import annotations

from agent_server.llm.models import ModelInfo, speaks_openai_extensions
from agent_server.llm.stream import CacheRetention

ANTHROPIC_SHORT_TTL = 5 * 60.0
ANTHROPIC_LONG_TTL = 60 * 60.0
OPENAI_IN_MEMORY_TTL = 10 * 60.0
OPENAI_EXTENDED_TTL = 24 * 60 * 60.0
OPENAI_OPTIONS_SHORT_TTL = 30 * 60.0
OPENAI_RESPONSES_LONG_TTL = 12 * 60 * 60.0


def anthropic_cache_ttl(model: ModelInfo, retention: CacheRetention) -> float | None:
    """The Anthropic Messages API: 5 minutes, or 1 hour with the long retention."""
    if retention == "none":
        return None
    return ANTHROPIC_LONG_TTL if retention == "long" else ANTHROPIC_SHORT_TTL


def openai_chat_cache_ttl(model: ModelInfo, retention: CacheRetention) -> float | None:
    """OpenAI Chat Completions (no longer lifetime with `prompt_cache_options`)."""
    return _openai_cache_ttl(model, retention, options_long=OPENAI_OPTIONS_SHORT_TTL)


def openai_responses_cache_ttl(model: ModelInfo, retention: CacheRetention) -> float | None:
    """OpenAI Responses: 12 hours with the long retention and `prompt_cache_options`."""
    return _openai_cache_ttl(model, retention, options_long=OPENAI_RESPONSES_LONG_TTL)


def _openai_cache_ttl(
    model: ModelInfo, retention: CacheRetention, *, options_long: float
) -> float | None:
    if retention == "none" or not speaks_openai_extensions(model):
        return None
    long = retention == "long"
    if model.bills_cache_writes:
        return options_long if long else OPENAI_OPTIONS_SHORT_TTL
    return OPENAI_EXTENDED_TTL if long else OPENAI_IN_MEMORY_TTL


def anthropic_bills_cache_writes(model: ModelInfo) -> bool:
    """Anthropic bills every cache write at its own price."""
    return True


def openai_bills_cache_writes(model: ModelInfo) -> bool:
    """OpenAI bills cache writes from GPT-5.6 on; before, uncached input at the input price."""
    return model.bills_cache_writes


def describe_seconds(seconds: float) -> str:
    """A duration as people say it: "45 seconds", "12 minutes", "2.5 hours"."""
    if seconds < 90:
        return f"{seconds:.0f} seconds"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds / 3600:.1f} hours"
