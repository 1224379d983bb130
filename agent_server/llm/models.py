"""The model registry: context windows, output limits, prices and cache rules, as data.

Every number about a model lives here and nowhere else. Prices are US dollars per million
tokens at list price. Users add models (a local Ollama, vLLM or llama.cpp server, a proxy's
alias) in a models file, JSON or YAML, read by `load_models_file`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

import yaml

Vendor: TypeAlias = Literal["anthropic", "openai", "sim", "local"]


@dataclass(frozen=True, slots=True)
class Pricing:
    """US dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_write_5m: float = 0.0
    cache_write_1h: float = 0.0
    cache_read: float = 0.0


@dataclass(frozen=True, slots=True)
class ModelInfo:
    id: str
    name: str
    vendor: Vendor
    context_window: int
    max_output: int
    pricing: Pricing = field(default_factory=Pricing)
    # Shortest prefix the provider will cache (Anthropic: per model; OpenAI: 1024).
    min_cache_tokens: int = 1024
    reasoning: bool = False
    images: bool = True
    # For user-defined models: where their OpenAI-compatible server listens.
    base_url: str | None = None


def _anthropic_pricing(input_price: float, output_price: float, read_ratio: float = 0.1) -> Pricing:
    """Anthropic's published multipliers: 5m write 1.25x, 1h write 2x, read 0.1x of input."""
    return Pricing(
        input=input_price,
        output=output_price,
        cache_write_5m=input_price * 1.25,
        cache_write_1h=input_price * 2.0,
        cache_read=input_price * read_ratio,
    )


def _openai_pricing(input_price: float, output_price: float, cached: float) -> Pricing:
    """OpenAI bills no cache writes; cached input at its own rate."""
    return Pricing(input=input_price, output=output_price, cache_read=cached)


# Sonnet-class list prices for the simulator, so that demo and benchmark bills read like
# real ones.
_SIM_PRICING = _anthropic_pricing(3.0, 15.0)

BUILTIN_MODELS: tuple[ModelInfo, ...] = (
    # Anthropic (platform.claude.com/docs/en/about-claude/pricing and models overview).
    ModelInfo("claude-sonnet-4-6", "Claude Sonnet 4.6", "anthropic", 200_000, 64_000,
              _anthropic_pricing(3.0, 15.0), 1024, reasoning=True),
    ModelInfo("claude-sonnet-4-5", "Claude Sonnet 4.5", "anthropic", 200_000, 64_000,
              _anthropic_pricing(3.0, 15.0), 1024, reasoning=True),
    ModelInfo("claude-opus-4-5", "Claude Opus 4.5", "anthropic", 200_000, 64_000,
              _anthropic_pricing(5.0, 25.0), 4096, reasoning=True),
    ModelInfo("claude-haiku-4-5", "Claude Haiku 4.5", "anthropic", 200_000, 64_000,
              _anthropic_pricing(1.0, 5.0), 4096, reasoning=True),
    # OpenAI (platform.openai.com/docs/pricing).
    ModelInfo("gpt-5.1", "GPT-5.1", "openai", 400_000, 128_000,
              _openai_pricing(1.25, 10.0, 0.125), 1024, reasoning=True),
    ModelInfo("gpt-5", "GPT-5", "openai", 400_000, 128_000,
              _openai_pricing(1.25, 10.0, 0.125), 1024, reasoning=True),
    ModelInfo("gpt-5-mini", "GPT-5 mini", "openai", 400_000, 128_000,
              _openai_pricing(0.25, 2.0, 0.025), 1024, reasoning=True),
    ModelInfo("gpt-4.1", "GPT-4.1", "openai", 1_047_576, 32_768,
              _openai_pricing(2.0, 8.0, 0.5), 1024),
    # The built-in simulator (agent_server/sim). sim-small fills quickly so that compaction
    # shows in tests and demos, while the default reserve (8k) and kept tail (8k) still fit.
    ModelInfo("sim-small", "Simulator, 32k window", "sim", 32_768, 4_096, _SIM_PRICING, 1024),
    ModelInfo("sim-large", "Simulator, 200k window", "sim", 200_000, 16_384, _SIM_PRICING, 1024),
)

DEFAULT_MODEL_BY_PROVIDER: Mapping[str, str] = {
    "anthropic": "claude-sonnet-4-6",
    "openai-chat": "gpt-5.1",
    "openai-responses": "gpt-5.1",
    "sim": "sim-small",
}


class ModelRegistry:
    """The built-in models plus the user's, looked up by id."""

    def __init__(self, models: Iterable[ModelInfo] = BUILTIN_MODELS) -> None:
        self._models: dict[str, ModelInfo] = {}
        for model in models:
            self.add(model)

    def add(self, model: ModelInfo) -> None:
        self._models[model.id] = model

    def get(self, model_id: str) -> ModelInfo | None:
        return self._models.get(model_id)

    def __contains__(self, model_id: object) -> bool:
        return model_id in self._models

    def __iter__(self) -> Any:
        return iter(self._models.values())

    def ids(self) -> list[str]:
        return list(self._models)


def model_from_json(data: Mapping[str, Any]) -> ModelInfo:
    """A user-defined model; raises ValueError naming the field that is wrong."""
    for key in ("id", "contextWindow", "maxOutput"):
        if key not in data:
            raise ValueError(f"model definition is missing {key!r}")
    prices = data.get("pricing") or {}
    if not isinstance(prices, Mapping):
        raise ValueError("pricing must be an object of prices per million tokens")
    vendor = data.get("vendor", "local")
    if vendor not in ("anthropic", "openai", "sim", "local"):
        raise ValueError(f"vendor must be anthropic, openai, sim or local, not {vendor!r}")
    return ModelInfo(
        id=str(data["id"]),
        name=str(data.get("name", data["id"])),
        vendor=vendor,
        context_window=int(data["contextWindow"]),
        max_output=int(data["maxOutput"]),
        pricing=Pricing(
            input=float(prices.get("input", 0.0)),
            output=float(prices.get("output", 0.0)),
            cache_write_5m=float(prices.get("cacheWrite5m", prices.get("cacheWrite", 0.0))),
            cache_write_1h=float(prices.get("cacheWrite1h", 0.0)),
            cache_read=float(prices.get("cacheRead", 0.0)),
        ),
        min_cache_tokens=int(data.get("minCacheTokens", 1024)),
        reasoning=bool(data.get("reasoning", False)),
        images=bool(data.get("images", False)),
        base_url=str(data["baseUrl"]) if data.get("baseUrl") else None,
    )


def load_models_file(path: Path) -> list[ModelInfo]:
    """Models from a JSON or YAML file: `{"models": [{id, contextWindow, maxOutput, ...}]}`."""
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else json.loads(text)
    entries = data.get("models") if isinstance(data, Mapping) else data
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected a list of models under 'models'")
    return [model_from_json(entry) for entry in entries]
