"""The OpenAI request fields that set prompt caching, as each model takes them.

- `prompt_cache_key`: a string; entries are scoped by it.
- `prompt_cache_retention` (`in_memory` or `24h`): the models before GPT-5.6. From GPT-5.6 on
  it is deprecated; sent together with `prompt_cache_options` it is refused.
- `prompt_cache_options` (GPT-5.6 and later only; refused for older models as an unsupported
  parameter): `ttl` (`30m`; the Responses API also `12h`), `mode` (`implicit` or `explicit`),
  and on the Responses API `prewarm` and `comparison_response_id` (accepted, not simulated).

The refusals' wording follows the APIs' usual forms ("Unsupported parameter: ...", "Invalid
value: ..."); the exact text of the real API for the combination is not published.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_server.llm.models import ModelInfo
from agent_server.sim.cache import (
    OPENAI_TTL_12H,
    OPENAI_TTL_24H,
    OPENAI_TTL_30M,
    OPENAI_TTL_IN_MEMORY,
    OpenAICacheRequest,
)
from agent_server.sim.fields import get_field
from agent_server.sim.openai_errors import invalid

CHAT_CACHE_TTLS: Mapping[str, float] = {"30m": OPENAI_TTL_30M}
RESPONSES_CACHE_TTLS: Mapping[str, float] = {"30m": OPENAI_TTL_30M, "12h": OPENAI_TTL_12H}
CHAT_CACHE_OPTIONS = frozenset(("ttl", "mode"))
RESPONSES_CACHE_OPTIONS = frozenset(("ttl", "mode", "prewarm", "comparison_response_id"))
_RETENTIONS = ("in_memory", "24h")


def parse_cache_fields(
    body: Mapping[str, Any],
    model: ModelInfo,
    ttls: Mapping[str, float],
    known_options: frozenset[str],
) -> OpenAICacheRequest:
    """How `body` asks `model` to cache; raises RequestRejected as the API would."""
    key = get_field(body, "prompt_cache_key", (), "string")
    retention = get_field(body, "prompt_cache_retention", (), "string")
    if retention is not None and retention not in _RETENTIONS:
        raise invalid(
            f"Invalid value: '{retention}'. Supported values are: 'in_memory' and '24h'.",
            "prompt_cache_retention", "invalid_value",
        )
    options = get_field(body, "prompt_cache_options", (), "object")
    if options is None:
        if model.bills_cache_writes:
            return OpenAICacheRequest(key, retention, OPENAI_TTL_30M, bills_writes=True)
        ttl = OPENAI_TTL_24H if retention == "24h" else OPENAI_TTL_IN_MEMORY
        return OpenAICacheRequest(key, retention, ttl)
    if not model.bills_cache_writes:
        raise invalid(
            "Unsupported parameter: 'prompt_cache_options' is not supported with this model. "
            "Use 'prompt_cache_retention' instead.",
            "prompt_cache_options", "unsupported_parameter",
        )
    if retention is not None:
        raise invalid(
            "Unsupported parameter: 'prompt_cache_retention' cannot be used together with "
            "'prompt_cache_options'. Set the cache lifetime with 'prompt_cache_options.ttl'.",
            "prompt_cache_retention", "unsupported_parameter",
        )
    for name in options:
        if name not in known_options:
            raise invalid(
                f"Unknown parameter: 'prompt_cache_options.{name}'.",
                f"prompt_cache_options.{name}", "unknown_parameter",
            )
    path = ("prompt_cache_options",)
    ttl_name = get_field(options, "ttl", path, "string") or "30m"
    if ttl_name not in ttls:
        supported = " and ".join(f"'{name}'" for name in ttls)
        raise invalid(
            f"Invalid value: '{ttl_name}'. Supported values are: {supported}.",
            "prompt_cache_options.ttl", "invalid_value",
        )
    mode = get_field(options, "mode", path, "string") or "implicit"
    if mode not in ("implicit", "explicit"):
        raise invalid(
            f"Invalid value: '{mode}'. Supported values are: 'implicit' and 'explicit'.",
            "prompt_cache_options.mode", "invalid_value",
        )
    return OpenAICacheRequest(
        key, None, ttls[ttl_name], enabled=mode == "implicit", bills_writes=True
    )
