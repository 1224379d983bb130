"""How long a provider keeps a cached prompt prefix after its last use, by API and retention.

The documented lifetimes (each read refreshes them):
- Anthropic Messages: 5 minutes, or 1 hour with `cache_control.ttl: "1h"` (the long retention);
- OpenAI, models before GPT-5.6: "in memory", 5 to 10 minutes of inactivity (10 here: the
  prefix is known to be cold only when even the longest of them has passed), or 24 hours with
  `prompt_cache_retention: "24h"`;
- OpenAI from GPT-5.6 on (`ModelInfo.bills_cache_writes`): `prompt_cache_options.ttl`, 30
  minutes, or 12 hours on the Responses API with the long retention;
- a local OpenAI-compatible server, or no caching: unknown (None).

The context manager compares the pause since the last call with this to know, before the
next call, that the prefix is cold (context/trigger.py decides what to do about it).
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


def cache_ttl(api: str, model: ModelInfo, retention: CacheRetention) -> float | None:
    """Seconds `api` keeps `model`'s cached prefix after its last use with `retention`; None
    when nothing is cached or the server's rules are unknown."""
    if retention == "none":
        return None
    long = retention == "long"
    if api == "anthropic-messages":
        return ANTHROPIC_LONG_TTL if long else ANTHROPIC_SHORT_TTL
    if not speaks_openai_extensions(model):
        return None
    if model.bills_cache_writes:
        if long and api == "openai-responses":
            return OPENAI_RESPONSES_LONG_TTL
        return OPENAI_OPTIONS_SHORT_TTL
    return OPENAI_EXTENDED_TTL if long else OPENAI_IN_MEMORY_TTL


def bills_cache_writes(api: str, model: ModelInfo) -> bool:
    """Whether `api` bills writing `model`'s cache (at its own price) rather than charging
    uncached tokens at the input price."""
    return api == "anthropic-messages" or model.bills_cache_writes


def describe_seconds(seconds: float) -> str:
    """A duration as people say it: "45 seconds", "12 minutes", "2.5 hours"."""
    if seconds < 90:
        return f"{seconds:.0f} seconds"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds / 3600:.1f} hours"
