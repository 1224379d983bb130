"""How long each provider keeps a cached prefix, and what a cold one costs again."""

from __future__ import annotations

import dataclasses

import pytest

from agent_server.agent.settings import settings_from_json
from agent_server.errors import ConfigError
from agent_server.llm.cache_ttl import describe_seconds
from agent_server.llm.cost import rewrite_cost
from agent_server.llm.models import ModelInfo, ModelRegistry
from agent_server.llm.providers import bills_cache_writes, cache_ttl

REGISTRY = ModelRegistry()
SIM = REGISTRY.require("sim-large")  # $3 in, $3.75 5m write, $6 1h write, $0.30 read
GPT = dataclasses.replace(SIM, vendor="openai")
GPT_WRITES = dataclasses.replace(GPT, bills_cache_writes=True)
LOCAL = ModelInfo("llama", "Llama", "local", 32_000, 4096, base_url="http://localhost:8080")


@pytest.mark.parametrize(
    ("api", "model", "retention", "seconds"),
    [
        ("anthropic-messages", SIM, "short", 300),
        ("anthropic-messages", SIM, "long", 3600),
        ("anthropic-messages", SIM, "none", None),
        ("openai-chat", GPT, "short", 600),
        ("openai-responses", GPT, "long", 24 * 3600),
        ("openai-chat", GPT_WRITES, "short", 1800),
        ("openai-chat", GPT_WRITES, "long", 1800),  # Chat Completions has no longer ttl
        ("openai-responses", GPT_WRITES, "long", 12 * 3600),
        ("openai-chat", LOCAL, "short", None),  # a local server's cache is unknown
    ],
)
def test_documented_lifetimes(
    api: str, model: ModelInfo, retention: str, seconds: float | None
) -> None:
    assert cache_ttl(api, model, retention) == seconds  # type: ignore[arg-type]


def test_a_cold_prefix_costs_the_write_or_input_price_less_the_read_price() -> None:
    anthropic = bills_cache_writes("anthropic-messages", SIM)
    assert anthropic and not bills_cache_writes("openai-chat", GPT)
    assert bills_cache_writes("openai-responses", GPT_WRITES)
    million = 1_000_000
    assert rewrite_cost(SIM.pricing, million, bills_writes=True, long=False) == pytest.approx(3.45)
    assert rewrite_cost(SIM.pricing, million, bills_writes=True, long=True) == pytest.approx(5.70)
    assert rewrite_cost(SIM.pricing, million, bills_writes=False, long=False) == pytest.approx(2.70)


def test_durations_read_as_people_say_them() -> None:
    assert describe_seconds(45) == "45 seconds"
    assert describe_seconds(6 * 60) == "6 minutes"
    assert describe_seconds(150 * 60) == "2.5 hours"


def test_auto_retention_and_the_cold_share_are_settings() -> None:
    settings = settings_from_json(
        {"cacheRetention": "auto", "compaction": {"coldCacheShare": 0.75}}
    )
    assert settings.cache_retention == "auto"
    assert settings.compaction.cold_cache_share == 0.75
    with pytest.raises(ConfigError, match="coldCacheShare"):
        settings_from_json({"compaction": {"coldCacheShare": 0}})
    with pytest.raises(ConfigError, match="coldCacheShare"):
        settings_from_json({"compaction": {"coldCacheShare": "half"}})
    with pytest.raises(ConfigError, match="cacheRetention"):
        settings_from_json({"cacheRetention": "forever"})
